//! The child's side: one [`Message`] from a parent frame, run in this
//! frame and answered with a [`Reply`].

use super::*;

/// Runs one [`Message`] from a parent frame (relayed by the service
/// worker; the object the loader received) and resolves with the
/// [`Reply`]'s wire text (a string: see `wire.rs`), which the loader sends
/// back as it is.
#[wasm_bindgen]
pub async fn handle_frame(message: JsValue) -> JsValue {
    // `{"kind": "frame", "wire": …}`: the message in postcard's bytes, as
    // a `page` command (`crate::wire`).
    let field = |name: &str| crate::messages::field(&message, name).as_string();
    let bad = |why: String| Reply::Failed { code: ErrorCode::BadMessage, message: why };
    let reply = match (field("kind").as_deref(), field("wire")) {
        (Some("frame"), Some(text)) => match super::wire::decode_message(&text) {
            Ok(m) => answer(m).await,
            Err(e) => bad(format!("bad frame message: {e}")),
        },
        _ => bad("not a frame message".into()),
    };
    // The loader sends it on as `ok`.
    JsValue::from_str(&super::wire::encode(reply))
}

pub(super) fn failed(Fail { code, message }: Fail) -> Reply {
    Reply::Failed { code, message }
}

pub(super) async fn answer(message: Message) -> Reply {
    if message.expect.as_ref().is_some_and(|t| *t != token()) {
        if let Command::Marks { .. } = message.command {
            // Another document than the one numbered: no marks, but its
            // secret fields are blanked all the same.
            draw_own_marks(Vec::new()).await;
            return Reply::Ack {};
        }
        return failed(Fail::new(
            ErrorCode::ElementGone,
            "the element is gone: its frame has loaded another page since it was observed",
        ));
    }
    match message.command {
        Command::Observe { view, marks: wanted, depth } => {
            dropdown::enable();
            // The overlay goes before the walk (see `observe::observe`).
            observe::own_writes(marks::clear);
            let walked = match observe::walk_frame(&view) {
                Ok(w) => w,
                Err(why) => return failed(Fail::new(ErrorCode::Internal, why)),
            };
            let (mut lines, mut nodes, pending) = walked;
            merge(&mut lines, &mut nodes, pending, wanted, depth).await;
            let markable: Vec<(u32, Element)> = lines
                .iter()
                .zip(&nodes)
                .filter_map(|(l, node)| match (l, node) {
                    (Line::Element(s), Some(el)) if s.index > 0 && s.in_viewport => {
                        Some((s.index, el.clone()))
                    }
                    _ => None,
                })
                .collect();
            STATE.with(|s| s.borrow_mut().markable = markable);
            let origin =
                web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
            Reply::Seen { token: token(), origin, lines }
        }
        Command::Marks { labels } => {
            draw_own_marks(labels).await;
            Reply::Ack {}
        }
        Command::Act { action, only_on, secret_field, secrets } => {
            dropdown::enable();
            let guard = act::Guard { only_on, secret_field, secrets };
            let done = match route_act(&action, &guard).await {
                Some(done) => done,
                None => act::act(action, &guard).await,
            };
            match done {
                Ok(effect) => Reply::Done { effect },
                Err(f) => failed(f),
            }
        }
        Command::SetFiles { index, files } => {
            dropdown::enable();
            let done = match route_upload(index, &files).await {
                Some(done) => done,
                None => act::upload(index, files).await,
            };
            match done {
                Ok(effect) => Reply::Done { effect },
                Err(f) => failed(f),
            }
        }
        Command::Cleanup {} => {
            observe::own_writes(marks::clear);
            dropdown::disable();
            cleanup().await;
            Reply::Ack {}
        }
    }
}

/// Draws this frame's marks (numbers as the top shows them) and blanks its
/// secret fields; passes the labels of its own frames' elements on.
pub(super) async fn draw_own_marks(labels: Vec<(u32, u32)>) {
    let mut here: Vec<(u32, Element)> = Vec::new();
    // Every frame of this one's latest observation, asked even with no
    // label (it blanks its secret fields all the same).
    let mut inner: Vec<Child> = STATE.with(|s| {
        let s = s.borrow();
        s.children
            .iter()
            .map(|c| Child { iframe: c.iframe.clone(), token: c.token.clone(), labels: Vec::new() })
            .collect()
    });
    for (mine, shown) in labels {
        if let Some(r) = remote_of(mine) {
            if let Some(c) = inner.iter_mut().find(|c| c.token == r.token) {
                c.labels.push((r.local, shown));
            }
        } else if let Some((_, el)) =
            STATE.with(|s| s.borrow().markable.iter().find(|(n, _)| *n == mine).cloned())
        {
            here.push((shown, el));
        }
    }
    if let Some(document) = web_sys::window().and_then(|w| w.document()) {
        // The blanks are drawn even with no mark here.
        // Read again: the frame's own viewport, since its observation.
        let _ = observe::own_writes(|| marks::draw(&document, &here, None));
    }
    for Child { iframe, token, labels } in inner {
        mark_frame(iframe, token, labels).await;
    }
}

//! The parent's side of observing: asking each cross-origin frame the walk
//! met for its lines, renumbering them into this frame's numbers and
//! splicing them in; drawing and removing the frames' marks.

use super::*;

/// A cross-origin frame met by the walk: where its lines go (`at`, a
/// position in the walk's lines), its element, and its view.
pub struct Pending {
    pub at: usize,
    pub iframe: Element,
    pub view: View,
    /// The iframe's box in its document's viewport when it was walked.
    pub rect: Rect,
}

/// Where an iframe's document comes from, for messages.
pub(super) fn source_of(iframe: &Element) -> String {
    let src = proto::get_attribute(&iframe, "src").unwrap_or_default();
    // Against the document's address (one that throws, as a relative
    // `src` alone would, costs more than the parse).
    let base = proto::owner_document(&iframe).map(|d| proto::url(&d)).unwrap_or_default();
    let origin = web_sys::Url::new_with_base(&src, &base).map(|u| u.origin()).unwrap_or_default();
    if origin.is_empty() || origin == "null" { "another site".into() } else { origin }
}

/// Observes each frame of `pending` through its own content script and
/// splices its lines (renumbered) into `lines` where its iframe is;
/// `nodes` gets `None` for them (their marks are the frame's to draw).
/// A frame that cannot be read leaves a line saying so.
pub async fn merge(
    lines: &mut Vec<Line>,
    nodes: &mut Vec<Option<Element>>,
    pending: Vec<Pending>,
    marks: bool,
    depth: u32,
) {
    let answers = ask(&pending, marks, depth).await;
    for (p, mut child_lines) in pending.iter().zip(answers).rev() {
        let at = p.at.min(lines.len());
        let count = child_lines.len();
        nodes.splice(at..at, std::iter::repeat_n(None, count));
        lines.splice(at..at, child_lines.drain(..));
    }
}

/// Observes each frame of `pending` through its own content script: the
/// lines of each (renumbered with this instance's numbers), in the order
/// of `pending`. A frame that cannot be read answers a line saying so.
pub async fn ask(pending: &[Pending], marks: bool, depth: u32) -> Vec<Vec<Line>> {
    let had_marks = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.children.clear();
        // Frames removed from the page: their numbers are never given out
        // again (an action on one says the element no longer exists).
        s.remote.retain(|_, r| proto::is_connected(&r.iframe));
        let remote = std::mem::take(&mut s.remote);
        s.numbers.retain(|_, n| remote.contains_key(n));
        s.remote = remote;
        !s.drew.is_empty()
    });
    if had_marks {
        // Frames that drew marks and are not observed now keep no marks.
        let observed: Vec<&Element> = pending.iter().map(|p| &p.iframe).collect();
        let stale: Vec<Element> = STATE.with(|s| {
            let mut s = s.borrow_mut();
            let (stale, keep) = s.drew.drain(..).partition(|f| !observed.contains(&f));
            s.drew = keep;
            stale
        });
        cleanup_frames(stale).await;
    }
    if pending.is_empty() {
        return Vec::new();
    }
    // A frame that could not be run in, and has loaded nothing since, is
    // not asked again: its answer would be the same.
    let loaded: Vec<u32> = pending.iter().map(|p| loads(&p.iframe)).collect();
    let known: Vec<Option<String>> = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.unreadable.retain(|(f, _, _)| proto::is_connected(&f));
        let known = |(p, n): (&Pending, &u32)| {
            let seen = s.unreadable.iter().find(|(f, m, _)| *f == p.iframe && m == n);
            seen.map(|(_, _, why)| why.clone())
        };
        pending.iter().zip(&loaded).map(known).collect()
    });
    let asked: Vec<&Pending> =
        pending.iter().zip(&known).filter(|(_, k)| k.is_none()).map(|(p, _)| p).collect();
    let mut found = observe_frames(&asked, marks, depth).await.into_iter();
    let found: Vec<Observed> = known
        .into_iter()
        .map(|k| match k {
            Some(why) => Err((why, true)),
            None => found.next().unwrap_or_else(|| Err(("its answer was lost".into(), false))),
        })
        .collect();
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        for ((p, n), got) in pending.iter().zip(&loaded).zip(&found) {
            s.unreadable.retain(|(f, _, _)| *f != p.iframe);
            if let Err((why, true)) = got {
                s.unreadable.push((p.iframe.clone(), *n, why.clone()));
            }
        }
    });
    let mut answers = Vec::with_capacity(pending.len());
    for (p, got) in pending.iter().zip(found) {
        let in_viewport = p.view.clip.width > 0.0 && p.view.clip.height > 0.0;
        answers.push(match got {
            Ok((token, origin, mut child_lines)) => {
                // Its elements are in its document, of its origin (those of
                // its own frames already say theirs).
                for line in &mut child_lines {
                    if let Line::Element(seen) = line {
                        seen.origin.get_or_insert_with(|| origin.clone());
                    }
                }
                let mut labels = Vec::new();
                renumber(&mut child_lines, |local| {
                    let n = number_for(&p.iframe, &token, local);
                    labels.push((local, n));
                    n
                });
                STATE.with(|s| {
                    s.borrow_mut().children.push(Child { iframe: p.iframe.clone(), token, labels })
                });
                child_lines
            }
            Err((why, _)) => vec![Line::Text {
                text: format!("(a frame from {} could not be read: {})", source_of(&p.iframe), why),
                in_viewport,
            }],
        });
    }
    answers
}

/// What a frame answered when asked to observe itself: its token, its
/// document's origin and its lines, or why not (and whether because it
/// cannot run Errand).
type Observed = Result<(String, String, Vec<Line>), (String, bool)>;

/// Asks the frames to observe themselves, all at once (a slow frame holds
/// the others up by its own time only); answers in the same order.
pub(super) async fn observe_frames(pending: &[&Pending], marks: bool, depth: u32) -> Vec<Observed> {
    // Each answer is put in its place as it comes (not through the
    // promises: no serializing of the lines in between).
    let answers: std::rc::Rc<RefCell<Vec<Option<Observed>>>> =
        std::rc::Rc::new(RefCell::new(pending.iter().map(|_| None).collect()));
    let asks = js_sys::Array::new();
    for (i, p) in pending.iter().enumerate() {
        let to = path_of_iframe(&p.iframe);
        let view = p.view;
        let answers = answers.clone();
        asks.push(&wasm_bindgen_futures::future_to_promise(async move {
            let got = observe_frame(to, view, marks, depth).await;
            answers.borrow_mut()[i] = Some(got);
            Ok(JsValue::UNDEFINED)
        }));
    }
    let _ = wasm_bindgen_futures::JsFuture::from(Promise::all(&asks)).await;
    let answers = std::mem::take(&mut *answers.borrow_mut());
    answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(("its answer was lost".into(), false))))
        .collect()
}

/// Asks one frame (at path `to`) to observe itself.
pub(super) async fn observe_frame(
    to: Option<Place>,
    view: View,
    marks: bool,
    depth: u32,
) -> Observed {
    if depth >= MAX_DEPTH {
        return Err((format!("frames nested more than {MAX_DEPTH} deep are not read"), false));
    }
    let to = to.ok_or(("it has no window".to_owned(), false))?;
    let command = Command::Observe { view, marks, depth: depth + 1 };
    match relay(&to, Message::new(None, command), OBSERVE_TIMEOUT_MS).await {
        Ok(Reply::Seen { token, origin, lines }) => Ok((token, origin, lines)),
        Ok(Reply::Failed { message, .. }) => Err((message, false)),
        Ok(_) => Err(("it answered something else".into(), false)),
        Err((Fail { message, .. }, unreadable)) => Err((message, unreadable)),
    }
}

thread_local! {
    /// How many `load` events each iframe asked fired since (a new
    /// document in it), and the one listener that counts them.
    static LOADS: (js_sys::WeakMap, Closure<dyn FnMut(web_sys::Event)>) = (
        js_sys::WeakMap::new(),
        Closure::new(|e: web_sys::Event| {
            let Some(t) = e.target() else { return };
            let t: Object = t.unchecked_into();
            LOADS.with(|(counts, _)| {
                let n = counts.get(&t).as_f64().unwrap_or(0.0);
                counts.set(&t, &JsValue::from_f64(n + 1.0));
            });
        }),
    );
}

/// How many documents `iframe` loaded since it was first asked (counted
/// from then on).
pub(super) fn loads(iframe: &Element) -> u32 {
    LOADS.with(|(counts, on_load)| {
        // The same listener added again is not added twice.
        let _ = iframe.add_event_listener_with_callback("load", on_load.as_ref().unchecked_ref());
        counts.get(iframe.unchecked_ref()).as_f64().unwrap_or(0.0) as u32
    })
}

/// Gives every numbered element line a number from `f` (its own first).
pub fn renumber(lines: &mut [Line], mut f: impl FnMut(u32) -> u32) {
    for line in lines {
        if let Line::Element(seen) = line {
            if seen.index > 0 {
                seen.index = f(seen.index);
            }
        }
    }
}

/// After this instance drew its own marks: each frame of the latest
/// observation draws its own, with this instance's numbers.
pub async fn draw_marks() {
    let children: Vec<Child> = STATE.with(|s| s.borrow().children.clone());
    for Child { iframe, token, labels } in children {
        mark_frame(iframe, token, labels).await;
    }
}

pub(super) async fn mark_frame(iframe: Element, token: String, labels: Vec<(u32, u32)>) {
    let Some(to) = path_of_iframe(&iframe) else {
        return;
    };
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if !s.drew.contains(&iframe) {
            s.drew.push(iframe.clone());
        }
    });
    let msg = Message::new(Some(token), Command::Marks { labels });
    // A frame gone since it was observed has nothing left to mark or blank.
    let _ = send(&to, msg, SMALL_TIMEOUT_MS).await;
}

/// Removes the marks of every frame that drew some.
pub async fn cleanup() {
    let frames = STATE.with(|s| std::mem::take(&mut s.borrow_mut().drew));
    cleanup_frames(frames).await;
}

pub(super) async fn cleanup_frames(frames: Vec<Element>) {
    for iframe in frames {
        if let Some(to) = path_of_iframe(&iframe) {
            let _ = send(&to, Message::new(None, Command::Cleanup {}), SMALL_TIMEOUT_MS).await;
        }
    }
}

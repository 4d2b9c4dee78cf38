//! Actions on a frame's elements: a number given to a child's element is
//! rewritten to the child's number and the action forwarded to it.

use super::*;

/// Replaces each `[n]` of `text` whose `n` is a key of `map` by its value
/// (a frame's numbers in its summaries become the ones the model knows).
pub fn relabel_text(text: &str, map: &[(u32, u32)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(']') {
            let n: Option<u32> = rest[..digits].parse().ok();
            match n.and_then(|n| map.iter().find(|(from, _)| *from == n)) {
                Some((_, to)) => out.push_str(&to.to_string()),
                None => out.push_str(&rest[..digits]),
            }
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// The action with its element numbers mapped by `f` (no serde round trip:
/// deserializing an [`Action`] from a JSON value would add a second copy of
/// its serde code to the module).
pub fn relabel_action(action: &Action, f: impl Fn(u32) -> u32) -> Option<Action> {
    let mut action = action.clone();
    for n in action.elements_mut() {
        *n = f(*n);
    }
    Some(action)
}

/// Where an action goes when its elements are in a cross-origin frame:
/// `None` when it is this instance's to carry out.
pub async fn route_act(action: &Action, guard: &act::Guard) -> Option<Result<Effect, Fail>> {
    let act_command = |action: Action| Command::Act {
        action,
        only_on: guard.only_on.clone(),
        secret_field: guard.secret_field,
        secrets: guard.secrets.clone(),
    };
    let elements = action.elements();
    let remotes: Vec<Option<Remote>> = elements.iter().map(|n| remote_of(*n)).collect();
    if remotes.iter().all(Option::is_none) {
        // A key pressed with no element goes where the focus is: into a
        // cross-origin frame when that has it.
        if matches!(action, Action::Press { index: None, .. }) {
            let iframe = focused_frame()?;
            let command = act_command(action.clone());
            return Some(forward(&iframe, None, command, &[]).await);
        }
        return None;
    }
    let first = remotes.iter().flatten().next()?.clone();
    if remotes.iter().any(|r| r.as_ref().is_none_or(|r| r.token != first.token)) {
        return Some(Err(Fail::new(
            ErrorCode::ActionFailed,
            format!("`{}` cannot join elements of different frames", action.name()),
        )));
    }
    let map: Vec<(u32, u32)> =
        elements.iter().zip(&remotes).filter_map(|(n, r)| Some((*n, r.as_ref()?.local))).collect();
    let local = relabel_action(action, |n| {
        map.iter().find(|(global, _)| *global == n).map_or(n, |(_, local)| *local)
    })?;
    let back: Vec<(u32, u32)> = map.iter().map(|(g, l)| (*l, *g)).collect();
    let command = act_command(local);
    Some(forward(&first.iframe, Some(first.token), command, &back).await)
}

/// `set_files` on a file input of a cross-origin frame; `None` when the
/// input is this instance's own.
pub async fn route_upload(index: u32, files: &[FilePayload]) -> Option<Result<Effect, Fail>> {
    let r = remote_of(index)?;
    let command = Command::SetFiles { index: r.local, files: files.to_vec() };
    Some(forward(&r.iframe, Some(r.token), command, &[(r.local, index)]).await)
}

/// Sends an action to the frame an iframe holds; its numbers in the
/// answer become this instance's (`back`).
pub(super) async fn forward(
    iframe: &Element,
    expect: Option<String>,
    command: Command,
    back: &[(u32, u32)],
) -> Result<Effect, Fail> {
    let shown = back.first().map_or_else(String::new, |(_, n)| format!("element [{n}] "));
    let gone = |why: &str| Fail::new(ErrorCode::ElementGone, format!("{shown}{why}"));
    if !proto::is_connected(&iframe) {
        return Err(gone("was in a frame that has been removed from the page"));
    }
    let to = path_of_iframe(iframe).ok_or_else(|| gone("was in a frame that has no page now"))?;
    let source = source_of(iframe);
    match send(&to, Message::new(expect, command), ACT_TIMEOUT_MS).await {
        Ok(Reply::Done { mut effect }) => {
            effect.summary = relabel_text(&effect.summary, back);
            effect.summary.push_str(&format!(" (in a frame from {source})"));
            effect.appeared = effect.appeared.iter().map(|a| relabel_text(a, back)).collect();
            if effect.url_changed {
                // Unforeseen like a new URL (the host stops a multi-action
                // answer there), but the tab's address is still the top
                // page's.
                effect.appeared.push(format!("the frame loaded {}", effect.url));
            }
            effect.url = crate::watch::current_url();
            effect.url_changed = false;
            Ok(effect)
        }
        Ok(Reply::Failed { code, message }) => {
            let message = match message.strip_prefix("the element ") {
                Some(rest) if !shown.is_empty() => format!("{shown}{rest}"),
                _ => message,
            };
            Err(Fail::new(code, relabel_text(&message, back)))
        }
        Ok(_) => Err(Fail::new(ErrorCode::Internal, "the frame answered something else")),
        Err(Fail { message, .. }) => Err(Fail::new(
            ErrorCode::PageUnavailable,
            format!("{shown}is in a frame from {source} that cannot be reached: {message}"),
        )),
    }
}

/// The cross-origin `<iframe>` that has the focus, through same-origin
/// frames and open shadow roots.
pub(super) fn focused_frame() -> Option<Element> {
    let mut doc = web_sys::window()?.document()?;
    for _ in 0..32 {
        let mut active = proto::active_element(&doc)?;
        while let Some(inner) = proto::shadow_root(&active)
            .and_then(|s| Reflect::get(&s, &"activeElement".into()).ok())
            .filter(JsValue::is_object)
        {
            let inner: Element = inner.unchecked_into();
            if inner == active {
                break;
            }
            active = inner;
        }
        if !matches!(proto::local_name(&active).as_str(), "iframe" | "frame") {
            return None;
        }
        match active.unchecked_ref::<web_sys::HtmlIFrameElement>().content_document() {
            Some(inner) => doc = inner,
            None => return Some(active),
        }
    }
    None
}

//! The field family: fill (through the native value setter, read back),
//! type, check and uncheck, press, and what leaving a field does to it.

use super::*;

/// Ticks or unticks a checkbox, radio button, or ARIA checkbox/switch, by
/// clicking it when it is not already so; reads the state back.
pub(super) async fn check(index: u32, on: bool, watch: &Watch) -> Result<String, Fail> {
    let el = usable(index)?;
    let who = describe(index, &el);
    let state = |el: &Element| -> Option<bool> {
        if proto::local_name(&el) == "input" {
            let i = el.unchecked_ref::<HtmlInputElement>();
            if matches!(i.type_().as_str(), "checkbox" | "radio") {
                return Some(i.checked());
            }
            return None;
        }
        match proto::get_attribute(&el, "aria-checked").as_deref() {
            Some("true") => Some(true),
            Some("false") | Some("mixed") => Some(false),
            _ => proto::query_selector(&el, "input[type=checkbox], input[type=radio]")
                .ok()
                .flatten()
                .map(|i| i.unchecked_ref::<HtmlInputElement>().checked()),
        }
    };
    // A styled radio's or checkbox's `<label>` (listed for its hidden
    // input) is checked through its control: its state is the control's.
    let label_for = (proto::local_name(&el) == "label")
        .then(|| el.unchecked_ref::<web_sys::HtmlLabelElement>().control())
        .flatten()
        .map(|c| c.unchecked_into::<Element>());
    let probe = label_for.unwrap_or_else(|| el.clone());
    let Some(now) = state(&probe) else {
        return Err(failed(&format!("{who} is not a checkbox or radio button")));
    };
    if now == on {
        return Ok(format!("{who} was already {}", if on { "checked" } else { "unchecked" }));
    }
    if !on && proto::get_attribute(&probe, "type").as_deref() == Some("radio") {
        return Err(failed(&format!(
            "{who} is a radio button: choose another option of its group instead"
        )));
    }
    click(index, ClickButton::Left, &[], 1, watch).await?;
    watch.settle().await;
    match state(&probe) {
        Some(s) if s == on => Ok(format!("{} {who}", if on { "checked" } else { "unchecked" })),
        _ => Err(failed(&format!(
            "{who} is still {} after clicking it",
            if on { "unchecked" } else { "checked" }
        ))),
    }
}

/// Presses a key combination on element `index` or the focused element.
pub(super) fn press(key: &str, index: Option<u32>) -> Result<String, Fail> {
    let el = match index {
        Some(i) => Some(usable(i)?),
        None => None,
    };
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let combo = keys::parse(key, is_mac(&window)).map_err(|e| failed(&e))?;
    if let Some(el) = &el {
        if dom::is_focusable(el) {
            focus::focus(el);
        }
    }
    let target = keys::key_target(el.as_ref()).ok_or_else(|| failed("nothing has the focus"))?;
    let on = match index {
        Some(i) => describe(i, &target),
        None => format!("<{}>", proto::local_name(&target)),
    };
    let did = keys::press(&target, &combo);
    // A copy with nothing selected, a paste with nothing copied: the
    // model is told the key did not do what it is for.
    if let Some(d) = did.as_deref().filter(|d| d.starts_with("nothing was ")) {
        return Err(failed(&format!("pressed {key} on {on}, but {d}")));
    }
    Ok(match did {
        Some(d) => format!("pressed {key} on {on}: {d}"),
        None => format!("pressed {key} on {on}"),
    })
}

/// Types text key by key into element `index`, after what it holds (the
/// caret goes to the end first), or in its place with `clear`; reads the
/// value back after the page's handlers and, when no suggestions are
/// showing, after the field lost the focus.
pub(super) async fn type_into(
    index: u32,
    text: &str,
    enter: bool,
    clear: bool,
    watch: &Watch,
) -> Result<Done, Fail> {
    let el = usable(index)?;
    let who = describe(index, &el);
    focus::focus(&el);
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    if clear {
        if let Ok(all) = keys::parse("ControlOrMeta+a", is_mac(&window)) {
            keys::press(&el, &all);
        }
        keys::press(&el, &keys::Combo { keys: Keys::default(), key: "Backspace".into() });
    } else {
        caret_to_end(&el);
    }
    let before = read_value(&el, &proto::local_name(&el));
    keys::type_text(&el, text);
    // Let the page react to the text (suggestions after a debounce).
    watch.settle_for(crate::watch::TYPE_QUIET_MS).await;
    if enter {
        keys::press(&el, &keys::Combo { keys: Keys::default(), key: "Enter".into() });
    }
    let tag = proto::local_name(&el);
    let typed = proto::is_connected(&el).then(|| read_value(&el, &tag));
    let mut summary = format!(
        "typed \"{}\" into {who}{}",
        truncate(text, 60),
        if enter { " and pressed Enter" } else { "" }
    );
    let Some(mut now) = typed else {
        return Ok(Done { summary, value: None });
    };
    if !enter && !watch.added_any() {
        if let Some(changed) = leave_field(&el, &tag, &now, watch).await {
            return Err(failed(&format!(
                "{who} held \"{}\" after typing, but when it lost the focus the page changed it to \"{}\" (the field wants another format, or a widget rewrote it)",
                truncate(&now, 80),
                truncate(&changed, 80)
            )));
        }
    }
    if proto::is_connected(&el) {
        now = read_value(&el, &tag);
    }
    let secret = is_secret(&el);
    if !secret && !before.is_empty() && !clear {
        summary.push_str(&format!(" after \"{}\"", truncate(&before, 40)));
    }
    if !secret {
        summary.push_str(&format!("; it now holds \"{}\"", truncate(&now, 100)));
        remember_fill(&el, &now);
    }
    Ok(Done { summary, value: (!secret).then_some(now) })
}

/// Whether the element is a password field (its value is never reported).
pub(super) fn is_secret(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && el.unchecked_ref::<HtmlInputElement>().type_().eq_ignore_ascii_case("password")
}

/// Puts the caret after the field's text, as a click at its end does.
pub(super) fn caret_to_end(el: &Element) {
    match proto::local_name(&el).as_str() {
        "input" => {
            let i = el.unchecked_ref::<HtmlInputElement>();
            let len = i.value().encode_utf16().count() as u32;
            // Email and number fields have no selection: typing appends there.
            let _ = i.set_selection_range(len, len);
        }
        "textarea" => {
            let a = el.unchecked_ref::<HtmlTextAreaElement>();
            let len = a.value().encode_utf16().count() as u32;
            let _ = a.set_selection_range(len, len);
        }
        _ => {
            let selection =
                proto::owner_document(el).and_then(|d| proto::get_selection(&d).ok().flatten());
            if let Some(sel) = selection {
                let _ = sel.select_all_children(el);
                let _ = sel.collapse_to_end();
            }
        }
    }
}

/// Whether a field offers suggestions of its own (an autocomplete, a
/// combobox, a datalist): leaving it would close them.
pub(super) fn suggests(el: &Element) -> bool {
    attr(el, "role").is_some_and(|r| r == "combobox")
        || proto::has_attribute(&el, "aria-autocomplete")
        || proto::has_attribute(&el, "list")
        || attr(el, "aria-haspopup").is_some_and(|v| v != "false")
        || attr(el, "aria-expanded").is_some_and(|v| v == "true")
}

/// Takes the focus from a field that offers no suggestions and waits for
/// the page's handlers; `Some(value)` when they changed what it holds
/// (`held`).
pub(super) async fn leave_field(
    el: &Element,
    tag: &str,
    held: &str,
    watch: &Watch,
) -> Option<String> {
    if suggests(el) || !proto::is_connected(&el) {
        return None;
    }
    let active = focus::is_active(el);
    if !active {
        return None;
    }
    focus::blur_active(el);
    watch.settle().await;
    let now = read_value(el, tag);
    let same = if matches!(tag, "input" | "textarea") {
        now == held
    } else {
        collapse(&now) == collapse(held)
    };
    (proto::is_connected(&el) && !same).then_some(now)
}

/// Input types whose value is not free text but a browser-checked format.
pub(super) fn formatted_input(kind: &str) -> bool {
    matches!(
        kind,
        "date" | "time" | "datetime-local" | "month" | "week" | "number" | "range" | "color"
    )
}

/// Fills element `index` with `value` and reads it back; a value that did
/// not stick is an error.
pub(super) async fn fill(index: u32, value: &str, watch: &Watch) -> Result<Done, Fail> {
    let el = usable(index)?;
    let tag = proto::local_name(&el);
    let who = describe(index, &el);
    let mut secret = false;
    let mut formatted = false;
    match tag.as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            let kind = input.type_().to_ascii_lowercase();
            if !text::is_text_input(&kind) {
                let hint = if kind == "file" {
                    "use upload_file"
                } else {
                    "click it instead of filling it"
                };
                return Err(failed(&format!("{who} is a {kind} input: {hint}")));
            }
            if input.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            secret = kind == "password";
            formatted = formatted_input(&kind);
            focus::focus(&el);
            set_native_value(&el, "HTMLInputElement", value).map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, value, true);
        }
        "textarea" => {
            let area = el.unchecked_ref::<HtmlTextAreaElement>();
            if area.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            focus::focus(&el);
            set_native_value(&el, "HTMLTextAreaElement", value)
                .map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, value, true);
        }
        "select" => {
            return crate::selects::select_options(
                index,
                &el,
                &[errand_protocol::OptionChoice::Text(value.to_owned())],
            );
        }
        _ if proto::is_content_editable(&el.unchecked_ref::<HtmlElement>()) => {
            // Select everything and insert: editors (and undo) see a
            // person's edit, with `beforeinput` and `input`.
            focus::focus(&el);
            keys::exec(&el, "selectAll", None);
            if value.is_empty() {
                keys::exec(&el, "delete", None);
            } else {
                keys::exec(&el, "insertText", Some(value));
            }
            if collapse(&proto::text_content(&el).unwrap_or_default()) != collapse(value) {
                proto::set_text_content(&el, Some(value));
                fire_input_and_change(&el, value, false);
            }
        }
        _ => {
            return Err(failed(&format!("{who} is not a text field: it cannot be filled")));
        }
    }
    watch.settle().await;
    let now = read_value(&el, &tag);
    let matches = if tag == "input" || tag == "textarea" {
        now == value
    } else {
        collapse(&now) == collapse(value)
    };
    if !matches {
        return Err(failed(&if secret {
            format!("{who} did not keep the password typed into it")
        } else if formatted && now.is_empty() {
            format!(
                "{who} refused \"{}\": the browser wants its own format (dates 2024-05-31, times 13:45, colours #ff8800, numbers within the field's range and step)",
                truncate(value, 60)
            )
        } else {
            format!(
                "{who} holds \"{}\" after filling, not \"{}\"",
                truncate(&now, 80),
                truncate(value, 80)
            )
        }));
    }
    // What the field holds once the page's handlers for leaving it ran
    // (a date widget that reformats or empties it), unless it shows
    // suggestions or something appeared the model may want to use.
    if !secret && !watch.added_any() {
        if let Some(changed) = leave_field(&el, &tag, &now, watch).await {
            return Err(failed(&format!(
                "{who} held \"{}\" after filling, but when it lost the focus the page changed it to \"{}\" (the field wants another format, or a widget rewrote it: try `type`)",
                truncate(&now, 80),
                truncate(&changed, 80)
            )));
        }
    }
    if !secret {
        remember_fill(&el, &now);
    }
    let summary = if secret {
        format!("filled {who} with a password")
    } else if value.is_empty() {
        format!("cleared {who}")
    } else {
        format!("filled {who} with \"{}\"", truncate(value, 60))
    };
    Ok(Done { summary, value: (!secret).then_some(now) })
}

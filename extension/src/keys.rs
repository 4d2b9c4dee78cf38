//! The keyboard: key combinations (`ControlOrMeta+a`, `Shift+Tab`) and
//! typing key by key.
//!
//! Synthetic key events do not make the browser do anything by itself, so
//! after each key whose `keydown` the page did not cancel, the key's usual
//! effect is carried out here: a character goes into the field (through
//! the native value setter and an `input` event, as a person's typing
//! does), Backspace deletes, Enter submits the field's form (or clicks a
//! button or link), Tab moves the focus, `ControlOrMeta+a` selects all,
//! Space ticks a checkbox or presses a button.

use crate::proto;
use wasm_bindgen::JsCast;
use web_sys::{
    Element, HtmlElement, HtmlInputElement, HtmlTextAreaElement, InputEvent, InputEventInit,
    KeyboardEvent, KeyboardEventInit,
};

use crate::dom;
use crate::events::{Keys, fire_change, set_native_value};

/// One key of a combination, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Combo {
    pub keys: Keys,
    /// The `KeyboardEvent.key` value (`"Enter"`, `"a"`).
    pub key: String,
}

/// Parses `ControlOrMeta+Shift+a`. `mac` decides `ControlOrMeta`.
pub fn parse(combo: &str, mac: bool) -> Result<Combo, String> {
    // The space key written as itself (`" "`, as `KeyboardEvent.key` names it).
    if combo == " " {
        return Ok(Combo { keys: Keys::default(), key: " ".into() });
    }
    let combo = combo.trim();
    if combo.is_empty() {
        return Err("the key is empty".into());
    }
    // `+` alone, or `Control++`, names the plus key.
    let (mods, key) = match combo.strip_suffix("++") {
        Some(m) => (m, "+"),
        None if combo == "+" => ("", "+"),
        None => match combo.rsplit_once('+') {
            Some((m, k)) => (m, k),
            None => ("", combo),
        },
    };
    let mut keys = Keys::default();
    for m in mods.split('+').filter(|m| !m.is_empty()) {
        match m.to_ascii_lowercase().as_str() {
            "alt" | "option" => keys.alt = true,
            "control" | "ctrl" => keys.ctrl = true,
            "meta" | "cmd" | "command" => keys.meta = true,
            "shift" => keys.shift = true,
            "controlormeta" if mac => keys.meta = true,
            "controlormeta" => keys.ctrl = true,
            other => return Err(format!("unknown modifier `{other}` in `{combo}`")),
        }
    }
    let key = match key.to_ascii_lowercase().as_str() {
        "enter" | "return" => "Enter".to_owned(),
        "tab" => "Tab".to_owned(),
        "escape" | "esc" => "Escape".to_owned(),
        "backspace" => "Backspace".to_owned(),
        "delete" | "del" => "Delete".to_owned(),
        "space" => " ".to_owned(),
        "arrowup" | "up" => "ArrowUp".to_owned(),
        "arrowdown" | "down" => "ArrowDown".to_owned(),
        "arrowleft" | "left" => "ArrowLeft".to_owned(),
        "arrowright" | "right" => "ArrowRight".to_owned(),
        "home" => "Home".to_owned(),
        "end" => "End".to_owned(),
        "pageup" => "PageUp".to_owned(),
        "pagedown" => "PageDown".to_owned(),
        _ if key.chars().count() == 1 => key.to_owned(),
        _ if key.len() > 1 && key.starts_with('F') && key[1..].parse::<u8>().is_ok() => {
            key.to_owned()
        }
        _ => return Err(format!("unknown key `{key}` in `{combo}`")),
    };
    Ok(Combo { keys, key })
}

/// `KeyboardEvent.code` and the legacy `keyCode` of a key.
pub fn codes(key: &str) -> (String, u32) {
    let named = match key {
        "Enter" => Some(13),
        "Tab" => Some(9),
        "Escape" => Some(27),
        "Backspace" => Some(8),
        "Delete" => Some(46),
        " " => Some(32),
        "ArrowUp" => Some(38),
        "ArrowDown" => Some(40),
        "ArrowLeft" => Some(37),
        "ArrowRight" => Some(39),
        "Home" => Some(36),
        "End" => Some(35),
        "PageUp" => Some(33),
        "PageDown" => Some(34),
        _ => None,
    };
    if let Some(code) = named {
        let name = if key == " " { "Space" } else { key };
        return (name.to_owned(), code);
    }
    let mut chars = key.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => {
            (format!("Key{}", c.to_ascii_uppercase()), c.to_ascii_uppercase() as u32)
        }
        (Some(c), None) if c.is_ascii_digit() => (format!("Digit{c}"), c as u32),
        (Some(c), None) => (String::new(), c as u32),
        _ => (key.to_owned(), 0),
    }
}

/// Whether a key puts a character into a field.
fn is_char(key: &str) -> bool {
    key.chars().count() == 1
}

/// Dispatches one keyboard event; `false` when a handler cancelled it.
fn key_event(target: &Element, kind: &str, key: &str, keys: Keys) -> bool {
    let (code, key_code) = codes(key);
    let init = KeyboardEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_composed(true);
    init.set_key(key);
    init.set_code(&code);
    init.set_alt_key(keys.alt);
    init.set_ctrl_key(keys.ctrl);
    init.set_meta_key(keys.meta);
    init.set_shift_key(keys.shift);
    if let Some(w) = dom::window_of(target) {
        init.set_view(Some(&w));
    }
    // The legacy `keyCode`/`which`/`charCode` (UI Events' legacy init
    // members): older widgets such as jQuery UI read them. They must go in
    // the init dictionary: properties set on the event object here would
    // stay in the content script's world.
    let legacy = if kind == "keypress" && is_char(key) {
        key.chars().next().map_or(0, |c| c as u32)
    } else {
        key_code
    };
    init.set_key_code(legacy);
    init.set_which(legacy);
    init.set_char_code(if kind == "keypress" { legacy } else { 0 });
    let Ok(event) = KeyboardEvent::new_with_keyboard_event_init_dict(kind, &init) else {
        return true;
    };
    proto::dispatch_event(&target, &event).unwrap_or(true)
}

/// The element keys go to: `el`, else the focused element, else the body.
pub fn key_target(el: Option<&Element>) -> Option<Element> {
    if let Some(el) = el {
        return Some(el.clone());
    }
    let doc = web_sys::window()?.document()?;
    let mut active = proto::active_element(&doc);
    // Into iframes and shadow roots.
    while let Some(a) = active.clone() {
        let inner = if proto::local_name(&a) == "iframe" {
            a.unchecked_ref::<web_sys::HtmlIFrameElement>()
                .content_document()
                .and_then(|d| proto::active_element(&d))
        } else {
            proto::shadow_root(&a).and_then(|s| proto::active_element(&s))
        };
        match inner {
            Some(i) if i != a => active = Some(i),
            _ => break,
        }
    }
    active.or_else(|| proto::body(&doc).map(Into::into))
}

/// Whether the element takes typed text, and how.
enum Field {
    Input(HtmlInputElement),
    Area(HtmlTextAreaElement),
    Editable,
    None,
}

fn field(el: &Element) -> Field {
    match proto::local_name(&el).as_str() {
        "input" => {
            let i: HtmlInputElement = el.clone().unchecked_into();
            if crate::text::is_text_input(&i.type_().to_ascii_lowercase()) {
                Field::Input(i)
            } else {
                Field::None
            }
        }
        "textarea" => Field::Area(el.clone().unchecked_into()),
        _ if proto::is_content_editable(&el.unchecked_ref::<HtmlElement>()) => Field::Editable,
        _ => Field::None,
    }
}

thread_local! {
    /// The text last copied or cut with `ControlOrMeta+c` / `+x` in this
    /// document: synthetic key events do not reach the system clipboard,
    /// so the crate holds it, and `ControlOrMeta+v` pastes it.
    static CLIPBOARD: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// `c`, `x` or `v` (with Control or Meta: copy, cut, paste).
pub fn is_clipboard_key(key: &str) -> bool {
    matches!(key, "c" | "x" | "v" | "C" | "X" | "V")
}

/// Whether a paste has anything to paste.
pub fn clipboard_holds_text() -> bool {
    CLIPBOARD.with(|c| c.borrow().is_some())
}

/// A text field's selected text (`None` outside text fields), with the
/// selection's ends in UTF-16 units.
fn field_selection(el: &Element) -> Option<(String, u32, u32)> {
    let (value, start, end) = match field(el) {
        Field::Input(i) => {
            (i.value(), i.selection_start().ok().flatten()?, i.selection_end().ok().flatten()?)
        }
        Field::Area(a) => {
            (a.value(), a.selection_start().ok().flatten()?, a.selection_end().ok().flatten()?)
        }
        _ => return None,
    };
    let units: Vec<u16> = value.encode_utf16().collect();
    let (s, e) = (start.min(end) as usize, end.max(start) as usize);
    let text = String::from_utf16_lossy(units.get(s..e.min(units.len()))?);
    Some((text, s as u32, e as u32))
}

/// The page's selection as text (a person's selection of a paragraph).
fn page_selection(el: &Element) -> String {
    proto::owner_document(el)
        .and_then(|d| proto::get_selection(&d).ok().flatten())
        .map(|s| String::from(s.to_string()))
        .unwrap_or_default()
}

/// Dispatches `copy`, `cut` or `paste` with a `DataTransfer`; `false` when
/// a handler cancelled it.
fn clipboard_event(target: &Element, kind: &str, data: &web_sys::DataTransfer) -> bool {
    let init = web_sys::ClipboardEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_composed(true);
    init.set_clipboard_data(Some(data));
    match web_sys::ClipboardEvent::new_with_event_init_dict(kind, &init) {
        Ok(e) => proto::dispatch_event(&target, &e).unwrap_or(true),
        Err(_) => true,
    }
}

/// Copy, cut or paste (`key` is `c`, `x` or `v`) as the browser does: the
/// page's `copy`/`cut`/`paste` listeners run first and may change what is
/// copied (`clipboardData.setData` and `preventDefault`) or take the paste
/// over; otherwise the selection is copied (and a cut deletes it from its
/// field), and a paste inserts the text at the caret with `beforeinput`
/// and `input` of type `insertFromPaste`.
fn clipboard(target: &Element, key: &str) -> String {
    let Ok(data) = web_sys::DataTransfer::new() else {
        return "nothing was copied or pasted: no DataTransfer in this page".into();
    };
    if key == "v" {
        let Some(text) = CLIPBOARD.with(|c| c.borrow().clone()) else {
            return "nothing was pasted: nothing was copied in this page with ControlOrMeta+c or \
                    +x (the system clipboard cannot be read)"
                .into();
        };
        let _ = data.set_data("text/plain", &text);
        if !clipboard_event(target, "paste", &data) {
            return format!(
                "pasted {} characters (the page handled the paste)",
                text.chars().count()
            );
        }
        if matches!(field(target), Field::None) {
            return "nothing was pasted: the focused element is not a text field".into();
        }
        insert_as(target, &text, "insertFromPaste");
        return format!("pasted {} characters", text.chars().count());
    }
    let in_field = field_selection(target);
    let selected = in_field.as_ref().map_or_else(|| page_selection(target), |(t, _, _)| t.clone());
    let kind = if key == "x" { "cut" } else { "copy" };
    let go = clipboard_event(target, kind, &data);
    let text = if go {
        selected
    } else {
        // A handler that cancels the event copies what it put in the
        // `DataTransfer` (nothing when it only meant to stop the copy).
        data.get_data("text/plain").unwrap_or_default()
    };
    if text.is_empty() {
        return format!(
            "nothing was {}: nothing is selected (select with ControlOrMeta+a first)",
            if key == "x" { "cut" } else { "copied" }
        );
    }
    let count = text.chars().count();
    CLIPBOARD.with(|c| *c.borrow_mut() = Some(text));
    if go && key == "x" && in_field.is_some() {
        backspace(target, false);
        return format!("cut {count} characters");
    }
    format!("copied {count} characters")
}

/// Fires `beforeinput`, and when it is not cancelled runs `edit` and fires
/// `input`.
fn input_event(el: &Element, input_type: &str, data: Option<&str>, edit: impl FnOnce()) {
    let init = InputEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_composed(true);
    init.set_input_type(input_type);
    init.set_data(data);
    let go = InputEvent::new_with_event_init_dict("beforeinput", &init)
        .and_then(|e| proto::dispatch_event(&el, &e))
        .unwrap_or(true);
    if !go {
        return;
    }
    edit();
    init.set_cancelable(false);
    if let Ok(e) = InputEvent::new_with_event_init_dict("input", &init) {
        let _ = proto::dispatch_event(&el, &e);
    }
}

/// The text field's value with `text` put in place of the selection.
fn spliced(value: &str, start: Option<u32>, end: Option<u32>, text: &str) -> (String, u32) {
    let chars: Vec<char> = value.chars().collect();
    let len = chars.len() as u32;
    let s = start.unwrap_or(len).min(len) as usize;
    let e = end.unwrap_or(len).min(len).max(s as u32) as usize;
    let mut out: String = chars[..s].iter().collect();
    out.push_str(text);
    out.extend(&chars[e..]);
    (out, (s + text.chars().count()) as u32)
}

/// Inserts text at the caret of a field, as typing does.
fn insert(el: &Element, text: &str) {
    insert_as(el, text, "insertText");
}

/// Inserts text at the caret of a field with `beforeinput`/`input` of
/// type `input_type` (`insertText`, `insertFromPaste`).
fn insert_as(el: &Element, text: &str, input_type: &str) {
    match field(el) {
        Field::Input(i) => {
            let (start, end) =
                (i.selection_start().ok().flatten(), i.selection_end().ok().flatten());
            let (v, caret) = spliced(&i.value(), start, end, text);
            input_event(el, input_type, Some(text), || {
                let _ = set_native_value(el, "HTMLInputElement", &v);
                let _ = i.set_selection_range(caret, caret);
            });
        }
        Field::Area(a) => {
            let (start, end) =
                (a.selection_start().ok().flatten(), a.selection_end().ok().flatten());
            let (v, caret) = spliced(&a.value(), start, end, text);
            input_event(el, input_type, Some(text), || {
                let _ = set_native_value(el, "HTMLTextAreaElement", &v);
                let _ = a.set_selection_range(caret, caret);
            });
        }
        Field::Editable => exec(el, "insertText", Some(text)),
        Field::None => {}
    }
}

/// `document.execCommand`, which edits a contenteditable as typing does
/// (firing `beforeinput` and `input` itself).
pub fn exec(el: &Element, command: &str, value: Option<&str>) {
    let Some(doc) = proto::owner_document(&el) else {
        return;
    };
    proto::exec_command(&doc, command, value);
}

/// Deletes the selection, or the character before the caret.
fn backspace(el: &Element, forward: bool) {
    let edit = |value: String, start: Option<u32>, end: Option<u32>| {
        let chars: Vec<char> = value.chars().collect();
        let len = chars.len() as u32;
        let s = start.unwrap_or(len).min(len);
        let e = end.unwrap_or(len).min(len).max(s);
        let (s, e) = if s != e {
            (s, e)
        } else if forward {
            (s, (s + 1).min(len))
        } else {
            (s.saturating_sub(1), s)
        };
        let mut out: String = chars[..s as usize].iter().collect();
        out.extend(&chars[e as usize..]);
        (out, s)
    };
    let kind = if forward { "deleteContentForward" } else { "deleteContentBackward" };
    match field(el) {
        Field::Input(i) => {
            let (v, caret) = edit(
                i.value(),
                i.selection_start().ok().flatten(),
                i.selection_end().ok().flatten(),
            );
            input_event(el, kind, None, || {
                let _ = set_native_value(el, "HTMLInputElement", &v);
                let _ = i.set_selection_range(caret, caret);
            });
        }
        Field::Area(a) => {
            let (v, caret) = edit(
                a.value(),
                a.selection_start().ok().flatten(),
                a.selection_end().ok().flatten(),
            );
            input_event(el, kind, None, || {
                let _ = set_native_value(el, "HTMLTextAreaElement", &v);
                let _ = a.set_selection_range(caret, caret);
            });
        }
        Field::Editable => exec(el, if forward { "forwardDelete" } else { "delete" }, None),
        Field::None => {}
    }
}

/// The focusable elements of the element's document, in tab order.
fn tab_order(el: &Element) -> Vec<HtmlElement> {
    let Some(doc) = proto::owner_document(&el) else {
        return Vec::new();
    };
    let Ok(list) = proto::query_selector_all(
        &doc,
        "a[href], button, input, select, textarea, summary, [tabindex], [contenteditable=true]",
    ) else {
        return Vec::new();
    };
    let mut out: Vec<(i32, usize, HtmlElement)> = Vec::new();
    for i in 0..list.length() {
        let Some(n) = list.item(i) else { continue };
        let e: HtmlElement = n.unchecked_into();
        let tag = proto::local_name(&e);
        if proto::tab_index(&e) < 0 || dom::is_disabled(&e, &tag) {
            continue;
        }
        if tag == "input" && proto::get_attribute(&e, "type").as_deref() == Some("hidden") {
            continue;
        }
        let r = proto::get_bounding_client_rect(&e);
        if r.width() <= 0.0 && r.height() <= 0.0 {
            continue;
        }
        out.push((proto::tab_index(&e), i as usize, e));
    }
    // Positive tabindex first (ascending), then document order.
    out.sort_by_key(|(t, i, _)| (if *t > 0 { 0 } else { 1 }, if *t > 0 { *t } else { 0 }, *i));
    out.into_iter().map(|(_, _, e)| e).collect()
}

/// Presses one key combination on `target`; returns what it did by default.
pub fn press(target: &Element, combo: &Combo) -> Option<String> {
    let keys = combo.keys;
    let key = combo.key.as_str();
    let down = key_event(target, "keydown", key, keys);
    let mut did = None;
    if down {
        let plain = !keys.ctrl && !keys.meta && !keys.alt;
        if plain && is_char(key) && !matches!(field(target), Field::None) {
            key_event(target, "keypress", key, keys);
            insert(target, key);
        } else if plain && key == "Enter" {
            key_event(target, "keypress", key, keys);
            did = enter(target);
        } else if plain && (key == "Backspace" || key == "Delete") {
            backspace(target, key == "Delete");
        } else if key == "Tab" && !keys.ctrl && !keys.meta {
            let order = tab_order(target);
            let here = order.iter().position(|e| {
                let e: &Element = e;
                e == target
            });
            let next = match (here, keys.shift) {
                (Some(i), false) => order.get(i + 1),
                (Some(i), true) => i.checked_sub(1).and_then(|i| order.get(i)),
                (None, false) => order.first(),
                (None, true) => order.last(),
            };
            if let Some(n) = next {
                crate::focus::focus(n);
                did = Some("moved the focus".to_owned());
            }
        } else if (keys.ctrl || keys.meta) && !keys.alt && is_clipboard_key(key) {
            did = Some(clipboard(target, &key.to_ascii_lowercase()));
        } else if (keys.ctrl || keys.meta) && key.eq_ignore_ascii_case("a") {
            match field(target) {
                Field::Input(i) => i.select(),
                Field::Area(a) => a.select(),
                _ => exec(target, "selectAll", None),
            }
            did = Some("selected all".to_owned());
        } else if plain && key == " " {
            let tag = proto::local_name(&target);
            let kind = proto::get_attribute(&target, "type").unwrap_or_default();
            if tag == "button"
                || (tag == "input"
                    && matches!(kind.as_str(), "checkbox" | "radio" | "button" | "submit"))
                || attr_role_is_button(target)
            {
                proto::click(target);
                did = Some("pressed it".to_owned());
            }
        }
    }
    key_event(target, "keyup", key, keys);
    did
}

fn attr_role_is_button(el: &Element) -> bool {
    matches!(
        proto::get_attribute(&el, "role").as_deref(),
        Some("button" | "checkbox" | "switch" | "menuitem" | "option" | "tab")
    )
}

/// Enter's default: submit the field's form, or click a button or link.
fn enter(target: &Element) -> Option<String> {
    let tag = proto::local_name(&target);
    match tag.as_str() {
        "input" => {
            let input: &HtmlInputElement = target.unchecked_ref();
            let kind = input.type_().to_ascii_lowercase();
            if matches!(
                kind.as_str(),
                "submit" | "button" | "image" | "reset" | "checkbox" | "radio"
            ) {
                proto::click(target);
                return Some("pressed it".to_owned());
            }
            let form = input.form()?;
            let _ = fire_change(target);
            // `requestSubmit` runs validation and fires `submit`, as
            // pressing Enter does (through the prototype: a field named
            // `requestSubmit` shadows the form's own).
            proto::request_submit(&form).ok()?;
            Some("submitted the form".to_owned())
        }
        "textarea" => {
            insert(target, "\n");
            None
        }
        "a" | "button" | "summary" => {
            proto::click(target);
            Some("pressed it".to_owned())
        }
        _ if proto::is_content_editable(&target.unchecked_ref::<HtmlElement>()) => {
            exec(target, "insertParagraph", None);
            None
        }
        _ if attr_role_is_button(target) => {
            proto::click(target);
            Some("pressed it".to_owned())
        }
        _ => None,
    }
}

/// Types `text` key by key into `target`.
pub fn type_text(target: &Element, text: &str) {
    for c in text.chars() {
        let key = c.to_string();
        let keys = Keys { shift: c.is_uppercase(), ..Keys::default() };
        if c == '\n' {
            press(target, &Combo { keys: Keys::default(), key: "Enter".into() });
            continue;
        }
        press(target, &Combo { keys, key });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_combinations() {
        let c = parse("ControlOrMeta+a", false).unwrap();
        assert!(c.keys.ctrl && !c.keys.meta);
        assert_eq!(c.key, "a");
        let c = parse("ControlOrMeta+a", true).unwrap();
        assert!(c.keys.meta && !c.keys.ctrl);
        let c = parse("Shift+Tab", false).unwrap();
        assert!(c.keys.shift);
        assert_eq!(c.key, "Tab");
        assert_eq!(parse("enter", false).unwrap().key, "Enter");
        assert_eq!(parse("Control++", false).unwrap().key, "+");
        assert_eq!(parse(" ", false).unwrap().key, " ");
        assert_eq!(parse("Space", false).unwrap().key, " ");
        assert!(parse("Hyper+x", false).is_err());
        assert!(parse("Blorp", false).is_err());
    }

    #[test]
    fn knows_codes() {
        assert_eq!(codes("Enter"), ("Enter".into(), 13));
        assert_eq!(codes("a"), ("KeyA".into(), 65));
        assert_eq!(codes("7"), ("Digit7".into(), 55));
        assert_eq!(codes(" "), ("Space".into(), 32));
    }

    #[test]
    fn splices_text() {
        assert_eq!(spliced("abc", Some(1), Some(2), "X"), ("aXc".into(), 2));
        assert_eq!(spliced("abc", None, None, "d"), ("abcd".into(), 4));
    }
}

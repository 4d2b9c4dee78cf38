//! The keyboard: key combinations (`ControlOrMeta+a`, `Shift+Tab`) and
//! typing key by key, as a US keyboard types.
//!
//! One table of keys, as data ([`PRINTABLE`], [`NAMED`]: the US layout,
//! not an allow-list), gives every key event its fields as a real
//! keyboard sends them: `key` (the character), `code` (the physical key:
//! `Period`, `Digit9`), the legacy `keyCode`/`which` of the physical key
//! on `keydown`/`keyup` ("." is 190, "(" is 57 with Shift — never the
//! character's own code, which editors read as Delete or ArrowDown), Shift
//! held for shifted characters, and `keypress` with the character's code
//! as `charCode`/`keyCode`. Characters no US key types (é, 日本, emoji)
//! come as Chrome gives an input method's text: `keydown` `Process`/229,
//! `compositionstart`/`compositionupdate`, `insertCompositionText`,
//! `compositionend`, `keyup`.
//!
//! Synthetic key events do not make the browser do anything by itself, so
//! after each key whose `keydown` (and `keypress`) the page did not
//! cancel, the key's usual effect is carried out here: a character goes
//! into the field (through the native value setter between `beforeinput`
//! and `input`, as a person's typing does; nothing when the field's
//! `maxlength` is reached, as in a browser), Backspace deletes, Enter
//! fires the field's `change` when its value changed since it got the
//! focus (`events::commit_edit`, form or no form) and submits its form
//! (or clicks a button or link), Tab moves the focus, `ControlOrMeta+a`
//! selects all, Space ticks a checkbox or presses a button. Typing
//! follows the focus: when the page moves it on to another text field,
//! the rest of the text goes there.

use crate::proto;
use wasm_bindgen::JsCast;
use web_sys::{
    CompositionEvent, CompositionEventInit, Element, HtmlElement, HtmlInputElement,
    HtmlTextAreaElement, InputEvent, InputEventInit, KeyboardEvent, KeyboardEventInit,
};

use crate::dom;
use crate::events::{Keys, commit_edit, note_edit, set_native_value};

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

/// The keys of a US keyboard that type a character, as data: the
/// physical key's `KeyboardEvent.code`, its legacy virtual key code
/// (`keyCode`/`which` on `keydown` and `keyup`: the code of the key, not
/// of the character, so "." is 190 and "(" is 57 with Shift), and the
/// character it types without and with Shift.
const PRINTABLE: &[(&str, u32, char, char)] = &[
    ("Backquote", 192, '`', '~'),
    ("Digit1", 49, '1', '!'),
    ("Digit2", 50, '2', '@'),
    ("Digit3", 51, '3', '#'),
    ("Digit4", 52, '4', '$'),
    ("Digit5", 53, '5', '%'),
    ("Digit6", 54, '6', '^'),
    ("Digit7", 55, '7', '&'),
    ("Digit8", 56, '8', '*'),
    ("Digit9", 57, '9', '('),
    ("Digit0", 48, '0', ')'),
    ("Minus", 189, '-', '_'),
    ("Equal", 187, '=', '+'),
    ("BracketLeft", 219, '[', '{'),
    ("BracketRight", 221, ']', '}'),
    ("Backslash", 220, '\\', '|'),
    ("Semicolon", 186, ';', ':'),
    ("Quote", 222, '\'', '"'),
    ("Comma", 188, ',', '<'),
    ("Period", 190, '.', '>'),
    ("Slash", 191, '/', '?'),
    ("Space", 32, ' ', ' '),
    ("KeyA", 65, 'a', 'A'),
    ("KeyB", 66, 'b', 'B'),
    ("KeyC", 67, 'c', 'C'),
    ("KeyD", 68, 'd', 'D'),
    ("KeyE", 69, 'e', 'E'),
    ("KeyF", 70, 'f', 'F'),
    ("KeyG", 71, 'g', 'G'),
    ("KeyH", 72, 'h', 'H'),
    ("KeyI", 73, 'i', 'I'),
    ("KeyJ", 74, 'j', 'J'),
    ("KeyK", 75, 'k', 'K'),
    ("KeyL", 76, 'l', 'L'),
    ("KeyM", 77, 'm', 'M'),
    ("KeyN", 78, 'n', 'N'),
    ("KeyO", 79, 'o', 'O'),
    ("KeyP", 80, 'p', 'P'),
    ("KeyQ", 81, 'q', 'Q'),
    ("KeyR", 82, 'r', 'R'),
    ("KeyS", 83, 's', 'S'),
    ("KeyT", 84, 't', 'T'),
    ("KeyU", 85, 'u', 'U'),
    ("KeyV", 86, 'v', 'V'),
    ("KeyW", 87, 'w', 'W'),
    ("KeyX", 88, 'x', 'X'),
    ("KeyY", 89, 'y', 'Y'),
    ("KeyZ", 90, 'z', 'Z'),
];

/// The named keys (`KeyboardEvent.key`), their `code` and legacy
/// `keyCode`. Function keys follow their own pattern (`F1` = 112).
const NAMED: &[(&str, &str, u32)] = &[
    ("Enter", "Enter", 13),
    ("Tab", "Tab", 9),
    ("Escape", "Escape", 27),
    ("Backspace", "Backspace", 8),
    ("Delete", "Delete", 46),
    ("Insert", "Insert", 45),
    ("ArrowUp", "ArrowUp", 38),
    ("ArrowDown", "ArrowDown", 40),
    ("ArrowLeft", "ArrowLeft", 37),
    ("ArrowRight", "ArrowRight", 39),
    ("Home", "Home", 36),
    ("End", "End", 35),
    ("PageUp", "PageUp", 33),
    ("PageDown", "PageDown", 34),
];

/// How a US keyboard makes one key: the physical key's `code`, its legacy
/// `keyCode`, and whether Shift is held for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stroke {
    pub code: String,
    pub key_code: u32,
    pub shift: bool,
}

/// The stroke of a key (`KeyboardEvent.key`: a character or a named key);
/// `None` for a character a US keyboard cannot type (é, 日, an emoji:
/// those come from an input method, see [`type_text`]).
pub fn stroke(key: &str) -> Option<Stroke> {
    if let Some((_, code, key_code)) = NAMED.iter().find(|(k, _, _)| *k == key) {
        return Some(Stroke { code: (*code).to_owned(), key_code: *key_code, shift: false });
    }
    if let Some(n) = key.strip_prefix('F').and_then(|n| n.parse::<u32>().ok()) {
        if (1..=24).contains(&n) {
            return Some(Stroke { code: key.to_owned(), key_code: 111 + n, shift: false });
        }
    }
    let mut chars = key.chars();
    let (Some(c), None) = (chars.next(), chars.next()) else {
        return None;
    };
    PRINTABLE.iter().find_map(|(code, key_code, plain, shifted)| {
        let shift = if c == *plain {
            false
        } else if c == *shifted {
            true
        } else {
            return None;
        };
        Some(Stroke { code: (*code).to_owned(), key_code: *key_code, shift })
    })
}

/// The character the key of `c` types with Shift held (`a` → `A`, `1` →
/// `!`), for a combination such as `Shift+a`.
fn shifted(c: char) -> Option<char> {
    PRINTABLE.iter().find(|(_, _, plain, _)| *plain == c).map(|(_, _, _, s)| *s)
}

/// `KeyboardEvent.code` and the legacy `keyCode` of a key (empty and 0
/// for a key no US keyboard has).
pub fn codes(key: &str) -> (String, u32) {
    stroke(key).map_or((String::new(), 0), |s| (s.code, s.key_code))
}

/// Whether a key puts a character into a field.
fn is_char(key: &str) -> bool {
    key.chars().count() == 1
}

/// Dispatches one keyboard event; `false` when a handler cancelled it.
fn key_event(target: &Element, kind: &str, key: &str, keys: Keys) -> bool {
    let (code, key_code) = codes(key);
    // The legacy `keyCode`/`which`/`charCode` (UI Events' legacy init
    // members): older widgets and editors read them. On `keypress` both
    // are the character's code (13 for Enter), elsewhere the key's.
    let legacy = if kind == "keypress" && is_char(key) {
        key.chars().next().map_or(0, |c| c as u32)
    } else {
        key_code
    };
    let char_code = if kind == "keypress" { legacy } else { 0 };
    keyboard_event(target, kind, key, &code, legacy, char_code, keys)
}

/// Dispatches a keyboard event with these fields; `false` when a handler
/// cancelled it.
fn keyboard_event(
    target: &Element,
    kind: &str,
    key: &str,
    code: &str,
    key_code: u32,
    char_code: u32,
    keys: Keys,
) -> bool {
    let init = KeyboardEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_composed(true);
    init.set_key(key);
    init.set_code(code);
    init.set_alt_key(keys.alt);
    init.set_ctrl_key(keys.ctrl);
    init.set_meta_key(keys.meta);
    init.set_shift_key(keys.shift);
    if let Some(w) = dom::window_of(target) {
        init.set_view(Some(&w));
    }
    // They must go in the init dictionary: properties set on the event
    // object here would stay in the content script's world.
    init.set_key_code(key_code);
    init.set_which(key_code);
    init.set_char_code(char_code);
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

/// Whether `el` is a secret field (`type=password`, or an `autocomplete`
/// saying password, one-time code or card data).
fn is_secret_element(el: &Element) -> bool {
    proto::local_name(el) == "input"
        && crate::marks::is_secret_field(
            proto::get_attribute(el, "type").as_deref(),
            proto::get_attribute(el, "autocomplete").as_deref(),
        )
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
        if let Some(max) = insert_as(target, &text, "insertFromPaste", false) {
            return format!(
                "pasted what fits of {} characters: the field takes at most {max}",
                text.chars().count()
            );
        }
        return format!("pasted {} characters", text.chars().count());
    }
    let in_field = field_selection(target);
    let selected = in_field.as_ref().map_or_else(|| page_selection(target), |(t, _, _)| t.clone());
    // Secrets are taint, not strings: nothing is copied or cut out of a
    // secret field (a password, one-time-code or card field), nor any
    // selection holding part of a secret Errand filled, whatever the page
    // did to it since.
    if is_secret_element(target) || crate::marks::holds_secret(&selected) {
        return format!(
            "not {}: the selection is in a field that holds secret material, and Errand never \
             copies or cuts it",
            if key == "x" { "cut" } else { "copied" }
        );
    }
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
/// `input` (with `isComposing` while an input method composes).
fn input_event(
    el: &Element,
    input_type: &str,
    data: Option<&str>,
    composing: bool,
    edit: impl FnOnce(),
) {
    let init = InputEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(true);
    init.set_composed(true);
    init.set_input_type(input_type);
    init.set_data(data);
    init.set_is_composing(composing);
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

/// The text field's value with `text` put in place of the selection (its
/// ends in UTF-16 units, as the DOM counts), and the caret after it.
fn spliced(value: &str, start: Option<u32>, end: Option<u32>, text: &str) -> (String, u32) {
    let units: Vec<u16> = value.encode_utf16().collect();
    let len = units.len() as u32;
    let s = start.unwrap_or(len).min(len) as usize;
    let e = end.unwrap_or(len).min(len).max(s as u32) as usize;
    let mut out = String::from_utf16_lossy(&units[..s]);
    out.push_str(text);
    out.push_str(&String::from_utf16_lossy(&units[e..]));
    (out, (s + text.encode_utf16().count()) as u32)
}

/// A text field's `maxlength` (in UTF-16 units, as the browser counts),
/// parsed as HTML parses a non-negative integer; `None` when it has none
/// or its type takes none (number, date, …).
pub fn max_length(el: &Element) -> Option<u32> {
    let applies = match field(el) {
        Field::Input(i) => matches!(
            i.type_().to_ascii_lowercase().as_str(),
            "text" | "search" | "url" | "tel" | "email" | "password"
        ),
        Field::Area(_) => true,
        _ => false,
    };
    if !applies {
        return None;
    }
    let raw = proto::get_attribute(el, "maxlength")?;
    let digits: String =
        raw.trim_start().chars().take_while(char::is_ascii_digit).take(9).collect();
    digits.parse().ok()
}

/// `text` cut to what a field of `max` units holding `len` units, `taken`
/// of them selected (replaced), still takes, at a character's boundary;
/// `None` when it takes all of it.
pub fn fitting(text: &str, max: u32, len: u32, taken: u32) -> Option<String> {
    let room = max.saturating_sub(len.saturating_sub(taken)) as usize;
    if text.encode_utf16().count() <= room {
        return None;
    }
    let mut used = 0;
    Some(
        text.chars()
            .take_while(|c| {
                used += c.len_utf16();
                used <= room
            })
            .collect(),
    )
}

/// Inserts text at the caret of a field, as typing does; `Some(max)` when
/// the field's `maxlength` kept some or all of it out.
fn insert(el: &Element, text: &str) -> Option<u32> {
    insert_as(el, text, "insertText", false)
}

/// A text field's value, selection ends and value setter's class (`None`
/// for an editor or anything else).
fn caret_state(f: &Field) -> Option<(String, Option<u32>, Option<u32>, &'static str)> {
    match f {
        Field::Input(i) => Some((
            i.value(),
            i.selection_start().ok().flatten(),
            i.selection_end().ok().flatten(),
            "HTMLInputElement",
        )),
        Field::Area(a) => Some((
            a.value(),
            a.selection_start().ok().flatten(),
            a.selection_end().ok().flatten(),
            "HTMLTextAreaElement",
        )),
        Field::Editable | Field::None => None,
    }
}

/// Inserts text at the caret of a field with `beforeinput`/`input` of
/// type `input_type` (`insertText`, `insertFromPaste`,
/// `insertCompositionText`), as much of it as the field's `maxlength`
/// lets in (nothing, with no input events, when it is full: as a
/// browser does); `Some(max)` when the limit kept some of it out.
fn insert_as(el: &Element, text: &str, input_type: &str, composing: bool) -> Option<u32> {
    let f = field(el);
    if matches!(f, Field::Editable) {
        exec(el, "insertText", Some(text));
        return None;
    }
    let (value, start, end, class) = caret_state(&f)?;
    let len = value.encode_utf16().count() as u32;
    let taken = match (start, end) {
        (Some(s), Some(e)) => e.max(s).min(len) - s.min(e).min(len),
        _ => 0,
    };
    let max = max_length(el);
    let cut = max.and_then(|m| fitting(text, m, len, taken));
    let text = cut.as_deref().unwrap_or(text);
    if text.is_empty() {
        return max;
    }
    let (v, caret) = spliced(&value, start, end, text);
    note_edit(el);
    input_event(el, input_type, Some(text), composing, || {
        let _ = set_native_value(el, class, &v);
        set_caret(el, caret);
    });
    cut.and(max)
}

/// Puts a text field's caret at `at` (UTF-16 units).
fn set_caret(el: &Element, at: u32) {
    match field(el) {
        Field::Input(i) => {
            let _ = i.set_selection_range(at, at);
        }
        Field::Area(a) => {
            let _ = a.set_selection_range(at, at);
        }
        _ => {}
    }
}

/// Dispatches a composition event (`compositionstart`, `compositionupdate`,
/// `compositionend`) with `data`.
fn composition_event(target: &Element, kind: &str, data: &str) {
    let init = CompositionEventInit::new();
    init.set_bubbles(true);
    init.set_cancelable(kind == "compositionstart");
    init.set_composed(true);
    init.set_data(data);
    if let Some(w) = dom::window_of(target) {
        init.set_view(Some(&w));
    }
    if let Ok(e) = CompositionEvent::new_with_event_init_dict(kind, &init) {
        let _ = proto::dispatch_event(&target, &e);
    }
}

/// Enters text no US key types (é, 日本, an emoji) as an input method
/// does in Chrome: `keydown` with key `Process` and key code 229,
/// `compositionstart`, `compositionupdate`, `beforeinput`/`input` of type
/// `insertCompositionText` (composing), `compositionend`, `keyup`;
/// `Some(max)` when the field's `maxlength` kept some of it out.
fn compose(target: &Element, text: &str) -> Option<u32> {
    let keys = Keys::default();
    keyboard_event(target, "keydown", "Process", "", 229, 0, keys);
    composition_event(target, "compositionstart", "");
    composition_event(target, "compositionupdate", text);
    let full = if matches!(field(target), Field::Editable) {
        exec(target, "insertText", Some(text));
        None
    } else {
        insert_as(target, text, "insertCompositionText", true)
    };
    composition_event(target, "compositionend", text);
    keyboard_event(target, "keyup", "Process", "", 229, 0, keys);
    full
}

/// `document.execCommand`, which edits a contenteditable as typing does
/// (firing `beforeinput` and `input` itself).
pub fn exec(el: &Element, command: &str, value: Option<&str>) {
    let Some(doc) = proto::owner_document(&el) else {
        return;
    };
    proto::exec_command(&doc, command, value);
}

/// Deletes the selection, or the character before (after, `forward`) the
/// caret.
fn backspace(el: &Element, forward: bool) {
    // In UTF-16 units, as the selection counts; a character of two units
    // (an emoji) goes whole.
    let edit = |value: String, start: Option<u32>, end: Option<u32>| {
        let units: Vec<u16> = value.encode_utf16().collect();
        let len = units.len() as u32;
        let s = start.unwrap_or(len).min(len);
        let e = end.unwrap_or(len).min(len).max(s);
        let surrogate =
            |i: u32| units.get(i as usize).is_some_and(|u| (0xDC00..0xE000).contains(u));
        let (s, e) = if s != e {
            (s, e)
        } else if forward {
            let e = (s + 1).min(len);
            (s, if e < len && surrogate(e) { e + 1 } else { e })
        } else {
            let b = s.saturating_sub(1);
            (if b > 0 && surrogate(b) { b - 1 } else { b }, s)
        };
        let mut out = String::from_utf16_lossy(&units[..s as usize]);
        out.push_str(&String::from_utf16_lossy(&units[e as usize..]));
        (out, s)
    };
    let kind = if forward { "deleteContentForward" } else { "deleteContentBackward" };
    let f = field(el);
    if matches!(f, Field::Editable) {
        exec(el, if forward { "forwardDelete" } else { "delete" }, None);
        return;
    }
    let Some((value, start, end, class)) = caret_state(&f) else { return };
    let (v, caret) = edit(value, start, end);
    note_edit(el);
    input_event(el, kind, None, false, || {
        let _ = set_native_value(el, class, &v);
        set_caret(el, caret);
    });
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

/// Presses one key combination on `target`; returns what it did by default
/// (`nothing was typed: …` when a full field took no character).
pub fn press(target: &Element, combo: &Combo) -> Option<String> {
    let (did, full) = press_key(target, combo);
    match full {
        Some(max) => Some(format!("nothing was typed: the field takes at most {max} characters")),
        None => did,
    }
}

/// The key and the held keys a combination is pressed with on a US
/// keyboard: Shift held for a character typed with it (`(`, `A`), and the
/// shifted character for Shift with a character key (`Shift+a` is `A`).
fn as_typed(combo: &Combo) -> (String, Keys) {
    let mut keys = combo.keys;
    let mut key = combo.key.clone();
    let mut chars = key.chars();
    if let (Some(c), None, true) = (chars.next(), chars.next(), keys.shift) {
        if let Some(s) = shifted(c) {
            key = s.to_string();
        }
    }
    if stroke(&key).is_some_and(|s| s.shift) {
        keys.shift = true;
    }
    (key, keys)
}

/// [`press`], and `Some(max)` when the field's `maxlength` kept the
/// character out.
fn press_key(target: &Element, combo: &Combo) -> (Option<String>, Option<u32>) {
    let (key, keys) = as_typed(combo);
    let key = key.as_str();
    let down = key_event(target, "keydown", key, keys);
    let mut did = None;
    let mut full = None;
    if down {
        let plain = !keys.ctrl && !keys.meta && !keys.alt;
        if plain && is_char(key) {
            // `keypress` for a character key, wherever the focus is; a
            // handler cancelling it keeps the character out.
            if key_event(target, "keypress", key, keys) {
                full = insert(target, key);
            }
        } else if plain && key == "Enter" {
            if key_event(target, "keypress", key, keys) {
                did = enter(target);
            }
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
    (did, full)
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
            // Enter finishes the edit as leaving the field does: `change`
            // when the value changed since the field got the focus (or
            // since its last `change`), with or without a form.
            commit_edit(target);
            let form = input.form()?;
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

/// What typing did.
#[derive(Default)]
pub struct Typed {
    /// The fields the keys went to, in order: more than one when the
    /// page moved the focus on to another field as it took the text (a
    /// code split over one box per digit).
    pub into: Vec<Element>,
    /// The field's `maxlength`, when it kept characters out.
    pub full: Option<u32>,
}

/// Where the next key goes: the focused element when it is another text
/// field the page moved the focus to (it had not the focus when typing
/// began: `first`), else `target`.
fn next_target(target: &Element, first: Option<&Element>) -> Element {
    let active = key_target(None).filter(|a| {
        a != target
            && Some(a) != first
            && !matches!(field(a), Field::None)
            && !proto::contains(a, Some(target))
            && !proto::contains(target, Some(a))
    });
    active.unwrap_or_else(|| target.clone())
}

/// Types `text` key by key into `target`, as a US keyboard types it: each
/// character with its key's `code` and legacy `keyCode` (Shift held for
/// shifted ones, see [`stroke`]), a line break as Enter, and a run of
/// characters no US key types through an input method's composition
/// events ([`compose`]). The keys go where the focus is, as a person's
/// do: when the page moves it on to another text field, the rest goes
/// there.
pub fn type_text(target: &Element, text: &str) -> Typed {
    let mut typed = Typed::default();
    let first = key_target(None);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let t = next_target(target, first.as_ref());
        if typed.into.last() != Some(&t) {
            typed.into.push(t.clone());
        }
        let full = match c {
            '\r' => None,
            '\n' => press_key(&t, &Combo { keys: Keys::default(), key: "Enter".into() }).1,
            _ if c == '\t' || stroke(&c.to_string()).is_some() => {
                press_key(&t, &Combo { keys: Keys::default(), key: c.to_string() }).1
            }
            _ => {
                let mut run = c.to_string();
                while let Some(&n) = chars.peek() {
                    if n.is_control() || stroke(&n.to_string()).is_some() {
                        break;
                    }
                    run.push(n);
                    chars.next();
                }
                compose(&t, &run)
            }
        };
        typed.full = typed.full.or(full);
    }
    typed
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
        assert_eq!(codes("F5"), ("F5".into(), 116));
        assert_eq!(codes("é"), (String::new(), 0));
    }

    #[test]
    fn types_punctuation_with_the_key_that_makes_it() {
        let s = |k: &str| stroke(k).map(|s| (s.code, s.key_code, s.shift));
        // Not the character's code: "." is not Delete (46), "(" not
        // ArrowDown (40), "%" not ArrowLeft (37), "!" not PageUp (33).
        assert_eq!(s("."), Some(("Period".into(), 190, false)));
        assert_eq!(s("("), Some(("Digit9".into(), 57, true)));
        assert_eq!(s("%"), Some(("Digit5".into(), 53, true)));
        assert_eq!(s("!"), Some(("Digit1".into(), 49, true)));
        assert_eq!(s("A"), Some(("KeyA".into(), 65, true)));
        assert_eq!(s("\""), Some(("Quote".into(), 222, true)));
        assert_eq!(s("-"), Some(("Minus".into(), 189, false)));
        assert_eq!(s("é"), None);
        assert_eq!(s("日"), None);
        let c = Combo { keys: Keys { shift: true, ..Keys::default() }, key: "a".into() };
        assert_eq!(as_typed(&c).0, "A");
        let c = Combo { keys: Keys::default(), key: "?".into() };
        assert!(as_typed(&c).1.shift);
    }

    #[test]
    fn cuts_to_maxlength() {
        assert_eq!(fitting("1234567890", 3, 0, 0).as_deref(), Some("123"));
        assert_eq!(fitting("12", 3, 0, 0), None);
        assert_eq!(fitting("4", 3, 3, 0).as_deref(), Some(""));
        assert_eq!(fitting("45", 3, 3, 3), None);
        // A character of two UTF-16 units is not split.
        assert_eq!(fitting("a😀", 2, 0, 0).as_deref(), Some("a"));
    }

    #[test]
    fn splices_text() {
        assert_eq!(spliced("abc", Some(1), Some(2), "X"), ("aXc".into(), 2));
        assert_eq!(spliced("abc", None, None, "d"), ("abcd".into(), 4));
        // Selection ends count UTF-16 units.
        assert_eq!(spliced("😀b", Some(2), Some(2), "X"), ("😀Xb".into(), 3));
    }
}

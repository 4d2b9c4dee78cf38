//! Whole field values, for `extract`: the element list may shorten a long
//! value (`text::push_value`), this never does. Each field of the document
//! that shows (not hidden inputs, buttons, checkboxes, passwords or other
//! secret fields) with its number when it has one and its value as a JSON
//! string: exactly as typed, spaces at its ends and line breaks kept.

use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement};

/// The most characters of values written in all.
const MAX: usize = 40_000;

/// `field values (whole, as JSON strings):` and one line per field with a
/// value, `12 "Ada "`; empty when no field has one.
pub fn fields_text() -> String {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return String::new();
    };
    let Ok(list) = crate::proto::query_selector_all(
        doc.as_ref(),
        "input, textarea, select, [contenteditable]:not([contenteditable=false i])",
    ) else {
        return String::new();
    };
    let mut out = String::new();
    for i in 0..list.length() {
        let Some(node) = list.item(i) else { continue };
        let el: &Element = node.unchecked_ref();
        let Some(value) = value_of(el) else { continue };
        if value.is_empty() || el.get_client_rects().length() == 0 {
            continue;
        }
        let quoted = crate::json::quote(&value);
        if out.len() + quoted.len() > MAX {
            out.push_str("…\n");
            break;
        }
        match crate::registry::known(el) {
            Some(n) => out.push_str(&format!("{n} {quoted}\n")),
            None => out.push_str(&format!("- {quoted}\n")),
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("field values (whole, as JSON strings, by element number):\n{}", out.trim_end())
}

/// A field's value, or `None` for what holds none or a secret.
fn value_of(el: &Element) -> Option<String> {
    match crate::proto::local_name(el).as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            let kind = input.type_().to_ascii_lowercase();
            let secret = crate::marks::is_secret_field(
                Some(&kind),
                crate::proto::get_attribute(el, "autocomplete").as_deref(),
            );
            let valueless = matches!(
                kind.as_str(),
                "hidden" | "checkbox" | "radio" | "submit" | "button" | "reset" | "image" | "file"
            );
            (!secret && !valueless).then(|| input.value())
        }
        "textarea" => Some(el.unchecked_ref::<HtmlTextAreaElement>().value()),
        "select" => {
            let select = el.unchecked_ref::<HtmlSelectElement>();
            let options = select.selected_options();
            let chosen: Vec<String> = (0..options.length())
                .filter_map(|i| options.item(i))
                .filter_map(|o| crate::proto::text_content(&o))
                .map(|t| crate::text::collapse(&t))
                .collect();
            Some(chosen.join(", "))
        }
        // A contenteditable editor: its text (the outermost only).
        _ => {
            let parent_editable = crate::proto::parent_element(el).is_some_and(|p| {
                crate::proto::closest(&p, "[contenteditable]:not([contenteditable=false i])")
                    .ok()
                    .flatten()
                    .is_some()
            });
            (!parent_editable).then(|| crate::proto::inner_text(el))
        }
    }
}

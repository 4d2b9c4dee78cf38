//! Uploads: files the user allowed set on a file input, found behind the
//! element the model chose (a styled button or drop zone) or opened by it.

use super::*;

/// Puts files (read by the host from the folder the user allowed) into the
/// file input numbered `index`, as choosing them in the file dialog does:
/// `input.files` from a `DataTransfer`, then `input` and `change`.
pub async fn upload(index: u32, files: Vec<errand_protocol::FilePayload>) -> Result<Effect, Fail> {
    let target = registry::element(index).ok();
    let watch = Watch::start(target.as_ref());
    let done = set_files(index, &files);
    effect_of(watch, target.as_ref(), done).await
}

pub(super) fn set_files(index: u32, files: &[errand_protocol::FilePayload]) -> Result<Done, Fail> {
    let shown = usable(index)?;
    let who = describe(index, &shown);
    let el = file_input_behind(&shown).or_else(|| file_input_opened_by(&shown)).ok_or_else(|| {
        failed(&format!(
            "{who} is not a file input, and neither holds nor opens one: use the file input or the control that opens the file chooser"
        ))
    })?;
    if el != shown && dom::is_disabled(&el, "input") {
        return Err(failed(&format!("the file input behind {who} is disabled")));
    }
    let input: &HtmlInputElement = el.unchecked_ref();
    if files.len() > 1 && !input.multiple() {
        return Err(failed(&format!("{who} takes one file, not {}", files.len())));
    }
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let data = web_sys::DataTransfer::new().map_err(|e| failed(&js_text(&e)))?;
    for f in files {
        let binary = window.atob(&f.base64).map_err(|e| failed(&js_text(&e)))?;
        let bytes: Vec<u8> = binary.chars().map(|c| c as u32 as u8).collect();
        let array = js_sys::Uint8Array::from(bytes.as_slice());
        let parts = js_sys::Array::of1(&array);
        let bag = web_sys::FilePropertyBag::new();
        bag.set_type(&f.mime);
        let file = web_sys::File::new_with_u8_array_sequence_and_options(&parts, &f.name, &bag)
            .map_err(|e| failed(&js_text(&e)))?;
        data.items().add_with_file(&file).map_err(|e| failed(&js_text(&e)))?;
    }
    input.set_files(data.files().as_ref());
    for kind in ["input", "change"] {
        let init = EventInit::new();
        init.set_bubbles(true);
        init.set_composed(kind == "input");
        if let Ok(e) = Event::new_with_event_init_dict(kind, &init) {
            let _ = proto::dispatch_event(&el, &e);
        }
    }
    let names: Vec<String> = input
        .files()
        .map(|list| (0..list.length()).filter_map(|i| list.item(i)).map(|f| f.name()).collect())
        .unwrap_or_default();
    let wanted: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    if names != wanted {
        let quoted = |names: &[&str]| {
            let quoted: Vec<String> = names.iter().map(|n| crate::json::quote(n)).collect();
            format!("[{}]", quoted.join(", "))
        };
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Err(failed(&format!(
            "{who} holds {} after the upload, not {}",
            quoted(&names),
            quoted(&wanted)
        )));
    }
    Ok(Done {
        summary: format!("put {} into {who}", names.join(", ")),
        value: Some(names.join(", ")),
    })
}

pub(super) fn is_file_input(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && el.unchecked_ref::<HtmlInputElement>().type_().eq_ignore_ascii_case("file")
}

/// The file input a person reaches through `el`, the control they see: the
/// element itself, the input a `<label>` is for, the one file input inside
/// it (a hidden input in an "Upload" button), or the one file input of the
/// smallest clickable wrapper around it (a drop zone whose input is a
/// sibling, an `opacity: 0` input laid over a "Choose a file" area).
pub(super) fn file_input_behind(el: &Element) -> Option<Element> {
    if is_file_input(el) {
        return Some(el.clone());
    }
    if proto::local_name(&el) == "label" {
        let control = el.unchecked_ref::<web_sys::HtmlLabelElement>().control();
        if let Some(c) = control.map(|c| c.unchecked_into::<Element>()).filter(is_file_input) {
            return Some(c);
        }
    }
    let only_one = |root: &Element| -> Option<Element> {
        let list = proto::query_selector_all(&root, "input[type=file i]").ok()?;
        (list.length() == 1).then(|| list.item(0)).flatten().map(|n| n.unchecked_into())
    };
    if let Some(inner) = only_one(el) {
        return Some(inner);
    }
    // Up to three wrappers out, stopping at a form or the body: the first
    // one holding exactly one file input.
    let mut node = dom::flat_parent(el);
    for _ in 0..3 {
        let n = node?;
        if matches!(proto::local_name(&n).as_str(), "body" | "html" | "form") {
            return None;
        }
        if let Some(inner) = only_one(&n) {
            return Some(inner);
        }
        node = dom::flat_parent(&n);
    }
    None
}

/// The file input whose chooser a click on `el` opens (a button whose
/// handler calls `input.click()` on an input elsewhere): the click is made
/// while the main-world relay (`extension/main-world.js`) turns a file
/// input's `click()` / `showPicker()` into an `errand:chooser` event on it.
pub(super) fn file_input_opened_by(el: &Element) -> Option<Element> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::closure::Closure;
    let doc = proto::owner_document(&el)?;
    let found: Rc<RefCell<Option<Element>>> = Rc::new(RefCell::new(None));
    let sink = found.clone();
    let listener = Closure::<dyn FnMut(Event)>::new(move |e: Event| {
        // An element of a frame's realm is no `Element` of ours: by node type.
        let first = e.composed_path().get(0);
        let is_element = Reflect::get(&first, &"nodeType".into())
            .ok()
            .and_then(|t| t.as_f64())
            .is_some_and(|t| t == 1.0);
        if is_element {
            let input: Element = first.unchecked_into();
            if is_file_input(&input) {
                sink.borrow_mut().get_or_insert(input);
            }
        }
    });
    let options = web_sys::AddEventListenerOptions::new();
    options.set_capture(true);
    let _ = doc.add_event_listener_with_callback_and_add_event_listener_options(
        "errand:chooser",
        listener.as_ref().unchecked_ref(),
        &options,
    );
    let ask = |on: &str| {
        let init = web_sys::CustomEventInit::new();
        init.set_detail(&JsValue::from_str(on));
        if let Ok(e) = web_sys::CustomEvent::new_with_event_init_dict("errand:chooser", &init) {
            let _ = proto::dispatch_event(&doc, &e);
        }
    };
    ask("on");
    el.unchecked_ref::<HtmlElement>().click();
    ask("off");
    let _ = doc.remove_event_listener_with_callback_and_bool(
        "errand:chooser",
        listener.as_ref().unchecked_ref(),
        true,
    );
    found.borrow_mut().take()
}

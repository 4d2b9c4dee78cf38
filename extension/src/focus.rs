//! Moving the focus as a person's click or Tab does, events included.
//!
//! While Errand acts, the browser's focus is usually elsewhere — in
//! Errand's side panel, where the user typed the task. A document that does
//! not have the focus still moves `document.activeElement` on `focus()`,
//! but fires no `focus`, `focusin`, `blur` or `focusout`. Widgets that open
//! on focus (date pickers, comboboxes) or check a field when it is left
//! would then never react. So when `focus()` moved the focus without the
//! browser firing its events, the same events are dispatched as a focused
//! document gets them: `blur` and `focusout` on the element left, `focus`
//! and `focusin` on the new one, each with the other as `relatedTarget`.
//! A text field the keyboard edited gets its `change` as it loses the
//! focus (`events::commit_edit`: only when its value changed).

use crate::proto;
use std::cell::Cell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Element, EventTarget, FocusEvent, FocusEventInit};

/// The element that has the focus in `el`'s document or shadow root.
fn active_in_root_of(el: &Element) -> Option<Element> {
    let root = proto::get_root_node(&el);
    js_sys::Reflect::get(&root, &"activeElement".into())
        .ok()
        .filter(|v| v.is_object())
        .map(JsCast::unchecked_into)
}

/// The focused element of `el`'s document, through open shadow roots.
fn deep_active(el: &Element) -> Option<Element> {
    let doc = proto::owner_document(el)?;
    let mut active = proto::active_element(&doc)?;
    while let Some(inner) = proto::shadow_root(&active)
        .and_then(|s| js_sys::Reflect::get(&s, &"activeElement".into()).ok())
        .filter(|v| v.is_object())
    {
        let inner: Element = inner.unchecked_into();
        if inner == active {
            break;
        }
        active = inner;
    }
    Some(active)
}

/// Whether `el` has the focus (through open shadow roots).
pub fn is_active(el: &Element) -> bool {
    deep_active(el).is_some_and(|a| a == *el)
}

/// Whether an element is a document's body or root (focus "nowhere").
fn is_nowhere(el: &Element) -> bool {
    matches!(proto::local_name(&el).as_str(), "body" | "html")
}

fn dispatch(target: &Element, kind: &str, related: Option<&Element>) {
    let init = FocusEventInit::new();
    let bubbles = matches!(kind, "focusin" | "focusout");
    init.set_bubbles(bubbles);
    init.set_composed(true);
    if let Some(r) = related {
        let r: &EventTarget = r.as_ref();
        init.set_related_target(Some(r));
    }
    if let Some(view) = proto::owner_document(&target).and_then(|d| proto::default_view(&d)) {
        init.set_view(Some(&view));
    }
    if let Ok(e) = FocusEvent::new_with_focus_event_init_dict(kind, &init) {
        let _ = proto::dispatch_event(&target, &e);
    }
}

/// Runs `change` (which moves the focus), telling whether the browser fired
/// `focus`/`blur` events meanwhile.
fn fires_events(el: &Element, change: impl FnOnce()) -> bool {
    let fired = Rc::new(Cell::new(false));
    let doc = proto::owner_document(&el);
    let flag = fired.clone();
    let listener = Closure::<dyn FnMut()>::new(move || flag.set(true));
    let f: &js_sys::Function = listener.as_ref().unchecked_ref();
    if let Some(d) = &doc {
        let _ = proto::add_event_listener(d, "focusin", f, &true.into());
        let _ = proto::add_event_listener(d, "focusout", f, &true.into());
    }
    change();
    if let Some(d) = &doc {
        let _ = proto::remove_event_listener(d, "focusin", f, true);
        let _ = proto::remove_event_listener(d, "focusout", f, true);
    }
    fired.get()
}

/// Focuses `el` as a person does: `focus()`, and the focus events when the
/// browser did not fire them (the document does not have the focus).
pub fn focus(el: &Element) {
    let before = deep_active(el).filter(|a| !is_nowhere(a));
    if before.as_ref() == Some(el) {
        return;
    }
    // Leaving a field the keyboard edited: `change` first, as a browser
    // fires it before `blur`.
    if let Some(prev) = &before {
        crate::events::commit_edit(prev);
    }
    let fired = fires_events(el, || {
        let _ = proto::focus(el);
    });
    let moved = active_in_root_of(el).is_some_and(|a| a == *el);
    if fired || !moved {
        return;
    }
    if let Some(prev) = before.as_ref().filter(|p| proto::is_connected(&p)) {
        dispatch(prev, "blur", Some(el));
        dispatch(prev, "focusout", Some(el));
    }
    dispatch(el, "focus", before.as_ref());
    dispatch(el, "focusin", before.as_ref());
}

/// Takes the focus away from whatever has it in `el`'s document, as a
/// click on something that cannot take the focus does.
pub fn blur_active(el: &Element) {
    let Some(active) = deep_active(el).filter(|a| !is_nowhere(a)) else {
        return;
    };
    crate::events::commit_edit(&active);
    let fired = fires_events(&active, || {
        let _ = proto::blur(&active);
    });
    let left = deep_active(el).is_none_or(|a| a != active);
    if fired || !left {
        return;
    }
    dispatch(&active, "blur", None);
    dispatch(&active, "focusout", None);
}

/// Runs `act` (events the page handles) and, when the page's own handlers
/// moved the focus meanwhile (`focus()` in a `mousedown` handler that
/// cancels the default, as react-select's control does) without the
/// browser firing the focus events (the document does not have the
/// focus), dispatches them as a focused document gets them.
pub fn follow<R>(el: &Element, act: impl FnOnce() -> R) -> R {
    let before = deep_active(el).filter(|a| !is_nowhere(a));
    let mut out = None;
    let fired = fires_events(el, || out = Some(act()));
    let out = out.expect("run once");
    let after = deep_active(el).filter(|a| !is_nowhere(a));
    if after != before {
        // The page's handlers moved the focus from a field the keyboard
        // edited: its `change` (after the `blur` here, which came first).
        if let Some(prev) = &before {
            crate::events::commit_edit(prev);
        }
    }
    if fired || after == before {
        return out;
    }
    if let Some(prev) = before.as_ref().filter(|p| proto::is_connected(p)) {
        dispatch(prev, "blur", after.as_ref());
        dispatch(prev, "focusout", after.as_ref());
    }
    if let Some(now) = &after {
        dispatch(now, "focus", before.as_ref());
        dispatch(now, "focusin", before.as_ref());
    }
    out
}

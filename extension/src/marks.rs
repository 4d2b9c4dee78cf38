//! The marks overlay: a numbered, coloured box over each element in view.
//!
//! It is one element attached to `document.documentElement`, holding a
//! *closed* shadow root so the page's styles and scripts cannot reach in;
//! fixed over the viewport, transparent to the pointer. The whole overlay
//! is built detached and attached in one write, after every layout read.

use std::cell::RefCell;

use errand_protocol::Rect;
use wasm_bindgen::JsValue;
use web_sys::{Document, Element, ShadowRootInit, ShadowRootMode};

thread_local! {
    static OVERLAY: RefCell<Option<Element>> = const { RefCell::new(None) };
}

/// The host element's inline style; `!important` beats the page's rules.
const HOST_STYLE: &str = "all: initial !important; display: block !important; \
    position: fixed !important; inset: 0 !important; pointer-events: none !important; \
    z-index: 2147483647 !important; contain: strict !important;";

/// Box colours, cycled by number.
const COLOURS: &[&str] = &[
    "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#008080", "#9a6324", "#800000",
    "#f032e6", "#469990",
];

/// The overlay now on the page, if any.
pub fn current() -> Option<Element> {
    OVERLAY.with(|o| o.borrow().clone())
}

/// Removes the overlay, leaving nothing behind.
pub fn clear() {
    if let Some(old) = OVERLAY.with(|o| o.borrow_mut().take()) {
        old.remove();
    }
}

/// Replaces the overlay with one box per `(number, rect)`.
pub fn draw(document: &Document, boxes: &[(u32, Rect)]) -> Result<(), JsValue> {
    let host = document.create_element("div")?;
    host.set_attribute("style", HOST_STYLE)?;
    let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed))?;
    for (n, r) in boxes {
        let colour = COLOURS[*n as usize % COLOURS.len()];
        let mark = document.create_element("div")?;
        mark.set_attribute(
            "style",
            &format!(
                "position:fixed;box-sizing:border-box;left:{:.1}px;top:{:.1}px;width:{:.1}px;height:{:.1}px;\
                 border:2px solid {colour};",
                r.x, r.y, r.width, r.height
            ),
        )?;
        let label = document.create_element("span")?;
        label.set_attribute(
            "style",
            &format!(
                "position:absolute;left:-2px;top:-2px;background:{colour};color:#fff;\
                 font:bold 11px/13px monospace;padding:0 3px;white-space:nowrap;"
            ),
        )?;
        label.set_text_content(Some(&n.to_string()));
        mark.append_child(&label)?;
        shadow.append_child(&mark)?;
    }
    clear();
    let root = document
        .document_element()
        .ok_or_else(|| JsValue::from_str("no root element"))?;
    root.append_child(&host)?;
    OVERLAY.with(|o| *o.borrow_mut() = Some(host));
    Ok(())
}

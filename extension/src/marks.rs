//! The marks overlay: a numbered, coloured box over each element in view,
//! the number at the box's top-left corner.
//!
//! It is one element attached to `document.documentElement`, holding a
//! *closed* shadow root so the page's styles and scripts cannot reach in;
//! fixed over the viewport, transparent to the pointer. The whole overlay
//! is built detached and attached in one write, after every layout read.
//!
//! It follows the page: a scroll (of the window or of any scrolling box,
//! caught in the capture phase) or a resize schedules one
//! `requestAnimationFrame` that re-reads the marked elements' rectangles
//! and moves the boxes (reads first, then writes). [`clear`] removes the
//! overlay and both listeners, leaving nothing behind.

use std::cell::RefCell;

use errand_protocol::Rect;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Document, Element, HtmlElement, ShadowRootInit, ShadowRootMode, Window};

/// A label's size: 11 px monospace digits, 3 px padding each side.
const LABEL_H: f64 = 13.0;
fn label_width(n: u32) -> f64 {
    7.0 * n.to_string().len() as f64 + 6.0
}

/// One drawn mark: the element, its box and its label.
struct Mark {
    el: Element,
    number: u32,
    frame: HtmlElement,
    label: HtmlElement,
}

/// The overlay and what keeps it in place.
struct Overlay {
    host: Element,
    window: Window,
    marks: Vec<Mark>,
    /// The scroll/resize listener, kept to be removed.
    on_change: Closure<dyn FnMut()>,
    /// The frame callback, kept alive while the overlay lives.
    on_frame: Closure<dyn FnMut()>,
}

thread_local! {
    static OVERLAY: RefCell<Option<Overlay>> = const { RefCell::new(None) };
    /// The animation frame requested and not yet run.
    static FRAME_PENDING: RefCell<Option<i32>> = const { RefCell::new(None) };
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

/// The overlay's host element now on the page, if any.
pub fn current() -> Option<Element> {
    OVERLAY.with(|o| o.borrow().as_ref().map(|o| o.host.clone()))
}

/// Removes the overlay and its listeners, leaving nothing behind.
pub fn clear() {
    if let Some(old) = OVERLAY.with(|o| o.borrow_mut().take()) {
        let f = old.on_change.as_ref().unchecked_ref();
        let _ = old.window.remove_event_listener_with_callback_and_bool("scroll", f, true);
        let _ = old.window.remove_event_listener_with_callback_and_bool("resize", f, false);
        if let Some(id) = FRAME_PENDING.with(|p| p.borrow_mut().take()) {
            let _ = old.window.cancel_animation_frame(id);
        }
        old.host.remove();
        drop(old.on_frame);
    }
}

/// Where an element is in the top window's viewport, through the same-origin
/// frames that hold it.
pub fn rect_in_top(el: &Element) -> Rect {
    let r = el.get_bounding_client_rect();
    let (mut x, mut y) = (r.x(), r.y());
    let mut win = crate::dom::window_of(el);
    while let Some(frame) = win.as_ref().and_then(|w| w.frame_element().ok().flatten()) {
        let fr = frame.get_bounding_client_rect();
        x += fr.x() + f64::from(frame.client_left());
        y += fr.y() + f64::from(frame.client_top());
        win = crate::dom::window_of(&frame);
    }
    Rect { x, y, width: r.width(), height: r.height() }
}

/// Places each label at its box's top-left corner, unless an earlier label
/// is there already; then just above the box, at its top-right corner, or
/// at its bottom-left corner, whichever is free first. Returns the labels'
/// top-left corners.
pub fn place_labels(boxes: &[(u32, Rect)]) -> Vec<(f64, f64)> {
    let mut placed: Vec<Rect> = Vec::with_capacity(boxes.len());
    let mut out = Vec::with_capacity(boxes.len());
    for (n, r) in boxes {
        let w = label_width(*n);
        let candidates = [
            (r.x, r.y),
            (r.x, r.y - LABEL_H),
            (r.x + r.width - w, r.y),
            (r.x, r.y + r.height - LABEL_H),
            (r.x + r.width, r.y),
        ];
        let free = |&(x, y): &(f64, f64)| {
            !placed.iter().any(|p| {
                x < p.x + p.width && p.x < x + w && y < p.y + p.height && p.y < y + LABEL_H
            })
        };
        let at = candidates.iter().copied().find(free).unwrap_or(candidates[0]);
        placed.push(Rect { x: at.0, y: at.1, width: w, height: LABEL_H });
        out.push(at);
    }
    out
}

fn box_style(r: &Rect, colour: &str) -> String {
    format!(
        "position:fixed;box-sizing:border-box;left:{:.1}px;top:{:.1}px;width:{:.1}px;\
         height:{:.1}px;border:2px solid {colour};",
        r.x, r.y, r.width, r.height
    )
}

fn label_style(x: f64, y: f64, colour: &str) -> String {
    format!(
        "position:fixed;left:{x:.1}px;top:{y:.1}px;background:{colour};color:#fff;\
         font:bold 11px/13px monospace;padding:0 3px;white-space:nowrap;"
    )
}

/// Moves every box to where its element is now (all reads, then all writes).
fn follow() {
    FRAME_PENDING.with(|p| *p.borrow_mut() = None);
    OVERLAY.with(|o| {
        let o = o.borrow();
        let Some(o) = o.as_ref() else { return };
        let boxes: Vec<(u32, Rect)> = o.marks.iter().map(|m| (m.number, rect_in_top(&m.el))).collect();
        let labels = place_labels(&boxes);
        for ((m, (_, r)), (lx, ly)) in o.marks.iter().zip(&boxes).zip(labels) {
            let colour = COLOURS[m.number as usize % COLOURS.len()];
            let gone = !m.el.is_connected() || r.width <= 0.0;
            let _ = m.frame.set_attribute(
                "style",
                &(box_style(r, colour) + if gone { "display:none;" } else { "" }),
            );
            let _ = m.label.set_attribute(
                "style",
                &(label_style(lx, ly, colour) + if gone { "display:none;" } else { "" }),
            );
        }
    });
}

/// Replaces the overlay with one box per `(number, element)`.
pub fn draw(document: &Document, marked: &[(u32, Element)]) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
    // Reads first.
    let boxes: Vec<(u32, Rect)> = marked.iter().map(|(n, el)| (*n, rect_in_top(el))).collect();
    let labels = place_labels(&boxes);

    let host = document.create_element("div")?;
    host.set_attribute("style", HOST_STYLE)?;
    let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed))?;
    let mut marks = Vec::with_capacity(marked.len());
    for (((n, el), (_, r)), (lx, ly)) in marked.iter().zip(&boxes).zip(labels) {
        let colour = COLOURS[*n as usize % COLOURS.len()];
        let frame: HtmlElement = document.create_element("div")?.unchecked_into();
        frame.set_attribute("style", &box_style(r, colour))?;
        let label: HtmlElement = document.create_element("span")?.unchecked_into();
        label.set_attribute("style", &label_style(lx, ly, colour))?;
        label.set_text_content(Some(&n.to_string()));
        shadow.append_child(&frame)?;
        shadow.append_child(&label)?;
        marks.push(Mark { el: el.clone(), number: *n, frame, label });
    }
    clear();
    let root = document
        .document_element()
        .ok_or_else(|| JsValue::from_str("no root element"))?;
    root.append_child(&host)?;

    let on_frame = Closure::<dyn FnMut()>::new(follow);
    let frame_fn: js_sys::Function = on_frame.as_ref().unchecked_ref::<js_sys::Function>().clone();
    let win = window.clone();
    let on_change = Closure::<dyn FnMut()>::new(move || {
        if FRAME_PENDING.with(|p| p.borrow().is_none()) {
            if let Ok(id) = win.request_animation_frame(&frame_fn) {
                FRAME_PENDING.with(|p| *p.borrow_mut() = Some(id));
            }
        }
    });
    let f = on_change.as_ref().unchecked_ref();
    window.add_event_listener_with_callback_and_bool("scroll", f, true)?;
    window.add_event_listener_with_callback_and_bool("resize", f, false)?;
    OVERLAY.with(|o| {
        *o.borrow_mut() = Some(Overlay { host, window, marks, on_change, on_frame });
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: f64, y: f64, w: f64, h: f64) -> Rect {
        Rect { x, y, width: w, height: h }
    }

    #[test]
    fn labels_sharing_a_corner_do_not_overlap() {
        let boxes = [(1, r(10.0, 50.0, 100.0, 30.0)), (2, r(10.0, 50.0, 200.0, 60.0)), (3, r(10.0, 50.0, 100.0, 30.0))];
        let at = place_labels(&boxes);
        assert_eq!(at[0], (10.0, 50.0));
        assert_eq!(at[1], (10.0, 50.0 - LABEL_H));
        assert_ne!(at[2], at[0]);
        assert_ne!(at[2], at[1]);
        // Apart, each keeps its own corner.
        let apart = place_labels(&[(1, r(0.0, 0.0, 50.0, 20.0)), (2, r(100.0, 0.0, 50.0, 20.0))]);
        assert_eq!(apart, vec![(0.0, 0.0), (100.0, 0.0)]);
    }
}

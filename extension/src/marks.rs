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
//!
//! **Secrets are blanked.** The screenshot for a vision model is taken with
//! the marks drawn, so the overlay also covers every secret field — password
//! inputs and inputs whose `autocomplete` names a password, a card number,
//! security code or expiry, or a one-time code ([`is_secret_field`]) — with
//! an opaque box over its visible rectangle, beneath the marks (so the
//! field's number still shows), moved by the same follower, removed with the
//! marks. The fields are looked for in the document, in same-origin iframes
//! and in the open shadow roots that hold marked elements ([`secret_fields`]).
//!
//! **The overlay is drawn in the top layer** (a `popover="manual"` element
//! inside the closed shadow root, shown with `showPopover()`), above
//! everything the page paints — even a modal `<dialog>` or a fullscreen
//! element that was open when the marks were drawn — and out of reach of a
//! `transform` or `filter` on the page's root element. Where `showPopover`
//! is missing the same boxes are drawn in the fixed host as before. Nothing
//! of this reaches the page: the popover's toggle events do not leave the
//! closed shadow root, it takes no focus, closes none of the page's
//! popovers, and nothing in it takes pointer events.

use crate::proto;
use std::cell::RefCell;

use errand_protocol::Rect;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{
    Document, DocumentFragment, Element, HtmlElement, Node, ShadowRoot, ShadowRootInit,
    ShadowRootMode, Window,
};

use crate::dom::{DOCUMENT_NODE, FRAGMENT_NODE};

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

/// One secret field and the opaque box over it.
struct Blank {
    el: Element,
    cover: HtmlElement,
}

/// The overlay and what keeps it in place.
struct Overlay {
    host: Element,
    window: Window,
    marks: Vec<Mark>,
    blanks: Vec<Blank>,
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

/// The style of the element holding the boxes inside the shadow root: the
/// whole viewport, transparent, nothing of the popover's default look.
const LAYER_STYLE: &str = "all: initial; display: block; position: fixed; inset: 0; \
    margin: 0; padding: 0; border: 0; width: auto; height: auto; max-width: none; \
    max-height: none; overflow: visible; background: transparent; pointer-events: none;";

/// The colour of the box over a secret field.
pub const BLANK_COLOUR: &str = "#707070";

/// How far a blank reaches beyond the field's box on each side (anti-aliased
/// edges, focus rings drawn just outside).
const BLANK_MARGIN: f64 = 2.0;

/// `autocomplete` tokens of fields whose value never goes into a screenshot.
pub const SECRET_AUTOCOMPLETE: &[&str] = &[
    "current-password",
    "new-password",
    "one-time-code",
    "cc-number",
    "cc-csc",
    "cc-exp",
    "cc-exp-month",
    "cc-exp-year",
];

/// The inputs that may be secret fields ([`is_secret_field`] decides).
const SECRET_CANDIDATES: &str = "input[type=password i], input[autocomplete]";

/// Whether an `<input>` with this `type` and `autocomplete` attribute holds
/// a secret: a password input (whatever its autocomplete), or any input
/// whose autocomplete tokens (`section-x billing cc-number`, `current-password
/// webauthn`) include one of [`SECRET_AUTOCOMPLETE`], in any case.
pub fn is_secret_field(input_type: Option<&str>, autocomplete: Option<&str>) -> bool {
    if input_type.is_some_and(|t| t.trim().eq_ignore_ascii_case("password")) {
        return true;
    }
    autocomplete.is_some_and(|a| {
        a.split_ascii_whitespace()
            .any(|token| SECRET_AUTOCOMPLETE.iter().any(|s| token.eq_ignore_ascii_case(s)))
    })
}

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

/// The secret fields ([`is_secret_field`]) of the page, and whatever shows
/// a secret filled in this document ([`showing_secrets`]): in the document, in
/// its same-origin iframes (nested), and in the shadow roots (and iframe
/// documents) that hold any of `marked` — a secret field in view is itself
/// marked unless disabled, so its root is searched.
pub fn secret_fields(document: &Document, marked: &[(u32, Element)]) -> Vec<Element> {
    let mut roots: Vec<Node> = vec![document.clone().unchecked_into()];
    for (_, el) in marked {
        let mut root = proto::get_root_node(&el);
        // The shadow roots around the element, innermost first, and the
        // document holding them.
        loop {
            if !roots.contains(&root) {
                roots.push(root.clone());
            }
            if proto::node_type(&root) != FRAGMENT_NODE {
                break;
            }
            root = proto::get_root_node(&root.unchecked_ref::<ShadowRoot>().host());
        }
    }
    let mut fields: Vec<Element> = Vec::new();
    let filled = FILLED.with(|f| f.borrow().clone());
    let mut i = 0;
    while i < roots.len() {
        let root = roots[i].clone();
        i += 1;
        // Same-origin iframes: their documents are searched too.
        for frame in query_all(&root, "iframe, frame") {
            let doc = js_sys::Reflect::get(&frame, &JsValue::from_str("contentDocument"))
                .ok()
                .filter(|d| !d.is_null() && !d.is_undefined());
            if let Some(doc) = doc {
                let doc: Node = doc.unchecked_into();
                if !roots.contains(&doc) {
                    roots.push(doc);
                }
            }
        }
        for el in query_all(&root, SECRET_CANDIDATES) {
            let secret = is_secret_field(
                proto::get_attribute(&el, "type").as_deref(),
                proto::get_attribute(&el, "autocomplete").as_deref(),
            );
            if secret && proto::local_name(&el) == "input" && !fields.contains(&el) {
                fields.push(el);
            }
        }
        if !filled.is_empty() {
            for el in showing_secrets(&root, &filled) {
                if !fields.contains(&el) {
                    fields.push(el);
                }
            }
        }
    }
    fields
}

thread_local! {
    /// The secret values the host had this instance fill in (this
    /// document's): kept in the content script's own memory, never written
    /// to the page, to blank whatever shows one before a screenshot.
    static FILLED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Remembers secret values filled in this document (see [`FILLED`]).
pub fn remember_secrets(values: &[String]) {
    FILLED.with(|f| {
        let mut f = f.borrow_mut();
        for v in values {
            if !v.is_empty() && !f.contains(v) {
                f.push(v.clone());
            }
        }
    });
}

/// Whether `text` holds secret material: a part of four or more
/// characters of a secret filled in this document (all of a shorter one).
pub fn holds_secret(text: &str) -> bool {
    FILLED.with(|f| {
        f.borrow().iter().any(|v| {
            let chars: Vec<char> = v.chars().collect();
            if chars.len() < 4 {
                return text.contains(v.as_str());
            }
            chars.windows(4).any(|w| text.contains(&w.iter().collect::<String>()))
        })
    })
}

/// What in `root` shows a secret filled in this document: a field whose
/// value holds one (an input, a textarea), a select with an option whose
/// text holds one, and the element around each text node that holds one
/// (a search box's echo, a contenteditable, a drawn dropdown's row). A
/// value split across elements (`hunter<b>2</b>`) is not found.
fn showing_secrets(root: &Node, filled: &[String]) -> Vec<Element> {
    let holds = |text: &str| filled.iter().any(|v| text.contains(v.as_str()));
    let mut found: Vec<Element> = Vec::new();
    for el in query_all(root, "input, textarea, select") {
        let text = if proto::local_name(&el) == "select" {
            proto::text_content(&el).unwrap_or_default()
        } else {
            js_sys::Reflect::get(&el, &JsValue::from_str("value"))
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default()
        };
        if holds(&text) {
            found.push(el);
        }
    }
    let Some(document) = (match proto::node_type(&root) {
        DOCUMENT_NODE => Some(root.unchecked_ref::<Document>().clone()),
        _ => proto::owner_document(&root),
    }) else {
        return found;
    };
    // 4: NodeFilter.SHOW_TEXT.
    let Ok(walker) = document.create_tree_walker_with_what_to_show(root, 4) else {
        return found;
    };
    while let Ok(Some(node)) = walker.next_node() {
        let Some(text) = proto::node_value(&node) else { continue };
        if !holds(&text) {
            continue;
        }
        if let Some(parent) = proto::parent_element(&node) {
            if !found.contains(&parent) {
                found.push(parent);
            }
        }
    }
    found
}

/// `querySelectorAll` on a document or a shadow root.
fn query_all(root: &Node, selector: &str) -> Vec<Element> {
    let list = match proto::node_type(&root) {
        DOCUMENT_NODE => proto::query_selector_all(&root.unchecked_ref::<Document>(), selector),
        FRAGMENT_NODE => {
            proto::query_selector_all(&root.unchecked_ref::<DocumentFragment>(), selector)
        }
        _ => return Vec::new(),
    };
    let Ok(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)).map(|n| n.unchecked_into::<Element>()).collect()
}

/// Where a secret field shows in the top window's viewport: its box
/// (widened by [`BLANK_MARGIN`]) cut to the viewport of each document on the
/// way up (an iframe shows only its own viewport); `None` when nothing of it
/// shows: not rendered (`display: none`, `visibility: hidden`, zero size), or
/// outside every viewport.
pub fn visible_rect_in_top(el: &Element) -> Option<Rect> {
    let r = proto::get_bounding_client_rect(&el);
    if r.width() <= 0.0 || r.height() <= 0.0 || !proto::check_visibility(el) {
        return None;
    }
    let m = BLANK_MARGIN;
    let mut rect = Rect {
        x: r.x() - m,
        y: r.y() - m,
        width: r.width() + 2.0 * m,
        height: r.height() + 2.0 * m,
    };
    let mut win = crate::dom::window_of(el);
    loop {
        let w = win.as_ref()?;
        let vw = w.inner_width().ok().and_then(|v| v.as_f64()).unwrap_or(f64::INFINITY);
        let vh = w.inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(f64::INFINITY);
        rect = intersect(&rect, &Rect { x: 0.0, y: 0.0, width: vw, height: vh })?;
        let Some(frame) = w.frame_element().ok().flatten() else {
            return Some(rect);
        };
        let fr = proto::get_bounding_client_rect(&frame);
        rect.x += fr.x() + f64::from(frame.client_left());
        rect.y += fr.y() + f64::from(frame.client_top());
        win = crate::dom::window_of(&frame);
    }
}

/// The overlap of two rectangles, if they overlap.
pub fn intersect(a: &Rect, b: &Rect) -> Option<Rect> {
    let x = a.x.max(b.x);
    let y = a.y.max(b.y);
    let right = (a.x + a.width).min(b.x + b.width);
    let bottom = (a.y + a.height).min(b.y + b.height);
    (right > x && bottom > y).then_some(Rect { x, y, width: right - x, height: bottom - y })
}

/// The style of the box over a secret field; hidden when nothing shows.
fn blank_style(r: Option<&Rect>) -> String {
    match r {
        Some(r) => fixed_box(r, &["background:", BLANK_COLOUR, ";opacity:1;"]),
        None => "display:none;".to_owned(),
    }
}

/// Where an element is in the top window's viewport, through the same-origin
/// frames that hold it.
pub fn rect_in_top(el: &Element) -> Rect {
    let r = proto::get_bounding_client_rect(&el);
    let (mut x, mut y) = (r.x(), r.y());
    let mut win = crate::dom::window_of(el);
    while let Some(frame) = win.as_ref().and_then(|w| w.frame_element().ok().flatten()) {
        let fr = proto::get_bounding_client_rect(&frame);
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
    fixed_box(r, &["border:2px solid ", colour, ";"])
}

/// The style of a fixed box at `r`, then `rest`.
fn fixed_box(r: &Rect, rest: &[&str]) -> String {
    let mut s = String::with_capacity(160);
    s.push_str("position:fixed;box-sizing:border-box;");
    for (name, v) in [("left:", r.x), ("top:", r.y), ("width:", r.width), ("height:", r.height)] {
        s.push_str(name);
        push_px(&mut s, v);
    }
    rest.iter().for_each(|part| s.push_str(part));
    s
}

fn label_style(x: f64, y: f64, colour: &str) -> String {
    let mut s = String::with_capacity(160);
    s.push_str("position:fixed;left:");
    push_px(&mut s, x);
    s.push_str("top:");
    push_px(&mut s, y);
    s.push_str("background:");
    s.push_str(colour);
    s.push_str(";color:#fff;font:bold 11px/13px monospace;padding:0 3px;white-space:nowrap;");
    s
}

/// `v` in CSS pixels to a tenth (`12.5px;`, `-3px;`), written from its
/// tenths as an integer: Rust's `{:.1}` takes the exact-precision path
/// (big-number arithmetic on 64-bit words, which the plain-JavaScript build
/// emulates), about a third of drawing the marks in a CPU profile of that
/// build (paired timings could not tell the two apart). A value past ±100
/// million pixels, or not a number, is written as 0.
fn push_px(s: &mut String, v: f64) {
    s.push_str(&px(v));
    s.push(';');
}

/// `v` in CSS pixels to a tenth (`12.5px`), as [`push_px`] writes it; no
/// float printer of core's in the module.
pub fn px(v: f64) -> String {
    let tenths = (v * 10.0).round();
    let tenths = if tenths.is_finite() && tenths.abs() < 1e9 { tenths as i32 } else { 0 };
    let (sign, t) = (if tenths < 0 { "-" } else { "" }, tenths.unsigned_abs());
    match t % 10 {
        0 => format!("{sign}{}px", t / 10),
        d => format!("{sign}{}.{d}px", t / 10),
    }
}

/// Moves every box to where its element is now (all reads, then all writes).
fn follow() {
    FRAME_PENDING.with(|p| *p.borrow_mut() = None);
    OVERLAY.with(|o| {
        let o = o.borrow();
        let Some(o) = o.as_ref() else { return };
        let boxes: Vec<(u32, Rect)> =
            o.marks.iter().map(|m| (m.number, rect_in_top(&m.el))).collect();
        let covers: Vec<Option<Rect>> = o
            .blanks
            .iter()
            .map(|b| if proto::is_connected(&b.el) { visible_rect_in_top(&b.el) } else { None })
            .collect();
        let labels = place_labels(&boxes);
        for (b, r) in o.blanks.iter().zip(&covers) {
            let _ = proto::set_attribute(&b.cover, "style", &blank_style(r.as_ref()));
        }
        for ((m, (_, r)), (lx, ly)) in o.marks.iter().zip(&boxes).zip(labels) {
            let colour = COLOURS[m.number as usize % COLOURS.len()];
            let gone = !proto::is_connected(&m.el) || r.width <= 0.0;
            let _ = proto::set_attribute(
                &m.frame,
                "style",
                &(box_style(r, colour) + if gone { "display:none;" } else { "" }),
            );
            let _ = proto::set_attribute(
                &m.label,
                "style",
                &(label_style(lx, ly, colour) + if gone { "display:none;" } else { "" }),
            );
        }
    });
}

/// Replaces the overlay with one box per `(number, element)`, at the
/// element's box in the top viewport: `rects` when the caller has just
/// read them (one per element), else read here.
pub fn draw(
    document: &Document,
    marked: &[(u32, Element)],
    rects: Option<&[Rect]>,
) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
    // Reads first (the boxes the walk just read are not read again).
    let boxes: Vec<(u32, Rect)> = match rects.filter(|r| r.len() == marked.len()) {
        Some(rects) => marked.iter().zip(rects).map(|((n, _), r)| (*n, *r)).collect(),
        None => marked.iter().map(|(n, el)| (*n, rect_in_top(el))).collect(),
    };
    let labels = place_labels(&boxes);
    let secrets = secret_fields(document, marked);
    let covers: Vec<Option<Rect>> = secrets.iter().map(visible_rect_in_top).collect();

    let host = proto::create_element(&document, "div")?;
    proto::set_attribute(&host, "style", HOST_STYLE)?;
    let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed))?;
    // Everything is drawn in one layer: the popover shown in the top layer.
    let layer: HtmlElement = proto::create_element(&document, "div")?.unchecked_into();
    proto::set_attribute(&layer, "style", LAYER_STYLE)?;
    proto::append_child(&shadow, &layer)?;
    // The blanks first: the marks' boxes and numbers are drawn over them.
    // Written as one piece of markup (one parse instead of an element and
    // a style per box: most of the overlay's cost on a page with hundreds
    // of marks); made one by one where the page refuses markup (Trusted
    // Types).
    let styles: Vec<(&str, String, Option<String>)> = covers
        .iter()
        .map(|r| ("div", blank_style(r.as_ref()), None))
        .chain(marked.iter().zip(&boxes).zip(&labels).flat_map(|(((n, _), (_, r)), (lx, ly))| {
            let colour = COLOURS[*n as usize % COLOURS.len()];
            [
                ("div", box_style(r, colour), None),
                ("span", label_style(*lx, *ly, colour), Some(n.to_string())),
            ]
        }))
        .collect();
    let children = build_layer(document, &layer, &styles)?;
    let mut children = children.into_iter();
    let mut blanks = Vec::with_capacity(secrets.len());
    for el in secrets {
        let cover = children.next().ok_or_else(|| JsValue::from_str("overlay cut short"))?;
        blanks.push(Blank { el, cover });
    }
    let mut marks = Vec::with_capacity(marked.len());
    for (n, el) in marked {
        let (Some(frame), Some(label)) = (children.next(), children.next()) else {
            return Err(JsValue::from_str("overlay cut short"));
        };
        marks.push(Mark { el: el.clone(), number: *n, frame, label });
    }
    clear();
    let root =
        proto::document_element(&document).ok_or_else(|| JsValue::from_str("no root element"))?;
    proto::append_child(&root, &host)?;
    show_in_top_layer(&layer);

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
        *o.borrow_mut() = Some(Overlay { host, window, marks, blanks, on_change, on_frame });
    });
    Ok(())
}

/// Fills the layer with one element per `(tag, style, text)`, in order, and
/// returns them.
fn build_layer(
    document: &Document,
    layer: &HtmlElement,
    parts: &[(&str, String, Option<String>)],
) -> Result<Vec<HtmlElement>, JsValue> {
    let mut html = String::with_capacity(parts.len() * 160);
    for (tag, style, text) in parts {
        // Errand's own styles and numbers: nothing to escape, checked.
        debug_assert!(!style.contains(['"', '<', '&']));
        let text = text.as_deref().unwrap_or("");
        for part in ["<", tag, " style=\"", style, "\">", text, "</", tag, ">"] {
            html.push_str(part);
        }
    }
    if js_sys::Reflect::set(layer, &JsValue::from_str("innerHTML"), &JsValue::from_str(&html))
        .is_ok()
    {
        let all = proto::children(&layer);
        if all.length() as usize == parts.len() {
            return Ok((0..all.length())
                .filter_map(|i| all.item(i))
                .map(|e| e.unchecked_into::<HtmlElement>())
                .collect());
        }
    }
    proto::set_text_content(&layer, None);
    let mut out = Vec::with_capacity(parts.len());
    for (tag, style, text) in parts {
        let el: HtmlElement = proto::create_element(&document, tag)?.unchecked_into();
        proto::set_attribute(&el, "style", style)?;
        if let Some(t) = text {
            proto::set_text_content(&el, Some(t));
        }
        proto::append_child(&layer, &el)?;
        out.push(el);
    }
    Ok(out)
}

/// Puts the layer in the top layer: `popover="manual"`, then
/// `showPopover()`. Where that fails the attribute goes again (a popover not
/// shown is `display: none`) and the layer stays in the fixed host.
fn show_in_top_layer(layer: &HtmlElement) {
    let has_popover = js_sys::Reflect::get(layer, &JsValue::from_str("showPopover"))
        .is_ok_and(|f| f.is_function());
    if !has_popover || proto::set_attribute(&layer, "popover", "manual").is_err() {
        return;
    }
    if layer.show_popover().is_err() {
        let _ = proto::remove_attribute(&layer, "popover");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: f64, y: f64, w: f64, h: f64) -> Rect {
        Rect { x, y, width: w, height: h }
    }

    #[test]
    fn labels_sharing_a_corner_do_not_overlap() {
        let boxes = [
            (1, r(10.0, 50.0, 100.0, 30.0)),
            (2, r(10.0, 50.0, 200.0, 60.0)),
            (3, r(10.0, 50.0, 100.0, 30.0)),
        ];
        let at = place_labels(&boxes);
        assert_eq!(at[0], (10.0, 50.0));
        assert_eq!(at[1], (10.0, 50.0 - LABEL_H));
        assert_ne!(at[2], at[0]);
        assert_ne!(at[2], at[1]);
        // Apart, each keeps its own corner.
        let apart = place_labels(&[(1, r(0.0, 0.0, 50.0, 20.0)), (2, r(100.0, 0.0, 50.0, 20.0))]);
        assert_eq!(apart, vec![(0.0, 0.0), (100.0, 0.0)]);
    }

    #[test]
    fn knows_secret_fields() {
        assert!(is_secret_field(Some("password"), None));
        assert!(is_secret_field(Some(" PassWord "), Some("username")));
        for token in SECRET_AUTOCOMPLETE {
            assert!(is_secret_field(Some("text"), Some(token)), "{token}");
            assert!(is_secret_field(None, Some(&token.to_uppercase())), "{token}");
        }
        assert!(is_secret_field(Some("tel"), Some("section-pay billing cc-number")));
        assert!(is_secret_field(Some("text"), Some("current-password webauthn")));
        assert!(is_secret_field(Some("text"), Some("one-time-code")));
        // Not secret: names, e-mail, other card parts a person reads aloud.
        assert!(!is_secret_field(Some("text"), None));
        assert!(!is_secret_field(Some("email"), Some("email")));
        assert!(!is_secret_field(Some("text"), Some("cc-name")));
        assert!(!is_secret_field(Some("text"), Some("username")));
        assert!(!is_secret_field(None, Some("off")));
        assert!(!is_secret_field(Some("text"), Some("cc-numbers")));
    }

    #[test]
    fn intersects_rectangles() {
        let a = r(0.0, 0.0, 100.0, 50.0);
        assert_eq!(intersect(&a, &r(50.0, 25.0, 100.0, 100.0)), Some(r(50.0, 25.0, 50.0, 25.0)));
        assert_eq!(intersect(&a, &r(-10.0, -10.0, 20.0, 20.0)), Some(r(0.0, 0.0, 10.0, 10.0)));
        assert_eq!(intersect(&a, &r(100.0, 0.0, 10.0, 10.0)), None);
        assert_eq!(intersect(&a, &r(0.0, 60.0, 10.0, 10.0)), None);
    }

    #[test]
    fn pixels_are_written_to_a_tenth() {
        let px = |v: f64| {
            let mut s = String::new();
            push_px(&mut s, v);
            s
        };
        for (v, want) in [
            (0.0, "0px;"),
            (12.0, "12px;"),
            (12.34, "12.3px;"),
            (12.36, "12.4px;"),
            (0.05, "0.1px;"),
            (-0.5, "-0.5px;"),
            (-0.04, "0px;"),
            (-1234.56, "-1234.6px;"),
            (99.96, "100px;"),
            (1e12, "0px;"),
            (f64::NAN, "0px;"),
        ] {
            assert_eq!(px(v), want, "{v}");
        }
        // Within a tenth of Rust's own formatting to a tenth.
        for i in -3000..3000 {
            let v = f64::from(i) * 0.37;
            let ours: f64 = px(v).trim_end_matches("px;").parse().unwrap();
            let std: f64 = format!("{v:.1}").parse().unwrap();
            assert!((ours - std).abs() < 0.1 + 1e-9, "{v}: {ours} against {std}");
        }
    }

    #[test]
    fn a_blank_is_opaque_or_hidden() {
        let s = blank_style(Some(&r(10.0, 20.0, 30.0, 40.0)));
        assert!(
            s.contains(&format!("background:{BLANK_COLOUR}")) && s.contains("opacity:1"),
            "{s}"
        );
        assert!(s.contains("left:10px;top:20px;width:30px;height:40px;"), "{s}");
        assert_eq!(blank_style(None), "display:none;");
    }
}

//! Seeing the page: one walk over the document that finds the interactive,
//! visible elements, numbers them, and collects their text.
//!
//! The walk goes through open shadow roots (nested) and same-origin
//! iframes, in document order. It only reads (styles, rectangles, hit
//! tests) — the DOM is written once, afterwards, when the marks are drawn —
//! so the browser lays the page out at most once.

use errand_protocol::{Build, Observation, Rect, Viewport};
use wasm_bindgen::JsCast;
use web_sys::{
    Document, Element, HtmlIFrameElement, HtmlInputElement, HtmlTextAreaElement, Node, Window,
};

use crate::dom::{self, attr};
use crate::text::{self, Line, Seen};
use crate::{marks, registry};

/// Text collected per element before it is cut (in bytes of raw text).
const TEXT_COLLECT_MAX: usize = 400;

/// ARIA roles that make an element interactive.
const INTERACTIVE_ROLES: &[&str] = &[
    "button",
    "link",
    "checkbox",
    "radio",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "combobox",
    "switch",
    "slider",
    "textbox",
    "listbox",
    "searchbox",
    "spinbutton",
    "treeitem",
];

/// Which build is running.
pub fn build() -> Build {
    if cfg!(errand_js) {
        Build::Js
    } else {
        Build::Wasm
    }
}

/// Observes the page; draws the marks when asked, removes old ones otherwise.
pub fn observe(marks_wanted: bool) -> Result<Observation, String> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    let perf = window.performance();
    let started = perf.as_ref().map_or(0.0, |p| p.now());
    registry::forget_gone();

    let vw = num(window.inner_width());
    let vh = num(window.inner_height());
    let location = document.location();
    let url = location
        .as_ref()
        .and_then(|l| l.href().ok())
        .unwrap_or_default();
    let origin = location
        .as_ref()
        .and_then(|l| l.origin().ok())
        .unwrap_or_default();
    let root = document
        .document_element()
        .ok_or("the document has no root element")?;

    let mut walk = Walk {
        lines: Vec::new(),
        open: Vec::new(),
        open_elements: 0,
        origin,
        overlay: marks::current(),
    };
    let top = Frame {
        window: window.clone(),
        dx: 0.0,
        dy: 0.0,
        clip: Rect {
            x: 0.0,
            y: 0.0,
            width: vw,
            height: vh,
        },
        width: vw,
        height: vh,
    };
    walk.visit(&root, &top, Ctx::default());

    let viewport = Viewport {
        width: vw,
        height: vh,
        scroll_x: window.scroll_x().unwrap_or(0.0),
        scroll_y: window.scroll_y().unwrap_or(0.0),
        page_width: f64::from(root.scroll_width()),
        page_height: f64::from(root.scroll_height()),
    };
    let title = document.title();
    let text = text::render(&title, &url, &walk.lines, vw, vh);
    let elements: Vec<_> = walk
        .lines
        .iter()
        .filter_map(|l| match l {
            Line::Element(seen) => Some(text::info(seen)),
            Line::Heading { .. } => None,
        })
        .collect();

    // The one DOM write of the observation.
    if marks_wanted {
        let boxes: Vec<(u32, Rect)> = elements
            .iter()
            .filter(|e| e.in_viewport)
            .map(|e| (e.index, e.rect))
            .collect();
        marks::draw(&document, &boxes).map_err(|e| format!("cannot draw the marks: {e:?}"))?;
    } else {
        marks::clear();
    }

    let elapsed_ms = perf.as_ref().map_or(0.0, |p| p.now()) - started;
    Ok(Observation {
        url,
        title,
        build: Some(build()),
        elements,
        text,
        viewport,
        elapsed_ms,
    })
}

/// A JS number, or 0.
fn num(v: Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>) -> f64 {
    v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0)
}

/// A document being walked: the top one or a same-origin iframe's.
struct Frame {
    window: Window,
    /// Where this document's viewport sits in the top viewport.
    dx: f64,
    dy: f64,
    /// The part of the top viewport through which this document is seen.
    clip: Rect,
    /// This document's own viewport size.
    width: f64,
    height: f64,
}

/// What a node inherits from its parent during the walk.
#[derive(Clone, Copy, Default)]
struct Ctx {
    /// The parent has `cursor: pointer`.
    pointer: bool,
    /// The parent's text is hidden (`visibility: hidden`).
    text_hidden: bool,
}

/// The state of one walk.
struct Walk {
    lines: Vec<Line>,
    /// Lines (by position) collecting text: the innermost one gets it.
    open: Vec<usize>,
    /// How many of the open lines are elements (not headings).
    open_elements: usize,
    origin: String,
    /// Errand's own overlay, never walked.
    overlay: Option<Element>,
}

impl Walk {
    /// Walks the children of an element or shadow root.
    fn children(&mut self, parent: &Node, frame: &Frame, ctx: Ctx) {
        let mut child = parent.first_child();
        while let Some(node) = child {
            match node.node_type() {
                Node::ELEMENT_NODE => self.visit(node.unchecked_ref::<Element>(), frame, ctx),
                Node::TEXT_NODE if !ctx.text_hidden => {
                    if let Some(t) = node.node_value() {
                        self.add_text(&t);
                    }
                }
                _ => {}
            }
            child = node.next_sibling();
        }
    }

    /// Gives text to the innermost collecting line.
    fn add_text(&mut self, t: &str) {
        let Some(&i) = self.open.last() else { return };
        let buf = match &mut self.lines[i] {
            Line::Element(seen) => &mut seen.text,
            Line::Heading { text, .. } => text,
        };
        if buf.len() < TEXT_COLLECT_MAX && !t.trim().is_empty() {
            buf.push(' ');
            buf.push_str(t);
        }
    }

    /// Visits one element and, unless hidden, its subtree.
    fn visit(&mut self, el: &Element, frame: &Frame, ctx: Ctx) {
        let tag = el.local_name();
        if matches!(
            tag.as_str(),
            "script" | "style" | "noscript" | "template" | "head" | "meta" | "link" | "title"
        ) || self.overlay.as_ref() == Some(el)
        {
            return;
        }
        let has_attrs = el.has_attributes();
        if has_attrs
            && (el.has_attribute("inert")
                || el
                    .get_attribute("aria-hidden")
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")))
        {
            return;
        }
        let Ok(Some(style)) = frame.window.get_computed_style(el) else {
            return;
        };
        let prop = |name: &str| style.get_property_value(name).unwrap_or_default();
        let display = prop("display");
        if display == "none" || prop("opacity").parse::<f64>().is_ok_and(|o| o <= 0.0) {
            return;
        }
        let visibility = prop("visibility");
        let pointer = prop("cursor") == "pointer";
        let shown_style =
            visibility != "hidden" && visibility != "collapse" && display != "contents";

        let heading = match tag.as_str() {
            "h1" => 1,
            "h2" => 2,
            "h3" => 3,
            _ => 0,
        };
        // `cursor: pointer` marks script-made clickables; inside an element
        // already listed it is part of that element.
        let interactive = is_interactive(el, &tag, has_attrs)
            || (pointer
                && !ctx.pointer
                && self.open_elements == 0
                && !matches!(tag.as_str(), "html" | "body"));
        // A heading inside a listed element (`<a><h3>Title</h3></a>`) is
        // that element's text, not a line of its own.
        let heading = if self.open_elements == 0 { heading } else { 0 };

        let mut opened = false;
        if (interactive || heading > 0) && shown_style {
            let r = el.get_bounding_client_rect();
            if r.width() > 0.0 && r.height() > 0.0 {
                let rect = Rect {
                    x: r.x() + frame.dx,
                    y: r.y() + frame.dy,
                    width: r.width(),
                    height: r.height(),
                };
                let in_viewport = intersect(&rect, &frame.clip).is_some();
                if interactive {
                    if !in_viewport || uncovered(el, &r, frame) {
                        let seen = self.describe(el, &tag, rect, in_viewport);
                        self.lines.push(Line::Element(Box::new(seen)));
                        self.open_elements += 1;
                        opened = true;
                    }
                } else {
                    self.lines.push(Line::Heading {
                        level: heading,
                        text: String::new(),
                    });
                    opened = true;
                }
                if opened {
                    self.open.push(self.lines.len() - 1);
                }
            }
        }

        let inner = Ctx {
            pointer,
            text_hidden: !shown_style && display != "contents",
        };
        match tag.as_str() {
            "iframe" | "frame" => self.frame(el, frame),
            "img" | "area" => {
                if let Some(alt) = attr(el, "alt").filter(|_| !inner.text_hidden) {
                    self.add_text(&alt);
                }
            }
            "select" | "textarea" | "svg" | "math" | "video" | "audio" | "canvas" | "object" => {}
            _ => {
                if let Some(shadow) = el.shadow_root() {
                    self.children(&shadow, frame, inner);
                }
                self.children(el, frame, inner);
            }
        }
        if opened {
            let closed = self.open.pop();
            if closed.is_some_and(|i| matches!(self.lines[i], Line::Element(_))) {
                self.open_elements -= 1;
            }
        }
    }

    /// Walks into a same-origin iframe (cross-origin ones have no
    /// `contentDocument` here).
    fn frame(&mut self, el: &Element, outer: &Frame) {
        let iframe = el.unchecked_ref::<HtmlIFrameElement>();
        let (Some(doc), Some(window)) = (iframe.content_document(), iframe.content_window()) else {
            return;
        };
        let Some(root) = doc.document_element() else {
            return;
        };
        let r = el.get_bounding_client_rect();
        let dx = outer.dx + r.x() + f64::from(el.client_left());
        let dy = outer.dy + r.y() + f64::from(el.client_top());
        let width = num(window.inner_width());
        let height = num(window.inner_height());
        let inner_box = Rect {
            x: dx,
            y: dy,
            width,
            height,
        };
        let clip = intersect(&inner_box, &outer.clip).unwrap_or(Rect {
            x: dx,
            y: dy,
            width: 0.0,
            height: 0.0,
        });
        let frame = Frame {
            window,
            dx,
            dy,
            clip,
            width,
            height,
        };
        self.visit(&root, &frame, Ctx::default());
    }

    /// Reads what the model is told about an element.
    fn describe(&self, el: &Element, tag: &str, rect: Rect, in_viewport: bool) -> Seen {
        let index = registry::number_of(el);
        let input_type = (tag == "input").then(|| {
            attr(el, "type").map_or_else(|| "text".to_owned(), |t| t.trim().to_ascii_lowercase())
        });
        let role =
            attr(el, "role").and_then(|r| r.split_whitespace().next().map(str::to_ascii_lowercase));
        let mut seen = Seen {
            index,
            tag: tag.to_owned(),
            name: attr(el, "name"),
            placeholder: attr(el, "placeholder"),
            aria_label: attr(el, "aria-label"),
            title: attr(el, "title"),
            disabled: dom::is_disabled(el, tag),
            rect,
            in_viewport,
            ..Seen::default()
        };
        if tag == "a" {
            seen.href = attr(el, "href").and_then(|h| text::shown_href(&h, &self.origin));
        }
        let field = matches!(tag, "input" | "select" | "textarea");
        if field {
            seen.required = el.has_attribute("required");
            seen.label = dom::field_label(el);
        }
        match (tag, input_type.as_deref()) {
            ("input", Some("checkbox" | "radio")) => {
                seen.checked = el.unchecked_ref::<HtmlInputElement>().checked();
            }
            ("input", Some("password")) => {}
            ("input", Some(_)) => {
                seen.value = Some(el.unchecked_ref::<HtmlInputElement>().value());
            }
            ("textarea", _) => {
                seen.value = Some(el.unchecked_ref::<HtmlTextAreaElement>().value());
            }
            ("select", _) => read_select(el, &mut seen),
            _ => {}
        }
        if let Some(r) = &role {
            if matches!(
                r.as_str(),
                "checkbox"
                    | "switch"
                    | "radio"
                    | "menuitemcheckbox"
                    | "menuitemradio"
                    | "option"
                    | "tab"
            ) && !field
            {
                let state = attr(el, "aria-checked").or_else(|| attr(el, "aria-selected"));
                seen.checked = state.is_some_and(|v| v.eq_ignore_ascii_case("true"));
            }
        }
        if let Some(ids) = attr(el, "aria-labelledby").filter(|_| seen.aria_label.is_none()) {
            seen.label = labelled_by(el, &ids).or(seen.label);
        }
        seen.role = role;
        seen.input_type = input_type;
        seen
    }
}

/// The options of a `<select>` and the chosen one, when it is not the first.
fn read_select(el: &Element, seen: &mut Seen) {
    let select = el.unchecked_ref::<web_sys::HtmlSelectElement>();
    let count = select.length();
    let option_text = |i: u32| {
        select
            .item(i)
            .map(|o| o.unchecked_ref::<web_sys::HtmlOptionElement>().text())
            .unwrap_or_default()
    };
    seen.option_count = count as usize;
    seen.options = text::options_shown((0..count).map(option_text));
    let chosen = select.selected_index();
    if chosen > 0 {
        seen.value = Some(option_text(chosen as u32));
    }
}

/// The text of the elements named by `aria-labelledby`.
fn labelled_by(el: &Element, ids: &str) -> Option<String> {
    let doc: Document = el.owner_document()?;
    let text: Vec<String> = ids
        .split_whitespace()
        .filter_map(|id| doc.get_element_by_id(id))
        .filter_map(|e| e.text_content())
        .map(|t| text::collapse(&t))
        .collect();
    Some(text.join(" ")).filter(|t| !t.is_empty())
}

/// Whether an element is interactive by its tag, its attributes or its role
/// (the `cursor: pointer` rule is the caller's).
fn is_interactive(el: &Element, tag: &str, has_attrs: bool) -> bool {
    let by_tag = match tag {
        "a" => el.has_attribute("href"),
        "button" | "select" | "textarea" | "summary" | "details" => true,
        "input" => !el
            .get_attribute("type")
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("hidden")),
        "label" => el
            .unchecked_ref::<web_sys::HtmlLabelElement>()
            .control()
            .is_some(),
        _ => false,
    };
    if by_tag {
        return true;
    }
    if !has_attrs {
        return false;
    }
    if let Some(role) = el.get_attribute("role") {
        let first = role
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if INTERACTIVE_ROLES.contains(&first.as_str()) {
            return true;
        }
    }
    if let Some(editable) = el.get_attribute("contenteditable") {
        let e = editable.trim().to_ascii_lowercase();
        if e.is_empty() || e == "true" || e == "plaintext-only" {
            return true;
        }
    }
    if el
        .get_attribute("tabindex")
        .and_then(|t| t.trim().parse::<i32>().ok())
        .is_some_and(|t| t >= 0)
    {
        return true;
    }
    // Items of drag-and-drop lists (`drag_and_drop` needs their numbers).
    el.has_attribute("onclick") || el.get_attribute("draggable").as_deref() == Some("true")
}

/// The overlap of two rectangles, if they overlap.
fn intersect(a: &Rect, b: &Rect) -> Option<Rect> {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.width).min(b.x + b.width);
    let y1 = (a.y + a.height).min(b.y + b.height);
    (x1 > x0 && y1 > y0).then_some(Rect {
        x: x0,
        y: y0,
        width: x1 - x0,
        height: y1 - y0,
    })
}

/// Whether the element shows at the centre of its visible part, asked of
/// the document or shadow root that holds it. `local` is the element's
/// rectangle in its own document's viewport.
fn uncovered(el: &Element, local: &web_sys::DomRect, frame: &Frame) -> bool {
    // The part of the element inside its own frame and inside the top window.
    let own = Rect {
        x: 0.0,
        y: 0.0,
        width: frame.width,
        height: frame.height,
    };
    let clip_local = Rect {
        x: frame.clip.x - frame.dx,
        y: frame.clip.y - frame.dy,
        width: frame.clip.width,
        height: frame.clip.height,
    };
    let r = Rect {
        x: local.x(),
        y: local.y(),
        width: local.width(),
        height: local.height(),
    };
    let Some(part) = intersect(&r, &own).and_then(|p| intersect(&p, &clip_local)) else {
        return true;
    };
    let (cx, cy) = (part.x + part.width / 2.0, part.y + part.height / 2.0);
    match dom::element_at(el, cx, cy) {
        None => true,
        Some(hit) => dom::hit_belongs(el, &hit),
    }
}

//! Small DOM helpers shared by the observer and the actions.
//!
//! Elements may live in same-origin iframes, whose nodes belong to another
//! JavaScript realm: `instanceof` checks (wasm-bindgen's `dyn_ref`) fail for
//! them, so node kinds are told apart by `nodeType` and tag names, and
//! casts are unchecked.

use crate::proto;
use js_sys::JsString;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{CssStyleDeclaration, Document, Element, Node, ShadowRoot, Window};

/// `nodeType` of a document.
pub const DOCUMENT_NODE: u16 = 9;
/// `nodeType` of a document fragment (and so of a shadow root).
pub const FRAGMENT_NODE: u16 = 11;

/// Declares [`Name`], the attribute, style property and selector names the
/// walk passes to the page for every element, and their texts.
macro_rules! names {
    ($($id:ident = $text:literal,)*) => {
        /// A name passed to the page for every element walked. A Rust
        /// string passed to JavaScript is decoded again on every call (a
        /// `TextDecoder` call: most of the cost of reading one short
        /// attribute); these are made JavaScript strings once and passed as
        /// such ([`get`], [`has`], [`property`], [`matches`]).
        #[derive(Clone, Copy, Debug)]
        pub enum Name { $($id,)* }
        const NAME_TEXTS: &[&str] = &[$($text,)*];
    };
}

names! {
    Inert = "inert",
    AriaHidden = "aria-hidden",
    AriaLabel = "aria-label",
    AriaLabelledBy = "aria-labelledby",
    AriaInvalid = "aria-invalid",
    AriaExpanded = "aria-expanded",
    AriaChecked = "aria-checked",
    AriaSelected = "aria-selected",
    AriaDisabled = "aria-disabled",
    Role = "role",
    ContentEditable = "contenteditable",
    TabIndex = "tabindex",
    OnClick = "onclick",
    Draggable = "draggable",
    Type = "type",
    NameAttr = "name",
    Placeholder = "placeholder",
    Title = "title",
    Href = "href",
    Required = "required",
    Alt = "alt",
    Open = "open",
    FormAction = "formaction",
    Display = "display",
    Opacity = "opacity",
    Clip = "clip",
    ClipPath = "clip-path",
    AriaValueNow = "aria-valuenow",
    AriaValueText = "aria-valuetext",
    AriaValueMin = "aria-valuemin",
    AriaValueMax = "aria-valuemax",
    Min = "min",
    Max = "max",
    Visibility = "visibility",
    Cursor = "cursor",
    FlexDirection = "flex-direction",
    FlexWrap = "flex-wrap",
    OverflowY = "overflow-y",
    Content = "content",
    BackgroundImage = "background-image",
    BackgroundPosition = "background-position",
    Position = "position",
    FontFamily = "font-family",
    ReadOnly = "readonly",
    Multiple = "multiple",
    AriaReadOnly = "aria-readonly",
    AriaMultiSelectable = "aria-multiselectable",
    Class = "class",
    Invalid = ":invalid",
    Disabled = ":disabled",
}

thread_local! {
    static NAMES: Vec<JsString> = NAME_TEXTS.iter().map(|&t| JsString::from(t)).collect();
}

// `getPropertyValue` taking the name as a JavaScript string (a computed
// style has no named properties to shadow it; element reads go through
// `crate::proto`).
#[wasm_bindgen]
extern "C" {
    type NamedStyle;
    #[wasm_bindgen(method, catch, js_name = getPropertyValue)]
    fn property_named(this: &NamedStyle, name: &JsString) -> Result<String, JsValue>;
}

fn with_name<T>(name: Name, f: impl FnOnce(&JsString) -> T) -> T {
    NAMES.with(|names| f(&names[name as usize]))
}

/// The name as the JavaScript string passed to the page.
pub fn name_js(name: Name) -> JsValue {
    with_name(name, |n| n.clone().into())
}

/// `getAttribute(name)`.
pub fn get(el: &Element, name: Name) -> Option<String> {
    with_name(name, |n| proto::get_attribute_js(el, n))
}

/// `hasAttribute(name)`.
pub fn has(el: &Element, name: Name) -> bool {
    with_name(name, |n| proto::has_attribute_js(el, n))
}

/// `matches(selector)`; false when the selector is refused.
pub fn matches(el: &Element, selector: Name) -> bool {
    with_name(selector, |n| proto::matches_js(el, n).unwrap_or(false))
}

/// A computed style property's value (empty when unknown).
pub fn property(style: &CssStyleDeclaration, name: Name) -> String {
    with_name(name, |n| style.unchecked_ref::<NamedStyle>().property_named(n).unwrap_or_default())
}

/// A non-empty attribute value, by a [`Name`].
pub fn attr_named(el: &Element, name: Name) -> Option<String> {
    get(el, name).filter(|v| !v.trim().is_empty())
}

/// A non-empty attribute value.
pub fn attr(el: &Element, name: &str) -> Option<String> {
    proto::get_attribute(&el, name).filter(|v| !v.trim().is_empty())
}

/// A decimal number (digits, `.`, an exponent, signs), as
/// `str::parse::<f64>` reads it; `None` for anything else. Read by
/// JavaScript's `Number()`, which agrees with Rust on these characters:
/// Rust's own float parser carries about 14 KB of tables and code into
/// the module (BENCHMARKS.md, "Issue 24 part A, continued").
pub fn decimal(text: &str) -> Option<f64> {
    if let Some(n) = plain_decimal(text) {
        return Some(n);
    }
    let decimal = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    let n = if decimal { JsValue::from_str(text).unchecked_into_f64() } else { f64::NAN };
    (!n.is_nan()).then_some(n)
}

/// [`decimal`] of the numbers computed styles and form fields mostly hold
/// (`1`, `0.5`, `-12.25`: a sign, at most 15 digits, a point), read
/// without a call to the page (two a number: a walk reads every element's
/// opacity). Exact: the digits make an integer under 2^53 and the point a
/// power of ten at most 10^15, both exact in an `f64`, so the one division
/// rounds correctly, as `Number()` and `str::parse` do (Clinger's fast
/// path). `None` for anything else (an exponent, more digits, no digit).
fn plain_decimal(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let (negative, body) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut mantissa: u64 = 0;
    let mut digits = 0u32;
    let mut point: Option<u32> = None;
    for &b in body {
        match b {
            b'0'..=b'9' => {
                digits += 1;
                if digits > 15 {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(b - b'0');
            }
            b'.' if point.is_none() => point = Some(digits),
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    // 10^decimals, exactly (each product a whole number under 2^53).
    let mut scale = 1.0f64;
    for _ in 0..digits - point.unwrap_or(digits) {
        scale *= 10.0;
    }
    let n = mantissa as f64 / scale;
    Some(if negative { -n } else { n })
}

/// The window whose document holds `el` (an iframe's for elements in it).
pub fn window_of(el: &Element) -> Option<Window> {
    proto::owner_document(&el).and_then(|d| proto::default_view(&d)).or_else(web_sys::window)
}

/// The parent in the composed tree: across a shadow root to its host.
pub fn flat_parent(el: &Element) -> Option<Element> {
    if let Some(p) = proto::parent_element(&el) {
        return Some(p);
    }
    let parent = proto::parent_node(&el)?;
    (proto::node_type(&parent) == FRAGMENT_NODE)
        .then(|| parent.unchecked_ref::<ShadowRoot>().host())
}

/// The topmost element at a point of `el`'s own viewport, asked of the
/// document or shadow root that holds `el` (so the answer is comparable
/// with `el`).
pub fn element_at(el: &Element, x: f64, y: f64) -> Option<Element> {
    let root: Node = proto::get_root_node(&el);
    match proto::node_type(&root) {
        DOCUMENT_NODE => {
            proto::element_from_point(&root.unchecked_ref::<Document>(), x as f32, y as f32)
        }
        FRAGMENT_NODE => {
            proto::element_from_point(&root.unchecked_ref::<ShadowRoot>(), x as f32, y as f32)
        }
        _ => None,
    }
}

/// Whether `hit` (what a click at the point lands on) belongs to `el`.
///
/// An ancestor of `el` counts across shadow roots: a shadow root's hit test
/// answers its host where the host's light content, slotted into the
/// shadow tree, is on top (a web component's label text inside its
/// `<label>`).
pub fn hit_belongs(el: &Element, hit: &Element) -> bool {
    if hit == el || proto::contains(&el, Some(hit)) || proto::contains(&hit, Some(el)) {
        return true;
    }
    if proto::shadow_root(hit).is_none() {
        return false;
    }
    let mut up = flat_parent(el);
    for _ in 0..256 {
        match up {
            Some(p) if p == *hit => return true,
            Some(p) => up = flat_parent(&p),
            None => return false,
        }
    }
    false
}

/// Whether `el` is a native `<select>` (or a text field taken out of the
/// tab order) that the page hides from sight while keeping it in the
/// layout, the way widget libraries hide the control they replace (Tom
/// Select's `ts-hidden-accessible`, Select2's `select2-hidden-accessible`):
/// a box of a pixel or less, or clipped to nothing. A person uses the
/// widget, not it. (`display: none`, `opacity: 0` and `aria-hidden` leave
/// it out of the walk already.)
pub fn replaced(el: &Element) -> bool {
    let tag = proto::local_name(el);
    let field = match tag.as_str() {
        "select" => true,
        "input" => {
            let kind = get(el, Name::Type).unwrap_or_default().trim().to_ascii_lowercase();
            !matches!(
                kind.as_str(),
                "checkbox" | "radio" | "file" | "hidden" | "submit" | "button" | "reset" | "image"
            ) && get(el, Name::TabIndex).is_some_and(|t| t.trim() == "-1")
        }
        _ => false,
    };
    if !field {
        return false;
    }
    let r = proto::get_bounding_client_rect(el);
    if r.width() <= 1.0 || r.height() <= 1.0 {
        return true;
    }
    let Some(style) = window_of(el).and_then(|w| w.get_computed_style(el).ok().flatten()) else {
        return false;
    };
    let clip = property(&style, Name::Clip);
    let clip_path = property(&style, Name::ClipPath);
    clip.starts_with("rect(0px, 0px, 0px, 0px)")
        || clip.starts_with("rect(0px 0px 0px 0px)")
        || clip_path == "inset(50%)"
}

/// The visible widget that stands in for a [`replaced`] control: the
/// nearest sibling box after (or before) it, or after its wrapper, that
/// shows.
pub fn replacement_of(el: &Element) -> Option<Element> {
    let shows = |e: &Element| {
        let r = proto::get_bounding_client_rect(e);
        r.width() > 2.0 && r.height() > 2.0 && !replaced(e)
    };
    let mut from = el.clone();
    for _ in 0..3 {
        let mut next = proto::next_element_sibling(&from);
        while let Some(n) = next {
            if shows(&n) {
                return Some(n);
            }
            next = proto::next_element_sibling(&n);
        }
        from = proto::parent_element(&from)?;
        if shows(&from) {
            return Some(from);
        }
    }
    None
}

/// Whether a click focuses the element (natively or by `tabindex`).
pub fn is_focusable(el: &Element) -> bool {
    match proto::local_name(&el).as_str() {
        "button" | "input" | "select" | "textarea" | "summary" | "iframe" => true,
        "a" | "area" => proto::has_attribute(&el, "href") || proto::has_attribute(&el, "tabindex"),
        _ => {
            proto::has_attribute(&el, "tabindex")
                || proto::is_content_editable(&el.unchecked_ref::<web_sys::HtmlElement>())
        }
    }
}

/// Whether a form control is disabled (itself, or by a disabled fieldset),
/// or marked `aria-disabled="true"`.
pub fn is_disabled(el: &Element, tag: &str) -> bool {
    let form_control =
        matches!(tag, "button" | "input" | "select" | "textarea" | "option" | "fieldset");
    (form_control && matches(el, Name::Disabled))
        || get(el, Name::AriaDisabled).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The text of a form field's first `<label>`, else what a person reads
/// as its label (`visual_label`).
pub fn field_label(el: &Element) -> Option<String> {
    let labels = js_sys::Reflect::get(el, &"labels".into()).ok().filter(|l| l.is_object());
    let Some(first) = labels.and_then(|l| l.unchecked_ref::<web_sys::NodeList>().item(0)) else {
        return crate::visual_label::inferred(el);
    };
    label_text_of(&first)
}

/// The text a `<label>` shows of itself, collapsed; `None` when empty.
pub fn label_text_of(label: &Node) -> Option<String> {
    let mut text = String::new();
    label_text(label, &mut text);
    Some(crate::text::collapse(&text)).filter(|t| !t.is_empty())
}

/// The text a label shows of itself: not the options of a select or the
/// text of a textarea it wraps, nor a button inside it (listed on its own:
/// `Keep me signed in. [Details]`).
pub fn label_text(node: &Node, out: &mut String) {
    for k in shown_children(node) {
        match proto::node_type(&k) {
            Node::TEXT_NODE => out.push_str(&proto::text_content(&k).unwrap_or_default()),
            Node::ELEMENT_NODE => {
                let el = k.unchecked_ref::<Element>();
                let skip = matches!(
                    proto::local_name(&el).as_str(),
                    "select" | "textarea" | "option" | "datalist" | "script" | "style" | "button"
                ) || proto::get_attribute(&el, "role")
                    .is_some_and(|r| r.trim() == "button")
                    || not_a_name(el);
                if !skip {
                    label_text(&k, out);
                }
            }
            _ => {}
        }
    }
}

/// The children a node shows: a `<slot>`'s are the light nodes assigned
/// to it (a web component's label text), else its own.
pub fn shown_children(node: &Node) -> Vec<Node> {
    if proto::node_type(node) == Node::ELEMENT_NODE {
        let el = node.unchecked_ref::<Element>();
        if proto::local_name(el) == "slot" {
            let assigned = proto::assigned_nodes(el);
            if !assigned.is_empty() {
                return assigned;
            }
        }
    }
    let kids = proto::child_nodes(node);
    (0..kids.length()).filter_map(|i| kids.item(i)).collect()
}

/// Whether `el` is no part of a name a person reads beside a field: an
/// autocomplete's list or live status ("0 results"), or something not
/// shown at all.
pub fn not_a_name(el: &Element) -> bool {
    let role = proto::get_attribute(el, "role").unwrap_or_default();
    let role = role.trim();
    matches!(role, "listbox" | "option" | "status" | "alert" | "log" | "menu" | "tooltip")
        || proto::has_attribute(el, "aria-live")
        || proto::has_attribute(el, "hidden")
        || proto::get_attribute(el, "aria-hidden").is_some_and(|v| v.trim() == "true")
        // (A `<slot>` has no box of its own: it shows what is assigned.)
        || (el.get_client_rects().length() == 0 && proto::local_name(el) != "slot")
}

/// Runs `write` (Errand's own DOM writes) so that `observer` does not take
/// them for the page's: the page's changes so far go to `record` first, the
/// writes' own records are dropped afterwards.
pub fn writes_unseen<T>(
    observer: Option<&web_sys::MutationObserver>,
    record: impl Fn(js_sys::Array),
    write: impl FnOnce() -> T,
) -> T {
    if let Some(o) = observer {
        record(o.take_records());
    }
    let out = write();
    if let Some(o) = observer {
        let _ = o.take_records();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::plain_decimal;

    /// The fast path reads what `str::parse` (and `Number()`) read, to
    /// the bit, and leaves the rest to them.
    #[test]
    fn plain_decimals_read_as_the_parsers_read_them() {
        let mut texts: Vec<String> =
            "1 0 -0 +0 0.5 .5 5. -.25 1.0 0.1 0.2 0.3 0.30000000000000004 \
             12.75 -12.25 007 0.000001 123456789012345 1.23456789012345 999999999999999 \
             0.999999999999999 3.14159"
                .split_whitespace()
                .map(str::to_owned)
                .collect();
        // Every 3-digit decimal at each position of the point, and a spread
        // of longer ones (an LCG: the same each run).
        for n in 0..1000u32 {
            let d = format!("{n:03}");
            for cut in 0..=3 {
                texts.push(format!("{}.{}", &d[..cut], &d[cut..]));
            }
        }
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let digits = (x >> 60) as usize % 15 + 1;
            let v = (x >> 8) % 10u64.pow(digits as u32);
            let s = format!("{v:0digits$}");
            let cut = (x >> 4) as usize % (digits + 1);
            texts.push(format!("{}.{}", &s[..cut], &s[cut..]));
        }
        for t in &texts {
            let want: f64 = t.parse().unwrap();
            let digits = t.bytes().filter(u8::is_ascii_digit).count();
            match plain_decimal(t) {
                Some(got) => assert_eq!(got.to_bits(), want.to_bits(), "{t:?}"),
                // Past 15 digits the parsers read it.
                None => assert!(digits > 15, "{t:?} not read"),
            }
        }
        for t in
            ["", "-", "+", ".", "-.", "1e3", "1.2.3", "1234567890123456", " 1", "1 ", "0x10", "1,5"]
        {
            assert_eq!(plain_decimal(t), None, "{t:?}");
        }
    }
}

//! Reads and calls on nodes, elements, forms and documents that a page
//! cannot shadow.
//!
//! A form's named fields shadow the form's own properties (DOM clobbering:
//! with `<input name="action">`, `form.action` is that input, and
//! `form.parentNode`, `form.getAttribute`, `form.localName`… can be shadowed
//! the same way), and so do a document's named `<form>`, `<img>`, `<iframe>`,
//! `<embed>` and `<object>` elements for the document's (`<img
//! name="body">` makes `document.body` an image). Both interfaces are
//! `[LegacyOverrideBuiltIns]`: the named child wins over the prototype, in
//! the content script's isolated world too. web-sys reads every property by
//! name on the object (`el.parentNode`), so a shadowed read returns the
//! wrong thing — a climb to the parents can go round for ever, a string read
//! throws — and a page freezes or fails Errand.
//!
//! **The rule**: the crate never reads a property of, or calls a method on, a
//! `Node`, `Element`, `HTMLElement`, `HTMLFormElement` or `Document` through
//! web-sys; it goes through this module, which calls the prototype's own
//! getter, setter or method with the node as `this` (the getters and setters
//! are taken from the isolated world's prototypes once, by
//! `Object.getOwnPropertyDescriptor`; the methods are bound with
//! wasm-bindgen's `final`, which calls `Element.prototype.x.call(el, …)`).
//! The isolated world's prototypes are the content script's own: the page
//! cannot replace them. Nodes of same-origin frames (another realm) work the
//! same: the getters check the node's interface, not its realm.
//! `tests` checks the rule: no other module calls the web-sys methods it
//! replaces. Inputs, selects, textareas, options, labels and iframes cannot
//! be shadowed (they have no named properties), so their own members (an
//! input's `value`, a select's `options`) are read through web-sys once the
//! element is known to be one — by its [`local_name`] read here.

use errand_protocol::Rect;
use js_sys::{Function, JsString, Object, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{
    CssStyleDeclaration, Document, DomRect, Element, EventTarget, HtmlCollection, HtmlElement,
    Node, NodeList, ShadowRoot, Window,
};

/// Declares the properties read through their prototype's getter: a
/// [`Prop`] each, with the interface that defines it.
macro_rules! props {
    ($($id:ident = $class:literal . $name:literal,)*) => {
        #[derive(Clone, Copy, Debug)]
        enum Prop { $($id,)* }
        const PROPS: &[(&str, &str)] = &[$(($class, $name),)*];
    };
}

props! {
    ParentNode = "Node"."parentNode",
    ParentElement = "Node"."parentElement",
    FirstChild = "Node"."firstChild",
    LastChild = "Node"."lastChild",
    NextSibling = "Node"."nextSibling",
    PreviousSibling = "Node"."previousSibling",
    ChildNodes = "Node"."childNodes",
    NodeType = "Node"."nodeType",
    NodeValue = "Node"."nodeValue",
    NodeName = "Node"."nodeName",
    TextContent = "Node"."textContent",
    IsConnected = "Node"."isConnected",
    OwnerDocument = "Node"."ownerDocument",
    LocalName = "Element"."localName",
    NamespaceUri = "Element"."namespaceURI",
    ShadowRoot = "Element"."shadowRoot",
    ElementChildren = "Element"."children",
    ElementFirstChild = "Element"."firstElementChild",
    NextElementSibling = "Element"."nextElementSibling",
    PreviousElementSibling = "Element"."previousElementSibling",
    ScrollTop = "Element"."scrollTop",
    ScrollLeft = "Element"."scrollLeft",
    ScrollWidth = "Element"."scrollWidth",
    ScrollHeight = "Element"."scrollHeight",
    ClientWidth = "Element"."clientWidth",
    ClientHeight = "Element"."clientHeight",
    IsContentEditable = "HTMLElement"."isContentEditable",
    Draggable = "HTMLElement"."draggable",
    TabIndex = "HTMLElement"."tabIndex",
    InnerText = "HTMLElement"."innerText",
    Style = "HTMLElement"."style",
    FormAction = "HTMLFormElement"."action",
    FormElements = "HTMLFormElement"."elements",
    Body = "Document"."body",
    DocumentElement = "Document"."documentElement",
    DocumentActive = "Document"."activeElement",
    DefaultView = "Document"."defaultView",
    Title = "Document"."title",
    Url = "Document"."URL",
    DocumentChildren = "Document"."children",
    DocumentFirstChild = "Document"."firstElementChild",
    StyleSheets = "Document"."styleSheets",
    AdoptedStyleSheets = "Document"."adoptedStyleSheets",
    FragmentChildren = "DocumentFragment"."children",
    FragmentFirstChild = "DocumentFragment"."firstElementChild",
    ShadowActive = "ShadowRoot"."activeElement",
    ShadowStyleSheets = "ShadowRoot"."styleSheets",
    ShadowAdoptedStyleSheets = "ShadowRoot"."adoptedStyleSheets",
}

/// A property's getter and setter, taken from the prototype that defines
/// it (or an ancestor of it).
struct Accessor {
    /// `None` where this browser has no such property.
    get: Option<Getter>,
    set: Option<Getter>,
}

thread_local! {
    static ACCESSORS: Vec<Accessor> = PROPS.iter().map(|&(class, name)| accessor(class, name)).collect();
}

fn accessor(class: &str, name: &str) -> Accessor {
    let global = js_sys::global();
    let mut proto = Reflect::get(&global, &class.into())
        .and_then(|c| Reflect::get(&c, &"prototype".into()))
        .unwrap_or(JsValue::NULL);
    let key = JsValue::from_str(name);
    // Chromium defines each accessor on the interface that declares it;
    // climb in case another browser moved it up the chain.
    while proto.is_object() {
        let desc = Object::get_own_property_descriptor(proto.unchecked_ref::<Object>(), &key);
        if desc.is_object() {
            let part = |k: &str| {
                Reflect::get(&desc, &k.into())
                    .ok()
                    .filter(JsValue::is_function)
                    .map(JsCast::unchecked_into)
            };
            if let Some(get) = part("get") {
                return Accessor { get: Some(get), set: part("set") };
            }
        }
        proto = Object::get_prototype_of(&proto).into();
    }
    // Not in this browser: reads answer `undefined` (treated as absent).
    // (Not a stand-in function: `new Function` is eval, which the content
    // script's CSP refuses.)
    Accessor { get: None, set: None }
}

#[wasm_bindgen]
extern "C" {
    /// A getter or setter function of the isolated world's own prototypes.
    #[wasm_bindgen(js_name = Function)]
    type Getter;
    #[wasm_bindgen(method, catch, js_name = call)]
    fn call0(this: &Getter, receiver: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = call)]
    fn call1(this: &Getter, receiver: &JsValue, a: &JsValue) -> Result<JsValue, JsValue>;
}

/// The property `prop` of `this`, read through its prototype's getter;
/// `undefined` when `this` is not of its interface (the getter throws).
fn read(this: &JsValue, prop: Prop) -> JsValue {
    ACCESSORS.with(|a| match &a[prop as usize].get {
        Some(get) => get.call0(this).unwrap_or(JsValue::UNDEFINED),
        None => JsValue::UNDEFINED,
    })
}

// The typed reads below are one call to the page each: the getter is
// called, and its value checked and converted, by the small readers of
// the inline module below (bindings: they read a value, decide nothing). Through
// `read` a read was two or three (the getter called through wasm-bindgen's
// `catch` wrapper, which allocates an `arguments` object, then
// `is_object`, `as_f64` or `as_string` on the value), most of a walk's
// calls to the page while its code runs cold (BENCHMARKS.md, issue 24).

/// An object-valued property (`None` for null, or when the getter throws).
fn read_object<T: JsCast>(this: &JsValue, prop: Prop) -> Option<T> {
    ACCESSORS
        .with(|a| a[prop as usize].get.as_ref().and_then(|g| reader_object(g, this)))
        .map(JsCast::unchecked_into)
}

/// A string-valued property (`None` for anything else).
fn read_string(this: &JsValue, prop: Prop) -> Option<String> {
    ACCESSORS.with(|a| a[prop as usize].get.as_ref().and_then(|g| reader_string(g, this)))
}

/// A number-valued property (`fallback` for anything else).
fn read_number(this: &JsValue, prop: Prop, fallback: f64) -> f64 {
    ACCESSORS.with(|a| {
        a[prop as usize].get.as_ref().map_or(fallback, |g| reader_number(g, this, fallback))
    })
}

/// A boolean property (false for anything else).
fn read_bool(this: &JsValue, prop: Prop) -> bool {
    ACCESSORS.with(|a| a[prop as usize].get.as_ref().is_some_and(|g| reader_bool(g, this)))
}

/// The readers (`reader_*`): each calls a getter of the isolated world's prototypes (or
/// its `getBoundingClientRect`, `getComputedStyle`, `getPropertyValue`) and
/// hands the value over as wasm-bindgen takes it without further calls.
#[wasm_bindgen(inline_js = r##"
// (The service worker loads this module too: it has no DOM.)
const rectOf = typeof Element === "function" ? Element.prototype.getBoundingClientRect : null;
export function reader_object(get, o) {
  try {
    const v = get.call(o);
    return typeof v === "object" && v !== null ? v : undefined;
  } catch (_) {
    return undefined;
  }
}
export function reader_string(get, o) {
  try {
    const v = get.call(o);
    return typeof v === "string" ? v : undefined;
  } catch (_) {
    return undefined;
  }
}
export function reader_number(get, o, fallback) {
  try {
    const v = get.call(o);
    return typeof v === "number" ? v : fallback;
  } catch (_) {
    return fallback;
  }
}
export function reader_bool(get, o) {
  try {
    return get.call(o) === true;
  } catch (_) {
    return false;
  }
}
// The node after `n` by `step` (the `firstChild` or `nextSibling` getter),
// and what it is written into `buf` (the module's memory): byte 0 its kind
// (1 an element, 3 a text, 0 anything else), bytes 1-4 how many bytes of
// UTF-8 follow from byte 9 (its `localName` or its `nodeValue`; 2^32 - 1
// when they do not fit); of an element, bytes 5-8 which of `names` it has
// as attributes (bit i for names[i], bit 30 when it has any attribute; 0
// when it has none) and bit 31 whether it has an open shadow root. One call
// to the page per node of a walk, where moving on, reading the node, its
// attributes and its shadow root were four, and the text is not handed
// over through the glue's allocation in the module (a call back into it).
export function reader_step(n, step, type, name, value, shadow, names, buf) {
  let c;
  try {
    c = step.call(n);
  } catch (_) {
    return undefined;
  }
  if (typeof c !== "object" || c === null) return undefined;
  let kind = 0;
  let s = "";
  let bits = 0;
  try {
    const t = type.call(c);
    if (t === 1) {
      kind = 1;
      const v = name.call(c);
      if (typeof v === "string") s = v;
      bits = reader_present(c, names);
      if (shadow.call(c)) bits |= 1 << 31;
    } else if (t === 3) {
      const v = value.call(c);
      if (typeof v === "string") {
        kind = 3;
        s = v;
      }
    }
  } catch (_) {
    kind = 0;
    s = "";
    bits = 0;
  }
  buf[0] = kind;
  buf[5] = bits & 0xff;
  buf[6] = (bits >>> 8) & 0xff;
  buf[7] = (bits >>> 16) & 0xff;
  buf[8] = bits >>> 24;
  // ASCII byte by byte (a tag, most text: `encodeInto` costs more for a
  // short string), the rest by the engine.
  const len = s.length;
  const room = buf.length - 9;
  let i = 0;
  for (; i < len && i < room; i++) {
    const ch = s.charCodeAt(i);
    if (ch > 0x7f) break;
    buf[9 + i] = ch;
  }
  let w = i;
  if (i < len) {
    const r = utf8.encodeInto(i === 0 ? s : s.slice(i), buf.subarray(9 + i));
    w = r.read === len - i ? i + r.written : 0xffffffff;
  }
  buf[1] = w & 0xff;
  buf[2] = (w >>> 8) & 0xff;
  buf[3] = (w >>> 16) & 0xff;
  buf[4] = w >>> 24;
  return c;
}
const hasAny = typeof Element === "function" ? Element.prototype.hasAttributes : null;
const hasOne = typeof Element === "function" ? Element.prototype.hasAttribute : null;
export function reader_present(el, names) {
  if (!hasAny.call(el)) return 0;
  let bits = 1 << 30;
  for (let i = 0; i < names.length; i++) if (hasOne.call(el, names[i])) bits |= 1 << i;
  return bits;
}
export function reader_rect(el, out) {
  const r = rectOf.call(el);
  out[0] = r.x;
  out[1] = r.y;
  out[2] = r.width;
  out[3] = r.height;
}
const utf8 = typeof TextEncoder === "function" ? new TextEncoder() : null;
export function reader_style(win, el, names, buf) {
  let s;
  try {
    s = win.getComputedStyle(el);
  } catch (_) {
    return -1;
  }
  if (typeof s !== "object" || s === null) return -1;
  let out = "";
  for (let i = 0; i < names.length; i++) {
    if (i > 0) out += "\x1f";
    // (A computed style has no named properties a page could shadow, and
    // this one is the isolated world's object: called on it directly, as
    // V8 calls a DOM method fastest.)
    try {
      out += s.getPropertyValue(names[i]);
    } catch (_) {}
  }
  // Written as UTF-8 into `buf` (the module's memory) by the engine,
  // where a returned string is copied by a loop of the glue's, run cold
  // on a first walk: how many bytes, or, when they do not fit, minus the
  // most they can take.
  const r = utf8.encodeInto(out, buf);
  return r.read === out.length ? r.written : -3 * out.length;
}
"##)]
extern "C" {
    fn reader_object(get: &Getter, this: &JsValue) -> Option<Object>;
    fn reader_string(get: &Getter, this: &JsValue) -> Option<String>;
    fn reader_number(get: &Getter, this: &JsValue, fallback: f64) -> f64;
    fn reader_bool(get: &Getter, this: &JsValue) -> bool;
    fn reader_step(
        n: &Node,
        step: &Getter,
        node_type: &Getter,
        local_name: &Getter,
        node_value: &Getter,
        shadow_root: &Getter,
        names: &js_sys::Array,
        buf: &mut [u8],
    ) -> Option<Node>;
    fn reader_present(el: &Element, names: &js_sys::Array) -> u32;
    fn reader_rect(el: &Element, out: &mut [f64]);
    fn reader_style(window: &Window, el: &Element, names: &js_sys::Array, buf: &mut [u8]) -> i32;
}

/// Sets `prop` through its prototype's setter (ignored when refused).
fn write(this: &JsValue, prop: Prop, value: &JsValue) {
    ACCESSORS.with(|a| {
        if let Some(set) = &a[prop as usize].set {
            let _ = set.call1(this, value);
        }
    })
}

/// Which of three interfaces defines a `ParentNode` member for `n`.
fn by_kind<T>(n: &Node, element: T, document: T, fragment: T) -> Option<T> {
    match node_type(n) {
        Node::ELEMENT_NODE => Some(element),
        Node::DOCUMENT_NODE => Some(document),
        Node::DOCUMENT_FRAGMENT_NODE => Some(fragment),
        _ => None,
    }
}

// ---- Node ------------------------------------------------------------------

pub fn parent_node(n: &Node) -> Option<Node> {
    read_object(n, Prop::ParentNode)
}
pub fn parent_element(n: &Node) -> Option<Element> {
    read_object(n, Prop::ParentElement)
}
pub fn first_child(n: &Node) -> Option<Node> {
    read_object(n, Prop::FirstChild)
}
pub fn last_child(n: &Node) -> Option<Node> {
    read_object(n, Prop::LastChild)
}
pub fn next_sibling(n: &Node) -> Option<Node> {
    read_object(n, Prop::NextSibling)
}
pub fn previous_sibling(n: &Node) -> Option<Node> {
    read_object(n, Prop::PreviousSibling)
}
/// `childNodes` (a live list; a list's `length` and `item` cannot be
/// shadowed).
pub fn child_nodes(n: &Node) -> NodeList {
    read(n, Prop::ChildNodes).unchecked_into()
}
/// `nodeType` (0 for what is not a node).
pub fn node_type(n: &Node) -> u16 {
    read_number(n, Prop::NodeType, 0.0) as u16
}
/// What the walk reads of a child node, in one call to the page: an
/// element's `localName`, which attributes it has and whether it has an
/// open shadow root ([`ElementRead`]), or a text node's `nodeValue`.
pub enum NodeRead {
    Element(ElementRead),
    Text(String),
    Other,
}

/// What the walk reads first of every element.
pub struct ElementRead {
    /// `localName`.
    pub tag: String,
    /// [`attributes_present`] of the names the walk asked about.
    pub present: u32,
    /// Whether [`shadow_root`] has one (an open shadow root).
    pub shadow: bool,
}

impl ElementRead {
    /// The same, read of `el` on its own (the walk's first element, and
    /// those a slot shows).
    pub fn of(el: &Element, names: &js_sys::Array) -> ElementRead {
        ElementRead {
            tag: local_name(el),
            present: attributes_present(el, names),
            shadow: shadow_root(el).is_some(),
        }
    }
}

/// `n`'s first child and what it is (see [`NodeRead`]; `names`: the
/// attributes asked about, at most 30), in one call to the page.
pub fn first_child_read(n: &Node, names: &js_sys::Array) -> Option<(Node, NodeRead)> {
    step_read(n, Prop::FirstChild, names)
}
/// `n`'s next sibling and what it is (see [`first_child_read`]), in one
/// call to the page.
pub fn next_sibling_read(n: &Node, names: &js_sys::Array) -> Option<(Node, NodeRead)> {
    step_read(n, Prop::NextSibling, names)
}

fn step_read(n: &Node, step: Prop, names: &js_sys::Array) -> Option<(Node, NodeRead)> {
    /// Room for a text node of over a thousand characters (a longer one is
    /// read again on its own).
    const SIZE: usize = 4096;
    /// The reader's header: the kind, the length, an element's attribute
    /// and shadow root bits.
    const HEAD: usize = 9;
    /// The length the reader writes when the text did not fit.
    const TOO_LONG: u32 = u32::MAX;
    /// The bit of an element's that says it has an open shadow root.
    const SHADOW: u32 = 1 << 31;
    debug_assert!(names.length() <= 30, "at most 30 names");
    thread_local! {
        /// Where the reader writes.
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; SIZE]);
    }
    let (node, kind, bits, text) = ACCESSORS.with(|a| {
        let get = |p: Prop| a[p as usize].get.as_ref();
        let (Some(s), Some(t), Some(l), Some(v), Some(r)) = (
            get(step),
            get(Prop::NodeType),
            get(Prop::LocalName),
            get(Prop::NodeValue),
            get(Prop::ShadowRoot),
        ) else {
            return None;
        };
        BUF.with(|buf| {
            let mut buf = buf.borrow_mut();
            let node = reader_step(n, s, t, l, v, r, names, &mut buf)?;
            let len = u32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]);
            let bits = u32::from_le_bytes([buf[5], buf[6], buf[7], buf[8]]);
            // (`None`: read again on its own.)
            let text = (len != TOO_LONG)
                .then(|| buf.get(HEAD..HEAD + len as usize))
                .flatten()
                .and_then(|b| std::str::from_utf8(b).ok())
                .map(str::to_owned);
            Some((node, buf[0], bits, text))
        })
    })?;
    let read = match kind {
        1 => NodeRead::Element(ElementRead {
            tag: text.unwrap_or_else(|| local_name(node.unchecked_ref())),
            present: bits & !SHADOW,
            shadow: bits & SHADOW != 0,
        }),
        3 => match text.or_else(|| node_value(&node)) {
            Some(t) => NodeRead::Text(t),
            None => NodeRead::Other,
        },
        _ => NodeRead::Other,
    };
    Some((node, read))
}

/// Which of `names` (JavaScript strings, at most 30) `el` has as
/// attributes, one bit each (bit `i` for `names[i]`), and bit 30 when it
/// has any attribute at all (0 when it has none): one call to the page
/// instead of one per name.
pub fn attributes_present(el: &Element, names: &js_sys::Array) -> u32 {
    debug_assert!(names.length() <= 30, "at most 30 names");
    reader_present(el, names)
}
/// Bit 30 of [`attributes_present`]: the element has attributes.
pub const ANY_ATTRIBUTE: u32 = 1 << 30;

/// `nodeName` (`HEAD`, `#text`…).
pub fn node_name(n: &Node) -> String {
    read_string(n, Prop::NodeName).unwrap_or_default()
}
pub fn set_text_content(n: &Node, text: Option<&str>) {
    write(n, Prop::TextContent, &text.map_or(JsValue::NULL, JsValue::from));
}
pub fn node_value(n: &Node) -> Option<String> {
    read_string(n, Prop::NodeValue)
}
pub fn text_content(n: &Node) -> Option<String> {
    read_string(n, Prop::TextContent)
}
pub fn is_connected(n: &Node) -> bool {
    read_bool(n, Prop::IsConnected)
}
pub fn owner_document(n: &Node) -> Option<Document> {
    read_object(n, Prop::OwnerDocument)
}

// ---- ParentNode: elements, documents, fragments (shadow roots) -------------

/// `children` of an element, document or fragment.
pub fn children(n: &Node) -> HtmlCollection {
    let prop = by_kind(n, Prop::ElementChildren, Prop::DocumentChildren, Prop::FragmentChildren);
    prop.map_or(JsValue::NULL, |p| read(n, p)).unchecked_into()
}
pub fn first_element_child(n: &Node) -> Option<Element> {
    let prop =
        by_kind(n, Prop::ElementFirstChild, Prop::DocumentFirstChild, Prop::FragmentFirstChild);
    prop.and_then(|p| read_object(n, p))
}

// ---- Element -----------------------------------------------------------------

/// `localName` (empty for what is not an element).
pub fn local_name(el: &Element) -> String {
    read_string(el, Prop::LocalName).unwrap_or_default()
}
pub fn shadow_root(el: &Element) -> Option<ShadowRoot> {
    read_object(el, Prop::ShadowRoot)
}
pub fn next_element_sibling(el: &Element) -> Option<Element> {
    read_object(el, Prop::NextElementSibling)
}
pub fn previous_element_sibling(el: &Element) -> Option<Element> {
    read_object(el, Prop::PreviousElementSibling)
}
pub fn scroll_top(el: &Element) -> i32 {
    read_number(el, Prop::ScrollTop, 0.0) as i32
}
pub fn set_scroll_top(el: &Element, px: i32) {
    write(el, Prop::ScrollTop, &px.into());
}
pub fn scroll_left(el: &Element) -> i32 {
    read_number(el, Prop::ScrollLeft, 0.0) as i32
}
pub fn set_scroll_left(el: &Element, px: i32) {
    write(el, Prop::ScrollLeft, &px.into());
}
pub fn scroll_width(el: &Element) -> i32 {
    read_number(el, Prop::ScrollWidth, 0.0) as i32
}
pub fn scroll_height(el: &Element) -> i32 {
    read_number(el, Prop::ScrollHeight, 0.0) as i32
}
pub fn client_width(el: &Element) -> i32 {
    read_number(el, Prop::ClientWidth, 0.0) as i32
}
pub fn client_height(el: &Element) -> i32 {
    read_number(el, Prop::ClientHeight, 0.0) as i32
}

/// Whether `el` is an HTML element (of any realm): SVG and MathML elements
/// have no `click`, `focus` or `isContentEditable` of `HTMLElement`'s.
pub fn is_html(el: &Element) -> bool {
    read_string(el, Prop::NamespaceUri).is_some_and(|ns| ns == "http://www.w3.org/1999/xhtml")
}

// ---- HTMLElement ---------------------------------------------------------------

/// `isContentEditable` (false for an element that is not an HTML element).
pub fn is_content_editable(el: &Element) -> bool {
    read_bool(el, Prop::IsContentEditable)
}
/// `tabIndex` (-1 for an element that is not an HTML element).
pub fn tab_index(el: &Element) -> i32 {
    read_number(el, Prop::TabIndex, -1.0) as i32
}
pub fn draggable(el: &Element) -> bool {
    read_bool(el, Prop::Draggable)
}
pub fn inner_text(el: &Element) -> String {
    read_string(el, Prop::InnerText).unwrap_or_default()
}
/// An HTML element's inline style.
pub fn style(el: &Element) -> CssStyleDeclaration {
    read(el, Prop::Style).unchecked_into()
}

// ---- HTMLFormElement -------------------------------------------------------------

/// A form's `action`: the address it is sent to, resolved against the
/// document's base URL (the page's address when the attribute is absent).
pub fn form_action(form: &Element) -> String {
    read_string(form, Prop::FormAction).unwrap_or_default()
}
/// A form's controls.
pub fn form_elements(form: &Element) -> HtmlCollection {
    read(form, Prop::FormElements).unchecked_into()
}

// ---- Document --------------------------------------------------------------------

pub fn body(doc: &Document) -> Option<HtmlElement> {
    read_object(doc, Prop::Body)
}
pub fn document_element(doc: &Document) -> Option<Element> {
    read_object(doc, Prop::DocumentElement)
}
/// The focused element of a document or a shadow root.
pub fn active_element(root: &Node) -> Option<Element> {
    let prop = by_kind(root, Prop::DocumentActive, Prop::DocumentActive, Prop::ShadowActive)?;
    read_object(root, prop)
}
/// The document's style sheets (`document.styleSheets`).
pub fn style_sheets(doc: &Document) -> JsValue {
    read(doc, Prop::StyleSheets)
}
/// The sheets adopted by the document (`document.adoptedStyleSheets`).
pub fn adopted_style_sheets(doc: &Document) -> JsValue {
    read(doc, Prop::AdoptedStyleSheets)
}
pub fn set_adopted_style_sheets(doc: &Document, sheets: &JsValue) {
    write(doc, Prop::AdoptedStyleSheets, sheets)
}
/// A shadow root's own sheets (its `<style>` and `<link>` elements').
pub fn shadow_style_sheets(root: &web_sys::ShadowRoot) -> JsValue {
    read(root, Prop::ShadowStyleSheets)
}
/// The sheets adopted by a shadow root.
pub fn shadow_adopted_style_sheets(root: &web_sys::ShadowRoot) -> JsValue {
    read(root, Prop::ShadowAdoptedStyleSheets)
}
pub fn set_shadow_adopted_style_sheets(root: &web_sys::ShadowRoot, sheets: &JsValue) {
    write(root, Prop::ShadowAdoptedStyleSheets, sheets)
}
pub fn default_view(doc: &Document) -> Option<Window> {
    read_object(doc, Prop::DefaultView)
}
pub fn title(doc: &Document) -> String {
    read_string(doc, Prop::Title).unwrap_or_default()
}
/// The document's address (`document.URL`).
pub fn url(doc: &Document) -> String {
    read_string(doc, Prop::Url).unwrap_or_default()
}
/// `checkVisibility({visibilityProperty: true})`: false for an element not
/// rendered, `display: none`, `visibility: hidden` or `content-visibility:
/// hidden`; true where the browser cannot tell.
pub fn check_visibility(el: &Element) -> bool {
    let options = Object::new();
    let _ = Reflect::set(&options, &"visibilityProperty".into(), &JsValue::TRUE);
    el.unchecked_ref::<PElement>().element_check_visibility(&options).unwrap_or(true)
}
/// `document.execCommand(command, false, value)`.
pub fn exec_command(doc: &Document, command: &str, value: Option<&str>) {
    let value = value.map_or(JsValue::UNDEFINED, JsValue::from);
    let _ = doc.unchecked_ref::<PDocument>().document_exec_command(command, false, &value);
}
pub fn get_element_by_id(doc: &Document, id: &str) -> Option<Element> {
    doc.unchecked_ref::<PDocument>().document_get_element_by_id(id)
}

// ---- Methods: bound to the prototype (`final`) ----------------------------------

#[wasm_bindgen]
extern "C" {
    // The interfaces, named for the methods below (each called as
    // `Interface.prototype.method.call(this, …)`).
    #[wasm_bindgen(js_name = Node)]
    type PNode;
    #[wasm_bindgen(js_name = Element)]
    type PElement;
    #[wasm_bindgen(js_name = HTMLElement)]
    type PHtmlElement;
    #[wasm_bindgen(js_name = EventTarget)]
    type PEventTarget;
    #[wasm_bindgen(js_name = Document)]
    type PDocument;
    #[wasm_bindgen(js_name = DocumentFragment)]
    type PFragment;
    #[wasm_bindgen(js_name = ShadowRoot)]
    type PShadowRoot;
    #[wasm_bindgen(js_name = HTMLFormElement)]
    type PForm;
    #[wasm_bindgen(js_name = HTMLSlotElement)]
    type PSlot;

    #[wasm_bindgen(method, final, js_class = "Node", js_name = contains)]
    fn node_contains(this: &PNode, other: Option<&Node>) -> bool;
    #[wasm_bindgen(method, final, js_class = "Node", js_name = getRootNode)]
    fn node_get_root_node(this: &PNode) -> Node;
    #[wasm_bindgen(method, final, catch, js_class = "Node", js_name = appendChild)]
    fn node_append_child(this: &PNode, child: &Node) -> Result<Node, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Node", js_name = removeChild)]
    fn node_remove_child(this: &PNode, child: &Node) -> Result<Node, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Node", js_name = insertBefore)]
    fn node_insert_before(
        this: &PNode,
        child: &Node,
        before: Option<&Node>,
    ) -> Result<Node, JsValue>;

    #[wasm_bindgen(method, final, js_class = "Node", js_name = compareDocumentPosition)]
    fn node_compare_document_position(this: &PNode, other: &Node) -> u16;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = getElementsByTagName)]
    fn element_get_elements_by_tag_name(this: &PElement, tag: &str) -> HtmlCollection;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = scrollBy)]
    fn element_scroll_by(this: &PElement, options: &web_sys::ScrollToOptions);
    #[wasm_bindgen(method, final, js_class = "Element", js_name = getAttribute)]
    fn element_get_attribute(this: &PElement, name: &str) -> Option<String>;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = getAttribute)]
    fn element_get_attribute_js(this: &PElement, name: &JsString) -> Option<String>;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = hasAttributes)]
    fn element_has_attributes(this: &PElement) -> bool;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = hasAttribute)]
    fn element_has_attribute(this: &PElement, name: &str) -> bool;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = hasAttribute)]
    fn element_has_attribute_js(this: &PElement, name: &JsString) -> bool;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = setAttribute)]
    fn element_set_attribute(this: &PElement, name: &str, value: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = removeAttribute)]
    fn element_remove_attribute(this: &PElement, name: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = matches)]
    fn element_matches(this: &PElement, selector: &str) -> Result<bool, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = matches)]
    fn element_matches_js(this: &PElement, selector: &JsString) -> Result<bool, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = closest)]
    fn element_closest(this: &PElement, selector: &str) -> Result<Option<Element>, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = querySelector)]
    fn element_query_selector(this: &PElement, selector: &str) -> Result<Option<Element>, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = querySelectorAll)]
    fn element_query_selector_all(this: &PElement, selector: &str) -> Result<NodeList, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Document", js_name = querySelector)]
    fn document_query_selector(
        this: &PDocument,
        selector: &str,
    ) -> Result<Option<Element>, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Document", js_name = querySelectorAll)]
    fn document_query_selector_all(this: &PDocument, selector: &str) -> Result<NodeList, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "DocumentFragment", js_name = querySelector)]
    fn fragment_query_selector(
        this: &PFragment,
        selector: &str,
    ) -> Result<Option<Element>, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "DocumentFragment", js_name = querySelectorAll)]
    fn fragment_query_selector_all(this: &PFragment, selector: &str) -> Result<NodeList, JsValue>;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = getBoundingClientRect)]
    fn element_get_bounding_client_rect(this: &PElement) -> DomRect;
    #[wasm_bindgen(method, final, js_class = "Element", js_name = scrollIntoView)]
    fn element_scroll_into_view(this: &PElement, options: &JsValue);

    #[wasm_bindgen(method, final, js_class = "HTMLElement", js_name = click)]
    fn html_click(this: &PHtmlElement);
    #[wasm_bindgen(method, final, catch, js_class = "HTMLElement", js_name = focus)]
    fn html_focus(this: &PHtmlElement) -> Result<(), JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "HTMLElement", js_name = blur)]
    fn html_blur(this: &PHtmlElement) -> Result<(), JsValue>;

    #[wasm_bindgen(method, final, catch, js_class = "EventTarget", js_name = dispatchEvent)]
    fn target_dispatch_event(this: &PEventTarget, event: &web_sys::Event) -> Result<bool, JsValue>;

    #[wasm_bindgen(method, final, js_class = "Document", js_name = elementFromPoint)]
    fn document_element_from_point(this: &PDocument, x: f32, y: f32) -> Option<Element>;
    #[wasm_bindgen(method, final, js_class = "ShadowRoot", js_name = elementFromPoint)]
    fn shadow_element_from_point(this: &PShadowRoot, x: f32, y: f32) -> Option<Element>;
    #[wasm_bindgen(method, final, js_class = "HTMLSlotElement", js_name = assignedNodes)]
    fn slot_assigned_nodes(this: &PSlot) -> js_sys::Array;
    #[wasm_bindgen(method, final, catch, js_class = "Element", js_name = checkVisibility)]
    fn element_check_visibility(this: &PElement, options: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Document", js_name = execCommand)]
    fn document_exec_command(
        this: &PDocument,
        command: &str,
        ui: bool,
        value: &JsValue,
    ) -> Result<bool, JsValue>;
    #[wasm_bindgen(method, final, js_class = "Document", js_name = getElementById)]
    fn document_get_element_by_id(this: &PDocument, id: &str) -> Option<Element>;
    #[wasm_bindgen(method, final, catch, js_class = "EventTarget", js_name = addEventListener)]
    fn target_add_event_listener(
        this: &PEventTarget,
        kind: &str,
        listener: &Function,
        options: &JsValue,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "EventTarget", js_name = removeEventListener)]
    fn target_remove_event_listener(
        this: &PEventTarget,
        kind: &str,
        listener: &Function,
        capture: bool,
    ) -> Result<(), JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Document", js_name = createElement)]
    fn document_create_element(this: &PDocument, tag: &str) -> Result<Element, JsValue>;
    #[wasm_bindgen(method, final, catch, js_class = "Document", js_name = getSelection)]
    fn document_get_selection(this: &PDocument) -> Result<Option<web_sys::Selection>, JsValue>;

    #[wasm_bindgen(method, final, catch, js_class = "HTMLFormElement", js_name = requestSubmit)]
    fn form_request_submit(this: &PForm) -> Result<(), JsValue>;
}

pub fn contains(n: &Node, other: Option<&Node>) -> bool {
    n.unchecked_ref::<PNode>().node_contains(other)
}
pub fn get_root_node(n: &Node) -> Node {
    n.unchecked_ref::<PNode>().node_get_root_node()
}
pub fn append_child(parent: &Node, child: &Node) -> Result<Node, JsValue> {
    parent.unchecked_ref::<PNode>().node_append_child(child)
}
pub fn remove_child(parent: &Node, child: &Node) -> Result<Node, JsValue> {
    parent.unchecked_ref::<PNode>().node_remove_child(child)
}
pub fn insert_before(parent: &Node, child: &Node, before: Option<&Node>) -> Result<Node, JsValue> {
    parent.unchecked_ref::<PNode>().node_insert_before(child, before)
}

/// `compareDocumentPosition(other)`'s bits.
pub fn compare_document_position(n: &Node, other: &Node) -> u16 {
    n.unchecked_ref::<PNode>().node_compare_document_position(other)
}
/// `getElementsByTagName(tag)` (a live list).
pub fn get_elements_by_tag_name(el: &Element, tag: &str) -> HtmlCollection {
    el.unchecked_ref::<PElement>().element_get_elements_by_tag_name(tag)
}
/// `scrollBy(options)`.
pub fn scroll_by(el: &Element, options: &web_sys::ScrollToOptions) {
    el.unchecked_ref::<PElement>().element_scroll_by(options)
}
pub fn get_attribute(el: &Element, name: &str) -> Option<String> {
    el.unchecked_ref::<PElement>().element_get_attribute(name)
}
/// `getAttribute` with a name already made a JavaScript string.
pub fn get_attribute_js(el: &Element, name: &JsString) -> Option<String> {
    el.unchecked_ref::<PElement>().element_get_attribute_js(name)
}
pub fn has_attribute(el: &Element, name: &str) -> bool {
    el.unchecked_ref::<PElement>().element_has_attribute(name)
}
/// Whether the element has any attribute.
pub fn has_attributes(el: &Element) -> bool {
    el.unchecked_ref::<PElement>().element_has_attributes()
}
pub fn has_attribute_js(el: &Element, name: &JsString) -> bool {
    el.unchecked_ref::<PElement>().element_has_attribute_js(name)
}
pub fn set_attribute(el: &Element, name: &str, value: &str) -> Result<(), JsValue> {
    el.unchecked_ref::<PElement>().element_set_attribute(name, value)
}
pub fn remove_attribute(el: &Element, name: &str) -> Result<(), JsValue> {
    el.unchecked_ref::<PElement>().element_remove_attribute(name)
}
pub fn matches(el: &Element, selector: &str) -> Result<bool, JsValue> {
    el.unchecked_ref::<PElement>().element_matches(selector)
}
pub fn matches_js(el: &Element, selector: &JsString) -> Result<bool, JsValue> {
    el.unchecked_ref::<PElement>().element_matches_js(selector)
}
pub fn closest(el: &Element, selector: &str) -> Result<Option<Element>, JsValue> {
    el.unchecked_ref::<PElement>().element_closest(selector)
}
/// `querySelector` of an element, document or fragment (shadow root).
pub fn query_selector(n: &Node, selector: &str) -> Result<Option<Element>, JsValue> {
    match node_type(n) {
        Node::DOCUMENT_NODE => n.unchecked_ref::<PDocument>().document_query_selector(selector),
        Node::DOCUMENT_FRAGMENT_NODE => {
            n.unchecked_ref::<PFragment>().fragment_query_selector(selector)
        }
        _ => n.unchecked_ref::<PElement>().element_query_selector(selector),
    }
}
/// `querySelectorAll` of an element, document or fragment (shadow root).
pub fn query_selector_all(n: &Node, selector: &str) -> Result<NodeList, JsValue> {
    match node_type(n) {
        Node::DOCUMENT_NODE => n.unchecked_ref::<PDocument>().document_query_selector_all(selector),
        Node::DOCUMENT_FRAGMENT_NODE => {
            n.unchecked_ref::<PFragment>().fragment_query_selector_all(selector)
        }
        _ => n.unchecked_ref::<PElement>().element_query_selector_all(selector),
    }
}
pub fn get_bounding_client_rect(el: &Element) -> DomRect {
    el.unchecked_ref::<PElement>().element_get_bounding_client_rect()
}
/// `getBoundingClientRect()`'s box as numbers: one call to the page
/// instead of five (the method, then `x`, `y`, `width` and `height` each
/// read through its own call).
pub fn client_rect(el: &Element) -> Rect {
    let mut out = [0.0; 4];
    reader_rect(el, &mut out);
    Rect { x: out[0], y: out[1], width: out[2], height: out[3] }
}
/// The computed style values of `el` in `window` for `names` (JavaScript
/// strings), each after the one before and a U+001F (which a computed
/// value never holds: CSS escapes control characters); `None` when the
/// window has none for it. One call to the page instead of one per value,
/// which writes them into this module's memory.
pub fn computed_values(window: &Window, el: &Element, names: &js_sys::Array) -> Option<String> {
    /// The buffer's size (grown for a longer value, a picture's `data:`
    /// address say, and back after it).
    const SIZE: usize = 1024;
    thread_local! {
        /// Where the values are written.
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; SIZE]);
    }
    /// What the reader answers when the window has no style for `el`.
    const NO_STYLE: i32 = -1;
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        let values = loop {
            match reader_style(window, el, names, &mut buf) {
                n if n >= 0 => break String::from_utf8(buf[..n as usize].to_vec()).ok(),
                NO_STYLE => return None,
                need => buf.resize(need.unsigned_abs() as usize, 0),
            }
        };
        buf.truncate(SIZE);
        buf.shrink_to(SIZE);
        values
    })
}
/// `scrollIntoView(options)`.
pub fn scroll_into_view(el: &Element, options: &web_sys::ScrollIntoViewOptions) {
    el.unchecked_ref::<PElement>().element_scroll_into_view(options)
}
/// `HTMLElement.click()`; nothing for an element that is not an HTML one.
pub fn click(el: &Element) {
    if is_html(el) {
        el.unchecked_ref::<PHtmlElement>().html_click()
    }
}
pub fn focus(el: &Element) -> Result<(), JsValue> {
    if is_html(el) { el.unchecked_ref::<PHtmlElement>().html_focus() } else { Ok(()) }
}
pub fn blur(el: &Element) -> Result<(), JsValue> {
    if is_html(el) { el.unchecked_ref::<PHtmlElement>().html_blur() } else { Ok(()) }
}
/// `addEventListener(kind, listener, options)` (`options`: a boolean for
/// the capture phase, or an options object).
pub fn add_event_listener(
    target: &EventTarget,
    kind: &str,
    listener: &Function,
    options: &JsValue,
) -> Result<(), JsValue> {
    target.unchecked_ref::<PEventTarget>().target_add_event_listener(kind, listener, options)
}
pub fn remove_event_listener(
    target: &EventTarget,
    kind: &str,
    listener: &Function,
    capture: bool,
) -> Result<(), JsValue> {
    target.unchecked_ref::<PEventTarget>().target_remove_event_listener(kind, listener, capture)
}
pub fn dispatch_event(target: &EventTarget, event: &web_sys::Event) -> Result<bool, JsValue> {
    target.unchecked_ref::<PEventTarget>().target_dispatch_event(event)
}

/// The topmost element at a point of a document's or shadow root's viewport.
/// What a `<slot>` shows: the light nodes assigned to it (empty when none
/// are, and the slot shows its own children). `el` must be a `slot` by
/// [`local_name`] (an HTML one: a slot of another namespace has no such
/// method).
pub fn assigned_nodes(el: &Element) -> Vec<Node> {
    if !is_html(el) {
        return Vec::new();
    }
    el.unchecked_ref::<PSlot>().slot_assigned_nodes().iter().map(JsCast::unchecked_into).collect()
}

pub fn element_from_point(root: &Node, x: f32, y: f32) -> Option<Element> {
    match node_type(root) {
        Node::DOCUMENT_NODE => root.unchecked_ref::<PDocument>().document_element_from_point(x, y),
        Node::DOCUMENT_FRAGMENT_NODE => {
            root.unchecked_ref::<PShadowRoot>().shadow_element_from_point(x, y)
        }
        _ => None,
    }
}
pub fn create_element(doc: &Document, tag: &str) -> Result<Element, JsValue> {
    doc.unchecked_ref::<PDocument>().document_create_element(tag)
}
pub fn get_selection(doc: &Document) -> Result<Option<web_sys::Selection>, JsValue> {
    doc.unchecked_ref::<PDocument>().document_get_selection()
}
/// `form.requestSubmit()`: sends the form as its submit button would
/// (validation, the `submit` event).
pub fn request_submit(form: &Element) -> Result<(), JsValue> {
    form.unchecked_ref::<PForm>().form_request_submit()
}

#[cfg(test)]
mod tests {
    /// The web-sys reads this module replaces, as they appear in code.
    const REPLACED: &[&str] = &[
        ".parent_node()",
        ".parent_element()",
        ".first_child()",
        ".last_child()",
        ".next_sibling()",
        ".previous_sibling()",
        ".child_nodes()",
        ".node_type()",
        ".node_value()",
        ".text_content()",
        ".is_connected()",
        ".owner_document()",
        ".local_name()",
        ".shadow_root()",
        ".children()",
        ".first_element_child()",
        ".next_element_sibling()",
        ".scroll_top()",
        ".set_scroll_top(",
        ".scroll_left()",
        ".scroll_width()",
        ".scroll_height()",
        ".client_width()",
        ".client_height()",
        ".is_content_editable()",
        ".draggable()",
        ".inner_text()",
        ".get_attribute(",
        ".has_attribute(",
        ".has_attributes()",
        ".contains(Some(",
        ".node_name()",
        ".set_text_content(",
        ".tab_index()",
        ".get_elements_by_tag_name(",
        ".compare_document_position(",
        ".set_attribute(",
        ".remove_attribute(",
        ".closest(",
        ".query_selector(",
        ".query_selector_all(",
        ".get_bounding_client_rect()",
        ".get_root_node()",
        ".append_child(",
        ".remove_child(",
        ".insert_before(",
        ".body()",
        ".document_element()",
        ".active_element()",
        ".default_view()",
        ".element_from_point(",
        ".create_element(",
        ".get_selection()",
        ".dispatch_event(",
        ".action()",
        ".get_element_by_id(",
        ".exec_command(",
        ".title()",
        "\"checkVisibility\"",
        "\"requestSubmit\"",
        "\"execCommand\"",
        "js_name = getAttribute",
        "js_name = hasAttribute",
        "js_name = matches",
    ];

    /// No module but this one reads a node's properties through web-sys
    /// (which a form's or document's named children can shadow).
    #[test]
    fn nothing_reads_the_dom_around_this_module() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        // Every module, in folders too (`observe/`).
        let mut files = Vec::new();
        let mut dirs = vec![dir];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        assert!(files.iter().any(|p| p.ends_with("observe/walk.rs")), "the walk reads the DOM");
        for path in files {
            if path.ends_with("src/proto.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for r in REPLACED {
                    if code.contains(r) {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(found.is_empty(), "read these through crate::proto:\n{}", found.join("\n"));
    }
}

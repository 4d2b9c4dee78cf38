//! The label of every form field, found once per observation.
//!
//! `field.labels` is a live list that Chromium fills by walking the whole
//! document (or shadow root) for labels pointing at the field, and keeps
//! only until the next change of the DOM tree. On a page with thousands of
//! fields, one inserted node (the marks overlay, a re-render) makes the next
//! observation walk the document once per field: seconds on a 50,000-element
//! page. Here each document or shadow root is searched once per
//! observation: its `<label>`s in tree order, each one's `control`, the
//! first label of a control kept (what `labels[0]` is).

use crate::proto;
use wasm_bindgen::JsCast;
use web_sys::{Document, DocumentFragment, Element, HtmlLabelElement, Node};

use crate::dom::{self, DOCUMENT_NODE, FRAGMENT_NODE};

/// Controls → their first label, per document or shadow root, built the
/// first time a field of that root asks.
#[derive(Default)]
pub struct Labels {
    /// (root, control → first label) for each root searched so far.
    roots: Vec<(Node, js_sys::Map)>,
}

impl Labels {
    /// The text of `field`'s first `<label>`, as [`dom::field_label`] reads it
    /// (`None` without one: what names it then is `visual_label`'s).
    pub fn of(&mut self, field: &Element) -> Option<String> {
        let root = proto::get_root_node(&field);
        let at = match self.roots.iter().position(|(r, _)| *r == root) {
            Some(i) => i,
            None => {
                self.roots.push((root.clone(), index(&root)));
                self.roots.len() - 1
            }
        };
        let label = self.roots[at].1.get(field);
        if label.is_undefined() {
            return None;
        }
        dom::label_text_of(label.unchecked_ref::<Node>())
    }
}

/// control → first label, for the labels of one document or shadow root.
fn index(root: &Node) -> js_sys::Map {
    let map = js_sys::Map::new();
    let list = match proto::node_type(&root) {
        DOCUMENT_NODE => proto::query_selector_all(&root.unchecked_ref::<Document>(), "label"),
        FRAGMENT_NODE => {
            proto::query_selector_all(&root.unchecked_ref::<DocumentFragment>(), "label")
        }
        _ => return map,
    };
    let Ok(list) = list else { return map };
    for i in 0..list.length() {
        let Some(label) = list.item(i) else { continue };
        let Some(control) = label.unchecked_ref::<HtmlLabelElement>().control() else {
            continue;
        };
        if !map.has(&control) {
            map.set(&control, &label);
        }
    }
    map
}

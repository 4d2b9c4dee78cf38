//! The incremental part: computed-style verdicts cached per element, and a
//! `MutationObserver` on the top document that keeps the set of nodes
//! changed since the last observation. The next walk reads the style only
//! of changed elements and their descendants (and of new ones); everything
//! else comes from the cache. A change of window size, or of a `<style>`,
//! `<link>` or anything in `<head>`, empties the cache.

use std::cell::RefCell;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, MutationObserver, MutationObserverInit, MutationRecord};

use super::StyleBits;
use crate::proto;

struct State {
    observer: MutationObserver,
    _callback: Closure<dyn FnMut(js_sys::Array)>,
    /// element → packed [`StyleBits`].
    cache: js_sys::Map,
    /// Nodes changed since the last observation.
    dirty: js_sys::Set,
    size: (f64, f64),
    document: Document,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn pack(s: StyleBits) -> f64 {
    let mut n = 0u32;
    for (i, b) in [
        s.skip, s.shown, s.block, s.pointer, s.contents, s.scrolls, s.boxed, s.image, s.hover,
        s.row, s.grab,
    ]
    .into_iter()
    .enumerate()
    {
        if b {
            n |= 1 << i;
        }
    }
    f64::from(n)
}

fn unpack(v: f64) -> StyleBits {
    let n = v as u32;
    let bit = |i: u32| n & (1 << i) != 0;
    StyleBits {
        skip: bit(0),
        shown: bit(1),
        block: bit(2),
        pointer: bit(3),
        contents: bit(4),
        scrolls: bit(5),
        boxed: bit(6),
        image: bit(7),
        hover: bit(8),
        row: bit(9),
        grab: bit(10),
    }
}

/// Records one batch of mutations.
fn record(records: js_sys::Array) {
    STATE.with(|s| {
        let s = s.borrow();
        let Some(s) = s.as_ref() else { return };
        for r in records.iter() {
            let r: MutationRecord = r.unchecked_into();
            let Some(target) = r.target() else { continue };
            let styling = proto::node_name(&target).eq_ignore_ascii_case("head")
                || proto::node_name(&target).eq_ignore_ascii_case("style")
                || proto::node_name(&target).eq_ignore_ascii_case("link")
                || proto::parent_node(&target)
                    .is_some_and(|p| proto::node_name(&p).eq_ignore_ascii_case("head"));
            if styling {
                s.cache.clear();
            }
            s.dirty.add(&target);
        }
    });
}

/// Starts an observation: sets the observer up the first time, empties
/// the cache when the document or the window size changed.
pub fn begin(document: &Document, width: f64, height: f64) {
    // Deliver the changes made since the last observation now.
    let pending = STATE.with(|s| s.borrow().as_ref().map(|s| s.observer.take_records()));
    if let Some(p) = pending {
        record(p);
    }
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(st) = s.as_ref() {
            if st.document != *document || st.size != (width, height) {
                st.cache.clear();
                st.dirty.clear();
            }
        }
        if s.as_ref().is_none_or(|st| st.document != *document) {
            if let Some(old) = s.take() {
                old.observer.disconnect();
            }
            let callback = Closure::<dyn FnMut(js_sys::Array)>::new(record);
            let Ok(observer) = MutationObserver::new(callback.as_ref().unchecked_ref()) else {
                return;
            };
            let init = MutationObserverInit::new();
            init.set_subtree(true);
            init.set_child_list(true);
            init.set_attributes(true);
            if let Some(root) = proto::document_element(&document) {
                if observer.observe_with_options(&root, &init).is_err() {
                    return;
                }
            }
            *s = Some(State {
                observer,
                _callback: callback,
                cache: js_sys::Map::new(),
                dirty: js_sys::Set::new(&JsValue::UNDEFINED),
                size: (width, height),
                document: document.clone(),
            });
        }
        if let Some(st) = s.as_mut() {
            st.size = (width, height);
        }
    });
}

/// Ends an observation: the changes seen are dealt with, and Errand's
/// own writes since (the overlay) are dropped.
pub fn end() {
    STATE.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            let _ = s.observer.take_records();
            s.dirty.clear();
        }
    });
}

/// Runs `write` (Errand's own DOM writes) unseen by this observer.
pub fn own_writes<T>(write: impl FnOnce() -> T) -> T {
    let observer = STATE.with(|s| s.borrow().as_ref().map(|s| s.observer.clone()));
    crate::dom::writes_unseen(observer.as_ref(), record, write)
}

/// Records that `node`'s computed style changed without a mutation
/// (a transition or animation ended).
pub fn mark(node: &web_sys::Node) {
    STATE.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            s.dirty.add(node);
        }
    });
}

/// Whether the element changed since the last observation.
/// Forgets every element's style (a change of style sheets the
/// observer cannot see: the emulated hover's adopted sheet).
pub fn clear() {
    STATE.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            s.cache.clear();
        }
    });
}

pub fn is_dirty(el: &Element) -> bool {
    STATE.with(|s| s.borrow().as_ref().is_none_or(|s| s.dirty.has(el)))
}

pub fn get(el: &Element) -> Option<StyleBits> {
    STATE.with(|s| s.borrow().as_ref().and_then(|s| s.cache.get(el).as_f64()).map(unpack))
}

pub fn put(el: &Element, bits: StyleBits) {
    STATE.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            s.cache.set(el, &pack(bits).into());
        }
    });
}

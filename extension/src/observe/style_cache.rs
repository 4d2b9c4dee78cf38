//! The incremental part: computed-style verdicts cached per element, and a
//! `MutationObserver` on the top document that keeps the set of nodes
//! changed since the last observation. The next walk reads the style only
//! of changed elements and their descendants (and of new ones); everything
//! else comes from the cache. A change of window size, or of a `<style>`,
//! `<link>` or anything in `<head>`, empties the cache.

use std::cell::{Cell, RefCell};

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
    /// Whether `dirty` may hold a node (false: asking it is a call to the
    /// page saved, for every element of a walk).
    dirty_any: Cell<bool>,
    /// Whether anything was put in `cache` since it was last emptied.
    cache_any: Cell<bool>,
    /// Whether `cache` held anything when this walk began: a first walk
    /// (or one after the cache was emptied) does not ask it per element.
    cache_filled: Cell<bool>,
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
        s.row, s.grab, s.reveals,
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
        reveals: bit(11),
    }
}

impl State {
    fn empty_cache(&self) {
        self.cache.clear();
        self.cache_any.set(false);
        self.cache_filled.set(false);
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
                s.empty_cache();
            }
            s.dirty.add(&target);
            s.dirty_any.set(true);
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
                st.empty_cache();
                st.dirty.clear();
                st.dirty_any.set(false);
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
                dirty_any: Cell::new(false),
                cache_any: Cell::new(false),
                cache_filled: Cell::new(false),
                size: (width, height),
                document: document.clone(),
            });
        }
        if let Some(st) = s.as_mut() {
            st.size = (width, height);
            st.cache_filled.set(st.cache_any.get());
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
            s.dirty_any.set(false);
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
            s.dirty_any.set(true);
        }
    });
}

/// Whether the element changed since the last observation.
/// Forgets every element's style (a change of style sheets the
/// observer cannot see: the emulated hover's adopted sheet).
pub fn clear() {
    STATE.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            s.empty_cache();
        }
    });
}

pub fn is_dirty(el: &Element) -> bool {
    STATE.with(|s| s.borrow().as_ref().is_none_or(|s| s.dirty_any.get() && s.dirty.has(el)))
}

pub fn get(el: &Element) -> Option<StyleBits> {
    STATE.with(|s| {
        s.borrow().as_ref().and_then(|s| crate::number_map::get(&s.cache, el)).map(unpack)
    })
}

/// [`get`] for the walk's visit of `el`: only what an earlier walk kept
/// (the walk visits each element once, so when the cache was empty as it
/// began, asking it is a call to the page per element for nothing).
pub fn get_kept(el: &Element) -> Option<StyleBits> {
    STATE.with(|s| {
        let s = s.borrow();
        let s = s.as_ref().filter(|s| s.cache_filled.get())?;
        crate::number_map::get(&s.cache, el).map(unpack)
    })
}

pub fn put(el: &Element, bits: StyleBits) {
    STATE.with(|s| {
        if let Some(s) = s.borrow().as_ref() {
            crate::number_map::set(&s.cache, el, pack(bits));
            s.cache_any.set(true);
        }
    });
}

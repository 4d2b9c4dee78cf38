//! Which elements have listeners a person's click, tap or key reaches.
//!
//! The page's listeners are invisible from the content script's isolated
//! world, and `chrome.debugger` is not used. `extension/main-listeners.js`
//! runs in the page's world before any page script and notes every element
//! given a `click`, `mousedown`/`up`, `pointerdown`/`up`, `touchstart`/`end`
//! or key listener (or an `onclick`-style property), and, under a
//! framework's root that delegates every kind of event (React's container),
//! every element whose own properties hold that framework's handler props
//! for them (`__reactProps$…` with `onClick`, `onDoubleClick`…). Asked with an
//! `errand-listeners-ask` event on a document, it dispatches an
//! `errand-listener` event on each element noted since the last ask that is
//! in the page; this module listens for those events in the capture phase
//! on the document, stops them there, and keeps their targets (the first
//! node of the composed path: inside open shadow roots too) in a JS
//! `WeakSet`. The set only grows, and only with elements: a page forging
//! the events can make an element a candidate for the list, nothing more
//! (SECURITY.md).

use std::cell::RefCell;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, Event, Node};

const ASK: &str = "errand-listeners-ask";
const MARK: &str = "errand-listener";

struct State {
    /// The elements with such listeners.
    set: js_sys::WeakSet,
    /// How many were handed over (none: nothing to ask of each element).
    count: u32,
    /// The documents listened on.
    documents: js_sys::WeakSet,
    /// Elements handed over since [`take_fresh`].
    fresh: Vec<Node>,
    on_mark: Closure<dyn FnMut(Event)>,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn on_mark(e: Event) {
    e.stop_immediate_propagation();
    let Some(target) = e.composed_path().get(0).dyn_into::<js_sys::Object>().ok() else {
        return;
    };
    // An element of this window or of a same-origin frame's (another
    // realm: no `instanceof` here).
    let element = js_sys::Reflect::get(&target, &JsValue::from_str("nodeType"))
        .ok()
        .and_then(|t| t.as_f64())
        .is_some_and(|t| t == 1.0);
    if !element {
        return;
    }
    STATE.with(|s| {
        if let Some(s) = s.borrow_mut().as_mut() {
            if !s.set.has(&target) {
                s.set.add(&target);
                s.count += 1;
                s.fresh.push(target.unchecked_into());
            }
        }
    });
}

/// Listens on `document` (once) and asks its page-world script for the
/// elements noted since the last ask; they arrive before this returns
/// (events are dispatched synchronously).
pub fn refresh(document: &Document) {
    let listen = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let s = s.get_or_insert_with(|| State {
            set: js_sys::WeakSet::new(),
            count: 0,
            documents: js_sys::WeakSet::new(),
            fresh: Vec::new(),
            on_mark: Closure::new(on_mark),
        });
        if s.documents.has(document) {
            return None;
        }
        s.documents.add(document);
        Some(s.on_mark.as_ref().clone())
    });
    if let Some(f) = listen {
        let _ = document.add_event_listener_with_callback_and_bool(MARK, f.unchecked_ref(), true);
    }
    if let Ok(ask) = Event::new(ASK) {
        let _ = crate::proto::dispatch_event(document.as_ref(), &ask);
    }
}

/// Whether `el` has such a listener (as last asked).
pub fn has(el: &Element) -> bool {
    STATE.with(|s| s.borrow().as_ref().is_some_and(|s| s.count > 0 && s.set.has(el)))
}

/// The elements handed over since the last call: for a re-observation,
/// they changed.
pub fn take_fresh() -> Vec<Node> {
    STATE
        .with(|s| s.borrow_mut().as_mut().map(|s| std::mem::take(&mut s.fresh)).unwrap_or_default())
}

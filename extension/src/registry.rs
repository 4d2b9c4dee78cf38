//! The numbers the model uses for elements, kept inside the content script.
//!
//! Nothing is written into the page: a `js_sys::Map` keyed by the element
//! itself gives an element's number in O(1), and a vector gives the element
//! for a number. A number stays with its element while the element lives;
//! new elements get the next number. Numbers start at 1.

use crate::proto;
use std::cell::RefCell;

use errand_protocol::ErrorCode;
use web_sys::Element;

use crate::Fail;

/// Element ↔ number, both ways.
struct Registry {
    /// element → number (a JS number).
    by_element: js_sys::Map,
    /// number − 1 → element; `None` once the element left the page.
    slots: Vec<Option<Element>>,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry {
        by_element: js_sys::Map::new(),
        slots: Vec::new(),
    });
}

/// The element's number, giving it the next one if it has none yet.
pub fn number_of(el: &Element) -> u32 {
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        if let Some(n) = crate::number_map::get(&r.by_element, el) {
            return n as u32;
        }
        r.slots.push(Some(el.clone()));
        let n = r.slots.len() as u32;
        crate::number_map::set(&r.by_element, el, f64::from(n));
        n
    })
}

/// The element's number, if it has one (giving none).
pub fn known(el: &Element) -> Option<u32> {
    REGISTRY.with(|r| crate::number_map::get(&r.borrow().by_element, el).map(|n| n as u32))
}

// ---- frames.rs: numbers for elements of cross-origin frames ----

/// The next number, for an element that lives in a cross-origin frame
/// (`frames/` keeps which one); no element of this document gets it.
pub fn new_number() -> u32 {
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        r.slots.push(None);
        r.slots.len() as u32
    })
}

/// Forgets the elements that have left the page (their numbers are never
/// given out again), so that a long-lived page does not keep them alive.
pub fn forget_gone() {
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        let Registry { by_element, slots } = &mut *r;
        for slot in slots.iter_mut() {
            if slot.as_ref().is_some_and(|el| !proto::is_connected(&el)) {
                if let Some(el) = slot.take() {
                    by_element.delete(&el);
                }
            }
        }
    })
}

/// The element numbered `index`, or why there is none.
pub fn element(index: u32) -> Result<Element, Fail> {
    REGISTRY.with(|r| {
        let r = r.borrow();
        let slot = index.checked_sub(1).and_then(|i| r.slots.get(i as usize));
        match slot {
            None => Err(Fail::new(
                ErrorCode::NoSuchElement,
                if r.slots.is_empty() {
                    format!("there is no element [{index}]: the page has not been observed yet")
                } else {
                    format!(
                        "there is no element [{index}]: numbers so far go from 1 to {}",
                        r.slots.len()
                    )
                },
            )),
            Some(Some(el)) if proto::is_connected(&el) => Ok(el.clone()),
            Some(_) => Err(Fail::new(
                ErrorCode::ElementGone,
                format!("element [{index}] no longer exists on the page"),
            )),
        }
    })
}

/// The numbered elements still on the page, in number order.
pub fn live() -> Vec<(u32, Element)> {
    REGISTRY.with(|r| {
        let r = r.borrow();
        r.slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| slot.as_ref().map(|el| (i as u32 + 1, el.clone())))
            .filter(|(_, el)| proto::is_connected(el))
            .collect()
    })
}

//! Controls that show a pointer cursor only under the mouse: a style rule
//! `.like:hover { cursor: pointer }` (icons, menu entries, "1h ago" links)
//! leaves nothing in the computed style at rest, yet a person sees the
//! hand as soon as they point at it. The walk treats elements matching
//! such a rule (with `:hover` taken out) as having the pointer cursor.

use crate::proto;
use std::cell::RefCell;

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Document;

/// Rules read at most, over all style sheets (huge sites: the cost of
/// reading them stays bounded).
const RULES_MAX: u32 = 20_000;
/// Selectors kept at most.
const SELECTORS_MAX: usize = 200;

thread_local! {
    /// The rule counts of the sheets last read, and the selector found.
    static CACHE: RefCell<Option<(Vec<u32>, Option<String>)>> = const { RefCell::new(None) };
    /// Sheets that refused their rules (another origin's): not asked
    /// again, since each refusal is a thrown exception, and every walk
    /// reads the sheets.
    static REFUSED: js_sys::WeakSet = js_sys::WeakSet::new();
}

fn get(target: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(target, &JsValue::from_str(key)).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

fn length(v: &JsValue) -> u32 {
    get(v, "length").and_then(|l| l.as_f64()).unwrap_or(0.0) as u32
}

/// The same-origin style sheets' rule lists (cross-origin sheets refuse
/// `cssRules`).
fn rule_lists(doc: &Document) -> Vec<JsValue> {
    let sheets = proto::style_sheets(doc);
    if !sheets.is_object() {
        return Vec::new();
    }
    (0..length(&sheets))
        .filter_map(|i| Reflect::get_u32(&sheets, i).ok())
        .filter(|sheet| sheet.is_object())
        .filter_map(|sheet| {
            let sheet: js_sys::Object = sheet.unchecked_into();
            if REFUSED.with(|r| r.has(&sheet)) {
                return None;
            }
            match Reflect::get(&sheet, &JsValue::from_str("cssRules")) {
                Ok(rules) => Some(rules).filter(|v| !v.is_undefined() && !v.is_null()),
                Err(e) => {
                    let name = get(&e, "name").and_then(|n| n.as_string());
                    if name.as_deref() == Some("SecurityError") {
                        REFUSED.with(|r| r.add(&sheet));
                    }
                    None
                }
            }
        })
        .collect()
}

/// One selector (a comma-separated list) matching every element whose
/// `:hover` rule sets `cursor: pointer`, without the `:hover`; `None` when
/// the page has no such rule. Cached while the sheets' rule counts stay.
pub fn pointer_selector(doc: &Document) -> Option<String> {
    let lists = rule_lists(doc);
    let key: Vec<u32> = lists.iter().map(length).collect();
    if let Some(hit) =
        CACHE.with(|c| c.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, s)| s.clone()))
    {
        return hit;
    }
    let mut found: Vec<String> = Vec::new();
    let mut read = 0;
    'sheets: for rules in &lists {
        for j in 0..length(rules) {
            read += 1;
            if read > RULES_MAX || found.len() >= SELECTORS_MAX {
                break 'sheets;
            }
            let Ok(rule) = Reflect::get_u32(rules, j) else {
                continue;
            };
            let Some(selector) = get(&rule, "selectorText").and_then(|s| s.as_string()) else {
                continue;
            };
            if !selector.contains(":hover") {
                continue;
            }
            let cursor =
                get(&rule, "style").and_then(|s| get(&s, "cursor")).and_then(|c| c.as_string());
            if cursor.as_deref() != Some("pointer") {
                continue;
            }
            for part in selector.split(',').filter(|p| p.contains(":hover")) {
                let rest = part.replace(":hover", "");
                let rest = rest.trim();
                // `*:hover`, `:hover`, `body:hover` would make everything clickable.
                if matches!(rest, "" | "*" | "html" | "body") || found.iter().any(|f| f == rest) {
                    continue;
                }
                // What `:hover` leaves behind must still be a selector
                // (`a:hover::after` → `a::after` is not one for `matches`).
                if proto::query_selector(&doc, rest).is_ok() && !rest.contains("::") {
                    found.push(rest.to_owned());
                }
            }
        }
    }
    let selector = (!found.is_empty()).then(|| found.join(", "));
    CACHE.with(|c| *c.borrow_mut() = Some((key, selector.clone())));
    selector
}

/// `:hover` rules copied at most.
const HOVER_RULES_MAX: usize = 500;

thread_local! {
    /// The sheets' rule counts, and their `:hover` rules (selector list,
    /// declarations) as read then.
    static HOVER_RULES: RefCell<Option<(Vec<u32>, Vec<(String, String)>)>> =
        const { RefCell::new(None) };
    /// The elements hovered now (Rust memory: nothing is written on them),
    /// and the adopted sheet that gives them the `:hover` styles.
    static HOVERED: RefCell<(Vec<web_sys::Element>, Option<JsValue>)> =
        const { RefCell::new((Vec::new(), None)) };
}

/// The same-origin sheets' top-level `:hover` style rules, cached while
/// the sheets' rule counts stay.
fn hover_rules(doc: &Document) -> Vec<(String, String)> {
    let lists = rule_lists(doc);
    let key: Vec<u32> = lists.iter().map(length).collect();
    if let Some(hit) =
        HOVER_RULES.with(|c| c.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, r)| r.clone()))
    {
        return hit;
    }
    let mut found = Vec::new();
    let mut read = 0;
    'sheets: for rules in &lists {
        for j in 0..length(rules) {
            read += 1;
            if read > RULES_MAX || found.len() >= HOVER_RULES_MAX {
                break 'sheets;
            }
            let Ok(rule) = Reflect::get_u32(rules, j) else { continue };
            let Some(selector) = get(&rule, "selectorText").and_then(|s| s.as_string()) else {
                continue;
            };
            if !selector.contains(":hover") {
                continue;
            }
            let Some(body) =
                get(&rule, "style").and_then(|s| get(&s, "cssText")).and_then(|c| c.as_string())
            else {
                continue;
            };
            found.push((selector, body));
        }
    }
    HOVER_RULES.with(|c| *c.borrow_mut() = Some((key, found.clone())));
    found
}

/// `:root > :nth-child(2) > :nth-child(1)`: the element's place in its
/// document, `None` inside a shadow root (the document's sheet does not
/// reach there).
fn path(el: &web_sys::Element) -> Option<String> {
    let mut steps = Vec::new();
    let mut node = el.clone();
    loop {
        let Some(parent) = proto::parent_element(&node) else {
            // Only the root element has no parent element in a document.
            let root = proto::owner_document(&node).and_then(|d| proto::document_element(&d));
            return (root.as_ref() == Some(&node)).then(|| {
                steps.reverse();
                std::iter::once(":root".to_owned()).chain(steps).collect::<Vec<_>>().join(" > ")
            });
        };
        let mut index = 1;
        let mut sibling = proto::first_element_child(&parent);
        while let Some(s) = sibling {
            if s == node {
                break;
            }
            index += 1;
            sibling = proto::next_element_sibling(&s);
        }
        steps.push(format!(":nth-child({index})"));
        node = parent;
    }
}

/// The page's `:hover` rules with `:hover` standing for `hovered`.
fn rewrite(rules: &[(String, String)], hovered: &str) -> String {
    rules
        .iter()
        .map(|(selector, body)| format!("{} {{ {body} }}\n", selector.replace(":hover", hovered)))
        .collect()
}

/// Puts the rules into the document's adopted sheets (once).
fn adopt(doc: &Document, css: &str) -> Result<(), JsValue> {
    let sheet = match HOVERED.with(|h| h.borrow().1.clone()) {
        Some(s) => s,
        None => {
            let window = web_sys::window().ok_or(JsValue::NULL)?;
            let ctor: js_sys::Function =
                Reflect::get(&window, &JsValue::from_str("CSSStyleSheet"))?.dyn_into()?;
            let s = Reflect::construct(&ctor, &js_sys::Array::new())?;
            HOVERED.with(|h| h.borrow_mut().1 = Some(s.clone()));
            s
        }
    };
    let replace: js_sys::Function =
        Reflect::get(&sheet, &JsValue::from_str("replaceSync"))?.dyn_into()?;
    replace.call1(&sheet, &JsValue::from_str(css))?;
    let current = proto::adopted_style_sheets(doc);
    if !current.is_object() {
        return Err(JsValue::NULL);
    }
    let adopted = js_sys::Array::from(&current);
    if !adopted.includes(&sheet, 0) {
        adopted.push(&sheet);
        proto::set_adopted_style_sheets(doc, &adopted);
    }
    Ok(())
}

/// Whether a hover state is being emulated in this document.
pub fn emulating() -> bool {
    HOVERED.with(|h| !h.borrow().0.is_empty())
}

/// Gives `target` and its ancestors the hover state a real pointer over it
/// would: synthetic mouse events do not make CSS `:hover` match, so a menu
/// shown only by `li:hover > ul { display: block }` would stay shut. The
/// page's same-origin `:hover` rules are copied into a sheet adopted by the
/// document, with `:hover` replaced by `:where(<the hovered elements'
/// places>):not(.errand-unhovered)` (the same specificity as `:hover`);
/// nothing is written on the page's elements. The next observation walks
/// the whole page with fresh styles. Returns how many elements are hovered.
pub fn emulate(target: &web_sys::Element) -> usize {
    let Some(doc) = proto::owner_document(target) else { return 0 };
    let rules = hover_rules(&doc);
    let mut chain = Vec::new();
    let mut places = Vec::new();
    if !rules.is_empty() {
        let mut node = Some(target.clone());
        while let Some(n) = node {
            if let Some(p) = path(&n) {
                places.push(p);
                chain.push(n.clone());
            }
            node = crate::dom::flat_parent(&n);
        }
    }
    let before = HOVERED.with(|h| h.borrow().0.clone());
    if before == chain {
        return chain.len();
    }
    let css = if chain.is_empty() {
        String::new()
    } else {
        rewrite(&rules, &format!(":where({}):not(.errand-unhovered)", places.join(", ")))
    };
    if adopt(&doc, &css).is_err() {
        return 0;
    }
    HOVERED.with(|h| h.borrow_mut().0 = chain.clone());
    // Styles changed without a mutation: the next observation reads them
    // all again.
    crate::observe::style_cache::clear();
    crate::incremental::forget();
    chain.len()
}

/// Ends the emulated hover (the task's `cleanup`).
pub fn clear() {
    let (marked, sheet) = HOVERED.with(|h| std::mem::take(&mut *h.borrow_mut()));
    if let Some(sheet) = sheet {
        if let Ok(replace) = Reflect::get(&sheet, &JsValue::from_str("replaceSync")) {
            if let Ok(f) = replace.dyn_into::<js_sys::Function>() {
                let _ = f.call1(&sheet, &JsValue::from_str(""));
            }
        }
        HOVERED.with(|h| h.borrow_mut().1 = Some(sheet));
    }
    if !marked.is_empty() {
        crate::observe::style_cache::clear();
        crate::incremental::forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_hover_rules_for_the_hovered_places() {
        let rules = vec![(".menu li:hover > ul".to_owned(), "display: block;".to_owned())];
        assert_eq!(
            rewrite(&rules, ":where(:root > :nth-child(2)):not(.x)"),
            ".menu li:where(:root > :nth-child(2)):not(.x) > ul { display: block; }\n"
        );
    }
}

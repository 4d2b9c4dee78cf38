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
    let Some(sheets) = get(doc, "styleSheets") else {
        return Vec::new();
    };
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

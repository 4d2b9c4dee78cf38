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

/// The attribute that stands for `:hover` in the copies of the page's
/// `:hover` rules (`hover::emulate`).
const HOVER_ATTR: &str = "data-errand-hover";
/// `:hover` rules copied at most.
const HOVER_RULES_MAX: usize = 500;

/// The page's `:hover` rules, rewritten for the emulated hover state.
struct Emulation {
    /// The sheets' rule counts the rules were read at.
    key: Vec<u32>,
    /// `li[data-errand-hover] > ul { display: block }` for each rule.
    css: String,
    /// What must be hovered for a rule to apply, `:hover` taken out
    /// (`.menu li` for `.menu li:hover > ul`), as one selector list.
    subjects: Option<String>,
}

thread_local! {
    static EMULATION: RefCell<Option<Emulation>> = const { RefCell::new(None) };
    /// The elements marked hovered, and the adopted sheet.
    static HOVERED: RefCell<(Vec<web_sys::Element>, Option<JsValue>)> =
        const { RefCell::new((Vec::new(), None)) };
}

/// Each part of a selector up to the end of a compound holding `:hover`,
/// with every `:hover` taken out: `.menu li:hover > ul` → `.menu li`.
fn hover_subjects(selector: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = selector[from..].find(":hover") {
        let at = from + at;
        let mut depth = 0i32;
        let mut end = selector.len();
        for (i, c) in selector[at..].char_indices() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ' ' | '>' | '+' | '~' if depth == 0 => {
                    end = at + i;
                    break;
                }
                _ => {}
            }
        }
        let subject = selector[..end].replace(":hover", "");
        let subject = subject.split("::").next().unwrap_or("").trim().to_owned();
        if !subject.is_empty() && !out.contains(&subject) {
            out.push(subject);
        }
        from = at + ":hover".len();
    }
    out
}

/// Reads the same-origin sheets' `:hover` rules (top-level style rules),
/// cached while the sheets' rule counts stay.
fn emulation(doc: &Document) -> (String, Option<String>) {
    let lists = rule_lists(doc);
    let key: Vec<u32> = lists.iter().map(length).collect();
    if let Some(hit) = EMULATION.with(|e| {
        e.borrow().as_ref().filter(|e| e.key == key).map(|e| (e.css.clone(), e.subjects.clone()))
    }) {
        return hit;
    }
    let mut css = String::new();
    let mut subjects: Vec<String> = Vec::new();
    let mut rules_seen = 0;
    let mut read = 0;
    'sheets: for rules in &lists {
        for j in 0..length(rules) {
            read += 1;
            if read > RULES_MAX || rules_seen >= HOVER_RULES_MAX {
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
            let mut parts = Vec::new();
            for part in selector.split(',').filter(|p| p.contains(":hover")) {
                let kept: Vec<String> = hover_subjects(part)
                    .into_iter()
                    .filter(|s| !matches!(s.as_str(), "*" | "html" | "body"))
                    .filter(|s| proto::query_selector(&doc, s).is_ok())
                    .collect();
                if kept.is_empty() {
                    continue;
                }
                for s in kept {
                    if !subjects.contains(&s) {
                        subjects.push(s);
                    }
                }
                parts.push(part.replace(":hover", &format!("[{HOVER_ATTR}]")));
            }
            if parts.is_empty() {
                continue;
            }
            rules_seen += 1;
            css.push_str(&format!("{} {{ {body} }}\n", parts.join(", ")));
        }
    }
    let subjects = (!subjects.is_empty()).then(|| subjects.join(", "));
    EMULATION.with(|e| {
        *e.borrow_mut() = Some(Emulation { key, css: css.clone(), subjects: subjects.clone() })
    });
    (css, subjects)
}

/// Puts the emulation's rules into the document's adopted sheets (once).
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
    let key = JsValue::from_str("adoptedStyleSheets");
    let adopted = js_sys::Array::from(&Reflect::get(doc, &key)?);
    if !adopted.includes(&sheet, 0) {
        adopted.push(&sheet);
        Reflect::set(doc, &key, &adopted)?;
    }
    Ok(())
}

/// Whether a hover state is being emulated in this document.
pub fn emulating() -> bool {
    HOVERED.with(|h| !h.borrow().0.is_empty())
}

/// Gives `target` and its ancestors (through shadow roots) the hover state
/// a real pointer over it would: synthetic mouse events do not make CSS
/// `:hover` match, so a menu shown only by `li:hover > ul { display:
/// block }` would stay shut. The page's same-origin `:hover` rules are
/// copied into an adopted sheet with `:hover` replaced by
/// `[data-errand-hover]`, and that attribute is put on the elements of the
/// chain that such a rule hovers (and taken off those the pointer left).
/// Returns how many elements are now marked.
pub fn emulate(target: &web_sys::Element) -> usize {
    let Some(doc) = proto::owner_document(target) else { return 0 };
    let (css, subjects) = emulation(&doc);
    let mut chain = Vec::new();
    if let Some(subjects) = &subjects {
        let mut node = Some(target.clone());
        while let Some(n) = node {
            if proto::matches(&n, subjects).unwrap_or(false) {
                chain.push(n.clone());
            }
            node = crate::dom::flat_parent(&n);
        }
    }
    let before = HOVERED.with(|h| std::mem::take(&mut h.borrow_mut().0));
    for el in before.iter().filter(|e| !chain.contains(e)) {
        let _ = proto::remove_attribute(el, HOVER_ATTR);
    }
    if chain.is_empty() {
        return 0;
    }
    if adopt(&doc, &css).is_err() {
        return 0;
    }
    for el in chain.iter().filter(|e| !before.contains(e)) {
        let _ = proto::set_attribute(el, HOVER_ATTR, "");
    }
    let n = chain.len();
    HOVERED.with(|h| h.borrow_mut().0 = chain);
    n
}

/// Ends the emulated hover (the task's `cleanup`).
pub fn clear() {
    let (marked, _) = HOVERED.with(|h| std::mem::take(&mut *h.borrow_mut()));
    for el in &marked {
        let _ = proto::remove_attribute(el, HOVER_ATTR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_a_hover_rule_hovers() {
        assert_eq!(hover_subjects(".menu li:hover > ul"), vec![".menu li"]);
        assert_eq!(hover_subjects("a:hover::after"), vec!["a"]);
        assert_eq!(hover_subjects("li:hover:not(.x) ul"), vec!["li:not(.x)"]);
        assert_eq!(hover_subjects("nav:hover li:hover>ul"), vec!["nav", "nav li"]);
        assert_eq!(hover_subjects(".a[title='x y']:hover .b"), vec![".a[title='x y']"]);
    }
}

//! What the page's `:hover` rules say. Controls that show a pointer cursor
//! only under the mouse: a style rule `.like:hover { cursor: pointer }`
//! (icons, menu entries, "1h ago" links) leaves nothing in the computed
//! style at rest, yet a person sees the hand as soon as they point at it.
//! The walk treats elements matching such a rule (with `:hover` taken out)
//! as having the pointer cursor ([`pointer_selector`]), and lists the rows
//! a rule shows or hides something inside (`li:hover .destroy { display:
//! block }`: [`reveal_selector`]). The `hover` action's emulated `:hover`
//! state ([`emulate`]) applies the rules of the document and of the open
//! shadow roots the pointer is in (their own sheets, `<style>` or
//! adopted).

use crate::proto;
use std::cell::RefCell;

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, ShadowRoot};

/// Rules read at most, over all style sheets (huge sites: the cost of
/// reading them stays bounded).
const RULES_MAX: u32 = 20_000;
/// Selectors kept at most.
const SELECTORS_MAX: usize = 200;

thread_local! {
    /// The rule counts of the sheets last read, and the selectors found
    /// ([`pointer_selector`], [`reveal_selector`]).
    #[allow(clippy::type_complexity)]
    static CACHE: RefCell<Option<(Vec<u32>, (Option<String>, Option<String>))>> =
        const { RefCell::new(None) };
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
    rules_of(&proto::style_sheets(doc))
}

/// The rule lists of a list of sheets (but those that refuse them).
fn rules_of(sheets: &JsValue) -> Vec<JsValue> {
    if !sheets.is_object() {
        return Vec::new();
    }
    (0..length(sheets))
        .filter_map(|i| Reflect::get_u32(sheets, i).ok())
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
    selectors(doc).0
}

/// One selector matching every element whose `:hover` rule shows or hides
/// something inside it (`.todo-list li:hover .destroy { display: block }`
/// → `.todo-list li`: a row whose delete button appears under the
/// pointer); `None` when the page has none. Cached like
/// [`pointer_selector`].
pub fn reveal_selector(doc: &Document) -> Option<String> {
    selectors(doc).1
}

/// The hovered part of a selector whose `:hover` compound is followed by
/// a descendant or child (`li:hover .x` → `li`), without the `:hover`.
fn hovered_part(part: &str) -> Option<&str> {
    let at = part.find(":hover")?;
    let mut depth = 0;
    let mut end = part.len();
    for (i, c) in part[at..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ' ' | '>' | '+' | '~' | '\n' | '\t' if depth == 0 => {
                end = at + i;
                break;
            }
            _ => {}
        }
    }
    let rest = part[end..].trim_start();
    (!rest.is_empty() && !rest.starts_with(['+', '~'])).then(|| part[..end].trim())
}

/// A selector part with `:hover` taken out, if it still selects
/// something narrower than everything.
fn without_hover(doc: &Document, part: &str) -> Option<String> {
    let rest = part.replace(":hover", "");
    let rest = rest.trim();
    // `*:hover`, `:hover`, `body:hover` would make everything clickable.
    if matches!(rest, "" | "*" | "html" | "body") {
        return None;
    }
    // What `:hover` leaves behind must still be a selector
    // (`a:hover::after` → `a::after` is not one for `matches`).
    (proto::query_selector(&doc, rest).is_ok() && !rest.contains("::")).then(|| rest.to_owned())
}

/// [`pointer_selector`] and [`reveal_selector`], read together.
fn selectors(doc: &Document) -> (Option<String>, Option<String>) {
    let lists = rule_lists(doc);
    let key: Vec<u32> = lists.iter().map(length).collect();
    if let Some(hit) =
        CACHE.with(|c| c.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, s)| s.clone()))
    {
        return hit;
    }
    let mut pointer: Vec<String> = Vec::new();
    let mut reveal: Vec<String> = Vec::new();
    let mut read = 0;
    'sheets: for rules in &lists {
        for j in 0..length(rules) {
            read += 1;
            if read > RULES_MAX || pointer.len() + reveal.len() >= SELECTORS_MAX {
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
            let style = get(&rule, "style");
            let says =
                |name: &str| style.as_ref().and_then(|s| get(s, name)).and_then(|c| c.as_string());
            let cursor = says("cursor");
            let shows = ["display", "visibility", "opacity"]
                .iter()
                .any(|p| says(p).is_some_and(|v| !v.is_empty()));
            for part in selector.split(',').filter(|p| p.contains(":hover")) {
                if cursor.as_deref() == Some("pointer") {
                    if let Some(s) = without_hover(doc, part).filter(|s| !pointer.contains(s)) {
                        pointer.push(s);
                    }
                }
                if shows {
                    if let Some(s) = hovered_part(part)
                        .and_then(|p| without_hover(doc, p))
                        .filter(|s| !reveal.contains(s))
                    {
                        reveal.push(s);
                    }
                }
            }
        }
    }
    let join = |found: Vec<String>| (!found.is_empty()).then(|| found.join(", "));
    let found = (join(pointer), join(reveal));
    CACHE.with(|c| *c.borrow_mut() = Some((key, found.clone())));
    found
}

/// `:hover` rules copied at most.
const HOVER_RULES_MAX: usize = 500;

/// A tree that style sheets style: the document, or a shadow root (whose
/// own sheets, `<style>` inside it or adopted, style only what is in it).
#[derive(Clone, PartialEq)]
enum Scope {
    Document(Document),
    Shadow(ShadowRoot),
}

impl Scope {
    /// The tree `el` is in.
    fn of(el: &web_sys::Element) -> Option<Scope> {
        let root = proto::get_root_node(el);
        match proto::node_type(&root) {
            crate::dom::DOCUMENT_NODE => Some(Scope::Document(root.unchecked_into())),
            crate::dom::FRAGMENT_NODE => root.dyn_into::<ShadowRoot>().ok().map(Scope::Shadow),
            _ => None,
        }
    }

    fn adopted(&self) -> JsValue {
        match self {
            Scope::Document(d) => proto::adopted_style_sheets(d),
            Scope::Shadow(s) => proto::shadow_adopted_style_sheets(s),
        }
    }

    fn set_adopted(&self, sheets: &JsValue) {
        match self {
            Scope::Document(d) => proto::set_adopted_style_sheets(d, sheets),
            Scope::Shadow(s) => proto::set_shadow_adopted_style_sheets(s, sheets),
        }
    }

    /// The rule lists of its same-origin sheets and of those it adopted
    /// (but Errand's own).
    fn rule_lists(&self) -> Vec<JsValue> {
        let mut lists = match self {
            Scope::Document(d) => rule_lists(d),
            Scope::Shadow(s) => rules_of(&proto::shadow_style_sheets(s)),
        };
        let adopted = self.adopted();
        if adopted.is_object() {
            let own: Vec<JsValue> =
                HOVERED.with(|h| h.borrow().1.iter().map(|(_, s)| s.clone()).collect());
            let others: js_sys::Array =
                js_sys::Array::from(&adopted).filter(&mut |s, _, _| !own.contains(&s));
            lists.extend(rules_of(&others));
        }
        lists
    }

    /// Its `:hover` style rules (the document's cached while its sheets'
    /// rule counts stay).
    fn hover_rules(&self) -> Vec<(String, String)> {
        let lists = self.rule_lists();
        let key: Vec<u32> = lists.iter().map(length).collect();
        let document = matches!(self, Scope::Document(_));
        if document {
            if let Some(hit) = HOVER_RULES
                .with(|c| c.borrow().as_ref().filter(|(k, _)| *k == key).map(|(_, r)| r.clone()))
            {
                return hit;
            }
        }
        let found = hover_rules_in(&lists);
        if document {
            HOVER_RULES.with(|c| *c.borrow_mut() = Some((key, found.clone())));
        }
        found
    }
}

thread_local! {
    /// The document's rule counts, and its `:hover` rules (selector list,
    /// declarations) as read then.
    static HOVER_RULES: RefCell<Option<(Vec<u32>, Vec<(String, String)>)>> =
        const { RefCell::new(None) };
    /// The elements hovered now (Rust memory: nothing is written on them),
    /// and per tree the adopted sheet that gives them the `:hover` styles.
    static HOVERED: RefCell<(Vec<web_sys::Element>, Vec<(Scope, JsValue)>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The top-level `:hover` style rules of these rule lists.
fn hover_rules_in(lists: &[JsValue]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut read = 0;
    'sheets: for rules in lists {
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
    found
}

/// `:root > :nth-child(2) > :nth-child(1)`: the element's place in its
/// document, or in its shadow root `:host > :nth-child(1)` (its own
/// sheets take the host for the parent of its top-level elements), said
/// a second way too (`:nth-child(1):not(* > *)`: no element above it).
fn path(el: &web_sys::Element) -> Option<String> {
    let mut steps = Vec::new();
    let mut node = el.clone();
    loop {
        let mut index = 1;
        let mut sibling = proto::previous_element_sibling(&node);
        while let Some(s) = sibling {
            index += 1;
            sibling = proto::previous_element_sibling(&s);
        }
        let Some(parent) = proto::parent_element(&node) else {
            steps.reverse();
            return match proto::parent_node(&node) {
                // Both ways of saying a shadow root's top level (`:where`
                // drops the one a browser refuses there).
                Some(p) if proto::node_type(&p) == crate::dom::FRAGMENT_NODE => {
                    let below: String = steps.iter().map(|s| format!(" > {s}")).collect();
                    Some(format!(
                        ":host > :nth-child({index}){below}, :nth-child({index}):not(* > *){below}"
                    ))
                }
                // Only the root element has no parent element in a document.
                Some(p) if proto::node_type(&p) == crate::dom::DOCUMENT_NODE => Some(
                    std::iter::once(":root".to_owned())
                        .chain(steps)
                        .collect::<Vec<_>>()
                        .join(" > "),
                ),
                _ => None,
            };
        };
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

/// Sets the sheet Errand adopts in `scope` (made and adopted once) to
/// `css`.
fn adopt(scope: &Scope, css: &str, sheets: &mut Vec<(Scope, JsValue)>) -> Result<(), JsValue> {
    let sheet = match sheets.iter().find(|(s, _)| s == scope) {
        Some((_, sheet)) => sheet.clone(),
        None => {
            let window = web_sys::window().ok_or(JsValue::NULL)?;
            let ctor: js_sys::Function =
                Reflect::get(&window, &JsValue::from_str("CSSStyleSheet"))?.dyn_into()?;
            let s = Reflect::construct(&ctor, &js_sys::Array::new())?;
            sheets.push((scope.clone(), s.clone()));
            s
        }
    };
    replace(&sheet, css)?;
    let current = scope.adopted();
    if !current.is_object() {
        return Err(JsValue::NULL);
    }
    let adopted = js_sys::Array::from(&current);
    if !adopted.includes(&sheet, 0) {
        adopted.push(&sheet);
        scope.set_adopted(&adopted);
    }
    Ok(())
}

/// `sheet.replaceSync(css)`.
fn replace(sheet: &JsValue, css: &str) -> Result<(), JsValue> {
    let replace: js_sys::Function =
        Reflect::get(sheet, &JsValue::from_str("replaceSync"))?.dyn_into()?;
    replace.call1(sheet, &JsValue::from_str(css)).map(|_| ())
}

/// Whether a hover state is being emulated in this document.
pub fn emulating() -> bool {
    HOVERED.with(|h| !h.borrow().0.is_empty())
}

/// Gives `target` and its ancestors the hover state a real pointer over it
/// would: synthetic mouse events do not make CSS `:hover` match, so a menu
/// shown only by `li:hover > ul { display: block }` would stay shut. The
/// same-origin `:hover` rules of each tree the pointer's chain is in (the
/// document's sheets; an open shadow root's own, `<style>` inside it or
/// adopted, so that a web component's row shows its delete button) are
/// copied into a sheet adopted by that tree, with `:hover` replaced by
/// `:where(<the hovered elements' places there>):not(.errand-unhovered)`
/// (the same specificity as `:hover`); nothing is written on the page's
/// elements. The next observation walks the whole page with fresh styles.
/// Returns how many elements are hovered.
pub fn emulate(target: &web_sys::Element) -> usize {
    // Per tree: the places of the chain's elements in it, and its rules.
    let mut trees: Vec<(Scope, Vec<String>, Vec<(String, String)>)> = Vec::new();
    let mut chain = Vec::new();
    let mut node = Some(target.clone());
    while let Some(n) = node {
        if let (Some(scope), Some(place)) = (Scope::of(&n), path(&n)) {
            let i = match trees.iter().position(|t| t.0 == scope) {
                Some(i) => i,
                None => {
                    let rules = scope.hover_rules();
                    trees.push((scope, Vec::new(), rules));
                    trees.len() - 1
                }
            };
            if !trees[i].2.is_empty() {
                trees[i].1.push(place);
                chain.push(n.clone());
            }
        }
        node = crate::dom::flat_parent(&n);
    }
    let before = HOVERED.with(|h| h.borrow().0.clone());
    if before == chain {
        return chain.len();
    }
    let mut sheets = HOVERED.with(|h| std::mem::take(&mut h.borrow_mut().1));
    // The trees hovered before and not now lose their hover styles.
    for (scope, sheet) in &sheets {
        if !trees.iter().any(|t| &t.0 == scope && !t.1.is_empty()) {
            let _ = replace(sheet, "");
        }
    }
    let mut styled = Vec::new();
    for (scope, places, rules) in trees.iter().filter(|t| !t.1.is_empty()) {
        let css = rewrite(rules, &format!(":where({}):not(.errand-unhovered)", places.join(", ")));
        if adopt(scope, &css, &mut sheets).is_ok() {
            styled.push(scope.clone());
        }
    }
    chain.retain(|n| Scope::of(n).is_some_and(|s| styled.contains(&s)));
    HOVERED.with(|h| *h.borrow_mut() = (chain.clone(), sheets));
    // Styles changed without a mutation: the next observation reads them
    // all again.
    crate::observe::style_cache::clear();
    crate::incremental::forget();
    chain.len()
}

/// Ends the emulated hover (the task's `cleanup`).
pub fn clear() {
    let marked = HOVERED.with(|h| std::mem::take(&mut h.borrow_mut().0));
    HOVERED.with(|h| {
        for (_, sheet) in &h.borrow().1 {
            let _ = replace(sheet, "");
        }
    });
    if !marked.is_empty() {
        crate::observe::style_cache::clear();
        crate::incremental::forget();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hovered_part_is_the_compound_before_what_it_shows() {
        assert_eq!(hovered_part(".todo-list li:hover .destroy"), Some(".todo-list li:hover"));
        assert_eq!(hovered_part("li:hover > ul"), Some("li:hover"));
        assert_eq!(hovered_part("li:not(.x):hover>ul"), Some("li:not(.x):hover"));
        assert_eq!(hovered_part(".a:hover"), None);
        assert_eq!(hovered_part(".a:hover + .b"), None);
        assert_eq!(hovered_part("a:hover::after"), None);
    }

    #[test]
    fn rewrites_hover_rules_for_the_hovered_places() {
        let rules = vec![(".menu li:hover > ul".to_owned(), "display: block;".to_owned())];
        assert_eq!(
            rewrite(&rules, ":where(:root > :nth-child(2)):not(.x)"),
            ".menu li:where(:root > :nth-child(2)):not(.x) > ul { display: block; }\n"
        );
    }
}

//! What a person reads as a field's label when the page gives it no
//! accessible name (no `aria-labelledby`, `aria-label` or `<label>`).
//!
//! The rules, in order (issue 38; Chromium's label inference for autofill
//! is the model, `form_autofill_util.cc`, written again here):
//! - **Before it**: the text before the field in its own line, cell, row or
//!   fieldset — its previous siblings, then its parents' (up to
//!   [`MAX_UP`] levels; never past a `form`, `fieldset` or `body`). Text
//!   nodes and inline boxes next to each other are read together
//!   (`Name <em>(required)</em>`); a block box is taken alone (the `<div>`
//!   over a field). The search stops at another control (its text is that
//!   control's) or a `<label>` of another control. An element taken must
//!   be left of the field on its line, or above it and near (layout, not
//!   the DOM's order alone: [`placed_before`]).
//! - **Tables**: a field's cell is named by a `th` before it in its row,
//!   else by the `th` of its column in the nearest row above that holds
//!   no field (a cart's `Qty` column), else by the text cells before it,
//!   else by its column's cell above.
//! - **Parts of a split field** (a phone number in three inputs, a date in
//!   three selects): fields side by side with nothing but separators
//!   (`-`, `/`, `.`) between them are parts of one; each is named by the
//!   label of the first and its place: `Day Phone, part 2 of 3`.
//! - **After it**, only when nothing before names it, it has no
//!   placeholder and no title that reads as words: the text after it in its
//!   line. A checkbox or radio button is named by the text after it first
//!   (`<input type=checkbox> Deals and offers`).
//! - **Messages never name**: what a field's `aria-describedby` or
//!   `aria-errormessage` points at, `role=alert`/`status`, `aria-live`,
//!   elements whose class says error, hint, help or feedback; the text
//!   after a field marked `aria-invalid` is not read at all.
//! - A **title** names a field only when it reads as words
//!   ([`reads_as_words`]): `billDayPhonePart1` is code.
//! - **Decoys** ([`is_decoy`]): a read-only, presentational input in front
//!   of a field (an icon drawn as an input) is not a field and does not
//!   stop the search.

use crate::dom;
use crate::proto;
use errand_protocol::Rect;
use wasm_bindgen::JsCast;
use web_sys::{Element, Node};

/// How many parents the search for the text before a field climbs.
const MAX_UP: usize = 6;
/// The longest text taken as a label.
const LABEL_MAX: usize = 80;
/// How far above a field its label may end, in CSS pixels.
const ABOVE_MAX: f64 = 60.0;
/// How far left of a field its label may end, in CSS pixels.
const LEFT_MAX: f64 = 400.0;

/// What ends the search: another control.
const CONTROLS: &str = "input:not([type=hidden]), select, textarea, button, a[href], \
    [contenteditable]:not([contenteditable=false]), [role=button], [role=combobox], \
    [role=textbox], [role=listbox], [role=checkbox], [role=radio], [role=switch], \
    [role=slider], [role=spinbutton], [role=searchbox]";
/// The fields whose parts a split field is made of.
const PARTS: &str = "input:not([type=hidden]):not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit]):not([type=reset]):not([type=image]):not([type=file]), select";

/// Class words of a message beside a field (an error, a hint), not its label.
const MESSAGE_CLASSES: &[&str] = &[
    "error",
    "errors",
    "err",
    "invalid",
    "hint",
    "help",
    "feedback",
    "message",
    "msg",
    "warning",
    "validation",
    "tooltip",
    "helper",
];

/// The label a person reads for `el`, a field (or editor, or widget) that
/// names itself by nothing: see the module's rules. `None` when nothing
/// reads as one.
pub fn inferred(el: &Element) -> Option<String> {
    let checkable = proto::local_name(el) == "input"
        && proto::get_attribute(el, "type").is_some_and(|t| {
            matches!(t.trim().to_ascii_lowercase().as_str(), "checkbox" | "radio")
        });
    if checkable {
        if let Some(t) = after(el) {
            return Some(t);
        }
    }
    if let Some(t) = before_or_parts(el) {
        return Some(t);
    }
    let placeholder = proto::get_attribute(el, "placeholder").is_some_and(|p| !p.trim().is_empty());
    let title = proto::get_attribute(el, "title").is_some_and(|t| reads_as_words(&t));
    if checkable || placeholder || title {
        return None;
    }
    after(el)
}

/// Whether a title reads as words, not as code (`billDayPhonePart1`,
/// `txt_email`, `field[3]`): no `_`, brackets or braces, no lower-case
/// letter followed by a capital, no letter followed by a digit.
pub fn reads_as_words(title: &str) -> bool {
    let t = title.trim();
    if t.is_empty() || t.contains(['_', '[', ']', '{', '}', '$', '=']) {
        return false;
    }
    let chars: Vec<char> = t.chars().collect();
    !chars.windows(2).any(|w| {
        (w[0].is_lowercase() && w[1].is_uppercase())
            || (w[0].is_alphabetic() && w[1].is_ascii_digit())
    })
}

/// A decoy in front of a field: a read-only input marked presentational
/// (`role=presentation` or `none`) whose next element is a field. It is
/// drawn, not used.
pub fn is_decoy(el: &Element) -> bool {
    if proto::local_name(el) != "input" || !proto::has_attribute(el, "readonly") {
        return false;
    }
    let role = proto::get_attribute(el, "role").unwrap_or_default().to_ascii_lowercase();
    if !role.split_whitespace().any(|r| r == "presentation" || r == "none") {
        return false;
    }
    proto::next_element_sibling(el).is_some_and(|n| {
        matches!(proto::local_name(&n).as_str(), "input" | "select" | "textarea") && !is_decoy(&n)
    })
}

/// The label before `el`, or, when it is a part of a split field, its
/// group's label and its place.
fn before_or_parts(el: &Element) -> Option<String> {
    if let Some((first, k, n)) = parts(el) {
        let group = before(&first, el)?;
        let group = group.trim_end_matches([':', '*', ' ', '：']).to_owned();
        return Some(format!("{group}, part {k} of {n}"));
    }
    before(el, el)
}

/// The text before `from` (a field, or the first part of the split field
/// `field`), by the module's rules.
fn before(from: &Element, field: &Element) -> Option<String> {
    let frect = proto::client_rect(field);
    let mut at: Node = from.clone().unchecked_into();
    for _ in 0..MAX_UP {
        let at_el = at.unchecked_ref::<Element>();
        let cell = matches!(proto::local_name(at_el).as_str(), "td" | "th");
        let header = if cell { column_header(at_el) } else { None };
        if let Some((text, true)) = &header {
            // A `th` before it in its row names it first.
            if let Some(t) = row_header(at_el) {
                return Some(t);
            }
            return Some(text.clone());
        }
        match siblings_before(&at, field, &frect) {
            Found::Text(t) => return Some(t),
            Found::Stop => return header.map(|(t, _)| t),
            Found::Nothing => {}
        }
        if let Some((t, _)) = header {
            return Some(t);
        }
        let parent = proto::parent_element(&at)?;
        if matches!(proto::local_name(&parent).as_str(), "form" | "fieldset" | "body" | "html") {
            return None;
        }
        at = parent.unchecked_into();
    }
    None
}

enum Found {
    Text(String),
    /// Another control before it: the search ends without a label.
    Stop,
    Nothing,
}

/// The text of the previous siblings of `at`, nearest first: inline text
/// read together, a block taken alone.
fn siblings_before(at: &Node, field: &Element, frect: &Rect) -> Found {
    let mut parts: Vec<String> = Vec::new();
    let mut len = 0;
    let mut prev = proto::previous_sibling(at);
    while let Some(p) = prev {
        prev = proto::previous_sibling(&p);
        match proto::node_type(&p) {
            Node::TEXT_NODE => {
                let t = crate::text::collapse(&proto::text_content(&p).unwrap_or_default());
                if !t.is_empty() {
                    len += t.len();
                    parts.push(t);
                }
            }
            Node::ELEMENT_NODE => {
                let e = p.unchecked_ref::<Element>();
                let tag = proto::local_name(e);
                if tag == "br" {
                    if has_words(&parts) {
                        break;
                    }
                    continue;
                }
                if matches!(tag.as_str(), "script" | "style" | "template") || is_decoy(e) {
                    continue;
                }
                if dom::not_a_name(e) || is_message(e, field) {
                    continue;
                }
                let control = proto::matches(e, CONTROLS).unwrap_or(true)
                    || proto::query_selector(e, CONTROLS)
                        .ok()
                        .flatten()
                        .is_some_and(|c| !is_decoy(&c));
                let other_label = tag == "label"
                    && e.unchecked_ref::<web_sys::HtmlLabelElement>()
                        .control()
                        .is_some_and(|c| c.unchecked_ref::<Element>() != field);
                if control || other_label {
                    if has_words(&parts) {
                        break;
                    }
                    return Found::Stop;
                }
                let block = is_block(&tag);
                if block && has_words(&parts) {
                    break;
                }
                let mut t = String::new();
                dom::label_text(&p, &mut t);
                let t = crate::text::collapse(&t);
                if t.is_empty() {
                    continue;
                }
                if !placed_before(&proto::client_rect(e), frect) {
                    if has_words(&parts) {
                        break;
                    }
                    return Found::Stop;
                }
                len += t.len();
                parts.push(t);
                if block {
                    break;
                }
            }
            _ => {}
        }
        if len > LABEL_MAX * 2 {
            break;
        }
    }
    if !has_words(&parts) {
        return Found::Nothing;
    }
    parts.reverse();
    let text = parts.join(" ");
    if text.chars().count() > LABEL_MAX {
        return Found::Stop;
    }
    Found::Text(text)
}

/// The text after `el` in its line: its next siblings (and its parent's),
/// inline text read together, up to another control; never a message, and
/// nothing after a field marked invalid (what follows is its error).
fn after(el: &Element) -> Option<String> {
    if proto::get_attribute(el, "aria-invalid").is_some_and(|v| v.trim() == "true") {
        return None;
    }
    let mut at: Node = el.clone().unchecked_into();
    for _ in 0..2 {
        let mut parts: Vec<String> = Vec::new();
        let mut next = proto::next_sibling(&at);
        let mut stopped = false;
        while let Some(n) = next {
            next = proto::next_sibling(&n);
            match proto::node_type(&n) {
                Node::TEXT_NODE => {
                    let t = crate::text::collapse(&proto::text_content(&n).unwrap_or_default());
                    if !t.is_empty() {
                        parts.push(t);
                    }
                }
                Node::ELEMENT_NODE => {
                    let e = n.unchecked_ref::<Element>();
                    let tag = proto::local_name(e);
                    if matches!(tag.as_str(), "script" | "style" | "template") {
                        continue;
                    }
                    if tag == "br" || dom::not_a_name(e) || is_message(e, el) {
                        if has_words(&parts) {
                            break;
                        }
                        continue;
                    }
                    let control = proto::matches(e, CONTROLS).unwrap_or(true)
                        || proto::query_selector(e, CONTROLS).ok().flatten().is_some();
                    if control {
                        stopped = true;
                        break;
                    }
                    let block = is_block(&tag);
                    if block && has_words(&parts) {
                        break;
                    }
                    let mut t = String::new();
                    dom::label_text(&n, &mut t);
                    let t = crate::text::collapse(&t);
                    if !t.is_empty() {
                        parts.push(t);
                    }
                    if block {
                        break;
                    }
                }
                _ => {}
            }
        }
        if has_words(&parts) {
            let text = parts.join(" ");
            return (text.chars().count() <= LABEL_MAX).then_some(text);
        }
        if stopped {
            return None;
        }
        let parent = proto::parent_element(&at)?;
        if matches!(proto::local_name(&parent).as_str(), "form" | "fieldset" | "body" | "html")
            || proto::query_selector_all(&parent, CONTROLS).map_or(true, |l| l.length() > 1)
        {
            return None;
        }
        at = parent.unchecked_into();
    }
    None
}

/// Whether `el` is a message beside `field`: what its `aria-describedby`
/// or `aria-errormessage` names, or a box whose class says so.
fn is_message(el: &Element, field: &Element) -> bool {
    if let Some(id) = proto::get_attribute(el, "id").filter(|i| !i.is_empty()) {
        let points = |attr: &str| {
            proto::get_attribute(field, attr).is_some_and(|v| v.split_whitespace().any(|i| i == id))
        };
        if points("aria-describedby") || points("aria-errormessage") {
            return true;
        }
    }
    let class = proto::get_attribute(el, "class").unwrap_or_default();
    class.split_whitespace().any(|token| {
        token.split(['-', '_']).any(|w| MESSAGE_CLASSES.contains(&w.to_ascii_lowercase().as_str()))
    })
}

/// Whether a label candidate's box `r` is where a label of the field's box
/// `f` is read: left of it on its line, or above it and near. A box with
/// no size (`display: contents`) is not judged.
fn placed_before(r: &Rect, f: &Rect) -> bool {
    if r.width <= 0.0 || r.height <= 0.0 || f.width <= 0.0 {
        return true;
    }
    let (r_right, r_bottom, f_right, f_bottom) =
        (r.x + r.width, r.y + r.height, f.x + f.width, f.y + f.height);
    let left = r.x < f.x + 4.0 && r.y < f_bottom && r_bottom > f.y && f.x - r_right <= LEFT_MAX;
    let above = r.y < f.y + 4.0 && f.y - r_bottom <= ABOVE_MAX && r.x < f_right;
    left || above
}

fn has_words(parts: &[String]) -> bool {
    parts.iter().any(|p| p.chars().any(char::is_alphanumeric))
}

/// Tags laid out as blocks by default (a line of their own).
fn is_block(tag: &str) -> bool {
    matches!(
        tag,
        "div"
            | "p"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "dt"
            | "dd"
            | "li"
            | "td"
            | "th"
            | "tr"
            | "legend"
            | "section"
            | "header"
            | "table"
            | "ul"
            | "ol"
            | "dl"
            | "fieldset"
            | "pre"
            | "blockquote"
    )
}

/// The cells of a row before `cell`, and how many columns they take.
fn column_of(cell: &Element) -> usize {
    let mut col = 0;
    let mut prev = proto::previous_element_sibling(cell);
    while let Some(p) = prev {
        col += span(&p);
        prev = proto::previous_element_sibling(&p);
    }
    col
}

fn span(cell: &Element) -> usize {
    proto::get_attribute(cell, "colspan")
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, 100)
}

/// The header of `cell`'s column: its cell in the nearest row above that
/// holds no field, with whether that cell is a `th`.
fn column_header(cell: &Element) -> Option<(String, bool)> {
    let row = proto::parent_element(cell).filter(|r| proto::local_name(r) == "tr")?;
    let col = column_of(cell);
    let mut above = previous_row(&row);
    for _ in 0..20 {
        let r = above?;
        if proto::query_selector(&r, CONTROLS).ok()?.is_none() {
            let mut at = 0;
            let mut c = proto::first_element_child(&r);
            while let Some(cell) = c {
                let w = span(&cell);
                if col >= at && col < at + w {
                    let mut t = String::new();
                    dom::label_text(&cell, &mut t);
                    let t = crate::text::collapse(&t);
                    let words = t.chars().any(char::is_alphanumeric);
                    return (words && t.chars().count() <= LABEL_MAX)
                        .then(|| (t, proto::local_name(&cell) == "th"));
                }
                at += w;
                c = proto::next_element_sibling(&cell);
            }
            return None;
        }
        above = previous_row(&r);
    }
    None
}

/// The row before `row` in its table (across `thead`/`tbody`).
fn previous_row(row: &Element) -> Option<Element> {
    if let Some(p) = proto::previous_element_sibling(row) {
        return Some(p);
    }
    let section = proto::parent_element(row)?;
    if !matches!(proto::local_name(&section).as_str(), "tbody" | "thead" | "tfoot") {
        return None;
    }
    let mut prev = proto::previous_element_sibling(&section);
    while let Some(s) = prev {
        if let Some(last) = s.last_element_child() {
            return Some(last);
        }
        prev = proto::previous_element_sibling(&s);
    }
    None
}

/// A `th` with text before `cell` in its row (a row's header).
fn row_header(cell: &Element) -> Option<String> {
    let mut prev = proto::previous_element_sibling(cell);
    while let Some(p) = prev {
        if proto::local_name(&p) == "th" {
            let mut t = String::new();
            dom::label_text(&p, &mut t);
            let t = crate::text::collapse(&t);
            if t.chars().any(char::is_alphanumeric) {
                return Some(t);
            }
        }
        prev = proto::previous_element_sibling(&p);
    }
    None
}

/// Where `el` is among the parts of a split field: the first part, its
/// place (from 1) and how many there are. `None` when it stands alone.
fn parts(el: &Element) -> Option<(Element, usize, usize)> {
    if !proto::matches(el, PARTS).unwrap_or(false) || is_decoy(el) {
        return None;
    }
    // The part's own box: the outermost wrapper holding only it.
    let mut unit = el.clone();
    for _ in 0..2 {
        let Some(p) = proto::parent_element(&unit) else { break };
        let alone = proto::query_selector_all(&p, CONTROLS).is_ok_and(|l| l.length() == 1);
        if !alone || matches!(proto::local_name(&p).as_str(), "td" | "th" | "form" | "body") {
            break;
        }
        let mut t = String::new();
        dom::label_text(&p, &mut t);
        if t.chars().any(char::is_alphanumeric) {
            break;
        }
        unit = p;
    }
    let part_of = |n: &Node| -> Option<Option<Element>> {
        // Some(Some(field)): a part; Some(None): a separator; None: the end.
        match proto::node_type(n) {
            Node::TEXT_NODE => {
                let t = proto::text_content(n).unwrap_or_default();
                (!t.chars().any(char::is_alphanumeric)).then_some(None)
            }
            Node::ELEMENT_NODE => {
                let e = n.unchecked_ref::<Element>();
                if is_decoy(e) || dom::not_a_name(e) {
                    return Some(None);
                }
                if proto::matches(e, PARTS).unwrap_or(false) {
                    return Some(Some(e.clone()));
                }
                let inner = proto::query_selector_all(e, CONTROLS).ok()?;
                let mut t = String::new();
                dom::label_text(n, &mut t);
                if t.chars().any(char::is_alphanumeric) {
                    return None;
                }
                match inner.length() {
                    0 => Some(None),
                    1 => {
                        let f = inner.item(0)?.unchecked_into::<Element>();
                        if is_decoy(&f) {
                            return Some(None);
                        }
                        proto::matches(&f, PARTS).unwrap_or(false).then_some(Some(f))
                    }
                    _ => None,
                }
            }
            _ => Some(None),
        }
    };
    let (mut first, mut before_count) = (el.clone(), 0);
    let mut prev = proto::previous_sibling(&unit);
    while let Some(p) = prev {
        match part_of(&p) {
            Some(Some(f)) => {
                first = f;
                before_count += 1;
            }
            Some(None) => {}
            None => break,
        }
        prev = proto::previous_sibling(&p);
    }
    let mut after_count = 0;
    let mut next = proto::next_sibling(&unit);
    while let Some(n) = next {
        match part_of(&n) {
            Some(Some(_)) => after_count += 1,
            Some(None) => {}
            None => break,
        }
        next = proto::next_sibling(&n);
    }
    let n = before_count + 1 + after_count;
    (n > 1).then_some((first, before_count + 1, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_that_read_as_code_name_nothing() {
        for words in ["Email", "Day phone", "Sign up for our newsletter", "Address 2", "E-Mail"] {
            assert!(reads_as_words(words), "{words:?}");
        }
        for code in ["billDayPhonePart1", "txt_email", "field[3]", "phonePart1", "campoDni", ""] {
            assert!(!reads_as_words(code), "{code:?}");
        }
    }

    #[test]
    fn a_label_is_left_of_its_field_or_above_it_and_near() {
        let field = Rect { x: 200.0, y: 100.0, width: 150.0, height: 20.0 };
        let left = Rect { x: 20.0, y: 102.0, width: 120.0, height: 16.0 };
        let above = Rect { x: 200.0, y: 80.0, width: 80.0, height: 16.0 };
        let far_above = Rect { x: 200.0, y: 0.0, width: 80.0, height: 16.0 };
        let right = Rect { x: 400.0, y: 100.0, width: 80.0, height: 16.0 };
        assert!(placed_before(&left, &field));
        assert!(placed_before(&above, &field));
        assert!(!placed_before(&far_above, &field));
        assert!(!placed_before(&right, &field));
    }
}

//! What an action would set off, read before it runs (`PageCommand::Stakes`,
//! see `errand_protocol::stakes`): the host's policy judges every action by
//! its effect, so the page tells it everything a person (or a screen reader)
//! would read about it, not one name.
//!
//! - **Where it lands**: the action's element; for a key with no element,
//!   the focused one (through open shadow roots); for a drag, the element it
//!   is dropped on too.
//! - **Whether it activates**: a press of the pointer (click, double click,
//!   hold, a drag's drop), Enter or Space, `type` with Enter (or a line
//!   break or a tab in its text: `Action::types_past_text`), ticking a
//!   control that is drawn as a button (`role=switch`, `role=button`,
//!   `aria-pressed`), choosing an option of a select that no submit
//!   control applies (or that has a listener of its own), or of a listbox;
//!   not a choice added to a list that takes several (a state, as a ticked
//!   checkbox is). Filling, hovering, scrolling and reading do not.
//! - **The control's words**: visible text, `aria-label`, the text of
//!   `aria-labelledby`, `title`, `value` of a button input, `alt` of images
//!   inside, SVG `<title>`s, and icon words: the words of the class names
//!   and `data-icon`/`href` of icon elements inside (`fa-trash-can` → "fa
//!   trash can"), so an icon-only button is judged by its icon.
//! - **The form it submits**: for a submit control, or Enter in a field of a
//!   form, or Enter on a non-button control of a form: the form's resolved
//!   address and method, the words of all its submit controls (the one that
//!   Enter presses is the first), and what is chosen in it (selected
//!   options, checked radios' labels): the bulk action an "Apply" applies.
//! - **Around it**: the dialog it sits in (`<dialog>`, `role=dialog` or
//!   `alertdialog`, `aria-modal`): its name and its text; else the nearest
//!   heading or `<legend>` above it in its section.
//!
//! Reads only; every string is cut (`MAX_WORDS`), and a secret field's value
//! is never read.

use crate::proto;
use errand_protocol::{Action, FormStakes, Stakes};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlFormElement, HtmlInputElement, HtmlSelectElement};

use crate::registry;
use crate::text::{collapse, truncate};

/// The longest text kept of one source.
const MAX_WORDS: usize = 300;
/// The most submit controls and choices read from one form.
const MAX_FORM_PARTS: usize = 12;

/// What `action` would set off on the page as it is now.
pub fn stakes(action: &Action) -> Stakes {
    let (el, activates, enter) = landing(action);
    let Some(el) = el else {
        return Stakes { activates, ..Stakes::default() };
    };
    let (words, icons) = words_of(&el);
    let mut stakes = Stakes {
        activates,
        words,
        icons,
        origin: proto::owner_document(&el)
            .and_then(|d| d.location())
            .and_then(|l| l.origin().ok())
            .unwrap_or_default(),
        ..Stakes::default()
    };
    if let Action::DragAndDrop { to, .. } = action {
        if let Ok(target) = registry::element(*to) {
            let (words, icons) = words_of(&target);
            stakes.words.extend(words);
            stakes.icons.extend(icons);
            let (context, in_dialog) = context_of(&target);
            stakes.context.extend(context);
            stakes.in_dialog |= in_dialog;
        }
    }
    if activates {
        stakes.form = form_submitted(&el, enter);
        let (context, in_dialog) = context_of(&el);
        stakes.context.extend(context);
        stakes.in_dialog |= in_dialog;
        stakes.target = stakes
            .form
            .as_ref()
            .map(|f| f.action.clone())
            .filter(|a| !a.is_empty())
            .or_else(|| link_of(&el));
    }
    stakes
}

/// The element the action lands on, whether it activates something there,
/// and whether it is Enter (implicit submission of the field's form).
fn landing(action: &Action) -> (Option<Element>, bool, bool) {
    let at = |i: u32| registry::element(i).ok();
    match action {
        Action::Click { index, .. }
        | Action::DblClick { index, .. }
        | Action::Hold { index, .. }
        | Action::DragPath { index, .. } => (at(*index), true, false),
        Action::DragAndDrop { from, .. } => (at(*from), true, false),
        // Enter (or a line break, or a tab and what follows it) may submit
        // the field's form.
        Action::Type { index, .. } => {
            let past = action.types_past_text();
            (at(*index), past, past)
        }
        Action::Press { index, .. } => {
            let el = match index {
                Some(i) => at(*i),
                None => focused(),
            };
            let (enter, space) = action.presses_enter_or_space();
            (el, enter || space, enter)
        }
        Action::Check { index } | Action::Uncheck { index } => {
            let el = at(*index);
            let drawn_as_button = el.as_ref().is_some_and(|el| {
                let role = proto::get_attribute(el, "role").unwrap_or_default();
                matches!(role.trim(), "switch" | "button" | "menuitemcheckbox")
                    || proto::has_attribute(el, "aria-pressed")
            });
            (el, drawn_as_button, false)
        }
        // `fill` of a select chooses an option (`fields::fill`).
        Action::SelectOption { index, .. } | Action::Fill { index, .. } => {
            let el = at(*index);
            let chooses = matches!(action, Action::SelectOption { .. })
                || el.as_ref().is_some_and(|el| proto::local_name(el) == "select");
            // A choice commits when the page may act on it at once: a
            // listbox option, a select with a listener of its own, or a
            // select no submit control applies (the page's `change`
            // listener, unseen from here, is then the only thing that can:
            // when in doubt, the choice is the action). A select of a form
            // with a submit control is applied by that control, where the
            // choice is judged ("it applies the choice").
            // A list that takes several choices (`<select multiple>`,
            // `aria-multiselectable`) adds each to a set, as ticking a
            // checkbox does: a state, not a command (an Apply of its form
            // is judged with what is chosen in it).
            let commits = chooses
                && el.as_ref().is_some_and(|el| {
                    !takes_several(el)
                        && (proto::local_name(el) != "select"
                            || crate::listeners::has(el)
                            || !applied_by_a_submit_control(el))
                });
            (el, commits, false)
        }
        _ => (action.element().and_then(at), false, false),
    }
}

/// The focused element, through open shadow roots and same-origin frames.
fn focused() -> Option<Element> {
    let doc = web_sys::window()?.document()?;
    let mut el = proto::active_element(&doc)?;
    for _ in 0..16 {
        // Inside an open shadow root, or a same-origin frame's document.
        let inner_root: Option<wasm_bindgen::JsValue> = match proto::shadow_root(&el) {
            Some(s) => Some(s.into()),
            None if matches!(proto::local_name(&el).as_str(), "iframe" | "frame") => {
                js_sys::Reflect::get(&el, &"contentDocument".into()).ok()
            }
            None => None,
        };
        let inner = inner_root
            .filter(|r| r.is_object())
            .and_then(|r| js_sys::Reflect::get(&r, &"activeElement".into()).ok())
            .filter(|v| v.is_object())
            .map(JsCast::unchecked_into::<Element>);
        match inner {
            Some(i) if i != el && !matches!(proto::local_name(&i).as_str(), "body" | "html") => {
                el = i
            }
            _ => break,
        }
    }
    Some(el)
}

/// Every word a person or a screen reader gets of `el`, and the words of
/// its icons apart (an icon font's ligature is a picture, not text).
fn words_of(el: &Element) -> (Vec<String>, Vec<String>) {
    let mut words = Vec::new();
    let mut add = |text: Option<String>| {
        if let Some(t) = text.map(|t| truncate(&collapse(&t), MAX_WORDS)).filter(|t| !t.is_empty())
        {
            if !words.contains(&t) {
                words.push(t);
            }
        }
    };
    let tag = proto::local_name(el);
    let secret = tag == "input"
        && crate::marks::is_secret_field(
            proto::get_attribute(el, "type").as_deref(),
            proto::get_attribute(el, "autocomplete").as_deref(),
        );
    let mut icons = Vec::new();
    if !matches!(tag.as_str(), "select" | "textarea" | "input") {
        let mut shown = String::new();
        let mut budget = 400;
        read_text(el, &mut shown, &mut icons, &mut budget, 0);
        add(Some(shown));
    }
    add(proto::get_attribute(el, "aria-label"));
    add(labelled_by(el));
    add(proto::get_attribute(el, "title"));
    add(proto::get_attribute(el, "aria-description"));
    if tag == "input" && !secret {
        let kind = proto::get_attribute(el, "type").unwrap_or_default().to_ascii_lowercase();
        if matches!(kind.as_str(), "submit" | "button" | "reset" | "image") {
            add(Some(el.unchecked_ref::<HtmlInputElement>().value()));
            add(proto::get_attribute(el, "alt"));
        }
    }
    if matches!(tag.as_str(), "input" | "select" | "textarea") {
        add(crate::dom::field_label(el));
    }
    if let Ok(inside) = proto::query_selector_all(el, "img[alt], svg title, [aria-label]") {
        for i in 0..inside.length().min(8) {
            let Some(node) = inside.item(i) else { continue };
            let Some(part) = node.dyn_ref::<Element>() else { continue };
            add(proto::get_attribute(part, "alt"));
            add(proto::get_attribute(part, "aria-label"));
            if proto::local_name(part) == "title" {
                add(proto::text_content(part));
            }
        }
    }
    if let Some(w) = icon_words(el) {
        icons.push(w);
    }
    (words, icons)
}

/// The text shown inside `node` (scripts and styles left out), with the
/// ligatures of icon fonts (a childless `<i>`/`<span>` in Material Icons or
/// Material Symbols) put in `icons` instead.
fn read_text(
    node: &web_sys::Node,
    out: &mut String,
    icons: &mut Vec<String>,
    budget: &mut u32,
    depth: u32,
) {
    let mut child = proto::first_child(node);
    while let Some(c) = child {
        if *budget == 0 || depth > 12 {
            return;
        }
        *budget -= 1;
        match proto::node_type(&c) {
            3 => {
                out.push_str(&proto::node_value(&c).unwrap_or_default());
                out.push(' ');
            }
            1 => {
                let el = c.unchecked_ref::<Element>();
                let tag = proto::local_name(el);
                if matches!(tag.as_str(), "script" | "style" | "template" | "noscript") {
                } else if matches!(tag.as_str(), "i" | "span")
                    && proto::first_element_child(el).is_none()
                    && icon_font(el)
                {
                    if let Some(t) = proto::text_content(el) {
                        icons.push(collapse(&t));
                    }
                } else {
                    read_text(&c, out, icons, budget, depth + 1);
                }
            }
            _ => {}
        }
        child = proto::next_sibling(&c);
    }
}

/// Whether `el`'s text is drawn in an icon font: ligatures whose words are
/// pictures.
fn icon_font(el: &Element) -> bool {
    let Some(window) = crate::dom::window_of(el) else { return false };
    let Ok(Some(style)) = window.get_computed_style(el) else { return false };
    let family = style.get_property_value("font-family").unwrap_or_default().to_ascii_lowercase();
    family.contains("material icons") || family.contains("material symbols")
}

/// The text of the elements `aria-labelledby` names.
fn labelled_by(el: &Element) -> Option<String> {
    texts_of_ids(el, "aria-labelledby")
}

/// The text of the elements the id list in `el`'s attribute `name` names
/// (`aria-labelledby`, `aria-describedby`).
fn texts_of_ids(el: &Element, name: &str) -> Option<String> {
    let ids = proto::get_attribute(el, name)?;
    let doc = proto::owner_document(el)?;
    let texts: Vec<String> = ids
        .split_ascii_whitespace()
        .take(8)
        .filter_map(|id| proto::get_element_by_id(&doc, id))
        .filter_map(|l| proto::text_content(&l))
        .collect();
    Some(texts.join(" "))
}

/// Words of the icons in `el` (itself and up to a few elements inside):
/// class names, `data-icon`, an SVG `<use>`'s reference, split into words.
fn icon_words(el: &Element) -> Option<String> {
    let mut parts = vec![el.clone()];
    if let Ok(inside) = proto::query_selector_all(el, "i, svg, use, span, img, [data-icon]") {
        for i in 0..inside.length().min(8) {
            if let Some(e) = inside.item(i).and_then(|n| n.dyn_into::<Element>().ok()) {
                parts.push(e);
            }
        }
    }
    let mut words: Vec<String> = Vec::new();
    for part in &parts {
        for name in ["class", "data-icon", "href", "xlink:href", "src"] {
            let Some(value) = proto::get_attribute(part, name) else { continue };
            // A file name or reference: its last part (`icons.svg#trash`,
            // `/img/delete.png`).
            let value = match name {
                "href" | "xlink:href" | "src" => {
                    value.rsplit(['/', '#']).next().unwrap_or("").to_owned()
                }
                _ => value,
            };
            for word in value.split(|c: char| !c.is_alphanumeric()) {
                let word = word.to_lowercase();
                if word.len() >= 3 && word.len() <= 24 && !words.contains(&word) {
                    words.push(word);
                }
            }
        }
    }
    Some(words.join(" ")).filter(|w| !w.is_empty())
}

/// The form `el` submits when activated (`enter`: by Enter in it).
fn form_submitted(el: &Element, enter: bool) -> Option<FormStakes> {
    let tag = proto::local_name(el);
    let kind = proto::get_attribute(el, "type").unwrap_or_default().trim().to_ascii_lowercase();
    let submits = match tag.as_str() {
        "button" => matches!(kind.as_str(), "" | "submit"),
        "input" => {
            matches!(kind.as_str(), "submit" | "image")
                || (enter && !matches!(kind.as_str(), "button" | "reset" | "checkbox" | "radio"))
        }
        "select" | "textarea" => false,
        _ => enter,
    };
    if !submits {
        return None;
    }
    let form = form_of(el)?;
    let mut stakes = FormStakes {
        action: proto::form_action(&form),
        method: proto::get_attribute(&form, "method")
            .unwrap_or_else(|| "get".to_owned())
            .to_lowercase(),
        ..FormStakes::default()
    };
    let controls = proto::form_elements(&form);
    for i in 0..controls.length() {
        let Some(c) = controls.item(i) else { continue };
        let ctag = proto::local_name(&c);
        let ckind =
            proto::get_attribute(&c, "type").unwrap_or_default().trim().to_ascii_lowercase();
        if is_submit_control(&c) && stakes.submits.len() < MAX_FORM_PARTS {
            let (words, icons) = words_of(&c);
            let words = if words.is_empty() { icons } else { words };
            stakes.submits.push(words.join(" · "));
        } else if ctag == "select" && stakes.choices.len() < MAX_FORM_PARTS {
            let select = c.unchecked_ref::<HtmlSelectElement>();
            let options = select.selected_options();
            for k in 0..options.length().min(4) {
                let Some(o) = options.item(k) else { continue };
                let value = proto::get_attribute(&o, "value").unwrap_or_default();
                let text = collapse(&proto::text_content(&o).unwrap_or_default());
                // A select left at its prompt ("Bulk actions", value -1 or
                // empty) chooses nothing.
                if k == 0 && select.selected_index() == 0 && (value.is_empty() || value == "-1") {
                    continue;
                }
                if !text.is_empty() {
                    stakes.choices.push(truncate(&text, MAX_WORDS));
                }
            }
        } else if ctag == "input" && ckind == "radio" && stakes.choices.len() < MAX_FORM_PARTS {
            if c.unchecked_ref::<HtmlInputElement>().checked() {
                if let Some(label) = crate::dom::field_label(&c) {
                    stakes.choices.push(truncate(&label, MAX_WORDS));
                }
            }
        }
    }
    Some(stakes)
}

/// Whether `el` is a list that takes several choices: a `<select
/// multiple>` or a listbox with `aria-multiselectable="true"`.
fn takes_several(el: &Element) -> bool {
    if proto::local_name(el) == "select" {
        return el.unchecked_ref::<HtmlSelectElement>().multiple();
    }
    proto::get_attribute(el, "aria-multiselectable").is_some_and(|v| v.trim() == "true")
}

/// Whether `el` is in a form that has a submit control.
fn applied_by_a_submit_control(el: &Element) -> bool {
    let Some(form) = form_of(el) else { return false };
    let controls = proto::form_elements(&form);
    (0..controls.length()).filter_map(|i| controls.item(i)).any(|c| is_submit_control(&c))
}

/// A `<button>` of type submit, or an `<input>` of type submit or image.
fn is_submit_control(c: &Element) -> bool {
    let tag = proto::local_name(c);
    let kind = proto::get_attribute(c, "type").unwrap_or_default().trim().to_ascii_lowercase();
    (tag == "button" && matches!(kind.as_str(), "" | "submit"))
        || (tag == "input" && matches!(kind.as_str(), "submit" | "image"))
}

/// The form `el` belongs to (its `form` owner, through the prototype: a
/// field named `form` cannot shadow it).
fn form_of(el: &Element) -> Option<HtmlFormElement> {
    let owner = js_sys::Reflect::get(el, &"form".into()).ok().filter(|f| f.is_object());
    match owner.and_then(|f| f.dyn_into::<HtmlFormElement>().ok()) {
        Some(f) => Some(f),
        None => proto::closest(el, "form").ok().flatten().and_then(|f| f.dyn_into().ok()),
    }
}

/// A link's resolved address.
fn link_of(el: &Element) -> Option<String> {
    let link = proto::closest(el, "a[href]").ok().flatten()?;
    let href = link.unchecked_ref::<web_sys::HtmlAnchorElement>().href();
    (!href.is_empty()).then_some(href)
}

/// The dialog `el` is in (its name and text; `true`), else the heading
/// above it.
fn context_of(el: &Element) -> (Vec<String>, bool) {
    const DIALOG: &str = "dialog, [role=dialog], [role=alertdialog], [aria-modal=true]";
    let mut context = Vec::new();
    if let Some(dialog) = proto::closest(el, DIALOG).ok().flatten() {
        for text in [
            proto::get_attribute(&dialog, "aria-label"),
            labelled_by(&dialog),
            texts_of_ids(&dialog, "aria-describedby"),
            Some(proto::inner_text(&dialog)),
        ]
        .into_iter()
        .flatten()
        {
            let text = truncate(&collapse(&text), MAX_WORDS);
            if !text.is_empty() && !context.contains(&text) {
                context.push(text);
            }
        }
        return (context, true);
    }
    // The nearest heading above it: in its ancestors up to a few levels,
    // the last heading that comes before it.
    let mut at = proto::parent_element(el);
    for _ in 0..6 {
        let Some(up) = at else { break };
        if let Ok(heads) =
            proto::query_selector_all(&up, "h1, h2, h3, h4, h5, h6, legend, [role=heading]")
        {
            let mut before = None;
            for i in 0..heads.length().min(64) {
                let Some(h) = heads.item(i) else { continue };
                // DOCUMENT_POSITION_FOLLOWING (4): `el` comes after `h`.
                if proto::compare_document_position(&h, el) & 4 != 0 {
                    before = Some(h);
                }
            }
            if let Some(h) = before.and_then(|h| proto::text_content(&h)) {
                let h = truncate(&collapse(&h), MAX_WORDS);
                if !h.is_empty() {
                    context.push(h);
                    break;
                }
            }
        }
        at = proto::parent_element(&up);
    }
    (context, false)
}

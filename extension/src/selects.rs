//! Selects: choosing options of a `<select>` (single or `multiple`) or an
//! ARIA listbox by label, value or position.
//!
//! The real `<select>` is the source of truth: choosing sets its options'
//! `selected` state and fires `input` and `change`, as a person's choice
//! does; the value is read back afterwards and a mismatch is an error.

use crate::proto;
use errand_protocol::OptionChoice;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlOptionElement, HtmlSelectElement};

use crate::Fail;
use crate::events::{fire_change, read_value};
use crate::outcome::{Done, describe, failed};
use crate::text::{self, collapse, truncate};

/// One option as the model sees it.
struct Opt {
    label: String,
    value: String,
    disabled: bool,
}

/// Which option a choice names: exact label, label ignoring case, value,
/// then position (0-based).
fn find(options: &[Opt], choice: &OptionChoice) -> Option<usize> {
    match choice {
        OptionChoice::Position(i) => ((*i as usize) < options.len()).then_some(*i as usize),
        OptionChoice::Text(t) => {
            let want = collapse(t);
            options
                .iter()
                .position(|o| o.label == want)
                .or_else(|| options.iter().position(|o| o.label.eq_ignore_ascii_case(&want)))
                .or_else(|| options.iter().position(|o| o.value == *t))
                .or_else(|| {
                    // A number written as text: a position.
                    want.parse::<usize>().ok().filter(|i| *i < options.len())
                })
        }
    }
}

/// The option `choice` names among `options` of `who`: an error saying which
/// options there are when none matches, or when it is disabled.
fn pick(options: &[Opt], choice: &OptionChoice, who: &str) -> Result<usize, Fail> {
    let Some(i) = find(options, choice) else {
        let shown = text::options_shown(options.iter().map(|o| o.label.clone()));
        return Err(failed(&format!(
            "{who} has no option {}; its options: {}",
            choice_text(choice),
            shown.join("|")
        )));
    };
    if options[i].disabled {
        return Err(failed(&format!("option \"{}\" of {who} is disabled", options[i].label)));
    }
    Ok(i)
}

fn choice_text(c: &OptionChoice) -> String {
    match c {
        OptionChoice::Position(i) => format!("#{i}"),
        OptionChoice::Text(t) => format!("\"{}\"", truncate(t, 60)),
    }
}

/// Chooses `choices` in element `index`: a `<select>`, or an ARIA listbox
/// (its options are clicked).
pub fn select_options(index: u32, el: &Element, choices: &[OptionChoice]) -> Result<Done, Fail> {
    let who = describe(index, el);
    if choices.is_empty() {
        return Err(failed("select_option needs at least one option"));
    }
    if proto::local_name(&el) != "select" {
        return aria_select(index, el, choices);
    }
    let select: &HtmlSelectElement = el.unchecked_ref();
    let items: Vec<HtmlOptionElement> =
        (0..select.length()).filter_map(|i| select.item(i)).map(|o| o.unchecked_into()).collect();
    let options: Vec<Opt> = items
        .iter()
        .map(|o| Opt {
            label: collapse(&o.text()),
            value: o.value(),
            disabled: o.disabled()
                || proto::parent_element(&o).is_some_and(|p| {
                    proto::local_name(&p) == "optgroup" && proto::has_attribute(&p, "disabled")
                }),
        })
        .collect();
    let multiple = select.multiple();
    if !multiple && choices.len() > 1 {
        return Err(failed(&format!("{who} takes one option, not {}", choices.len())));
    }
    let mut picked = Vec::new();
    for c in choices {
        picked.push(pick(&options, c, &who)?);
    }
    crate::focus::focus(el);
    for (i, o) in items.iter().enumerate() {
        let on = picked.contains(&i);
        if multiple || on {
            o.set_selected(on);
        }
    }
    crate::events::fire_input_and_change(el, "", false);
    let _ = fire_change(el);
    let labels: Vec<String> = picked.iter().map(|i| options[*i].label.clone()).collect();
    // Read back: what the select holds now.
    let now: Vec<String> =
        items.iter().filter(|o| o.selected()).map(|o| collapse(&o.text())).collect();
    if now != labels {
        return Err(failed(&format!(
            "{who} holds \"{}\" after choosing, not \"{}\"",
            now.join(", "),
            labels.join(", ")
        )));
    }
    crate::dropdown::refresh(el);
    Ok(Done {
        summary: format!("chose \"{}\" in {who}", labels.join("\", \"")),
        value: Some(now.join(", ")),
    })
}

/// Chooses options of an ARIA listbox (or combobox whose listbox is open)
/// by clicking them.
fn aria_select(index: u32, el: &Element, choices: &[OptionChoice]) -> Result<Done, Fail> {
    let who = describe(index, el);
    let listbox = if proto::get_attribute(&el, "role").as_deref() == Some("listbox") {
        Some(el.clone())
    } else {
        proto::get_attribute(&el, "aria-controls")
            .or_else(|| proto::get_attribute(&el, "aria-owns"))
            .and_then(|id| proto::get_element_by_id(&proto::owner_document(&el)?, &id))
    };
    let Some(listbox) = listbox else {
        return Err(failed(&format!(
            "{who} is not a select or listbox: click it to open its options, then click one"
        )));
    };
    let list = proto::query_selector_all(&listbox, "[role=option]")
        .map_err(|_| failed("cannot read the options"))?;
    let items: Vec<Element> =
        (0..list.length()).filter_map(|i| list.item(i)).map(|n| n.unchecked_into()).collect();
    let options: Vec<Opt> = items
        .iter()
        .map(|o| Opt {
            label: collapse(&proto::text_content(&o).unwrap_or_default()),
            value: proto::get_attribute(&o, "data-value").unwrap_or_default(),
            disabled: proto::get_attribute(&o, "aria-disabled").as_deref() == Some("true"),
        })
        .collect();
    let mut labels = Vec::new();
    for c in choices {
        let i = pick(&options, c, &who)?;
        proto::click(items[i].unchecked_ref());
        labels.push(options[i].label.clone());
    }
    let value = read_value(el, &proto::local_name(&el));
    Ok(Done {
        summary: format!("chose \"{}\" in {who}", labels.join("\", \"")),
        value: Some(collapse(&value)),
    })
}

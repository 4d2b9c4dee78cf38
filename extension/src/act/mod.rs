//! Carrying out page actions: the whole in-page vocabulary (click,
//! dblclick, hover, fill, type, clear, select_option, check, uncheck,
//! press, focus, scroll, drag_and_drop, extract, go_back, go_forward).
//! Every action runs inside a [`Watch`]: it waits for the page to settle by
//! watching its mutations, and reports what changed.
//!
//! A click is the sequence a real mouse makes — pointer and mouse events
//! with the right coordinates, buttons and modifier keys, focus on
//! mouse-down — dispatched on whatever is on top at the element's centre
//! when that belongs to the element. A fill goes through the native value
//! setter, so frameworks that track the value (React) see the change; a
//! `type` goes key by key as a US keyboard types (`crate::keys`). Both
//! read the value back (`fields.rs`: a lost character or a `maxlength`
//! cut fails, a value the page took out of the field succeeds).
//!
//! Here: the entry point, its guards and what an action changed; the
//! families in `pointer.rs`, `fields.rs`, `scroll.rs` and `files.rs`, the
//! event primitives they share in `crate::events`.

use crate::proto;
use errand_protocol::{Action, ClickButton, Effect, ErrorCode, Modifier, ScrollDirection};
use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    Element, Event, EventInit, HtmlElement, HtmlInputElement, HtmlTextAreaElement, ScrollBehavior,
    ScrollIntoViewOptions, ScrollLogicalPosition, ScrollToOptions, Window,
};

use crate::dom::{self, attr};
use crate::events::*;
use crate::outcome::{Done, describe, failed};
use crate::text::{self, collapse, truncate};
use crate::watch::Watch;
use crate::{Fail, focus, keys, registry};

mod fields;
mod files;
mod pointer;
mod scroll;
mod stakes;

pub use files::upload;
pub use stakes::stakes;
#[allow(unused_imports)]
use {fields::*, files::*, pointer::*, scroll::*};

/// Carries out one page action, watching the page from just before it
/// until the page is still again, and reports what it did and what changed.
///
/// With `guard.only_on`, the action runs only when the element's document
/// has that origin (the host filled in a secret checked against it); with
/// `guard.secret_field`, only when the element is a secret field.
/// `guard.secrets` are remembered (in this instance's memory) so that a
/// field showing one is blanked before a screenshot.
pub async fn act(action: Action, guard: &Guard) -> Result<Effect, Fail> {
    let target = action.element().and_then(|i| registry::element(i).ok());
    if let Some(origin) = guard.only_on.as_deref() {
        check_origin(target.as_ref(), origin)?;
    }
    if guard.secret_field {
        check_secret_field(target.as_ref())?;
    }
    crate::marks::remember_secrets(&guard.secrets);
    crate::dialogs::arm(&action.dialog());
    // Recipes: how to find this element again, read before the action
    // changes it.
    let locator = target.as_ref().map(crate::locator::of);
    let watch = Watch::start(target.as_ref());
    let done = run(action, &watch).await;
    let mut effect = effect_of(watch, target.as_ref(), done).await;
    if let Ok(e) = &mut effect {
        e.locator = locator;
    }
    // Between actions, dialogs get the default answers.
    crate::dialogs::arm_default();
    let lost = changed_fills(target.as_ref());
    match &mut effect {
        Ok(e) => e.reverted = lost,
        Err(f) if !lost.is_empty() => {
            f.message.push_str("; earlier fills lost: ");
            f.message.push_str(&lost.join(" | "));
        }
        Err(_) => {}
    }
    effect
}

/// Refuses unless `el` lives in a document of `origin`.
fn check_origin(el: Option<&Element>, origin: &str) -> Result<(), Fail> {
    let found = el
        .and_then(|e| proto::owner_document(&e))
        .and_then(|d| d.location())
        .and_then(|l| l.origin().ok());
    match found {
        Some(o) if o.eq_ignore_ascii_case(origin) => Ok(()),
        other => Err(Fail {
            code: ErrorCode::ActionFailed,
            message: format!(
                "not done: the field is on {}, not on {origin}, the only site this value may go to",
                other.as_deref().unwrap_or("no page")
            ),
        }),
    }
}

/// What the host asks the page to check before an action carrying secrets
/// (see `PageCommand::Act`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Guard {
    pub only_on: Option<String>,
    pub secret_field: bool,
    pub secrets: Vec<String>,
}

/// Refuses unless `el` is a secret field as it is now (the page may have
/// changed its type since it was observed): a password input, or an input
/// whose `autocomplete` says password, one-time code or card data.
fn check_secret_field(el: Option<&Element>) -> Result<(), Fail> {
    let secret = el.is_some_and(|el| {
        proto::local_name(&el) == "input"
            && crate::marks::is_secret_field(
                proto::get_attribute(&el, "type").as_deref(),
                proto::get_attribute(&el, "autocomplete").as_deref(),
            )
    });
    if secret {
        return Ok(());
    }
    let what = match el {
        Some(el) if proto::local_name(&el) == "input" => {
            let kind = proto::get_attribute(&el, "type").unwrap_or_else(|| "text".to_owned());
            format!("a {} input", text::lower(&collapse(&kind)))
        }
        Some(el) => format!("a <{}>", proto::local_name(&el)),
        None => "gone".to_owned(),
    };
    Err(Fail {
        code: ErrorCode::ActionFailed,
        message: format!("not done: the field is {what}, not a secret field"),
    })
}

/// Waits for the page to settle and adds what changed to what the action
/// reported.
async fn effect_of(
    watch: Watch,
    target: Option<&Element>,
    done: Result<Done, Fail>,
) -> Result<Effect, Fail> {
    // Settle even after a failure, so the next command sees a still page.
    watch.settle().await;
    let changes = watch.finish(target);
    let dialogs = crate::dialogs::take();
    let Done { mut summary, value } = done.map_err(|mut f| {
        for d in &dialogs {
            f.message.push_str("; ");
            f.message.push_str(&d.describe());
        }
        f
    })?;
    if changes.loading.is_some() {
        // The reply leaves before the new page is there.
        summary.push_str("; a new page is loading");
    }
    Ok(Effect {
        summary,
        url: changes.url,
        url_changed: changes.url_changed,
        value,
        page_changed: changes.url_changed || changes.dom_changed,
        appeared: changes.appeared,
        invalid: changes.invalid,
        new_tab: None,
        dialogs,
        reverted: Vec::new(),
        locator: None,
    })
}

async fn run(action: Action, watch: &Watch) -> Result<Done, Fail> {
    Ok(match action {
        Action::Click { index, button, modifiers, .. } => {
            click(index, button, &modifiers, 1, watch).await?.into()
        }
        Action::DblClick { index, button, modifiers } => {
            click(index, button, &modifiers, 2, watch).await?.into()
        }
        Action::Hover { index } => hover(index)?.into(),
        Action::Fill { index, text } => fill(index, &text, watch).await?,
        Action::Type { index, text, enter, clear } => {
            type_into(index, &text, enter, clear, watch).await?
        }
        Action::Clear { index } => fill(index, "", watch).await?,
        Action::SelectOption { index, options } => {
            let el = usable(index)?;
            crate::selects::select_options(index, &el, &options)?
        }
        Action::Check { index } => check(index, true, watch).await?.into(),
        Action::Uncheck { index } => check(index, false, watch).await?.into(),
        Action::Press { key, index, .. } => press(&key, index)?.into(),
        Action::Focus { index } => {
            let el = usable(index)?;
            focus::focus(&el);
            format!("focused {}", describe(index, &el)).into()
        }
        Action::Scroll { direction, index, pages } => scroll(direction, index, pages)?.into(),
        Action::DragAndDrop { from, to } => drag(from, to, watch).await?.into(),
        Action::Hold { index, ms } => hold(index, ms).await?.into(),
        Action::DragPath { index, points } => drag_path(index, &points).await?.into(),
        Action::UploadFile { .. } => {
            return Err(failed(
                "upload_file is carried out by the host with the files the user allowed",
            ));
        }
        Action::Extract { query } => extract(query.as_deref()).into(),
        Action::GoBack {} => history("back")?.into(),
        Action::GoForward {} => history("forward")?.into(),
        other => return Err(failed(&format!("`{}` is not a page action", other.name()))),
    })
}

/// `history.back()` / `history.forward()`.
fn history(way: &str) -> Result<String, Fail> {
    let h = web_sys::window()
        .ok_or_else(|| failed("no window"))?
        .history()
        .map_err(|e| failed(&js_text(&e)))?;
    if way == "back" { h.back() } else { h.forward() }.map_err(|e| failed(&js_text(&e)))?;
    Ok(format!("went {way} in history"))
}

thread_local! {
    /// Fields filled or typed into by earlier actions, with what they held
    /// then: a widget that rewrites or empties one later (when it loses the
    /// focus, when its calendar closes) is reported by the next action.
    static FILLED: std::cell::RefCell<Vec<(Element, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the fields filled so far (the task ended: `cleanup`).
pub fn forget_fills() {
    FILLED.with(|f| f.borrow_mut().clear());
    crate::events::forget_edits();
}

fn remember_fill(el: &Element, value: &str) {
    // What is typed into a combobox or an autocomplete is a search: the
    // page clearing or completing it once an option is chosen loses
    // nothing (react-select, Select2).
    if attr(el, "role").is_some_and(|r| r == "combobox")
        || attr(el, "aria-autocomplete").is_some_and(|v| v == "list" || v == "both")
    {
        return;
    }
    FILLED.with(|f| {
        let mut f = f.borrow_mut();
        f.retain(|(e, _)| e != el && proto::is_connected(&e));
        if f.len() >= 16 {
            f.remove(0);
        }
        f.push((el.clone(), value.to_owned()));
    });
}

/// The earlier fills the page has changed since (not those of `acted`,
/// the element the current action worked on), forgotten once reported.
fn changed_fills(acted: Option<&Element>) -> Vec<String> {
    FILLED.with(|f| {
        let mut f = f.borrow_mut();
        let mut out = Vec::new();
        f.retain_mut(|(el, held)| {
            if !proto::is_connected(&el) {
                return false;
            }
            let tag = proto::local_name(&el);
            let now = read_value(el, &tag);
            // The acted field's own value is this action's to report: what
            // it holds now is what later actions must keep.
            if acted == Some(el) {
                *held = now;
                return true;
            }
            let field = matches!(tag.as_str(), "input" | "textarea");
            if now == *held || (!field && collapse(&now) == collapse(held)) {
                return true;
            }
            let name = dom::field_label(el)
                .or_else(|| attr(el, "aria-label"))
                .or_else(|| attr(el, "name"))
                .unwrap_or_else(|| proto::local_name(&el));
            out.push(format!(
                "{}: the page changed it from \"{}\" to \"{}\" after it was filled",
                truncate(&name, 40),
                truncate(held, 60),
                truncate(&now, 60)
            ));
            false
        });
        out
    })
}

/// The page's readable text (the lines mentioning `query`'s words first).
fn extract(query: Option<&str>) -> String {
    const MAX: usize = 6000;
    let doc = web_sys::window().and_then(|w| w.document());
    let text = doc.and_then(|d| proto::body(&d)).map(|b| proto::inner_text(&b)).unwrap_or_default();
    let lines: Vec<String> = text.lines().map(collapse).filter(|l| !l.is_empty()).collect();
    let words: Vec<String> = query
        .unwrap_or_default()
        .split_whitespace()
        .filter(|w| w.len() > 2)
        .map(text::lower)
        .collect();
    let picked: Vec<&String> = if words.is_empty() {
        lines.iter().collect()
    } else {
        let hits: Vec<&String> = lines
            .iter()
            .filter(|l| {
                let l = text::lower(l);
                words.iter().any(|w| l.contains(w.as_str()))
            })
            .collect();
        if hits.is_empty() { lines.iter().collect() } else { hits }
    };
    let mut out = String::new();
    for l in picked {
        if out.len() + l.len() + 1 > MAX {
            out.push_str("\n…");
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    // values.rs: the fields' whole values (the element list may cut them).
    let values = crate::values::fields_text();
    let values = if values.is_empty() { values } else { format!("\n{values}") };
    format!("the page's text:\n{}{values}", out.trim_end())
}

/// A thrown JS value as text: a string, or an error's message.
pub fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string()))
        .unwrap_or_else(|| "unknown error".into())
}

/// The element, live and enabled.
pub fn usable(index: u32) -> Result<Element, Fail> {
    let el = registry::element(index)?;
    if dom::is_disabled(&el, &proto::local_name(&el)) {
        return Err(failed(&format!("{} is disabled", describe(index, &el))));
    }
    if dom::replaced(&el) {
        // The page hid it and shows a widget in its place: what is chosen
        // here may never reach what the page uses.
        let instead = dom::replacement_of(&el).and_then(|w| listed_in(&w));
        let use_it = match instead {
            Some((n, w)) => format!("use {} instead", describe(n, &w)),
            None => "use the widget shown in its place instead".to_owned(),
        };
        return Err(failed(&format!(
            "{} is hidden: the page replaced it with a widget of its own; {use_it}",
            describe(index, &el)
        )));
    }
    Ok(el)
}

/// The first element numbered by an observation in `w` (itself first).
fn listed_in(w: &Element) -> Option<(u32, Element)> {
    if let Some(n) = registry::known(w) {
        return Some((n, w.clone()));
    }
    let all = proto::query_selector_all(w.unchecked_ref(), "*").ok()?;
    (0..all.length().min(400))
        .filter_map(|i| all.item(i))
        .map(|n| n.unchecked_into::<Element>())
        .find_map(|e| registry::known(&e).map(|n| (n, e)))
}

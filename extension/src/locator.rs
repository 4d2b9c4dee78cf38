//! Locators (recipes, issue 23): what identifies the element an action
//! works on, read just before the action ([`of`]), and finding it again on
//! a later visit ([`locate`]).
//!
//! [`locate`] looks only at elements the last observation numbered (the
//! walk reached them through open shadow roots and same-origin frames) that
//! are still connected, visible and enabled, and tries the rungs of
//! [`errand_protocol::locator::RUNGS`] in order: the first rung that
//! matches exactly one element wins. Every read goes through `proto.rs`.

use errand_protocol::locator::RUNGS;
use errand_protocol::{ErrorCode, Located, Locator};
use wasm_bindgen::JsCast;
use web_sys::{Element, Node, ShadowRoot};

use crate::dom::{self, attr};
use crate::text::{collapse, lower, truncate};
use crate::{Fail, proto, registry};

const FRAGMENT_NODE: u16 = 11;
/// How far (px) the position rung looks from the recorded centre.
const NEAR_PX: f64 = 24.0;

/// What identifies `el` now.
pub fn of(el: &Element) -> Locator {
    let tag = proto::local_name(el);
    let field = matches!(tag.as_str(), "input" | "select" | "textarea");
    let r = proto::get_bounding_client_rect(el);
    Locator {
        role: role(el, &tag),
        name: accessible_name(el, &tag),
        label: if field { dom::field_label(el).map(|l| clean(&l)) } else { None },
        text: if field { None } else { own_text(el) },
        id: attr(el, "id"),
        field_name: attr(el, "name"),
        test_id: ["data-testid", "data-test", "data-qa"]
            .iter()
            .find_map(|a| attr(el, a).map(|v| format!("{a}={v}"))),
        css: Some(css_path(el)),
        frame: frame_path(el),
        rect: Some([r.x().round(), r.y().round(), r.width().round(), r.height().round()]),
        tag,
    }
}

/// Finds the element `want` describes (see the module's doc).
pub fn locate(want: &Locator) -> Result<Located, Fail> {
    let candidates: Vec<(u32, Element)> = registry::live()
        .into_iter()
        .filter(|(_, el)| {
            proto::check_visibility(el) && !dom::is_disabled(el, &proto::local_name(el))
        })
        .collect();
    let mut tried = Vec::new();
    for rung in RUNGS {
        let Some(test) = rung_test(rung, want) else { continue };
        let found: Vec<&(u32, Element)> = candidates.iter().filter(|(_, el)| test(el)).collect();
        if let [(index, _)] = found.as_slice() {
            return Ok(Located { index: *index, rung: (*rung).to_owned() });
        }
        tried.push(format!("{rung}: {}", found.len()));
    }
    Err(Fail::new(
        ErrorCode::NoSuchElement,
        format!(
            "no locator found exactly one element among {} ({})",
            candidates.len(),
            if tried.is_empty() { "nothing to look for".to_owned() } else { tried.join(", ") }
        ),
    ))
}

type Test<'a> = Box<dyn Fn(&Element) -> bool + 'a>;

/// The test of one rung, when `want` has what it needs.
fn rung_test<'a>(rung: &str, want: &'a Locator) -> Option<Test<'a>> {
    let same =
        |a: &Option<String>, b: &str| a.as_deref().is_some_and(|a| a.eq_ignore_ascii_case(b));
    Some(match rung {
        "test_id" => {
            let v = want.test_id.as_deref()?;
            let (a, value) = v.split_once('=')?;
            Box::new(move |el| attr(el, a).as_deref() == Some(value))
        }
        "role_name" => {
            let (role_, name) = (want.role.as_deref()?, want.name.as_deref()?);
            Box::new(move |el| {
                let tag = proto::local_name(el);
                role(el, &tag).as_deref() == Some(role_) && same(&accessible_name(el, &tag), name)
            })
        }
        "label" => {
            let label = want.label.as_deref()?;
            Box::new(move |el| same(&dom::field_label(el).map(|l| clean(&l)), label))
        }
        "field_name" => {
            let n = want.field_name.as_deref()?;
            let tag = want.tag.as_str();
            Box::new(move |el| {
                proto::local_name(el) == tag && attr(el, "name").as_deref() == Some(n)
            })
        }
        "id" => {
            let id = want.id.as_deref()?;
            Box::new(move |el| attr(el, "id").as_deref() == Some(id))
        }
        "text" => {
            let text = want.text.as_deref()?;
            let tag = want.tag.as_str();
            Box::new(move |el| proto::local_name(el) == tag && same(&own_text(el), text))
        }
        "css" => {
            let css = want.css.as_deref()?;
            Box::new(move |el| css_path(el) == css && frame_path(el) == want.frame)
        }
        "position" => {
            let [x, y, w, h] = want.rect?;
            let (cx, cy) = (x + w / 2.0, y + h / 2.0);
            let tag = want.tag.as_str();
            Box::new(move |el| {
                let r = proto::get_bounding_client_rect(el);
                proto::local_name(el) == tag
                    && frame_path(el) == want.frame
                    && (r.x() + r.width() / 2.0 - cx).abs() <= NEAR_PX
                    && (r.y() + r.height() / 2.0 - cy).abs() <= NEAR_PX
            })
        }
        _ => return None,
    })
}

fn clean(s: &str) -> String {
    truncate(&collapse(s), 80)
}

fn own_text(el: &Element) -> Option<String> {
    Some(clean(&proto::inner_text(el))).filter(|t| !t.is_empty())
}

/// The element's ARIA role: its `role`, else its tag's implicit one.
fn role(el: &Element, tag: &str) -> Option<String> {
    if let Some(r) = attr(el, "role") {
        return Some(lower(r.split_whitespace().next().unwrap_or_default()));
    }
    let kind = || lower(&attr(el, "type").unwrap_or_default());
    Some(
        match tag {
            "a" if attr(el, "href").is_some() => "link",
            "button" => "button",
            "select" => "combobox",
            "textarea" => "textbox",
            "input" => match kind().as_str() {
                "submit" | "button" | "reset" | "image" => "button",
                "checkbox" => "checkbox",
                "radio" => "radio",
                "range" => "slider",
                "file" => "file",
                _ => "textbox",
            },
            "summary" => "button",
            _ => return None,
        }
        .to_owned(),
    )
}

/// Its accessible name, simplified: `aria-label`, a field's label, a
/// button input's value, its text, `placeholder`, `title`.
fn accessible_name(el: &Element, tag: &str) -> Option<String> {
    let field = matches!(tag, "input" | "select" | "textarea");
    let button_input = tag == "input"
        && attr(el, "type")
            .is_some_and(|t| matches!(lower(&t).as_str(), "submit" | "button" | "reset"));
    attr(el, "aria-label")
        .or_else(|| if button_input { attr(el, "value") } else { None })
        .or_else(|| if field { dom::field_label(el) } else { own_text(el) })
        .or_else(|| attr(el, "placeholder"))
        .or_else(|| attr(el, "title"))
        .map(|n| clean(&n))
        .filter(|n| !n.is_empty())
}

/// `tag:nth-of-type(n)` steps from its document or shadow root; inside a
/// shadow root, its host's path first, then ` >> `.
fn css_path(el: &Element) -> String {
    let mut steps = Vec::new();
    let mut at = Some(el.clone());
    let mut out = String::new();
    for _ in 0..64 {
        let Some(e) = at else { break };
        let tag = proto::local_name(&e);
        let mut n = 1;
        let mut prev = proto::previous_element_sibling(&e);
        while let Some(p) = prev {
            if proto::local_name(&p) == tag {
                n += 1;
            }
            prev = proto::previous_element_sibling(&p);
        }
        steps.push(format!("{tag}:nth-of-type({n})"));
        match proto::parent_element(&e) {
            Some(p) => at = Some(p),
            None => {
                let parent: Option<Node> = proto::parent_node(&e);
                let host = parent
                    .filter(|p| proto::node_type(p) == FRAGMENT_NODE)
                    .and_then(|p| p.dyn_into::<ShadowRoot>().ok())
                    .map(|r| r.host());
                if let Some(host) = host {
                    out = format!("{} >> ", css_path(&host));
                }
                break;
            }
        }
    }
    steps.reverse();
    out.push_str(&steps.join(" > "));
    out
}

/// The CSS paths of the same-origin `<iframe>`s `el` is in, outermost first.
fn frame_path(el: &Element) -> Vec<String> {
    let mut out = Vec::new();
    let mut win = proto::owner_document(el).and_then(|d| proto::default_view(&d));
    for _ in 0..8 {
        let Some(frame) = win.as_ref().and_then(|w| w.frame_element().ok().flatten()) else {
            break;
        };
        out.push(css_path(&frame));
        win = proto::owner_document(&frame).and_then(|d| proto::default_view(&d));
    }
    out.reverse();
    out
}

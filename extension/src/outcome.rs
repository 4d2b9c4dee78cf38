//! What an action reports: its summary ([`Done`]), the `action_failed`
//! error, and how an element is named in summaries.

use crate::Fail;
use crate::dom::{self, attr};
use crate::proto;
use crate::text::{collapse, truncate};
use errand_protocol::ErrorCode;
use web_sys::Element;

/// What an action reports before the page's changes are added.
pub struct Done {
    pub summary: String,
    pub value: Option<String>,
}

impl From<String> for Done {
    fn from(summary: String) -> Done {
        Done { summary, value: None }
    }
}

/// An `action_failed` error.
pub fn failed(why: &str) -> Fail {
    Fail::new(ErrorCode::ActionFailed, why)
}

/// `[12] <button> Submit`: how an element is named in summaries.
pub fn describe(index: u32, el: &Element) -> String {
    let tag = proto::local_name(&el);
    let field = matches!(tag.as_str(), "input" | "select" | "textarea");
    let own_text = || proto::text_content(&el).map(|t| collapse(&t)).filter(|t| !t.is_empty());
    let name = attr(el, "aria-label")
        .or_else(|| if field { dom::field_label(el) } else { own_text() })
        .or_else(|| attr(el, "placeholder"))
        .or_else(|| attr(el, "title"))
        .or_else(|| attr(el, "name"))
        .map(|n| truncate(&collapse(&n), 40));
    match name {
        Some(n) => format!("[{index}] <{tag}> {n}"),
        None => format!("[{index}] <{tag}>"),
    }
}

//! What an approval asks: the action in plain words, why, and the kind and
//! site an approval for the task or for the site covers. Whether an action
//! needs one is the policy's to say (`policy.rs`, judging what it sets off)
//! and the gate's to ask (`gate.rs`); the host decides, never the model.

use errand_protocol::{Action, ElementInfo, Observation};

use crate::agent::prompt::{describe_action, element_label};
use crate::text::cut;

/// An action the user must approve first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// What will happen, in plain words.
    pub summary: String,
    /// Why it needs approval.
    pub reason: String,
    /// The element as the page lists it, empty when there is none.
    pub element: String,
    /// The kind of action (`pay`, `delete`, … from the policy's lexicon;
    /// `change` or `visit` on an ask-first site): what an approval "for this
    /// task" or "always on this site" covers.
    pub kind: String,
    /// The site it happens on (the frame's, for an element in a frame).
    pub site: String,
}

impl Approval {
    /// The `approval` task event that asks the person, at step `step`.
    pub fn event(&self, step: u32, action: &Action) -> errand_protocol::TaskEvent {
        errand_protocol::TaskEvent::Approval {
            step,
            action: action.clone(),
            element: self.element.clone(),
            summary: self.summary.clone(),
            reason: self.reason.clone(),
            kind: self.kind.clone(),
            site: self.site.clone(),
        }
    }
}

/// The approval to ask for `action` (on `element` of the page `obs`
/// shows), of `kind`, because of `reason`.
pub fn asking(
    action: &Action,
    element: Option<&ElementInfo>,
    obs: &Observation,
    kind: &str,
    reason: &str,
) -> Approval {
    let site = match action {
        Action::Goto { url } | Action::NewTab { url: Some(url) } => {
            crate::memory::store::site_of(url)
        }
        _ => super::gate::site(obs, element),
    };
    Approval {
        summary: summary(action, element, &obs.url),
        reason: reason.to_owned(),
        element: element.map(element_label).unwrap_or_default(),
        kind: kind.to_owned(),
        site,
    }
}

/// Whether `action` changes the page (as opposed to reading or moving).
pub fn changes_something(action: &Action) -> bool {
    !matches!(
        action,
        Action::Hover { .. }
            | Action::Focus { .. }
            | Action::Scroll { .. }
            | Action::Extract { .. }
            | Action::GoBack {}
            | Action::GoForward {}
            | Action::SwitchTab { .. }
            | Action::Wait { .. }
            | Action::SendMessage { .. }
            | Action::AskUser { .. }
            | Action::Done { .. }
            | Action::ReportInfeasible { .. }
    )
}

/// One sentence: what will happen.
fn summary(action: &Action, target: Option<&ElementInfo>, page_url: &str) -> String {
    let site = crate::memory::store::site_of(page_url);
    let name = target
        .map(|e| cut(&e.name.split_whitespace().collect::<Vec<_>>().join(" "), 60))
        .filter(|n| !n.is_empty())
        .map(|n| format!("\u{201c}{n}\u{201d}"))
        .unwrap_or_else(|| "the focused field".to_owned());
    let what = match action {
        Action::Click { .. } => format!("Click {name}"),
        Action::DblClick { .. } => format!("Double-click {name}"),
        Action::Press { key, .. } => format!("Press {key} in {name}"),
        Action::Fill { text, .. } | Action::Type { text, .. } => {
            format!("Type \u{201c}{}\u{201d} into {name}", cut(text, 60))
        }
        Action::Goto { url } => format!("Open {}", cut(url, 120)),
        Action::NewTab { url: Some(url) } => format!("Open {} in a new tab", cut(url, 120)),
        other => describe_action(other, &target.map(element_label).unwrap_or_default()),
    };
    let on = match action {
        Action::Goto { .. } | Action::NewTab { .. } => String::new(),
        _ if site.is_empty() => String::new(),
        _ => format!(" on {site}"),
    };
    cut(&format!("{what}{on}"), 200)
}

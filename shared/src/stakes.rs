//! What a page action would set off, told by the page before the action
//! runs ([`crate::PageCommand::Stakes`]).
//!
//! The host's action policy judges an action by its effect, not by the one
//! name the element list gives its element: the words a person reads on the
//! control *and* what it is called for assistive technology (its accessible
//! name, title, value, the alt text and icon words inside it), the form it
//! submits (its address and the words of its submit controls, the options
//! chosen in it — a bulk action chosen for an "Apply"), and the text around
//! it (the dialog it sits in, the heading above it). Everything here is
//! page data: the host reads it for words and addresses, never as
//! instructions, and a page can only make an action look *more* consequential
//! than its own visible words (what a person reads is always among them).

use serde::{Deserialize, Serialize};

/// What one action would set off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stakes {
    /// The action activates something where it lands (a press, Enter or
    /// Space, a hold, a drop, a committing choice), as opposed to only
    /// reading, moving, focusing or typing.
    #[serde(default)]
    pub activates: bool,
    /// The control's words: visible text, accessible name, title, value,
    /// alt text, icon words. Empty when the action has no element (or its
    /// element is gone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
    /// The words of the control's icons: an icon font's ligatures, the
    /// words of icon class names, `data-icon` and sprite references. They
    /// name a control that shows no text of its own (an icon-only trash
    /// button); a control with text is judged by its text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<String>,
    /// The form the action submits, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<FormStakes>,
    /// The text around the control: the dialog it is in (its title and
    /// message), the heading of its section.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// Whether `context` is the dialog the control sits in (else the
    /// heading above it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_dialog: bool,
    /// Where it leads: a link's address, or the address the form is sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The origin of the element's document (a frame's, for an element in a
    /// frame).
    #[serde(default)]
    pub origin: String,
}

/// The form an action submits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FormStakes {
    /// The address it is sent to, resolved.
    #[serde(default)]
    pub action: String,
    /// `get` or `post` (`dialog` for a dialog form).
    #[serde(default)]
    pub method: String,
    /// The words of its submit controls (the one the action presses first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub submits: Vec<String>,
    /// The options chosen in its selects and the checked radio buttons'
    /// labels: the bulk action an "Apply" carries out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

impl Stakes {
    /// The control's own texts: its words, or its icons' words when it
    /// shows none.
    pub fn control(&self) -> &[String] {
        if self.words.is_empty() { &self.icons } else { &self.words }
    }
}

/// What the host's action policy decided about one action, recorded with
/// the step (the database, the panel's history, a recipe's replay).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub decision: Decision,
    /// Why, in plain words.
    pub reason: String,
}

/// Allow, ask the user, or refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Allowed without asking.
    Allow,
    /// The user was asked and approved it (or an approval they gave for
    /// the task or the site covered it).
    Approved,
    /// The user was asked and rejected it, or nobody could be asked.
    Rejected,
    /// Refused by a rule (a site list, a secret's sites, an element not
    /// listed).
    Refuse,
}

impl Verdict {
    pub fn new(decision: Decision, reason: impl Into<String>) -> Verdict {
        Verdict { decision, reason: reason.into() }
    }
}

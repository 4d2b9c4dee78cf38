//! The one action vocabulary, whatever dialect the model speaks.
//!
//! The JSON shape is the model-facing one: one object per action, its name
//! as the only key — `{"click": {"index": 12}}`,
//! `{"fill": {"index": 3, "text": "Ada"}}`, `{"done": {"text": "…"}}`.

use serde::{Deserialize, Serialize};

/// One thing the agent can do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Click the element numbered `index`.
    Click {
        index: u32,
        #[serde(default, skip_serializing_if = "ClickButton::is_left")]
        button: ClickButton,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
    },
    /// Replace the value of a text field (input, textarea, contenteditable).
    Fill { index: u32, text: String },
    /// Scroll the window (no `index`) or an element, by pages.
    Scroll {
        direction: ScrollDirection,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<u32>,
        /// How many viewport heights; one when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pages: Option<f64>,
    },
    /// Go to a URL in the task's tab.
    Goto { url: String },
    /// Go back in the tab's history.
    GoBack {},
    /// Wait for the page, in milliseconds (at most ten seconds).
    Wait {
        #[serde(default = "default_wait")]
        ms: u32,
    },
    /// Finish the task with the answer shown to the user.
    Done {
        text: String,
        #[serde(default = "yes")]
        success: bool,
    },
}

fn default_wait() -> u32 {
    1000
}

fn yes() -> bool {
    true
}

impl Action {
    /// The action's name as the model writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click { .. } => "click",
            Action::Fill { .. } => "fill",
            Action::Scroll { .. } => "scroll",
            Action::Goto { .. } => "goto",
            Action::GoBack {} => "go_back",
            Action::Wait { .. } => "wait",
            Action::Done { .. } => "done",
        }
    }

    /// The element the action targets, if any.
    pub fn element(&self) -> Option<u32> {
        match self {
            Action::Click { index, .. } | Action::Fill { index, .. } => Some(*index),
            Action::Scroll { index, .. } => *index,
            _ => None,
        }
    }

    /// Whether the content script carries it out (the others are the
    /// host's or the service worker's).
    pub fn runs_in_page(&self) -> bool {
        matches!(
            self,
            Action::Click { .. } | Action::Fill { .. } | Action::Scroll { .. } | Action::GoBack {}
        )
    }
}

/// Which mouse button a click uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClickButton {
    #[default]
    Left,
    Middle,
    Right,
}

impl ClickButton {
    fn is_left(&self) -> bool {
        *self == ClickButton::Left
    }
}

/// A key held during a click.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Modifier {
    Alt,
    Control,
    ControlOrMeta,
    Meta,
    Shift,
}

/// Which way to scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScrollDirection {
    Up,
    Down,
    Left,
    Right,
}

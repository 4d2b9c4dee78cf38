//! The one action vocabulary, whatever dialect the model speaks.
//!
//! The JSON shape is the model-facing one: one object per action, its name
//! as the only key — `{"click": {"index": 12}}`,
//! `{"fill": {"index": 3, "text": "Ada"}}`, `{"done": {"text": "…"}}`.

use serde::{Deserialize, Serialize};

/// One thing the agent can do. The vocabulary of BrowserGym's action space
/// plus what the other seeds add (tabs, extraction, talking to the user).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Action {
    // ---- In the page ----
    /// Click the element numbered `index`.
    Click {
        index: u32,
        #[serde(default, skip_serializing_if = "ClickButton::is_left")]
        button: ClickButton,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
        /// How to answer a `confirm` / `prompt` the click opens.
        #[serde(flatten)]
        dialog: DialogAnswer,
    },
    /// Double-click an element.
    #[serde(rename = "dblclick", alias = "double_click")]
    DblClick {
        index: u32,
        #[serde(default, skip_serializing_if = "ClickButton::is_left")]
        button: ClickButton,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        modifiers: Vec<Modifier>,
    },
    /// Move the pointer over an element (menus that open on hover).
    Hover { index: u32 },
    /// Replace the value of a field (input, textarea, contenteditable, date,
    /// time, number, range, colour…).
    Fill { index: u32, text: String },
    /// Type text key by key into element `index`, for autocompletes that
    /// listen to keys, after what the field holds (`clear`: in its place);
    /// `enter` presses Enter afterwards.
    Type {
        index: u32,
        text: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        enter: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        clear: bool,
    },
    /// Empty a field.
    Clear { index: u32 },
    /// Choose options of a select (or listbox) by label, value or position;
    /// several for a `multiple` select.
    SelectOption { index: u32, options: Vec<OptionChoice> },
    /// Tick a checkbox or radio button (no-op when already ticked).
    Check { index: u32 },
    /// Untick a checkbox.
    Uncheck { index: u32 },
    /// Press a key or combination (`Enter`, `ControlOrMeta+a`, `Shift+Tab`)
    /// on element `index`, or on the focused element.
    Press {
        key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<u32>,
        /// How to answer a `confirm` / `prompt` the key opens.
        #[serde(flatten)]
        dialog: DialogAnswer,
    },
    /// Focus an element.
    Focus { index: u32 },
    /// Scroll the window (no `index`) or an element, by pages or pixels.
    Scroll {
        direction: ScrollDirection,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        index: Option<u32>,
        /// How many viewport heights; one when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pages: Option<f64>,
    },
    /// Drag one element onto another.
    DragAndDrop { from: u32, to: u32 },
    /// Press and hold the pointer on an element for `ms` milliseconds
    /// (hold-to-confirm buttons), then release it.
    Hold {
        index: u32,
        #[serde(default = "default_hold")]
        ms: u32,
    },
    /// Press the pointer down on element `index` and move it through
    /// `points` before releasing it: each point is `[x, y]` as fractions of
    /// the element's box (`[0, 0]` its top-left corner, `[1, 1]` its
    /// bottom-right): a signature, a drawing, a slider moved step by step.
    DragPath { index: u32, points: Vec<[f64; 2]> },
    /// Put files the user chose in the side panel into a file input.
    UploadFile { index: u32, files: Vec<String> },
    /// Read the page's readable text (optionally what concerns `query`).
    Extract {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
    },
    /// Go back in the tab's history.
    GoBack {},
    /// Go forward in the tab's history.
    GoForward {},

    // ---- In the browser ----
    /// Go to a URL in the task's tab.
    Goto { url: String },
    /// Open a new tab (at `url`, or empty) and work there.
    NewTab {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// Work in another open tab.
    SwitchTab { tab_id: i64 },
    /// Close a tab (the current one when absent).
    CloseTab {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tab_id: Option<i64>,
    },

    // ---- In the host ----
    /// Wait for the page, in milliseconds (at most ten seconds).
    Wait {
        #[serde(default = "default_wait")]
        ms: u32,
    },
    /// Tell the user something without stopping.
    #[serde(alias = "send_msg_to_user")]
    SendMessage { text: String },
    /// Ask the user a question and wait for the answer.
    AskUser { question: String },
    /// Finish the task with the answer shown to the user.
    Done {
        text: String,
        #[serde(default = "yes")]
        success: bool,
    },
    /// Give up, with the evidence from the page that the task cannot be done.
    ReportInfeasible { reason: String },
}

/// The answer an action gives a `confirm` or `prompt` dialog it expects to
/// open: `"dialog": "accept" | "dismiss"` and, for a prompt, `"dialog_text"`.
/// Without it the first such dialog is declined and reported, so the model
/// can repeat the action with an answer (the host sets `accept` when the
/// user approved the action).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DialogAnswer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<DialogChoice>,
    /// The text typed into a `prompt` before accepting it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog_text: Option<String>,
}

impl DialogAnswer {
    /// Accept whatever dialog comes (the user approved the action).
    pub fn accept() -> DialogAnswer {
        DialogAnswer { dialog: Some(DialogChoice::Accept), dialog_text: None }
    }

    /// Whether the action says how to answer.
    pub fn given(&self) -> bool {
        self.dialog.is_some() || self.dialog_text.is_some()
    }
}

/// Accept (OK) or dismiss (Cancel) a dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DialogChoice {
    Accept,
    Dismiss,
}

/// An option of a select, by its label or value (text) or its position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum OptionChoice {
    Position(u32),
    Text(String),
}

fn default_wait() -> u32 {
    1000
}

fn default_hold() -> u32 {
    1500
}

fn yes() -> bool {
    true
}

impl Action {
    /// Whether a `type` presses keys that can set something off besides
    /// text: its `enter`, a line break in its text (typed as Enter: the
    /// field's form is submitted), or a tab (the focus moves on, and what
    /// follows lands on the next control: a space or a line break there
    /// presses it). `false` for every other action.
    pub fn types_past_text(&self) -> bool {
        match self {
            Action::Type { text, enter, .. } => *enter || text.contains(['\n', '\r', '\t']),
            _ => false,
        }
    }

    /// For a `press`: whether its key (the last of its combination) is
    /// Enter and whether it is Space, as the content script reads keys
    /// (`enter`/`return`, `space` or a space character, any case).
    pub fn presses_enter_or_space(&self) -> (bool, bool) {
        let Action::Press { key, .. } = self else { return (false, false) };
        let last = match key.rsplit_once('+') {
            Some((_, "")) | None => key.as_str(),
            Some((_, last)) => last,
        };
        let word = last.trim();
        let enter = word.eq_ignore_ascii_case("enter") || word.eq_ignore_ascii_case("return");
        let space = word.eq_ignore_ascii_case("space") || (word.is_empty() && last.contains(' '));
        (enter, space)
    }

    /// The action's name as the model writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Click { .. } => "click",
            Action::DblClick { .. } => "dblclick",
            Action::Hover { .. } => "hover",
            Action::Fill { .. } => "fill",
            Action::Type { .. } => "type",
            Action::Clear { .. } => "clear",
            Action::SelectOption { .. } => "select_option",
            Action::Check { .. } => "check",
            Action::Uncheck { .. } => "uncheck",
            Action::Press { .. } => "press",
            Action::Focus { .. } => "focus",
            Action::Scroll { .. } => "scroll",
            Action::DragAndDrop { .. } => "drag_and_drop",
            Action::Hold { .. } => "hold",
            Action::DragPath { .. } => "drag_path",
            Action::UploadFile { .. } => "upload_file",
            Action::Extract { .. } => "extract",
            Action::GoBack {} => "go_back",
            Action::GoForward {} => "go_forward",
            Action::Goto { .. } => "goto",
            Action::NewTab { .. } => "new_tab",
            Action::SwitchTab { .. } => "switch_tab",
            Action::CloseTab { .. } => "close_tab",
            Action::Wait { .. } => "wait",
            Action::SendMessage { .. } => "send_message",
            Action::AskUser { .. } => "ask_user",
            Action::Done { .. } => "done",
            Action::ReportInfeasible { .. } => "report_infeasible",
        }
    }

    /// The elements the action targets (the first is the main one).
    pub fn elements(&self) -> Vec<u32> {
        self.clone().elements_mut().into_iter().map(|n| *n).collect()
    }

    /// The element numbers of the action, to rewrite them (a cross-origin
    /// frame's content script numbers its elements its own way); the same
    /// as [`Action::elements`], in the same order.
    pub fn elements_mut(&mut self) -> Vec<&mut u32> {
        match self {
            Action::Click { index, .. }
            | Action::DblClick { index, .. }
            | Action::Hover { index }
            | Action::Fill { index, .. }
            | Action::Type { index, .. }
            | Action::Clear { index }
            | Action::SelectOption { index, .. }
            | Action::Check { index }
            | Action::Uncheck { index }
            | Action::Focus { index }
            | Action::Hold { index, .. }
            | Action::DragPath { index, .. }
            | Action::UploadFile { index, .. } => vec![index],
            Action::Press { index, .. } | Action::Scroll { index, .. } => {
                index.iter_mut().collect()
            }
            Action::DragAndDrop { from, to } => vec![from, to],
            _ => vec![],
        }
    }

    /// The answer the action gives a dialog it opens (none for actions
    /// that cannot carry one).
    pub fn dialog(&self) -> DialogAnswer {
        match self {
            Action::Click { dialog, .. } | Action::Press { dialog, .. } => dialog.clone(),
            _ => DialogAnswer::default(),
        }
    }

    /// The same action without an answer to accept the dialogs it opens
    /// (decided in advance, and not approved): a `confirm` it opens is
    /// declined by default, and reported.
    pub fn declining_dialogs(&self) -> Action {
        let mut a = self.clone();
        if let Action::Click { dialog, .. } | Action::Press { dialog, .. } = &mut a {
            if dialog.dialog == Some(DialogChoice::Accept) {
                dialog.dialog = None;
            }
        }
        a
    }

    /// The same action accepting the dialogs it opens, unless it says
    /// otherwise (the user approved it).
    pub fn accepting_dialogs(&self) -> Action {
        let mut a = self.clone();
        if let Action::Click { dialog, .. } | Action::Press { dialog, .. } = &mut a {
            if dialog.dialog.is_none() {
                dialog.dialog = Some(DialogChoice::Accept);
            }
        }
        a
    }

    /// The main element the action targets, if any.
    pub fn element(&self) -> Option<u32> {
        self.elements().first().copied()
    }

    /// Whether the content script carries it out (the others are the
    /// host's or the service worker's).
    pub fn runs_in_page(&self) -> bool {
        !matches!(
            self,
            Action::Goto { .. }
                | Action::NewTab { .. }
                | Action::SwitchTab { .. }
                | Action::CloseTab { .. }
                | Action::Wait { .. }
                | Action::SendMessage { .. }
                | Action::AskUser { .. }
                | Action::Done { .. }
                | Action::ReportInfeasible { .. }
        )
    }
}

/// Which mouse button a click uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Modifier {
    Alt,
    Control,
    ControlOrMeta,
    Meta,
    Shift,
}

/// Which way to scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ScrollDirection {
    Up,
    Down,
    Left,
    Right,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_reads_as_the_model_writes_it() {
        let cases = [
            r#"{"dblclick":{"index":2}}"#,
            r#"{"type":{"index":3,"text":"Lis","enter":true}}"#,
            r#"{"select_option":{"index":4,"options":["Blue",2]}}"#,
            r#"{"press":{"key":"ControlOrMeta+a"}}"#,
            r#"{"drag_and_drop":{"from":1,"to":9}}"#,
            r#"{"send_msg_to_user":{"text":"hi"}}"#,
            r#"{"report_infeasible":{"reason":"sold out"}}"#,
            r#"{"go_forward":{}}"#,
            r#"{"click":{"index":2,"dialog":"accept"}}"#,
            r#"{"hold":{"index":2,"ms":2000}}"#,
            r#"{"drag_path":{"index":2,"points":[[0.1,0.5],[0.9,0.5]]}}"#,
            r#"{"press":{"key":"Enter","index":2,"dialog":"accept","dialog_text":"3"}}"#,
        ];
        for case in cases {
            let action: Action =
                serde_json::from_str(case).unwrap_or_else(|e| panic!("{case}: {e}"));
            let again: Action =
                serde_json::from_str(&serde_json::to_string(&action).unwrap()).unwrap();
            assert_eq!(action, again, "{case}");
        }
        let pick: Action =
            serde_json::from_str(r#"{"select_option":{"index":4,"options":["Blue",2]}}"#).unwrap();
        assert_eq!(
            pick,
            Action::SelectOption {
                index: 4,
                options: vec![OptionChoice::Text("Blue".into()), OptionChoice::Position(2)]
            }
        );
        assert_eq!(Action::DragAndDrop { from: 1, to: 9 }.elements(), vec![1, 9]);
        assert!(!Action::AskUser { question: "?".into() }.runs_in_page());
        assert!(Action::Extract { query: None }.runs_in_page());
    }
}

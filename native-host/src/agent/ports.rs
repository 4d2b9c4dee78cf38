//! The agent's ports: what the loop needs from the world, in its own terms.
//!
//! - [`Browser`]: the task's tabs and pages (observe, act, navigate, tabs,
//!   capture, clean up), every failure one [`BrowserError`].
//! - [`Operator`]: the person the task works for (task events, questions,
//!   approvals, the end of the task); stop and pause reach the task as
//!   [`Stopper`] and [`Pause`].
//! - [`Setup`]: the settings and the model they name, as one value in a
//!   watch channel: a settings change reaches the next step (and the budget
//!   follows the new model's price).
//!
//! The host (`crate::host`) implements the ports over the extension; the
//! agent's unit tests implement them in memory. Nothing under `agent/`
//! knows the host, the transport or the command line.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use errand_protocol::{
    Action, Effect, ErrorCode, FilePayload, Located, Locator, Observation, Outcome, TabSummary,
    TaskEvent,
};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

pub use super::gate::Permit;
use crate::config::Settings;
use crate::llm::Provider;

/// The error recorded when the connection ends under a running task.
pub const DISCONNECTED: &str = "the browser disconnected";

/// Why a request to the browser failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BrowserError {
    #[error("{DISCONNECTED}")]
    Disconnected,
    #[error("{what} did not answer within {secs} s{hint}")]
    Timeout { what: String, secs: u64, hint: &'static str },
    /// The browser (or the page) answered with an `error`.
    #[error("{message}")]
    Refused { code: ErrorCode, message: String },
    #[error("the browser answered `{request}` with `{got}`")]
    Unexpected { request: String, got: String },
}

/// A tab, loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabInfo {
    pub tab_id: i64,
    pub url: String,
    pub title: String,
}

/// What the page must check before an action carrying secrets (see
/// [`errand_protocol::PageCommand::Act`]): the origin of the field's
/// document, that the field is a secret field, and the values (kept by the
/// content script to blank fields showing them in screenshots). It holds
/// the gate's [`Permit`]: only [`super::gate`] makes one, so no action
/// reaches the browser around the gate.
#[derive(Clone, PartialEq, Eq)]
pub struct Guard {
    pub only_on: Option<String>,
    pub secret_field: bool,
    pub secrets: Vec<String>,
    pub permit: Permit,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("only_on", &self.only_on)
            .field("secret_field", &self.secret_field)
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

/// The browser, as the agent uses it.
pub trait Browser: Send + Sync {
    /// The numbered element list of the tab's page (`marks`: draw the
    /// marks overlay), made whole.
    fn observe(
        &self,
        tab_id: i64,
        marks: bool,
    ) -> impl Future<Output = Result<Observation, BrowserError>> + Send;

    /// Carries out a page action, under `guard`'s conditions when it
    /// carries secrets (`only_on`: the origin the field must be in).
    fn act(
        &self,
        tab_id: i64,
        action: Action,
        guard: Guard,
    ) -> impl Future<Output = Result<Effect, BrowserError>> + Send;

    /// What `action` would set off on the tab's page (see
    /// [`errand_protocol::Stakes`]), without carrying it out.
    fn stakes(
        &self,
        tab_id: i64,
        action: Action,
    ) -> impl Future<Output = Result<errand_protocol::Stakes, BrowserError>> + Send {
        let _ = (tab_id, action);
        async {
            Err(BrowserError::Refused {
                code: ErrorCode::Internal,
                message: "this browser cannot tell an action's stakes".to_owned(),
            })
        }
    }

    /// Puts files into the file input `index`.
    fn set_files(
        &self,
        tab_id: i64,
        index: u32,
        files: Vec<FilePayload>,
        permit: &Permit,
    ) -> impl Future<Output = Result<Effect, BrowserError>> + Send;

    /// Finds the element `locator` describes among those of the tab's
    /// last observation (recipes: see [`errand_protocol::locator`]).
    fn locate(
        &self,
        tab_id: i64,
        locator: Locator,
    ) -> impl Future<Output = Result<Located, BrowserError>> + Send {
        let _ = (tab_id, locator);
        async {
            Err(BrowserError::Refused {
                code: ErrorCode::NoSuchElement,
                message: "this browser cannot locate elements".to_owned(),
            })
        }
    }

    /// Loads `url` in the tab.
    fn navigate(
        &self,
        tab_id: i64,
        url: &str,
        permit: &Permit,
    ) -> impl Future<Output = Result<TabInfo, BrowserError>> + Send;

    /// Opens a new tab at `url`, loaded.
    fn open_tab(
        &self,
        url: &str,
        permit: &Permit,
    ) -> impl Future<Output = Result<TabInfo, BrowserError>> + Send;

    /// The focused window's active tab.
    fn active_tab(&self) -> impl Future<Output = Result<TabInfo, BrowserError>> + Send;

    /// Brings a tab to the front.
    fn activate_tab(
        &self,
        tab_id: i64,
    ) -> impl Future<Output = Result<TabInfo, BrowserError>> + Send;

    /// Closes a tab.
    fn close_tab(&self, tab_id: i64) -> impl Future<Output = Result<(), BrowserError>> + Send;

    /// The open tabs.
    fn list_tabs(&self) -> impl Future<Output = Result<Vec<TabSummary>, BrowserError>> + Send;

    /// A JPEG data URL of the tab's visible part.
    fn capture(&self, tab_id: i64) -> impl Future<Output = Result<String, BrowserError>> + Send;

    /// Undoes what the content script added to the page (marks, dropdowns,
    /// their listeners).
    fn cleanup(&self, tab_id: i64) -> impl Future<Output = Result<(), BrowserError>> + Send;
}

/// What became of an action waiting for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The user approved it.
    Approved,
    /// The user approved it and every action of its kind on its site for
    /// the rest of the task.
    ApprovedForTask,
    /// The user approved it and every action of its kind on its site from
    /// now on (listed and revocable in Settings and `errand approvals`).
    ApprovedOnSite,
    /// The user rejected it.
    Rejected,
    /// Nobody could be asked (`errand run` without a terminal and without
    /// `--approve`): not done, and not the user's choice.
    Unasked,
}

/// The person the task works for, as the agent uses them.
pub trait Operator: Send + Sync {
    /// Tells the user what happened (already scrubbed). `labels`: for a
    /// `step` event, each action's element as the page listed it.
    fn emit(
        &self,
        task_id: &str,
        event: TaskEvent,
        labels: Vec<String>,
    ) -> impl Future<Output = ()> + Send;

    /// Registers that the task waits for the user's answer; the agent then
    /// emits its `question` event (registered first: a quick answer is not
    /// lost).
    fn await_answer(&self, task_id: &str) -> oneshot::Receiver<String>;

    /// Registers that the task waits for the user's approval; the agent
    /// then emits its `approval` event.
    fn await_approval(&self, task_id: &str) -> oneshot::Receiver<Decision>;

    /// The task ended (already recorded); its `finished` event follows.
    fn ended(&self, task_id: &str);
}

/// Stops a task, remembering why.
#[derive(Debug, Clone, Default)]
pub struct Stopper {
    token: CancellationToken,
    reason: Arc<OnceLock<Outcome>>,
}

impl Stopper {
    /// Stops the task; it will end with `outcome` (the first reason wins).
    pub fn stop(&self, outcome: Outcome) {
        let _ = self.reason.set(outcome);
        self.token.cancel();
    }

    /// The token that fires on stop.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Whether the task was stopped.
    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// How a stopped task ends: `stopped`, unless another reason was given.
    pub fn outcome(&self) -> Outcome {
        self.reason.get().cloned().unwrap_or(Outcome::Stopped {})
    }
}

/// The task's pause switch: `Some(take_over)` while paused.
pub type Pause = watch::Receiver<Option<bool>>;

/// The settings in effect and the model they name.
#[derive(Clone)]
pub struct Setup {
    pub settings: Arc<Settings>,
    pub model: Arc<dyn Provider>,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup").field("model", &self.model.model()).finish_non_exhaustive()
    }
}

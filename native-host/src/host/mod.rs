//! The dispatcher: one connection to the extension (native messaging, or the
//! terminal's socket), at most one running task, and the requests the host
//! itself sends to the extension, each waiting for its reply.
//!
//! The message loop never waits on a task: `start_task` spawns the agent,
//! so `stop_task` is handled at once, even during a model call.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use errand_protocol::{
    Action, Body, Effect, Envelope, ErrorCode, FilePayload, Observation, Outcome, PageCommand,
    TabSummary, TaskEvent,
};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

mod dispatch;
pub mod mcp;
pub mod nm;
pub mod panel_api;
mod requests;
mod tasks;
pub mod transport;

use crate::agent::{
    self, Browser, BrowserError, DISCONNECTED, Decision, Guard, Operator, Pause, Permit, Setup,
    Stopper, TabInfo, TaskSpec,
};
use crate::config::Settings;
use crate::llm::{self, Provider};
use crate::memory::store::{Store, StoreError};
use transport::{Incoming, MAX_INBOUND, Outgoing};

/// How long the host waits for the extension to answer a request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The host's version, as `welcome` and `status` report it.
pub const HOST_VERSION: &str = env!("CARGO_PKG_VERSION");

const OUTBOX: usize = 256;
const EVENTS: usize = 256;

/// A task event as local subscribers (the terminal commands) see it.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalEvent {
    pub task_id: String,
    pub event: TaskEvent,
    /// For a `step` event: each action's element as the page listed it
    /// (`<button> Submit`), empty for actions without one.
    pub labels: Vec<String>,
}

/// Why the host refused to do something.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("a task is already running ({0}); stop it first")]
    Busy(String),
    #[error("the task is empty: say what to do")]
    EmptyTask,
    #[error("no task is running")]
    NoTask,
    #[error("task {0} is not running")]
    NotRunning(String),
    #[error("this host already serves a connection")]
    AlreadyServing,
    #[error("task {0} is not waiting for an answer")]
    NoQuestion(String),
    #[error("task {0} is not waiting for an approval")]
    NoApproval(String),
    #[error("there is no earlier task {0} to follow up")]
    NoSuchTask(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HostError {
    /// The protocol error code for the reply.
    pub fn code(&self) -> ErrorCode {
        match self {
            HostError::Busy(_) => ErrorCode::Busy,
            HostError::EmptyTask => ErrorCode::BadMessage,
            HostError::NoTask
            | HostError::NotRunning(_)
            | HostError::NoQuestion(_)
            | HostError::NoApproval(_)
            | HostError::NoSuchTask(_) => ErrorCode::NoTask,
            HostError::AlreadyServing | HostError::Store(_) => ErrorCode::Internal,
        }
    }
}

struct Running {
    task_id: String,
    stop: Stopper,
    handle: Option<JoinHandle<()>>,
    /// `Some(take_over)` while paused.
    pause: tokio::sync::watch::Sender<Option<bool>>,
}

/// A task accepted but not yet started: its reply goes out first.
struct Prepared {
    spec: TaskSpec,
    stop: Stopper,
    pause: Pause,
}

/// Builds the model provider from the settings (rebuilt when they change).
type ProviderFactory = fn(&Settings) -> Arc<dyn Provider>;

struct Inner {
    /// The settings and the model they name; running tasks watch it.
    setup: watch::Sender<Setup>,
    store: Store,
    /// `None` for a host given a fixed provider (tests).
    factory: Option<ProviderFactory>,
    out_tx: mpsc::Sender<Outgoing>,
    out_rx: Mutex<Option<mpsc::Receiver<Outgoing>>>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Body>>>,
    running: Mutex<Option<Running>>,
    /// Tasks waiting for the user's answer to an `ask_user` question.
    questions: Mutex<HashMap<String, oneshot::Sender<String>>>,
    /// Tasks waiting for the user's approval of an action.
    approvals: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    events: broadcast::Sender<LocalEvent>,
    disconnected: AtomicBool,
    request_timeout_ms: AtomicU64,
    /// The last observation of each tab, which the next one may be sent as
    /// a diff against.
    held: Mutex<HashMap<i64, Observation>>,
    /// The MCP client's session, while one is connected (`host/mcp.rs`).
    mcp: Mutex<Option<Arc<crate::tools::Session<Host, Host>>>>,
}

/// Tabs whose last observation is held; past that all are dropped (their
/// next observations come whole).
const HELD_TABS: usize = 8;

/// The host core. Cheap to clone; every clone is the same host.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The `kind` of a message body, for logs and errors.
pub fn kind_of(body: &Body) -> String {
    serde_json::to_value(body)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

impl Host {
    /// A host using the configured OpenAI-compatible model.
    pub fn new(settings: Settings, store: Store) -> Host {
        let provider = llm::build(&settings);
        Host::make(settings, store, provider, Some(llm::build))
    }

    /// A host using `provider` as its model, whatever the settings say.
    pub fn with_provider(settings: Settings, store: Store, provider: Arc<dyn Provider>) -> Host {
        Host::make(settings, store, provider, None)
    }

    fn make(
        settings: Settings,
        store: Store,
        provider: Arc<dyn Provider>,
        factory: Option<ProviderFactory>,
    ) -> Host {
        let (out_tx, out_rx) = mpsc::channel(OUTBOX);
        let (events, _) = broadcast::channel(EVENTS);
        Host {
            inner: Arc::new(Inner {
                setup: watch::Sender::new(Setup { settings: Arc::new(settings), model: provider }),
                store,
                factory,
                out_tx,
                out_rx: Mutex::new(Some(out_rx)),
                next_id: AtomicU64::new(1),
                pending: Mutex::new(HashMap::new()),
                running: Mutex::new(None),
                questions: Mutex::new(HashMap::new()),
                approvals: Mutex::new(HashMap::new()),
                events,
                disconnected: AtomicBool::new(false),
                request_timeout_ms: AtomicU64::new(REQUEST_TIMEOUT.as_millis() as u64),
                held: Mutex::new(HashMap::new()),
                mcp: Mutex::new(None),
            }),
        }
    }

    /// Changes how long requests to the extension may take.
    pub fn set_request_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.inner.request_timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The settings as they are now (the side panel can change them).
    pub fn settings(&self) -> Arc<Settings> {
        self.inner.setup.borrow().settings.clone()
    }

    /// Uses `settings` from now on: the next model call goes to the model
    /// they name.
    pub fn replace_settings(&self, settings: Settings) {
        let model = match self.inner.factory {
            Some(build) => build(&settings),
            None => self.provider(),
        };
        self.inner.setup.send_replace(Setup { settings: Arc::new(settings), model });
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub(crate) fn provider(&self) -> Arc<dyn Provider> {
        self.inner.setup.borrow().model.clone()
    }

    /// Task events, as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<LocalEvent> {
        self.inner.events.subscribe()
    }

    /// The running task's id.
    pub fn running_task(&self) -> Option<String> {
        lock(&self.inner.running).as_ref().map(|r| r.task_id.clone())
    }

    fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    async fn send(&self, env: Envelope) {
        if self.inner.out_tx.send(Outgoing::Message(Box::new(env))).await.is_err() {
            tracing::debug!("the connection is closed; a message was dropped");
        }
    }

    async fn reply(&self, re: u64, body: Body) {
        self.send(Envelope::reply(self.next_id(), re, body)).await;
    }

    async fn reply_error(&self, re: Option<u64>, code: ErrorCode, message: impl Into<String>) {
        self.send(Envelope::error(self.next_id(), re, code, message)).await;
    }

    async fn ack_or_error(&self, re: u64, done: Result<String, HostError>) {
        match done {
            Ok(_) => self.reply(re, Body::Ack {}).await,
            Err(e) => self.reply_error(Some(re), e.code(), e.to_string()).await,
        }
    }
}

#[cfg(test)]
mod tests;

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

pub mod nm;
pub mod panel_api;
pub mod transport;

use crate::agent::{
    self, Browser, BrowserError, DISCONNECTED, Decision, Guard, Operator, Pause, Setup, Stopper,
    TabInfo, TaskSpec,
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

    // ---- Tasks ----

    /// Starts a task: in a new tab at `url`, in tab `tab_id`, or in the
    /// active tab. Returns its id at once; the agent runs in the background.
    pub fn start_task(
        &self,
        task: &str,
        tab_id: Option<i64>,
        url: Option<&str>,
    ) -> Result<String, HostError> {
        let prepared = self.prepare_task(task, tab_id, url)?;
        let id = prepared.spec.id.clone();
        self.launch(prepared);
        Ok(id)
    }

    fn prepare_task(
        &self,
        task: &str,
        tab_id: Option<i64>,
        url: Option<&str>,
    ) -> Result<Prepared, HostError> {
        let task = task.trim();
        if task.is_empty() {
            return Err(HostError::EmptyTask);
        }
        let url = url.map(str::trim).filter(|u| !u.is_empty());
        let mut running = lock(&self.inner.running);
        if let Some(r) = running.as_ref() {
            return Err(HostError::Busy(r.task_id.clone()));
        }
        let id = uuid::Uuid::new_v4().to_string();
        self.inner.store.create_task(&id, task, url, tab_id)?;
        let stop = Stopper::default();
        let (pause_tx, pause) = tokio::sync::watch::channel(None);
        *running = Some(Running {
            task_id: id.clone(),
            stop: stop.clone(),
            handle: None,
            pause: pause_tx,
        });
        tracing::info!(task_id = %id, "task accepted");
        let spec = TaskSpec {
            id,
            task: task.to_owned(),
            tab_id,
            url: url.map(str::to_owned),
            max_steps: self.settings().max_steps,
            context: None,
            allow_sites: Vec::new(),
        };
        Ok(Prepared { spec, stop, pause })
    }

    fn launch(&self, prepared: Prepared) {
        let id = prepared.spec.id.clone();
        let cx = agent::Context {
            browser: self.clone(),
            operator: self.clone(),
            setup: self.inner.setup.subscribe(),
            store: self.inner.store.clone(),
        };
        let handle = tokio::spawn(agent::run(cx, prepared.spec, prepared.stop, prepared.pause));
        let mut running = lock(&self.inner.running);
        match running.as_mut() {
            Some(r) if r.task_id == id => r.handle = Some(handle),
            _ => {} // it already ended
        }
    }

    /// Stops the running task (`task_id`, if given, must name it). The task
    /// ends with outcome `stopped` within milliseconds.
    pub fn stop_task(&self, task_id: Option<&str>) -> Result<String, HostError> {
        self.with_running(task_id, |r| {
            tracing::info!(task_id = %r.task_id, "stopping the task");
            r.stop.stop(Outcome::Stopped {});
            r.task_id.clone()
        })
    }

    /// The running task's id and its pause switch, if `task_id` (when
    /// given) names it.
    fn with_running<T>(
        &self,
        task_id: Option<&str>,
        f: impl FnOnce(&Running) -> T,
    ) -> Result<T, HostError> {
        let running = lock(&self.inner.running);
        match running.as_ref() {
            None => Err(match task_id {
                Some(id) => HostError::NotRunning(id.to_owned()),
                None => HostError::NoTask,
            }),
            Some(r) if task_id.is_some_and(|id| id != r.task_id) => {
                Err(HostError::NotRunning(task_id.unwrap_or_default().to_owned()))
            }
            Some(r) => Ok(f(r)),
        }
    }

    /// Pauses the running task after its current model call or action;
    /// `take_over`: the user acts in the page meanwhile.
    pub fn pause_task(&self, task_id: Option<&str>, take_over: bool) -> Result<String, HostError> {
        self.with_running(task_id, |r| {
            tracing::info!(task_id = %r.task_id, take_over, "pausing the task");
            r.pause.send_replace(Some(take_over));
            r.task_id.clone()
        })
    }

    /// Resumes the paused running task.
    pub fn resume_task(&self, task_id: Option<&str>) -> Result<String, HostError> {
        self.with_running(task_id, |r| {
            tracing::info!(task_id = %r.task_id, "resuming the task");
            r.pause.send_replace(None);
            r.task_id.clone()
        })
    }

    /// Whether the running task is paused.
    pub fn is_paused(&self) -> bool {
        self.with_running(None, |r| r.pause.borrow().is_some()).unwrap_or(false)
    }

    /// Registers that `task_id` waits for the user's approval.
    pub(crate) fn await_approval(&self, task_id: &str) -> oneshot::Receiver<Decision> {
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.approvals).insert(task_id.to_owned(), tx);
        rx
    }

    /// Gives the user's decision to the task waiting for it (the running
    /// task when `task_id` is `None`).
    pub fn approve(&self, task_id: Option<&str>, approved: bool) -> Result<String, HostError> {
        self.decide(task_id, if approved { Decision::Approved } else { Decision::Rejected })
    }

    /// Gives a decision to the task waiting for one: the user's, or that
    /// nobody could be asked ([`Decision::Unasked`]).
    pub fn decide(&self, task_id: Option<&str>, decision: Decision) -> Result<String, HostError> {
        let id = match task_id {
            Some(id) => id.to_owned(),
            None => self.running_task().ok_or(HostError::NoTask)?,
        };
        let tx =
            lock(&self.inner.approvals).remove(&id).ok_or(HostError::NoApproval(id.clone()))?;
        tx.send(decision).map_err(|_| HostError::NoApproval(id.clone()))?;
        Ok(id)
    }

    /// Registers that `task_id` waits for the user's answer.
    pub(crate) fn await_answer(&self, task_id: &str) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.questions).insert(task_id.to_owned(), tx);
        rx
    }

    /// Gives the user's answer to the task waiting for it (the running task
    /// when `task_id` is `None`). Returns the task's id.
    pub fn answer(&self, task_id: Option<&str>, text: &str) -> Result<String, HostError> {
        let id = match task_id {
            Some(id) => id.to_owned(),
            None => self.running_task().ok_or(HostError::NoTask)?,
        };
        let tx =
            lock(&self.inner.questions).remove(&id).ok_or(HostError::NoQuestion(id.clone()))?;
        tx.send(text.to_owned()).map_err(|_| HostError::NoQuestion(id.clone()))?;
        Ok(id)
    }

    /// Prepares a task that continues `previous`: in its tab, with its task
    /// and answer given to the model.
    fn prepare_follow_up(&self, previous: &str, task: &str) -> Result<Prepared, HostError> {
        let prev = self
            .inner
            .store
            .task(previous)?
            .ok_or_else(|| HostError::NoSuchTask(previous.to_owned()))?;
        let mut prepared = self.prepare_task(task, prev.tab_id, None)?;
        prepared.spec.context = Some(crate::agent::prompt::follow_up_context(
            &prev.task,
            prev.answer.as_deref().or(prev.error.as_deref()).unwrap_or(""),
        ));
        Ok(prepared)
    }

    /// Called by the agent when its task ended (already recorded).
    pub(crate) fn task_ended(&self, task_id: &str) {
        let mut running = lock(&self.inner.running);
        if running.as_ref().is_some_and(|r| r.task_id == task_id) {
            *running = None;
        }
    }

    /// Sends a task event to the extension and to local subscribers.
    pub(crate) async fn emit(&self, task_id: &str, event: TaskEvent, labels: Vec<String>) {
        let body = Body::TaskEvent { task_id: task_id.to_owned(), event: event.clone() };
        self.send(Envelope::new(self.next_id(), body)).await;
        let _ = self.inner.events.send(LocalEvent { task_id: task_id.to_owned(), event, labels });
    }

    // ---- Requests to the extension ----

    /// Sends a request to the extension and waits for its reply. An `error`
    /// reply becomes [`BrowserError::Refused`].
    pub async fn request(&self, body: Body) -> Result<Body, BrowserError> {
        let kind = kind_of(&body);
        let (what, hint) = match &body {
            Body::Page { tab_id, command } => {
                let op = match command {
                    PageCommand::Observe { .. } => "observe".to_owned(),
                    PageCommand::Act { action, .. } => format!("act: {}", action.name()),
                    PageCommand::Cleanup {} => "cleanup".to_owned(),
                    PageCommand::SetFiles { .. } => "set_files".to_owned(),
                };
                (
                    format!("the page in tab {tab_id} (`{op}`)"),
                    ": was the tab closed, or is the page stuck?",
                )
            }
            _ => (format!("the browser (`{kind}`)"), ": is the extension running?"),
        };
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, tx);
        let _guard = PendingGuard { host: self, id };
        if self.inner.disconnected.load(Ordering::SeqCst) {
            return Err(BrowserError::Disconnected);
        }
        let env = Box::new(Envelope::new(id, body));
        if self.inner.out_tx.send(Outgoing::Message(env)).await.is_err() {
            return Err(BrowserError::Disconnected);
        }
        let timeout = Duration::from_millis(self.inner.request_timeout_ms.load(Ordering::Relaxed));
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Body::Error { code, message })) => Err(BrowserError::Refused { code, message }),
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(BrowserError::Disconnected),
            Err(_) => Err(BrowserError::Timeout { what, secs: timeout.as_secs(), hint }),
        }
    }

    /// `open_tab {url}` → the loaded tab.
    pub async fn open_tab(&self, url: &str) -> Result<TabInfo, BrowserError> {
        tab_info("open_tab", self.request(Body::OpenTab { url: url.to_owned() }).await?)
    }

    /// `active_tab {}` → the focused window's active tab.
    pub async fn active_tab(&self) -> Result<TabInfo, BrowserError> {
        tab_info("active_tab", self.request(Body::ActiveTab {}).await?)
    }

    /// `navigate {tab_id, url}` → the loaded tab.
    pub async fn navigate(&self, tab_id: i64, url: &str) -> Result<TabInfo, BrowserError> {
        let body = Body::Navigate { tab_id, url: url.to_owned() };
        tab_info("navigate", self.request(body).await?)
    }

    /// `page {observe}` → the numbered element list. The page may answer
    /// with only what changed since the observation held for the tab; it is
    /// made whole here (or, when it does not fit, asked for again whole).
    pub async fn observe(&self, tab_id: i64, marks: bool) -> Result<Observation, BrowserError> {
        let since = lock(&self.inner.held).get(&tab_id).map(|o| o.seq).filter(|s| *s != 0);
        let mut obs = self.observe_since(tab_id, marks, since).await?;
        if obs.diff.is_some() {
            let resolved = obs.resolve(lock(&self.inner.held).get(&tab_id));
            obs = match resolved {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(tab_id, "{e}: observing the page whole");
                    let whole = self.observe_since(tab_id, marks, None).await?;
                    whole.resolve(None).map_err(|_| BrowserError::Unexpected {
                        request: "page observe".to_owned(),
                        got: "a diff against nothing".to_owned(),
                    })?
                }
            };
        }
        let mut held = lock(&self.inner.held);
        if held.len() >= HELD_TABS && !held.contains_key(&tab_id) {
            held.clear();
        }
        held.insert(tab_id, obs.clone());
        Ok(obs)
    }

    async fn observe_since(
        &self,
        tab_id: i64,
        marks: bool,
        since: Option<u64>,
    ) -> Result<Observation, BrowserError> {
        let body =
            Body::Page { tab_id, command: PageCommand::Observe { marks, full: false, since } };
        match self.request(body).await? {
            Body::Observation(o) => Ok(o),
            other => Err(unexpected("page observe", &other)),
        }
    }

    /// `page {act}` → what the action did.
    pub async fn act(&self, tab_id: i64, action: Action) -> Result<Effect, BrowserError> {
        self.act_guarded(tab_id, action, Guard::default()).await
    }

    /// `page {act}` for an action carrying secrets: the page carries it
    /// out only under `guard`'s conditions (see [`PageCommand::Act`]).
    pub async fn act_guarded(
        &self,
        tab_id: i64,
        action: Action,
        guard: Guard,
    ) -> Result<Effect, BrowserError> {
        let Guard { only_on, secret_field, secrets } = guard;
        let command = PageCommand::Act { action, only_on, secret_field, secrets };
        let body = Body::Page { tab_id, command };
        match self.request(body).await? {
            Body::ActionDone { effect } => Ok(effect),
            other => Err(unexpected("page act", &other)),
        }
    }

    /// `capture {tab_id}` → a JPEG data URL of the visible part.
    pub async fn capture(&self, tab_id: i64) -> Result<String, BrowserError> {
        match self.request(Body::Capture { tab_id }).await? {
            Body::Captured { data_url } => Ok(data_url),
            other => Err(unexpected("capture", &other)),
        }
    }

    // ---- The connection ----

    /// Serves one connection until the other side closes it. On disconnect
    /// the running task is stopped and recorded as failed ("the browser
    /// disconnected"). A host serves at most one connection.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> Result<(), HostError>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let out_rx = lock(&self.inner.out_rx).take().ok_or(HostError::AlreadyServing)?;
        transport::spawn_writer(writer, out_rx);
        let mut incoming = transport::spawn_reader(reader, MAX_INBOUND);
        tracing::info!("connected");
        while let Some(item) = incoming.recv().await {
            self.handle(item).await;
        }
        tracing::info!("the connection closed");
        self.on_disconnect().await;
        Ok(())
    }

    async fn on_disconnect(&self) {
        self.inner.disconnected.store(true, Ordering::SeqCst);
        let handle = {
            let mut running = lock(&self.inner.running);
            running.as_mut().and_then(|r| {
                tracing::warn!(task_id = %r.task_id, "the browser disconnected during the task");
                r.stop.stop(Outcome::Failed { error: DISCONNECTED.to_owned() });
                r.handle.take()
            })
        };
        // Requests still waiting fail at once.
        lock(&self.inner.pending).clear();
        if let Some(handle) = handle {
            if tokio::time::timeout(Duration::from_secs(5), handle).await.is_err() {
                tracing::error!("the task did not end within 5 s of the disconnect");
            }
        }
        let (done, wait) = oneshot::channel();
        if self.inner.out_tx.send(Outgoing::Close(done)).await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), wait).await;
        }
    }

    /// Handles one incoming item.
    async fn handle(&self, item: Incoming) {
        match item {
            Err(e) => self.reply_error(e.request_id(), e.code(), e.to_string()).await,
            Ok(env) => self.dispatch(env).await,
        }
    }

    async fn dispatch(&self, env: Envelope) {
        let id = env.id;
        if let Some(re) = env.re {
            let waiting = lock(&self.inner.pending).remove(&re);
            if let Some(tx) = waiting {
                if tx.send(env.body).is_err() {
                    tracing::debug!(re, "a reply came for a request nobody waits for any more");
                }
                return;
            }
        }
        match env.body {
            Body::Hello { extension_version } => {
                tracing::info!(%extension_version, "the extension said hello");
                self.reply(id, Body::Welcome { host_version: HOST_VERSION.to_owned() }).await;
            }
            Body::StartTask { task, tab_id, url, allow_sites } => {
                match self.prepare_task(&task, tab_id, url.as_deref()) {
                    Ok(mut prepared) => {
                        prepared.spec.allow_sites = allow_sites;
                        let task_id = prepared.spec.id.clone();
                        self.reply(id, Body::TaskAccepted { task_id }).await;
                        self.launch(prepared);
                    }
                    Err(e) => self.reply_error(Some(id), e.code(), e.to_string()).await,
                }
            }
            Body::FollowUp { task_id: previous, task } => {
                match self.prepare_follow_up(&previous, &task) {
                    Ok(prepared) => {
                        let task_id = prepared.spec.id.clone();
                        self.reply(id, Body::TaskAccepted { task_id }).await;
                        self.launch(prepared);
                    }
                    Err(e) => self.reply_error(Some(id), e.code(), e.to_string()).await,
                }
            }
            Body::Answer { task_id, text } => {
                let done = self.answer(task_id.as_deref(), &text);
                self.ack_or_error(id, done).await;
            }
            Body::StopTask { task_id } => {
                let done = self.stop_task(task_id.as_deref());
                self.ack_or_error(id, done).await;
            }
            Body::PauseTask { task_id, take_over } => {
                let done = self.pause_task(task_id.as_deref(), take_over);
                let task = done.as_ref().ok().cloned();
                self.ack_or_error(id, done).await;
                if let Some(task) = task {
                    self.emit(&task, TaskEvent::Paused { take_over }, Vec::new()).await;
                }
            }
            Body::ResumeTask { task_id } => {
                let done = self.resume_task(task_id.as_deref());
                let task = done.as_ref().ok().cloned();
                self.ack_or_error(id, done).await;
                if let Some(task) = task {
                    self.emit(&task, TaskEvent::Resumed {}, Vec::new()).await;
                }
            }
            Body::Approve { task_id, approved } => {
                let done = self.approve(task_id.as_deref(), approved);
                self.ack_or_error(id, done).await;
            }
            Body::Ping { pad: _, reply_bytes } => {
                if reply_bytes > errand_protocol::MAX_PONG {
                    let why = format!(
                        "a pong of {reply_bytes} bytes was asked for; at most {} are sent",
                        errand_protocol::MAX_PONG
                    );
                    self.reply_error(Some(id), ErrorCode::BadMessage, why).await;
                } else {
                    let data = "x".repeat(reply_bytes as usize);
                    self.reply(id, Body::Pong { data }).await;
                }
            }
            Body::GetStatus {} => {
                let s = self.settings();
                let body = Body::Status {
                    host_version: HOST_VERSION.to_owned(),
                    model: s.model.clone(),
                    base_url: s.base_url.clone(),
                    running_task: self.running_task(),
                    configured: s.is_configured(),
                    paused: self.is_paused(),
                };
                self.reply(id, body).await;
            }
            body @ (Body::ListTasks { .. }
            | Body::GetTask { .. }
            | Body::GetSettings {}
            | Body::SaveSettings { .. }
            | Body::TestConnection {}
            | Body::GetProfile {}
            | Body::SetFact { .. }
            | Body::SetSecret { .. }
            | Body::Forget { .. }) => {
                // Reading the store, the files or the model server must not
                // hold up the message loop (a `stop_task` behind it).
                let host = self.clone();
                tokio::spawn(async move {
                    match crate::host::panel_api::handle(&host, body).await {
                        Ok(reply) => host.reply(id, reply).await,
                        Err(e) => host.reply_error(Some(id), e.code(), e.to_string()).await,
                    }
                });
            }
            Body::Error { code, message } => {
                // Never answer an error with an error.
                tracing::warn!(?code, re = ?env.re, "the extension reported: {message}");
            }
            body @ (Body::TabReady { .. }
            | Body::Captured { .. }
            | Body::Observation(_)
            | Body::ActionDone { .. }
            | Body::Ack {})
                if env.re.is_some() =>
            {
                tracing::warn!(re = ?env.re, "dropped a late `{}` reply", kind_of(&body));
            }
            body => {
                let kind = kind_of(&body);
                tracing::warn!("refused a `{kind}` message");
                self.reply_error(
                    Some(id),
                    ErrorCode::NotAllowed,
                    format!("the host does not accept `{kind}` messages"),
                )
                .await;
            }
        }
    }
}

/// Removes a pending request when its future ends or is dropped.
struct PendingGuard<'a> {
    host: &'a Host,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.host.inner.pending).remove(&self.id);
    }
}

pub(crate) fn unexpected(request: &str, got: &Body) -> BrowserError {
    BrowserError::Unexpected { request: request.to_owned(), got: kind_of(got) }
}

pub(crate) fn tab_info(request: &str, body: Body) -> Result<TabInfo, BrowserError> {
    match body {
        Body::TabReady { tab_id, url, title } => Ok(TabInfo { tab_id, url, title }),
        other => Err(unexpected(request, &other)),
    }
}

/// The host is the agent's browser: each call a request to the extension.
impl Browser for Host {
    async fn observe(&self, tab_id: i64, marks: bool) -> Result<Observation, BrowserError> {
        Host::observe(self, tab_id, marks).await
    }

    async fn act(&self, tab_id: i64, action: Action, guard: Guard) -> Result<Effect, BrowserError> {
        self.act_guarded(tab_id, action, guard).await
    }

    async fn set_files(
        &self,
        tab_id: i64,
        index: u32,
        files: Vec<FilePayload>,
    ) -> Result<Effect, BrowserError> {
        let body = Body::Page { tab_id, command: PageCommand::SetFiles { index, files } };
        match self.request(body).await? {
            Body::ActionDone { effect } => Ok(effect),
            other => Err(unexpected("page set_files", &other)),
        }
    }

    async fn navigate(&self, tab_id: i64, url: &str) -> Result<TabInfo, BrowserError> {
        Host::navigate(self, tab_id, url).await
    }

    async fn open_tab(&self, url: &str) -> Result<TabInfo, BrowserError> {
        Host::open_tab(self, url).await
    }

    async fn active_tab(&self) -> Result<TabInfo, BrowserError> {
        Host::active_tab(self).await
    }

    async fn activate_tab(&self, tab_id: i64) -> Result<TabInfo, BrowserError> {
        tab_info("activate_tab", self.request(Body::ActivateTab { tab_id }).await?)
    }

    async fn close_tab(&self, tab_id: i64) -> Result<(), BrowserError> {
        self.request(Body::CloseTab { tab_id }).await.map(drop)
    }

    async fn list_tabs(&self) -> Result<Vec<TabSummary>, BrowserError> {
        match self.request(Body::ListTabs {}).await? {
            Body::Tabs { tabs } => Ok(tabs),
            other => Err(unexpected("list_tabs", &other)),
        }
    }

    async fn capture(&self, tab_id: i64) -> Result<String, BrowserError> {
        Host::capture(self, tab_id).await
    }

    async fn cleanup(&self, tab_id: i64) -> Result<(), BrowserError> {
        let body = Body::Page { tab_id, command: PageCommand::Cleanup {} };
        self.request(body).await.map(drop)
    }
}

/// The host is the agent's operator: events go to the extension and the
/// local subscribers, answers and approvals come from the side panel or
/// the terminal.
impl Operator for Host {
    async fn emit(&self, task_id: &str, event: TaskEvent, labels: Vec<String>) {
        Host::emit(self, task_id, event, labels).await
    }

    fn await_answer(&self, task_id: &str) -> oneshot::Receiver<String> {
        Host::await_answer(self, task_id)
    }

    fn await_approval(&self, task_id: &str) -> oneshot::Receiver<Decision> {
        Host::await_approval(self, task_id)
    }

    fn ended(&self, task_id: &str) {
        self.task_ended(task_id)
    }
}

#[cfg(test)]
mod tests;

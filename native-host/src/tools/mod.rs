//! The tools layer: one MCP tool call at a time, run through the agent's
//! ports ([`Browser`], [`Operator`]) under the agent's rules, for a caller
//! that is not Errand's model (`errand mcp`).
//!
//! A [`Session`] is one MCP client's connection, recorded as a task (its
//! client's name in the task's text, each call a step). Every call goes
//! through the same checks as the agent's actions, from the same code:
//!
//! - the closed [`Action`] vocabulary: each action tool's input schema and
//!   description come from it ([`tool_list`]; a unit test checks every
//!   action kind has its tool or is named as the agent's own);
//! - element numbers only from the latest observation (`observe` first);
//! - every action through the agent's gate (`crate::agent::gate`): the
//!   site lists on every address and frame it touches, what it would set
//!   off judged and approvals asked through the [`Operator`] (the side
//!   panel; a rejection is a tool error saying so), secrets as
//!   `{{secret:NAME}}` filled only on their origins and into secret fields;
//!   every page observed is checked too (the tab goes back);
//! - every reply scrubbed of every value filled or allowed on the page
//!   ([`crate::memory::secrets::scrubber_for`]);
//! - tabs: only those the caller opened or the user handed over
//!   ([`Session::hand_over`], the side panel's "Let <client> use this tab");
//! - observations: the first whole, later ones as what changed since the
//!   last one sent; each reply within a token budget (default
//!   [`DEFAULT_MAX_TOKENS`]), from the visible part on, with how to get
//!   more (a `page` number, `scroll`, `find`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use errand_protocol::{Action, ActionRecord, Observation, Outcome, StepReport, TaskEvent, Verdict};
use serde_json::{Value, json};
use tokio::sync::{Mutex, watch};

use crate::agent::approval::Approval;
use crate::agent::gate::{Asker, Gate, Grants, Ran};
use crate::agent::prompt;
use crate::agent::tabs;
use crate::agent::{Browser, BrowserError, Decision, Operator, Setup, Stopper};
use crate::config::Settings;
use crate::memory::scrub::Scrubber;
use crate::memory::secrets::{self, Secrets};
use crate::memory::store::{StepRow, Store};
use crate::sites::SitePolicy;

/// An observation reply's default limit, in tokens (about 4 characters each).
pub const DEFAULT_MAX_TOKENS: usize = 8_000;
/// The smallest limit a caller may set.
const MIN_MAX_TOKENS: usize = 500;
/// Lines `find` returns at most.
const FIND_LIMIT: usize = 60;

/// Actions that are the agent's own (talking to its user, finishing its
/// task) or reached through the `tabs` tool, not tools of their own.
pub const NOT_TOOLS: &[(&str, &str)] = &[
    ("new_tab", "tabs {action: open}"),
    ("switch_tab", "tabs {action: switch}"),
    ("close_tab", "tabs {action: close}"),
    ("ask_user", "the caller talks to its own user"),
    ("done", "the caller ends its own task"),
    ("report_infeasible", "the caller ends its own task"),
    ("send_message", "the caller talks to its own user"),
];

/// One tool as `tools/list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// What a tool call gives back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    /// A JPEG data URL (a marked screenshot).
    pub image: Option<String>,
    pub is_error: bool,
}

impl Reply {
    fn ok(text: impl Into<String>) -> Reply {
        Reply { text: text.into(), image: None, is_error: false }
    }

    fn error(text: impl Into<String>) -> Reply {
        Reply { text: text.into(), image: None, is_error: true }
    }
}

/// Every tool: `observe`, `find`, `tabs`, and one per action of the
/// vocabulary (schemas and descriptions generated from [`Action`]).
pub fn tool_list() -> Vec<ToolSpec> {
    let mut out = vec![
        ToolSpec {
            name: "observe".into(),
            description: "Read the page in the current tab as Errand's compact list: headings \
                (`# …`), text, and one line per element you can act on, starting with its number \
                and its kind (`3<button>Sign in`, `5<email value=\"ada@example.com\">`, \
                `8>Pricing` for a link; `*` marks an element new since the last observe): the \
                numbers are what the other tools take. The \
                first call returns the whole page; later ones only what changed since the last \
                observe (pass full=true for all of it). A reply never exceeds max_tokens: it \
                starts at the visible part and says how to get the rest (page, scroll, find). \
                screenshot=true adds a JPEG of the visible part with the numbers drawn (secret \
                fields blanked)."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "screenshot": {"type": "boolean", "description": "Add a marked screenshot."},
                    "full": {"type": "boolean", "description": "The whole list, not what changed."},
                    "max_tokens": {"type": "integer", "description": "The reply's limit in tokens (default 8000)."},
                    "page": {"type": "integer", "description": "Which part of a long page (from 1)."}
                }
            }),
        },
        ToolSpec {
            name: "find".into(),
            description: "The elements of the latest observation whose text matches `query` \
                (any case), with their numbers, so that you need not read the whole page."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Words to look for."}},
                "required": ["query"]
            }),
        },
        ToolSpec {
            name: "tabs".into(),
            description: "The tabs this session may use: `list` them, `open` one at a url, \
                `switch` to one (tab_id), `close` one (tab_id, the current when absent). Only \
                tabs this session opened, or the user handed over in Errand's side panel, can be \
                used."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "open", "switch", "close"]},
                    "url": {"type": "string"},
                    "tab_id": {"type": "integer"}
                },
                "required": ["action"]
            }),
        },
    ];
    for (name, description, schema) in crate::llm::schema::action_parameters() {
        if NOT_TOOLS.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let description = match name.as_str() {
            "goto" => format!("{description} Opens a tab of this session when there is none."),
            _ if schema["properties"].get("index").is_some()
                || schema["properties"].get("from").is_some() =>
            {
                format!("{description} Element numbers come from the latest `observe`.")
            }
            _ => description,
        };
        out.push(ToolSpec { name, description, input_schema: schema });
    }
    out
}

/// What a session keeps between calls.
#[derive(Default)]
struct State {
    /// The tab the session works in.
    tab: Option<i64>,
    /// The tabs the session opened (the only ones it may use).
    owned: Vec<i64>,
    /// The latest observation (scrubbed): element numbers come from it.
    obs: Option<Observation>,
    /// The text of the last observation sent, its tab and URL: the next
    /// is sent as what changed.
    sent: Option<(i64, String, String)>,
    step: u32,
    secrets: Secrets,
    /// Secrets filled in this session: name → value.
    filled: BTreeMap<String, String>,
    origins: Vec<String>,
    scrubber: Scrubber,
}

/// One MCP client's session, recorded as the task `id`.
pub struct Session<B, O> {
    browser: B,
    operator: O,
    setup: watch::Receiver<Setup>,
    store: Store,
    id: String,
    client: String,
    stop: Stopper,
    state: Mutex<State>,
    finished: std::sync::atomic::AtomicBool,
    /// Tabs the user handed over in the side panel (kept apart from the
    /// state: the panel must not wait behind a call waiting for approval).
    handed: std::sync::Mutex<Vec<i64>>,
    /// What the user approved for this session, or always on a site.
    grants: Grants,
}

impl<B: Browser, O: Operator> Session<B, O> {
    /// A session for `client`, recorded as the (already created) task `id`;
    /// `stop` ends it (the side panel's Stop). Emits the task's `started`
    /// event: the side panel shows "Driven by <client>".
    pub async fn start(
        browser: B,
        operator: O,
        setup: watch::Receiver<Setup>,
        store: Store,
        id: String,
        client: String,
        stop: Stopper,
    ) -> Session<B, O> {
        let settings = setup.borrow().settings.clone();
        let secrets = Secrets::load(&settings.data_dir).unwrap_or_else(|e| {
            tracing::error!("cannot read the secrets: {e}");
            Secrets::default()
        });
        crate::memory::scrub::scrub_log_too(secrets.values());
        let state = State { secrets, ..State::default() };
        let session = Session {
            browser,
            operator,
            setup,
            store: store.clone(),
            id,
            client,
            stop,
            state: Mutex::new(state),
            finished: std::sync::atomic::AtomicBool::new(false),
            handed: std::sync::Mutex::new(Vec::new()),
            grants: Grants::new(Some(store.clone())),
        };
        let started = TaskEvent::Started { task: session.title(), tab_id: 0, url: String::new() };
        session.operator.emit(&session.id, started, Vec::new()).await;
        session
    }

    /// The task's title: "Driven by <client> (MCP)".
    pub fn title(&self) -> String {
        session_title(&self.client)
    }

    /// The session's task id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the user stopped the session.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_stopped()
    }

    fn settings(&self) -> Arc<Settings> {
        self.setup.borrow().settings.clone()
    }

    fn sites(&self) -> SitePolicy {
        SitePolicy::new(&self.settings().sites)
    }

    /// The user lets the session use tab `tab_id` (the side panel's "Let
    /// <client> use this tab"); it works there when it has no tab yet.
    pub fn hand_over(&self, tab_id: i64) {
        let mut handed = self.handed.lock().unwrap_or_else(|e| e.into_inner());
        if !handed.contains(&tab_id) {
            handed.push(tab_id);
        }
        tracing::info!(task_id = %self.id, tab_id, "the user handed a tab to the MCP client");
    }

    /// Takes the tabs handed over since the last call into the state.
    fn take_handed(&self, state: &mut State) {
        let handed: Vec<i64> =
            std::mem::take(&mut *self.handed.lock().unwrap_or_else(|e| e.into_inner()));
        for tab in handed {
            if !state.owned.contains(&tab) {
                state.owned.push(tab);
            }
            if state.tab.is_none() {
                state.tab = Some(tab);
                state.obs = None;
            }
        }
    }

    /// Waits until the user stops the session (the side panel's Stop).
    pub async fn stopped(&self) {
        self.stop.token().cancelled().await
    }

    /// Ends the session (once): recorded, the operator told, `finished`
    /// sent. A stopped session refuses every later call.
    pub async fn finish(&self) {
        if self.finished.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let outcome = if self.stop.is_stopped() {
            self.stop.outcome()
        } else {
            Outcome::Done { answer: format!("{} disconnected", self.client), success: true }
        };
        let scrubber = self.state.lock().await.scrubber.clone();
        let outcome = scrubber.serde(outcome);
        if let Err(e) = self.store.finish_task(&self.id, &outcome) {
            tracing::error!(task_id = %self.id, "cannot record the session's end: {e}");
        }
        let tab = self.state.lock().await.tab;
        if let Some(tab) = tab {
            let _ =
                tokio::time::timeout(Duration::from_millis(500), self.browser.cleanup(tab)).await;
        }
        self.operator.ended(&self.id);
        self.operator.emit(&self.id, TaskEvent::Finished { outcome }, Vec::new()).await;
        // Whoever waits for a stop is done waiting.
        self.stop.token().cancel();
    }

    /// Runs one tool call. The reply is scrubbed of every secret value
    /// filled in the session or allowed on the page.
    pub async fn call(&self, name: &str, args: Value) -> Reply {
        if self.stop.is_stopped() {
            return Reply::error(format!(
                "Errand's session for {} was stopped by the user in Errand's side panel; \
                 reconnect to start a new one",
                self.client
            ));
        }
        let mut state = self.state.lock().await;
        self.take_handed(&mut state);
        let args = if args.is_null() { json!({}) } else { args };
        let reply = tokio::select! {
            biased;
            _ = self.stop.token().cancelled() => Reply::error("stopped by the user in Errand's side panel"),
            reply = self.dispatch(&mut state, name, args) => reply,
        };
        let scrubber = state.scrubber.clone();
        Reply { text: scrubber.text(&reply.text), ..reply }
    }

    async fn dispatch(&self, state: &mut State, name: &str, args: Value) -> Reply {
        match name {
            "observe" => self.observe(state, &args).await,
            "find" => self.find(state, &args).await,
            "tabs" => self.tabs(state, &args).await,
            _ => {
                let Some(spec) = tool_list().into_iter().find(|t| t.name == name) else {
                    return Reply::error(format!("there is no tool `{name}`"));
                };
                let action: Action = match serde_json::from_value(json!({ spec.name: args })) {
                    Ok(a) => a,
                    Err(e) => return Reply::error(format!("bad arguments for `{name}`: {e}")),
                };
                self.action(state, action).await
            }
        }
    }

    /// The scrubber follows the page (`url`, frames of `frames`).
    fn enter(state: &mut State, url: &str, frames: &[String]) {
        let mut origins: Vec<String> = secrets::origin_of(url).into_iter().collect();
        for o in frames.iter().filter_map(|f| secrets::origin_of(f)) {
            if !origins.contains(&o) {
                origins.push(o);
            }
        }
        if origins != state.origins || state.scrubber.is_empty() {
            state.origins = origins;
            state.scrubber = secrets::scrubber_for(&state.secrets, &state.filled, &state.origins);
        }
    }

    /// Observes the tab, scrubbed at entry; a page the site lists refuse
    /// is left (the tab goes back) and reported as an error.
    async fn fresh(&self, state: &mut State, tab: i64, marks: bool) -> Result<Observation, String> {
        let mut obs = self.browser.observe(tab, marks).await.map_err(|e| e.to_string())?;
        let frames: Vec<String> = obs.elements.iter().filter_map(|e| e.origin.clone()).collect();
        Self::enter(state, &obs.url, &frames);
        state.scrubber.observation(&mut obs);
        if let Err(refused) = self.sites().check(&obs.url) {
            let sites = self.sites();
            let asker = Asking {
                operator: &self.operator,
                id: &self.id,
                step: 0,
                scrubber: Scrubber::default(),
            };
            let (secrets, uploads) = (Secrets::default(), std::path::PathBuf::new());
            let gate = Gate {
                browser: &self.browser,
                asker: &asker,
                sites: &sites,
                secrets: &secrets,
                grants: &self.grants,
                uploads: &uploads,
            };
            let back = gate.leave(tab).await;
            state.obs = None;
            return Err(format!(
                "the tab reached {}: {refused}. {back}",
                prompt::cut(&obs.url, 120)
            ));
        }
        state.obs = Some(obs.clone());
        Ok(obs)
    }

    fn tab(state: &State) -> Result<i64, Reply> {
        state.tab.ok_or_else(|| {
            Reply::error(
                "this session has no tab yet: open one with `goto` (a url) or `tabs` {action: open}",
            )
        })
    }

    async fn observe(&self, state: &mut State, args: &Value) -> Reply {
        let tab = match Self::tab(state) {
            Ok(t) => t,
            Err(r) => return r,
        };
        let screenshot = args["screenshot"].as_bool().unwrap_or(false);
        let full = args["full"].as_bool().unwrap_or(false);
        let max_tokens = args["max_tokens"]
            .as_u64()
            .map(|n| (n as usize).max(MIN_MAX_TOKENS))
            .unwrap_or(DEFAULT_MAX_TOKENS);
        let page = args["page"].as_u64().unwrap_or(1).max(1) as usize;
        let marks = screenshot || self.settings().marks;
        let obs = match self.fresh(state, tab, marks).await {
            Ok(o) => o,
            Err(e) => {
                self.record(state, "observe", Vec::new(), Some(&e)).await;
                return Reply::error(e);
            }
        };
        let previous = state.sent.take();
        let text = render(&obs, tab, previous.as_ref(), full, max_tokens, page);
        state.sent = Some((tab, obs.url.clone(), obs.text.clone()));
        let image = if screenshot {
            match self.browser.capture(tab).await {
                Ok(shot) => Some(shot),
                Err(e) => return Reply::error(format!("observed, but no screenshot: {e}")),
            }
        } else {
            None
        };
        self.record(state, "observe", Vec::new(), None).await;
        Reply { text, image, is_error: false }
    }

    async fn find(&self, state: &mut State, args: &Value) -> Reply {
        let query = args["query"].as_str().unwrap_or("").trim().to_lowercase();
        if query.is_empty() {
            return Reply::error("find needs a `query`");
        }
        if state.obs.is_none() {
            let tab = match Self::tab(state) {
                Ok(t) => t,
                Err(r) => return r,
            };
            if let Err(e) = self.fresh(state, tab, false).await {
                return Reply::error(e);
            }
        }
        let Some(obs) = state.obs.as_ref() else {
            return Reply::error("nothing observed yet: call `observe` first");
        };
        let found: Vec<&str> = obs
            .text
            .lines()
            .filter(|l| l.to_lowercase().contains(&query) && element_number(l).is_some())
            .collect();
        if found.is_empty() {
            return Reply::ok(format!(
                "no element of the latest observation matches \"{query}\"; scroll or observe again"
            ));
        }
        let shown = found.len().min(FIND_LIMIT);
        let mut text = found[..shown].join("\n");
        if found.len() > shown {
            text.push_str(&format!("\n… {} more: use a longer query", found.len() - shown));
        }
        Reply::ok(text)
    }

    async fn tabs(&self, state: &mut State, args: &Value) -> Reply {
        let tab_id = args["tab_id"].as_i64();
        match args["action"].as_str().unwrap_or("list") {
            "list" => match self.browser.list_tabs().await {
                Ok(all) => {
                    let lines: Vec<String> = all
                        .iter()
                        .filter(|t| state.owned.contains(&t.tab_id))
                        .map(|t| {
                            let mark = if Some(t.tab_id) == state.tab { " (current)" } else { "" };
                            format!("tab {}{mark}: \"{}\" {}", t.tab_id, t.title, t.url)
                        })
                        .collect();
                    if lines.is_empty() {
                        Reply::ok("this session has no tabs; open one with goto or tabs open")
                    } else {
                        Reply::ok(lines.join("\n"))
                    }
                }
                Err(e) => Reply::error(e.to_string()),
            },
            "open" => {
                let url = args["url"].as_str().unwrap_or("about:blank").to_owned();
                self.action(state, Action::NewTab { url: Some(url) }).await
            }
            "switch" => match tab_id {
                Some(id) if state.owned.contains(&id) => {
                    self.action(state, Action::SwitchTab { tab_id: id }).await
                }
                Some(id) => Reply::error(not_owned(id)),
                None => Reply::error("switch needs a tab_id"),
            },
            "close" => match tab_id.or(state.tab) {
                Some(id) if state.owned.contains(&id) => {
                    self.action(state, Action::CloseTab { tab_id: Some(id) }).await
                }
                Some(id) => Reply::error(not_owned(id)),
                None => Reply::error("this session has no tab to close"),
            },
            other => {
                Reply::error(format!("unknown tabs action `{other}`: list, open, switch, close"))
            }
        }
    }

    /// Runs one action behind the agent's checks, records it and tells the
    /// side panel.
    async fn action(&self, state: &mut State, action: Action) -> Reply {
        let (ok, detail, verdict) = self.run(state, &action).await;
        let detail = state.scrubber.text(&detail);
        let verdict = verdict.map(|v| Verdict { reason: state.scrubber.text(&v.reason), ..v });
        let record =
            ActionRecord { action, ok, detail: detail.clone(), ms: None, effect: None, verdict };
        self.record(state, "", vec![record], None).await;
        if ok { Reply::ok(detail) } else { Reply::error(detail) }
    }

    async fn run(&self, state: &mut State, action: &Action) -> (bool, String, Option<Verdict>) {
        // Tab actions reach only the session's own tabs.
        if let Action::SwitchTab { tab_id } | Action::CloseTab { tab_id: Some(tab_id) } = action {
            if !state.owned.contains(tab_id) {
                return (false, not_owned(*tab_id), None);
            }
        }
        if let Action::Wait { ms } = action {
            let ms = (*ms).min(crate::agent::MAX_WAIT_MS);
            tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
            return (true, format!("waited {ms} ms"), None);
        }
        let browser_action = matches!(action, Action::Goto { .. } | Action::NewTab { .. });
        if !browser_action && state.tab.is_none() {
            return match Self::tab(state) {
                Ok(_) => (false, "no tab".to_owned(), None),
                Err(r) => (false, r.text, None),
            };
        }
        // Page actions: numbers from the latest observation.
        let obs = if !action.runs_in_page() {
            state.obs.clone().unwrap_or_default()
        } else if action.elements().is_empty() {
            match (state.obs.clone(), state.tab) {
                (Some(o), _) => o,
                (None, Some(tab)) => match self.fresh(state, tab, false).await {
                    Ok(o) => o,
                    Err(e) => return (false, e, None),
                },
                (None, None) => Observation::default(),
            }
        } else {
            match state.obs.clone() {
                Some(o) => o,
                None => {
                    return (
                        false,
                        "no observation yet: call `observe` and use its numbers".into(),
                        None,
                    );
                }
            }
        };
        let sites = self.sites();
        let uploads = tabs::uploads_dir(&self.settings().data_dir);
        let asker = Asking {
            operator: &self.operator,
            id: &self.id,
            step: state.step + 1,
            scrubber: state.scrubber.clone(),
        };
        let gate = Gate {
            browser: &self.browser,
            asker: &asker,
            sites: &sites,
            secrets: &state.secrets,
            grants: &self.grants,
            uploads: &uploads,
        };
        // A goto with no tab yet opens the session's first one.
        let tab = if matches!(action, Action::NewTab { .. }) { None } else { state.tab };
        let passage = gate.pass(tab, &obs, action).await;
        if !passage.used.is_empty() {
            for f in &passage.used {
                state.filled.insert(f.name.clone(), f.value.clone());
            }
            state.scrubber = secrets::scrubber_for(&state.secrets, &state.filled, &state.origins);
        }
        let verdict = Some(passage.verdict);
        let (ok, detail) = match passage.ran {
            Ran::Not(why) => (false, why),
            Ran::Host => (false, format!("`{}` is not a tool", action.name())),
            Ran::Opened(Ok(t)) => {
                if !state.owned.contains(&t.tab_id) {
                    state.owned.push(t.tab_id);
                    state.tab = Some(t.tab_id);
                    state.obs = None;
                    (true, format!("opened tab {} at {}", t.tab_id, t.url))
                } else {
                    state.obs = None;
                    (true, format!("opened {}", t.url))
                }
            }
            Ran::Opened(Err(e)) => (false, format!("could not open: {e}")),
            Ran::Tab(o) => {
                match action {
                    Action::CloseTab { tab_id: Some(closed) } => {
                        state.owned.retain(|t| t != closed)
                    }
                    Action::NewTab { .. } if o.ok && !state.owned.contains(&o.tab_id) => {
                        state.owned.push(o.tab_id)
                    }
                    _ => {}
                }
                // Closing the current tab leaves the session in one of its own
                // tabs, or in none.
                state.tab = if state.owned.contains(&o.tab_id) {
                    Some(o.tab_id)
                } else {
                    state.owned.last().copied()
                };
                state.obs = None;
                (o.ok, o.detail)
            }
            Ran::Page(Ok(effect)) => {
                if effect.url_changed {
                    state.obs = None;
                }
                (true, effect.detail())
            }
            Ran::Page(Err(BrowserError::Refused { message, .. })) => (false, message),
            Ran::Page(Err(e)) => (false, e.to_string()),
        };
        (ok, detail, verdict)
    }

    /// Records the call as a step and tells the side panel.
    async fn record(
        &self,
        state: &mut State,
        tool: &str,
        actions: Vec<ActionRecord>,
        error: Option<&str>,
    ) {
        state.step += 1;
        let step = state.step;
        let evaluation = match (error, actions.first()) {
            (Some(e), _) => format!("{} called {tool}: {e}", self.client),
            (None, Some(a)) => format!("{} called {}", self.client, a.action.name()),
            (None, None) => format!("{} called {tool}", self.client),
        };
        let labels: Vec<String> = actions
            .iter()
            .map(|a| {
                a.action
                    .element()
                    .and_then(|i| state.obs.as_ref().and_then(|o| prompt::label_in(o, i)))
                    .unwrap_or_default()
            })
            .collect();
        let obs = state.obs.as_ref();
        let mut row = StepRow {
            task_id: self.id.clone(),
            step,
            evaluation: evaluation.clone(),
            actions_json: serde_json::to_string(&actions).unwrap_or_else(|_| "[]".to_owned()),
            build: obs.and_then(|o| o.build).map(|b| crate::agent::build_name(b).to_owned()),
            url: obs.map(|o| o.url.clone()),
            elements: obs.map(|o| u32::try_from(o.elements.len()).unwrap_or(u32::MAX)),
            ..StepRow::default()
        };
        state.scrubber.step_row(&mut row);
        if let Err(e) = self.store.record_step(&row) {
            tracing::error!(task_id = %self.id, step, "cannot record the MCP call: {e}");
        }
        let report = StepReport {
            step,
            evaluation,
            actions,
            elements: obs.map(|o| o.elements.len()).unwrap_or(0),
            build: obs.and_then(|o| o.build),
            ..StepReport::default()
        };
        let event = state.scrubber.serde(TaskEvent::Step(report));
        let labels = labels.iter().map(|l| state.scrubber.text(l)).collect();
        self.operator.emit(&self.id, event, labels).await;
    }
}

/// How a session's gate asks the person: the side panel, through the
/// operator; a rejection is a tool error saying so.
struct Asking<'a, O> {
    operator: &'a O,
    id: &'a str,
    step: u32,
    scrubber: Scrubber,
}

impl<O: Operator> Asker for Asking<'_, O> {
    async fn ask(&self, what: &Approval, action: &Action) -> Decision {
        tracing::info!(task_id = %self.id, action = action.name(), reason = %what.reason, "the MCP caller waits for approval");
        let decision = self.operator.await_approval(self.id);
        let event = what.event(self.step, action);
        let event = self.scrubber.serde(event);
        self.operator.emit(self.id, event, Vec::new()).await;
        decision.await.unwrap_or(Decision::Unasked)
    }
}

/// The task's text for a session of `client`.
pub fn session_title(client: &str) -> String {
    format!("Driven by {client} (MCP)")
}

fn not_owned(tab: i64) -> String {
    format!(
        "tab {tab} is not one this session opened: it may use only its own tabs (open one with \
         goto or tabs open)"
    )
}

/// The number of an element's line (`3<button>Sign in`, `*9<button=Close>`,
/// `8>Pricing`); `None` for headings and text.
fn element_number(line: &str) -> Option<u32> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix('*').unwrap_or(rest);
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let after = rest[digits..].chars().next()?;
    if digits == 0 || !matches!(after, '<' | '>') {
        return None;
    }
    rest[..digits].parse().ok()
}

/// About four characters a token.
fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// An observation as the caller reads it: the whole list, or what changed
/// since `previous` (same tab and URL), cut to `max_tokens` from the
/// visible part on, page `page`.
fn render(
    obs: &Observation,
    tab: i64,
    previous: Option<&(i64, String, String)>,
    full: bool,
    max_tokens: usize,
    page: usize,
) -> String {
    let head = format!("Tab {tab}: \"{}\" {}\n", obs.title, obs.url);
    let same_page = previous.filter(|(t, url, _)| *t == tab && *url == obs.url);
    if let (Some((_, _, before)), false, 1) = (same_page, full, page) {
        let old: std::collections::HashSet<&str> = before.lines().collect();
        let new: std::collections::HashSet<&str> = obs.text.lines().collect();
        let added: Vec<&str> = obs.text.lines().filter(|l| !old.contains(l)).collect();
        let removed: Vec<&str> = before.lines().filter(|l| !new.contains(l)).collect();
        if added.is_empty() && removed.is_empty() {
            return format!("{head}Nothing changed since your last observe.");
        }
        let mut diff = format!(
            "{head}Changed since your last observe ({} lines gone, {} new or changed; the other \
             elements keep their numbers; full=true for the whole list):\n",
            removed.len(),
            added.len()
        );
        for l in &removed {
            diff.push_str(&format!("- {l}\n"));
        }
        for l in &added {
            diff.push_str(&format!("+ {l}\n"));
        }
        if tokens(&diff) <= max_tokens && diff.len() < head.len() + obs.text.len() {
            return diff;
        }
    }
    // Visible part first: from the line of the first element in view.
    let lines: Vec<&str> = obs.text.lines().collect();
    let first_visible = obs
        .elements
        .iter()
        .find(|e| e.in_viewport)
        .and_then(|e| lines.iter().position(|l| element_number(l) == Some(e.index)))
        .unwrap_or(0);
    let ordered: Vec<&str> =
        lines[first_visible..].iter().chain(lines[..first_visible].iter()).copied().collect();
    let budget = max_tokens.saturating_sub(tokens(&head) + 80).max(100) * 4;
    let mut pages: Vec<Vec<&str>> = vec![Vec::new()];
    let mut size = 0;
    for l in ordered {
        let n = l.chars().count() + 1;
        if size + n > budget && !pages.last().is_some_and(Vec::is_empty) {
            pages.push(Vec::new());
            size = 0;
        }
        pages.last_mut().map(|p| p.push(l));
        size += n;
    }
    let total = pages.len();
    let Some(shown) = pages.get(page - 1) else {
        return format!("{head}There is no page {page}: the list has {total}.");
    };
    let mut text = format!("{head}{}", shown.join("\n"));
    if total > 1 {
        text.push_str(&format!(
            "\n\n[Part {page} of {total} of the page's list (about {} tokens in all; this reply is \
             limited to {max_tokens}), starting at the visible part. For more: observe with \
             page={}, scroll, or find with a query.]",
            tokens(&obs.text),
            if page < total { page + 1 } else { 1 }
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_kind_has_its_tool_or_says_where_it_is() {
        let tools = tool_list();
        for (name, _, _) in crate::llm::schema::action_parameters() {
            let tool = tools.iter().any(|t| t.name == name);
            let elsewhere = NOT_TOOLS.iter().any(|(n, _)| *n == name);
            assert!(tool != elsewhere, "`{name}`: a tool ({tool}) or elsewhere ({elsewhere})");
        }
        for needed in [
            "observe",
            "find",
            "tabs",
            "click",
            "fill",
            "type",
            "select_option",
            "check",
            "press",
            "hover",
            "scroll",
            "drag_and_drop",
            "upload_file",
            "extract",
            "goto",
            "go_back",
            "go_forward",
            "wait",
        ] {
            let t = tools.iter().find(|t| t.name == needed).unwrap_or_else(|| panic!("{needed}"));
            assert_eq!(t.input_schema["type"], "object", "{needed}");
            assert!(!t.description.is_empty(), "{needed}");
        }
        let fill = tools.iter().find(|t| t.name == "fill").unwrap();
        assert!(fill.input_schema["properties"]["index"].is_object());
        assert!(fill.input_schema["properties"]["text"].is_object());
    }

    fn obs(text: &str) -> Observation {
        Observation { url: "https://a.example/".into(), text: text.into(), ..Default::default() }
    }

    #[test]
    fn later_observations_are_what_changed_and_long_ones_come_in_parts() {
        let rest: String = (10..60).map(|i| format!("\n{i}>link {i}")).collect();
        let first = obs(&format!("1<button>A\n2<input=name>\nsome text{rest}"));
        let whole = render(&first, 7, None, false, 8000, 1);
        assert!(whole.contains("2<input=name>"), "{whole}");
        let prev = (7, first.url.clone(), first.text.clone());
        let second = obs(&format!("1<button>A\n2<input=name>\n3>New{rest}"));
        let diff = render(&second, 7, Some(&prev), false, 8000, 1);
        assert!(diff.contains("+ 3>New") && diff.contains("- some text"), "{diff}");
        assert!(!diff.contains("1<button>"), "{diff}");
        let same = render(&first, 7, Some(&prev), false, 8000, 1);
        assert!(same.contains("Nothing changed"), "{same}");

        let long: String = (1..=2000).map(|i| format!("{i}>link number {i}\n")).collect();
        let big = obs(&long);
        let part = render(&big, 7, None, false, 1000, 1);
        assert!(tokens(&part) <= 1000, "{}", tokens(&part));
        assert!(part.contains("Part 1 of") && part.contains("page=2"), "{part}");
        let two = render(&big, 7, None, false, 1000, 2);
        assert!(two.contains("Part 2 of"), "{two}");
        assert!(!two.contains("\n1>link"), "{two}");
        assert_eq!(element_number("  *12<button=Close>×"), Some(12));
        assert_eq!(element_number("8>Pricing"), Some(8));
        assert_eq!(element_number("# 3 steps"), None);
        assert_eq!(element_number("2024 was a year"), None);
    }
}

//! The agent loop: observe the page, ask the model, run its actions, record
//! the step, until `done`, a stop, too many failures or the step limit.
//!
//! The agent sees the world only through its [`ports`] ([`Browser`],
//! [`Operator`], the [`Setup`] watch) and is given its store; it never
//! imports the host, the transport or the command line (checked by
//! `native-host/tests/layers.rs`). The loop is here ([`run`]); one step in
//! `step.rs`; the actions and their checks in `actions.rs`; the side calls
//! (recall, planner, validator) in `side.rs`; the scrubbing guards and the
//! records in `record.rs`; tab actions and uploads in [`tabs`]. Unit tests
//! (`tests.rs`) run the loop against an in-memory browser and operator.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use errand_protocol::{
    Action, ActionRecord, Build, ErrorCode, Observation, Outcome, StepReport, TaskEvent,
};
use tokio::sync::watch;

use crate::answer::dialect::Dialect;
use crate::answer::parse::AgentAnswer;
use crate::config::Settings;
use crate::llm::{ChatMessage, Completion, Expect, LlmError, Provider};
use crate::memory::scrub::Scrubber;
use crate::memory::store::{ModelCallRow, StepRow, Store};
use crate::sites::SitePolicy;
use budget::{Budget, Prices};
use loop_detect::{LoopDetector, Verdict};
use prompt::PastStep;

pub mod approval;
pub mod budget;
pub mod fence;
pub mod gate;
pub mod loop_detect;
pub mod planner;
pub mod policy;
pub mod ports;
pub mod prompt;
pub mod replay;
pub mod tabs;

mod actions;
mod record;
mod side;
mod step;
#[cfg(test)]
mod tests;

pub use ports::{
    Browser, BrowserError, DISCONNECTED, Decision, Guard, Operator, Pause, Permit, Setup, Stopper,
    TabInfo,
};

pub use crate::answer::parse::MAX_ACTIONS_PER_STEP;
/// Steps failing in a row that end the task.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// Past tasks recalled at the start of a task.
pub const RECALLED: u32 = 3;
/// The longest `wait`.
pub const MAX_WAIT_MS: u32 = 10_000;

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub id: String,
    pub task: String,
    pub tab_id: Option<i64>,
    pub url: Option<String>,
    pub max_steps: u32,
    /// For a follow-up: the earlier task and its answer, told to the model.
    pub context: Option<String>,
    /// This task may only go to these sites (on top of the global lists).
    pub allow_sites: Vec<String>,
}

/// What a task runs with, given by whoever starts it: the ports, the
/// settings and model (a change reaches the next step), the store.
pub struct Context<B, O> {
    pub browser: B,
    pub operator: O,
    pub setup: watch::Receiver<Setup>,
    pub store: Store,
}

/// Runs a task to its end: records the outcome, tells the operator, and
/// sends the `finished` event. Ends at once when `stop` fires.
pub async fn run<B: Browser, O: Operator>(
    cx: Context<B, O>,
    spec: TaskSpec,
    stop: Stopper,
    pause: Pause,
) {
    run_task(cx, spec, stop, pause, None).await;
}

/// [`run`], or with `recipe` a replay of it ([`replay`]).
async fn run_task<B: Browser, O: Operator>(
    cx: Context<B, O>,
    spec: TaskSpec,
    stop: Stopper,
    pause: Pause,
    recipe: Option<replay::Replay>,
) {
    let agent = Agent {
        cx: &cx,
        spec: &spec,
        stop: &stop,
        pause,
        progress: std::sync::Mutex::new(Progress::default()),
        tab: AtomicI64::new(0),
        grants: gate::Grants::new(Some(cx.store.clone())),
    };
    let outcome = tokio::select! {
        biased;
        _ = stop.token().cancelled() => stop.outcome(),
        outcome = async {
            match &recipe {
                Some(r) => agent.replay(r).await,
                None => agent.drive().await,
            }
        } => outcome,
    };
    let outcome = agent.scrubber().serde(outcome);
    tracing::info!(task_id = %spec.id, status = outcome.status(), "task ended");
    if let Err(e) = cx.store.finish_task(&spec.id, &outcome) {
        tracing::error!(task_id = %spec.id, "cannot record the task's end: {e}");
    }
    // Undo what the content script added to the page (marks, dropdowns,
    // their listeners) — briefly: a gone tab or browser must not hold up
    // the end of the task.
    let tab_id = agent.tab.load(Ordering::SeqCst);
    if tab_id != 0 {
        let cleanup = cx.browser.cleanup(tab_id);
        match tokio::time::timeout(CLEANUP_TIMEOUT, cleanup).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(task_id = %spec.id, "page cleanup failed: {e}"),
            Err(_) => tracing::debug!(task_id = %spec.id, "page cleanup timed out"),
        }
    }
    cx.operator.ended(&spec.id);
    agent.emit(TaskEvent::Finished { outcome }, Vec::new()).await;
}

/// How long the end of a task waits for the page to be cleaned up.
const CLEANUP_TIMEOUT: Duration = Duration::from_millis(500);

/// Told to the model after the user took over the page.
const TOOK_OVER: &str = "The user took over: they paused you and acted in the page \
themselves, so it may have changed, and the rest of your last answer was not run. The page below \
is as it is now: check what they did before you go on.";

struct Agent<'a, B, O> {
    cx: &'a Context<B, O>,
    spec: &'a TaskSpec,
    stop: &'a Stopper,
    pause: Pause,
    progress: std::sync::Mutex<Progress>,
    /// The tab the agent works in (tab actions change it).
    tab: AtomicI64,
    /// What the user approved for this task, or always on a site.
    grants: gate::Grants,
}

/// What the agent tracks across steps besides the history.
#[derive(Default)]
struct Progress {
    step: u32,
    /// What worked before on this site.
    recalled: Option<String>,
    /// The planner's latest plan, shown in each prompt.
    plan: Option<String>,
    /// The plan's loop being run, item by item.
    looping: Option<crate::agent::planner::LoopRun>,
    /// The profile's facts, to answer `ask_user` from.
    facts: Vec<(String, String)>,
    /// `done` answers the validator refused so far.
    rejections: u32,
    /// The user's secrets (values never leave the host but into a field).
    secrets: crate::memory::secrets::Secrets,
    /// The secrets filled in this task so far: name → value.
    filled: std::collections::BTreeMap<String, String>,
    /// The origins of the page the agent is on and of its frames.
    origins: Vec<String>,
    /// Replaces the values of `filled` and of the secrets allowed on
    /// `origins` by their placeholders in everything leaving the host.
    scrubber: Scrubber,
    /// What the model is told about the user's profile.
    profile: String,
    budget: Budget,
    /// The price table, and the model whose price the budget charges.
    prices: Prices,
    priced: String,
    loops: LoopDetector,
    /// Said to the model in the next prompt.
    warning: Option<String>,
    /// Why a step could not be recorded: the task ends.
    unsaved: Option<String>,
    /// The effect of the page action just run, for its record.
    last_effect: Option<errand_protocol::Effect>,
    /// For a recipe's replay handed to the agent: what the replay did.
    handed_over: Option<String>,
}

/// How one step went.
enum StepEnd {
    /// Go on; `ok` is false when the step failed.
    Next { ok: bool, error: Option<String> },
    /// The task is over.
    Finish(Outcome),
}

/// The model's answer to one step, with its cost.
struct Asked {
    answer: Result<AgentAnswer, String>,
    model_ms: u64,
    tokens_in: Option<u64>,
    tokens_out: Option<u64>,
    cost_usd: Option<f64>,
}

impl<B: Browser, O: Operator> Agent<'_, B, O> {
    /// The settings in effect now.
    fn settings(&self) -> Arc<Settings> {
        self.cx.setup.borrow().settings.clone()
    }

    /// The model the settings name now.
    fn model(&self) -> Arc<dyn Provider> {
        self.cx.setup.borrow().model.clone()
    }

    fn store(&self) -> &Store {
        &self.cx.store
    }

    /// The configured dialect, else the model's own.
    fn dialect(&self) -> Dialect {
        let settings = self.settings();
        settings.dialect.unwrap_or_else(|| Dialect::for_model(self.model().model()))
    }

    /// The task as the model reads it: with the earlier task, for a
    /// follow-up, what worked before, the plan, a replay's note and the
    /// loop's state. Each part a model wrote (and so maybe the page) is in
    /// its own fence ([`fence`]); only the user's task and profile are not.
    fn task_text(&self) -> String {
        let mut text = self.spec.task.clone();
        if let Some(c) = &self.spec.context {
            text = format!("{text}\n\n{c}");
        }
        if let Some(recalled) = self.progress().recalled.clone() {
            text = format!("{text}\n\n{recalled}");
        }
        if let Some(plan) = self.progress().plan.clone() {
            text = format!("{text}\n\n{plan}");
        }
        if let Some(handed) = self.progress().handed_over.clone() {
            // The replay's note quotes the recipe's steps (a model's words).
            text = format!(
                "{text}\n\nA saved recipe for this task was replayed, then handed over to you; \
                 its note (quoting the recipe's steps):\n{}",
                prompt::fence(&handed)
            );
        }
        if let Some(looping) = self.progress().looping.as_ref().map(|l| l.prompt_text()) {
            text = format!("{text}\n\n{looping}");
        }
        let profile = self.progress().profile.clone();
        if !profile.is_empty() {
            text = format!("{text}\n\n{profile}");
        }
        text
    }

    /// Waits while the task is paused (a stop still ends it at once).
    /// Returns whether the user took over the page meanwhile; the model is
    /// then told so in the next prompt.
    async fn wait_if_paused(&self) -> bool {
        let mut pause = self.pause.clone();
        let Some(mut took_over) = *pause.borrow_and_update() else {
            return false;
        };
        tracing::info!(task_id = %self.spec.id, "paused");
        loop {
            if pause.changed().await.is_err() {
                break;
            }
            match *pause.borrow_and_update() {
                None => break,
                Some(t) => took_over |= t,
            }
        }
        tracing::info!(task_id = %self.spec.id, took_over, "resumed");
        if took_over {
            let mut p = self.progress();
            p.warning = Some(match p.warning.take() {
                Some(w) => format!("{TOOK_OVER}\n{w}"),
                None => TOOK_OVER.to_owned(),
            });
        }
        took_over
    }

    /// The user's site lists, as the settings say now.
    fn sites(&self) -> SitePolicy {
        SitePolicy::new(&self.settings().sites).only(&self.spec.allow_sites)
    }

    /// A step report holding the task's spending so far.
    fn totals(&self) -> StepReport {
        let p = self.progress();
        StepReport {
            total_tokens: p.budget.tokens,
            total_cost_usd: p.budget.price.map(|_| p.budget.cost_usd),
            ..Default::default()
        }
    }

    fn step_now(&self) -> u32 {
        self.progress().step
    }

    fn progress(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The settings named another model since the last step: from now on
    /// its calls are charged at its price (what was spent stays).
    fn follow_model(&self) {
        let model = self.model();
        let mut p = self.progress();
        if p.priced != model.model() {
            let price = p.prices.price(model.model());
            tracing::info!(task_id = %self.spec.id, from = %p.priced, to = model.model(), "the model changed; the budget follows its price");
            p.budget.price = price;
            p.priced = model.model().to_owned();
        }
    }

    async fn drive(&self) -> Outcome {
        match self.prepare().await {
            Ok(first_obs) => self.steps_from(1, first_obs, Vec::new()).await,
            Err(outcome) => outcome,
        }
    }

    /// Everything before the first step: the budget, the secrets, the
    /// profile, the tab (checked against the site lists), the `started`
    /// event. Returns the first observation when one was taken.
    async fn prepare(&self) -> Result<Option<Observation>, Outcome> {
        let settings = self.settings();
        let prices = match Prices::load(&settings.config_dir) {
            Ok(p) => p,
            Err(e) => {
                return Err(Outcome::Failed { error: e.to_string() });
            }
        };
        let model = self.model();
        let price = prices.price(model.model());
        if settings.max_cost_usd.is_some() && price.is_none() {
            tracing::warn!(
                model = model.model(),
                "max_cost_usd is set but the model has no price in prices.toml: only the token limit applies"
            );
        }
        {
            let mut p = self.progress();
            p.budget = Budget::new(settings.max_tokens, settings.max_cost_usd, price);
            p.priced = model.model().to_owned();
            p.prices = prices;
        }
        let secrets = match crate::memory::secrets::Secrets::load(&settings.data_dir) {
            Ok(s) => s,
            Err(e) => {
                return Err(Outcome::Failed { error: e.to_string() });
            }
        };
        let facts = self.store().facts().unwrap_or_else(|e| {
            tracing::error!("cannot read the profile: {e}");
            Vec::new()
        });
        crate::memory::scrub::scrub_log_too(secrets.values());
        {
            let mut p = self.progress();
            p.profile = prompt::profile_section(&facts, &secrets.prompt_lines());
            p.facts = facts;
            p.secrets = secrets;
        }
        if let Some(url) = &self.spec.url {
            if let Err(refused) = self.sites().check(url) {
                return Err(Outcome::Failed {
                    error: format!("Errand will not open {url}: {refused}"),
                });
            }
        }
        let (tab_id, url, first_obs) = match self.open().await {
            Ok(t) => t,
            Err(e) => {
                return Err(Outcome::Failed { error: format!("could not open the tab: {e}") });
            }
        };
        if let Err(refused) = self.sites().check(&url) {
            return Err(Outcome::Failed {
                error: format!("Errand cannot work on this page: {refused}"),
            });
        }
        self.enter(&url, &[]);
        let url = self.scrubber().text(&url);
        let first_obs = first_obs.map(|o| self.seen(o));
        if let Err(e) = self.store().set_tab(&self.spec.id, tab_id, &url) {
            tracing::error!("cannot record the tab: {e}");
        }
        self.recall(&url);
        let started = TaskEvent::Started { task: self.spec.task.clone(), tab_id, url };
        self.emit(started, Vec::new()).await;

        self.tab.store(tab_id, Ordering::SeqCst);
        Ok(first_obs)
    }

    /// The agent's steps from step `first` (after a recipe's replay handed
    /// over, `history` holds what it did) until the task ends.
    async fn steps_from(
        &self,
        first: u32,
        first_obs: Option<Observation>,
        mut history: Vec<PastStep>,
    ) -> Outcome {
        let mut first_obs = first_obs;
        let mut failures = 0;
        let last = first.saturating_add(self.spec.max_steps).saturating_sub(1);
        for step in first..=last {
            self.follow_model();
            if let Some(why) = self.progress().budget.exceeded() {
                return Outcome::Failed { error: why };
            }
            self.progress().step = step;
            if self.wait_if_paused().await {
                first_obs = None; // the user changed the page
            }
            let tab_id = self.tab.load(Ordering::SeqCst);
            let obs = match first_obs.take() {
                Some(obs) => Ok(obs),
                None => self
                    .cx
                    .browser
                    .observe(tab_id, marks_wanted(&self.settings()))
                    .await
                    .map(|obs| self.seen(obs)),
            };
            let end = match obs {
                Ok(obs) if self.sites().check(&obs.url).is_err() => {
                    self.leave_refused_page(step, tab_id, &obs, &mut history).await
                }
                Ok(obs) => {
                    if let Some(why) = self.plan_due(step, failures) {
                        self.plan(step, why, &obs, &history).await;
                    }
                    self.step(step, tab_id, &obs, &mut history).await
                }
                // The tab is gone (closed by the user) or became a page no
                // extension may touch: nothing more can be done there.
                Err(BrowserError::Refused { code: ErrorCode::TabUnavailable, message }) => {
                    let error = format!("the task's tab is gone or unusable: {message}");
                    self.record_failed_step(step, None, &error, &mut history).await;
                    StepEnd::Finish(Outcome::Failed { error })
                }
                Err(e) => {
                    let error = format!("could not read the page: {e}");
                    self.record_failed_step(step, None, &error, &mut history).await;
                    StepEnd::Next { ok: false, error: Some(error) }
                }
            };
            match end {
                _ if self.progress().unsaved.is_some() => {
                    let error = self.progress().unsaved.take().unwrap_or_default();
                    return Outcome::Failed { error };
                }
                StepEnd::Finish(outcome) => return outcome,
                StepEnd::Next { ok: true, .. } => failures = 0,
                StepEnd::Next { ok: false, error } => {
                    failures += 1;
                    if failures >= MAX_CONSECUTIVE_FAILURES {
                        let last = error.unwrap_or_else(|| "an action failed".to_owned());
                        return Outcome::Failed {
                            error: format!("{failures} steps in a row failed; the last: {last}"),
                        };
                    }
                }
            }
        }
        Outcome::StepLimit { steps: self.spec.max_steps }
    }

    /// Finds the task's tab. Returns its id, URL, and an observation when
    /// one was needed to learn the URL.
    async fn open(&self) -> Result<(i64, String, Option<Observation>), BrowserError> {
        let browser = &self.cx.browser;
        match (&self.spec.url, self.spec.tab_id) {
            (Some(url), tab) => {
                let (sites, secrets) = (self.sites(), crate::memory::secrets::Secrets::default());
                let gate = gate::Gate {
                    browser,
                    asker: self,
                    sites: &sites,
                    secrets: &secrets,
                    grants: &self.grants,
                    uploads: std::path::Path::new(""),
                };
                let tab = gate.start(tab, url).await?;
                Ok((tab.tab_id, tab.url, None))
            }
            (None, Some(tab_id)) => {
                let obs = browser.observe(tab_id, marks_wanted(&self.settings())).await?;
                Ok((tab_id, obs.url.clone(), Some(obs)))
            }
            (None, None) => {
                let tab = browser.active_tab().await?;
                Ok((tab.tab_id, tab.url, None))
            }
        }
    }
}

/// Whether an observation draws the marks: when the settings ask, and
/// always with vision on — the overlay is what blanks the secret fields in
/// the screenshot taken after it.
fn marks_wanted(settings: &crate::config::Settings) -> bool {
    settings.marks || settings.vision
}

/// `wasm` or `js`, as stored.
pub fn build_name(build: Build) -> &'static str {
    match build {
        Build::Wasm => "wasm",
        Build::Js => "js",
    }
}

//! The agent loop: observe the page, ask the model, run its actions, record
//! the step, until `done`, a stop, too many failures or the step limit.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use std::sync::Arc;

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
pub mod loop_detect;
pub mod planner;
pub mod ports;
pub mod prompt;
pub mod tabs;
#[cfg(test)]
mod tests;

pub use ports::{
    Browser, BrowserError, DISCONNECTED, Decision, Guard, Operator, Pause, Setup, Stopper, TabInfo,
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
    let agent = Agent {
        cx: &cx,
        spec: &spec,
        stop: &stop,
        pause,
        progress: std::sync::Mutex::new(Progress::default()),
        tab: AtomicI64::new(0),
    };
    let outcome = tokio::select! {
        biased;
        _ = stop.token().cancelled() => stop.outcome(),
        outcome = agent.drive() => outcome,
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

    /// The task as the model reads it: with the earlier task, for a follow-up.
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
        if let Some(looping) = self.progress().looping.as_ref().map(|l| l.prompt_text()) {
            text = format!("{text}\n\n{looping}");
        }
        let profile = self.progress().profile.clone();
        if !profile.is_empty() {
            text = format!("{text}\n\n{profile}");
        }
        text
    }

    /// Past successful tasks on the same site like this one: what worked
    /// before, told to the model.
    fn recall(&self, url: &str) {
        let site = crate::memory::store::site_of(url);
        let store = self.store();
        let hits = match store.recall(&self.spec.task, Some(&site), RECALLED) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("cannot search past tasks: {e}");
                return;
            }
        };
        let hits: Vec<_> = hits.into_iter().filter(|(id, _, _)| *id != self.spec.id).collect();
        if hits.is_empty() {
            return;
        }
        let mut text = format!("Earlier tasks on {site} that worked (use what helps):");
        for (id, task, answer) in hits {
            let goals: Vec<String> = store
                .steps(&id)
                .unwrap_or_default()
                .into_iter()
                .map(|s| s.next_goal)
                .filter(|g| !g.is_empty())
                .collect();
            text.push_str(&format!(
                "\n- \"{}\" → answered \"{}\"; steps: {}",
                prompt::cut(&task, 200),
                prompt::cut(&answer, 300),
                prompt::cut(&goals.join(" → "), 400)
            ));
        }
        self.progress().recalled = Some(text);
    }

    /// Why the planner should run before this step, if it should.
    fn plan_due(&self, step: u32, failures: u32) -> Option<&'static str> {
        if !self.settings().planner {
            return None;
        }
        let warned = self.progress().warning.is_some();
        if step == 1 {
            Some("The task is starting.")
        } else if failures >= 2 || warned {
            Some(
                "The agent is stalling: its last steps failed or repeated themselves. Plan another way.",
            )
        } else if (step - 1) % crate::agent::planner::PLAN_EVERY == 0 {
            Some("A regular review of the plan.")
        } else {
            None
        }
    }

    /// Asks the planner; a plan that cannot be had keeps the old one.
    async fn plan(&self, step: u32, why: &str, obs: &Observation, history: &[PastStep]) {
        let text = crate::agent::planner::plan_prompt(&self.spec.task, why, history, obs);
        let Some(answer) = self.side_call(step, text).await else {
            return;
        };
        match crate::agent::planner::parse_plan(&answer) {
            Ok(plan) => {
                tracing::info!(task_id = %self.spec.id, step, tasks = plan.tasks.len(), "new plan");
                let mut p = self.progress();
                p.plan = Some(crate::agent::planner::plan_text(&plan));
                p.looping = crate::agent::planner::LoopRun::from_plan(&plan, p.looping.as_ref());
                if let Some(l) = &p.looping {
                    tracing::info!(task_id = %self.spec.id, step, items = l.items.len(), goal = %l.goal, "loop over the plan's items");
                }
            }
            Err(e) => tracing::warn!(task_id = %self.spec.id, step, "unreadable plan: {e}"),
        }
    }

    /// Checks a `done` answer; the reason when it is refused.
    async fn validate(
        &self,
        step: u32,
        answer: &str,
        obs: &Observation,
        history: &[PastStep],
    ) -> Option<String> {
        if !self.settings().validate {
            return None;
        }
        let text = crate::agent::planner::validate_prompt(&self.spec.task, answer, history, obs);
        let reply = self.side_call(step, text).await?;
        match crate::agent::planner::parse_verdict(&reply) {
            Ok((true, _)) => None,
            Ok((false, reason)) => {
                let mut p = self.progress();
                if p.rejections >= crate::agent::planner::MAX_REJECTIONS {
                    tracing::warn!(task_id = %self.spec.id, "the check still doubts the answer ({reason}); accepted after {} refusals", p.rejections);
                    return None;
                }
                p.rejections += 1;
                tracing::info!(task_id = %self.spec.id, step, "the check refused `done`: {reason}");
                Some(if reason.is_empty() { "the task is not complete".to_owned() } else { reason })
            }
            Err(e) => {
                tracing::warn!(task_id = %self.spec.id, "unreadable check: {e}; the answer stands");
                None
            }
        }
    }

    /// One model call outside the step's own (planner, validator): charged,
    /// recorded; `None` when it failed (the step goes on without it).
    async fn side_call(&self, step: u32, text: String) -> Option<String> {
        let mut messages = [ChatMessage::user(text)];
        self.scrubber().messages(&mut messages);
        let started = Instant::now();
        let result = self.model().complete(&messages, self.stop.token()).await;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Ok(c) => {
                let cost = c.usage.and_then(|u| self.progress().budget.charge(u));
                self.record_call(step, ms, c.usage, cost, None);
                Some(c.text)
            }
            Err(e) => {
                self.record_call(step, ms, None, None, Some(e.to_string()));
                tracing::warn!(task_id = %self.spec.id, step, "side call failed: {e}");
                None
            }
        }
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

    /// The tab ended up on a page the site lists refuse (a link, a form, a
    /// redirect): nothing is done there; the agent goes back and the model
    /// is told why.
    async fn leave_refused_page(
        &self,
        step: u32,
        tab_id: i64,
        obs: &Observation,
        history: &mut Vec<PastStep>,
    ) -> StepEnd {
        let refused = self.sites().check(&obs.url).err().map(|r| r.to_string()).unwrap_or_default();
        tracing::warn!(task_id = %self.spec.id, step, url = %obs.url, "on a refused page: {refused}");
        let back = match self.cx.browser.act(tab_id, Action::GoBack {}, Guard::default()).await {
            Ok(effect) if effect.url_changed => format!("Errand went back to {}", effect.url),
            Ok(_) | Err(_) => "Errand could not go back".to_owned(),
        };
        let error = format!("the tab reached {}: {refused}. {back}", prompt::cut(&obs.url, 120));
        self.record_failed_step(step, Some(obs), &error, history).await;
        StepEnd::Next { ok: false, error: Some(error) }
    }

    /// Why `action` may not run because it would navigate (a link, a
    /// form's submission) to a page the site lists refuse, if it would.
    fn leads_off_limits(&self, action: &Action, obs: &Observation) -> Option<String> {
        let index = action.element().filter(|_| approval::presses(action))?;
        let target = obs.elements.iter().find(|e| e.index == index)?.target.as_deref()?;
        let refused = self.sites().check(target).err()?;
        Some(format!("not done: it would open {}: {refused}", prompt::cut(target, 120)))
    }

    /// Asks the user to approve `action` when the host classes it as
    /// irreversible (or the site is one to ask first on). `None`: go on;
    /// `Some(detail)`: the user rejected it, or the task stopped.
    async fn approval(&self, action: &Action, obs: &Observation) -> Option<String> {
        let needed = approval::check(action, obs, &self.sites())?;
        tracing::info!(task_id = %self.spec.id, action = action.name(), reason = %needed.reason, "waiting for approval");
        let decision = self.cx.operator.await_approval(&self.spec.id);
        let event = TaskEvent::Approval {
            step: self.step_now(),
            action: action.clone(),
            element: needed.element,
            summary: needed.summary,
            reason: needed.reason,
        };
        self.emit(event, Vec::new()).await;
        tokio::select! {
            _ = self.stop.token().cancelled() => Some("stopped".to_owned()),
            decision = decision => match decision {
                Ok(Decision::Approved) => None,
                Ok(Decision::Rejected) => Some(prompt::REJECTED_BY_USER.to_owned()),
                Ok(Decision::Unasked) => Some(prompt::NOBODY_TO_ASK.to_owned()),
                Err(_) => Some("no approval came".to_owned()),
            },
        }
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
        let settings = self.settings();
        let prices = match Prices::load(&settings.config_dir) {
            Ok(p) => p,
            Err(e) => {
                return Outcome::Failed { error: e.to_string() };
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
                return Outcome::Failed { error: e.to_string() };
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
                return Outcome::Failed { error: format!("Errand will not open {url}: {refused}") };
            }
        }
        let (tab_id, url, first_obs) = match self.open().await {
            Ok(t) => t,
            Err(e) => {
                return Outcome::Failed { error: format!("could not open the tab: {e}") };
            }
        };
        if let Err(refused) = self.sites().check(&url) {
            return Outcome::Failed {
                error: format!("Errand cannot work on this page: {refused}"),
            };
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

        let mut first_obs = first_obs;
        let mut history: Vec<PastStep> = Vec::new();
        let mut failures = 0;
        self.tab.store(tab_id, Ordering::SeqCst);
        for step in 1..=self.spec.max_steps {
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
            (Some(url), Some(tab_id)) => {
                let tab = browser.navigate(tab_id, url).await?;
                Ok((tab.tab_id, tab.url, None))
            }
            (Some(url), None) => {
                let tab = browser.open_tab(url).await?;
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

    async fn step(
        &self,
        step: u32,
        tab_id: i64,
        obs: &Observation,
        history: &mut Vec<PastStep>,
    ) -> StepEnd {
        self.emit(TaskEvent::Thinking { step }, Vec::new()).await;
        let mut messages = prompt::messages(
            self.dialect(),
            &self.task_text(),
            step,
            self.spec.max_steps,
            history,
            obs,
        );
        if let Some(warning) = self.progress().warning.take() {
            if let Some(last) = messages.last_mut() {
                last.content.push_str("\n\n# Warning\n");
                last.content.push_str(&warning);
            }
        }
        // Vision: the marked screenshot of what the model reads (the
        // observation drew the marks), with password fields blanked by the
        // content script.
        let screenshot = if self.settings().vision {
            match self.cx.browser.capture(tab_id).await {
                Ok(shot) => Some(shot),
                Err(e) => {
                    tracing::warn!(task_id = %self.spec.id, step, "no screenshot: {e}");
                    None
                }
            }
        } else {
            None
        };
        if let (Some(shot), Some(last)) = (&screenshot, messages.last_mut()) {
            prompt::attach_screenshot(last, shot.clone());
        }
        let asked = match self.ask(step, messages).await {
            Ok(asked) => asked,
            Err(e) if e.is_fatal() => {
                return StepEnd::Finish(Outcome::Failed { error: e.to_string() });
            }
            Err(LlmError::Cancelled) => return StepEnd::Finish(self.stop.outcome()),
            Err(e) => {
                let error = e.to_string();
                self.record_failed_step(step, Some(obs), &error, history).await;
                return StepEnd::Next { ok: false, error: Some(error) };
            }
        };
        // The model's call could not be recorded: act on nothing unrecorded.
        if let Some(error) = self.progress().unsaved.take() {
            return StepEnd::Finish(Outcome::Failed { error });
        }
        let answer = match asked.answer {
            Ok(a) => a,
            Err(error) => {
                let error = format!("the model's answer could not be read: {error}");
                let row = StepRow {
                    model_ms: Some(asked.model_ms),
                    tokens_in: asked.tokens_in,
                    tokens_out: asked.tokens_out,
                    cost_usd: asked.cost_usd,
                    ..self.row(step, Some(obs))
                };
                self.record_failed_step_row(row, &error, history).await;
                return StepEnd::Next { ok: false, error: Some(error) };
            }
        };

        let verdict = self
            .progress()
            .loops
            .record(loop_detect::page_fingerprint(obs), loop_detect::actions_hash(&answer.actions));
        let (mut records, labels, (skipped, over_limit), mut finish) =
            self.act(tab_id, obs, &answer.actions).await;
        if let Some(Outcome::Done { answer: text, success: true }) = &finish {
            if let Some(reason) = self.validate(step, text, obs, history).await {
                // Not finished after all: the step "failed" with the reason,
                // which the next prompt shows.
                finish = None;
                if let Some(last) = records.last_mut() {
                    last.ok = false;
                    last.detail = format!("not finished yet, a check found: {reason}");
                }
            }
        }
        match verdict {
            Verdict::Fine => {}
            Verdict::Warn(n) => {
                tracing::warn!(task_id = %self.spec.id, step, repeats = n, "the agent repeats itself");
                self.progress().warning = Some(loop_detect::warning(n));
            }
            Verdict::Stop(n) if finish.is_none() => {
                finish = Some(Outcome::Failed {
                    error: format!(
                        "the agent is stuck: it did the same thing {n} times on a page that did not \
                         change (last: {}). Stopped so that you can help: do that part yourself, or \
                         start again with more precise instructions",
                        records
                            .iter()
                            .zip(&labels)
                            .map(|(r, l)| prompt::describe_action(&r.action, l))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            Verdict::Stop(_) => {}
        }
        let failed = records.iter().find(|r| !r.ok).map(|r| r.detail.clone());
        let report = StepReport {
            step,
            evaluation: answer.evaluation.clone(),
            memory: answer.memory.clone(),
            next_goal: answer.next_goal.clone(),
            actions: records.clone(),
            elements: obs.elements.len(),
            build: obs.build,
            tokens: asked.tokens_in.unwrap_or(0) + asked.tokens_out.unwrap_or(0),
            cost_usd: asked.cost_usd,
            screenshot,
            ..self.totals()
        };
        let row = StepRow {
            evaluation: answer.evaluation.clone(),
            memory: answer.memory.clone(),
            next_goal: answer.next_goal.clone(),
            actions_json: serde_json::to_string(&records).unwrap_or_else(|_| "[]".to_owned()),
            model_ms: Some(asked.model_ms),
            tokens_in: asked.tokens_in,
            tokens_out: asked.tokens_out,
            cost_usd: asked.cost_usd,
            ..self.row(step, Some(obs))
        };
        self.save(&row);
        self.emit(TaskEvent::Step(report), labels.clone()).await;
        history.push(PastStep {
            step,
            evaluation: answer.evaluation,
            memory: answer.memory,
            next_goal: answer.next_goal,
            actions: records.into_iter().zip(labels).collect(),
            skipped,
            over_limit,
            error: None,
        });
        match finish {
            Some(outcome) => StepEnd::Finish(outcome),
            None => StepEnd::Next { ok: failed.is_none(), error: failed },
        }
    }

    /// Asks the model; an unreadable answer is asked again once, with the
    /// parse error. Every call is charged to the budget and recorded.
    async fn ask(&self, step: u32, mut messages: Vec<ChatMessage>) -> Result<Asked, LlmError> {
        let started = Instant::now();
        let mut asked = Asked {
            answer: Err(String::new()),
            model_ms: 0,
            tokens_in: None,
            tokens_out: None,
            cost_usd: None,
        };
        let dialect = self.dialect();
        // The JSON dialect's answer can be constrained to its schema.
        let expect = if dialect == Dialect::Json { Expect::Answer } else { Expect::Text };
        for attempt in 0..2 {
            let call_started = Instant::now();
            self.scrubber().messages(&mut messages);
            let result = self.model().complete_as(&messages, expect, self.stop.token()).await;
            let ms = u64::try_from(call_started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let completion = match result {
                Ok(c) => c,
                Err(e) => {
                    self.record_call(step, ms, None, None, Some(e.to_string()));
                    return Err(e);
                }
            };
            let cost = completion.usage.and_then(|u| self.progress().budget.charge(u));
            self.record_call(step, ms, completion.usage, cost, None);
            add_usage(&mut asked, &completion, cost);
            match dialect.parse_answer(&completion.text) {
                Ok(answer) => {
                    asked.answer = Ok(answer);
                    break;
                }
                Err(e) => {
                    tracing::warn!(attempt, "unreadable answer: {e}");
                    asked.answer = Err(e.to_string());
                    if self.progress().budget.exceeded().is_some() {
                        break;
                    }
                    messages.push(ChatMessage::assistant(completion.text));
                    messages.push(ChatMessage::user(prompt::reask(dialect, &e)));
                }
            }
        }
        asked.model_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(asked)
    }

    fn record_call(
        &self,
        step: u32,
        ms: u64,
        usage: Option<crate::llm::Usage>,
        cost_usd: Option<f64>,
        error: Option<String>,
    ) {
        let mut row = ModelCallRow {
            task_id: self.spec.id.clone(),
            step,
            provider: self.settings().provider.name().to_owned(),
            model: self.model().model().to_owned(),
            ms,
            tokens_in: usage.map(|u| u.prompt_tokens),
            tokens_out: usage.map(|u| u.completion_tokens),
            cost_usd,
            error,
        };
        self.scrubber().call_row(&mut row);
        if let Err(e) = self.store().record_model_call(&row) {
            tracing::error!(task_id = %self.spec.id, step, "cannot record the model call: {e}");
            self.progress().unsaved.get_or_insert_with(|| unsaved(step, &e));
        }
    }

    /// Runs the actions in order; stops after one that failed or changed
    /// the URL. Returns the records, the element labels, how many actions
    /// were not run (of the first [`MAX_ACTIONS_PER_STEP`], and beyond
    /// them), and the outcome when `done` ran.
    async fn act(
        &self,
        tab_id: i64,
        obs: &Observation,
        actions: &[Action],
    ) -> (Vec<ActionRecord>, Vec<String>, (usize, usize), Option<Outcome>) {
        let over_limit = actions.len().saturating_sub(MAX_ACTIONS_PER_STEP);
        if over_limit > 0 {
            tracing::info!(task_id = %self.spec.id, over_limit, "actions beyond the step's limit not run");
        }
        let actions = &actions[..actions.len().min(MAX_ACTIONS_PER_STEP)];
        let mut records = Vec::new();
        let mut labels = Vec::new();
        let mut finish = None;
        for action in actions {
            // A pause (pressed while the model thought, or between two
            // actions) holds the next action; after a take-over the rest of
            // the answer was planned on a page that may be gone.
            if self.wait_if_paused().await {
                break;
            }
            let label = action.element().and_then(|i| prompt::label_in(obs, i));
            labels.push(label.clone().unwrap_or_default());
            let (ok, detail, stop_here) = match (action.element(), label) {
                (Some(index), None) => (
                    false,
                    format!(
                        "there is no element [{index}] in the page's list; use a number from the current list"
                    ),
                    true,
                ),
                _ => match self.leads_off_limits(action, obs) {
                    Some(refused) => (false, refused, true),
                    None => match self.approval(action, obs).await {
                        Some(refused) => (false, refused, true),
                        None => {
                            // The user approved it: a confirm it opens is accepted.
                            let approved = approval::check(action, obs, &self.sites()).is_some();
                            let action =
                                if approved { action.accepting_dialogs() } else { action.clone() };
                            let document = crate::memory::secrets::document_of(obs, &action);
                            self.run_action(tab_id, document, &action, &mut finish).await
                        }
                    },
                },
            };
            // What the action brought back (page text, an extract, the
            // user's answer, a tab list) is scrubbed as it comes in.
            let detail = self.scrubber().text(&detail);
            records.push(ActionRecord { action: action.clone(), ok, detail });
            if stop_here || !ok || finish.is_some() {
                break;
            }
        }
        let skipped = actions.len() - records.len();
        (records, labels, (skipped, over_limit), finish)
    }

    /// Runs one action: `(ok, detail, stop the sequence)`. `document` is the
    /// address (or origin) of the document its element is in.
    async fn run_action(
        &self,
        tab_id: i64,
        document: &str,
        action: &Action,
        finish: &mut Option<Outcome>,
    ) -> (bool, String, bool) {
        match action {
            Action::Done { text, success } => {
                // In a loop, `done` finishes the current item.
                let item =
                    self.progress().looping.as_mut().and_then(|l| l.finish_current(*success, text));
                if let Some(detail) = item {
                    tracing::info!(task_id = %self.spec.id, "{detail}");
                    return (true, detail, true);
                }
                *finish = Some(Outcome::Done { answer: text.clone(), success: *success });
                (true, "finished".to_owned(), true)
            }
            Action::Goto { url } | Action::NewTab { url: Some(url) }
                if self.sites().check(url).is_err() =>
            {
                let refused = self.sites().check(url).err().map(|r| r.to_string());
                (false, format!("not opened: {}", refused.unwrap_or_default()), true)
            }
            Action::Goto { url } => match self.cx.browser.navigate(tab_id, url).await {
                Ok(tab) => (true, format!("opened {}", tab.url), true),
                Err(e) => (false, format!("could not open {url}: {e}"), true),
            },
            Action::ReportInfeasible { reason } => {
                *finish = Some(Outcome::Done { answer: reason.clone(), success: false });
                (true, "reported the task infeasible".to_owned(), true)
            }
            Action::NewTab { .. } | Action::SwitchTab { .. } | Action::CloseTab { .. } => {
                match tabs::run(&self.cx.browser, tab_id, action).await {
                    Some(o) => {
                        self.tab.store(o.tab_id, Ordering::SeqCst);
                        (o.ok, o.detail, true)
                    }
                    None => (false, format!("`{}` is not a tab action", action.name()), true),
                }
            }
            Action::SendMessage { .. } => {
                (false, format!("`{}` is not available yet", action.name()), true)
            }
            Action::AskUser { question } => {
                // A question the profile clearly answers does not bother the user.
                let known = crate::memory::facts::answer(question, &self.progress().facts).cloned();
                if let Some((name, value)) = known {
                    tracing::info!(task_id = %self.spec.id, fact = %name, "ask_user answered from the profile");
                    let detail = format!("{}{value} (fact `{name}`)", prompt::PROFILE_ANSWERED);
                    return (true, detail, true);
                }
                let waiting = self.cx.operator.await_answer(&self.spec.id);
                let event =
                    TaskEvent::Question { step: self.step_now(), question: question.clone() };
                self.emit(event, Vec::new()).await;
                tracing::info!(task_id = %self.spec.id, "waiting for the user's answer");
                tokio::select! {
                    _ = self.stop.token().cancelled() => (false, "stopped".to_owned(), true),
                    answer = waiting => match answer {
                        Ok(text) => (true, format!("{}{text}", prompt::USER_ANSWERED), true),
                        Err(_) => (false, "no answer came".to_owned(), true),
                    },
                }
            }
            Action::Wait { ms } => {
                let ms = (*ms).min(MAX_WAIT_MS);
                tokio::select! {
                    _ = self.stop.token().cancelled() => (false, "stopped".to_owned(), true),
                    _ = tokio::time::sleep(Duration::from_millis(u64::from(ms))) => {
                        (true, format!("waited {ms} ms"), false)
                    }
                }
            }
            page_action => {
                // Secrets go in only here, only on their origins, only into
                // secret fields unless allowed in any field; from now on
                // their values are scrubbed from whatever comes back.
                let substituted = self.progress().secrets.substitute(page_action, document);
                let (to_send, used) = match substituted {
                    Ok(s) => s,
                    Err(e) => return (false, e.to_string(), true),
                };
                self.filled(&used);
                // A secret goes only into a field of the origin it was
                // checked against (the frame's, for a field in a
                // cross-origin frame), even if the page moved on since.
                let guard = Guard {
                    only_on: if used.is_empty() {
                        None
                    } else {
                        crate::memory::secrets::origin_of(document)
                    },
                    secret_field: used.iter().any(|f| !f.any_field),
                    secrets: used.iter().map(|f| f.value.clone()).collect(),
                };
                let uploads = tabs::uploads_dir(&self.settings().data_dir);
                match tabs::act(&self.cx.browser, &uploads, tab_id, &to_send, guard).await {
                    // Later actions of the answer were planned on the page as
                    // it was: stop when it changed in a way the model could
                    // not see.
                    Ok(effect) => (true, effect.detail(), effect.unforeseen()),
                    Err(BrowserError::Refused { message, .. })
                        if message.contains(NOT_A_SECRET_FIELD) =>
                    {
                        (false, not_a_secret_field(&message, &used), true)
                    }
                    Err(e) => (false, e.to_string(), true),
                }
            }
        }
    }

    /// The scrubber for what leaves the host now.
    fn scrubber(&self) -> Scrubber {
        self.progress().scrubber.clone()
    }

    /// The agent is on `url` (with frames of `frames`): the secrets allowed
    /// there are scrubbed from now on.
    fn enter(&self, url: &str, frames: &[String]) {
        let mut origins: Vec<String> = crate::memory::secrets::origin_of(url).into_iter().collect();
        for o in frames.iter().filter_map(|f| crate::memory::secrets::origin_of(f)) {
            if !origins.contains(&o) {
                origins.push(o);
            }
        }
        let mut p = self.progress();
        if p.origins != origins || p.scrubber.is_empty() {
            p.origins = origins;
            rebuild(&mut p);
        }
    }

    /// Secrets were put into an action: their values are scrubbed for the
    /// rest of the task, wherever the agent goes.
    fn filled(&self, used: &[crate::memory::secrets::Filled]) {
        let mut p = self.progress();
        let before = p.filled.len();
        for f in used {
            p.filled.insert(f.name.clone(), f.value.clone());
        }
        if p.filled.len() != before {
            rebuild(&mut p);
        }
    }

    /// The entry guard for observations: the scrubber is made for the
    /// page's origins and applied to everything the page says, before the
    /// agent, the prompts, the planner or anything recorded sees it.
    fn seen(&self, mut obs: Observation) -> Observation {
        let frames: Vec<String> = obs.elements.iter().filter_map(|e| e.origin.clone()).collect();
        self.enter(&obs.url, &frames);
        self.scrubber().observation(&mut obs);
        obs
    }

    /// The exit guard for the panel (and `errand run`): every task event.
    async fn emit(&self, event: TaskEvent, labels: Vec<String>) {
        let scrubber = self.scrubber();
        let event = scrubber.serde(event);
        let labels = labels.iter().map(|l| scrubber.text(l)).collect();
        self.cx.operator.emit(&self.spec.id, event, labels).await;
    }

    fn row(&self, step: u32, obs: Option<&Observation>) -> StepRow {
        StepRow {
            task_id: self.spec.id.clone(),
            step,
            actions_json: "[]".to_owned(),
            build: obs.and_then(|o| o.build).map(|b| build_name(b).to_owned()),
            url: obs.map(|o| o.url.clone()),
            elements: obs.map(|o| u32::try_from(o.elements.len()).unwrap_or(u32::MAX)),
            ..Default::default()
        }
    }

    /// Records a step. A step that cannot be recorded (a full disk, a
    /// locked or broken database) ends the task after this step: going on
    /// would do things nobody could look up afterwards.
    fn save(&self, row: &StepRow) {
        let mut row = row.clone();
        self.scrubber().step_row(&mut row);
        if let Err(e) = self.store().record_step(&row) {
            tracing::error!(task_id = %self.spec.id, step = row.step, "cannot record the step: {e}");
            self.progress().unsaved.get_or_insert_with(|| unsaved(row.step, &e));
        }
    }

    async fn record_failed_step(
        &self,
        step: u32,
        obs: Option<&Observation>,
        error: &str,
        history: &mut Vec<PastStep>,
    ) {
        self.record_failed_step_row(self.row(step, obs), error, history).await;
    }

    /// A step that failed before any action ran: the error is shown as the
    /// step's evaluation, and recalled in the next prompt.
    async fn record_failed_step_row(&self, row: StepRow, error: &str, history: &mut Vec<PastStep>) {
        tracing::warn!(task_id = %self.spec.id, step = row.step, "step failed: {error}");
        let evaluation = format!("Step failed: {error}");
        let row = StepRow { evaluation: evaluation.clone(), ..row };
        self.save(&row);
        let report = StepReport {
            step: row.step,
            evaluation,
            actions: Vec::new(),
            elements: row.elements.map(|n| n as usize).unwrap_or(0),
            build: match row.build.as_deref() {
                Some("wasm") => Some(Build::Wasm),
                Some("js") => Some(Build::Js),
                _ => None,
            },
            tokens: row.tokens_in.unwrap_or(0) + row.tokens_out.unwrap_or(0),
            cost_usd: row.cost_usd,
            ..self.totals()
        };
        self.emit(TaskEvent::Step(report), Vec::new()).await;
        history.push(PastStep {
            step: row.step,
            error: Some(error.to_owned()),
            ..Default::default()
        });
    }
}

/// Remakes the scrubber from the secrets filled and those of the origins.
fn rebuild(p: &mut Progress) {
    let allowed = p.secrets.allowed_on(&p.origins);
    let filled = p.filled.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    p.scrubber = Scrubber::new(filled.chain(allowed));
}

/// How the content script words its refusal of a secret in a field that
/// is not a secret field (`act::check_secret_field`).
const NOT_A_SECRET_FIELD: &str = "not a secret field";

/// The refusal told to the model: which secret, where it may go, and what
/// the user can do.
fn not_a_secret_field(message: &str, used: &[crate::memory::secrets::Filled]) -> String {
    let names: Vec<String> = used
        .iter()
        .filter(|f| !f.any_field)
        .map(|f| crate::memory::secrets::placeholder(&f.name))
        .collect();
    format!(
        "{message}. {} may be typed only into a password, one-time-code or card field \
         (the page's own field for it), never into a search box or another text field: find \
         that field in the list, or, if the task needs the value elsewhere, ask the user — \
         they can allow it in any field of its sites (\"any field\" in the Profile tab)",
        names.join(", ")
    )
}

/// Whether an observation draws the marks: when the settings ask, and
/// always with vision on — the overlay is what blanks the secret fields in
/// the screenshot taken after it.
fn marks_wanted(settings: &crate::config::Settings) -> bool {
    settings.marks || settings.vision
}

/// Why the task ends when step `step` could not be recorded.
fn unsaved(step: u32, e: &crate::memory::store::StoreError) -> String {
    format!(
        "Errand could not save step {step} ({e}), so it stopped rather than act unrecorded; what \
         was saved before is kept. Is the disk full?"
    )
}

fn add_usage(asked: &mut Asked, completion: &Completion, cost: Option<f64>) {
    if let Some(u) = completion.usage {
        asked.tokens_in = Some(asked.tokens_in.unwrap_or(0) + u.prompt_tokens);
        asked.tokens_out = Some(asked.tokens_out.unwrap_or(0) + u.completion_tokens);
    }
    if let Some(c) = cost {
        asked.cost_usd = Some(asked.cost_usd.unwrap_or(0.0) + c);
    }
}

/// `wasm` or `js`, as stored.
pub fn build_name(build: Build) -> &'static str {
    match build {
        Build::Wasm => "wasm",
        Build::Js => "js",
    }
}

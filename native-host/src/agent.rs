//! The agent loop: observe the page, ask the model, run its actions, record
//! the step, until `done`, a stop, too many failures or the step limit.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use errand_protocol::{Action, ActionRecord, Build, Observation, Outcome, StepReport, TaskEvent};

use crate::host::{Host, RequestError, Stopper};
use crate::llm::{ChatMessage, Completion, LlmError};
use crate::parse::{self, AgentAnswer};
use crate::prompt::{self, PastStep};
use crate::store::StepRow;

/// The most actions run in one step; later ones are ignored. Ten: a whole
/// form filled from one answer.
pub const MAX_ACTIONS_PER_STEP: usize = 10;
/// Steps failing in a row that end the task.
pub const MAX_CONSECUTIVE_FAILURES: u32 = 3;
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
}

/// Runs a task to its end: records the outcome, tells the host, and sends
/// the `finished` event. Ends at once when `stop` fires.
pub async fn run(host: Host, spec: TaskSpec, stop: Stopper) {
    let agent = Agent { host: &host, spec: &spec, stop: &stop, tab: AtomicI64::new(0) };
    let outcome = tokio::select! {
        biased;
        _ = stop.token().cancelled() => stop.outcome(),
        outcome = agent.drive() => outcome,
    };
    tracing::info!(task_id = %spec.id, status = outcome.status(), "task ended");
    if let Err(e) = host.store().finish_task(&spec.id, &outcome) {
        tracing::error!(task_id = %spec.id, "cannot record the task's end: {e}");
    }
    host.task_ended(&spec.id);
    host.emit(&spec.id, TaskEvent::Finished { outcome }, Vec::new()).await;
}

struct Agent<'a> {
    host: &'a Host,
    spec: &'a TaskSpec,
    stop: &'a Stopper,
    /// The tab the agent works in (tab actions change it).
    tab: AtomicI64,
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
}

impl Agent<'_> {
    async fn drive(&self) -> Outcome {
        let (tab_id, url, mut first_obs) = match self.open().await {
            Ok(t) => t,
            Err(e) => return Outcome::Failed { error: format!("could not open the tab: {e}") },
        };
        if let Err(e) = self.host.store().set_tab(&self.spec.id, tab_id, &url) {
            tracing::error!("cannot record the tab: {e}");
        }
        let started = TaskEvent::Started { task: self.spec.task.clone(), tab_id, url };
        self.host.emit(&self.spec.id, started, Vec::new()).await;

        let mut history: Vec<PastStep> = Vec::new();
        let mut failures = 0;
        self.tab.store(tab_id, Ordering::SeqCst);
        for step in 1..=self.spec.max_steps {
            let tab_id = self.tab.load(Ordering::SeqCst);
            let obs = match first_obs.take() {
                Some(obs) => Ok(obs),
                None => self.host.observe(tab_id, false).await,
            };
            let end = match obs {
                Ok(obs) => self.step(step, tab_id, &obs, &mut history).await,
                Err(e) => {
                    let error = format!("could not read the page: {e}");
                    self.record_failed_step(step, None, &error, &mut history).await;
                    StepEnd::Next { ok: false, error: Some(error) }
                }
            };
            match end {
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
    async fn open(&self) -> Result<(i64, String, Option<Observation>), RequestError> {
        let host = self.host;
        match (&self.spec.url, self.spec.tab_id) {
            (Some(url), Some(tab_id)) => {
                let tab = host.navigate(tab_id, url).await?;
                Ok((tab.tab_id, tab.url, None))
            }
            (Some(url), None) => {
                let tab = host.open_tab(url).await?;
                Ok((tab.tab_id, tab.url, None))
            }
            (None, Some(tab_id)) => {
                let obs = host.observe(tab_id, false).await?;
                Ok((tab_id, obs.url.clone(), Some(obs)))
            }
            (None, None) => {
                let tab = host.active_tab().await?;
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
        self.host.emit(&self.spec.id, TaskEvent::Thinking { step }, Vec::new()).await;
        let messages = prompt::messages(&self.spec.task, step, self.spec.max_steps, history, obs);
        let asked = match self.ask(messages).await {
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
        let answer = match asked.answer {
            Ok(a) => a,
            Err(error) => {
                let error = format!("the model's answer could not be read: {error}");
                let row = StepRow {
                    model_ms: Some(asked.model_ms),
                    tokens_in: asked.tokens_in,
                    tokens_out: asked.tokens_out,
                    ..self.row(step, Some(obs))
                };
                self.record_failed_step_row(row, &error, history).await;
                return StepEnd::Next { ok: false, error: Some(error) };
            }
        };

        let (records, labels, skipped, finish) = self.act(tab_id, obs, &answer.actions).await;
        let failed = records.iter().find(|r| !r.ok).map(|r| r.detail.clone());
        let report = StepReport {
            step,
            evaluation: answer.evaluation.clone(),
            memory: answer.memory.clone(),
            next_goal: answer.next_goal.clone(),
            actions: records.clone(),
            elements: obs.elements.len(),
            build: obs.build,
        };
        let row = StepRow {
            evaluation: answer.evaluation.clone(),
            memory: answer.memory.clone(),
            next_goal: answer.next_goal.clone(),
            actions_json: serde_json::to_string(&records).unwrap_or_else(|_| "[]".to_owned()),
            model_ms: Some(asked.model_ms),
            tokens_in: asked.tokens_in,
            tokens_out: asked.tokens_out,
            ..self.row(step, Some(obs))
        };
        self.save(&row);
        self.host.emit(&self.spec.id, TaskEvent::Step(report), labels.clone()).await;
        history.push(PastStep {
            step,
            evaluation: answer.evaluation,
            memory: answer.memory,
            next_goal: answer.next_goal,
            actions: records.into_iter().zip(labels).collect(),
            skipped,
            error: None,
        });
        match finish {
            Some(outcome) => StepEnd::Finish(outcome),
            None => StepEnd::Next { ok: failed.is_none(), error: failed },
        }
    }

    /// Asks the model; an unreadable answer is asked again once, with the
    /// parse error.
    async fn ask(&self, mut messages: Vec<ChatMessage>) -> Result<Asked, LlmError> {
        let started = Instant::now();
        let mut asked =
            Asked { answer: Err(String::new()), model_ms: 0, tokens_in: None, tokens_out: None };
        for attempt in 0..2 {
            let completion = self.host.provider().complete(&messages, self.stop.token()).await?;
            add_usage(&mut asked, &completion);
            match parse::parse_answer(&completion.text) {
                Ok(answer) => {
                    asked.answer = Ok(answer);
                    break;
                }
                Err(e) => {
                    tracing::warn!(attempt, "unreadable answer: {e}");
                    asked.answer = Err(e.to_string());
                    messages.push(ChatMessage::assistant(completion.text));
                    messages.push(ChatMessage::user(prompt::reask(&e)));
                }
            }
        }
        asked.model_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(asked)
    }

    /// Runs the actions in order; stops after one that failed or changed
    /// the URL. Returns the records, the element labels, how many actions
    /// were not run, and the outcome when `done` ran.
    async fn act(
        &self,
        tab_id: i64,
        obs: &Observation,
        actions: &[Action],
    ) -> (Vec<ActionRecord>, Vec<String>, usize, Option<Outcome>) {
        let actions = &actions[..actions.len().min(MAX_ACTIONS_PER_STEP)];
        let mut records = Vec::new();
        let mut labels = Vec::new();
        let mut finish = None;
        for action in actions {
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
                _ => self.run_action(tab_id, action, &mut finish).await,
            };
            records.push(ActionRecord { action: action.clone(), ok, detail });
            if stop_here || !ok || finish.is_some() {
                break;
            }
        }
        let skipped = actions.len() - records.len();
        (records, labels, skipped, finish)
    }

    /// Runs one action: `(ok, detail, stop the sequence)`.
    async fn run_action(
        &self,
        tab_id: i64,
        action: &Action,
        finish: &mut Option<Outcome>,
    ) -> (bool, String, bool) {
        match action {
            Action::Done { text, success } => {
                *finish = Some(Outcome::Done { answer: text.clone(), success: *success });
                (true, "finished".to_owned(), true)
            }
            Action::Goto { url } => match self.host.navigate(tab_id, url).await {
                Ok(tab) => (true, format!("opened {}", tab.url), true),
                Err(e) => (false, format!("could not open {url}: {e}"), true),
            },
            Action::ReportInfeasible { reason } => {
                *finish = Some(Outcome::Done { answer: reason.clone(), success: false });
                (true, "reported the task infeasible".to_owned(), true)
            }
            Action::NewTab { .. } | Action::SwitchTab { .. } | Action::CloseTab { .. } => {
                match crate::browser_actions::run(self.host, tab_id, action).await {
                    Some(o) => {
                        self.tab.store(o.tab_id, Ordering::SeqCst);
                        (o.ok, o.detail, true)
                    }
                    None => (false, format!("`{}` is not a tab action", action.name()), true),
                }
            }
            Action::SendMessage { .. } | Action::AskUser { .. } => {
                (false, format!("`{}` is not available yet", action.name()), true)
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
            page_action => match crate::browser_actions::act(self.host, tab_id, page_action).await {
                // Later actions of the answer were planned on the page as it
                // was: stop when it changed in a way the model could not see.
                Ok(effect) => (true, effect.detail(), effect.unforeseen()),
                Err(e) => (false, e.to_string(), true),
            },
        }
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

    fn save(&self, row: &StepRow) {
        if let Err(e) = self.host.store().record_step(row) {
            tracing::error!(task_id = %self.spec.id, step = row.step, "cannot record the step: {e}");
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
            ..Default::default()
        };
        self.host.emit(&self.spec.id, TaskEvent::Step(report), Vec::new()).await;
        history.push(PastStep {
            step: row.step,
            error: Some(error.to_owned()),
            ..Default::default()
        });
    }
}

fn add_usage(asked: &mut Asked, completion: &Completion) {
    if let Some(u) = completion.usage {
        asked.tokens_in = Some(asked.tokens_in.unwrap_or(0) + u.prompt_tokens);
        asked.tokens_out = Some(asked.tokens_out.unwrap_or(0) + u.completion_tokens);
    }
}

/// `wasm` or `js`, as stored.
pub fn build_name(build: Build) -> &'static str {
    match build {
        Build::Wasm => "wasm",
        Build::Js => "js",
    }
}

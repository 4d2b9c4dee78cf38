//! The guards at the agent's edges and its records: the scrubber made for
//! the page's origins and the secrets filled, applied to every observation
//! coming in and every event, prompt and row going out; steps recorded in
//! the store (a step that cannot be recorded ends the task).

use super::*;

impl<B: Browser, O: Operator> Agent<'_, B, O> {
    /// The scrubber for what leaves the host now.
    pub(super) fn scrubber(&self) -> Scrubber {
        self.progress().scrubber.clone()
    }

    /// The agent is on `url` (with frames of `frames`): the secrets allowed
    /// there are scrubbed from now on.
    pub(super) fn enter(&self, url: &str, frames: &[String]) {
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
    pub(super) fn filled(&self, used: &[crate::memory::secrets::Filled]) {
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
    pub(super) fn seen(&self, mut obs: Observation) -> Observation {
        let frames: Vec<String> = obs.elements.iter().filter_map(|e| e.origin.clone()).collect();
        self.enter(&obs.url, &frames);
        self.scrubber().observation(&mut obs);
        obs
    }

    /// The exit guard for the panel (and `errand run`): every task event.
    pub(super) async fn emit(&self, event: TaskEvent, labels: Vec<String>) {
        let scrubber = self.scrubber();
        let event = scrubber.serde(event);
        let labels = labels.iter().map(|l| scrubber.text(l)).collect();
        self.cx.operator.emit(&self.spec.id, event, labels).await;
    }

    pub(super) fn row(&self, step: u32, obs: Option<&Observation>) -> StepRow {
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
    pub(super) fn save(&self, row: &StepRow) {
        let mut row = row.clone();
        self.scrubber().step_row(&mut row);
        if let Err(e) = self.store().record_step(&row) {
            tracing::error!(task_id = %self.spec.id, step = row.step, "cannot record the step: {e}");
            self.progress().unsaved.get_or_insert_with(|| unsaved(row.step, &e));
        }
    }

    pub(super) async fn record_failed_step(
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
    pub(super) async fn record_failed_step_row(
        &self,
        row: StepRow,
        error: &str,
        history: &mut Vec<PastStep>,
    ) {
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
pub(super) fn rebuild(p: &mut Progress) {
    p.scrubber = crate::memory::secrets::scrubber_for(&p.secrets, &p.filled, &p.origins);
}

/// Why the task ends when step `step` could not be recorded.
pub(super) fn unsaved(step: u32, e: &crate::memory::store::StoreError) -> String {
    format!(
        "Errand could not save step {step} ({e}), so it stopped rather than act unrecorded; what \
         was saved before is kept. Is the disk full?"
    )
}

//! One step: the prompt (with the screenshot, with vision on), the model's
//! answer (asked again once when unreadable), the actions, the loop check,
//! and the step's record and report.

use super::record::unsaved;
use super::*;

impl<B: Browser, O: Operator> Agent<'_, B, O> {
    pub(super) async fn step(
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
    pub(super) async fn ask(
        &self,
        step: u32,
        mut messages: Vec<ChatMessage>,
    ) -> Result<Asked, LlmError> {
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

    pub(super) fn record_call(
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
}

pub(super) fn add_usage(asked: &mut Asked, completion: &Completion, cost: Option<f64>) {
    if let Some(u) = completion.usage {
        asked.tokens_in = Some(asked.tokens_in.unwrap_or(0) + u.prompt_tokens);
        asked.tokens_out = Some(asked.tokens_out.unwrap_or(0) + u.completion_tokens);
    }
    if let Some(c) = cost {
        asked.cost_usd = Some(asked.cost_usd.unwrap_or(0.0) + c);
    }
}

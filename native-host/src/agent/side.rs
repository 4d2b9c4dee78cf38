//! What the agent asks besides the step itself: the past tasks that worked
//! on the site (recalled into the task, fenced: their answers and steps
//! were written from pages), the planner's plan, and the check of a `done`
//! answer. Each is a side call, charged and recorded; a side
//! call that fails leaves the step to go on without it.

use super::*;

impl<B: Browser, O: Operator> Agent<'_, B, O> {
    /// Past successful tasks on the same site like this one: what worked
    /// before, told to the model.
    pub(super) fn recall(&self, url: &str) {
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
        // Their answers and steps were written by a model from pages:
        // fenced, like the page.
        let mut list = String::new();
        for (id, task, answer) in hits {
            let goals: Vec<String> = store
                .steps(&id)
                .unwrap_or_default()
                .into_iter()
                .map(|s| s.next_goal)
                .filter(|g| !g.is_empty())
                .collect();
            list.push_str(&format!(
                "- \"{}\" → answered \"{}\"; steps: {}\n",
                prompt::cut(&task, 200),
                prompt::cut(&answer, 300),
                prompt::cut(&goals.join(" → "), 400)
            ));
        }
        let text = format!(
            "Earlier tasks on {site} that worked (use what helps):\n{}",
            prompt::fence(&list)
        );
        self.progress().recalled = Some(text);
    }

    /// Why the planner should run before this step, if it should.
    pub(super) fn plan_due(&self, step: u32, failures: u32) -> Option<&'static str> {
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
    pub(super) async fn plan(&self, step: u32, why: &str, obs: &Observation, history: &[PastStep]) {
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
    pub(super) async fn validate(
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
    pub(super) async fn side_call(&self, step: u32, text: String) -> Option<String> {
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
}

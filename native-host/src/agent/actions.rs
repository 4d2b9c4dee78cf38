//! Running the model's actions, in order, each through the gate
//! (`gate.rs`: the element is in the list, the site lists allow where it
//! leads, the user approved what it sets off when that cannot be taken
//! back, secrets go only into the fields and origins they are allowed on),
//! and the host's own actions (`done`, `ask_user`, `wait`).

use super::approval::Approval;
use super::gate::{Asker, Gate, Ran};
use super::*;
use crate::memory::secrets::Secrets;
use errand_protocol::{PolicyDecision, Verdict};

impl<B: Browser, O: Operator> Agent<'_, B, O> {
    /// The gate every action of this task passes (`gate.rs`), with the
    /// task's site lists, secrets and approvals.
    fn gate<'g>(
        &'g self,
        sites: &'g SitePolicy,
        secrets: &'g crate::memory::secrets::Secrets,
        uploads: &'g std::path::Path,
    ) -> Gate<'g, B, Self> {
        Gate {
            browser: &self.cx.browser,
            asker: self,
            sites,
            secrets,
            grants: &self.grants,
            uploads,
        }
    }

    /// The tab ended up on a page the site lists refuse (a link, a form, a
    /// redirect): nothing is done there; the agent goes back and the model
    /// is told why.
    pub(super) async fn leave_refused_page(
        &self,
        step: u32,
        tab_id: i64,
        obs: &Observation,
        history: &mut Vec<PastStep>,
    ) -> StepEnd {
        let refused = self.sites().check(&obs.url).err().map(|r| r.to_string()).unwrap_or_default();
        tracing::warn!(task_id = %self.spec.id, step, url = %obs.url, "on a refused page: {refused}");
        let (sites, secrets, uploads) =
            (self.sites(), Secrets::default(), std::path::PathBuf::new());
        let back = self.gate(&sites, &secrets, &uploads).leave(tab_id).await;
        let error = format!("the tab reached {}: {refused}. {back}", prompt::cut(&obs.url, 120));
        self.record_failed_step(step, Some(obs), &error, history).await;
        StepEnd::Next { ok: false, error: Some(error) }
    }

    /// Runs the actions in order; stops after one that failed or changed
    /// the URL. Returns the records, the element labels, how many actions
    /// were not run (of the first [`MAX_ACTIONS_PER_STEP`], and beyond
    /// them), and the outcome when `done` ran.
    pub(super) async fn act(
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
            let mut ms = None;
            self.progress().last_effect = None;
            let label = action.element().and_then(|i| prompt::label_in(obs, i));
            labels.push(label.clone().unwrap_or_default());
            let started = std::time::Instant::now();
            let (ok, detail, stop_here, verdict) =
                self.run_action(tab_id, obs, action, &mut finish).await;
            if action.runs_in_page() && verdict.decision != PolicyDecision::Refuse {
                let elapsed = started.elapsed().as_secs_f64() * 1000.0;
                ms = Some((elapsed * 10.0).round() / 10.0);
            }
            // What the action brought back (page text, an extract, the
            // user's answer, a tab list) is scrubbed as it comes in.
            let detail = self.scrubber().text(&detail);
            // The verified effect and the element's locator (recipes),
            // scrubbed like the rest of the record.
            let effect = self.progress().last_effect.take().or_else(|| {
                // The page went away before it answered (a form sent at
                // once): the element as the observation listed it.
                let i = action.element().filter(|_| !ok && detail.contains(recipe_navigated()))?;
                let locator = super::replay::listed_locator(obs, i);
                Some(errand_protocol::Effect {
                    url: obs.url.clone(),
                    locator,
                    ..Default::default()
                })
            });
            let effect = effect.map(|e| self.scrubber().serde(e));
            records.push(ActionRecord {
                action: action.clone(),
                ok,
                detail,
                ms,
                effect,
                verdict: Some(Verdict { reason: self.scrubber().text(&verdict.reason), ..verdict }),
            });
            if stop_here || !ok || finish.is_some() {
                break;
            }
        }
        let skipped = actions.len() - records.len();
        (records, labels, (skipped, over_limit), finish)
    }

    /// Runs one action through the gate: `(ok, detail, stop the sequence,
    /// the gate's verdict)`. The host's own actions (`done`, `ask_user`,
    /// `wait`, …) the gate lets through are carried out here.
    pub(super) async fn run_action(
        &self,
        tab_id: i64,
        obs: &Observation,
        action: &Action,
        finish: &mut Option<Outcome>,
    ) -> (bool, String, bool, Verdict) {
        let (sites, secrets) = (self.sites(), self.progress().secrets.clone());
        let uploads = tabs::uploads_dir(&self.settings().data_dir);
        let passage = self.gate(&sites, &secrets, &uploads).pass(Some(tab_id), obs, action).await;
        // From now on their values are scrubbed from whatever comes back.
        self.filled(&passage.used);
        let verdict = passage.verdict;
        let (ok, detail, stop) = match passage.ran {
            Ran::Not(why) => (false, why, true),
            Ran::Host => self.run_host_action(action, finish).await,
            Ran::Opened(Ok(tab)) => (true, format!("opened {}", tab.url), true),
            Ran::Opened(Err(e)) => (false, format!("could not open: {e}"), true),
            Ran::Tab(o) => {
                self.tab.store(o.tab_id, Ordering::SeqCst);
                (o.ok, o.detail, true)
            }
            // Later actions of the answer were planned on the page as it
            // was: stop when it changed in a way the model could not see.
            Ran::Page(Ok(effect)) => {
                let (detail, unforeseen) = (effect.detail(), effect.unforeseen());
                self.progress().last_effect = Some(effect);
                (true, detail, unforeseen)
            }
            Ran::Page(Err(BrowserError::Refused { message, .. }))
                if message.contains(NOT_A_SECRET_FIELD) =>
            {
                (false, not_a_secret_field(&message, &passage.used), true)
            }
            Ran::Page(Err(e)) => (false, e.to_string(), true),
        };
        (ok, detail, stop, verdict)
    }

    /// The host's own actions: `(ok, detail, stop the sequence)`.
    async fn run_host_action(
        &self,
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
            Action::ReportInfeasible { reason } => {
                *finish = Some(Outcome::Done { answer: reason.clone(), success: false });
                (true, "reported the task infeasible".to_owned(), true)
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
            other => (false, format!("`{}` is not the host's to carry out", other.name()), true),
        }
    }
}

/// The agent asks the person through its operator (the side panel, or the
/// terminal in `errand run`); a stop answers for them.
impl<B: Browser, O: Operator> Asker for Agent<'_, B, O> {
    async fn ask(&self, what: &Approval, action: &Action) -> Decision {
        let decision = self.cx.operator.await_approval(&self.spec.id);
        let event = what.event(self.step_now(), action);
        self.emit(event, Vec::new()).await;
        tokio::select! {
            _ = self.stop.token().cancelled() => Decision::Rejected,
            decision = decision => decision.unwrap_or(Decision::Unasked),
        }
    }
}

fn recipe_navigated() -> &'static str {
    crate::memory::recipe::NAVIGATED
}

/// How the content script words its refusal of a secret in a field that
/// is not a secret field (`act::check_secret_field`).
pub(super) const NOT_A_SECRET_FIELD: &str = "not a secret field";

/// The refusal told to the model: which secret, where it may go, and what
/// the user can do.
pub(super) fn not_a_secret_field(message: &str, used: &[crate::memory::secrets::Filled]) -> String {
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

//! Running the model's actions, in order, each behind its checks: the
//! element is in the list, the site lists allow where it leads, the user
//! approved it when it is irreversible, and secrets go only into the
//! fields and origins they are allowed on.

use super::*;

impl<B: Browser, O: Operator> Agent<'_, B, O> {
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
    pub(super) fn leads_off_limits(&self, action: &Action, obs: &Observation) -> Option<String> {
        approval::leads_off_limits(action, obs, &self.sites())
    }

    /// Asks the user to approve `action` when the host classes it as
    /// irreversible (or the site is one to ask first on). `None`: go on;
    /// `Some(detail)`: the user rejected it, or the task stopped.
    pub(super) async fn approval(&self, action: &Action, obs: &Observation) -> Option<String> {
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
                            let started = std::time::Instant::now();
                            let ran = self.run_action(tab_id, document, &action, &mut finish).await;
                            if action.runs_in_page() {
                                let elapsed = started.elapsed().as_secs_f64() * 1000.0;
                                ms = Some((elapsed * 10.0).round() / 10.0);
                            }
                            ran
                        }
                    },
                },
            };
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
            records.push(ActionRecord { action: action.clone(), ok, detail, ms, effect });
            if stop_here || !ok || finish.is_some() {
                break;
            }
        }
        let skipped = actions.len() - records.len();
        (records, labels, (skipped, over_limit), finish)
    }

    /// Runs one action: `(ok, detail, stop the sequence)`. `document` is the
    /// address (or origin) of the document its element is in.
    pub(super) async fn run_action(
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
                    Ok(effect) => {
                        let (detail, unforeseen) = (effect.detail(), effect.unforeseen());
                        self.progress().last_effect = Some(effect);
                        (true, detail, unforeseen)
                    }
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

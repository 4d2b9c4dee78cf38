//! The host's task: at most one running, started, stopped, paused and
//! resumed from the side panel or the terminal, and the host as the agent's
//! [`Operator`]: its events, questions and approvals.

use super::*;

impl Host {
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

    pub(super) fn prepare_task(
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

    /// The recipe `name` from the data folder, with `params` put in.
    pub fn replay_of(
        &self,
        name: &str,
        params: Vec<(String, String)>,
    ) -> Result<agent::replay::Replay, crate::memory::recipe::RecipeError> {
        let saved = crate::memory::recipe::Recipe::load(&self.settings().data_dir, name)?;
        let applied = saved.with_params(&params)?;
        Ok(agent::replay::Replay { saved, applied })
    }

    /// Starts a recipe's replay (`agent::replay`) as a task, in a new tab
    /// at the recipe's start, or in tab `tab_id`. Returns the task's id.
    pub fn start_recipe(
        &self,
        replay: agent::replay::Replay,
        tab_id: Option<i64>,
    ) -> Result<String, HostError> {
        let text =
            format!("Replay of the recipe `{}`: {}", replay.applied.name, replay.applied.task);
        let url = replay.applied.start_url.clone();
        let prepared = self.prepare_task(&text, tab_id, Some(&url))?;
        let id = prepared.spec.id.clone();
        self.launch_with(prepared, Some(replay));
        Ok(id)
    }

    pub(super) fn launch(&self, prepared: Prepared) {
        self.launch_with(prepared, None);
    }

    fn launch_with(&self, prepared: Prepared, replay: Option<agent::replay::Replay>) {
        let id = prepared.spec.id.clone();
        let cx = agent::Context {
            browser: self.clone(),
            operator: self.clone(),
            setup: self.inner.setup.subscribe(),
            store: self.inner.store.clone(),
        };
        let handle = match replay {
            Some(r) => tokio::spawn(agent::replay::run(
                cx,
                prepared.spec,
                r,
                prepared.stop,
                prepared.pause,
            )),
            None => tokio::spawn(agent::run(cx, prepared.spec, prepared.stop, prepared.pause)),
        };
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
    pub(super) fn with_running<T>(
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
    /// task when `task_id` is `None`), for this action or, approved, for
    /// its kind on its site for the task or from now on.
    pub fn approve(
        &self,
        task_id: Option<&str>,
        approved: bool,
        scope: errand_protocol::ApprovalScope,
    ) -> Result<String, HostError> {
        use errand_protocol::ApprovalScope;
        let decision = match (approved, scope) {
            (false, _) => Decision::Rejected,
            (true, ApprovalScope::Once) => Decision::Approved,
            (true, ApprovalScope::Task) => Decision::ApprovedForTask,
            (true, ApprovalScope::Site) => Decision::ApprovedOnSite,
        };
        self.decide(task_id, decision)
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
    pub(super) fn prepare_follow_up(
        &self,
        previous: &str,
        task: &str,
    ) -> Result<Prepared, HostError> {
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

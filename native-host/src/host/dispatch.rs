//! The connection: one reader of frames from the extension (or the
//! terminal's socket), one writer, and the dispatch of each incoming
//! message. A reply to one of the host's own requests (an action's effect,
//! an observation) goes from the reader thread straight to the request
//! waiting for it, without a turn through the message loop. The message
//! loop never waits on a task; the side panel's management requests run
//! off it ([`super::panel_api`]).

use super::*;

impl Host {
    /// Serves one connection until the other side closes it. On disconnect
    /// the running task is stopped and recorded as failed ("the browser
    /// disconnected"). A host serves at most one connection.
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> Result<(), HostError>
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let out_rx = lock(&self.inner.out_rx).take().ok_or(HostError::AlreadyServing)?;
        transport::spawn_writer(writer, out_rx);
        // A reply goes from the reader thread straight to the request
        // waiting for it (an action's effect), not through the message loop.
        let host = self.clone();
        let mut incoming =
            transport::spawn_reader_with(reader, MAX_INBOUND, move |item| host.take_reply(item));
        tracing::info!("connected");
        while let Some(item) = incoming.recv().await {
            self.handle(item).await;
        }
        tracing::info!("the connection closed");
        self.on_disconnect().await;
        Ok(())
    }

    pub(super) async fn on_disconnect(&self) {
        self.inner.disconnected.store(true, Ordering::SeqCst);
        let handle = {
            let mut running = lock(&self.inner.running);
            running.as_mut().and_then(|r| {
                tracing::warn!(task_id = %r.task_id, "the browser disconnected during the task");
                r.stop.stop(Outcome::Failed { error: DISCONNECTED.to_owned() });
                r.handle.take()
            })
        };
        // Requests still waiting fail at once.
        lock(&self.inner.pending).clear();
        if let Some(handle) = handle {
            if tokio::time::timeout(Duration::from_secs(5), handle).await.is_err() {
                tracing::error!("the task did not end within 5 s of the disconnect");
            }
        }
        let (done, wait) = oneshot::channel();
        if self.inner.out_tx.send(Outgoing::Close(done)).await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), wait).await;
        }
    }

    /// Hands a reply to the request waiting for it; anything else (and a
    /// reply nobody waits for) is given back for the message loop.
    pub(super) fn take_reply(&self, item: Incoming) -> Option<Incoming> {
        let Some(re) = item.as_ref().ok().and_then(|env| env.re) else {
            return Some(item);
        };
        let Some(waiting) = lock(&self.inner.pending).remove(&re) else {
            return Some(item);
        };
        if let Ok(env) = item {
            if waiting.send(env.body).is_err() {
                tracing::debug!(re, "a reply came for a request nobody waits for any more");
            }
        }
        None
    }

    /// Handles one incoming item.
    pub(super) async fn handle(&self, item: Incoming) {
        match item {
            Err(e) => self.reply_error(e.request_id(), e.code(), e.to_string()).await,
            Ok(env) => self.dispatch(env).await,
        }
    }

    pub(super) async fn dispatch(&self, env: Envelope) {
        let id = env.id;
        if let Some(re) = env.re {
            let waiting = lock(&self.inner.pending).remove(&re);
            if let Some(tx) = waiting {
                if tx.send(env.body).is_err() {
                    tracing::debug!(re, "a reply came for a request nobody waits for any more");
                }
                return;
            }
        }
        match env.body {
            Body::Hello { extension_version } => {
                tracing::info!(%extension_version, "the extension said hello");
                self.reply(id, Body::Welcome { host_version: HOST_VERSION.to_owned() }).await;
            }
            Body::StartTask { task, tab_id, url, allow_sites } => {
                match self.prepare_task(&task, tab_id, url.as_deref()) {
                    Ok(mut prepared) => {
                        prepared.spec.allow_sites = allow_sites;
                        let task_id = prepared.spec.id.clone();
                        self.reply(id, Body::TaskAccepted { task_id }).await;
                        self.launch(prepared);
                    }
                    Err(e) => self.reply_error(Some(id), e.code(), e.to_string()).await,
                }
            }
            Body::RunRecipe { name, params, tab_id } => {
                let started = self
                    .replay_of(&name, params.into_iter().collect())
                    .map_err(|e| (ErrorCode::BadMessage, e.to_string()));
                let started = started.and_then(|r| {
                    self.start_recipe(r, tab_id).map_err(|e| (e.code(), e.to_string()))
                });
                match started {
                    Ok(task_id) => self.reply(id, Body::TaskAccepted { task_id }).await,
                    Err((code, why)) => self.reply_error(Some(id), code, why).await,
                }
            }
            Body::FollowUp { task_id: previous, task } => {
                match self.prepare_follow_up(&previous, &task) {
                    Ok(prepared) => {
                        let task_id = prepared.spec.id.clone();
                        self.reply(id, Body::TaskAccepted { task_id }).await;
                        self.launch(prepared);
                    }
                    Err(e) => self.reply_error(Some(id), e.code(), e.to_string()).await,
                }
            }
            Body::Answer { task_id, text } => {
                let done = self.answer(task_id.as_deref(), &text);
                self.ack_or_error(id, done).await;
            }
            Body::StopTask { task_id } => {
                let done = self.stop_task(task_id.as_deref());
                self.ack_or_error(id, done).await;
            }
            Body::PauseTask { task_id, take_over } => {
                let done = self.pause_task(task_id.as_deref(), take_over);
                let task = done.as_ref().ok().cloned();
                self.ack_or_error(id, done).await;
                if let Some(task) = task {
                    self.emit(&task, TaskEvent::Paused { take_over }, Vec::new()).await;
                }
            }
            Body::ResumeTask { task_id } => {
                let done = self.resume_task(task_id.as_deref());
                let task = done.as_ref().ok().cloned();
                self.ack_or_error(id, done).await;
                if let Some(task) = task {
                    self.emit(&task, TaskEvent::Resumed {}, Vec::new()).await;
                }
            }
            Body::HandTab { tab_id } => {
                let done = self.hand_tab(tab_id);
                self.ack_or_error(id, done).await;
            }
            Body::Approve { task_id, approved, scope } => {
                let done = self.approve(task_id.as_deref(), approved, scope);
                self.ack_or_error(id, done).await;
            }
            Body::Ping { pad: _, reply_bytes } => {
                if reply_bytes > errand_protocol::MAX_PONG {
                    let why = format!(
                        "a pong of {reply_bytes} bytes was asked for; at most {} are sent",
                        errand_protocol::MAX_PONG
                    );
                    self.reply_error(Some(id), ErrorCode::BadMessage, why).await;
                } else {
                    let data = "x".repeat(reply_bytes as usize);
                    self.reply(id, Body::Pong { data }).await;
                }
            }
            Body::GetStatus {} => {
                let s = self.settings();
                let body = Body::Status {
                    host_version: HOST_VERSION.to_owned(),
                    model: s.model.clone(),
                    base_url: s.base_url.clone(),
                    running_task: self.running_task(),
                    configured: s.is_configured(),
                    paused: self.is_paused(),
                };
                self.reply(id, body).await;
            }
            body if body.is_management_request() => {
                // Reading the store, the files or the model server must not
                // hold up the message loop (a `stop_task` behind it).
                let host = self.clone();
                tokio::spawn(async move {
                    match crate::host::panel_api::handle(&host, body).await {
                        Ok(reply) => host.reply(id, reply).await,
                        Err(e) => host.reply_error(Some(id), e.code(), e.to_string()).await,
                    }
                });
            }
            Body::Error { code, message } => {
                // Never answer an error with an error.
                tracing::warn!(?code, re = ?env.re, "the extension reported: {message}");
            }
            body @ (Body::TabReady { .. }
            | Body::Captured { .. }
            | Body::Observation(_)
            | Body::ActionDone { .. }
            | Body::Located(_)
            | Body::Ack {})
                if env.re.is_some() =>
            {
                tracing::warn!(re = ?env.re, "dropped a late `{}` reply", kind_of(&body));
            }
            body => {
                let kind = kind_of(&body);
                tracing::warn!("refused a `{kind}` message");
                self.reply_error(
                    Some(id),
                    ErrorCode::NotAllowed,
                    format!("the host does not accept `{kind}` messages"),
                )
                .await;
            }
        }
    }
}

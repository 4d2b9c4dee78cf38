//! The host's requests to the extension, each waiting for its reply (or a
//! timeout, or the end of the connection), and the host as the agent's
//! [`Browser`]. An observation sent as a diff is made whole here.

use super::*;

impl Host {
    /// Sends a request to the extension and waits for its reply. An `error`
    /// reply becomes [`BrowserError::Refused`].
    pub async fn request(&self, body: Body) -> Result<Body, BrowserError> {
        // What is asked, for a timeout's message (worded only then).
        let asked = match &body {
            Body::Page { tab_id, command } => Asked::Page(*tab_id, page_op(command)),
            other => Asked::Browser(kind_of(other)),
        };
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, tx);
        let _guard = PendingGuard { host: self, id };
        if self.inner.disconnected.load(Ordering::SeqCst) {
            return Err(BrowserError::Disconnected);
        }
        let env = Box::new(Envelope::new(id, body));
        if self.inner.out_tx.send(Outgoing::Message(env)).await.is_err() {
            return Err(BrowserError::Disconnected);
        }
        let timeout = Duration::from_millis(self.inner.request_timeout_ms.load(Ordering::Relaxed));
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Body::Error { code, message })) => Err(BrowserError::Refused { code, message }),
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(BrowserError::Disconnected),
            Err(_) => {
                let (what, hint) = match asked {
                    Asked::Page(tab_id, op) => (
                        format!("the page in tab {tab_id} (`{op}`)"),
                        ": was the tab closed, or is the page stuck?",
                    ),
                    Asked::Browser(kind) => {
                        (format!("the browser (`{kind}`)"), ": is the extension running?")
                    }
                };
                Err(BrowserError::Timeout { what, secs: timeout.as_secs(), hint })
            }
        }
    }

    /// `open_tab {url}` → the loaded tab.
    pub async fn open_tab(&self, url: &str) -> Result<TabInfo, BrowserError> {
        tab_info("open_tab", self.request(Body::OpenTab { url: url.to_owned() }).await?)
    }

    /// `active_tab {}` → the focused window's active tab.
    pub async fn active_tab(&self) -> Result<TabInfo, BrowserError> {
        tab_info("active_tab", self.request(Body::ActiveTab {}).await?)
    }

    /// `navigate {tab_id, url}` → the loaded tab.
    pub async fn navigate(&self, tab_id: i64, url: &str) -> Result<TabInfo, BrowserError> {
        let body = Body::Navigate { tab_id, url: url.to_owned() };
        tab_info("navigate", self.request(body).await?)
    }

    /// `page {observe}` → the numbered element list. The page may answer
    /// with only what changed since the observation held for the tab; it is
    /// made whole here (or, when it does not fit, asked for again whole).
    pub async fn observe(&self, tab_id: i64, marks: bool) -> Result<Observation, BrowserError> {
        let since = lock(&self.inner.held).get(&tab_id).map(|o| o.seq).filter(|s| *s != 0);
        let mut obs = self.observe_since(tab_id, marks, since).await?;
        if obs.diff.is_some() {
            let resolved = obs.resolve(lock(&self.inner.held).get(&tab_id));
            obs = match resolved {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(tab_id, "{e}: observing the page whole");
                    let whole = self.observe_since(tab_id, marks, None).await?;
                    whole.resolve(None).map_err(|_| BrowserError::Unexpected {
                        request: "page observe".to_owned(),
                        got: "a diff against nothing".to_owned(),
                    })?
                }
            };
        }
        let mut held = lock(&self.inner.held);
        if held.len() >= HELD_TABS && !held.contains_key(&tab_id) {
            held.clear();
        }
        held.insert(tab_id, obs.clone());
        Ok(obs)
    }

    pub(super) async fn observe_since(
        &self,
        tab_id: i64,
        marks: bool,
        since: Option<u64>,
    ) -> Result<Observation, BrowserError> {
        let body =
            Body::Page { tab_id, command: PageCommand::Observe { marks, full: false, since } };
        match self.request(body).await? {
            Body::Observation(o) => Ok(o),
            other => Err(unexpected("page observe", &other)),
        }
    }

    /// `page {act}`, for an action the gate let through: the page carries
    /// it out only under `guard`'s conditions (see [`PageCommand::Act`]).
    async fn act_guarded(
        &self,
        tab_id: i64,
        action: Action,
        guard: Guard,
    ) -> Result<Effect, BrowserError> {
        let Guard { only_on, secret_field, secrets, permit: _ } = guard;
        let command = PageCommand::Act { action, only_on, secret_field, secrets };
        let body = Body::Page { tab_id, command };
        match self.request(body).await? {
            Body::ActionDone { effect } => Ok(effect),
            other => Err(unexpected("page act", &other)),
        }
    }

    /// `capture {tab_id}` → a JPEG data URL of the visible part.
    pub async fn capture(&self, tab_id: i64) -> Result<String, BrowserError> {
        match self.request(Body::Capture { tab_id }).await? {
            Body::Captured { data_url } => Ok(data_url),
            other => Err(unexpected("capture", &other)),
        }
    }
}

/// What a request asks of, for its timeout's message.
enum Asked {
    /// A page command to a tab: the tab and the command's name.
    Page(i64, String),
    /// Another request to the browser: its kind.
    Browser(String),
}

/// A page command's name, as a timeout names it: `observe`, `act: click`.
fn page_op(command: &PageCommand) -> String {
    match command {
        PageCommand::Observe { .. } => "observe".to_owned(),
        PageCommand::Act { action, .. } => format!("act: {}", action.name()),
        PageCommand::Cleanup {} => "cleanup".to_owned(),
        PageCommand::SetFiles { .. } => "set_files".to_owned(),
        PageCommand::Locate { .. } => "locate".to_owned(),
        PageCommand::Stakes { action } => format!("stakes: {}", action.name()),
    }
}

/// Removes a pending request when its future ends or is dropped.
struct PendingGuard<'a> {
    host: &'a Host,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        lock(&self.host.inner.pending).remove(&self.id);
    }
}

pub(crate) fn unexpected(request: &str, got: &Body) -> BrowserError {
    BrowserError::Unexpected { request: request.to_owned(), got: kind_of(got) }
}

pub(crate) fn tab_info(request: &str, body: Body) -> Result<TabInfo, BrowserError> {
    match body {
        Body::TabReady { tab_id, url, title } => Ok(TabInfo { tab_id, url, title }),
        other => Err(unexpected(request, &other)),
    }
}

/// The host is the agent's browser: each call a request to the extension.
impl Browser for Host {
    async fn observe(&self, tab_id: i64, marks: bool) -> Result<Observation, BrowserError> {
        Host::observe(self, tab_id, marks).await
    }

    async fn act(&self, tab_id: i64, action: Action, guard: Guard) -> Result<Effect, BrowserError> {
        self.act_guarded(tab_id, action, guard).await
    }

    async fn stakes(
        &self,
        tab_id: i64,
        action: Action,
    ) -> Result<errand_protocol::Stakes, BrowserError> {
        let body = Body::Page { tab_id, command: PageCommand::Stakes { action } };
        match self.request(body).await? {
            Body::Stakes { stakes } => Ok(stakes),
            other => Err(unexpected("page stakes", &other)),
        }
    }

    async fn set_files(
        &self,
        tab_id: i64,
        index: u32,
        files: Vec<FilePayload>,
        _: &Permit,
    ) -> Result<Effect, BrowserError> {
        let body = Body::Page { tab_id, command: PageCommand::SetFiles { index, files } };
        match self.request(body).await? {
            Body::ActionDone { effect } => Ok(effect),
            other => Err(unexpected("page set_files", &other)),
        }
    }

    async fn navigate(&self, tab_id: i64, url: &str, _: &Permit) -> Result<TabInfo, BrowserError> {
        Host::navigate(self, tab_id, url).await
    }

    async fn locate(
        &self,
        tab_id: i64,
        locator: errand_protocol::Locator,
    ) -> Result<errand_protocol::Located, BrowserError> {
        let body = Body::Page { tab_id, command: PageCommand::Locate { locator } };
        match self.request(body).await? {
            Body::Located(found) => Ok(found),
            other => Err(unexpected("page locate", &other)),
        }
    }

    async fn open_tab(&self, url: &str, _: &Permit) -> Result<TabInfo, BrowserError> {
        Host::open_tab(self, url).await
    }

    async fn active_tab(&self) -> Result<TabInfo, BrowserError> {
        Host::active_tab(self).await
    }

    async fn activate_tab(&self, tab_id: i64) -> Result<TabInfo, BrowserError> {
        tab_info("activate_tab", self.request(Body::ActivateTab { tab_id }).await?)
    }

    async fn close_tab(&self, tab_id: i64) -> Result<(), BrowserError> {
        self.request(Body::CloseTab { tab_id }).await.map(drop)
    }

    async fn list_tabs(&self) -> Result<Vec<TabSummary>, BrowserError> {
        match self.request(Body::ListTabs {}).await? {
            Body::Tabs { tabs } => Ok(tabs),
            other => Err(unexpected("list_tabs", &other)),
        }
    }

    async fn capture(&self, tab_id: i64) -> Result<String, BrowserError> {
        Host::capture(self, tab_id).await
    }

    async fn cleanup(&self, tab_id: i64) -> Result<(), BrowserError> {
        let body = Body::Page { tab_id, command: PageCommand::Cleanup {} };
        self.request(body).await.map(drop)
    }
}

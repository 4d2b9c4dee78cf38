//! The host's MCP front door: in native messaging mode (Chrome started us,
//! the extension connected) the host also listens on a per-user Unix
//! socket for ONE `errand mcp` process at a time; each `tool_call` it sends
//! is run by the tools layer (`crate::tools`) on the real extension, under
//! the same rules as the agent, and answered with `tool_result`.
//!
//! Who may connect: the socket's folder is 0700 and the socket 0600, and a
//! peer whose uid is not ours (`SO_PEERCRED`) is refused. A second client
//! while one is connected gets a clear error and is closed. An MCP session
//! is a task of the host (one running at a time): a side-panel task and an
//! MCP caller never drive the browser at once; the panel shows the session
//! ("Driven by <client> (MCP)"), its steps and its approvals, and its Stop
//! ends it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::*;
use crate::tools::{Reply, Session};

/// The socket's path, for the host and `errand mcp` alike (tests point both
/// at their own).
pub const MCP_SOCKET_ENV: &str = "ERRAND_MCP_SOCKET";

/// Where the host listens for `errand mcp`: `ERRAND_MCP_SOCKET`, else
/// `errand/mcp.sock` in the user's runtime folder (`$XDG_RUNTIME_DIR`), else
/// `errand-<uid>/mcp.sock` in the temporary folder (made 0700; a folder of
/// that name owned by someone else cannot be made ours, and the host then
/// does not listen). Never in the data folder, which holds only data.
pub fn socket_path() -> PathBuf {
    if let Some(p) = std::env::var_os(MCP_SOCKET_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let dirs = directories::BaseDirs::new();
    if let Some(run) = dirs.as_ref().and_then(|d| d.runtime_dir()) {
        return run.join("errand").join("mcp.sock");
    }
    #[cfg(unix)]
    let user = {
        use std::os::unix::fs::MetadataExt;
        dirs.and_then(|d| std::fs::metadata(d.home_dir()).ok())
            .map(|m| m.uid().to_string())
            .unwrap_or_else(|| "user".to_owned())
    };
    #[cfg(not(unix))]
    let user = "user";
    std::env::temp_dir().join(format!("errand-{user}")).join("mcp.sock")
}

/// The frames on the socket: one envelope each, never chunked.
pub fn write_frame<W: Write>(to: &mut W, env: &Envelope) -> std::io::Result<()> {
    let text = serde_json::to_string(env).map_err(std::io::Error::other)?;
    to.write_all(&transport::raw_frame(text.as_bytes()))?;
    to.flush()
}

impl Host {
    /// Starts an MCP session for `client` as the host's running task.
    pub async fn begin_session(&self, client: &str) -> Result<Session<Host, Host>, HostError> {
        let prepared = self.prepare_task(&crate::tools::session_title(client), None, None)?;
        Ok(Session::start(
            self.clone(),
            self.clone(),
            self.inner.setup.subscribe(),
            self.inner.store.clone(),
            prepared.spec.id,
            client.to_owned(),
            prepared.stop,
        )
        .await)
    }

    /// The user lets the connected MCP client use tab `tab_id`.
    pub fn hand_tab(&self, tab_id: i64) -> Result<String, HostError> {
        let session = lock(&self.inner.mcp).clone().ok_or(HostError::NoTask)?;
        session.hand_over(tab_id);
        Ok(session.id().to_owned())
    }

    /// Listens for `errand mcp` on [`socket_path`] until the process ends.
    /// Another host already listening there keeps it.
    #[cfg(unix)]
    pub async fn listen_mcp(&self, path: PathBuf) {
        match bind(&path) {
            Ok(Some(listener)) => {
                tracing::info!(socket = %path.display(), "listening for errand mcp");
                self.accept_mcp(listener).await;
            }
            Ok(None) => tracing::info!(socket = %path.display(), "another host serves errand mcp"),
            Err(e) => tracing::warn!(socket = %path.display(), "cannot listen for errand mcp: {e}"),
        }
    }

    #[cfg(unix)]
    async fn accept_mcp(&self, listener: tokio::net::UnixListener) {
        let busy = Arc::new(AtomicBool::new(false));
        let me = own_uid(&listener);
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let uid = stream.peer_cred().ok().map(|c| c.uid());
            let Ok(mut std_stream) = stream.into_std() else { continue };
            let _ = std_stream.set_nonblocking(false);
            if uid.is_none() || uid != me {
                tracing::warn!(?uid, "refused an errand mcp connection of another user");
                let _ = refuse(&mut std_stream, "refused: another user's process");
                continue;
            }
            if busy.swap(true, Ordering::SeqCst) {
                let _ = refuse(
                    &mut std_stream,
                    "another MCP client is already driving Errand; one client at a time: \
                     close the other one first",
                );
                continue;
            }
            let host = self.clone();
            let busy = busy.clone();
            tokio::spawn(async move {
                host.serve_mcp(std_stream).await;
                busy.store(false, Ordering::SeqCst);
            });
        }
    }

    #[cfg(unix)]
    async fn serve_mcp(&self, stream: std::os::unix::net::UnixStream) {
        let Ok(reader) = stream.try_clone() else { return };
        let writer = Arc::new(Mutex::new(stream));
        let mut incoming = transport::spawn_reader(reader, 16 * 1024 * 1024);
        let mut session: Option<Arc<Session<Host, Host>>> = None;
        while let Some(item) = incoming.recv().await {
            let Ok(env) = item else { break };
            let reply = match env.body {
                Body::ToolCall { client, name, args } => {
                    if session.is_none() {
                        match self.begin_session(&client).await {
                            Ok(s) => {
                                // The panel's Stop ends the session at once
                                // (the browser is free for the panel again).
                                let s = Arc::new(s);
                                *lock(&self.inner.mcp) = Some(s.clone());
                                let watched = s.clone();
                                tokio::spawn(async move {
                                    watched.stopped().await;
                                    watched.finish().await;
                                });
                                session = Some(s);
                            }
                            Err(HostError::Busy(_)) => {
                                let r = Reply {
                                    text: "a task is running in Errand's side panel: Errand drives \
                                           the browser for one of them at a time; try again when it \
                                           ended"
                                        .into(),
                                    image: None,
                                    is_error: true,
                                };
                                send_reply(&writer, env.id, r).await;
                                continue;
                            }
                            Err(e) => {
                                let r = Reply { text: e.to_string(), image: None, is_error: true };
                                send_reply(&writer, env.id, r).await;
                                continue;
                            }
                        }
                    }
                    match &session {
                        Some(s) => s.call(&name, args).await,
                        None => continue,
                    }
                }
                other => Reply {
                    text: format!("the MCP socket takes only tool_call, not `{}`", kind_of(&other)),
                    image: None,
                    is_error: true,
                },
            };
            send_reply(&writer, env.id, reply).await;
        }
        if let Some(s) = session {
            lock(&self.inner.mcp).take();
            s.finish().await;
        }
        tracing::info!("the errand mcp client disconnected");
    }
}

#[cfg(unix)]
async fn send_reply(writer: &Arc<Mutex<std::os::unix::net::UnixStream>>, re: u64, r: Reply) {
    let env = Envelope::reply(
        0,
        re,
        Body::ToolResult { text: r.text, image: r.image, is_error: r.is_error },
    );
    let writer = writer.clone();
    let _ = tokio::task::spawn_blocking(move || {
        let mut w = lock(&writer);
        if let Err(e) = write_frame(&mut *w, &env) {
            tracing::debug!("cannot answer errand mcp: {e}");
        }
    })
    .await;
}

#[cfg(unix)]
fn refuse(stream: &mut std::os::unix::net::UnixStream, why: &str) -> std::io::Result<()> {
    let body = Body::ToolResult { text: why.to_owned(), image: None, is_error: true };
    write_frame(stream, &Envelope::new(0, body))
}

/// Our own uid: the owner of the socket we just made.
#[cfg(unix)]
fn own_uid(listener: &tokio::net::UnixListener) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let path = listener.local_addr().ok()?.as_pathname()?.to_owned();
    std::fs::metadata(path).ok().map(|m| m.uid())
}

/// Binds the socket in an owner-only folder; `None` when a live host
/// already listens there (a stale socket is replaced).
#[cfg(unix)]
fn bind(path: &Path) -> std::io::Result<Option<tokio::net::UnixListener>> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Ok(None);
        }
        std::fs::remove_file(path)?;
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Some(listener))
}

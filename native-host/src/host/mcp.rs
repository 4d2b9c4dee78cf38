//! The host's MCP front door: in native messaging mode (Chrome started us,
//! the extension connected) the host also listens on a per-user Unix
//! socket for ONE `errand mcp` process at a time; each `tool_call` it sends
//! is run by the tools layer (`crate::tools`) on the real extension, under
//! the same rules as the agent, and answered with `tool_result`.
//!
//! Who may connect: the socket's folder is 0700 and the socket 0600, and a
//! peer whose uid is not ours (`SO_PEERCRED`, [`peer_uid`]) is refused.
//! The host makes the folder itself (0700) or uses one that is already a
//! real folder of ours with mode 0700: a folder of another user (someone
//! who made `/tmp/errand-<uid>` first), one others may enter, or a symbolic
//! link is refused and the host does not listen ([`private_dir`]; it never
//! changes the mode of a folder it did not just make, nor follows a link).
//! The same rules hold for `errand mcp` the other way round
//! ([`connect_checked`]): before connecting it checks the folder (ours,
//! 0700, no link) and the socket (ours, a socket, no link), and after
//! connecting that the listening process runs as us; otherwise it says
//! which path is wrong, whose it is, its mode and what to do, and sends
//! nothing. A second client
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
    let user = my_uid();
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
        let me = Some(my_uid());
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let uid = peer_uid(&stream);
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

/// Our own (effective) uid.
#[cfg(unix)]
pub fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The uid of the process at the other end of a Unix socket
/// (`SO_PEERCRED`; `getpeereid` on macOS): the host checks its clients
/// with it and `errand mcp` the host.
#[cfg(unix)]
pub fn peer_uid(stream: &tokio::net::UnixStream) -> Option<u32> {
    stream.peer_cred().ok().map(|c| c.uid())
}

/// Why a socket's folder or the socket is not ours alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotPrivate {
    #[error(
        "{path} is a symbolic link: Errand never follows a link for its MCP socket (someone \
         could point it at their own); remove it"
    )]
    Link { path: PathBuf },
    #[error("{path} is not a {want}; remove it")]
    Kind { path: PathBuf, want: &'static str },
    #[error(
        "{path} belongs to uid {owner}, not to you (uid {me}): another user may have made it to \
         receive your MCP calls; have it removed (its owner or root), or set XDG_RUNTIME_DIR or \
         ERRAND_MCP_SOCKET to a folder of your own"
    )]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{path} has mode {mode:03o}: other users may enter it; `chmod 700 {path}` (or remove it \
         and let Errand's host make it again)"
    )]
    Mode { path: PathBuf, mode: u32 },
    #[error(
        "the process listening on {path} runs as uid {peer}, not as you (uid {me}): refused, \
         nothing was sent; remove the socket and restart Chrome"
    )]
    Peer { path: PathBuf, peer: u32, me: u32 },
    #[error("cannot check {path}: {error}")]
    Io { path: PathBuf, error: String },
}

/// Checks that `dir` is a real folder (not a link) of `uid`'s that
/// nobody else may enter (no group or other bits).
#[cfg(unix)]
pub fn check_private_dir(dir: &Path, uid: u32) -> Result<(), NotPrivate> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let path = dir.to_owned();
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| NotPrivate::Io { path: path.clone(), error: e.to_string() })?;
    if m.file_type().is_symlink() {
        return Err(NotPrivate::Link { path });
    }
    if !m.is_dir() {
        return Err(NotPrivate::Kind { path, want: "folder" });
    }
    if m.uid() != uid {
        return Err(NotPrivate::Owner { path, owner: m.uid(), me: uid });
    }
    let mode = m.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(NotPrivate::Mode { path, mode });
    }
    Ok(())
}

/// Checks that `path` is a socket (not a link) of `uid`'s.
#[cfg(unix)]
pub fn check_socket(path: &Path, uid: u32) -> Result<(), NotPrivate> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let owned = path.to_owned();
    let m = std::fs::symlink_metadata(path)
        .map_err(|e| NotPrivate::Io { path: owned.clone(), error: e.to_string() })?;
    if m.file_type().is_symlink() {
        return Err(NotPrivate::Link { path: owned });
    }
    if !m.file_type().is_socket() {
        return Err(NotPrivate::Kind { path: owned, want: "socket" });
    }
    if m.uid() != uid {
        return Err(NotPrivate::Owner { path: owned, owner: m.uid(), me: uid });
    }
    Ok(())
}

/// The socket's folder for the host: made 0700 when missing, else checked
/// ([`check_private_dir`]) and never changed.
#[cfg(unix)]
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        // Ours, just made: 0700 whatever the umask.
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private_dir(dir, my_uid()).map_err(std::io::Error::other)
}

/// `errand mcp`'s side: connects to the host's socket at `path` only when
/// its folder and the socket are ours alone, and the process listening
/// runs as us. `Ok(None)`: nothing listens there (no host is running).
#[cfg(unix)]
pub async fn connect_checked(
    path: &Path,
) -> Result<Option<std::os::unix::net::UnixStream>, NotPrivate> {
    let me = my_uid();
    let missing = |p: &Path| matches!(std::fs::symlink_metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if missing(dir) || missing(path) {
        return Ok(None);
    }
    check_private_dir(dir, me)?;
    check_socket(path, me)?;
    let stream = match tokio::net::UnixStream::connect(path).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Ok(None),
        Err(e) => return Err(NotPrivate::Io { path: path.to_owned(), error: e.to_string() }),
    };
    match peer_uid(&stream) {
        Some(uid) if uid == me => {}
        peer => {
            let peer = peer.unwrap_or(u32::MAX);
            return Err(NotPrivate::Peer { path: path.to_owned(), peer, me });
        }
    }
    let io = |e: std::io::Error| NotPrivate::Io { path: path.to_owned(), error: e.to_string() };
    let stream = stream.into_std().map_err(io)?;
    stream.set_nonblocking(false).map_err(io)?;
    Ok(Some(stream))
}

/// Binds the socket in an owner-only folder ([`private_dir`]); `None`
/// when a live host already listens there (a stale socket is replaced).
#[cfg(unix)]
fn bind(path: &Path) -> std::io::Result<Option<tokio::net::UnixListener>> {
    use std::os::unix::fs::PermissionsExt;
    private_dir(path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))?;
    // Whatever is there (a stale socket, a link) is in our own folder.
    if std::fs::symlink_metadata(path).is_ok() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Ok(None);
        }
        std::fs::remove_file(path)?;
    }
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Some(listener))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Root can give a file to another user (65534, `nobody`), as another
    /// local user would have made it.
    fn as_root() -> bool {
        my_uid() == 0
    }

    #[test]
    fn a_socket_folder_must_be_a_real_folder_of_ours_nobody_else_enters() {
        let top = tempfile::tempdir().unwrap();
        let me = my_uid();
        let dir = top.path().join("errand-x");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o700);
        assert_eq!(check_private_dir(&dir, me), Ok(()));
        chmod(&dir, 0o755);
        let e = check_private_dir(&dir, me).unwrap_err();
        assert!(matches!(e, NotPrivate::Mode { mode: 0o755, .. }), "{e}");
        let msg = e.to_string();
        assert!(msg.contains(&dir.display().to_string()) && msg.contains("chmod 700"), "{msg}");
        chmod(&dir, 0o700);
        // A link to a private folder of ours is still a link.
        let link = top.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(matches!(check_private_dir(&link, me), Err(NotPrivate::Link { .. })));
        let file = top.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(check_private_dir(&file, me), Err(NotPrivate::Kind { .. })));
        assert!(matches!(check_private_dir(&dir, me + 1), Err(NotPrivate::Owner { .. })));
        if as_root() {
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let e = check_private_dir(&dir, me).unwrap_err();
            assert!(e.to_string().contains("belongs to uid 65534, not to you (uid 0)"), "{e}");
        }
    }

    #[test]
    fn the_host_makes_its_folder_private_and_never_takes_over_another() {
        let top = tempfile::tempdir().unwrap();
        // Missing: made, 0700, with its parents.
        let made = top.path().join("run").join("errand");
        private_dir(&made).unwrap();
        assert_eq!(mode(&made), 0o700);
        private_dir(&made).unwrap();
        // Ours but open to others: refused, and left as it is (never chmod
        // a folder Errand did not just make: it may be /tmp).
        let open = top.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = private_dir(&open).unwrap_err();
        assert!(e.to_string().contains("mode 777"), "{e}");
        assert_eq!(mode(&open), 0o777);
        // A link: refused, not followed.
        let link = top.path().join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        assert!(private_dir(&link).unwrap_err().to_string().contains("symbolic link"));
        // The socket is not bound through a link, nor in someone's folder.
        assert!(bind(&link.join("mcp.sock")).is_err());
        assert!(!made.join("mcp.sock").exists());
        if as_root() {
            let theirs = top.path().join("errand-0");
            std::fs::create_dir(&theirs).unwrap();
            chmod(&theirs, 0o700);
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = bind(&theirs.join("mcp.sock")).unwrap_err();
            assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
            assert!(!theirs.join("mcp.sock").exists());
            assert_eq!((mode(&theirs), std::fs::metadata(&theirs).unwrap().uid()), (0o700, 65534));
        }
    }

    #[tokio::test]
    async fn errand_mcp_connects_only_to_a_socket_of_ours_in_a_folder_of_ours() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("errand");
        let path = dir.join("mcp.sock");
        // Nothing there: no host running (not an error of privacy).
        assert!(matches!(connect_checked(&path).await, Ok(None)));
        let listener = bind(&path).unwrap().unwrap();
        assert_eq!(mode(&path), 0o600);
        let accepted = tokio::spawn(async move { listener.accept().await.map(|_| ()) });
        assert!(matches!(connect_checked(&path).await, Ok(Some(_))));
        accepted.await.unwrap().unwrap();
        // The folder opened to others: refused before connecting.
        chmod(&dir, 0o711);
        let e = connect_checked(&path).await.unwrap_err();
        assert!(matches!(e, NotPrivate::Mode { mode: 0o711, .. }), "{e}");
        chmod(&dir, 0o700);
        // The socket replaced by a link to another socket.
        let other = top.path().join("other");
        let _other_listener = bind(&other.join("mcp.sock")).unwrap().unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(other.join("mcp.sock"), &path).unwrap();
        let e = connect_checked(&path).await.unwrap_err();
        assert!(matches!(e, NotPrivate::Link { .. }), "{e}");
        if as_root() {
            std::fs::remove_file(&path).unwrap();
            let _listener = bind(&path).unwrap().unwrap();
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            let e = connect_checked(&path).await.unwrap_err();
            assert!(e.to_string().contains(&format!("{} belongs to uid 65534", path.display())));
        }
    }
}

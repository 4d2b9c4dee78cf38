//! A browser of the terminal's own: a temporary Chromium profile with the
//! extension loaded and the host registered, whose host process relays to a
//! Unix socket this process listens on (see `nm::relay`).

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::host::nm::CONTROL_SOCKET_ENV;
use crate::setup::browser;
use crate::setup::install;

/// How long Chromium may take to load the extension and connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the browser session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    NoChromium(std::io::Error),
    #[error("{0}")]
    NoExtension(std::io::Error),
    #[error("{0}")]
    OwnPath(#[from] install::InstallError),
    #[error("cannot prepare the browser's folder: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot start {browser}: {source}")]
    Spawn { browser: PathBuf, source: std::io::Error },
    #[error("the extension did not connect within {secs} s; the browser's log is {log}")]
    Timeout { secs: u64, log: PathBuf },
    #[error("the browser exited ({status}) before the extension connected; its log is {log}")]
    Exited { status: String, log: PathBuf },
}

/// A running Chromium; killed on [`BrowserSession::close`] or drop.
pub struct BrowserSession {
    child: Option<Child>,
    dir: Option<tempfile::TempDir>,
    log: PathBuf,
}

impl BrowserSession {
    /// Starts Chromium and waits for its host process to connect to our
    /// socket. Returns the session and the connected stream.
    #[cfg(unix)]
    pub async fn launch(
        headed: bool,
    ) -> Result<(BrowserSession, std::os::unix::net::UnixStream), SessionError> {
        let chromium = browser::find_chromium().map_err(SessionError::NoChromium)?;
        let extension = browser::extension_dir().map_err(SessionError::NoExtension)?;
        let exe = install::own_path()?;
        let dir = tempfile::Builder::new().prefix("errand-").tempdir()?;
        restrict(dir.path())?;
        let socket = dir.path().join("control.sock");
        let profile = dir.path().join("profile");
        let log = dir.path().join("chromium.log");
        browser::register_in_profile(&profile, &exe)?;
        let listener = tokio::net::UnixListener::bind(&socket)?;

        let log_file = std::fs::File::create(&log)?;
        let mut cmd = browser::chromium_command(&chromium, &profile, &extension, !headed);
        cmd.env(CONTROL_SOCKET_ENV, &socket)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        {
            // Its own process group, so that Ctrl-C reaches us only and
            // closing kills its helpers too.
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let child = cmd
            .spawn()
            .map_err(|source| SessionError::Spawn { browser: chromium.clone(), source })?;
        tracing::info!(pid = child.id(), browser = %chromium.display(), "browser started");
        let mut session = BrowserSession { child: Some(child), dir: Some(dir), log };

        let deadline = Instant::now() + CONNECT_TIMEOUT;
        loop {
            let poll = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
            match poll {
                Ok(Ok((stream, _))) => {
                    let stream = stream.into_std()?;
                    stream.set_nonblocking(false)?;
                    tracing::info!("the extension connected");
                    return Ok((session, stream));
                }
                Ok(Err(e)) => return Err(session.fail(SessionError::Io(e))),
                Err(_) => {}
            }
            if let Some(status) = session.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                let log = session.keep_log();
                return Err(SessionError::Exited { status: status.to_string(), log });
            }
            if Instant::now() >= deadline {
                let log = session.keep_log();
                session.close();
                return Err(SessionError::Timeout { secs: CONNECT_TIMEOUT.as_secs(), log });
            }
        }
    }

    fn fail(mut self, e: SessionError) -> SessionError {
        self.keep_log();
        self.close();
        e
    }

    /// Keeps the temporary folder (for its log) and returns the log's path.
    fn keep_log(&mut self) -> PathBuf {
        if let Some(dir) = self.dir.take() {
            let _ = dir.keep();
        }
        self.log.clone()
    }

    /// The browser's log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Ends the browser and its helpers, then removes the temporary folder.
    pub fn close(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(&mut child);
        }
        // Dropping the TempDir removes it.
        self.dir.take();
    }
}

impl Drop for BrowserSession {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(unix)]
fn restrict(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// SIGTERM to the browser's process group, then SIGKILL after two seconds.
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, "--", &group])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
    };
    let _ = signal("-TERM");
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            let _ = signal("-KILL"); // helpers that linger
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = signal("-KILL");
    let _ = child.kill();
    let _ = child.wait();
}

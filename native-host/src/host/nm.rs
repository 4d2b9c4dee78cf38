//! Native messaging mode: the browser started us with
//! `argv = [path, "chrome-extension://<id>/"]` and talks over stdin/stdout.
//!
//! Either we serve the connection ourselves, or — when
//! `ERRAND_CONTROL_SOCKET` is set, because `errand run` / `errand observe`
//! started this browser — we only relay bytes between the browser and that
//! command's socket, so the command's own host core does the work.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use errand_protocol::{Envelope, ErrorCode, extension_origin};

use crate::config::{self, Overrides, Settings};
use crate::host::Host;
use crate::host::transport;
use crate::memory::store::Store;
use crate::setup::logging;

/// The socket a terminal command listens on.
pub const CONTROL_SOCKET_ENV: &str = "ERRAND_CONTROL_SOCKET";

/// The caller's origin when the browser started us: the first argument,
/// when it starts with `chrome-extension://`.
pub fn origin_arg(args: &[OsString]) -> Option<String> {
    let first = args.get(1)?.to_str()?;
    first.starts_with("chrome-extension://").then(|| first.to_owned())
}

/// Runs native messaging mode to its end.
pub fn main(origin: &str) -> ExitCode {
    let env = |name: &str| std::env::var(name).ok();
    let data_dir = config::dirs(&env).ok().map(|(_, d)| d);
    logging::init(data_dir.as_deref(), "info");

    if origin != extension_origin() {
        tracing::error!(%origin, "refused a connection from another extension");
        fail(
            ErrorCode::NotAllowed,
            format!("this host serves only {}, not {origin}", extension_origin()),
        );
        return ExitCode::FAILURE;
    }
    if let Some(socket) = std::env::var_os(CONTROL_SOCKET_ENV) {
        return relay(socket.as_ref());
    }

    let settings = match Settings::load(&Overrides::default()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            fail(ErrorCode::Internal, format!("errand cannot start: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let store = match Store::open_in(&settings.data_dir) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("{e}");
            fail(ErrorCode::Internal, format!("errand cannot start: {e}"));
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(pid = std::process::id(), model = %settings.model, base_url = %settings.base_url, "native host started");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mcp_socket = crate::host::mcp::socket_path();
    let host = Host::new(settings, store);
    // `errand mcp` reaches the user's browser through this host.
    #[cfg(unix)]
    {
        let listening = host.clone();
        runtime.spawn(async move { listening.listen_mcp(mcp_socket).await });
    }
    let served = runtime.block_on(host.serve(io::stdin(), io::stdout()));
    // Blocking reads of stdin may still hold a thread; do not wait for it.
    runtime.shutdown_background();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Sends one error frame to the browser.
fn fail(code: ErrorCode, message: String) {
    let mut out = io::stdout().lock();
    if let Err(e) = transport::write_envelope(&mut out, &Envelope::error(0, None, code, message)) {
        tracing::error!("cannot write to the browser: {e}");
    }
}

/// Copies browser → socket and socket → browser until either side closes.
#[cfg(unix)]
fn relay(path: &std::path::Path) -> ExitCode {
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;

    let sock = match UnixStream::connect(path) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(socket = %path.display(), "cannot connect to the control socket: {e}");
            fail(
                ErrorCode::HostUnavailable,
                format!(
                    "the errand command that started this browser is gone ({}: {e})",
                    path.display()
                ),
            );
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(socket = %path.display(), "relaying to the terminal command");
    let (done_tx, done_rx) = mpsc::channel::<&'static str>();
    let spawn =
        |name: &'static str, mut from: Box<dyn Read + Send>, mut to: Box<dyn Write + Send>| {
            let done = done_tx.clone();
            std::thread::spawn(move || {
                if let Err(e) = pump(&mut from, &mut to) {
                    tracing::debug!("{name}: {e}");
                }
                let _ = done.send(name);
            })
        };
    let (sock_in, sock_out) = match (sock.try_clone(), sock.try_clone()) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!("cannot share the socket: {e}");
            return ExitCode::FAILURE;
        }
    };
    spawn("browser → socket", Box::new(io::stdin()), Box::new(sock_in));
    spawn("socket → browser", Box::new(sock_out), Box::new(io::stdout()));
    let first = done_rx.recv().unwrap_or("?");
    tracing::info!("relay ended: {first} closed");
    let _ = sock.shutdown(std::net::Shutdown::Both);
    let _ = io::stdout().flush();
    ExitCode::SUCCESS
}

#[cfg(not(unix))]
fn relay(_path: &std::path::Path) -> ExitCode {
    fail(ErrorCode::Internal, "ERRAND_CONTROL_SOCKET needs a Unix system".to_owned());
    ExitCode::FAILURE
}

/// Copies bytes as they come, flushing each chunk (stdout is line-buffered,
/// and frames have no newlines).
fn pump(from: &mut dyn Read, to: &mut dyn Write) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        to.flush()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_browser_start() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let origin = format!("chrome-extension://{}/", errand_protocol::EXTENSION_ID);
        assert_eq!(origin_arg(&args(&["errand", &origin])), Some(origin.clone()));
        // Windows adds --parent-window after the origin.
        assert_eq!(origin_arg(&args(&["errand", &origin, "--parent-window=0"])), Some(origin));
        assert_eq!(origin_arg(&args(&["errand", "run", "x"])), None);
        assert_eq!(origin_arg(&args(&["errand"])), None);
    }

    #[test]
    fn pumps_everything() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        pump(&mut io::Cursor::new(data.clone()), &mut out).unwrap();
        assert_eq!(out, data);
    }
}

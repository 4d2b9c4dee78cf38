//! Other local users are a boundary (issue 37): the real `errand` binary,
//! `errand mcp` and the native host, against an MCP socket folder another
//! user made first (`/tmp/errand-<uid>/` when there is no
//! `XDG_RUNTIME_DIR`), a folder others may enter, a link, a socket of
//! another user's, and a listener run by another user.
//!
//! Another user is simulated with uid 65534 (`nobody`): the tests that need
//! it `chown`, which only root may; run as another user they say so and
//! check what they can.

mod support;

use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::HostProc;

const NOBODY: u32 = 65534;

fn am_root(dir: &Path) -> bool {
    let probe = dir.join(".uid-probe");
    std::fs::write(&probe, "").unwrap();
    let root = std::fs::metadata(&probe).unwrap().uid() == 0;
    std::fs::remove_file(probe).unwrap();
    if !root {
        eprintln!("not root: the cases of another user's files are skipped");
    }
    root
}

fn private(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir.to_owned()
}

/// Runs `errand mcp` (stdio) with `env` and nothing on stdin: its exit
/// status and stderr.
fn errand_mcp(home: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_errand"));
    cmd.arg("mcp")
        .env("ERRAND_DATA_DIR", home.join("data"))
        .env("ERRAND_CONFIG_DIR", home.join("config"))
        .env_remove("ERRAND_MCP_SOCKET")
        .env_remove("XDG_RUNTIME_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.success(), err)
}

/// A listener that must never be called: whether anything connected.
fn bait(path: &Path) -> UnixListener {
    let l = UnixListener::bind(path).unwrap();
    l.set_nonblocking(true).unwrap();
    l
}

fn was_called(l: &UnixListener) -> bool {
    l.accept().is_ok()
}

#[test]
fn errand_mcp_sends_nothing_to_a_socket_folder_another_user_made_first() {
    let top = tempfile::tempdir().unwrap();
    let home = top.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // No XDG_RUNTIME_DIR: the socket is in TMPDIR/errand-<uid>/.
    let tmp = private(&top.path().join("tmp"));
    let uid = std::fs::metadata(&home).unwrap().uid();
    let dir = tmp.join(format!("errand-{uid}"));
    std::fs::create_dir(&dir).unwrap();
    let tmpdir = tmp.to_string_lossy().to_string();
    let env = [("TMPDIR", tmpdir.as_str())];

    // Open to others (0755): refused, saying which folder, its mode, what to do.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let listener = bait(&dir.join("mcp.sock"));
    let (ok, err) = errand_mcp(&home, &env);
    assert!(!ok, "{err}");
    assert!(err.contains(&dir.display().to_string()) && err.contains("mode 755"), "{err}");
    assert!(err.contains("chmod 700"), "{err}");
    assert!(!was_called(&listener), "errand mcp connected to the socket: {err}");

    if am_root(top.path()) {
        // Another user's folder (0700, theirs): refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
        let (ok, err) = errand_mcp(&home, &env);
        assert!(!ok, "{err}");
        assert!(err.contains(&format!("belongs to uid {NOBODY}, not to you (uid 0)")), "{err}");
        assert!(!was_called(&listener), "errand mcp connected to the socket: {err}");

        // Our folder, their socket: refused.
        std::os::unix::fs::chown(&dir, Some(0), Some(0)).unwrap();
        std::os::unix::fs::chown(dir.join("mcp.sock"), Some(NOBODY), Some(NOBODY)).unwrap();
        let (ok, err) = errand_mcp(&home, &env);
        assert!(!ok, "{err}");
        let sock = dir.join("mcp.sock");
        assert!(err.contains(&format!("{} belongs to uid {NOBODY}", sock.display())), "{err}");
        assert!(!was_called(&listener), "errand mcp connected to the socket: {err}");
    }
    drop(listener);

    // A link in place of the folder, to a folder of ours that looks right.
    std::fs::remove_dir_all(&dir).unwrap();
    let real = private(&top.path().join("real"));
    let listener = bait(&real.join("mcp.sock"));
    std::os::unix::fs::symlink(&real, &dir).unwrap();
    let (ok, err) = errand_mcp(&home, &env);
    assert!(!ok && err.contains("symbolic link"), "{err}");
    assert!(!was_called(&listener), "errand mcp connected through the link: {err}");

    // Nothing there at all: the usual "not running".
    std::fs::remove_file(&dir).unwrap();
    let (ok, err) = errand_mcp(&home, &env);
    assert!(!ok && err.contains("not running in your browser"), "{err}");
}

/// Not a test of its own: with `ERRAND_TEST_LISTEN` set (the test below
/// runs this binary so, as another user), listens there and reports on
/// stderr how many bytes its one caller sent.
#[test]
fn helper_listener_of_another_user() {
    let Some(path) = std::env::var_os("ERRAND_TEST_LISTEN") else { return };
    let l = UnixListener::bind(&path).unwrap();
    let (mut s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    eprintln!("RECEIVED={}", got.len());
}

#[test]
fn errand_mcp_refuses_a_listener_run_by_another_user() {
    let top = tempfile::tempdir().unwrap();
    if !am_root(top.path()) {
        return;
    }
    // The other user may reach its folder (and this test binary).
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = private(&top.path().join("home"));
    let dir = private(&top.path().join("sock"));
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let sock = dir.join("mcp.sock");
    let mut listener = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_listener_of_another_user", "--nocapture", "--test-threads=1"])
        .env("ERRAND_TEST_LISTEN", &sock)
        .uid(NOBODY)
        .gid(NOBODY)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::symlink_metadata(&sock).is_err() {
        assert!(Instant::now() < deadline, "the other user's listener never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Folder and socket handed to us: only the peer's credentials tell.
    std::os::unix::fs::chown(&dir, Some(0), Some(0)).unwrap();
    std::os::unix::fs::chown(&sock, Some(0), Some(0)).unwrap();
    let socket = sock.to_string_lossy().to_string();
    let (ok, err) = errand_mcp(&home, &[("ERRAND_MCP_SOCKET", socket.as_str())]);
    assert!(!ok, "{err}");
    assert!(
        err.contains(&format!("listening on {} runs as uid {NOBODY}", sock.display())),
        "{err}"
    );
    let mut out = String::new();
    listener.stderr.take().unwrap().read_to_string(&mut out).unwrap();
    let _ = listener.wait();
    assert!(out.contains("RECEIVED=0"), "the other user's listener got our bytes: {out}");
}

#[test]
fn the_host_does_not_listen_in_a_folder_another_user_made_first() {
    let top = tempfile::tempdir().unwrap();
    let tmp = private(&top.path().join("tmp"));
    let tmpdir = tmp.to_string_lossy().to_string();
    let uid = std::fs::metadata(&tmp).unwrap().uid();
    let dir = tmp.join(format!("errand-{uid}"));
    let wait_for_log = |host: &HostProc, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !host.log().contains(what) {
            assert!(Instant::now() < deadline, "no `{what}` in the log: {}", host.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let spawn = |home: &str, env: &[(&str, &str)]| {
        let mut all =
            vec![("TMPDIR", tmpdir.as_str()), ("XDG_RUNTIME_DIR", ""), ("ERRAND_MCP_SOCKET", "")];
        all.extend_from_slice(env);
        HostProc::spawn(&top.path().join(home), &all)
    };

    // Missing: made 0700, and listened in.
    let host = spawn("a", &[]);
    wait_for_log(&host, "listening for errand mcp");
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    drop(host);

    // Ours but open to others: refused and left as it is.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let host = spawn("b", &[]);
    wait_for_log(&host, "cannot listen for errand mcp");
    assert!(host.log().contains("mode 755"), "{}", host.log());
    assert!(std::fs::symlink_metadata(dir.join("mcp.sock")).is_err());
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o755);
    drop(host);

    // A link: refused, nothing made where it points.
    std::fs::remove_dir_all(&dir).unwrap();
    let real = private(&top.path().join("real"));
    std::os::unix::fs::symlink(&real, &dir).unwrap();
    let host = spawn("c", &[]);
    wait_for_log(&host, "cannot listen for errand mcp");
    assert!(host.log().contains("symbolic link"), "{}", host.log());
    assert!(std::fs::read_dir(&real).unwrap().next().is_none());
    drop(host);
    std::fs::remove_file(&dir).unwrap();

    if am_root(top.path()) {
        // Another user's: refused, never changed.
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
        let host = spawn("d", &[]);
        wait_for_log(&host, "cannot listen for errand mcp");
        assert!(host.log().contains(&format!("belongs to uid {NOBODY}")), "{}", host.log());
        let m = std::fs::metadata(&dir).unwrap();
        assert_eq!((m.uid(), m.permissions().mode() & 0o777), (NOBODY, 0o777));
        assert!(std::fs::symlink_metadata(dir.join("mcp.sock")).is_err());
    }
}

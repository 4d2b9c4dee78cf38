//! [`TestBrowser`]: headless Chromium with the real extension loaded and the
//! real `errand` host registered in a fresh profile.
//!
//! Everything lives in one temporary folder:
//!
//! ```text
//! <temp>/profile/                 --user-data-dir, with NativeMessagingHosts/errand.host.json
//! <temp>/data/errand.db           ERRAND_DATA_DIR: the host's SQLite file
//! <temp>/data/errand.log          the host's log
//! <temp>/config/                  ERRAND_CONFIG_DIR
//! <temp>/chromium.log             Chromium's stdout and stderr
//! ```
//!
//! The host is started by Chromium (native messaging) and inherits
//! Chromium's environment, so the `ERRAND_*` variables set on the Chromium
//! command reach it. When a test panics while the browser is alive, the
//! drop prints both logs and keeps the folder.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use errand_protocol::EXTENSION_ID;
use serde_json::json;

use crate::cdp::{Cdp, Page, TargetInfo};

/// Only one browser at a time: the machines this runs on have two cores,
/// and the timing test must not share them with two other Chromiums.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How [`TestBrowser::launch`] sets things up.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The model's OpenAI-compatible base URL, ending in `/v1`
    /// (`ERRAND_BASE_URL`); normally [`crate::model::ScriptedModel::base_url`].
    pub model_base_url: String,
    /// `ERRAND_MODEL`.
    pub model: String,
    /// Run without a window (the default).
    pub headless: bool,
    /// More environment for Chromium and the host it starts.
    pub env: Vec<(String, String)>,
    /// More Chromium flags.
    pub args: Vec<String>,
    /// How long to wait for the extension's service worker.
    pub startup_timeout: Duration,
    /// The unpacked extension to load; `dist/extension/` when `None`.
    pub extension_dir: Option<PathBuf>,
    /// How the host learns about the model (the environment by default).
    pub model_setup: ModelSetup,
    /// More TOML appended to `<config>/config.toml` (e.g. a `[sites]` table).
    pub config_extra: String,
    /// Register the host in the profile (the default). `false`: the
    /// browser starts as for a user who has not installed the host.
    pub register_host: bool,
    /// Let the host's planner run (off by default here: most tests script
    /// every model call, and the planner adds its own).
    pub planner: bool,
}

impl LaunchOptions {
    /// Defaults, talking to the model at `model_base_url`.
    pub fn new(model_base_url: impl Into<String>) -> Self {
        LaunchOptions {
            model_base_url: model_base_url.into(),
            model: "scripted".into(),
            headless: true,
            env: Vec::new(),
            args: Vec::new(),
            startup_timeout: Duration::from_secs(20),
            extension_dir: None,
            model_setup: ModelSetup::Env,
            config_extra: String::new(),
            register_host: true,
            planner: false,
        }
    }

    /// With what a benchmark's environment asks for: `BENCH_CHROMIUM_ARGS`
    /// adds Chromium flags (split at whitespace; `--js-flags=…` for V8's
    /// tiers), `BENCH_EXTENSION_DIR` loads another unpacked build (a copy
    /// of main's, for a before/after).
    pub fn with_bench_env(mut self) -> Self {
        if let Ok(extra) = std::env::var("BENCH_CHROMIUM_ARGS") {
            self.args.extend(extra.split_whitespace().map(str::to_owned));
        }
        if let Ok(dir) = std::env::var("BENCH_EXTENSION_DIR") {
            self.extension_dir = Some(dir.into());
        }
        self
    }
}

/// Where the host finds the model's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelSetup {
    /// `ERRAND_BASE_URL`, `ERRAND_MODEL`, `ERRAND_API_KEY` on Chromium's
    /// command (the host inherits them). They win over the config file and
    /// lock those settings.
    #[default]
    Env,
    /// `[model]` `base_url`, `model`, `api_key` in `<config>/config.toml`,
    /// none of those variables set: settings saved from the side panel
    /// take effect.
    ConfigFile,
    /// No model configured at all, as on a first run (the host falls back
    /// to a local Ollama).
    Unconfigured,
}

/// `toml` with `line` under its `[agent]` table (added when missing).
fn with_agent_key(toml: &str, line: &str) -> String {
    let mut out = String::new();
    let mut done = false;
    for l in toml.lines() {
        out.push_str(l);
        out.push('\n');
        if !done && l.trim() == "[agent]" {
            out.push_str(line);
            out.push('\n');
            done = true;
        }
    }
    if !done {
        out.push_str(&format!("\n[agent]\n{line}\n"));
    }
    out
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A running Chromium with Errand loaded. Killed on drop.
pub struct TestBrowser {
    cdp: Cdp,
    child: Child,
    temp: Option<tempfile::TempDir>,
    root: PathBuf,
    service_worker: TargetInfo,
    started: Instant,
    _turn: MutexGuard<'static, ()>,
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.canonicalize().unwrap_or(root)
}

/// The unpacked extension the tests load, as a user does: `dist/extension/`,
/// assembled by `scripts/build-extension.sh`.
pub fn dist_dir() -> PathBuf {
    repo_root().join("dist/extension")
}

/// The files of the extension as the source tree has them, each with its
/// path relative to the extension folder: what `dist/extension/` must hold.
fn extension_sources(repo: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, repo: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, repo, out);
            } else if let Ok(rel) = path.strip_prefix(repo) {
                out.push(rel.to_owned());
            }
        }
    }
    let mut out = vec![PathBuf::from("manifest.json")];
    if let Ok(entries) = std::fs::read_dir(repo.join("extension")) {
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == "js") && path.is_file() {
                out.push(Path::new("extension").join(e.file_name()));
            }
        }
    }
    for dir in [
        "extension/panel",
        "extension/generated",
        "extension/pkg/wasm",
        "extension/pkg/js",
        "extension/pkg/worker",
    ] {
        walk(&repo.join(dir), repo, &mut out);
    }
    out
}

/// Fails unless `dist` holds the same files as the source tree (a JS or
/// manifest edit not yet copied there would go untested).
fn check_dist_current(repo: &Path, dist: &Path) -> Result<()> {
    for rel in extension_sources(repo) {
        let same = match (std::fs::read(repo.join(&rel)), std::fs::read(dist.join(&rel))) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            bail!(
                "{} differs from {}: run scripts/build-extension.sh (or, after editing only \
                 the JS or the manifest, scripts/build-extension.sh --dist)",
                dist.join(&rel).display(),
                rel.display()
            );
        }
    }
    Ok(())
}

/// The `errand` binary of this workspace: tests run from
/// `target/<profile>/deps/<name>`, the binary is `target/<profile>/errand`.
pub fn host_exe() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the test executable")?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .context("the test executable is not in target/<profile>/deps")?;
    let host = profile_dir.join(format!("errand{}", std::env::consts::EXE_SUFFIX));
    if !host.is_file() {
        bail!(
            "the host binary {} is missing: build the host first: cargo build -p errand-host",
            host.display()
        );
    }
    Ok(host)
}

/// Chromium, or a clear failure.
pub fn chromium() -> Result<PathBuf> {
    errand_host::browser::find_chromium()
        .map_err(|e| anyhow::anyhow!("install chromium (Debian: apt-get install -y chromium): {e}"))
}

/// The URL of the extension's service worker.
pub fn service_worker_url() -> String {
    format!("chrome-extension://{EXTENSION_ID}/extension/sw.js")
}

impl TestBrowser {
    /// Starts Chromium with the extension and the host, and waits until the
    /// extension's service worker is running.
    pub fn launch(opts: LaunchOptions) -> Result<TestBrowser> {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let started = Instant::now();
        let chromium = chromium()?;
        let host = host_exe()?;
        let repo = repo_root();
        let root = match &opts.extension_dir {
            Some(dir) => dir.clone(),
            None => {
                let dist = dist_dir();
                if !dist.join("manifest.json").is_file() {
                    bail!(
                        "the extension is not assembled ({} is missing): run \
                         scripts/build-extension.sh",
                        dist.join("manifest.json").display()
                    );
                }
                check_dist_current(&repo, &dist)?;
                dist
            }
        };
        for build in ["wasm", "js"] {
            let dir = root.join("extension/pkg").join(build);
            if !dir.is_dir() {
                bail!(
                    "the extension is not built ({} is missing): run scripts/build-extension.sh",
                    dir.display()
                );
            }
        }
        if !root.join("extension/sw.js").is_file() {
            bail!(
                "{} is missing: the extension has no service worker",
                root.join("extension/sw.js").display()
            );
        }

        warn_if_stale(
            &host,
            &[
                &repo.join("native-host/src"),
                &repo.join("native-host/prompts"),
                &repo.join("shared/src"),
            ],
            "cargo build -p errand-host",
        );
        warn_if_stale(
            &repo.join("extension/pkg/worker"),
            &[&repo.join("extension/src"), &repo.join("shared/src")],
            "bash scripts/build-extension.sh",
        );
        warn_if_stale(
            &repo.join("extension/pkg/wasm"),
            &[&repo.join("extension/src"), &repo.join("shared/src")],
            "bash scripts/build-extension.sh",
        );

        let temp = tempfile::Builder::new().prefix("errand-e2e-").tempdir()?;
        let dir = temp.path().to_owned();
        let profile = dir.join("profile");
        let data = dir.join("data");
        let config = dir.join("config");
        for d in [&profile, &data, &config] {
            std::fs::create_dir_all(d)?;
        }
        if opts.register_host {
            errand_host::browser::register_in_profile(&profile, &host)
                .context("registering the host in the profile")?;
        }
        let mut config_toml = String::new();
        if opts.model_setup == ModelSetup::ConfigFile {
            config_toml.push_str(&format!(
                "[model]\nbase_url = {}\nmodel = {}\napi_key = \"test-key\"\n",
                toml_string(&opts.model_base_url),
                toml_string(&opts.model)
            ));
        }
        config_toml.push_str(&opts.config_extra);
        // The planner off: in the file when the test edits settings there
        // (a variable would lock it), else by the environment (a file would
        // make an unconfigured host look configured).
        let planner_in_file = opts.model_setup == ModelSetup::ConfigFile;
        if !opts.planner && planner_in_file {
            config_toml = with_agent_key(&config_toml, "planner = false");
        }
        if !config_toml.is_empty() {
            std::fs::write(config.join("config.toml"), config_toml)
                .context("writing config.toml")?;
        }

        let log = File::create(dir.join("chromium.log"))?;
        let mut cmd =
            errand_host::browser::chromium_command(&chromium, &profile, &root, opts.headless);
        cmd.arg("--enable-unsafe-extension-debugging")
            .args(&opts.args)
            .arg("about:blank")
            .env("ERRAND_DATA_DIR", &data)
            .env("ERRAND_CONFIG_DIR", &config);
        if !opts.planner && !planner_in_file {
            cmd.env("ERRAND_PLANNER", "0");
        } else {
            cmd.env_remove("ERRAND_PLANNER");
        }
        if opts.model_setup == ModelSetup::Env {
            cmd.env("ERRAND_BASE_URL", &opts.model_base_url)
                .env("ERRAND_MODEL", &opts.model)
                .env("ERRAND_API_KEY", "test-key");
        } else {
            cmd.env_remove("ERRAND_BASE_URL")
                .env_remove("ERRAND_MODEL")
                .env_remove("ERRAND_API_KEY")
                .env_remove("ERRAND_PROVIDER");
        }
        cmd
            // The host logs to <data>/errand.log and to stderr (Chromium's log),
            // there without colours.
            .env("NO_COLOR", "1")
            .env(
                "ERRAND_LOG",
                std::env::var("ERRAND_LOG").unwrap_or_else(|_| "errand_host=debug,info".into()),
            )
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let (cdp, child) = Cdp::spawn(cmd)?;
        let mut browser = TestBrowser {
            cdp,
            child,
            temp: Some(temp),
            root,
            service_worker: TargetInfo::default(),
            started,
            _turn: turn,
        };
        browser.cdp.call("Browser.getVersion", json!({}), None).map_err(|e| {
            anyhow::anyhow!(
                "Chromium did not answer over the DevTools pipe: {e:#}\n{}",
                browser.logs()
            )
        })?;
        let sw_url = service_worker_url();
        browser.service_worker = browser
            .cdp
            .wait_for_target(
                |t| t.kind == "service_worker" && t.url == sw_url,
                opts.startup_timeout,
            )
            .map_err(|e| {
                anyhow::anyhow!(
                    "the extension's service worker {sw_url} did not start: {e:#}\n{}",
                    browser.logs()
                )
            })?;
        Ok(browser)
    }

    /// How long since this browser's turn began (launch included, the wait
    /// for another test's browser not).
    pub fn running_for(&self) -> Duration {
        self.started.elapsed()
    }

    /// The DevTools connection.
    pub fn cdp(&self) -> &Cdp {
        &self.cdp
    }

    /// Opens a tab at `url`, attaches, and waits for it to load.
    pub fn new_page(&self, url: &str) -> Result<Page> {
        let page = self.cdp.new_page(url)?;
        page.wait_for_load(Duration::from_secs(15))?;
        Ok(page)
    }

    /// Attaches to the extension's service worker (to evaluate in it).
    pub fn service_worker(&self) -> Result<Page> {
        let sw_url = service_worker_url();
        let t = self.cdp.wait_for_target(
            |t| t.kind == "service_worker" && t.url == sw_url,
            Duration::from_secs(10),
        )?;
        self.cdp.attach(&t.target_id)
    }

    /// The service worker target found at launch.
    pub fn service_worker_target(&self) -> &TargetInfo {
        &self.service_worker
    }

    /// The extension's id.
    pub fn extension_id(&self) -> &'static str {
        EXTENSION_ID
    }

    /// The temporary folder holding the profile, the data and the logs.
    pub fn dir(&self) -> &Path {
        match &self.temp {
            Some(t) => t.path(),
            None => Path::new(""),
        }
    }

    /// The folder the extension was loaded from (`dist/extension/` unless
    /// the options named another).
    pub fn extension_dir(&self) -> &Path {
        &self.root
    }

    /// `ERRAND_DATA_DIR`.
    pub fn data_dir(&self) -> PathBuf {
        self.dir().join("data")
    }

    /// The host's SQLite file.
    pub fn db_path(&self) -> PathBuf {
        self.data_dir().join("errand.db")
    }

    /// The host's log file.
    pub fn host_log_path(&self) -> PathBuf {
        self.data_dir().join("errand.log")
    }

    /// Chromium's log file.
    pub fn chromium_log_path(&self) -> PathBuf {
        self.dir().join("chromium.log")
    }

    /// Both logs (the last 200 lines of each), for failure messages.
    pub fn logs(&self) -> String {
        format!(
            "---- Chromium log ({}) ----\n{}\n---- host log ({}) ----\n{}",
            self.chromium_log_path().display(),
            tail_filtered(&self.chromium_log_path(), 200, &["dbus/", "unexpected operator"]),
            self.host_log_path().display(),
            tail(&self.host_log_path(), 200),
        )
    }

    /// Waits until `pred` holds, checking every 50 ms; on timeout the error
    /// carries both logs.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut pred: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last_err = None;
        loop {
            match pred() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => last_err = Some(e),
            }
            if Instant::now() >= deadline {
                let why = last_err.map(|e| format!(" (last error: {e:#})")).unwrap_or_default();
                bail!("waited {timeout:?} for {what}{why}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestBrowser {
    fn drop(&mut self) {
        // Ask politely, then insist.
        let _ = self.cdp.call_timeout("Browser.close", json!({}), None, Duration::from_secs(2));
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
            if let Some(t) = self.temp.take() {
                let kept = t.keep();
                eprintln!("kept the test folder for inspection: {}", kept.display());
            }
        }
    }
}

/// Prints a warning when a source file under `sources` is newer than
/// `built`: the test would run yesterday's code.
fn warn_if_stale(built: &Path, sources: &[&Path], fix: &str) {
    let Ok(built_at) = std::fs::metadata(built).and_then(|m| m.modified()) else { return };
    let newest = sources.iter().filter_map(|d| newest_in(d)).max();
    if let Some((at, file)) = newest {
        if at > built_at {
            eprintln!(
                "warning: {} is older than {}: run `{fix}` to test the current code",
                built.display(),
                file.display()
            );
        }
    }
}

fn newest_in(dir: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let candidate = if path.is_dir() {
            newest_in(&path)
        } else {
            entry.metadata().and_then(|m| m.modified()).ok().map(|t| (t, path))
        };
        if let Some(c) = candidate {
            if newest.as_ref().is_none_or(|n| c.0 > n.0) {
                newest = Some(c);
            }
        }
    }
    newest
}

/// The last `n` lines of a file, or a note that it is missing.
pub fn tail(path: &Path, n: usize) -> String {
    tail_filtered(path, n, &[])
}

/// [`tail`] without the lines containing any of `noise` (Chromium's
/// complaints about D-Bus, which a container does not have).
pub fn tail_filtered(path: &Path, n: usize, noise: &[&str]) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> =
                text.lines().filter(|l| !noise.iter().any(|x| l.contains(x))).collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("(cannot read: {e})"),
    }
}

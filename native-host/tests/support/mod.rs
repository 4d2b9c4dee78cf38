//! Test support: the real `errand` binary over native-messaging pipes, the
//! test playing the service worker and the content script, and the scripted
//! model server both suites use (`errand-scripted-model`: OpenAI-compatible
//! chat completions, Anthropic Messages, Gemini generateContent).

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use errand_host::transport::{MAX_INBOUND, frame, read_frame};
use errand_protocol::{
    Body, Build, Effect, ElementInfo, Envelope, Observation, Outcome, PageCommand, TaskEvent,
};

pub const ORIGIN: &str = "chrome-extension://ipdllapojbkjjhcikcodfhbklgfddfol/";
pub const WAIT: Duration = Duration::from_secs(30);
pub const API_KEY: &str = "test-key-0123456789";

// ---- The host process ----

pub struct HostProc {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Envelope>,
    pub data_dir: PathBuf,
    pub config_dir: PathBuf,
    next_id: u64,
    /// The task's answer to every `observe` (tests change it).
    pub page: Arc<Mutex<Observation>>,
    /// Values the page's fields were filled with.
    pub filled: Arc<Mutex<Vec<String>>>,
    /// The `marks` flag of each `observe` the host asked for.
    pub observed_marks: Arc<Mutex<Vec<bool>>>,
    /// The screenshots handed out for `capture`, in order
    /// ([`screenshot`] of 1, 2, …).
    pub captured: Arc<Mutex<Vec<String>>>,
    log: PathBuf,
}

impl HostProc {
    /// Starts `errand` with `dir` as its config and data home and `env` on top.
    pub fn spawn(dir: &Path, env: &[(&str, &str)]) -> HostProc {
        let data_dir = dir.join("data");
        let config_dir = dir.join("config");
        std::fs::create_dir_all(&config_dir).unwrap();
        let log = dir.join(format!("stderr-{}.log", std::process::id()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_errand"));
        cmd.arg(ORIGIN)
            .env("ERRAND_DATA_DIR", &data_dir)
            .env("ERRAND_CONFIG_DIR", &config_dir)
            .env("ERRAND_MODEL", "scripted")
            .env("ERRAND_API_KEY", API_KEY)
            .env("ERRAND_RETRY_BASE_MS", "50")
            .env("ERRAND_LOG", "debug")
            // Tests script each model call: the planner's extra call at the
            // start only where a test turns it on (ERRAND_PLANNER=1).
            .env("ERRAND_PLANNER", "0")
            // Secrets stay in the test's own folder, never in the OS keychain.
            .env("ERRAND_SECRETS_STORE", "file")
            .env_remove("ERRAND_CONTROL_SOCKET")
            .env_remove("ERRAND_MAX_STEPS")
            .env_remove("ERRAND_PROVIDER")
            .env_remove("ERRAND_DIALECT")
            .env_remove("ERRAND_BASE_URL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            while let Ok(Some(item)) = read_frame(&mut stdout, MAX_INBOUND) {
                let env = item.expect("the host writes only valid envelopes");
                if tx.send(env).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        HostProc {
            child,
            stdin,
            frames,
            data_dir,
            config_dir,
            next_id: 1,
            page: Arc::new(Mutex::new(observation())),
            filled: Arc::new(Mutex::new(Vec::new())),
            observed_marks: Arc::new(Mutex::new(Vec::new())),
            captured: Arc::new(Mutex::new(Vec::new())),
            log,
        }
    }

    pub fn send(&mut self, body: Body) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&frame(&Envelope::new(id, body))).unwrap();
        stdin.flush().unwrap();
        id
    }

    pub fn reply(&mut self, re: u64, body: Body) {
        self.next_id += 1;
        let env = Envelope::reply(self.next_id, re, body);
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&frame(&env)).unwrap();
        stdin.flush().unwrap();
    }

    pub fn recv(&self) -> Envelope {
        self.frames.recv_timeout(WAIT).expect("a message from the host")
    }

    /// Starts a task on `http://form.test/`; returns its id.
    pub fn start(&mut self, task: &str) -> String {
        let id = self.send(Body::StartTask {
            task: task.into(),
            tab_id: None,
            url: Some("http://form.test/".into()),
            allow_sites: vec![],
        });
        let accepted = self.recv();
        assert_eq!(accepted.re, Some(id));
        let Body::TaskAccepted { task_id } = accepted.body else { panic!("{accepted:?}") };
        task_id
    }

    /// Answers the extension's requests until `stop_when` says so.
    pub fn serve_until(&mut self, mut stop_when: impl FnMut(&Body) -> bool) -> Vec<Body> {
        let mut seen = Vec::new();
        loop {
            let env = self.recv();
            let stop = stop_when(&env.body);
            match &env.body {
                Body::TaskEvent { .. } => {}
                body => {
                    if let Some(reply) = self.extension_reply(body) {
                        self.reply(env.id, reply);
                    }
                }
            }
            seen.push(env.body);
            if stop {
                return seen;
            }
        }
    }

    /// Plays the extension until the task ends; returns the task's events.
    pub fn serve_until_finished(&mut self) -> Vec<TaskEvent> {
        self.serve_until(|b| matches!(b, Body::TaskEvent { event: TaskEvent::Finished { .. }, .. }))
            .into_iter()
            .filter_map(|b| match b {
                Body::TaskEvent { event, .. } => Some(event),
                _ => None,
            })
            .collect()
    }

    fn extension_reply(&self, body: &Body) -> Option<Body> {
        match body {
            Body::OpenTab { url } => {
                Some(Body::TabReady { tab_id: 42, url: url.clone(), title: "A form".into() })
            }
            Body::Navigate { tab_id, url } => {
                Some(Body::TabReady { tab_id: *tab_id, url: url.clone(), title: "A form".into() })
            }
            Body::Page { tab_id: 42, command: PageCommand::Observe { marks, .. } } => {
                self.observed_marks.lock().unwrap().push(*marks);
                Some(Body::Observation(self.page.lock().unwrap().clone()))
            }
            Body::Capture { tab_id: 42 } => {
                let mut captured = self.captured.lock().unwrap();
                let shot = screenshot(u8::try_from(captured.len() + 1).unwrap_or(u8::MAX));
                captured.push(shot.clone());
                Some(Body::Captured { data_url: shot })
            }
            Body::Page { tab_id: 42, command: PageCommand::Act { action, .. } } => {
                // Like the content script, the summary says what was typed.
                let mut summary = format!("did {}", action.name());
                if let errand_protocol::Action::Fill { text, .. } = action {
                    self.filled.lock().unwrap().push(text.clone());
                    summary = format!("filled <input> with \"{text}\"");
                }
                // Like the content script, an extract says what the page shows.
                if let errand_protocol::Action::Extract { .. } = action {
                    summary = format!("the page says: {}", self.page.lock().unwrap().text);
                }
                Some(Body::ActionDone {
                    effect: Effect {
                        summary,
                        url: "http://form.test/".into(),
                        url_changed: false,
                        value: None,
                        ..Default::default()
                    },
                })
            }
            // Like the content script, what an action would set off: the
            // element's name as the page shows it.
            Body::Page { tab_id: 42, command: PageCommand::Stakes { action } } => {
                let page = self.page.lock().unwrap();
                let el = action.element().and_then(|i| page.elements.iter().find(|e| e.index == i));
                Some(Body::Stakes {
                    stakes: errand_protocol::Stakes {
                        activates: true,
                        words: el.map(|e| vec![e.name.clone()]).unwrap_or_default(),
                        ..Default::default()
                    },
                })
            }
            Body::ListTabs {} => Some(Body::Tabs { tabs: Vec::new() }),
            Body::Page { tab_id: 42, command: PageCommand::Cleanup {} } => Some(Body::Ack {}),
            Body::Ack {} | Body::TaskAccepted { .. } => None,
            other => panic!("unexpected request from the host: {other:?}"),
        }
    }

    pub fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.data_dir.join("errand.db")).unwrap()
    }

    /// What the host wrote to stderr (its log).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Runs `errand ARGS` with this host's folders, `stdin` as input;
    /// returns stdout.
    pub fn cli(dir: &Path, args: &[&str], stdin: &str) -> String {
        Self::cli_env(dir, args, stdin, &[("ERRAND_SECRETS_STORE", "file")])
    }

    /// Like [`HostProc::cli`] with `env` set.
    pub fn cli_env(dir: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> String {
        let mut child = Command::new(env!("CARGO_BIN_EXE_errand"))
            .args(args)
            .env("ERRAND_DATA_DIR", dir.join("data"))
            .env("ERRAND_CONFIG_DIR", dir.join("config"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "errand {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for HostProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Writes `<dir>/config/config.toml` (before [`HostProc::spawn`]: the host
/// reads it when it starts).
/// One task run by [`run_task`].
pub struct Run {
    pub host: HostProc,
    pub task_id: String,
    pub events: Vec<TaskEvent>,
    /// The requests the model server saw.
    pub seen: Vec<Seen>,
    pub dir: tempfile::TempDir,
}

/// Runs "Send the form" against `server` (its `base` path) with `env`, and
/// `config` as `config.toml` when not empty, until the task finishes.
pub fn run_task(server: &ModelServer, base: &str, env: &[(&str, &str)], config: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    if !config.is_empty() {
        write_config(dir.path(), config);
    }
    let base_url = format!("{}{base}", server.addr);
    let mut all = vec![("ERRAND_BASE_URL", base_url.as_str())];
    all.extend_from_slice(env);
    let mut host = HostProc::spawn(dir.path(), &all);
    let task_id = host.start("Send the form");
    let events = host.serve_until_finished();
    let seen = server.seen();
    Run { host, task_id, events, seen, dir }
}

pub fn write_config(dir: &Path, toml: &str) {
    std::fs::create_dir_all(dir.join("config")).unwrap();
    std::fs::write(dir.join("config/config.toml"), toml).unwrap();
}

/// A JPEG data URL, different for each `n` (the bytes start like a JPEG;
/// the host checks no more).
pub fn screenshot(n: u8) -> String {
    use base64::Engine;
    let bytes = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, n, 0xFF, 0xD9];
    format!("data:image/jpeg;base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

pub fn observation() -> Observation {
    Observation {
        url: "http://form.test/".into(),
        title: "A form".into(),
        build: Some(Build::Wasm),
        elements: vec![
            ElementInfo {
                index: 1,
                tag: "button".into(),
                name: "Submit".into(),
                in_viewport: true,
                ..Default::default()
            },
            ElementInfo {
                index: 2,
                tag: "input".into(),
                input_type: Some("email".into()),
                name: "Email".into(),
                in_viewport: true,
                ..Default::default()
            },
        ],
        text: "[1]<button>Submit</button>\n[2]<input type=email placeholder=\"Email\"></input>"
            .into(),
        elapsed_ms: 1.5,
        ..Default::default()
    }
}

/// The outcome in a list of events.
pub fn outcome(events: &[TaskEvent]) -> Outcome {
    match events.last() {
        Some(TaskEvent::Finished { outcome }) => outcome.clone(),
        other => panic!("no finished event: {other:?}"),
    }
}

// ---- The scripted model server (the one both suites use) ----

pub use errand_scripted_model::{Reply, Seen};

/// The scripted model (`errand-scripted-model`) saying a queue of replies,
/// with fixed token counts ([`errand_scripted_model::Usage::Fixed`]).
pub struct ModelServer {
    /// `http://127.0.0.1:PORT` (tests add the provider's path).
    pub addr: String,
    model: errand_scripted_model::ScriptedModel,
}

impl ModelServer {
    pub fn start(replies: Vec<Reply>) -> ModelServer {
        Self::start_with_fallback(
            replies,
            r#"{"actions": [{"done": {"text": "script ran out", "success": false}}]}"#,
        )
    }

    pub fn start_with_fallback(replies: Vec<Reply>, fallback: &str) -> ModelServer {
        let model = errand_scripted_model::ScriptedModel::queue(replies, fallback).unwrap();
        ModelServer { addr: model.url(), model }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.model.seen()
    }
}

// ---- Side-panel requests (native-host/tests/panel_api.rs) ----

impl HostProc {
    /// Sends a frame holding `json` as it is (to send what `Body` cannot
    /// express: wrong field types, missing fields); returns nothing, the
    /// caller knows the id it wrote.
    pub fn send_raw(&mut self, json: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&errand_host::transport::raw_frame(json.as_bytes())).unwrap();
        stdin.flush().unwrap();
    }

    /// The next message that answers request `id` (task events before it
    /// are skipped; any other message is a test failure).
    pub fn reply_to(&self, id: u64) -> Envelope {
        loop {
            let env = self.recv();
            match &env.body {
                _ if env.re == Some(id) => return env,
                Body::TaskEvent { .. } => {}
                other => panic!("expected the reply to {id}, got {other:?}"),
            }
        }
    }

    /// Sends a side-panel request and waits for its reply.
    pub fn request(&mut self, body: Body) -> Envelope {
        let id = self.send(body);
        self.reply_to(id)
    }
}

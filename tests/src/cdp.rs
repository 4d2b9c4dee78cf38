//! A small Chrome DevTools Protocol client over `--remote-debugging-pipe`.
//!
//! Chromium started with `--remote-debugging-pipe` reads commands from its
//! fd 3 and writes replies and events to its fd 4; every message is one JSON
//! object followed by a NUL byte. [`Cdp::spawn`] starts a command with two
//! pipes mapped there (via `command-fds`), and a reader thread hands each
//! reply to the caller waiting for its `id` and each event to every
//! subscriber.
//!
//! Sessions are flattened (`Target.attachToTarget {flatten: true}`): a
//! command for a page carries the page's `sessionId` beside its `id`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, PipeReader, PipeWriter, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use command_fds::{CommandFdExt, FdMapping};
use serde_json::{Value, json};

/// How long [`Cdp::call`] waits for a reply.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// An event Chromium sent: `method`, `params`, and the session it came
/// from (`None` for the browser itself).
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
    pub session_id: Option<String>,
}

/// A target as `Target.getTargets` lists it.
#[derive(Debug, Clone, Default)]
pub struct TargetInfo {
    pub target_id: String,
    /// `page`, `service_worker`, `background_page`, `iframe`, `other`, …
    pub kind: String,
    pub url: String,
    pub title: String,
    /// Whether some client is attached to it already.
    pub attached: bool,
}

impl TargetInfo {
    fn from_value(v: &Value) -> TargetInfo {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        TargetInfo {
            target_id: s("targetId"),
            kind: s("type"),
            url: s("url"),
            title: s("title"),
            attached: v.get("attached").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

type Reply = std::result::Result<Value, String>;

struct Inner {
    writer: Mutex<PipeWriter>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, Sender<Reply>>>,
    subscribers: Mutex<Vec<Sender<Event>>>,
    /// Set (with the reason) once the pipe from Chromium is closed.
    closed: Mutex<Option<String>>,
}

/// A connection to one browser. Cheap to clone; all clones share the pipe.
#[derive(Clone)]
pub struct Cdp {
    inner: Arc<Inner>,
}

impl Cdp {
    /// Spawns `cmd` (a Chromium command line; `--remote-debugging-pipe` is
    /// added here) with fresh pipes on its fds 3 and 4, and connects.
    pub fn spawn(mut cmd: Command) -> Result<(Cdp, Child)> {
        // Chromium reads our commands from fd 3 …
        let (to_chrome_r, to_chrome_w) = std::io::pipe().context("creating the command pipe")?;
        // … and writes its replies to fd 4.
        let (from_chrome_r, from_chrome_w) = std::io::pipe().context("creating the reply pipe")?;
        cmd.arg("--remote-debugging-pipe");
        cmd.fd_mappings(vec![
            FdMapping { parent_fd: OwnedFd::from(to_chrome_r), child_fd: 3 },
            FdMapping { parent_fd: OwnedFd::from(from_chrome_w), child_fd: 4 },
        ])
        .map_err(|e| anyhow!("mapping the DevTools pipes: {e}"))?;
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", cmd.get_program().to_string_lossy()))?;
        // The command owns the child's ends of the pipes; drop it so that our
        // reader sees end-of-file when Chromium exits.
        drop(cmd);
        Ok((Cdp::connect(from_chrome_r, to_chrome_w), child))
    }

    /// Speaks CDP over an already open pair of pipes.
    pub fn connect(reader: PipeReader, writer: PipeWriter) -> Cdp {
        let inner = Arc::new(Inner {
            writer: Mutex::new(writer),
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            subscribers: Mutex::new(Vec::new()),
            closed: Mutex::new(None),
        });
        let reader_inner = Arc::clone(&inner);
        std::thread::Builder::new()
            .name("cdp-reader".into())
            .spawn(move || read_loop(reader, &reader_inner))
            .expect("spawning the CDP reader thread");
        Cdp { inner }
    }

    /// Sends `method` with `params` (to the page of `session_id`, or to the
    /// browser) and waits up to [`DEFAULT_TIMEOUT`] for the result.
    pub fn call(&self, method: &str, params: Value, session_id: Option<&str>) -> Result<Value> {
        self.call_timeout(method, params, session_id, DEFAULT_TIMEOUT)
    }

    /// [`Cdp::call`] with a timeout of your choosing.
    pub fn call_timeout(
        &self,
        method: &str,
        params: Value,
        session_id: Option<&str>,
        timeout: Duration,
    ) -> Result<Value> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session_id {
            msg["sessionId"] = json!(s);
        }
        let (tx, rx) = mpsc::channel();
        lock(&self.inner.pending).insert(id, tx);
        if let Some(reason) = lock(&self.inner.closed).clone() {
            lock(&self.inner.pending).remove(&id);
            bail!("CDP {method}: the browser connection is closed ({reason})");
        }
        let mut bytes = serde_json::to_vec(&msg)?;
        bytes.push(0);
        let written = {
            let mut w = lock(&self.inner.writer);
            w.write_all(&bytes).and_then(|()| w.flush())
        };
        if let Err(e) = written {
            lock(&self.inner.pending).remove(&id);
            bail!("CDP {method}: cannot write to the browser (did it exit?): {e}");
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(anyhow!("CDP {method} failed: {e}")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                lock(&self.inner.pending).remove(&id);
                bail!("CDP {method}: no reply within {timeout:?}")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let reason = lock(&self.inner.closed).clone().unwrap_or_default();
                bail!("CDP {method}: the browser connection closed before the reply ({reason})")
            }
        }
    }

    /// Every event from now on (all sessions). Drop the receiver to
    /// unsubscribe.
    pub fn subscribe(&self) -> Receiver<Event> {
        let (tx, rx) = mpsc::channel();
        lock(&self.inner.subscribers).push(tx);
        rx
    }

    /// Every target of the browser (`Target.getTargets`).
    pub fn targets(&self) -> Result<Vec<TargetInfo>> {
        let r = self.call("Target.getTargets", json!({}), None)?;
        Ok(r["targetInfos"].as_array().into_iter().flatten().map(TargetInfo::from_value).collect())
    }

    /// The first target `pred` accepts, if any.
    pub fn find_target(&self, pred: impl Fn(&TargetInfo) -> bool) -> Result<Option<TargetInfo>> {
        Ok(self.targets()?.into_iter().find(|t| pred(t)))
    }

    /// Polls [`Cdp::find_target`] until `pred` accepts a target; the error
    /// lists the targets there were.
    pub fn wait_for_target(
        &self,
        pred: impl Fn(&TargetInfo) -> bool,
        timeout: Duration,
    ) -> Result<TargetInfo> {
        let deadline = Instant::now() + timeout;
        loop {
            let targets = self.targets()?;
            if let Some(t) = targets.iter().find(|t| pred(t)) {
                return Ok(t.clone());
            }
            if Instant::now() >= deadline {
                let list: Vec<String> =
                    targets.iter().map(|t| format!("{} {}", t.kind, t.url)).collect();
                bail!("no such target within {timeout:?}; the targets were: {list:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Attaches to a target (flattened session) and returns it as a [`Page`].
    pub fn attach(&self, target_id: &str) -> Result<Page> {
        let r = self.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
            None,
        )?;
        let session_id = r["sessionId"]
            .as_str()
            .ok_or_else(|| anyhow!("Target.attachToTarget returned no sessionId: {r}"))?
            .to_owned();
        Ok(Page {
            cdp: self.clone(),
            target_id: target_id.to_owned(),
            session_id,
            opened_url: None,
        })
    }

    /// Opens a new tab at `url` and attaches to it. Does not wait for the
    /// load; see [`Page::wait_for_load`].
    pub fn new_page(&self, url: &str) -> Result<Page> {
        let r = self.call("Target.createTarget", json!({"url": url}), None)?;
        let target_id = r["targetId"]
            .as_str()
            .ok_or_else(|| anyhow!("Target.createTarget returned no targetId: {r}"))?;
        let mut page = self.attach(target_id)?;
        page.opened_url = Some(url.to_owned());
        Ok(page)
    }

    /// The `tab` target holding the page target `page_target_id`.
    ///
    /// Chromium lists a tab twice: as a `tab` target (what
    /// `Extensions.triggerAction` wants) and as the `page` target inside it
    /// (what `Target.createTarget` returns). The link is found by attaching
    /// to each tab and auto-attaching to its page.
    pub fn tab_of(&self, page_target_id: &str) -> Result<String> {
        let page_url = self.call(
            "Target.getTargetInfo",
            json!({"targetId": page_target_id}),
            None,
        )?["targetInfo"]["url"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let r = self.call("Target.getTargets", json!({"filter": [{"type": "tab"}]}), None)?;
        let mut tabs: Vec<TargetInfo> =
            r["targetInfos"].as_array().into_iter().flatten().map(TargetInfo::from_value).collect();
        // Tabs showing the same URL first.
        tabs.sort_by_key(|t| t.url != page_url);
        for tab in tabs {
            let events = self.subscribe();
            let session = self.call(
                "Target.attachToTarget",
                json!({"targetId": tab.target_id, "flatten": true}),
                None,
            )?["sessionId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            self.call(
                "Target.setAutoAttach",
                json!({"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}),
                Some(&session),
            )?;
            let deadline = Instant::now() + Duration::from_secs(2);
            let mut found = false;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                let Ok(ev) = events.recv_timeout(left) else {
                    break;
                };
                if ev.method == "Target.attachedToTarget"
                    && ev.session_id.as_deref() == Some(&session)
                {
                    found = ev.params["targetInfo"]["targetId"] == page_target_id;
                    break;
                }
            }
            let _ = self.call("Target.detachFromTarget", json!({"sessionId": session}), None);
            if found {
                return Ok(tab.target_id);
            }
        }
        bail!("no tab target holds the page target {page_target_id}")
    }

    /// Why the connection closed, once it has.
    pub fn closed(&self) -> Option<String> {
        lock(&self.inner.closed).clone()
    }
}

/// A target we are attached to: a tab, the side panel, a service worker.
#[derive(Clone)]
pub struct Page {
    cdp: Cdp,
    /// The DevTools target id.
    pub target_id: String,
    /// The flattened session id used for its commands.
    pub session_id: String,
    /// The URL it was opened at, when we opened it.
    opened_url: Option<String>,
}

impl Page {
    /// Calls `method` in this target's session.
    pub fn call(&self, method: &str, params: Value) -> Result<Value> {
        self.cdp.call(method, params, Some(&self.session_id))
    }

    /// The connection this page belongs to.
    pub fn cdp(&self) -> &Cdp {
        &self.cdp
    }

    /// Evaluates `js` as an expression (awaiting a promise) and returns its
    /// value as JSON. A thrown exception becomes an error with its text.
    pub fn eval(&self, js: &str) -> Result<Value> {
        let r = self.call(
            "Runtime.evaluate",
            json!({
                "expression": js,
                "returnByValue": true,
                "awaitPromise": true,
                "userGesture": true,
            }),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            let desc = ex["exception"]["description"]
                .as_str()
                .or_else(|| ex["exception"]["value"].as_str())
                .or_else(|| ex["text"].as_str())
                .unwrap_or("unknown exception");
            bail!("JavaScript threw: {desc}\n  in: {}", short(js));
        }
        Ok(r["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    /// Evaluates `js_condition` every 50 ms until it is truthy; the error
    /// says what it last returned (or threw).
    pub fn wait_for(&self, js_condition: &str, timeout: Duration) -> Result<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let last = self.eval(js_condition);
            match &last {
                Ok(v) if truthy(v) => return Ok(v.clone()),
                _ => {}
            }
            if Instant::now() >= deadline {
                let what = match last {
                    Ok(v) => format!("it last returned {v}"),
                    Err(e) => format!("it last failed: {e:#}"),
                };
                bail!("waited {timeout:?} for `{}`; {what}", short(js_condition));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `document.readyState` is `complete` — in the document
    /// the page was opened at, not the initial `about:blank` of a new tab.
    pub fn wait_for_load(&self, timeout: Duration) -> Result<()> {
        let navigating = self.opened_url.as_deref().is_some_and(|u| u != "about:blank");
        // `readyState` through the prototype: a page may shadow it with a
        // named element (tests/fixtures/observe/clobbered.html).
        let ready = "Object.getOwnPropertyDescriptor(Document.prototype, 'readyState').get.call(document) === 'complete'";
        let cond = if navigating {
            format!("{ready} && location.href !== 'about:blank'")
        } else {
            ready.to_owned()
        };
        self.wait_for(&cond, timeout).map(drop)
    }

    /// The page's current URL.
    pub fn url(&self) -> Result<String> {
        Ok(self.eval("location.href")?.as_str().unwrap_or_default().to_owned())
    }
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn short(js: &str) -> String {
    let one_line = js.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 160 {
        format!("{}…", one_line.chars().take(160).collect::<String>())
    } else {
        one_line
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read_loop(reader: PipeReader, inner: &Inner) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let reason = loop {
        buf.clear();
        match reader.read_until(0, &mut buf) {
            Ok(0) => break "Chromium closed the DevTools pipe (it exited?)".to_owned(),
            Ok(_) => {}
            Err(e) => break format!("reading the DevTools pipe: {e}"),
        }
        if buf.last() == Some(&0) {
            buf.pop();
        }
        let msg: Value = match serde_json::from_slice(&buf) {
            Ok(v) => v,
            Err(e) => {
                eprintln!(
                    "cdp: unreadable message from Chromium ({e}): {}",
                    String::from_utf8_lossy(&buf)
                );
                continue;
            }
        };
        if let Some(id) = msg.get("id").and_then(Value::as_u64) {
            let reply = match msg.get("error") {
                Some(err) => {
                    Err(format!(
                        "{} (code {})",
                        err["message"].as_str().unwrap_or("unknown error"),
                        err["code"]
                    ) + &err.get("data").map(|d| format!(": {d}")).unwrap_or_default())
                }
                None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
            };
            if let Some(tx) = lock(&inner.pending).remove(&id) {
                let _ = tx.send(reply);
            }
        } else if let Some(method) = msg.get("method").and_then(Value::as_str) {
            let event = Event {
                method: method.to_owned(),
                params: msg.get("params").cloned().unwrap_or(Value::Null),
                session_id: msg.get("sessionId").and_then(Value::as_str).map(str::to_owned),
            };
            lock(&inner.subscribers).retain(|tx| tx.send(event.clone()).is_ok());
        }
    };
    *lock(&inner.closed) = Some(reason);
    // Wake every waiting caller: dropping the senders disconnects them.
    lock(&inner.pending).clear();
    lock(&inner.subscribers).clear();
}

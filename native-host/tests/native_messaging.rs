//! The real `errand` binary in native messaging mode: started as the browser
//! starts it, with the test playing the service worker over its stdin and
//! stdout, and the scripted model server (`errand-scripted-model`) on 127.0.0.1.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use errand_host::transport::{MAX_INBOUND, Reassembler, frame, raw_frame, read_frame};
use errand_protocol::{
    Body, Build, Effect, ElementInfo, Envelope, ErrorCode, MAX_TO_EXTENSION, Observation, Outcome,
    PageCommand, TaskEvent,
};
use errand_scripted_model::{Reply, ScriptedModel};
use serde_json::{Value, json};

const ORIGIN: &str = "chrome-extension://ipdllapojbkjjhcikcodfhbklgfddfol/";
const WAIT: Duration = Duration::from_secs(15);

// ---- The host process ----

struct HostProc {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The host's messages (chunks joined), or what was wrong with its output.
    frames: mpsc::Receiver<Result<Envelope, String>>,
    /// How many `chunk` frames the host wrote.
    chunks: Arc<AtomicUsize>,
    data_dir: PathBuf,
    next_id: u64,
    _dir: tempfile::TempDir,
}

impl HostProc {
    fn spawn(origin: &str, base_url: &str) -> HostProc {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let mut child = Command::new(env!("CARGO_BIN_EXE_errand"))
            .arg(origin)
            .env("ERRAND_DATA_DIR", &data_dir)
            .env("ERRAND_CONFIG_DIR", dir.path().join("config"))
            .env("ERRAND_BASE_URL", base_url)
            .env("ERRAND_MODEL", "scripted")
            .env("ERRAND_API_KEY", "test-key-0123456789")
            // The tests script each model call: no planner call first.
            .env("ERRAND_PLANNER", "0")
            .env_remove("ERRAND_CONTROL_SOCKET")
            .env_remove("ERRAND_MAX_STEPS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        let chunks = Arc::new(AtomicUsize::new(0));
        let counted = chunks.clone();
        std::thread::spawn(move || {
            // As the browser reads: a frame over its limit would cost the
            // connection; chunks are joined as the service worker does.
            let mut joiner = Reassembler::new();
            while let Ok(Some(item)) = read_frame(&mut stdout, MAX_TO_EXTENSION) {
                let got = match item {
                    Ok(env) => {
                        if matches!(env.body, Body::Chunk { .. }) {
                            counted.fetch_add(1, Ordering::SeqCst);
                        }
                        match joiner.accept(env) {
                            Ok(None) => continue,
                            Ok(Some(env)) => Ok(env),
                            Err(e) => Err(format!("the host's chunks are bad: {e}")),
                        }
                    }
                    Err(e) => Err(format!("the host wrote a bad frame: {e}")),
                };
                if tx.send(got).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        HostProc { child, stdin, frames, chunks, data_dir, next_id: 1, _dir: dir }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request; returns its id.
    fn send(&mut self, body: Body) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send_raw(&frame(&Envelope::new(id, body)));
        id
    }

    fn reply(&mut self, re: u64, body: Body) {
        self.next_id += 1;
        let env = Envelope::reply(self.next_id, re, body);
        self.send_raw(&frame(&env));
    }

    fn recv(&self) -> Envelope {
        self.frames
            .recv_timeout(WAIT)
            .expect("a message from the host")
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Plays the service worker and the content script until the task ends;
    /// returns the task's events.
    fn serve_until_finished(&mut self) -> Vec<TaskEvent> {
        let mut events = Vec::new();
        loop {
            let env = self.recv();
            match env.body {
                Body::TaskEvent { event, .. } => {
                    let done = matches!(event, TaskEvent::Finished { .. });
                    events.push(event);
                    if done {
                        return events;
                    }
                }
                body => {
                    if let Some(reply) = extension_reply(&body) {
                        self.reply(env.id, reply);
                    }
                }
            }
        }
    }

    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.data_dir.join("errand.db")).unwrap()
    }

    fn wait_exit(&mut self) -> Option<i32> {
        let deadline = Instant::now() + WAIT;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the host did not exit");
    }
}

impl Drop for HostProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn observation() -> Observation {
    Observation {
        url: "http://form.test/".into(),
        title: "A form".into(),
        build: Some(Build::Wasm),
        elements: vec![ElementInfo {
            index: 1,
            tag: "button".into(),
            name: "Submit".into(),
            in_viewport: true,
            ..Default::default()
        }],
        text: "[1]<button>Submit</button>".into(),
        elapsed_ms: 1.5,
        ..Default::default()
    }
}

/// What the service worker (or the content script) answers.
fn extension_reply(body: &Body) -> Option<Body> {
    match body {
        Body::OpenTab { url } => {
            Some(Body::TabReady { tab_id: 42, url: url.clone(), title: "A form".into() })
        }
        Body::Page { tab_id: 42, command: PageCommand::Observe { .. } } => {
            Some(Body::Observation(observation()))
        }
        Body::Page { tab_id: 42, command: PageCommand::Act { .. } } => Some(Body::ActionDone {
            effect: Effect {
                summary: "clicked <button> Submit".into(),
                url: "http://form.test/".into(),
                url_changed: false,
                value: None,
                ..Default::default()
            },
        }),
        // Before a click, what it would set off.
        Body::Page { tab_id: 42, command: PageCommand::Stakes { .. } } => Some(Body::Stakes {
            stakes: errand_protocol::Stakes {
                activates: true,
                words: vec!["Submit".into()],
                ..Default::default()
            },
        }),
        // A click is watched for a tab it opens.
        Body::ListTabs {} => Some(Body::Tabs { tabs: Vec::new() }),
        // The end of a task cleans the page up.
        Body::Page { tab_id: 42, command: PageCommand::Cleanup {} } => Some(Body::Ack {}),
        other => panic!("unexpected request from the host: {other:?}"),
    }
}

/// Starts a task in a new tab and plays the extension until the host asks
/// the model for step 1; returns the task's id.
fn start_and_wait_for_the_model(host: &mut HostProc) -> String {
    host.send(Body::StartTask {
        task: "Wait".into(),
        tab_id: None,
        url: Some("http://form.test/".into()),
        allow_sites: vec![],
    });
    let Body::TaskAccepted { task_id } = host.recv().body else { panic!("no task_accepted") };
    loop {
        let env = host.recv();
        match env.body {
            Body::TaskEvent { event: TaskEvent::Thinking { step: 1 }, .. } => return task_id,
            Body::TaskEvent { .. } => {}
            body => {
                let reply = extension_reply(&body).unwrap();
                host.reply(env.id, reply);
            }
        }
    }
}

fn error_of(env: &Envelope) -> (ErrorCode, String) {
    match &env.body {
        Body::Error { code, message } => (*code, message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

// ---- The scripted model server (the one both suites use) ----

/// A request body the model server received, with its `Authorization` header.
type Seen = (Value, Option<String>);

struct ModelServer {
    base_url: String,
    model: ScriptedModel,
}

impl ModelServer {
    /// Says `answers` in order, each after its delay, then that the script ran out.
    fn start(answers: &[(&str, Duration)]) -> ModelServer {
        let replies = answers.iter().map(|(a, d)| Reply::delayed(*d, *a)).collect();
        let model = ScriptedModel::queue(
            replies,
            r#"{"actions": [{"done": {"text": "script ran out", "success": false}}]}"#,
        )
        .unwrap();
        ModelServer { base_url: model.base_url(), model }
    }

    fn requests(&self) -> Vec<Seen> {
        self.model
            .seen()
            .into_iter()
            .map(|s| {
                let auth = s.header("authorization").map(str::to_owned);
                (s.body, auth)
            })
            .collect()
    }
}

const CLICK: &str = "```json\n{\"evaluation_previous_goal\": \"Start\", \"memory\": \"\", \"next_goal\": \"Press Submit\", \"actions\": [{\"click\": {\"index\": 1}}]}\n```";
const DONE: &str = r#"{"evaluation_previous_goal": "Submitted", "memory": "", "next_goal": "Report", "actions": [{"done": {"text": "The form was sent.", "success": true}}]}"#;

fn nowhere() -> String {
    // Nothing listens on port 9 (discard); tests that need no model use it.
    "http://127.0.0.1:9/v1".to_owned()
}

// ---- The tests ----

#[test]
fn bad_frames_get_error_replies_and_the_host_goes_on() {
    let mut host = HostProc::spawn(ORIGIN, &nowhere());

    host.send_raw(&raw_frame(br#"{"v":1,"id":5,"kind":"get_status""#));
    let e = host.recv();
    let (code, message) = error_of(&e);
    assert_eq!(code, ErrorCode::BadMessage);
    assert!(message.contains("not JSON"), "{message}");

    host.send_raw(&raw_frame(br#"{"v":1,"id":7,"kind":"make_coffee"}"#));
    let e = host.recv();
    assert_eq!(e.re, Some(7));
    let (code, message) = error_of(&e);
    assert_eq!(code, ErrorCode::UnknownKind);
    assert_eq!(message, "unknown message kind `make_coffee`");

    host.send_raw(&raw_frame(br#"{"v":2,"id":8,"kind":"get_status"}"#));
    let e = host.recv();
    assert_eq!(e.re, Some(8));
    let (code, message) = error_of(&e);
    assert_eq!(code, ErrorCode::UnsupportedVersion);
    assert!(message.contains("version 2 is not supported"), "{message}");

    host.send_raw(&raw_frame(b"{\"v\":1,\"id\":9,\"kind\":\"get_status\",\"x\":\"\xff\"}"));
    let (code, message) = error_of(&host.recv());
    assert_eq!(code, ErrorCode::BadFrame);
    assert!(message.contains("UTF-8"), "{message}");

    let id = host.send(Body::Hello { extension_version: "0.1.0".into() });
    let welcome = host.recv();
    assert_eq!(welcome.re, Some(id));
    assert!(matches!(welcome.body, Body::Welcome { .. }), "{welcome:?}");

    let id = host.send(Body::GetStatus {});
    let status = host.recv();
    assert_eq!(status.re, Some(id));
    match status.body {
        Body::Status { model, running_task, .. } => {
            assert_eq!(model, "scripted");
            assert_eq!(running_task, None);
        }
        other => panic!("{other:?}"),
    }

    // Closing stdin (the browser disconnected) ends the host cleanly.
    host.stdin.take();
    assert_eq!(host.wait_exit(), Some(0));
}

#[test]
fn another_origin_is_refused() {
    let mut host =
        HostProc::spawn("chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/", &nowhere());
    let (code, message) = error_of(&host.recv());
    assert_eq!(code, ErrorCode::NotAllowed);
    assert!(message.contains(ORIGIN), "{message}");
    assert_eq!(host.wait_exit(), Some(1));
}

#[test]
fn runs_a_task_against_a_scripted_model() {
    let model = ModelServer::start(&[(CLICK, Duration::ZERO), (DONE, Duration::ZERO)]);
    let mut host = HostProc::spawn(ORIGIN, &model.base_url);

    let id = host.send(Body::StartTask {
        task: "Send the form".into(),
        tab_id: None,
        url: Some("http://form.test/".into()),
        allow_sites: vec![],
    });
    let accepted = host.recv();
    assert_eq!(accepted.re, Some(id));
    let Body::TaskAccepted { task_id } = accepted.body else { panic!("{accepted:?}") };

    let events = host.serve_until_finished();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap()["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["started", "thinking", "step", "thinking", "step", "finished"]);
    assert_eq!(
        events[0],
        TaskEvent::Started {
            task: "Send the form".into(),
            tab_id: 42,
            url: "http://form.test/".into()
        }
    );
    let TaskEvent::Step(first) = &events[2] else { unreachable!() };
    assert_eq!(first.step, 1);
    assert_eq!(first.next_goal, "Press Submit");
    assert_eq!(first.actions.len(), 1);
    assert!(first.actions[0].ok);
    assert_eq!(first.actions[0].detail, "clicked <button> Submit");
    assert_eq!((first.elements, first.build), (1, Some(Build::Wasm)));
    assert_eq!(
        events[5],
        TaskEvent::Finished {
            outcome: Outcome::Done { answer: "The form was sent.".into(), success: true }
        }
    );

    // The model saw the element list fenced as page content, in the wire format.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let (body, auth) = &requests[0];
    assert_eq!(auth.as_deref(), Some("Bearer test-key-0123456789"));
    assert_eq!(body["model"], "scripted");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["messages"][0]["role"], "system");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("Send the form"), "{user}");
    assert!(user.contains("<<<UNTRUSTED_PAGE_CONTENT\nURL: http://form.test/"), "{user}");
    assert!(user.contains("[1]<button>Submit</button>\nUNTRUSTED_PAGE_CONTENT>>>"), "{user}");
    let second = requests[1].0["messages"][1]["content"].as_str().unwrap();
    assert!(second.contains("click [1] <button> Submit → ok"), "{second}");

    // The store, read with the schema's own names.
    let db = host.db();
    let (status, answer, steps, tin, tout, tab, url, pid, ended): (
        String,
        String,
        i64,
        i64,
        i64,
        i64,
        String,
        i64,
        Option<String>,
    ) = db
        .query_row(
            "SELECT status, answer, steps, tokens_in, tokens_out, tab_id, url, host_pid, ended_at
             FROM tasks WHERE id = ?1",
            [&task_id],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(
        (status.as_str(), answer.as_str(), steps, tin, tout, tab, url.as_str()),
        ("done", "The form was sent.", 2, 642, 34, 42, "http://form.test/")
    );
    assert_eq!(pid, i64::from(host.child.id()));
    assert!(ended.is_some_and(|t| t.ends_with('Z')));
    let rows: Vec<(i64, String, String, String, i64, i64)> = db
        .prepare("SELECT step, next_goal, actions_json, build, elements, tokens_in FROM steps WHERE task_id = ?1 ORDER BY step")
        .unwrap()
        .query_map([&task_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].0, rows[0].1.as_str(), rows[0].3.as_str(), rows[0].4, rows[0].5),
        (1, "Press Submit", "wasm", 1, 321)
    );
    let actions: Value = serde_json::from_str(&rows[0].2).unwrap();
    assert_eq!(actions[0]["action"], json!({"click": {"index": 1}}));
    assert_eq!(actions[0]["ok"], true);
    let version: i64 = db.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, errand_host::store::SCHEMA_VERSION);
}

#[test]
fn stop_task_ends_a_slow_model_call_at_once() {
    let model = ModelServer::start(&[(DONE, Duration::from_secs(30))]);
    let mut host = HostProc::spawn(ORIGIN, &model.base_url);
    let task_id = start_and_wait_for_the_model(&mut host);
    // Let the request reach the server.
    let deadline = Instant::now() + WAIT;
    while model.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never called");
        std::thread::sleep(Duration::from_millis(10));
    }

    // A second task is refused meanwhile.
    let id = host.send(Body::StartTask {
        task: "Another".into(),
        tab_id: Some(1),
        url: None,
        allow_sites: vec![],
    });
    let busy = host.recv();
    assert_eq!(busy.re, Some(id));
    assert_eq!(error_of(&busy).0, ErrorCode::Busy);

    let stopped_at = Instant::now();
    let id = host.send(Body::StopTask { task_id: None });
    // The ack and the finished event may come in either order.
    let mut finished = None;
    let mut acked = false;
    while finished.is_none() || !acked {
        let env = host.recv();
        match env.body {
            Body::Ack {} => {
                assert_eq!(env.re, Some(id));
                acked = true;
            }
            Body::TaskEvent { event: TaskEvent::Finished { outcome }, .. } => {
                finished = Some(outcome)
            }
            // The end of the task cleans the page up.
            body @ Body::Page { command: PageCommand::Cleanup {}, .. } => {
                host.reply(env.id, extension_reply(&body).expect("an ack"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let took = stopped_at.elapsed();
    assert_eq!(finished, Some(Outcome::Stopped {}));
    assert!(took < Duration::from_secs(1), "stopping took {took:?}");

    let status: String = host
        .db()
        .query_row("SELECT status FROM tasks WHERE id = ?1", [&task_id], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "stopped");

    // The host is free again.
    let id = host.send(Body::GetStatus {});
    let status = host.recv();
    assert_eq!(status.re, Some(id));
    assert!(matches!(status.body, Body::Status { running_task: None, .. }), "{status:?}");
}

#[test]
fn a_disconnect_during_a_task_records_it_as_failed() {
    let model = ModelServer::start(&[(DONE, Duration::from_secs(30))]);
    let mut host = HostProc::spawn(ORIGIN, &model.base_url);
    let task_id = start_and_wait_for_the_model(&mut host);
    host.stdin.take();
    assert_eq!(host.wait_exit(), Some(0));
    let (status, error): (String, String) = host
        .db()
        .query_row("SELECT status, error FROM tasks WHERE id = ?1", [&task_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((status.as_str(), error.as_str()), ("failed", "the browser disconnected"));
}

#[test]
fn with_a_control_socket_the_host_only_relays() {
    use std::os::unix::net::UnixListener;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("control.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_errand"))
        .arg(ORIGIN)
        .env("ERRAND_CONTROL_SOCKET", &socket)
        .env("ERRAND_DATA_DIR", dir.path().join("data"))
        .env("ERRAND_CONFIG_DIR", dir.path().join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();

    // Browser → socket: frames pass unchanged, even malformed ones.
    let hello = frame(&Envelope::new(1, Body::Hello { extension_version: "0.1.0".into() }));
    let junk = raw_frame(b"{not json");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&hello).unwrap();
    stdin.write_all(&junk).unwrap();
    stdin.flush().unwrap();
    let mut got = vec![0u8; hello.len() + junk.len()];
    std::io::Read::read_exact(&mut conn, &mut got).unwrap();
    assert_eq!(got, [hello, junk].concat());

    // Socket → browser.
    let welcome = frame(&Envelope::reply(1, 1, Body::Welcome { host_version: "x".into() }));
    conn.write_all(&welcome).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let env = read_frame(&mut stdout, MAX_INBOUND).unwrap().unwrap().unwrap();
    assert_eq!(env.re, Some(1));
    assert!(matches!(env.body, Body::Welcome { .. }));

    // The terminal side closes: the relay ends.
    drop(conn);
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(Instant::now() < deadline, "the relay did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    // No database was created: the relay does no work of its own.
    assert!(!dir.path().join("data/errand.db").exists());
}

#[test]
fn a_message_over_a_mebibyte_reaches_the_extension_in_chunks() {
    // The model's answer is 1.5 MiB: the step event and the finished event
    // that carry it are each over the browser's 1 MiB limit.
    let mut answer = String::new();
    while answer.len() < 1_572_864 {
        answer.push_str("Große Antwort, \"zitiert\", C:\\Pfad ✓ 𝄞\n");
    }
    answer.push_str("THE END");
    let done = json!({
        "evaluation_previous_goal": "Read it", "memory": "", "next_goal": "Report",
        "actions": [{"done": {"text": answer, "success": true}}],
    })
    .to_string();
    let model = ModelServer::start(&[(&done, Duration::ZERO)]);
    let mut host = HostProc::spawn(ORIGIN, &model.base_url);
    host.send(Body::StartTask {
        task: "Read everything".into(),
        tab_id: None,
        url: Some("http://form.test/".into()),
        allow_sites: vec![],
    });
    assert!(matches!(host.recv().body, Body::TaskAccepted { .. }));

    let events = host.serve_until_finished();
    assert_eq!(
        events.last(),
        Some(&TaskEvent::Finished {
            outcome: Outcome::Done { answer: answer.clone(), success: true }
        })
    );
    let step = events.iter().find_map(|e| match e {
        TaskEvent::Step(s) => Some(s),
        _ => None,
    });
    let step = step.expect("a step event");
    assert!(
        serde_json::to_string(&step.actions).unwrap().contains("THE END"),
        "the step event lost the answer's end"
    );
    // Two messages of ~1.6 MB (escaped ~1.7 MB) each: at least two chunks
    // each, none over the limit (the reader checks every frame).
    let chunks = host.chunks.load(Ordering::SeqCst);
    assert!(chunks >= 4, "{chunks} chunks");

    // The host goes on as usual afterwards.
    let id = host.send(Body::GetStatus {});
    assert_eq!(host.recv().re, Some(id));
}

#[test]
fn ping_is_answered_with_a_pong_of_the_asked_size() {
    let mut host = HostProc::spawn(ORIGIN, &nowhere());
    // Small, and over the 1 MiB limit (so chunked): the exact size comes back.
    for size in [0u32, 1_000, 1_500_000] {
        let id = host.send(Body::Ping { pad: "p".repeat(2_000), reply_bytes: size });
        let reply = host.recv();
        assert_eq!(reply.re, Some(id));
        match reply.body {
            Body::Pong { data } => assert_eq!(data.len(), size as usize),
            other => panic!("expected a pong, got {other:?}"),
        }
    }
    // More than the host sends: a clear error, and the host goes on.
    let id = host.send(Body::Ping { pad: String::new(), reply_bytes: u32::MAX });
    let reply = host.recv();
    assert_eq!(reply.re, Some(id));
    let (code, message) = error_of(&reply);
    assert_eq!(code, ErrorCode::BadMessage);
    assert!(message.contains("at most"), "{message}");
    let id = host.send(Body::GetStatus {});
    assert_eq!(host.recv().re, Some(id));
}

//! The dispatcher and the agent loop, in process: a fake extension on the
//! other end of a socket pair, a scripted model.

use super::*;
use std::collections::VecDeque;
use std::io::Cursor;
use std::os::unix::net::UnixStream;
use std::sync::mpsc as std_mpsc;
use std::time::Instant;

use errand_protocol::{Build, ElementInfo, PROTOCOL_VERSION, Splice};

use crate::config::Overrides;
use crate::host::transport::tests::SharedBuf;
use crate::host::transport::{frame, raw_frame, read_frame};
use crate::llm::{BoxFuture, ChatMessage, Completion, LlmError, Usage};
use tokio_util::sync::CancellationToken;

fn settings(dir: &std::path::Path, max_steps: u32) -> Settings {
    let flags = Overrides { max_steps: Some(max_steps), ..Default::default() };
    let mut s = Settings::resolve(
        Default::default(),
        &|_| None,
        &flags,
        dir.join("config"),
        dir.join("data"),
    )
    .unwrap();
    // These tests script each model call: no planner call first.
    s.planner = false;
    s
}

/// Answers from a script; `None` in the script means "never answer".
struct Scripted {
    answers: Mutex<VecDeque<Option<String>>>,
    seen: Mutex<Vec<Vec<ChatMessage>>>,
}

impl Scripted {
    fn new(answers: &[Option<&str>]) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.iter().map(|a| a.map(str::to_owned)).collect()),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Provider for Scripted {
    fn model(&self) -> &str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            lock(&self.seen).push(messages.to_vec());
            let next = lock(&self.answers).pop_front();
            match next {
                Some(Some(text)) => Ok(Completion {
                    text,
                    usage: Some(Usage { prompt_tokens: 100, completion_tokens: 10 }),
                }),
                Some(None) | None => {
                    cancel.cancelled().await;
                    Err(LlmError::Cancelled)
                }
            }
        })
    }
}

fn observation(url: &str) -> Observation {
    Observation {
        url: url.to_owned(),
        title: "Form".into(),
        build: Some(Build::Wasm),
        elements: vec![
            ElementInfo {
                index: 1,
                tag: "button".into(),
                name: "Submit".into(),
                ..Default::default()
            },
            ElementInfo {
                index: 2,
                tag: "input".into(),
                input_type: Some("text".into()),
                name: "Name".into(),
                ..Default::default()
            },
        ],
        text: "[1]<button>Submit\n[2]<input \"Name\">".into(),
        ..Default::default()
    }
}

/// The extension's side: answers the host's requests like the service
/// worker and content script would, and passes every task event on.
struct FakeExtension {
    to_host: UnixStream,
    /// Replies to the next `observe` requests, before the default one.
    observations: Arc<Mutex<VecDeque<Observation>>>,
    events: std_mpsc::Receiver<(String, TaskEvent)>,
    requests: std_mpsc::Receiver<Body>,
}

impl FakeExtension {
    fn start(host: &Host) -> (FakeExtension, tokio::task::JoinHandle<()>) {
        let (host_side, ext_side) = UnixStream::pair().unwrap();
        let reader = host_side.try_clone().unwrap();
        let serving = host.clone();
        let served = tokio::spawn(async move { serving.serve(reader, host_side).await.unwrap() });

        let (ev_tx, events) = std_mpsc::channel();
        let (req_tx, requests) = std_mpsc::channel();
        let observations: Arc<Mutex<VecDeque<Observation>>> = Arc::default();
        let scripted = observations.clone();
        let mut from_host = ext_side.try_clone().unwrap();
        let mut to_host = ext_side.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut next_id = 1000;
            while let Ok(Some(item)) = read_frame(&mut from_host, MAX_INBOUND) {
                let env = item.expect("the host sends valid envelopes");
                assert_eq!(env.v, PROTOCOL_VERSION);
                let reply = match &env.body {
                    Body::TaskEvent { task_id, event } => {
                        let _ = ev_tx.send((task_id.clone(), event.clone()));
                        None
                    }
                    Body::OpenTab { url } | Body::Navigate { url, .. } => {
                        Some(Body::TabReady { tab_id: 7, url: url.clone(), title: "Form".into() })
                    }
                    Body::ActiveTab {} => Some(Body::TabReady {
                        tab_id: 3,
                        url: "https://active.test/".into(),
                        title: "Active".into(),
                    }),
                    Body::ListTabs {} => Some(Body::Tabs { tabs: Vec::new() }),
                    Body::Page { command: PageCommand::Cleanup {}, .. } => Some(Body::Ack {}),
                    Body::Page { command: PageCommand::Observe { .. }, .. } => {
                        let next = lock(&scripted).pop_front();
                        Some(Body::Observation(
                            next.unwrap_or_else(|| observation("https://form.test/")),
                        ))
                    }
                    Body::Page { command: PageCommand::Stakes { .. }, .. } => Some(Body::Stakes {
                        stakes: errand_protocol::Stakes { activates: true, ..Default::default() },
                    }),
                    Body::Page { command: PageCommand::Act { action, .. }, .. } => {
                        Some(Body::ActionDone {
                            effect: Effect {
                                summary: format!("did {}", action.name()),
                                url: "https://form.test/".into(),
                                ..Default::default()
                            },
                        })
                    }
                    _ => None,
                };
                if !matches!(env.body, Body::TaskEvent { .. }) {
                    let _ = req_tx.send(env.body.clone());
                }
                if let Some(body) = reply {
                    next_id += 1;
                    let bytes = frame(&Envelope::reply(next_id, env.id, body));
                    if to_host.write_all(&bytes).is_err() {
                        break;
                    }
                }
            }
        });
        (FakeExtension { to_host: ext_side, observations, events, requests }, served)
    }

    /// Events until the task finishes.
    fn events_until_finished(&self) -> Vec<TaskEvent> {
        let mut out = Vec::new();
        loop {
            let (_, ev) = self.events.recv_timeout(Duration::from_secs(10)).expect("an event");
            let done = matches!(ev, TaskEvent::Finished { .. });
            out.push(ev);
            if done {
                return out;
            }
        }
    }

    fn send(&mut self, env: Envelope) {
        self.to_host.write_all(&frame(&env)).unwrap();
    }
}

fn outcome(events: &[TaskEvent]) -> Outcome {
    match events.last() {
        Some(TaskEvent::Finished { outcome }) => outcome.clone(),
        other => panic!("no finished event: {other:?}"),
    }
}

fn steps(events: &[TaskEvent]) -> Vec<StepReport> {
    events
        .iter()
        .filter_map(|e| match e {
            TaskEvent::Step(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

use errand_protocol::StepReport;

const CLICK_1: &str = r#"{"evaluation_previous_goal": "Start", "memory": "", "next_goal": "Submit", "actions": [{"click": {"index": 1}}]}"#;
const DONE: &str = r#"{"evaluation_previous_goal": "Submitted", "memory": "", "next_goal": "Finish", "actions": [{"done": {"text": "Form sent", "success": true}}]}"#;

fn host_with(dir: &std::path::Path, max_steps: u32, provider: Arc<Scripted>) -> Host {
    let settings = settings(dir, max_steps);
    let store = Store::open_in(&settings.data_dir).unwrap();
    Host::with_provider(settings, store, provider)
}

#[tokio::test(flavor = "multi_thread")]
async fn serves_bad_frames_with_errors_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), 5, Scripted::new(&[]));
    let mut input = Vec::new();
    input.extend(raw_frame(b"{\"v\":1,\"id\":"));
    input.extend(frame(&Envelope::new(1, Body::GetStatus {})));
    input.extend(raw_frame(br#"{"v":1,"id":7,"kind":"make_coffee"}"#));
    input.extend(raw_frame(br#"{"v":9,"id":8,"kind":"get_status"}"#));
    input.extend(raw_frame(b"\xc3\x28"));
    // Over the 64 MiB limit: reported, skipped, and the stream goes on.
    input.extend(raw_frame(&vec![b' '; MAX_INBOUND + 1]));
    input.extend(frame(&Envelope::new(2, Body::Hello { extension_version: "0.1.0".into() })));
    input.extend(frame(&Envelope::new(3, Body::TaskAccepted { task_id: "x".into() })));
    input.extend(frame(&Envelope::new(4, Body::StopTask { task_id: None })));
    // A late reply nobody waits for is dropped silently.
    input.extend(frame(&Envelope::reply(5, 999, Body::Ack {})));
    input.extend(frame(&Envelope::new(6, Body::GetStatus {})));
    let out = SharedBuf::default();
    host.serve(Cursor::new(input), out.clone()).await.unwrap();

    let bytes = out.take();
    let mut cursor = Cursor::new(bytes);
    let mut replies = Vec::new();
    while let Some(item) = read_frame(&mut cursor, MAX_INBOUND).unwrap() {
        replies.push(item.unwrap());
    }
    let summary: Vec<(Option<u64>, String)> =
        replies.iter().map(|e| (e.re, kind_of(&e.body))).collect();
    assert_eq!(
        summary,
        vec![
            (None, "error".into()),
            (Some(1), "status".into()),
            (Some(7), "error".into()),
            (Some(8), "error".into()),
            (None, "error".into()),
            (None, "error".into()),
            (Some(2), "welcome".into()),
            (Some(3), "error".into()),
            (Some(4), "error".into()),
            (Some(6), "status".into()),
        ]
    );
    let code = |i: usize| match &replies[i].body {
        Body::Error { code, message } => (*code, message.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(code(0).0, ErrorCode::BadMessage);
    assert!(code(0).1.contains("not JSON"), "{}", code(0).1);
    assert_eq!(code(2).0, ErrorCode::UnknownKind);
    assert!(code(2).1.contains("make_coffee"));
    assert_eq!(code(3).0, ErrorCode::UnsupportedVersion);
    assert_eq!(code(4).0, ErrorCode::BadFrame);
    assert!(code(4).1.contains("UTF-8"));
    assert_eq!(code(5).0, ErrorCode::BadFrame);
    assert!(code(5).1.contains("limit"));
    assert_eq!(code(7).0, ErrorCode::NotAllowed);
    assert_eq!(code(8).0, ErrorCode::NoTask);
    match &replies[9].body {
        Body::Status { model, running_task, host_version, .. } => {
            assert_eq!(model, "llama3.1");
            assert_eq!(running_task, &None);
            assert_eq!(host_version, HOST_VERSION);
        }
        other => panic!("{other:?}"),
    }
    // A host serves one connection.
    assert!(matches!(
        host.serve(Cursor::new(Vec::new()), SharedBuf::default()).await,
        Err(HostError::AlreadyServing)
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_observation_sent_as_a_diff_is_made_whole_or_asked_for_again() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), 5, Scripted::new(&[]));
    let (ext, _served) = FakeExtension::start(&host);
    let first = Observation { seq: 41, ..observation("https://form.test/") };
    let mut changed = first.clone();
    changed.seq = 42;
    changed.elements[1].value = Some("Ada".into());
    changed.text = "[1]<button>Submit\n[2]<input \"Name\" value=\"Ada\">".into();
    // Field 2's record and the text's second line changed, as the page sends it.
    let diff = errand_protocol::ObservationDiff {
        base: 41,
        elements: vec![Splice { at: 1, remove: 1, insert: vec![changed.elements[1].clone()] }],
        lines: vec![Splice {
            at: 1,
            remove: 1,
            insert: vec![changed.text.lines().nth(1).unwrap().into()],
        }],
    };
    let as_diff =
        Observation { elements: vec![], text: String::new(), diff: Some(diff), ..changed.clone() };
    // A diff against an observation the host does not hold.
    let stray = Observation {
        seq: 50,
        diff: Some(errand_protocol::ObservationDiff { base: 49, ..Default::default() }),
        ..Default::default()
    };
    lock(&ext.observations).extend([first.clone(), as_diff, stray, changed.clone()]);
    let since = |body: Body| match body {
        Body::Page { command: PageCommand::Observe { since, .. }, .. } => since,
        other => panic!("not an observe request: {other:?}"),
    };
    let next_request = || ext.requests.recv_timeout(Duration::from_secs(5)).unwrap();

    assert_eq!(host.observe(7, false).await.unwrap(), first);
    assert_eq!(since(next_request()), None);
    assert_eq!(host.observe(7, false).await.unwrap(), changed, "the diff applied to the held one");
    assert_eq!(since(next_request()), Some(41));
    // The stray diff is refused and the page asked again, whole.
    assert_eq!(host.observe(7, false).await.unwrap(), changed);
    assert_eq!(since(next_request()), Some(42));
    assert_eq!(since(next_request()), None);
    // Another tab starts whole.
    host.observe(8, false).await.unwrap();
    assert_eq!(since(next_request()), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_a_task_to_done_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new(&[Some(CLICK_1), Some(DONE)]);
    let host = host_with(dir.path(), 5, model.clone());
    let (ext, _served) = FakeExtension::start(&host);
    let mut local = host.subscribe();

    let id = host.start_task("Send the form", None, Some("https://form.test/")).unwrap();
    let events = ext.events_until_finished();
    assert!(
        matches!(&events[0], TaskEvent::Started { tab_id: 7, url, .. } if url == "https://form.test/")
    );
    assert_eq!(events[1], TaskEvent::Thinking { step: 1 });
    let s = steps(&events);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].actions.len(), 1);
    assert!(s[0].actions[0].ok);
    assert_eq!(s[0].actions[0].detail, "did click");
    assert_eq!((s[0].elements, s[0].build), (2, Some(Build::Wasm)));
    assert_eq!(outcome(&events), Outcome::Done { answer: "Form sent".into(), success: true });

    // The local subscribers saw the same, with the element's label.
    let mut labels = None;
    while let Ok(ev) = local.try_recv() {
        if matches!(ev.event, TaskEvent::Step(ref r) if r.step == 1) {
            labels = Some(ev.labels);
        }
    }
    assert_eq!(labels, Some(vec!["<button> Submit".to_owned()]));

    // Requests, in order.
    let reqs: Vec<String> = ext.requests.try_iter().map(|b| kind_of(&b)).collect();
    // A click: its stakes asked first (the gate), then watched for a tab
    // it opens: the tab list before, and once after. Then the page is
    // cleaned up.
    assert_eq!(
        reqs,
        ["open_tab", "page", "page", "list_tabs", "page", "list_tabs", "page", "page"]
    );

    // The second prompt recalls the first step.
    let seen = lock(&model.seen);
    assert_eq!(seen.len(), 2);
    assert!(
        seen[1][1].content.contains("click [1] <button> Submit → ok: did click"),
        "{}",
        seen[1][1].content
    );

    let t = host.store().task(&id).unwrap().unwrap();
    assert_eq!((t.status.as_str(), t.steps, t.tokens_in, t.tokens_out), ("done", 2, 200, 20));
    assert_eq!(t.answer.as_deref(), Some("Form sent"));
    assert_eq!(t.tab_id, Some(7));
    let rows = host.store().steps(&id).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].build.as_deref(), Some("wasm"));
    assert!(rows[0].actions_json.contains("\"click\""));
    assert_eq!(host.running_task(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_element_and_a_broken_answer_are_shown_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new(&[
        Some(
            r#"{"next_goal": "x", "actions": [{"click": {"index": 9}}, {"click": {"index": 1}}]}"#,
        ),
        Some("I think I should click the button."),
        Some("still no JSON"),
        Some(DONE),
    ]);
    let host = host_with(dir.path(), 5, model.clone());
    let (ext, _served) = FakeExtension::start(&host);
    let id = host.start_task("t", Some(4), None).unwrap();
    let events = ext.events_until_finished();
    // A tab id without a URL: the first observation gives the URL.
    assert!(
        matches!(&events[0], TaskEvent::Started { tab_id: 4, url, .. } if url == "https://form.test/")
    );
    let s = steps(&events);
    assert_eq!(s[0].actions.len(), 1, "the sequence stops at the failed action");
    assert!(!s[0].actions[0].ok);
    assert!(s[0].actions[0].detail.contains("no element [9]"));
    assert!(s[1].actions.is_empty());
    assert!(s[1].evaluation.contains("could not be read"), "{}", s[1].evaluation);
    assert!(matches!(outcome(&events), Outcome::Done { .. }));

    let seen = lock(&model.seen);
    assert_eq!(seen.len(), 4);
    // Step 2 was asked again with the error.
    assert_eq!(seen[2].len(), 4);
    assert!(seen[2][3].content.contains("no JSON object"), "{}", seen[2][3].content);
    // Step 3's prompt shows both failures.
    let prompt = &seen[3][1].content;
    assert!(prompt.contains("FAILED: there is no element [9]"), "{prompt}");
    assert!(prompt.contains("1 later action(s) not run"), "{prompt}");
    assert!(prompt.contains("Step 2 failed: the model's answer could not be read"), "{prompt}");
    assert_eq!(host.store().steps(&id).unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn three_failed_steps_end_the_task_and_the_step_limit_ends_it_too() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Some(r#"{"actions": [{"click": {"index": 42}}]}"#);
    let host = host_with(dir.path(), 10, Scripted::new(&[bad, bad, bad]));
    let (ext, _served) = FakeExtension::start(&host);
    let id = host.start_task("t", None, None).unwrap();
    let events = ext.events_until_finished();
    assert!(matches!(&events[0], TaskEvent::Started { tab_id: 3, .. }), "active tab");
    match outcome(&events) {
        Outcome::Failed { error } => assert!(error.contains("3 steps in a row failed"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(host.store().task(&id).unwrap().unwrap().status, "failed");

    let dir = tempfile::tempdir().unwrap();
    let wait = Some(r#"{"actions": [{"wait": {"ms": 1}}]}"#);
    let host = host_with(dir.path(), 2, Scripted::new(&[wait, wait]));
    let (ext, _served) = FakeExtension::start(&host);
    let id = host.start_task("t", None, Some("https://form.test/")).unwrap();
    assert_eq!(outcome(&ext.events_until_finished()), Outcome::StepLimit { steps: 2 });
    assert_eq!(host.store().task(&id).unwrap().unwrap().status, "step_limit");
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_ends_a_task_during_the_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), 5, Scripted::new(&[None]));
    let (mut ext, _served) = FakeExtension::start(&host);
    ext.send(Envelope::new(
        1,
        Body::StartTask {
            task: "t".into(),
            tab_id: None,
            url: Some("https://form.test/".into()),
            allow_sites: vec![],
        },
    ));
    // Wait until the model is being asked.
    loop {
        let (_, ev) = ext.events.recv_timeout(Duration::from_secs(5)).unwrap();
        if matches!(ev, TaskEvent::Thinking { .. }) {
            break;
        }
    }
    let task_id = host.running_task().unwrap();
    // A second task is refused while this one runs.
    assert!(matches!(host.start_task("another", None, None), Err(HostError::Busy(_))));
    let stopped_at = Instant::now();
    ext.send(Envelope::new(2, Body::StopTask { task_id: Some(task_id.clone()) }));
    let events = ext.events_until_finished();
    assert!(stopped_at.elapsed() < Duration::from_millis(500), "{:?}", stopped_at.elapsed());
    assert_eq!(outcome(&events), Outcome::Stopped {});
    assert_eq!(host.store().task(&task_id).unwrap().unwrap().status, "stopped");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_disconnect_fails_the_running_task() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), 5, Scripted::new(&[None]));
    let (ext, served) = FakeExtension::start(&host);
    let id = host.start_task("t", None, Some("https://form.test/")).unwrap();
    loop {
        let (_, ev) = ext.events.recv_timeout(Duration::from_secs(5)).unwrap();
        if matches!(ev, TaskEvent::Thinking { .. }) {
            break;
        }
    }
    ext.to_host.shutdown(std::net::Shutdown::Both).unwrap();
    tokio::time::timeout(Duration::from_secs(5), served).await.unwrap().unwrap();
    let t = host.store().task(&id).unwrap().unwrap();
    assert_eq!(t.status, "failed");
    assert_eq!(t.error.as_deref(), Some(DISCONNECTED));
    // Requests after the disconnect fail at once.
    assert!(matches!(host.active_tab().await, Err(BrowserError::Disconnected)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_without_an_answer_times_out_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), 5, Scripted::new(&[]));
    host.set_request_timeout(Duration::from_millis(100));
    // Nobody serves the connection: the request is never answered.
    let err = host.observe(12, false).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("tab 12") && text.contains("was the tab closed"), "{text}");
    assert!(lock(&host.inner.pending).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reader_hands_a_reply_to_its_request_and_gives_back_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_with(dir.path(), 5, Scripted::new(&[]));
    let (tx, rx) = oneshot::channel();
    lock(&host.inner.pending).insert(41, tx);
    // The reply to a waiting request goes to it, not to the message loop.
    assert!(host.take_reply(Ok(Envelope::reply(9, 41, Body::Ack {}))).is_none());
    assert_eq!(rx.await.unwrap(), Body::Ack {});
    assert!(lock(&host.inner.pending).is_empty());
    // A reply nobody waits for, a message that is no reply and a bad frame
    // are the message loop's.
    assert!(host.take_reply(Ok(Envelope::reply(10, 41, Body::Ack {}))).is_some());
    assert!(host.take_reply(Ok(Envelope::new(11, Body::GetStatus {}))).is_some());
    let bad = transport::FrameError::NotUtf8("x".into());
    assert!(host.take_reply(Err(bad)).is_some());
}

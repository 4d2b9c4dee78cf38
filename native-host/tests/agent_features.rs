//! The agent's answer as structured output in each provider's wire format
//! (and the fallback when a server refuses it), streamed answers (a slow
//! stream that outlasts the timeout, a stop mid-answer), the planner on by
//! default with a loop run once per item, facts answered from the profile,
//! and where secrets are kept — through the real `errand` binary over
//! native-messaging pipes with the scripted model server.

mod support;

use std::time::{Duration, Instant};

use errand_protocol::{Body, Outcome, TaskEvent};
use serde_json::Value;
use support::{HostProc, ModelServer, Reply, Seen, outcome};

const CLICK: &str = r#"{"evaluation_previous_goal": "Start", "memory": "", "next_goal": "Press Submit", "actions": [{"click": {"index": 1, "button": null, "modifiers": null}}]}"#;
const DONE: &str = r#"{"evaluation_previous_goal": "Submitted", "memory": "", "next_goal": "Report", "actions": [{"done": {"text": "The form was sent.", "success": true}}]}"#;

/// Runs "Send the form" against `server` with `env`; returns the host, the
/// events and the requests the model server saw.
fn run(
    server: &ModelServer,
    base: &str,
    env: &[(&str, &str)],
) -> (HostProc, Vec<TaskEvent>, Vec<Seen>, tempfile::TempDir) {
    let r = support::run_task(server, base, env, "");
    (r.host, r.events, r.seen, r.dir)
}

fn done_text(o: &Outcome) -> String {
    match o {
        Outcome::Done { answer, .. } => answer.clone(),
        other => panic!("expected done, got {other:?}"),
    }
}

/// The action names an answer schema offers.
fn action_names(items: &Value) -> Vec<String> {
    items["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["properties"].as_object()?.keys().next().cloned())
        .collect()
}

// ---- Structured output ----

#[test]
fn openai_compatible_gets_a_strict_json_schema_and_streams() {
    let server = ModelServer::start(vec![Reply::content(CLICK), Reply::content(DONE)]);
    // A local server: structured output is on by default (auto).
    let (_host, events, seen, _dir) = run(&server, "/v1", &[]);
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    assert_eq!(seen.len(), 2);
    let body = &seen[0].body;
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema", "{body}");
    assert_eq!(format["json_schema"]["name"], "errand_answer");
    assert_eq!(format["json_schema"]["strict"], true);
    let schema = &format["json_schema"]["schema"];
    assert_eq!(
        schema["required"],
        serde_json::json!(["evaluation_previous_goal", "memory", "next_goal", "actions"])
    );
    assert_eq!(schema["additionalProperties"], false);
    // The reasoning fields come first in the request as sent.
    let raw = &seen[0].raw;
    assert!(
        raw.find("\"evaluation_previous_goal\":{").unwrap() < raw.find("\"actions\":{").unwrap()
    );
    let names = action_names(&schema["properties"]["actions"]["items"]);
    assert!(names.contains(&"click".to_owned()) && names.contains(&"ask_user".to_owned()));
    assert!(!names.contains(&"send_message".to_owned()), "{names:?}");
    // Streaming is asked for, with the usage at the end.
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
}

#[test]
fn a_server_that_refuses_response_format_is_asked_again_without_it_for_the_session() {
    let server = ModelServer::start(vec![
        Reply::error(
            400,
            None,
            r#"{"error":{"message":"Unrecognized request argument supplied: response_format","type":"invalid_request_error"}}"#,
        ),
        Reply::content(CLICK),
        Reply::content(DONE),
    ]);
    let (host, events, seen, _dir) = run(&server, "/v1", &[("ERRAND_STRUCTURED", "on")]);
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    assert_eq!(seen.len(), 3);
    assert!(seen[0].body.get("response_format").is_some());
    assert!(seen[1].body.get("response_format").is_none(), "asked again without it");
    assert!(seen[2].body.get("response_format").is_none(), "and not again this session");
    // Streaming was not the problem: it stays on.
    assert!(seen.iter().all(|s| s.body["stream"] == true));
    let log = host.log();
    assert!(
        log.contains("refused structured output") && log.contains("response_format"),
        "the log says why: {log}"
    );
    // One step, not a failed one.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TaskEvent::Step(r) if r.evaluation.starts_with("Step failed")))
    );
}

#[test]
fn structured_off_and_the_side_calls_send_no_schema() {
    let server = ModelServer::start(vec![Reply::content(CLICK), Reply::content(DONE)]);
    let (_h, events, seen, _d) =
        run(&server, "/v1", &[("ERRAND_STRUCTURED", "off"), ("ERRAND_STREAM", "0")]);
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    for s in &seen {
        assert!(s.body.get("response_format").is_none(), "{}", s.raw);
        assert!(s.body.get("stream").is_none(), "{}", s.raw);
    }
    // The planner's call is free text, the step's constrained.
    let server = ModelServer::start(vec![
        Reply::content(
            r#"{"reasoning": "start", "plan": [{"kind": "navigate", "goal": "Send it"}]}"#,
        ),
        Reply::content(DONE),
    ]);
    let (_h, events, seen, _d) = run(&server, "/v1", &[("ERRAND_PLANNER", "1")]);
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    assert!(seen[0].body.get("response_format").is_none(), "the planner: {}", seen[0].raw);
    assert!(seen[1].body.get("response_format").is_some());
}

#[test]
fn anthropic_answers_through_its_answer_tool() {
    let server = ModelServer::start(vec![Reply::tool(CLICK), Reply::tool(DONE)]);
    let (host, events, seen, _dir) = run(
        &server,
        "/v1",
        &[("ERRAND_PROVIDER", "anthropic"), ("ERRAND_MODEL", "claude-sonnet-4-5")],
    );
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    let body = &seen[0].body;
    let tool = &body["tools"][0];
    assert_eq!(tool["name"], "errand_answer");
    assert_eq!(tool["input_schema"]["type"], "object");
    assert_eq!(tool["input_schema"]["properties"]["actions"]["minItems"], 1);
    assert_eq!(body["tool_choice"], serde_json::json!({"type": "tool", "name": "errand_answer"}));
    // The click came from the tool's input.
    let actions: String = host
        .db()
        .query_row("SELECT actions_json FROM steps WHERE step = 1", [], |r| r.get(0))
        .unwrap();
    assert!(actions.contains("\"click\""), "{actions}");
}

#[test]
fn gemini_gets_a_response_schema_in_its_own_subset() {
    let server = ModelServer::start(vec![Reply::content(CLICK), Reply::content(DONE)]);
    let (_host, events, seen, _dir) = run(
        &server,
        "/v1beta",
        &[("ERRAND_PROVIDER", "gemini"), ("ERRAND_MODEL", "gemini-2.5-flash")],
    );
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    let config = &seen[0].body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    let schema = &config["responseSchema"];
    assert_eq!(schema["type"], "OBJECT");
    assert_eq!(
        schema["propertyOrdering"],
        serde_json::json!(["evaluation_previous_goal", "memory", "next_goal", "actions"])
    );
    assert!(!seen[0].raw.contains("additionalProperties"), "{}", seen[0].raw);
    // Not for another dialect: the schema is the JSON answer's.
    let server = ModelServer::start(vec![Reply::content(
        "Evaluation: x\nMemory: y\nNext goal: z\nAction:\nsend_msg_to_user('The form was sent.')",
    )]);
    let (_h, _e, seen, _d) = run(
        &server,
        "/v1beta",
        &[
            ("ERRAND_PROVIDER", "gemini"),
            ("ERRAND_MODEL", "gemini-2.5-flash"),
            ("ERRAND_DIALECT", "browsergym"),
        ],
    );
    assert!(seen[0].body["generationConfig"].get("responseSchema").is_none());
}

// ---- Streaming ----

const PIECES: &[&str] = &[
    r#"{"evaluation_previous_goal": "Submitted", "memory": "", "#,
    r#""next_goal": "Report", "actions": [{"done": "#,
    r#"{"text": "The form was sent.", "success": true}}]}"#,
];

#[test]
fn a_slow_stream_outlasts_the_timeout_while_tokens_flow() {
    // Three pieces 600 ms apart: 1.8 s in all, with a 1 s timeout.
    let server = ModelServer::start(vec![Reply::streamed(PIECES, Duration::from_millis(600))]);
    let (host, events, _seen, _dir) = run(&server, "/v1", &[("ERRAND_TIMEOUT_SECS", "1")]);
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    // The usage came in the last chunk.
    let (tin, tout): (i64, i64) = host
        .db()
        .query_row("SELECT tokens_in, tokens_out FROM tasks", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!((tin, tout), (321, 17));
    // Without streaming the same answer is too slow.
    let server = ModelServer::start(vec![
        Reply::streamed(PIECES, Duration::from_millis(600)),
        Reply::content(DONE),
    ]);
    let (host, events, _seen, _dir) =
        run(&server, "/v1", &[("ERRAND_TIMEOUT_SECS", "1"), ("ERRAND_STREAM", "false")]);
    assert_eq!(done_text(&outcome(&events)), "The form was sent.");
    let evaluation: String = host
        .db()
        .query_row("SELECT evaluation FROM steps WHERE step = 1", [], |r| r.get(0))
        .unwrap();
    assert!(evaluation.contains("did not answer within 1 s"), "{evaluation}");
}

#[test]
fn a_stop_ends_the_task_in_the_middle_of_a_streamed_answer() {
    let server = ModelServer::start(vec![Reply::streamed(PIECES, Duration::from_secs(5))]);
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.addr);
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", base_url.as_str())]);
    let task_id = host.start("Send the form");
    host.serve_until(|b| matches!(b, Body::TaskEvent { event: TaskEvent::Thinking { .. }, .. }));
    // The answer's stream is under way.
    std::thread::sleep(Duration::from_millis(500));
    let stopped = Instant::now();
    host.send(Body::StopTask { task_id: Some(task_id) });
    let events = host.serve_until_finished();
    assert!(stopped.elapsed() < Duration::from_secs(2), "{:?}", stopped.elapsed());
    assert!(matches!(outcome(&events), Outcome::Stopped { .. }), "{:?}", outcome(&events));
}

// ---- The planner and its loops ----

#[test]
fn the_planner_is_on_by_default_and_a_loop_runs_once_per_item() {
    let server = ModelServer::start(vec![
        // The planner, before step 1 (on by default).
        Reply::content(
            r#"{"reasoning": "Two products to price", "plan": [{"kind": "loop", "goal": "Find the price", "values": ["mug", "plate"]}, {"kind": "extract", "goal": "Report the cheapest"}]}"#,
        ),
        // Step 1: works on the mug.
        Reply::content(
            r#"{"next_goal": "Search the mug", "actions": [{"fill": {"index": 2, "text": "mug"}}]}"#,
        ),
        // Step 2: the mug is done.
        Reply::content(
            r#"{"next_goal": "Note it", "actions": [{"done": {"text": "mug costs 12 €", "success": true}}]}"#,
        ),
        // Step 3: the plate is done.
        Reply::content(
            r#"{"next_goal": "Note it", "actions": [{"fill": {"index": 2, "text": "plate"}}, {"done": {"text": "plate costs 8 €", "success": true}}]}"#,
        ),
        // Step 4: the task's own end.
        Reply::content(
            r#"{"next_goal": "Report", "actions": [{"done": {"text": "The plate is cheapest (8 €).", "success": true}}]}"#,
        ),
    ]);
    // ERRAND_PLANNER empty: unset, the default.
    let (host, events, seen, _dir) = run(&server, "/v1", &[("ERRAND_PLANNER", "")]);
    assert_eq!(done_text(&outcome(&events)), "The plate is cheapest (8 €).");
    assert_eq!(seen.len(), 5);
    let prompt = |i: usize| {
        let msgs = seen[i].body["messages"].as_array().unwrap();
        msgs.last().unwrap()["content"].as_str().unwrap().to_owned()
    };
    assert!(prompt(0).contains("mini-tasks"), "{}", prompt(0));
    let first = prompt(1);
    assert!(first.contains("Loop: \"Find the price\", once for each of 2 items."), "{first}");
    assert!(first.contains("1. mug — ← you are on this one\n2. plate — to do"), "{first}");
    assert!(first.contains("Now work on item 1 of 2 (marked in the list above)"), "{first}");
    let third = prompt(3);
    assert!(third.contains("1. mug — done: mug costs 12 €"), "{third}");
    assert!(third.contains("Now work on item 2 of 2 (marked in the list above)"), "{third}");
    assert!(third.contains("item 1 of 2 (mug) finished; now item 2 of 2: plate"), "{third}");
    let last = prompt(4);
    assert!(last.contains("2. plate — done: plate costs 8 €"), "{last}");
    assert!(last.contains("Every item is done"), "{last}");
    assert_eq!(host.filled.lock().unwrap().as_slice(), ["mug", "plate"]);
    // Each item's `done` is a step that goes on, recorded as such.
    let actions: String = host
        .db()
        .query_row("SELECT actions_json FROM steps WHERE step = 2", [], |r| r.get(0))
        .unwrap();
    assert!(actions.contains("item 1 of 2 (mug) finished"), "{actions}");
}

// ---- Facts on demand ----

#[test]
fn ask_user_is_answered_from_a_large_profile_without_bothering_the_user() {
    let dir = tempfile::tempdir().unwrap();
    for (name, value) in [
        ("email", "ada@example.com"),
        ("phone", "+44 20 7946 0000"),
        ("city", "London"),
        ("country", "United Kingdom"),
        ("first_name", "Ada"),
        ("last_name", "Lovelace"),
        ("birthday", "1815-12-10"),
        ("company", "Analytical Engines Ltd"),
        ("shoe_size", "38"),
    ] {
        HostProc::cli(dir.path(), &["memory", "fact", name, value], "");
    }
    let server = ModelServer::start(vec![
        Reply::content(
            r#"{"next_goal": "Ask", "actions": [{"ask_user": {"question": "Which e-mail address should I use?"}}]}"#,
        ),
        Reply::content(
            r#"{"next_goal": "Fill", "actions": [{"fill": {"index": 2, "text": "ada@example.com"}}, {"done": {"text": "Subscribed ada@example.com.", "success": true}}]}"#,
        ),
    ]);
    let base_url = format!("{}/v1", server.addr);
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", base_url.as_str())]);
    host.start("Subscribe me to the newsletter");
    let events = host.serve_until_finished();
    assert_eq!(done_text(&outcome(&events)), "Subscribed ada@example.com.");
    assert!(
        !events.iter().any(|e| matches!(e, TaskEvent::Question { .. })),
        "the user was not asked: {events:?}"
    );
    let seen = server.seen();
    let first = seen[0].body["messages"][1]["content"].as_str().unwrap();
    // More than eight facts: names only, values asked for.
    assert!(first.contains("Facts in the profile (values not shown here): "), "{first}");
    assert!(first.contains("email") && first.contains("shoe_size"), "{first}");
    assert!(!first.contains("ada@example.com") && !first.contains("Lovelace"), "{first}");
    let second = seen[1].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        second.contains(
            "You asked: Which e-mail address should I use? Their profile says: ada@example.com (fact `email`)"
        ),
        "{second}"
    );
    assert!(host.log().contains("answered from the profile"), "{}", host.log());
}

#[test]
fn a_small_profile_is_listed_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    HostProc::cli(dir.path(), &["memory", "fact", "email", "ada@example.com"], "");
    let server = ModelServer::start(vec![Reply::content(DONE)]);
    let base_url = format!("{}/v1", server.addr);
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", base_url.as_str())]);
    host.start("Send the form");
    host.serve_until_finished();
    let first = server.seen()[0].body["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(first.contains("- email: ada@example.com"), "{first}");
    assert!(!first.contains("values not shown"), "{first}");
}

// ---- Where secrets are kept ----

#[test]
fn memory_list_says_where_secrets_live() {
    let dir = tempfile::tempdir().unwrap();
    HostProc::cli(
        dir.path(),
        &["memory", "secret", "pw", "--origin", "https://a.example"],
        "hunter2\n",
    );
    let list = HostProc::cli(dir.path(), &["memory", "list"], "");
    assert!(list.contains("secret pw (only on https://a.example; secret fields only)"), "{list}");
    HostProc::cli(
        dir.path(),
        &["memory", "secret", "user", "--origin", "https://a.example", "--any-field"],
        "ann\n",
    );
    let list = HostProc::cli(dir.path(), &["memory", "list"], "");
    assert!(list.contains("secret user (only on https://a.example; any field)"), "{list}");
    HostProc::cli(dir.path(), &["memory", "forget", "user"], "");
    let list = HostProc::cli(dir.path(), &["memory", "list"], "");
    assert!(
        list.contains("Secrets: 1 in the owner-only file")
            && list.contains("new ones go to the owner-only file (secrets_store = file)"),
        "{list}"
    );
    assert!(!list.contains("hunter2"), "{list}");
    // `auto` on a machine without a keychain (Linux without D-Bus, like
    // this one): the file, said so; where a keychain answers: the keychain.
    let auto = [("ERRAND_SECRETS_STORE", "auto")];
    let list = HostProc::cli_env(dir.path(), &["memory", "list"], "", &auto);
    assert!(list.contains("(secrets_store = auto)"), "{list}");
    let no_bus =
        cfg!(target_os = "linux") && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none();
    if no_bus {
        let other = tempfile::tempdir().unwrap();
        HostProc::cli_env(
            other.path(),
            &["memory", "secret", "pw", "--origin", "https://a.example"],
            "hunter2\n",
            &auto,
        );
        let file = std::fs::read_to_string(other.path().join("data/secrets.json")).unwrap();
        assert!(file.contains("hunter2"), "fell back to the owner-only file");
        let list = HostProc::cli_env(other.path(), &["memory", "list"], "", &auto);
        assert!(list.contains("Secrets: 1 in the owner-only file"), "{list}");
    }
}

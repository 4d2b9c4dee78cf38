//! The side panel's management requests — history, settings, profile,
//! connection check — through the real `errand` binary over its real
//! native-messaging framing, with the scripted model server.

mod support;

use std::time::{Duration, Instant};

use errand_protocol::{
    Body, CheckLevel, Envelope, ErrorCode, ProfileView, SettingsUpdate, SettingsView, TaskSummary,
};
use support::{API_KEY, HostProc, ModelServer, Reply, write_config};

const CLICK: &str = r#"{"evaluation_previous_goal": "Start", "memory": "", "next_goal": "Press Submit", "actions": [{"click": {"index": 1}}]}"#;
const SENT: &str = r#"{"evaluation_previous_goal": "Submitted", "memory": "", "next_goal": "Report", "actions": [{"done": {"text": "The form was sent.", "success": true}}]}"#;
const PRICE: &str = r#"{"evaluation_previous_goal": "Read it", "memory": "", "next_goal": "Report", "actions": [{"done": {"text": "The blue mug costs 12 euros.", "success": true}}]}"#;

fn settings_of(env: &Envelope) -> SettingsView {
    match &env.body {
        Body::Settings { settings } => settings.clone(),
        other => panic!("expected settings, got {other:?}"),
    }
}

fn profile_of(env: &Envelope) -> ProfileView {
    match &env.body {
        Body::Profile(p) => p.clone(),
        other => panic!("expected the profile, got {other:?}"),
    }
}

fn tasks_of(env: &Envelope) -> Vec<TaskSummary> {
    match &env.body {
        Body::TaskList { tasks } => tasks.clone(),
        other => panic!("expected a task list, got {other:?}"),
    }
}

fn error_of(env: &Envelope) -> (ErrorCode, String) {
    match &env.body {
        Body::Error { code, message } => (*code, message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_saved_model_is_the_one_the_next_task_asks_for() {
    let server = ModelServer::start(vec![Reply::content(SENT)]);
    let dir = tempfile::tempdir().unwrap();
    let users_file = format!(
        "# my settings\n[model]\nmodel = \"old-model\"   # the first one\nbase_url = \"{}/v1\"\n\n\
         [agent]\ndialect = \"json\"  # keep JSON\n",
        server.addr
    );
    write_config(dir.path(), &users_file);
    // No ERRAND_MODEL: the file names the model. The key comes from the
    // environment, so the panel cannot change it. No ERRAND_PLANNER either
    // (it would lock the planner): the panel turns it off below.
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_MODEL", ""), ("ERRAND_PLANNER", "")]);

    let before = settings_of(&host.request(Body::GetSettings {}));
    assert_eq!(before.model, "old-model");
    assert_eq!(before.base_url, format!("{}/v1", server.addr));
    assert!(before.api_key_set);
    assert_eq!(before.api_key_hint.as_deref(), Some("tes…6789"));
    assert_eq!(before.locked, ["api_key"]);

    let update = SettingsUpdate {
        model: Some(" new-model ".into()),
        api_key: Some("sk-from-the-panel-0000".into()),
        max_steps: Some(7),
        max_cost_usd: Some(2.5),
        deny_sites: Some(vec!["Ads.Example".into(), "*.track.example".into()]),
        ask_first_sites: Some(vec!["https://Bank.example/".into()]),
        planner: Some(false),
        ..Default::default()
    };
    let after = settings_of(&host.request(Body::SaveSettings { update }));
    assert_eq!((after.model.as_str(), after.max_steps), ("new-model", 7));
    assert_eq!(after.max_cost_usd, Some(2.5));
    assert_eq!(after.deny_sites, ["ads.example", "*.track.example"]);
    assert_eq!(after.ask_first_sites, ["https://bank.example"]);
    // The key is locked: written to the file, but the environment's stays.
    assert_eq!(after.locked, ["api_key"]);
    assert_eq!(after.api_key_hint.as_deref(), Some("tes…6789"));
    assert_eq!(settings_of(&host.request(Body::GetSettings {})), after);

    let file = host.config_dir.join("config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# my settings\n[model]\n"), "{text}");
    assert!(text.contains("model = \"new-model\"   # the first one"), "{text}");
    assert!(text.contains("dialect = \"json\"  # keep JSON"), "{text}");
    assert!(text.contains("api_key = \"sk-from-the-panel-0000\""), "{text}");
    assert!(text.contains("deny = [\"ads.example\", \"*.track.example\"]"), "{text}");
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);

    // The next task asks the new model, with the environment's key.
    host.start("Send the form");
    let events = host.serve_until_finished();
    assert!(matches!(support::outcome(&events), errand_protocol::Outcome::Done { .. }));
    let seen = server.seen();
    assert_eq!(seen[0].body["model"], "new-model");
    assert_eq!(seen[0].header("authorization"), Some(format!("Bearer {API_KEY}").as_str()));
    // The key is in no reply and no log line.
    assert!(!host.log().contains("sk-from-the-panel"), "the log shows the key");
}

#[test]
fn past_tasks_are_listed_searched_and_opened() {
    let server = ModelServer::start(vec![
        Reply::content(CLICK),
        Reply::content(SENT),
        Reply::content(PRICE),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.addr);
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", base_url.as_str())]);
    let form = host.start("Send the form");
    host.serve_until_finished();
    let mug = host.start("Find the price of the blue mug");
    host.serve_until_finished();

    let all = tasks_of(&host.request(Body::ListTasks { query: None, limit: None }));
    let ids: Vec<&str> = all.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, [mug.as_str(), form.as_str()], "newest first");
    let (m, f) = (&all[0], &all[1]);
    assert_eq!((m.status.as_str(), m.steps, m.tokens), ("done", 1, 338));
    assert_eq!((f.status.as_str(), f.steps, f.tokens), ("done", 2, 676));
    assert_eq!(f.answer.as_deref(), Some("The form was sent."));
    assert_eq!(f.url.as_deref(), Some("http://form.test/"));
    assert!(f.started_at.ends_with('Z') && f.ended_at.is_some());
    assert_eq!(f.cost_usd, 0.0, "the scripted model has no price");

    let found = |host: &mut HostProc, q: &str| -> Vec<String> {
        let reply = host.request(Body::ListTasks { query: Some(q.into()), limit: None });
        tasks_of(&reply).into_iter().map(|t| t.task_id).collect()
    };
    assert_eq!(found(&mut host, "MUG"), [mug.as_str()], "the task text, any case");
    assert_eq!(found(&mut host, "12 euros"), [mug.as_str()], "the answer");
    assert_eq!(found(&mut host, "form sent"), [form.as_str()], "every word, task or answer");
    for syntax in ["\"mug", "mug OR (", "NEAR(form sent)", "%", "_", "*", "task:form"] {
        assert!(found(&mut host, syntax).is_empty(), "{syntax} matched");
    }
    let newest = tasks_of(&host.request(Body::ListTasks { query: None, limit: Some(1) }));
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0].task_id, mug);

    let detail = match host.request(Body::GetTask { task_id: form.clone() }).body {
        Body::TaskDetail(d) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(detail.task, *f);
    assert_eq!(detail.steps.len(), 2);
    let (one, two) = (&detail.steps[0], &detail.steps[1]);
    assert_eq!((one.step, one.next_goal.as_str(), one.elements), (1, "Press Submit", 2));
    assert_eq!(one.build, Some(errand_protocol::Build::Wasm));
    assert_eq!(one.actions.len(), 1);
    assert_eq!(one.actions[0].action.name(), "click");
    assert!(one.actions[0].ok);
    assert_eq!(one.actions[0].detail, "did click");
    assert_eq!(two.actions[0].action.name(), "done");
    assert_eq!((one.tokens, one.total_tokens), (338, 338));
    assert_eq!((two.tokens, two.total_tokens), (338, 676));

    let (code, message) = error_of(&host.request(Body::GetTask { task_id: "nope".into() }));
    assert_eq!(code, ErrorCode::NoTask);
    assert_eq!(message, "there is no task `nope` in the history");
}

#[test]
fn profile_changes_never_reveal_a_secret() {
    const SECRET: &str = "S3cr3t-Panel-Value-42";
    const KEPT: &str = "Kept-Secret-Value-77";
    let dir = tempfile::tempdir().unwrap();
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", "http://127.0.0.1:9/v1")]);
    let mut replies = Vec::new();
    let mut ask = |host: &mut HostProc, body: Body| {
        let reply = host.request(body);
        replies.push(reply.encode());
        reply
    };

    let p = profile_of(&ask(
        &mut host,
        Body::SetFact { name: " email ".into(), value: "ada@example.com".into() },
    ));
    assert_eq!(p.facts.len(), 1);
    assert_eq!((p.facts[0].name.as_str(), p.facts[0].value.as_str()), ("email", "ada@example.com"));
    let p = profile_of(&ask(
        &mut host,
        Body::SetSecret {
            name: "bank_pw".into(),
            value: SECRET.into(),
            origins: vec!["https://Bank.example/login".into(), "http://127.0.0.1:8080".into()],
            any_field: false,
        },
    ));
    assert_eq!(p.secrets.len(), 1);
    assert_eq!(p.secrets[0].name, "bank_pw");
    assert_eq!(p.secrets[0].origins, ["https://bank.example", "http://127.0.0.1:8080"]);
    let p = profile_of(&ask(
        &mut host,
        Body::SetSecret {
            name: "kept".into(),
            value: KEPT.into(),
            origins: vec!["https://kept.example".into()],
            any_field: false,
        },
    ));
    assert_eq!(p.secrets.len(), 2);
    assert_eq!(profile_of(&ask(&mut host, Body::GetProfile {})), p);

    for (body, says) in [
        (
            Body::SetSecret {
                name: "x".into(),
                value: SECRET.into(),
                origins: vec![],
                any_field: false,
            },
            "needs at least one site",
        ),
        (
            Body::SetSecret {
                name: "x".into(),
                value: SECRET.into(),
                origins: vec!["bank.example".into()],
                any_field: false,
            },
            "`bank.example` is not a site a secret can be filled on",
        ),
        (
            Body::SetSecret {
                name: "x".into(),
                value: String::new(),
                origins: vec!["https://a.example".into()],
                any_field: false,
            },
            "has no value",
        ),
        (
            Body::SetSecret {
                name: "email".into(),
                value: SECRET.into(),
                origins: vec!["https://a.example".into()],
                any_field: false,
            },
            "already the name of a fact",
        ),
        (Body::SetFact { name: "n".repeat(65), value: "v".into() }, "at most 64 characters"),
        (Body::SetFact { name: "big".into(), value: "v".repeat(5000) }, "at most 4096 bytes"),
        (Body::SetFact { name: "  ".into(), value: "v".into() }, "the name is empty"),
        (Body::Forget { name: "nobody".into() }, "nothing named `nobody` in the profile"),
    ] {
        let (code, message) = error_of(&ask(&mut host, body));
        assert_eq!(code, ErrorCode::BadMessage, "{message}");
        assert!(message.contains(says), "{says} in {message}");
    }

    let p = profile_of(&ask(&mut host, Body::Forget { name: "bank_pw".into() }));
    assert_eq!(p.secrets.len(), 1);
    assert_eq!(p.secrets[0].name, "kept");
    let p = profile_of(&ask(&mut host, Body::Forget { name: "email".into() }));
    assert!(p.facts.is_empty());

    for r in &replies {
        assert!(!r.contains(SECRET) && !r.contains(KEPT), "a reply holds a secret: {r}");
    }
    let secrets_file = host.data_dir.join("secrets.json");
    let kept = std::fs::read_to_string(&secrets_file).unwrap();
    assert!(kept.contains(KEPT) && !kept.contains(SECRET), "only the kept secret is in the file");
    #[cfg(unix)]
    assert_eq!(mode(&secrets_file), 0o600);

    host.kill();
    assert!(!host.log().contains(SECRET) && !host.log().contains(KEPT), "the stderr log");
    let mut scanned = 0;
    for entry in std::fs::read_dir(&host.data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path == secrets_file {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(SECRET) && !text.contains(KEPT),
            "{} holds a secret",
            path.display()
        );
        scanned += 1;
    }
    assert!(scanned >= 2, "the database and the log were scanned");
}

#[test]
fn the_connection_check_answers_and_a_dead_server_is_a_problem_at_once() {
    let server = ModelServer::start(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("{}/v1", server.addr);
    let mut host = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", base_url.as_str())]);
    let (ok, checks) = match host.request(Body::TestConnection {}).body {
        Body::Connection { ok, checks } => (ok, checks),
        other => panic!("{other:?}"),
    };
    assert!(ok, "{checks:?}");
    let subjects: Vec<&str> = checks.iter().map(|c| c.subject.as_str()).collect();
    assert_eq!(subjects, ["model server", "api key", "model"]);
    assert!(checks.iter().all(|c| c.level == CheckLevel::Ok), "{checks:?}");
    assert!(checks[2].detail.contains("scripted"), "{checks:?}");
    assert!(!format!("{checks:?}").contains(API_KEY), "the key is masked");
    // The scripted server lists its models (`GET /v1/models`): the check
    // found the model there and made no chat call.
    assert_eq!(server.seen().len(), 0);

    let dir = tempfile::tempdir().unwrap();
    let mut dead = HostProc::spawn(dir.path(), &[("ERRAND_BASE_URL", "http://127.0.0.1:9/v1")]);
    let started = Instant::now();
    let reply = dead.request(Body::TestConnection {});
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let Body::Connection { ok, checks } = reply.body else { panic!("{reply:?}") };
    assert!(!ok);
    assert_eq!(
        (checks[0].subject.as_str(), checks[0].level),
        ("model server", CheckLevel::Problem)
    );
    assert!(checks[0].detail.contains("127.0.0.1:9"), "{checks:?}");
}

#[test]
fn a_silent_server_is_a_problem_within_the_timeout_and_the_host_stays_responsive() {
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for sock in listener.incoming().take(8) {
            held.push(sock);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    let dir = tempfile::tempdir().unwrap();
    let base_url = format!("http://{addr}/v1");
    let mut host = HostProc::spawn(
        dir.path(),
        &[("ERRAND_BASE_URL", base_url.as_str()), ("ERRAND_TIMEOUT_SECS", "1")],
    );
    let started = Instant::now();
    let check = host.send(Body::TestConnection {});
    // The message loop is not held up meanwhile.
    let status = host.request(Body::GetStatus {});
    assert!(matches!(status.body, Body::Status { .. }), "{status:?}");
    let reply = host.reply_to(check);
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    let Body::Connection { ok, checks } = reply.body else { panic!("{reply:?}") };
    assert!(!ok);
    assert_eq!(checks[0].level, CheckLevel::Problem);
    assert!(checks[0].detail.contains("did not answer within 1 s"), "{checks:?}");
}

#[test]
fn malformed_updates_are_answered_with_clear_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "# untouched\n[agent]\nmax_steps = 9\n");
    let mut host = HostProc::spawn(dir.path(), &[]);
    let before = settings_of(&host.request(Body::GetSettings {}));
    assert_eq!(before.max_steps, 9);

    let update = SettingsUpdate {
        provider: Some("skynet".into()),
        model: Some("".into()),
        base_url: Some("file:///etc/passwd".into()),
        max_steps: Some(0),
        allow_sites: Some(vec!["good.example".into(), "not a site".into()]),
        ..Default::default()
    };
    let (code, message) = error_of(&host.request(Body::SaveSettings { update }));
    assert_eq!(code, ErrorCode::BadMessage);
    for part in [
        "the settings were not saved",
        "provider: `skynet` is not a provider: use openai, anthropic or gemini",
        "model: give the model's name",
        "base_url: `file:///etc/passwd` must start with http:// or https://",
        "max_steps: must be between 1 and 500, not 0",
        "allow_sites: `not a site`: it is not a host name",
    ] {
        assert!(message.contains(part), "{part} in {message}");
    }
    let (code, message) = error_of(&host.request(Body::SaveSettings {
        update: SettingsUpdate { max_steps: Some(501), ..Default::default() },
    }));
    assert_eq!(code, ErrorCode::BadMessage);
    assert!(message.contains("max_steps: must be between 1 and 500, not 501"), "{message}");

    // Wrong types and missing fields: the envelope itself is refused.
    host.send_raw(r#"{"v":1,"id":500,"kind":"save_settings","update":{"max_steps":"lots"}}"#);
    let (code, message) = error_of(&host.reply_to(500));
    assert_eq!(code, ErrorCode::BadMessage);
    assert!(message.contains("save_settings") && message.contains("lots"), "{message}");
    host.send_raw(
        r#"{"v":1,"id":501,"kind":"set_secret","name":"pw","value":"Value-Not-Shown-1"}"#,
    );
    let (code, message) = error_of(&host.reply_to(501));
    assert_eq!(code, ErrorCode::BadMessage);
    assert!(message.contains("origins") && !message.contains("Value-Not-Shown"), "{message}");
    host.send_raw(r#"{"v":1,"id":502,"kind":"list_tasks","limit":-1}"#);
    assert_eq!(error_of(&host.reply_to(502)).0, ErrorCode::BadMessage);

    assert_eq!(settings_of(&host.request(Body::GetSettings {})), before);
    let text = std::fs::read_to_string(host.config_dir.join("config.toml")).unwrap();
    assert_eq!(text, "# untouched\n[agent]\nmax_steps = 9\n");
}

#[test]
fn doctor_names_the_file_key_and_the_rule_a_value_breaks() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), "[agent]\nmax_steps = 900\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_errand"))
        .arg("doctor")
        .env("ERRAND_DATA_DIR", dir.path().join("data"))
        .env("ERRAND_CONFIG_DIR", dir.path().join("config"))
        .env("ERRAND_SECRETS_STORE", "file")
        .env_remove("ERRAND_MAX_STEPS")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("config: `[agent] max_steps` in")
            && text.contains("config.toml must be between 1 and 500, not 900"),
        "{text}"
    );
}

//! `errand mcp` driven by a real MCP client: the official `mcp` package from
//! PyPI (`tests/mcp/driver.py`, installed into `target/mcp-venv` by
//! `scripts/test.sh`), which picks element numbers only from what the tool
//! replies say.
//!
//! - Through the user's browser: the test Chromium with the extension, its
//!   native host started by Chrome listening on the MCP socket (the test
//!   points `ERRAND_MCP_SOCKET` at its own for both), `errand mcp` over
//!   stdio forwarding to it: tools listed, a form filled and sent with a
//!   secret (absent from every reply), a denied site refused, one
//!   irreversible action approved and one rejected in the real side panel,
//!   a second client refused, a tab handed over in the panel ("Let <client>
//!   use this tab"), the panel's Stop ending a session, each session
//!   recorded as a task.
//! - `errand mcp --launch --http`: its own headless Chromium, streamable
//!   HTTP with the token; a request without it is refused with 401, one
//!   with a browser `Origin` with 403.
//!
//! Needs Chromium, the built extension, the built host and the venv.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use errand_e2e::browser::{host_exe, repo_root};
use errand_e2e::rig::Rig;
use errand_e2e::store;
use serde_json::{Value, json};

/// The saved password. Any four characters of it in a row are scrubbed from
/// every reply, so it shares none with the page's words (a password ending
/// in "word" would also mask the field's label "Password").
const SECRET: &str = "s3cret-Qx77zk";

fn python() -> PathBuf {
    match std::env::var_os("ERRAND_MCP_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => repo_root().join("target/mcp-venv/bin/python"),
    }
}

fn driver() -> PathBuf {
    repo_root().join("tests/mcp/driver.py")
}

/// The driver's command: stdio to `errand mcp ARGS`, in the environment
/// `env`.
fn stdio_driver(scenario: &Value, mcp_args: &[&str], env: &[(String, String)]) -> Result<Command> {
    let py = python();
    ensure!(py.is_file(), "no {} (scripts/test.sh installs the mcp package there)", py.display());
    let mut cmd = Command::new(py);
    cmd.arg(driver()).arg("stdio").arg(scenario.to_string()).arg("--").arg(host_exe()?).arg("mcp");
    cmd.args(mcp_args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    Ok(cmd)
}

fn output(child: std::process::Child) -> Result<Value> {
    let out = child.wait_with_output()?;
    ensure!(out.status.success(), "the MCP driver failed ({})", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).with_context(|| text.to_string())
}

fn call<'a>(out: &'a Value, n: usize) -> &'a Value {
    &out["calls"][n]
}

fn every_reply(out: &Value) -> String {
    out["calls"].as_array().into_iter().flatten().map(|c| c["text"].to_string()).collect()
}

#[test]
fn mcp_over_stdio_drives_the_users_browser_with_its_guardrails() -> Result<()> {
    let dir = tempfile::tempdir()?;
    // In a folder the host makes (0700): it listens only in a folder of
    // its own, and `errand mcp` connects only to one.
    let socket = dir.path().join("run").join("mcp.sock");
    let sock = socket.to_string_lossy().to_string();
    let rig = Rig::builder()
        .options(move |o| {
            o.env.push(("ERRAND_MCP_SOCKET".into(), sock));
            o.config_extra = "[sites]\ndeny = [\"denied.example\"]\n".into();
        })
        .build();
    // The secret, allowed on the fixtures' origin.
    let origin = rig.fixtures.url("/");
    let origin = origin.trim_end_matches('/');
    std::fs::create_dir_all(rig.browser.data_dir())?;
    std::fs::write(
        rig.browser.data_dir().join("secrets.json"),
        json!({"pw": {"value": SECRET, "origins": [origin], "any_field": false}}).to_string(),
    )?;
    let mut env = vec![("ERRAND_MCP_SOCKET".to_owned(), socket.to_string_lossy().to_string())];
    env.push(("ERRAND_DATA_DIR".into(), rig.browser.data_dir().to_string_lossy().to_string()));
    env.push((
        "ERRAND_CONFIG_DIR".into(),
        rig.browser.dir().join("config").to_string_lossy().to_string(),
    ));
    // The side panel (for the approvals), which also starts the host.
    let (_tab, panel) = rig.open("mcp/pay.html")?;
    panel.wait_connected()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        ensure!(Instant::now() < deadline, "the host never listened on {}", socket.display());
        std::thread::sleep(Duration::from_millis(100));
    }

    // 1. Tools, a form with a secret, a denied site.
    let form = rig.fixtures.url("mcp/form.html");
    let scenario = json!([
        {"list_tools": true},
        {"tool": "click", "args": {"index": 1}},
        {"tool": "goto", "args": {"url": form}},
        {"tool": "observe", "args": {"screenshot": true}},
        {"tool": "fill", "args": {"index": {"find": "Your name"}, "text": "Ada"}},
        {"tool": "fill", "args": {"index": {"find": "Password"}, "text": "{{secret:pw}}"}},
        {"tool": "click", "args": {"index": {"find": "Create account"}}},
        {"tool": "observe", "args": {}},
        {"tool": "find", "args": {"query": "profile"}},
        {"tool": "goto", "args": {"url": "https://denied.example/"}},
        {"tool": "tabs", "args": {"action": "switch", "tab_id": 1}},
    ]);
    let out = output(stdio_driver(&scenario, &[], &env)?.spawn()?)?;
    eprintln!("{}", serde_json::to_string_pretty(&out)?);
    let names: Vec<&str> = out["tools"]
        .as_array()
        .context("tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for needed in ["observe", "find", "tabs", "click", "fill", "type", "select_option", "goto"] {
        ensure!(names.contains(&needed), "no `{needed}` tool in {names:?}");
    }
    let fill = out["tools"].as_array().unwrap().iter().find(|t| t["name"] == "fill").unwrap();
    ensure!(fill["input_schema"]["properties"]["index"].is_object(), "{fill}");
    ensure!(call(&out, 0)["is_error"] == true, "a click before any page: {}", call(&out, 0));
    ensure!(call(&out, 1)["is_error"] == false, "goto: {}", call(&out, 1));
    let first = call(&out, 2);
    ensure!(first["text"].as_str().unwrap_or("").contains("Create account"), "{first}");
    ensure!(first["images"] == json!(["image/jpeg"]), "a marked screenshot: {first}");
    for n in 3..=5 {
        ensure!(call(&out, n)["is_error"] == false, "call {n}: {}", call(&out, n));
    }
    let after = call(&out, 6)["text"].as_str().unwrap_or("").to_owned();
    ensure!(after.contains("Changed since your last observe"), "a diff: {after}");
    ensure!(after.contains("Welcome, Ada"), "{after}");
    ensure!(after.contains("{{secret:pw}}"), "the password shows as its placeholder: {after}");
    ensure!(call(&out, 7)["text"].as_str().unwrap_or("").contains("Continue"), "{}", call(&out, 7));
    let denied = call(&out, 8);
    ensure!(denied["is_error"] == true, "{denied}");
    ensure!(denied["text"].as_str().unwrap_or("").contains("not opened"), "{denied}");
    ensure!(call(&out, 9)["is_error"] == true, "another tab: {}", call(&out, 9));
    ensure!(!every_reply(&out).contains(SECRET), "the secret reached a reply");

    // 2. Approvals in the side panel; a second client meanwhile.
    let pay = rig.fixtures.url("mcp/pay.html");
    let scenario = json!([
        {"tool": "goto", "args": {"url": pay}},
        {"tool": "observe", "args": {}},
        {"tool": "click", "args": {"index": {"find": "Pay now"}}},
        {"tool": "click", "args": {"index": {"find": "Delete account"}}},
        {"tool": "observe", "args": {"full": true}},
    ]);
    let first_client = stdio_driver(&scenario, &[], &env)?.spawn()?;
    const PENDING: &str = ".approval:not(.answered) button.approve:not(:disabled)";
    panel.page.wait_for(
        &format!("!!document.querySelector({})", json!(PENDING)),
        Duration::from_secs(60),
    )?;
    let body = panel.page.eval("document.body.innerText")?;
    ensure!(
        body.as_str().unwrap_or("").contains("Driven by mcp-test-client (MCP)"),
        "the panel shows who drives: {body}"
    );
    // A second client while the first waits.
    let second = output(stdio_driver(&json!([{"tool": "observe"}]), &[], &env)?.spawn()?)?;
    let refused = call(&second, 0);
    ensure!(refused["is_error"] == true, "{refused}");
    ensure!(refused["text"].as_str().unwrap_or("").contains("another MCP client"), "{refused}");
    panel.click(PENDING)?;
    const REJECT: &str = ".approval:not(.answered) button.reject:not(:disabled)";
    panel.page.wait_for(
        &format!("!!document.querySelector({})", json!(REJECT)),
        Duration::from_secs(60),
    )?;
    panel.click(REJECT)?;
    let out = output(first_client)?;
    eprintln!("{}", serde_json::to_string_pretty(&out)?);
    ensure!(call(&out, 2)["is_error"] == false, "approved: {}", call(&out, 2));
    let rejected = call(&out, 3);
    ensure!(rejected["is_error"] == true, "{rejected}");
    ensure!(rejected["text"].as_str().unwrap_or("").contains("rejected"), "{rejected}");
    let page = call(&out, 4)["text"].as_str().unwrap_or("").to_owned();
    ensure!(page.contains("Paid 12 EUR") && !page.contains("Account deleted"), "{page}");

    // 3. A tab the user hands over in the side panel.
    let go = dir.path().join("handed");
    let scenario = json!([
        {"tool": "observe", "args": {}},
        {"wait_file": go.to_string_lossy()},
        {"tool": "observe", "args": {}},
        {"tool": "click", "args": {"index": {"find": "Pay now"}}},
    ]);
    let third = stdio_driver(&scenario, &[], &env)?.spawn()?;
    const HAND: &str = "#handtab:not([hidden])";
    panel
        .page
        .wait_for(&format!("!!document.querySelector({})", json!(HAND)), Duration::from_secs(60))?;
    ensure!(
        panel.text(HAND)?.contains("Let mcp-test-client use this tab"),
        "{}",
        panel.text(HAND)?
    );
    panel.click(HAND)?;
    panel.page.wait_for(
        "document.body.innerText.includes('mcp-test-client may use this tab now')",
        Duration::from_secs(10),
    )?;
    std::fs::write(&go, "")?;
    panel.page.wait_for(
        &format!("!!document.querySelector({})", json!(PENDING)),
        Duration::from_secs(60),
    )?;
    panel.click(PENDING)?;
    let out = output(third)?;
    eprintln!("{}", serde_json::to_string_pretty(&out)?);
    ensure!(call(&out, 0)["is_error"] == true, "no tab of its own yet: {}", call(&out, 0));
    let handed = call(&out, 1)["text"].as_str().unwrap_or("").to_owned();
    ensure!(handed.contains("Delete account"), "the handed tab's page: {handed}");
    ensure!(call(&out, 2)["is_error"] == false, "{}", call(&out, 2));

    // 4. The panel's Stop ends a session: its later calls are refused.
    let go = dir.path().join("stopped");
    let scenario = json!([
        {"tool": "goto", "args": {"url": pay}},
        {"wait_file": go.to_string_lossy()},
        {"tool": "observe", "args": {}},
    ]);
    let fourth = stdio_driver(&scenario, &[], &env)?.spawn()?;
    panel.page.wait_for(
        "!document.querySelector('#stop').disabled && document.body.innerText.includes('Driven by')",
        Duration::from_secs(60),
    )?;
    panel.click("#stop")?;
    panel.page.wait_for("document.querySelector('#stop').disabled", Duration::from_secs(20))?;
    std::fs::write(&go, "")?;
    let out = output(fourth)?;
    let stopped = call(&out, 1);
    ensure!(stopped["is_error"] == true, "{stopped}");
    ensure!(stopped["text"].as_str().unwrap_or("").contains("stopped"), "{stopped}");

    // 5. Recorded like tasks.
    let db = rig.browser.db_path();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tasks = store::tasks(&db)?;
        let sessions: Vec<_> =
            tasks.iter().filter(|t| t.task.contains("mcp-test-client")).collect();
        if sessions.len() >= 4 && sessions.iter().all(|t| t.status != "running") {
            ensure!(sessions.iter().any(|t| t.status == "stopped"), "{sessions:?}");
            let steps = store::steps(&db, &sessions[0].id)?;
            ensure!(steps.len() >= 8, "each call a step: {steps:?}");
            ensure!(steps.iter().any(|s| s.actions_json.contains("\"fill\"")), "{steps:?}");
            for s in &steps {
                ensure!(!s.actions_json.contains(SECRET), "the secret in a step: {s:?}");
            }
            break;
        }
        ensure!(Instant::now() < deadline, "sessions not recorded: {tasks:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    rig.done("mcp_over_stdio_drives_the_users_browser_with_its_guardrails");
    Ok(())
}

/// One raw HTTP request; the status code.
fn http_status(port: u16, headers: &[&str]) -> Result<u16> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes())?;
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    let status = reply.split_whitespace().nth(1).context("no status line")?;
    Ok(status.parse()?)
}

#[test]
fn mcp_over_http_with_its_own_browser_needs_the_token_and_refuses_pages() -> Result<()> {
    let fixtures = errand_e2e::fixtures::FixtureServer::start()?;
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut server = Command::new(host_exe()?)
        .args(["mcp", "--launch", "--http", "--port", &port.to_string()])
        .env("ERRAND_DATA_DIR", &data)
        .env("ERRAND_CONFIG_DIR", dir.path().join("config"))
        .env("ERRAND_EXTENSION_DIR", errand_e2e::browser::dist_dir())
        .env("ERRAND_CHROMIUM", errand_e2e::browser::chromium()?)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    let result = (|| -> Result<()> {
        let token_file = data.join("mcp-token");
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() || !token_file.exists() {
            ensure!(Instant::now() < deadline, "errand mcp --http never listened");
            if let Some(status) = server.try_wait()? {
                bail!("errand mcp exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let token = std::fs::read_to_string(&token_file)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&token_file)?.permissions().mode() & 0o777;
            ensure!(mode == 0o600, "the token file is {mode:o}");
        }
        ensure!(http_status(port, &[])? == 401, "without the token");
        let bearer = format!("Authorization: Bearer {token}");
        let wrong = "Authorization: Bearer nope".to_owned();
        ensure!(http_status(port, &[&wrong])? == 401, "a wrong token");
        let evil = "Origin: https://evil.example";
        ensure!(http_status(port, &[&bearer, evil])? == 403, "a browser page's Origin");

        let form = fixtures.url("mcp/form.html");
        let scenario = json!([
            {"list_tools": true},
            {"tool": "goto", "args": {"url": form}},
            {"tool": "observe", "args": {}},
            {"tool": "fill", "args": {"index": {"find": "Your name"}, "text": "Grace"}},
            {"tool": "click", "args": {"index": {"find": "Create account"}}},
            {"tool": "observe", "args": {}},
        ]);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let child = Command::new(python())
            .arg(driver())
            .args(["http", &scenario.to_string(), &url, &token])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let out = output(child)?;
        eprintln!("{}", serde_json::to_string_pretty(&out)?);
        ensure!(out["tools"].as_array().is_some_and(|t| t.len() > 10), "{}", out["tools"]);
        for n in 0..4 {
            ensure!(call(&out, n)["is_error"] == false, "call {n}: {}", call(&out, n));
        }
        let after = call(&out, 4)["text"].as_str().unwrap_or("");
        ensure!(after.contains("Welcome, Grace"), "{after}");
        Ok(())
    })();
    let _ = Command::new("kill").args(["-INT", &server.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.try_wait()?.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = server.kill();
    let _ = server.wait();
    result
}

/// `errand mcp --launch` over stdio: its own headless Chromium, no running
/// browser needed; a form is filled and sent, and an irreversible action is
/// refused at once (no side panel, and stdin is the MCP channel: nobody can
/// be asked), the page untouched.
#[test]
fn mcp_launch_over_stdio_drives_its_own_browser_and_refuses_what_nobody_can_approve() -> Result<()>
{
    let fixtures = errand_e2e::fixtures::FixtureServer::start()?;
    let dir = tempfile::tempdir()?;
    let env: Vec<(String, String)> = vec![
        ("ERRAND_DATA_DIR".into(), dir.path().join("data").display().to_string()),
        ("ERRAND_CONFIG_DIR".into(), dir.path().join("config").display().to_string()),
        ("ERRAND_EXTENSION_DIR".into(), errand_e2e::browser::dist_dir().display().to_string()),
        ("ERRAND_CHROMIUM".into(), errand_e2e::browser::chromium()?.display().to_string()),
    ];
    let scenario = json!([
        {"tool": "goto", "args": {"url": fixtures.url("mcp/form.html")}},
        {"tool": "observe", "args": {}},
        {"tool": "fill", "args": {"index": {"find": "Your name"}, "text": "Grace"}},
        {"tool": "click", "args": {"index": {"find": "Create account"}}},
        {"tool": "observe", "args": {}},
        {"tool": "goto", "args": {"url": fixtures.url("mcp/pay.html")}},
        {"tool": "observe", "args": {}},
        {"tool": "click", "args": {"index": {"find": "Pay now"}}},
        {"tool": "observe", "args": {}},
    ]);
    let out = output(stdio_driver(&scenario, &["--launch"], &env)?.spawn()?)?;
    for n in [0, 1, 2, 3, 5, 6] {
        ensure!(call(&out, n)["is_error"] == false, "call {n}: {}", call(&out, n));
    }
    let after = call(&out, 4)["text"].as_str().unwrap_or("");
    ensure!(after.contains("Welcome, Grace"), "{after}");
    let pay = &call(&out, 7);
    ensure!(pay["is_error"] == true, "the payment was not refused: {pay}");
    ensure!(
        pay["text"].as_str().is_some_and(|t| t.contains("nobody could be asked")),
        "the refusal does not say nobody could be asked: {pay}"
    );
    let page = call(&out, 8)["text"].as_str().unwrap_or("");
    ensure!(!page.contains("Paid 12 EUR"), "the page was paid: {page}");
    Ok(())
}

/// An MCP caller's actions pass the same gate as the agent's, judged by
/// their effect: Enter in a payment form's field, `type` with Enter, a hold
/// on its button, a button whose accessible name hides "Pay", a buy button
/// in German and an icon-only trash button all wait for an approval nobody
/// can give here; a harmless button runs.
#[test]
fn mcp_actions_are_judged_by_their_effect_like_the_agents() -> Result<()> {
    let fixtures = errand_e2e::fixtures::FixtureServer::start()?;
    let dir = tempfile::tempdir()?;
    let env: Vec<(String, String)> = vec![
        ("ERRAND_DATA_DIR".into(), dir.path().join("data").display().to_string()),
        ("ERRAND_CONFIG_DIR".into(), dir.path().join("config").display().to_string()),
        ("ERRAND_EXTENSION_DIR".into(), errand_e2e::browser::dist_dir().display().to_string()),
        ("ERRAND_CHROMIUM".into(), errand_e2e::browser::chromium()?.display().to_string()),
    ];
    let scenario = json!([
        {"tool": "goto", "args": {"url": fixtures.url("boundary/pay.html")}},
        {"tool": "observe", "args": {}},
        {"tool": "fill", "args": {"index": {"find": "Amount"}, "text": "500"}},
        {"tool": "press", "args": {"index": {"find": "Amount"}, "key": "Enter"}},
        {"tool": "type", "args": {"index": {"find": "Amount"}, "text": "0", "enter": true}},
        {"tool": "hold", "args": {"index": {"find": "Pay $500"}, "ms": 600}},
        {"tool": "observe", "args": {}},
        {"tool": "goto", "args": {"url": fixtures.url("boundary/names.html")}},
        {"tool": "observe", "args": {}},
        {"tool": "click", "args": {"index": {"find": "Continue"}}},
        {"tool": "click", "args": {"index": {"find": "Jetzt kaufen"}}},
        {"tool": "click", "args": {"index": {"find": "icon=trash"}}},
        {"tool": "click", "args": {"index": {"find": "Show details"}}},
        {"tool": "observe", "args": {}},
    ]);
    let out = output(stdio_driver(&scenario, &["--launch"], &env)?.spawn()?)?;
    for n in [0, 1, 2, 6, 7, 8, 12, 13] {
        ensure!(call(&out, n)["is_error"] == false, "call {n}: {}", call(&out, n));
    }
    for n in [3, 4, 5, 9, 10, 11] {
        let c = call(&out, n);
        ensure!(c["is_error"] == true, "call {n} was not refused: {c}");
        ensure!(
            c["text"].as_str().is_some_and(|t| t.contains("nobody could be asked")),
            "call {n}'s refusal does not say nobody could be asked: {c}"
        );
    }
    let paid = call(&out, 6)["text"].as_str().unwrap_or("");
    ensure!(paid.contains("not paid") && !paid.contains("PAID"), "{paid}");
    let after = call(&out, 13)["text"].as_str().unwrap_or("");
    ensure!(after.contains("nothing done e"), "{after}");
    Ok(())
}

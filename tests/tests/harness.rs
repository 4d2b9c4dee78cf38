//! Checks of the harness itself, needing only Chromium: the DevTools client,
//! the fixture server and the scripted model server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use errand_e2e::browser::chromium;
use errand_e2e::cdp::Cdp;
use errand_e2e::fixtures::{CSP, FixtureServer};
use errand_e2e::model::{Reply, ScriptedModel};
use serde_json::{Value, json};

/// A bare HTTP/1.1 exchange; returns (status line + headers, body).
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

/// Plain headless Chromium (no extension) on the DevTools pipe.
fn plain_chromium() -> (Cdp, std::process::Child, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(chromium().unwrap());
    cmd.arg(format!("--user-data-dir={}", dir.path().display()))
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "about:blank",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let (cdp, child) = Cdp::spawn(cmd).unwrap();
    (cdp, child, dir)
}

#[test]
fn cdp_evaluates_in_a_page_and_surfaces_errors() {
    let (cdp, mut child, _dir) = plain_chromium();
    let version = cdp.call("Browser.getVersion", json!({}), None).unwrap();
    assert!(version["product"].as_str().unwrap().contains("Chrome"), "{version}");

    let page = cdp.new_page("about:blank").unwrap();
    assert_eq!(page.eval("1+1").unwrap(), json!(2));
    assert_eq!(page.eval("Promise.resolve({a: [1, 'x']})").unwrap(), json!({"a": [1, "x"]}));
    let thrown = page.eval("(() => { throw new Error('boom') })()").unwrap_err();
    assert!(format!("{thrown:#}").contains("boom"), "{thrown:#}");
    let rejected = page.eval("Promise.reject(new TypeError('nope'))").unwrap_err();
    assert!(format!("{rejected:#}").contains("nope"), "{rejected:#}");

    let unknown = cdp.call("No.suchMethod", json!({}), None).unwrap_err();
    assert!(format!("{unknown:#}").contains("No.suchMethod"), "{unknown:#}");
    assert!(format!("{unknown:#}").contains("wasn't found"), "{unknown:#}");

    page.eval("setTimeout(() => { window.ready = 42 }, 200); 0").unwrap();
    assert_eq!(page.wait_for("window.ready", Duration::from_secs(5)).unwrap(), json!(42));
    let timed_out = page.wait_for("window.never", Duration::from_millis(200)).unwrap_err();
    assert!(format!("{timed_out:#}").contains("window.never"), "{timed_out:#}");

    let t = cdp.wait_for_target(|t| t.target_id == page.target_id, Duration::from_secs(5)).unwrap();
    assert_eq!(t.kind, "page");

    let events = cdp.subscribe();
    page.call("Runtime.enable", json!({})).unwrap();
    let ev = events.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(ev.session_id.as_deref(), Some(page.session_id.as_str()), "{ev:?}");

    let _ = cdp.call("Browser.close", json!({}), None);
    let _ = child.wait();
    let after = cdp.call_timeout("Browser.getVersion", json!({}), None, Duration::from_secs(2));
    assert!(after.is_err());
}

#[test]
fn fixture_server_serves_files_and_the_csp_variant() {
    let server = FixtureServer::start().unwrap();
    let (head, body) = http(server.addr(), "GET", "/submit.html", "");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.to_lowercase().contains("content-type: text/html"), "{head}");
    assert!(!head.to_lowercase().contains("content-security-policy"), "{head}");
    assert!(body.contains(">Submit</button>"), "{body}");

    let (head, body2) = http(server.addr(), "GET", "/csp/submit.html", "");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains(&format!("content-security-policy: {CSP}")), "{head}");
    assert_eq!(body, body2);

    let (head, _) = http(server.addr(), "GET", "/csp/submit.js", "");
    assert!(head.to_lowercase().contains("content-type: text/javascript"), "{head}");
    let (head, _) = http(server.addr(), "GET", "/../Cargo.toml", "");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, _) = http(server.addr(), "GET", "/missing.html", "");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[test]
fn fixture_page_works_with_and_without_csp_in_chromium() {
    let server = FixtureServer::start().unwrap();
    let (cdp, mut child, _dir) = plain_chromium();
    for path in ["/submit.html", "/csp/submit.html"] {
        let page = cdp.new_page(&server.url(path)).unwrap();
        page.wait_for_load(Duration::from_secs(10)).unwrap();
        page.eval("document.getElementById('submit').click()").unwrap();
        let text = page.eval("document.getElementById('result').textContent").unwrap();
        assert_eq!(text, json!("Thanks, submitted!"), "{path}");
    }
    // The CSP variant refuses inline script, as a real strict page does.
    let page = cdp.new_page(&server.url("/csp/submit.html")).unwrap();
    page.wait_for_load(Duration::from_secs(10)).unwrap();
    let wasm = page
        .eval(
            "(async () => { try { await WebAssembly.compile(new Uint8Array([0,97,115,109,1,0,0,0])); \
             return 'compiled' } catch (e) { return 'refused' } })()",
        )
        .unwrap();
    assert_eq!(wasm, json!("refused"));
    let _ = cdp.call("Browser.close", json!({}), None);
    let _ = child.wait();
}

#[test]
fn model_server_speaks_the_chat_completions_format() {
    let model = ScriptedModel::start(|req, call| match call {
        0 => Reply::json(&json!({"echo": req["messages"][0]["content"]})),
        1 => Reply::status(503),
        2 => Reply::delayed(Duration::from_millis(300), "late"),
        3 => panic!("(an expected panic) no reply for {}", req["model"]),
        _ => Reply::content("streamed text"),
    })
    .unwrap();
    assert!(model.base_url().starts_with("http://127.0.0.1:"));
    assert!(model.base_url().ends_with("/v1"));
    let req =
        json!({"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}).to_string();

    let (head, body) = http(model.addr(), "POST", "/v1/chat/completions", &req);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "scripted");
    assert_eq!(v["choices"][0]["index"], 0);
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let content: Value =
        serde_json::from_str(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"echo": "hi"}));
    assert!(v["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert!(v["id"].is_string() && v["created"].is_u64());

    let (head, body) = http(model.addr(), "POST", "/v1/chat/completions", &req);
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(body.contains("\"error\""), "{body}");

    let t = std::time::Instant::now();
    let (_, body) = http(model.addr(), "POST", "/v1/chat/completions", &req);
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert!(body.contains("\"late\""), "{body}");

    let (head, _) = http(model.addr(), "POST", "/v1/chat/completions", &req);
    assert!(head.starts_with("HTTP/1.1 500"), "{head}");
    assert!(model.failures()[0].contains("no reply for \"scripted\""), "{:?}", model.failures());
    assert!(model.check().is_err());

    let stream_req = json!({"model": "m", "stream": true, "messages": []}).to_string();
    let (head, body) = http(model.addr(), "POST", "/v1/chat/completions", &stream_req);
    assert!(head.contains("text/event-stream"), "{head}");
    assert!(body.contains("\"chat.completion.chunk\"") && body.contains("streamed text"), "{body}");
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");

    let (head, body) = http(model.addr(), "GET", "/v1/models", "");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("\"scripted\""), "{body}");

    assert_eq!(model.request_count(), 5);
    assert_eq!(
        model.wait_for_requests(5, Duration::from_secs(1)).unwrap()[0]["messages"][0]["content"],
        "hi"
    );
}

//! The scripted model: an HTTP server on 127.0.0.1 speaking the OpenAI
//! chat-completions wire format, answering from a test's script.
//!
//! ```no_run
//! use errand_e2e::model::{Reply, ScriptedModel, find_element};
//! let model = ScriptedModel::start(|req, call| match call {
//!     0 => {
//!         let n = find_element(req, "Submit").unwrap();
//!         Reply::content(format!(r#"{{"actions":[{{"click":{{"index":{n}}}}}]}}"#))
//!     }
//!     _ => Reply::status(500),
//! })
//! .unwrap();
//! let base_url = model.base_url(); // http://127.0.0.1:PORT/v1
//! ```
//!
//! Routes: `POST /v1/chat/completions` (plain JSON, or server-sent events
//! when the request says `"stream": true`) and `GET /v1/models`. Every
//! chat request body is recorded ([`ScriptedModel::requests`]). A script
//! that panics (a failed expectation) answers HTTP 500 and the panic message
//! is kept in [`ScriptedModel::failures`], so the test can report it.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow, bail};
use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::server::Server;

/// What the model answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The assistant message's `content`.
    Content(String),
    /// The same, after a delay (the host may give up first).
    Delayed(Duration, String),
    /// An HTTP error with an OpenAI-style error body.
    Status(u16),
}

impl Reply {
    /// Answer with this text.
    pub fn content(text: impl Into<String>) -> Reply {
        Reply::Content(text.into())
    }

    /// Answer with this JSON value as the content text.
    pub fn json(v: &Value) -> Reply {
        Reply::Content(v.to_string())
    }

    /// Answer with `text` after `delay`.
    pub fn delayed(delay: Duration, text: impl Into<String>) -> Reply {
        Reply::Delayed(delay, text.into())
    }

    /// Answer with HTTP `code`.
    pub fn status(code: u16) -> Reply {
        Reply::Status(code)
    }
}

type Script = dyn Fn(&Value, usize) -> Reply + Send + Sync;

struct ModelState {
    script: Box<Script>,
    requests: Mutex<Vec<Value>>,
    failures: Mutex<Vec<String>>,
}

/// A running scripted model; stopped on drop.
pub struct ScriptedModel {
    server: Server,
    state: Arc<ModelState>,
}

impl ScriptedModel {
    /// Starts the server. `script(request_body, call_index)` decides each
    /// answer; `call_index` counts chat requests from 0.
    pub fn start(script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> Result<Self> {
        let state = Arc::new(ModelState {
            script: Box::new(script),
            requests: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
        });
        let router = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models))
            .fallback(unknown)
            .with_state(Arc::clone(&state));
        Ok(ScriptedModel { server: Server::start(router)?, state })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// The base URL to configure (`ERRAND_BASE_URL`): `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr)
    }

    /// Every chat request body so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state.requests).clone()
    }

    /// How many chat requests arrived.
    pub fn request_count(&self) -> usize {
        lock(&self.state.requests).len()
    }

    /// Waits until at least `n` chat requests arrived; returns them all.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> Result<Vec<Value>> {
        let deadline = Instant::now() + timeout;
        loop {
            let reqs = self.requests();
            if reqs.len() >= n {
                return Ok(reqs);
            }
            if Instant::now() >= deadline {
                bail!(
                    "the model got {} request(s) within {timeout:?}, expected {n}{}",
                    reqs.len(),
                    self.failures_note()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What went wrong in the script (its panics) or in requests to
    /// unknown routes.
    pub fn failures(&self) -> Vec<String> {
        lock(&self.state.failures).clone()
    }

    /// Fails if the script failed, quoting each failure.
    pub fn check(&self) -> Result<()> {
        let f = self.failures();
        if f.is_empty() { Ok(()) } else { bail!("the scripted model failed:\n{}", f.join("\n")) }
    }

    fn failures_note(&self) -> String {
        let f = self.failures();
        if f.is_empty() { String::new() } else { format!("; script failures:\n{}", f.join("\n")) }
    }
}

async fn chat(State(state): State<Arc<ModelState>>, body: String) -> Response {
    let req: Value = match serde_json::from_str(&body) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("request body is not JSON ({e}): {body}");
            lock(&state.failures).push(msg.clone());
            return error_response(400, &msg);
        }
    };
    let call = {
        let mut reqs = lock(&state.requests);
        reqs.push(req.clone());
        reqs.len() - 1
    };
    let reply = std::panic::catch_unwind(AssertUnwindSafe(|| (state.script)(&req, call)));
    let reply = match reply {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "the script panicked".into());
            let msg = format!("call {call}: {msg}");
            lock(&state.failures).push(msg.clone());
            return error_response(500, &msg);
        }
    };
    let model = req["model"].as_str().unwrap_or("scripted").to_owned();
    let stream = req["stream"].as_bool().unwrap_or(false);
    let content = match reply {
        Reply::Content(text) => text,
        Reply::Delayed(delay, text) => {
            tokio::time::sleep(delay).await;
            text
        }
        Reply::Status(code) => return error_response(code, "scripted error"),
    };
    // Like the real servers: the usage in a last chunk when asked for.
    let usage = req["stream_options"]["include_usage"].as_bool().unwrap_or(false);
    if stream {
        streamed(call, &model, &content, usage)
    } else {
        completion(call, &model, &content)
    }
}

fn created() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Roughly four characters per token, like the real thing on English.
fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

fn completion(call: usize, model: &str, content: &str) -> Response {
    let prompt = 1000;
    let completion = tokens(content);
    Json(json!({
        "id": format!("chatcmpl-scripted-{call}"),
        "object": "chat.completion",
        "created": created(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }))
    .into_response()
}

fn streamed(call: usize, model: &str, content: &str, usage: bool) -> Response {
    let id = format!("chatcmpl-scripted-{call}");
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created(), "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    };
    let mut body = String::new();
    for event in [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": content}), Value::Null),
        chunk(json!({}), json!("stop")),
    ] {
        body.push_str(&format!("data: {event}\n\n"));
    }
    if usage {
        let (prompt, completion) = (1000, tokens(content));
        let last = json!({
            "id": id, "object": "chat.completion.chunk", "created": created(), "model": model,
            "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion},
        });
        body.push_str(&format!("data: {last}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body)
        .into_response()
}

fn error_response(code: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body =
        json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}});
    (status, Json(body)).into_response()
}

async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "errand-e2e"}],
    }))
}

async fn unknown(State(state): State<Arc<ModelState>>, uri: Uri) -> Response {
    let msg = format!("request to an unknown route {uri}");
    lock(&state.failures).push(msg.clone());
    error_response(404, &msg)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---- Reading requests ----

/// The text of a message's `content`: a string, or the `text` parts of an
/// array of parts.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of the last `user` message of a chat request.
pub fn last_user_message(req: &Value) -> Option<String> {
    req["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
}

/// The text of every message of a chat request, joined.
pub fn all_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| content_text(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The elements of an element list: a line `12<button>Submit` (`*12<…>`
/// when new), or every `[N]…` with the rest of its line (the older shape,
/// and other agents'), e.g. `(12, "<button>Submit")`.
pub fn elements(text: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let bare = line.trim_start();
        let bare = bare.strip_prefix('*').unwrap_or(bare);
        let digits = bare.len() - bare.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        // `12<button>…`, or a plain link without its kind: `8>Pricing`.
        if digits > 0 && bare[digits..].starts_with(['<', '>']) {
            if let Ok(n) = bare[..digits].parse() {
                out.push((n, bare[digits..].trim().to_owned()));
                continue;
            }
        }
        let mut rest = line;
        while let Some(open) = rest.find('[') {
            let after = &rest[open + 1..];
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0 && after[digits..].starts_with(']') {
                if let Ok(n) = after[..digits].parse() {
                    let tail = &after[digits + 1..];
                    // Up to the next `[N]` on the same line, if any.
                    let end = next_marker(tail).unwrap_or(tail.len());
                    out.push((n, tail[..end].trim().to_owned()));
                    rest = &tail[end..];
                    continue;
                }
            }
            rest = after;
        }
    }
    out
}

fn next_marker(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find('[') {
        let at = from + i;
        let after = &s[at + 1..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && after[digits..].starts_with(']') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// An element's visible text: its description without `<…>` tags and
/// quotes, whitespace collapsed, lower-case; for an element without text
/// (a field), its name: written against the kind (`5<email="E-mail">`,
/// `6<input=Name>`) or, in the older shape, quoted in its tag
/// (`[5]<email "E-mail">`).
fn visible(desc: &str) -> String {
    // A plain link is written without its kind: `8>Pricing`.
    let desc = desc.strip_prefix('>').unwrap_or(desc);
    let mut out = String::new();
    let mut name = tag_name(desc).unwrap_or_default();
    let mut in_tag = false;
    let mut in_name = false;
    let mut prev = ' ';
    for c in desc.chars() {
        match c {
            '"' if in_tag && (in_name || prev == ' ') => in_name = !in_name,
            _ if in_name => name.push(c),
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            '"' | '\'' => out.push(' '),
            _ => out.push(c),
        }
        prev = c;
    }
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let text = norm(&out);
    if text.is_empty() { norm(&name) } else { text }
}

/// The name written against an element's kind: `Close` in `<button=Close>`,
/// `Keep me signed in` in `<checkbox="Keep me signed in" checked>`.
pub fn tag_name(desc: &str) -> Option<String> {
    let rest = desc.strip_prefix('<')?;
    let kind_end = rest.find(|c: char| c.is_whitespace() || matches!(c, '>' | '='))?;
    let after = rest[kind_end..].strip_prefix('=')?;
    let name = match after.strip_prefix('"') {
        Some(quoted) => &quoted[..quoted.find('"')?],
        None => {
            &after[..after.find(|c: char| c.is_whitespace() || c == '>').unwrap_or(after.len())]
        }
    };
    Some(name.to_owned())
}

/// The number of the element whose text is `label` in an element list:
/// an exact match of its visible text first (`[7]<button>Submit</button>`),
/// else the one element whose description mentions `label`.
pub fn element_index(text: &str, label: &str) -> Option<u32> {
    let want = label.trim().to_lowercase();
    let els = elements(text);
    if let Some((n, _)) = els.iter().find(|(_, d)| visible(d) == want) {
        return Some(*n);
    }
    let mentions: Vec<u32> = els
        .iter()
        .filter(|(_, d)| {
            visible(d).split(|c: char| !c.is_alphanumeric()).any(|w| w == want)
                || d.to_lowercase().contains(&want)
        })
        .map(|(n, _)| *n)
        .collect();
    match mentions.as_slice() {
        [n] => Some(*n),
        _ => None,
    }
}

/// [`element_index`] in the last user message of `req`, with an error that
/// quotes the message.
pub fn find_element(req: &Value, label: &str) -> Result<u32> {
    let text =
        last_user_message(req).ok_or_else(|| anyhow!("the request has no user message: {req}"))?;
    element_index(&text, label).ok_or_else(|| {
        anyhow!(
            "no element {label:?} in the request's element list; the last user message was:\n{text}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_elements_by_their_text() {
        let text = "Page: Contact\n[1]<a>Help</a>\n[2]<input type=text placeholder=\"Ada\" />\n\
                    [3]<button>Cancel</button>\n\t[14]<button>Submit</button>\nsome text\n\
                    [15]<email \"E-mail\" value=\"a@b.c\">\n[16]<button \"Close dialog\">×\n[17]<a>Details";
        assert_eq!(element_index(text, "Submit"), Some(14));
        assert_eq!(element_index(text, "cancel"), Some(3));
        assert_eq!(element_index(text, "Help"), Some(1));
        assert_eq!(element_index(text, "Nothing"), None);
        // The compact shape: a field by the name quoted in its tag.
        assert_eq!(element_index(text, "E-mail"), Some(15));
        assert_eq!(element_index(text, "Close dialog"), Some(16));
        assert_eq!(element_index(text, "details"), Some(17));
        let inline = "[1]<a>Home</a> [2]<button>Submit form</button>";
        assert_eq!(elements(inline).len(), 2);
        assert_eq!(element_index(inline, "Submit"), Some(2));
        assert_eq!(element_index("array[0] = 1; [5] button \"Submit\"", "Submit"), Some(5));
        // Errand's shape: the number at the start of the line.
        let bare = "# Sign in\n3<email value=\"a@b.c\">\n*4<button>Log in\n\"5<a>Fake\"\n12 apples";
        assert_eq!(
            elements(bare),
            vec![(3, "<email value=\"a@b.c\">".to_owned()), (4, "<button>Log in".to_owned())]
        );
        assert_eq!(element_index(bare, "log in"), Some(4));
        // Names written against the kind, and a plain link without its kind.
        let named = "3<input=Name>\n4<checkbox=\"Keep me signed in\" checked>\n5>Pricing\n\
                     6<email value=\"x@y.z\">";
        assert_eq!(element_index(named, "name"), Some(3));
        assert_eq!(element_index(named, "Keep me signed in"), Some(4));
        assert_eq!(element_index(named, "pricing"), Some(5));
        assert_eq!(tag_name("<checkbox=\"Keep me\" checked>").as_deref(), Some("Keep me"));
        assert_eq!(tag_name("<input=Name required>").as_deref(), Some("Name"));
        assert_eq!(tag_name("<email value=\"a\">"), None);
    }

    #[test]
    fn reads_messages_in_both_shapes() {
        let req = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": "{}"},
            {"role": "user", "content": [{"type": "text", "text": "[4]<button>Submit</button>"},
                                          {"type": "image_url", "image_url": {"url": "data:"}}]},
        ]});
        assert_eq!(last_user_message(&req).unwrap(), "[4]<button>Submit</button>");
        assert_eq!(find_element(&req, "Submit").unwrap(), 4);
        assert!(all_text(&req).starts_with("sys\nold"));
    }
}

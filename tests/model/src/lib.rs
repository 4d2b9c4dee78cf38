//! The scripted model: one HTTP server on 127.0.0.1 speaking the real wire
//! formats of the three provider families, answering from a test's script.
//! Both suites use it: the end-to-end suite (`errand_e2e::model` re-exports
//! this crate) and the host's integration tests (`native-host/tests/support`).
//!
//! ```no_run
//! use errand_scripted_model::{Reply, ScriptedModel, find_element};
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
//! A script is either a function of the request body and the call's number
//! ([`ScriptedModel::start`]) or a queue of replies said in order, with a
//! fallback when it runs out ([`ScriptedModel::queue`]).
//!
//! Routes:
//! - `POST /v1/chat/completions` (OpenAI-compatible): plain JSON, or
//!   server-sent events when the request says `"stream": true` (the usage in
//!   a last chunk when it asks with `stream_options.include_usage`), like the
//!   real servers;
//! - `POST /v1/messages` (Anthropic Messages): a text block, or a `tool_use`
//!   block of the answer tool for [`Reply::Tool`];
//! - `POST /v1beta/models/{model}:generateContent` (Gemini);
//! - `GET /v1/models`.
//!
//! Every request is recorded ([`ScriptedModel::seen`], the bodies alone in
//! [`ScriptedModel::requests`]). A script that panics (a failed expectation)
//! answers HTTP 500 and the panic message is kept in
//! [`ScriptedModel::failures`], as is a request to an unknown route, so the
//! test can report it.

mod read;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

pub use read::{
    all_text, content_text, element_index, elements, find_element, last_user_message, tag_name,
};

/// What the model answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The answer text (OpenAI's message `content`, Anthropic's text block,
    /// Gemini's text part).
    Content(String),
    /// The same, after a delay (the host may give up first).
    Delayed(Duration, String),
    /// An HTTP error with an OpenAI-style error body.
    Status(u16),
    /// An HTTP error with this body (JSON) and `Retry-After` header.
    Error { status: u16, retry_after: Option<String>, body: String },
    /// The answer as the input of Anthropic's answer tool (a `tool_use`
    /// block named `errand_answer`); the other formats send it as text.
    Tool(String),
    /// The answer in pieces, one every `Duration`: server-sent events when
    /// the request asked for a stream, else whole after the pieces' time.
    Streamed(Vec<String>, Duration),
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

    /// Answer with HTTP `code` and an OpenAI-style error body.
    pub fn status(code: u16) -> Reply {
        Reply::Status(code)
    }

    /// Answer with HTTP `status`, this `Retry-After` and this JSON body.
    pub fn error(status: u16, retry_after: Option<&str>, body: impl Into<String>) -> Reply {
        Reply::Error { status, retry_after: retry_after.map(str::to_owned), body: body.into() }
    }

    /// Answer through Anthropic's answer tool (text elsewhere).
    pub fn tool(input: impl Into<String>) -> Reply {
        Reply::Tool(input.into())
    }

    /// Answer in `pieces`, one every `every`.
    pub fn streamed(pieces: &[&str], every: Duration) -> Reply {
        Reply::Streamed(pieces.iter().map(|p| (*p).to_owned()).collect(), every)
    }

    /// The answer text, when this reply has one.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Content(t) | Reply::Delayed(_, t) | Reply::Tool(t) => Some(t.clone()),
            Reply::Streamed(pieces, _) => Some(pieces.concat()),
            Reply::Status(_) | Reply::Error { .. } => None,
        }
    }
}

/// The token counts the server reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// A prompt of 1000 tokens and roughly four characters of the answer per
    /// token, like the real thing on English (the end-to-end suite).
    Estimated,
    /// Fixed counts per family, so tests can assert totals: OpenAI 321 + 17,
    /// Anthropic 400 + 20, Gemini 500 + 25 (the host's tests).
    Fixed,
}

impl Usage {
    fn counts(self, family: Family, answer: &str) -> (u64, u64) {
        match (self, family) {
            (Usage::Estimated, _) => (1000, (answer.len() as u64).div_ceil(4)),
            (Usage::Fixed, Family::OpenAi) => (321, 17),
            (Usage::Fixed, Family::Anthropic) => (400, 20),
            (Usage::Fixed, Family::Gemini) => (500, 25),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Family {
    OpenAi,
    Anthropic,
    Gemini,
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it was not JSON).
    pub body: Value,
    pub raw: String,
    pub at: Instant,
}

impl Seen {
    /// A header's value (names are lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

type Script = dyn Fn(&Value, usize) -> Reply + Send + Sync;

struct ModelState {
    script: Box<Script>,
    usage: Usage,
    seen: Mutex<Vec<Seen>>,
    failures: Mutex<Vec<String>>,
}

/// A running scripted model; stopped on drop.
pub struct ScriptedModel {
    server: Server,
    state: Arc<ModelState>,
}

/// One tokio runtime for the test servers (the scripted model, the
/// fixture pages).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-http")
            .enable_all()
            .build()
            .expect("building the test servers' tokio runtime")
    })
}

/// An axum router served on a fresh port of 127.0.0.1 in the test servers'
/// runtime; stopped on drop.
pub struct Server {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    /// Serves `router` on a fresh port of 127.0.0.1.
    pub fn start(router: axum::Router) -> Result<Server> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding a port on 127.0.0.1")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = runtime();
        let listener = {
            let _guard = rt.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let task = rt.spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                eprintln!("the test server on {addr} stopped: {e}");
            }
        });
        Ok(Server { addr, task })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedModel {
    /// Starts the server. `script(request_body, call_index)` decides each
    /// answer; `call_index` counts model requests from 0. Token counts are
    /// [`Usage::Estimated`].
    pub fn start(script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> Result<Self> {
        Self::start_with(Usage::Estimated, script)
    }

    /// Starts a server saying `replies` in order, then `fallback` for every
    /// further request. Token counts are [`Usage::Fixed`].
    pub fn queue(replies: Vec<Reply>, fallback: &str) -> Result<Self> {
        let replies = Mutex::new(VecDeque::from(replies));
        let fallback = fallback.to_owned();
        Self::start_with(Usage::Fixed, move |_, _| {
            lock(&replies).pop_front().unwrap_or_else(|| Reply::content(fallback.clone()))
        })
    }

    /// [`ScriptedModel::start`] with these token counts.
    pub fn start_with(
        usage: Usage,
        script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static,
    ) -> Result<Self> {
        let state = Arc::new(ModelState {
            script: Box::new(script),
            usage,
            seen: Mutex::new(Vec::new()),
            failures: Mutex::new(Vec::new()),
        });
        let router = axum::Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .route("/v1beta/models/{model}", post(gemini))
            .route("/v1/models", get(models))
            .fallback(unknown)
            .with_state(Arc::clone(&state));
        Ok(ScriptedModel { server: Server::start(router)?, state })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// `http://127.0.0.1:PORT` (add the family's path: `/v1`, `/v1beta`).
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// The OpenAI-compatible base URL to configure (`ERRAND_BASE_URL`):
    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.server.addr)
    }

    /// Every model request so far, in order, with its path and headers.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.state.seen).clone()
    }

    /// Every model request body so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.state.seen).iter().map(|s| s.body.clone()).collect()
    }

    /// How many model requests arrived.
    pub fn request_count(&self) -> usize {
        lock(&self.state.seen).len()
    }

    /// Waits until at least `n` model requests arrived; returns them all.
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

/// Records the request and asks the script; `Err` is the response to send
/// as it is (an error).
#[allow(clippy::result_large_err)] // a response, sent at once
fn ask(
    state: &ModelState,
    path: String,
    headers: &HeaderMap,
    raw: String,
) -> Result<(Value, usize, Reply), Response> {
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let headers = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let call = {
        let mut seen = lock(&state.seen);
        seen.push(Seen { path, headers, body: body.clone(), raw: raw.clone(), at: Instant::now() });
        seen.len() - 1
    };
    if body.is_null() {
        let msg = format!("call {call}: the request body is not JSON: {raw}");
        lock(&state.failures).push(msg.clone());
        return Err(openai_error(400, &msg));
    }
    match std::panic::catch_unwind(AssertUnwindSafe(|| (state.script)(&body, call))) {
        Ok(reply) => Ok((body, call, reply)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "the script panicked".into());
            let msg = format!("call {call}: {msg}");
            lock(&state.failures).push(msg.clone());
            Err(openai_error(500, &msg))
        }
    }
}

/// What a reply says, how: whole text, the answer tool's input, or pieces.
enum Said {
    Text(String),
    Tool(String),
    Pieces(Vec<String>, Duration),
}

/// Waits as the reply says and turns errors into their responses.
async fn said(reply: Reply) -> Result<Said, Response> {
    match reply {
        Reply::Content(t) => Ok(Said::Text(t)),
        Reply::Delayed(d, t) => {
            tokio::time::sleep(d).await;
            Ok(Said::Text(t))
        }
        Reply::Tool(t) => Ok(Said::Tool(t)),
        Reply::Streamed(p, every) => Ok(Said::Pieces(p, every)),
        Reply::Status(code) => Err(openai_error(code, "scripted error")),
        Reply::Error { status, retry_after, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut resp = (status, body).into_response();
            if let Some(r) = retry_after.and_then(|r| r.parse().ok()) {
                resp.headers_mut().insert(header::RETRY_AFTER, r);
            }
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
            Err(resp)
        }
    }
}

/// The whole text, after the pieces' time when it came in pieces.
async fn whole(said: Said) -> String {
    match said {
        Said::Text(t) | Said::Tool(t) => t,
        Said::Pieces(pieces, every) => {
            tokio::time::sleep(every * u32::try_from(pieces.len()).unwrap_or(1)).await;
            pieces.concat()
        }
    }
}

fn created() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

async fn openai(State(state): State<Arc<ModelState>>, headers: HeaderMap, raw: String) -> Response {
    let (req, call, reply) = match ask(&state, "/v1/chat/completions".into(), &headers, raw) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let said = match said(reply).await {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let model = req["model"].as_str().unwrap_or("scripted").to_owned();
    if req["stream"].as_bool().unwrap_or(false) {
        let include_usage = req["stream_options"]["include_usage"].as_bool().unwrap_or(false);
        let (pieces, every) = match said {
            Said::Pieces(p, every) => (p, every),
            Said::Text(t) | Said::Tool(t) => (vec![t], Duration::ZERO),
        };
        return sse(state.usage, call, &model, pieces, every, include_usage);
    }
    let content = whole(said).await;
    let (prompt, completion) = state.usage.counts(Family::OpenAi, &content);
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

/// OpenAI-compatible server-sent events: a role chunk, one chunk per piece
/// (`every` apart), a finish chunk, the usage chunk when asked for, `[DONE]`.
fn sse(
    usage: Usage,
    call: usize,
    model: &str,
    pieces: Vec<String>,
    every: Duration,
    include_usage: bool,
) -> Response {
    let id = format!("chatcmpl-scripted-{call}");
    let created = created();
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    };
    let (prompt, completion) = usage.counts(Family::OpenAi, &pieces.concat());
    let mut events =
        vec![(Duration::ZERO, chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
    events.extend(pieces.into_iter().map(|p| (every, chunk(json!({"content": p}), Value::Null))));
    events.push((Duration::ZERO, chunk(json!({}), json!("stop"))));
    if include_usage {
        events.push((
            Duration::ZERO,
            json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion},
            }),
        ));
    }
    let mut lines: Vec<(Duration, String)> =
        events.into_iter().map(|(d, e)| (d, format!("data: {e}\n\n"))).collect();
    lines.push((Duration::ZERO, "data: [DONE]\n\n".to_owned()));
    let sse_headers = [
        (header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream")),
        (header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache")),
    ];
    if every.is_zero() {
        // Nothing to wait for: one body with a length, like a fast server.
        let body: String = lines.into_iter().map(|(_, l)| l).collect();
        return (sse_headers, body).into_response();
    }
    let stream = futures_util::stream::unfold(lines.into_iter(), |mut rest| async move {
        let (wait, line) = rest.next()?;
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Some((Ok::<_, std::convert::Infallible>(line), rest))
    });
    (sse_headers, axum::body::Body::from_stream(stream)).into_response()
}

async fn anthropic(
    State(state): State<Arc<ModelState>>,
    headers: HeaderMap,
    raw: String,
) -> Response {
    let (req, call, reply) = match ask(&state, "/v1/messages".into(), &headers, raw) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let said = match said(reply).await {
        Ok(s) => s,
        Err(resp) => return resp,
    };
    let model = req["model"].as_str().unwrap_or("scripted").to_owned();
    let (content, stop, text) = match said {
        Said::Tool(input) => {
            let value =
                serde_json::from_str::<Value>(&input).unwrap_or(Value::String(input.clone()));
            let block = json!({"type": "tool_use", "id": format!("toolu_scripted_{call}"),
                               "name": "errand_answer", "input": value});
            (block, "tool_use", input)
        }
        other => {
            let text = whole(other).await;
            (json!({"type": "text", "text": text}), "end_turn", text)
        }
    };
    let (input, output) = state.usage.counts(Family::Anthropic, &text);
    Json(json!({
        "id": format!("msg_scripted_{call}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [content],
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output},
    }))
    .into_response()
}

async fn gemini(
    State(state): State<Arc<ModelState>>,
    Path(model): Path<String>,
    headers: HeaderMap,
    raw: String,
) -> Response {
    let (_, _, reply) = match ask(&state, format!("/v1beta/models/{model}"), &headers, raw) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let text = match said(reply).await {
        Ok(s) => whole(s).await,
        Err(resp) => return resp,
    };
    let (prompt, answer) = state.usage.counts(Family::Gemini, &text);
    Json(json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": answer,
                          "totalTokenCount": prompt + answer},
        "modelVersion": "scripted",
    }))
    .into_response()
}

fn openai_error(code: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body =
        json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}});
    (status, Json(body)).into_response()
}

async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "errand-tests"}],
    }))
}

async fn unknown(State(state): State<Arc<ModelState>>, uri: Uri) -> Response {
    let msg = format!("request to an unknown route {uri}");
    lock(&state.failures).push(msg.clone());
    openai_error(404, &msg)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

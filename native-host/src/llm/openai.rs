//! OpenAI-compatible chat completions: `POST {base_url}/chat/completions`
//! with a bearer key; `choices[0].message.content`, `usage.prompt_tokens` /
//! `completion_tokens`.
//!
//! A message with an image is sent as content parts — the text, then
//! `{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,…"}}`;
//! every other message keeps a plain string `content`, which servers
//! without vision read.
//!
//! The agent's answer is asked for with `response_format: {"type":
//! "json_schema", …}` (strict, [`super::schema::Flavour::OpenAiStrict`]) when
//! structured output is on. Answers are streamed (`stream: true`, usage in the
//! last chunk) when streaming is on: the timeout then runs between chunks, so
//! a slow local model is not cut off while its tokens flow, and a stop
//! closes the connection at once. A server that answers plain JSON anyway
//! is read as such.

use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::schema::{self, AnswerSchema, Flavour};
use super::{
    ChatMessage, Completion, Expect, Feature, Http, Image, LlmError, Reply, Role, Usage, excerpt,
};
use crate::config::Settings;

/// What a 404 most often means here.
const NOT_FOUND_HINT: &str =
    "Check the model name and that base_url ends where /chat/completions begins (often …/v1)";

/// Words of an HTTP 400 refusing `response_format`.
const STRUCTURED_WORDS: &[&str] = &["response_format", "json_schema", "response format"];
/// Words of an HTTP 400 refusing streaming.
const STREAM_WORDS: &[&str] = &["stream"];

/// `POST {base_url}/chat/completions`.
#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    http: Http,
    structured: Feature,
    stream: Feature,
}

/// The request body.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    temperature: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

/// `{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}`.
#[derive(Debug, Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: NamedSchema,
}

#[derive(Debug, Serialize)]
struct NamedSchema {
    name: &'static str,
    strict: bool,
    schema: &'static AnswerSchema,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl ChatRequest<'_> {
    /// Whether a message carries an image.
    pub fn has_images(&self) -> bool {
        self.messages.iter().any(|m| matches!(m.content, Content::Parts(_)))
    }
}

/// One message as sent.
#[derive(Debug, Serialize)]
struct WireMessage<'a> {
    role: Role,
    content: Content<'a>,
}

/// A plain string, or parts when there are images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Part>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

impl<'a> WireMessage<'a> {
    fn new(message: &'a ChatMessage, images: &[Image<'_>]) -> Self {
        let content = if images.is_empty() {
            Content::Text(&message.content)
        } else {
            let mut parts = vec![Part::Text { text: message.content.clone() }];
            parts.extend(
                images.iter().map(|i| Part::ImageUrl { image_url: ImageUrl { url: i.data_url() } }),
            );
            Content::Parts(parts)
        };
        WireMessage { role: message.role, content }
    }
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    /// A strict-mode refusal (instead of content).
    #[serde(default)]
    refusal: Option<String>,
}

/// One streamed chunk.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Usage>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

impl OpenAiCompatible {
    /// A provider for the configured server and model.
    pub fn new(settings: &Settings) -> Self {
        let structured = super::structured_wanted(settings);
        OpenAiCompatible {
            http: Http::new(settings),
            structured: Feature::new("structured output", structured, STRUCTURED_WORDS),
            stream: Feature::new("streaming", settings.stream, STREAM_WORDS),
        }
    }

    /// `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.http.base_url)
    }

    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.http.api_key {
            Some(key) => req.bearer_auth(key),
            None => req,
        }
    }

    /// The request body: only the newest message with images carries them
    /// (see [`super::images_to_send`]); a malformed image is an error.
    pub fn body<'a>(&'a self, messages: &'a [ChatMessage]) -> Result<ChatRequest<'a>, LlmError> {
        let images = super::images_to_send(messages)?;
        let messages = messages.iter().zip(&images).map(|(m, i)| WireMessage::new(m, i)).collect();
        Ok(ChatRequest {
            model: &self.http.model,
            messages,
            temperature: 0.0,
            response_format: None,
            stream: false,
            stream_options: None,
        })
    }

    /// The request body for a call expecting `expect`, with the answer's
    /// schema and streaming as they are on now.
    pub fn body_for<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        expect: Expect,
    ) -> Result<ChatRequest<'a>, LlmError> {
        let mut body = self.body(messages)?;
        if expect == Expect::Answer && self.structured.on() {
            body.response_format = Some(ResponseFormat {
                kind: "json_schema",
                json_schema: NamedSchema {
                    name: schema::NAME,
                    strict: true,
                    schema: schema::answer(Flavour::OpenAiStrict),
                },
            });
        }
        if self.stream.on() {
            body.stream = true;
            body.stream_options = Some(StreamOptions { include_usage: true });
        }
        Ok(body)
    }

    async fn call(&self, messages: &[ChatMessage], expect: Expect) -> Result<Completion, LlmError> {
        // A server refusing the schema or streaming is asked again without
        // (each at most once a session).
        let features: &[&Feature] = if expect == Expect::Answer {
            &[&self.structured, &self.stream]
        } else {
            &[&self.stream]
        };
        super::retry_refused(features, || self.attempt(messages, expect)).await
    }

    async fn attempt(
        &self,
        messages: &[ChatMessage],
        expect: Expect,
    ) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let body = self.body_for(messages, expect)?;
        let req = self.authed(self.http.client.post(&url).json(&body));
        if body.stream {
            return self.streamed(req, &url, body.has_images()).await;
        }
        let reply = self.http.send(req).await?;
        if !(200..300).contains(&reply.status) {
            return Err(self.http.status_error(&reply, &url, NOT_FOUND_HINT, body.has_images()));
        }
        read_reply(&reply.body)
    }

    /// Sends a streaming request: the answer's headers within the timeout,
    /// then each chunk within the timeout of the one before.
    async fn streamed(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
        sent_images: bool,
    ) -> Result<Completion, LlmError> {
        let wait = self.http.timeout;
        let timeout =
            || LlmError::Timeout { base_url: self.http.base_url.clone(), secs: wait.as_secs() };
        let resp = tokio::time::timeout(wait, req.send())
            .await
            .map_err(|_| timeout())?
            .map_err(|e| self.http.transport_error(e))?;
        let status = resp.status().as_u16();
        let event_stream = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !(200..300).contains(&status) || !event_stream {
            // An error, or a server that does not stream: one whole body.
            let retry_after = super::retry_after(resp.headers());
            let body = tokio::time::timeout(wait, resp.text())
                .await
                .map_err(|_| timeout())?
                .map_err(|e| self.http.transport_error(e))?;
            if !(200..300).contains(&status) {
                let reply = Reply { status, retry_after, body };
                return Err(self.http.status_error(&reply, url, NOT_FOUND_HINT, sent_images));
            }
            return read_reply(&body);
        }
        let stalled =
            || LlmError::Stalled { base_url: self.http.base_url.clone(), secs: wait.as_secs() };
        let mut events = eventsource_stream::Eventsource::eventsource(resp.bytes_stream());
        let mut answer = StreamedAnswer::default();
        loop {
            let event = match tokio::time::timeout(wait, events.next()).await {
                Err(_) => return Err(stalled()),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(LlmError::BadResponse(format!("the answer's stream broke: {e}")));
                }
                Ok(Some(Ok(event))) => event,
            };
            if answer.add(&event.data)? {
                break;
            }
        }
        answer.finish()
    }
}

/// Reads a whole (not streamed) chat completion.
fn read_reply(text: &str) -> Result<Completion, LlmError> {
    let parsed: ChatResponse = serde_json::from_str(text)
        .map_err(|e| LlmError::BadResponse(format!("{e}; body: {}", excerpt(text))))?;
    let message = parsed.choices.into_iter().next().map(|c| c.message).ok_or_else(|| {
        LlmError::BadResponse(format!("no message in `choices`; body: {}", excerpt(text)))
    })?;
    match (message.content, message.refusal) {
        (Some(content), _) if !content.is_empty() => {
            Ok(Completion { text: content, usage: parsed.usage })
        }
        (_, Some(refusal)) if !refusal.is_empty() => {
            Err(LlmError::BadResponse(format!("the model refused to answer: {refusal}")))
        }
        (Some(content), _) => Ok(Completion { text: content, usage: parsed.usage }),
        (None, _) => {
            Err(LlmError::BadResponse(format!("no message in `choices`; body: {}", excerpt(text))))
        }
    }
}

/// A streamed answer put together chunk by chunk.
#[derive(Debug, Default)]
pub struct StreamedAnswer {
    text: String,
    refusal: String,
    usage: Option<Usage>,
    chunks: usize,
}

impl StreamedAnswer {
    /// Adds one event's data; `true` at `[DONE]`.
    pub fn add(&mut self, data: &str) -> Result<bool, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            LlmError::BadResponse(format!(
                "a streamed chunk could not be read: {e}; {}",
                excerpt(data)
            ))
        })?;
        if let Some(error) = chunk.error {
            let message = error.get("message").and_then(|m| m.as_str()).map(str::to_owned);
            return Err(LlmError::BadResponse(format!(
                "the model server failed while answering: {}",
                message.unwrap_or_else(|| excerpt(&error.to_string()))
            )));
        }
        self.chunks += 1;
        if let Some(delta) = chunk.choices.into_iter().next().map(|c| c.delta) {
            self.text.push_str(delta.content.as_deref().unwrap_or_default());
            self.refusal.push_str(delta.refusal.as_deref().unwrap_or_default());
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        Ok(false)
    }

    /// The whole answer.
    pub fn finish(self) -> Result<Completion, LlmError> {
        if self.text.is_empty() && !self.refusal.is_empty() {
            return Err(LlmError::BadResponse(format!(
                "the model refused to answer: {}",
                self.refusal
            )));
        }
        if self.chunks == 0 {
            return Err(LlmError::BadResponse("the answer's stream was empty".to_owned()));
        }
        Ok(Completion { text: self.text, usage: self.usage })
    }
}

impl OpenAiCompatible {
    fn status_error(&self, reply: &Reply, url: &str) -> LlmError {
        self.http.status_error(reply, url, NOT_FOUND_HINT, false)
    }
}

/// What `errand doctor` learned from the model server.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// `GET /models` answered and lists the configured model.
    Listed,
    /// `GET /models` answered without the configured model; the first few it lists.
    NotListed(Vec<String>),
    /// `/models` gave nothing useful, but a one-token chat completion worked.
    Answered,
}

impl OpenAiCompatible {
    /// Checks that the server answers and knows the model: `GET {base_url}/models`
    /// with a short timeout, else a one-token chat completion.
    pub async fn probe(&self, timeout: Duration) -> Result<Probe, LlmError> {
        let req = self
            .authed(self.http.client.get(format!("{}/models", self.http.base_url)))
            .timeout(timeout);
        match req.send().await {
            Ok(resp) if resp.status().is_success() => {
                let ids: Vec<String> = resp
                    .json::<serde_json::Value>()
                    .await
                    .ok()
                    .and_then(|v| v.get("data").and_then(|d| d.as_array()).cloned())
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|m| m.get("id").and_then(|i| i.as_str()).map(str::to_owned))
                    .collect();
                let known = |id: &String| {
                    id == &self.http.model
                        || id.strip_suffix(":latest") == Some(self.http.model.as_str())
                };
                if ids.iter().any(known) {
                    return Ok(Probe::Listed);
                }
                if !ids.is_empty() {
                    return Ok(Probe::NotListed(ids.into_iter().take(8).collect()));
                }
            }
            Ok(resp) if matches!(resp.status().as_u16(), 401 | 403) => {
                let status = resp.status().as_u16();
                let body = resp.text().await.unwrap_or_default();
                return Err(LlmError::BadKey { status, excerpt: excerpt(&body) });
            }
            Ok(_) => {}
            Err(e) if e.is_connect() => return Err(self.http.transport_error(e)),
            Err(_) => {}
        }
        // Some servers have no /models: try the smallest real call.
        let url = self.endpoint();
        let body = serde_json::json!({
            "model": self.http.model,
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 1,
            "temperature": 0,
        });
        let req = self
            .authed(self.http.client.post(&url))
            .timeout(timeout.max(Duration::from_secs(20)))
            .json(&body);
        let resp = req.send().await.map_err(|e| self.http.transport_error(e))?;
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            Ok(Probe::Answered)
        } else {
            let retry_after = super::retry_after(resp.headers());
            let body = resp.text().await.unwrap_or_default();
            Err(self.status_error(&Reply { status, retry_after, body }, &url))
        }
    }
}

super::http_provider!(OpenAiCompatible);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, Settings};
    use crate::llm::Provider;
    use tokio_util::sync::CancellationToken;

    fn settings(base_url: Option<&str>) -> Settings {
        let flags = Overrides {
            base_url: base_url.map(str::to_owned),
            timeout_secs: Some(5),
            ..Default::default()
        };
        Settings::resolve(Default::default(), &|_| None, &flags, "/c".into(), "/d".into()).unwrap()
    }

    #[tokio::test]
    async fn an_unreachable_default_server_says_how_to_configure() {
        // Port 9 (discard) on localhost: nothing listens there.
        let mut s = settings(None);
        s.base_url = "http://127.0.0.1:9/v1".into();
        let p = OpenAiCompatible::new(&s);
        let err =
            p.complete(&[ChatMessage::user("hi")], &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");
        assert!(err.is_fatal());
        let text = err.to_string();
        assert!(text.contains("Ollama") && text.contains("ERRAND_BASE_URL"), "{text}");
    }

    #[tokio::test]
    async fn cancels_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accept and never answer.
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                held.push(sock);
            }
        });
        let p = OpenAiCompatible::new(&settings(Some(&format!("http://{addr}/v1"))));
        let token = CancellationToken::new();
        let t2 = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            t2.cancel();
        });
        let started = std::time::Instant::now();
        let msgs = [ChatMessage::user("hi")];
        let err = p.complete(&msgs, &token).await.unwrap_err();
        assert!(matches!(err, LlmError::Cancelled), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn classifies_statuses() {
        let p = OpenAiCompatible::new(&settings(Some("http://x/v1")));
        let url = p.endpoint();
        assert_eq!(url, "http://x/v1/chat/completions");
        let r = |status: u16, body: &str| Reply { status, retry_after: None, body: body.into() };
        assert!(matches!(
            p.status_error(&r(401, "{\"error\":\"bad key\"}"), &url),
            LlmError::BadKey { status: 401, .. }
        ));
        let e = p.status_error(&r(404, "model 'nope' not found"), &url);
        assert!(e.to_string().contains("model") && e.to_string().contains("not found"), "{e}");
        assert!(matches!(p.status_error(&r(429, ""), &url), LlmError::RateLimited { .. }));
        let e = p.status_error(&r(503, "overloaded\n  try later"), &url);
        assert_eq!(e.to_string(), "the model server failed (HTTP 503): overloaded try later");
        assert!(!e.is_fatal());
    }

    #[test]
    fn a_message_with_an_image_is_sent_as_parts_and_the_rest_as_strings() {
        let p = OpenAiCompatible::new(&settings(Some("http://x/v1")));
        let mut step = ChatMessage::user("[1]<button>Go</button>");
        step.images.push(crate::llm::test_jpeg(7));
        let mut old = ChatMessage::user("an earlier step");
        old.images.push(crate::llm::test_jpeg(1));
        let messages =
            [ChatMessage::system("sys"), old, ChatMessage::assistant("{}"), step.clone()];
        let body = p.body(&messages).unwrap();
        assert!(body.has_images());
        let v = serde_json::to_value(&body).unwrap();
        assert_eq!(v["messages"][0], serde_json::json!({"role": "system", "content": "sys"}));
        // The earlier step's screenshot is not sent again.
        assert_eq!(v["messages"][1]["content"], "an earlier step");
        assert_eq!(v["messages"][2], serde_json::json!({"role": "assistant", "content": "{}"}));
        assert_eq!(
            v["messages"][3],
            serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": "[1]<button>Go</button>"},
                {"type": "image_url", "image_url": {"url": crate::llm::test_jpeg(7)}},
            ]})
        );
        assert!(v["messages"][3].get("images").is_none());
        // Without images: every content a string.
        let hi = [ChatMessage::user("hi")];
        let plain = p.body(&hi).unwrap();
        assert!(!plain.has_images());
        assert_eq!(serde_json::to_value(&plain).unwrap()["messages"][0]["content"], "hi");
        // A malformed image is refused, not sent.
        step.images = vec!["data:image/jpeg;base64,!!".into()];
        assert!(matches!(p.body(&[step]), Err(LlmError::BadImage(_))));
    }

    #[tokio::test]
    async fn a_server_without_vision_gets_a_clear_error() {
        use axum::routing::post;
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(|| async {
                (
                    axum::http::StatusCode::BAD_REQUEST,
                    r#"{"error":{"message":"Invalid content type. image_url is only supported by certain models.","type":"invalid_request_error"}}"#,
                )
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let mut s = settings(Some(&format!("http://{addr}/v1")));
        s.model = "text-only-1".into();
        let p = OpenAiCompatible::new(&s);
        let mut step = ChatMessage::user("look");
        step.images.push(crate::llm::test_jpeg(1));
        let err = p.complete(&[step], &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, LlmError::NoVision { .. }), "{err:?}");
        assert!(err.is_fatal());
        assert!(
            err.to_string().starts_with(
                "the model text-only-1 does not accept images: turn vision off in the settings or pick a vision model"
            ),
            "{err}"
        );
    }

    #[test]
    fn streamed_chunks_are_joined_with_the_usage_and_failures_are_clear() {
        let mut a = StreamedAnswer::default();
        let chunk =
            |c: &str| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":{c:?}}}}}]}}"#);
        assert!(
            !a.add(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#)
                .unwrap()
        );
        assert!(!a.add(&chunk("{\"actions\": ")).unwrap());
        assert!(!a.add(&chunk("[]}")).unwrap());
        assert!(
            !a.add(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#).unwrap()
        );
        assert!(a.add(" [DONE] ").unwrap());
        let c = a.finish().unwrap();
        assert_eq!(c.text, "{\"actions\": []}");
        assert_eq!(c.usage, Some(Usage { prompt_tokens: 5, completion_tokens: 2 }));

        let mut refused = StreamedAnswer::default();
        refused.add(r#"{"choices":[{"index":0,"delta":{"refusal":"I can't"}}]}"#).unwrap();
        assert!(refused.finish().unwrap_err().to_string().contains("refused to answer: I can't"));
        let mut failed = StreamedAnswer::default();
        let e = failed.add(r#"{"error":{"message":"out of memory"}}"#).unwrap_err();
        assert!(e.to_string().contains("failed while answering: out of memory"), "{e}");
        assert!(StreamedAnswer::default().finish().is_err(), "an empty stream");
        assert!(StreamedAnswer::default().add("not json").is_err());
    }

    #[tokio::test]
    async fn a_stream_that_stops_flowing_fails_after_the_timeout() {
        use axum::routing::post;
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            post(|| async {
                let first = r#"data: {"choices":[{"index":0,"delta":{"content":"{"}}]}"#.to_owned();
                let stream = futures_util::stream::unfold(0, move |n| {
                    let first = first.clone();
                    async move {
                        match n {
                            0 => {
                                Some((Ok::<_, std::convert::Infallible>(format!("{first}\n\n")), 1))
                            }
                            _ => {
                                tokio::time::sleep(Duration::from_secs(30)).await;
                                None
                            }
                        }
                    }
                });
                ([("content-type", "text/event-stream")], axum::body::Body::from_stream(stream))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let mut s = settings(Some(&format!("http://{addr}/v1")));
        s.timeout = Duration::from_secs(1);
        let p = OpenAiCompatible::new(&s);
        let started = std::time::Instant::now();
        let err =
            p.complete(&[ChatMessage::user("hi")], &CancellationToken::new()).await.unwrap_err();
        assert!(matches!(err, LlmError::Stalled { secs: 1, .. }), "{err:?}");
        assert!(err.to_string().contains("stopped sending its answer for 1 s"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn the_schema_goes_only_with_the_agents_answer_and_only_when_on() {
        let p = OpenAiCompatible::new(&settings(Some("http://127.0.0.1:1/v1")));
        let hi = [ChatMessage::user("hi")];
        let v = serde_json::to_value(p.body_for(&hi, Expect::Answer).unwrap()).unwrap();
        assert_eq!(v["response_format"]["json_schema"]["strict"], true);
        assert_eq!(v["stream"], true);
        let v = serde_json::to_value(p.body_for(&hi, Expect::Text).unwrap()).unwrap();
        assert!(v.get("response_format").is_none());
        // A remote server not known to support it: off in auto.
        let mut s = settings(Some("https://api.deepseek.com/v1"));
        s.model = "deepseek-chat".into();
        s.stream = false;
        let p = OpenAiCompatible::new(&s);
        let v = serde_json::to_value(p.body_for(&hi, Expect::Answer).unwrap()).unwrap();
        assert!(v.get("response_format").is_none() && v.get("stream").is_none(), "{v}");
        s.structured = crate::config::Switch::On;
        let v =
            serde_json::to_value(OpenAiCompatible::new(&s).body_for(&hi, Expect::Answer).unwrap())
                .unwrap();
        assert!(v.get("response_format").is_some());
    }

    #[test]
    fn excerpts_are_short() {
        use crate::llm::excerpt;
        let long = "x".repeat(1000);
        assert_eq!(excerpt(&long).chars().count(), 301);
        assert_eq!(excerpt(""), "(empty body)");
    }
}

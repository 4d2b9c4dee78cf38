//! OpenAI-compatible chat completions: `POST {base_url}/chat/completions`
//! with a bearer key; `choices[0].message.content`, `usage.prompt_tokens` /
//! `completion_tokens`.
//!
//! A message with an image is sent as content parts — the text, then
//! `{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,…"}}`;
//! every other message keeps a plain string `content`, which servers
//! without vision read.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ChatMessage, Completion, Http, Image, LlmError, Reply, Role, Usage, excerpt};
use crate::config::Settings;

/// What a 404 most often means here.
const NOT_FOUND_HINT: &str =
    "Check the model name and that base_url ends where /chat/completions begins (often …/v1)";

/// `POST {base_url}/chat/completions`.
#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    http: Http,
}

/// The request body.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    temperature: f32,
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
}

impl OpenAiCompatible {
    /// A provider for the configured server and model.
    pub fn new(settings: &Settings) -> Self {
        OpenAiCompatible { http: Http::new(settings) }
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
        let messages =
            messages.iter().zip(&images).map(|(m, i)| WireMessage::new(m, i)).collect();
        Ok(ChatRequest { model: &self.http.model, messages, temperature: 0.0 })
    }

    async fn call(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let body = self.body(messages)?;
        let reply = self.http.send(self.authed(self.http.client.post(&url).json(&body))).await?;
        if !(200..300).contains(&reply.status) {
            return Err(self.http.status_error(&reply, &url, NOT_FOUND_HINT, body.has_images()));
        }
        let text = reply.body;
        let parsed: ChatResponse = serde_json::from_str(&text)
            .map_err(|e| LlmError::BadResponse(format!("{e}; body: {}", excerpt(&text))))?;
        let content =
            parsed.choices.into_iter().next().and_then(|c| c.message.content).ok_or_else(|| {
                LlmError::BadResponse(format!("no message in `choices`; body: {}", excerpt(&text)))
            })?;
        Ok(Completion { text: content, usage: parsed.usage })
    }

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
    use crate::llm::Provider;
    use tokio_util::sync::CancellationToken;
    use crate::config::{Overrides, Settings};

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
    fn excerpts_are_short() {
        use crate::llm::excerpt;
        let long = "x".repeat(1000);
        assert_eq!(excerpt(&long).chars().count(), 301);
        assert_eq!(excerpt(""), "(empty body)");
    }
}

//! Model providers. One adapter for now: OpenAI-compatible chat completions
//! (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter…).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// Tokens a call used, when the server says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub usage: Option<Usage>,
}

/// Why a model call failed. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the model server at {base_url}: {reason}. {hint}")]
    Unreachable {
        base_url: String,
        reason: String,
        hint: String,
    },
    #[error(
        "the model server at {base_url} did not answer within {secs} s (raise timeout_secs under [model] or ERRAND_TIMEOUT_SECS)"
    )]
    Timeout { base_url: String, secs: u64 },
    #[error(
        "the model server refused the API key (HTTP {status}): {excerpt}. Check api_key / ERRAND_API_KEY / --api-key"
    )]
    BadKey { status: u16, excerpt: String },
    #[error(
        "model `{model}` or endpoint {url} not found (HTTP 404): {excerpt}. Check the model name and that base_url ends where /chat/completions begins (often …/v1)"
    )]
    NotFound {
        model: String,
        url: String,
        excerpt: String,
    },
    #[error("the model server is rate limiting (HTTP 429): {excerpt}")]
    RateLimited { excerpt: String },
    #[error("the model server failed (HTTP {status}): {excerpt}")]
    Server { status: u16, excerpt: String },
    #[error("the model server answered HTTP {status}: {excerpt}")]
    Status { status: u16, excerpt: String },
    #[error("the model server's answer could not be read: {0}")]
    BadResponse(String),
    #[error("the model call was cancelled")]
    Cancelled,
}

impl LlmError {
    /// Whether trying again cannot help (the task should end at once).
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            LlmError::Unreachable { .. } | LlmError::BadKey { .. } | LlmError::NotFound { .. }
        )
    }
}

/// A boxed future, so that providers can live behind `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat model.
pub trait Provider: Send + Sync {
    /// The model's name, for logs and status.
    fn model(&self) -> &str;

    /// Sends the conversation and returns the answer. Ends with
    /// [`LlmError::Cancelled`] as soon as `cancel` fires.
    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

/// `POST {base_url}/chat/completions`.
#[derive(Clone)]
pub struct OpenAiCompatible {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
    unreachable_hint: String,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f32,
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
        let hint = if settings.is_default_model_server() {
            format!(
                "No model is configured, so Errand tried a local Ollama: start it (`ollama serve`, \
                 then `ollama pull {}`) or use another model: {}",
                settings.model,
                settings.how_to_configure()
            )
        } else {
            format!(
                "Is the server running? To use another one: {}",
                settings.how_to_configure()
            )
        };
        OpenAiCompatible {
            client: reqwest::Client::new(),
            base_url: settings.base_url.clone(),
            model: settings.model.clone(),
            api_key: settings.api_key.clone(),
            timeout: settings.timeout,
            unreachable_hint: hint,
        }
    }

    /// `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    async fn call(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let body = ChatRequest {
            model: &self.model,
            messages,
            temperature: 0.0,
        };
        let mut req = self.client.post(&url).timeout(self.timeout).json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| self.transport_error(e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| self.transport_error(e))?;
        if !status.is_success() {
            return Err(self.status_error(status.as_u16(), &url, &text));
        }
        let parsed: ChatResponse = serde_json::from_str(&text)
            .map_err(|e| LlmError::BadResponse(format!("{e}; body: {}", excerpt(&text))))?;
        let content = parsed
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| {
                LlmError::BadResponse(format!("no message in `choices`; body: {}", excerpt(&text)))
            })?;
        Ok(Completion {
            text: content,
            usage: parsed.usage,
        })
    }

    fn transport_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout {
                base_url: self.base_url.clone(),
                secs: self.timeout.as_secs(),
            }
        } else if e.is_connect() || e.is_request() {
            LlmError::Unreachable {
                base_url: self.base_url.clone(),
                reason: root_cause(&e),
                hint: self.unreachable_hint.clone(),
            }
        } else {
            LlmError::BadResponse(error_chain(&e))
        }
    }

    fn status_error(&self, status: u16, url: &str, body: &str) -> LlmError {
        let excerpt = excerpt(body);
        match status {
            401 | 403 => LlmError::BadKey { status, excerpt },
            404 => LlmError::NotFound {
                model: self.model.clone(),
                url: url.to_owned(),
                excerpt,
            },
            429 => LlmError::RateLimited { excerpt },
            500..=599 => LlmError::Server { status, excerpt },
            _ => LlmError::Status { status, excerpt },
        }
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
        let mut req = self
            .client
            .get(format!("{}/models", self.base_url))
            .timeout(timeout);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
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
                    id == &self.model || id.strip_suffix(":latest") == Some(self.model.as_str())
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
                return Err(LlmError::BadKey {
                    status,
                    excerpt: excerpt(&body),
                });
            }
            Ok(_) => {}
            Err(e) if e.is_connect() => return Err(self.transport_error(e)),
            Err(_) => {}
        }
        // Some servers have no /models: try the smallest real call.
        let url = self.endpoint();
        let body = serde_json::json!({
            "model": self.model,
            "messages": [{"role": "user", "content": "Say OK."}],
            "max_tokens": 1,
            "temperature": 0,
        });
        let mut req = self
            .client
            .post(&url)
            .timeout(timeout.max(Duration::from_secs(20)))
            .json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().await.map_err(|e| self.transport_error(e))?;
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            Ok(Probe::Answered)
        } else {
            let text = resp.text().await.unwrap_or_default();
            Err(self.status_error(status, &url, &text))
        }
    }
}

impl Provider for OpenAiCompatible {
    fn model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(LlmError::Cancelled),
                r = self.call(messages) => r,
            }
        })
    }
}

/// The first 300 characters of a body, on one line.
pub fn excerpt(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return "(empty body)".to_owned();
    }
    let mut out: String = one_line.chars().take(300).collect();
    if one_line.chars().count() > 300 {
        out.push('…');
    }
    out
}

/// The innermost cause: "Connection refused (os error 111)".
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

/// An error and its causes, joined: reqwest's top-level message alone
/// ("error sending request") hides the useful part ("connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, Settings};

    fn settings(base_url: Option<&str>) -> Settings {
        let flags = Overrides {
            base_url: base_url.map(str::to_owned),
            timeout_secs: Some(5),
            ..Default::default()
        };
        Settings::resolve(
            Default::default(),
            &|_| None,
            &flags,
            "/c".into(),
            "/d".into(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn an_unreachable_default_server_says_how_to_configure() {
        // Port 9 (discard) on localhost: nothing listens there.
        let mut s = settings(None);
        s.base_url = "http://127.0.0.1:9/v1".into();
        let p = OpenAiCompatible::new(&s);
        let err = p
            .complete(&[ChatMessage::user("hi")], &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Unreachable { .. }), "{err:?}");
        assert!(err.is_fatal());
        let text = err.to_string();
        assert!(
            text.contains("Ollama") && text.contains("ERRAND_BASE_URL"),
            "{text}"
        );
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
        assert!(matches!(
            p.status_error(401, &url, "{\"error\":\"bad key\"}"),
            LlmError::BadKey { status: 401, .. }
        ));
        let e = p.status_error(404, &url, "model 'nope' not found");
        assert!(
            e.to_string().contains("model") && e.to_string().contains("not found"),
            "{e}"
        );
        assert!(matches!(
            p.status_error(429, &url, ""),
            LlmError::RateLimited { .. }
        ));
        let e = p.status_error(503, &url, "overloaded\n  try later");
        assert_eq!(
            e.to_string(),
            "the model server failed (HTTP 503): overloaded try later"
        );
        assert!(!e.is_fatal());
    }

    #[test]
    fn excerpts_are_short() {
        let long = "x".repeat(1000);
        assert_eq!(excerpt(&long).chars().count(), 301);
        assert_eq!(excerpt(""), "(empty body)");
    }
}

//! Model providers, each in its real wire format:
//! - [`openai`]: OpenAI-compatible chat completions (OpenAI, OpenRouter,
//!   Ollama, vLLM, LM Studio, DeepSeek, Zhipu GLM, llama.cpp…);
//! - [`anthropic`]: Anthropic Messages;
//! - [`gemini`]: Google Gemini `generateContent`.
//!
//! [`retry::Retrying`] wraps any of them: retries with backoff on HTTP 429
//! and 5xx, honouring `Retry-After`. [`build`] picks the provider from the
//! settings.

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod retry;

pub use openai::{OpenAiCompatible, Probe};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::config::{ProviderKind, Settings};

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
    /// Images shown with the text (JPEG or PNG data URLs), for vision models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage { role: Role::System, content: content.into(), images: Vec::new() }
    }
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage { role: Role::User, content: content.into(), images: Vec::new() }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage { role: Role::Assistant, content: content.into(), images: Vec::new() }
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
    Unreachable { base_url: String, reason: String, hint: String },
    #[error(
        "the model server at {base_url} did not answer within {secs} s (raise timeout_secs under [model] or ERRAND_TIMEOUT_SECS)"
    )]
    Timeout { base_url: String, secs: u64 },
    #[error(
        "the model server refused the API key (HTTP {status}): {excerpt}. Check api_key / ERRAND_API_KEY / --api-key"
    )]
    BadKey { status: u16, excerpt: String },
    #[error("model `{model}` or endpoint {url} not found (HTTP 404): {excerpt}. {hint}")]
    NotFound { model: String, url: String, excerpt: String, hint: String },
    #[error("the model server is rate limiting (HTTP 429): {excerpt}")]
    RateLimited { excerpt: String, retry_after: Option<Duration> },
    #[error("the model server failed (HTTP {status}): {excerpt}")]
    Server { status: u16, excerpt: String, retry_after: Option<Duration> },
    #[error("the model server answered HTTP {status}: {excerpt}")]
    Status { status: u16, excerpt: String },
    #[error("the model server's answer could not be read: {0}")]
    BadResponse(String),
    #[error("{last} (gave up after {attempts} attempts)")]
    GaveUp { attempts: u32, last: Box<LlmError> },
    #[error("the model call was cancelled")]
    Cancelled,
}

impl LlmError {
    /// Whether trying again cannot help (the task should end at once).
    pub fn is_fatal(&self) -> bool {
        match self {
            LlmError::Unreachable { .. } | LlmError::BadKey { .. } | LlmError::NotFound { .. } => {
                true
            }
            LlmError::GaveUp { last, .. } => last.is_fatal(),
            _ => false,
        }
    }

    /// Whether the same call may work later (429, 5xx).
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::RateLimited { .. } | LlmError::Server { .. })
    }

    /// The server's `Retry-After`, when it gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
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

/// Runs a model call until it ends or `cancel` fires (then
/// [`LlmError::Cancelled`] at once).
pub async fn cancellable<T>(
    cancel: &CancellationToken,
    call: impl std::future::Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(LlmError::Cancelled),
        r = call => r,
    }
}

/// [`Provider`] for an HTTP adapter: a type with an `http: Http` field and an
/// inherent `async fn call(&self, &[ChatMessage]) -> Result<Completion, LlmError>`,
/// made cancellable.
macro_rules! http_provider {
    ($adapter:ty) => {
        impl $crate::llm::Provider for $adapter {
            fn model(&self) -> &str {
                &self.http.model
            }

            fn complete<'a>(
                &'a self,
                messages: &'a [$crate::llm::ChatMessage],
                cancel: &'a tokio_util::sync::CancellationToken,
            ) -> $crate::llm::BoxFuture<'a, Result<$crate::llm::Completion, $crate::llm::LlmError>>
            {
                Box::pin($crate::llm::cancellable(cancel, self.call(messages)))
            }
        }
    };
}
pub(crate) use http_provider;

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
pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
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
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
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

/// The provider the settings name, wrapped in retries.
pub fn build(settings: &Settings) -> Arc<dyn Provider> {
    let inner: Arc<dyn Provider> = match settings.provider {
        ProviderKind::OpenAi => Arc::new(OpenAiCompatible::new(settings)),
        ProviderKind::Anthropic => Arc::new(anthropic::Anthropic::new(settings)),
        ProviderKind::Gemini => Arc::new(gemini::Gemini::new(settings)),
    };
    Arc::new(retry::Retrying::new(inner, retry::Policy::from_settings(settings)))
}

/// What to say when the server cannot be reached.
pub(crate) fn unreachable_hint(settings: &Settings) -> String {
    if settings.is_default_model_server() {
        format!(
            "No model is configured, so Errand tried a local Ollama: start it (`ollama serve`, \
             then `ollama pull {}`) or use another model: {}",
            settings.model,
            settings.how_to_configure()
        )
    } else {
        format!("Is the server running? To use another one: {}", settings.how_to_configure())
    }
}

/// The parts every HTTP provider shares: the client, where, which model,
/// how long to wait, what to say when the server is unreachable.
#[derive(Clone)]
pub(crate) struct Http {
    pub client: reqwest::Client,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub unreachable_hint: String,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// An HTTP answer: status, `Retry-After`, body.
pub(crate) struct Reply {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
}

impl Http {
    pub fn new(settings: &Settings) -> Http {
        Http {
            client: reqwest::Client::new(),
            base_url: settings.base_url.clone(),
            model: settings.model.clone(),
            api_key: settings.api_key.clone(),
            timeout: settings.timeout,
            unreachable_hint: unreachable_hint(settings),
        }
    }

    /// Sends a request built by the provider and reads the whole answer.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Result<Reply, LlmError> {
        let resp = req.timeout(self.timeout).send().await.map_err(|e| self.transport_error(e))?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        let body = resp.text().await.map_err(|e| self.transport_error(e))?;
        Ok(Reply { status, retry_after, body })
    }

    pub fn transport_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout { base_url: self.base_url.clone(), secs: self.timeout.as_secs() }
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

    /// The error for a non-2xx answer.
    pub fn status_error(&self, reply: &Reply, url: &str, not_found_hint: &str) -> LlmError {
        let excerpt = excerpt(&reply.body);
        let status = reply.status;
        match status {
            401 | 403 => LlmError::BadKey { status, excerpt },
            404 => LlmError::NotFound {
                model: self.model.clone(),
                url: url.to_owned(),
                excerpt,
                hint: not_found_hint.to_owned(),
            },
            429 => LlmError::RateLimited { excerpt, retry_after: reply.retry_after },
            500..=599 => LlmError::Server { status, excerpt, retry_after: reply.retry_after },
            _ => LlmError::Status { status, excerpt },
        }
    }
}

/// `Retry-After` as seconds or an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    parse_retry_after(value, std::time::SystemTime::now())
}

/// Reads a `Retry-After` value: whole (or fractional) seconds, or an
/// HTTP date (a date in the past is zero).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<f64>() {
        return (secs >= 0.0 && secs.is_finite()).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

//! Model providers, each in its real wire format:
//! - [`openai`]: OpenAI-compatible chat completions (OpenAI, OpenRouter,
//!   Ollama, vLLM, LM Studio, DeepSeek, Zhipu GLM, llama.cpp…);
//! - [`anthropic`]: Anthropic Messages;
//! - [`gemini`]: Google Gemini `generateContent`.
//!
//! [`retry::Retrying`] wraps any of them: retries with backoff on HTTP 429
//! and 5xx, honouring `Retry-After`. [`build`] picks the provider from the
//! settings.
//!
//! Images (the marked screenshot, for vision models) travel as data URLs in
//! [`ChatMessage::images`]; [`images_to_send`] checks them and keeps only the
//! newest message's, which each adapter writes in its own format. A server
//! that refuses them gets [`LlmError::NoVision`].
//!
//! Structured output: a call that expects the agent's answer
//! ([`Expect::Answer`]) asks the provider for it in the answer's JSON Schema
//! ([`schema`]) where the provider supports it — OpenAI-compatible
//! `response_format: json_schema`, an Anthropic tool whose input is the
//! answer, Gemini's `responseSchema` — per the `structured` setting
//! ([`Features`]). A server that refuses the field (HTTP 400 naming it) is
//! asked again without it once, and not asked with it again this session.
//! The answer text still goes through the same parser.

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod retry;
pub mod schema;

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
    #[error(
        "the model {model} does not accept images: turn vision off in the settings or pick a vision model (the server answered HTTP {status}: {excerpt})"
    )]
    NoVision { model: String, status: u16, excerpt: String },
    #[error("the screenshot cannot be sent to the model: {0}")]
    BadImage(String),
    #[error(
        "the model server at {base_url} stopped sending its answer for {secs} s (raise timeout_secs under [model] or ERRAND_TIMEOUT_SECS)"
    )]
    Stalled { base_url: String, secs: u64 },
}

impl LlmError {
    /// Whether trying again cannot help (the task should end at once).
    pub fn is_fatal(&self) -> bool {
        match self {
            LlmError::Unreachable { .. }
            | LlmError::BadKey { .. }
            | LlmError::NotFound { .. }
            | LlmError::NoVision { .. } => true,
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

/// The image types the providers take.
pub const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png", "image/webp", "image/gif"];

/// An image read from a data URL: its media type (one of [`IMAGE_TYPES`])
/// and its base64 data (standard alphabet, padded), as the providers want them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Image<'a> {
    pub media_type: &'static str,
    pub data: &'a str,
}

impl Image<'_> {
    /// `data:<media type>;base64,<data>`.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

/// Reads a `data:image/…;base64,…` URL, refusing anything a provider could
/// not take: another scheme, a media type that is not an image of
/// [`IMAGE_TYPES`], data that is not base64, or bytes that are not the
/// image type named.
pub fn parse_data_url(url: &str) -> Result<Image<'_>, LlmError> {
    let bad = |why: &str| LlmError::BadImage(format!("{why} (it starts {:?})", start_of(url)));
    let rest = url
        .get(..5)
        .filter(|scheme| scheme.eq_ignore_ascii_case("data:"))
        .map(|_| &url[5..])
        .ok_or_else(|| bad("it is not a data URL"))?;
    let (header, data) = rest.split_once(',').ok_or_else(|| bad("the data URL has no comma"))?;
    let mut params = header.split(';').map(str::trim);
    let mime = params.next().unwrap_or_default().to_ascii_lowercase();
    let media_type =
        IMAGE_TYPES.iter().copied().find(|t| *t == mime).ok_or_else(|| {
            bad(&format!("its media type {mime:?} is not one of {IMAGE_TYPES:?}"))
        })?;
    if !params.any(|p| p.eq_ignore_ascii_case("base64")) {
        return Err(bad("the data URL is not base64"));
    }
    if data.is_empty() {
        return Err(bad("the image is empty"));
    }
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| bad(&format!("its data is not valid base64: {e}")))?;
    let magic: &[u8] = match media_type {
        "image/jpeg" => b"\xFF\xD8\xFF",
        "image/png" => b"\x89PNG",
        "image/gif" => b"GIF8",
        _ => b"RIFF",
    };
    if !bytes.starts_with(magic) {
        return Err(bad(&format!("its bytes are not of type {media_type}")));
    }
    Ok(Image { media_type, data })
}

/// The first characters of a URL, for error messages.
fn start_of(url: &str) -> String {
    let mut out: String = url.chars().take(40).collect();
    if url.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// The images to send with each message, read from their data URLs: only the
/// newest message that has images keeps them (an earlier step's screenshot
/// is not sent again), the others get none. A malformed data URL there is an
/// error ([`LlmError::BadImage`]), never sent as it is.
pub fn images_to_send(messages: &[ChatMessage]) -> Result<Vec<Vec<Image<'_>>>, LlmError> {
    let newest = messages.iter().rposition(|m| !m.images.is_empty());
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            if Some(i) == newest {
                m.images.iter().map(|url| parse_data_url(url)).collect()
            } else {
                Ok(Vec::new())
            }
        })
        .collect()
}

/// Whether an error answer says that the model takes no images: HTTP 400
/// (or another client error, or llama.cpp's 500) naming images, vision,
/// multimodal input — or refusing a `content` that is not a string, which
/// is how servers without vision read a message with an image part.
pub fn refuses_images(status: u16, body: &str) -> bool {
    let client_error =
        (400..500).contains(&status) && !matches!(status, 401 | 403 | 404 | 408 | 413 | 429);
    if !client_error && status != 500 {
        return false;
    }
    let body = body.to_lowercase();
    [
        "image",
        "vision",
        "multimodal",
        "multi-modal",
        "mmproj",
        "content of type string",
        "must be a string",
    ]
    .iter()
    .any(|word| body.contains(word))
}

/// A boxed future, so that providers can live behind `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a call expects back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Expect {
    /// Free text (the planner, the validator, any other call).
    #[default]
    Text,
    /// The agent's JSON answer: constrained to [`schema::answer`] where the
    /// provider and the `structured` setting allow.
    Answer,
}

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

    /// Like [`Provider::complete`], saying what the answer should be; a
    /// provider without structured output answers in text either way.
    fn complete_as<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        expect: Expect,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        let _ = expect;
        self.complete(messages, cancel)
    }
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
/// inherent `async fn call(&self, &[ChatMessage], Expect) -> Result<Completion, LlmError>`,
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
                self.complete_as(messages, $crate::llm::Expect::Text, cancel)
            }

            fn complete_as<'a>(
                &'a self,
                messages: &'a [$crate::llm::ChatMessage],
                expect: $crate::llm::Expect,
                cancel: &'a tokio_util::sync::CancellationToken,
            ) -> $crate::llm::BoxFuture<'a, Result<$crate::llm::Completion, $crate::llm::LlmError>>
            {
                Box::pin($crate::llm::cancellable(cancel, self.call(messages, expect)))
            }
        }
    };
}

/// An optional request feature a server may refuse: on for a session until
/// the server answers HTTP 400 naming it, then off (and said so in the log).
#[derive(Debug, Clone)]
pub struct Feature {
    /// The name in the log: "structured output", "streaming".
    name: &'static str,
    /// Whether the settings want it for this provider and model.
    wanted: bool,
    /// Set when a server refused it.
    refused: Arc<std::sync::atomic::AtomicBool>,
    /// Words of a refusal naming it (lower case).
    words: &'static [&'static str],
}

impl Feature {
    pub fn new(name: &'static str, wanted: bool, words: &'static [&'static str]) -> Feature {
        Feature { name, wanted, refused: Arc::default(), words }
    }

    /// Whether to use it now.
    pub fn on(&self) -> bool {
        self.wanted && !self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether a failed call refused it: HTTP 400 or 422 (or another client
    /// error that is not about the key, the model or the rate) whose body
    /// names it. Then it stays off for the session, and the log says why.
    pub fn refused_by(&self, error: &LlmError) -> bool {
        let (status, excerpt) = match error {
            LlmError::Status { status, excerpt } => (*status, excerpt),
            _ => return false,
        };
        let client_error =
            (400..500).contains(&status) && !matches!(status, 401 | 403 | 404 | 408 | 413 | 429);
        let body = excerpt.to_lowercase();
        if !client_error || !self.words.iter().any(|w| body.contains(w)) {
            return false;
        }
        self.refused.store(true, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(
            "the model server refused {} (HTTP {status}: {excerpt}); asking again without it, \
             and not using it again this session",
            self.name
        );
        true
    }
}

/// Calls `attempt`; when the server refused one of `features` that was on
/// (see [`Feature::refused_by`]), calls it again without it — each feature
/// at most once a session, so this ends.
pub async fn retry_refused<F, Fut>(
    features: &[&Feature],
    attempt: F,
) -> Result<Completion, LlmError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Completion, LlmError>>,
{
    loop {
        match attempt().await {
            Err(e) if features.iter().any(|f| f.on() && f.refused_by(&e)) => {}
            other => return other,
        }
    }
}

/// Whether the settings want structured output: `on`, `off`, or for
/// `auto` whether the provider and model are known to support it.
pub fn structured_wanted(settings: &Settings) -> bool {
    match settings.structured {
        crate::config::Switch::On => true,
        crate::config::Switch::Off => false,
        crate::config::Switch::Auto => {
            structured_known(settings.provider, &settings.base_url, &settings.model)
        }
    }
}

/// Whether `structured = "auto"` turns structured output on for a provider,
/// server and model: the ones known to support it.
pub fn structured_known(provider: ProviderKind, base_url: &str, model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let base = model.rsplit('/').next().unwrap_or(&model).to_owned();
    match provider {
        ProviderKind::Anthropic => base.starts_with("claude"),
        ProviderKind::Gemini => base.starts_with("gemini"),
        ProviderKind::OpenAi => {
            let host = url::Url::parse(base_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .unwrap_or_default();
            let local = matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]" | "::1");
            let openai_model = ["gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4"]
                .iter()
                .any(|p| base.starts_with(p));
            match host.as_str() {
                "api.openai.com" => openai_model,
                "openrouter.ai" | "api.mistral.ai" => true,
                // Ollama, llama.cpp, vLLM, LM Studio: JSON Schema to a grammar.
                _ => local && !base.starts_with("glm"),
            }
        }
    }
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

    /// The error for a non-2xx answer. `sent_images`: the request carried
    /// images, so a refusal of them is [`LlmError::NoVision`].
    pub fn status_error(
        &self,
        reply: &Reply,
        url: &str,
        not_found_hint: &str,
        sent_images: bool,
    ) -> LlmError {
        let excerpt = excerpt(&reply.body);
        let status = reply.status;
        if sent_images && refuses_images(status, &reply.body) {
            return LlmError::NoVision { model: self.model.clone(), status, excerpt };
        }
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

/// A small data URL whose bytes start like a JPEG, for tests.
#[cfg(test)]
pub(crate) fn test_jpeg(tag: u8) -> String {
    use base64::Engine;
    let bytes = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, tag];
    format!("data:image/jpeg;base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_image_data_urls() {
        let url = test_jpeg(1);
        let image = parse_data_url(&url).unwrap();
        assert_eq!(image.media_type, "image/jpeg");
        assert_eq!(image.data, url.split_once(',').unwrap().1);
        assert_eq!(image.data_url(), url);
        // The scheme and media type in any case, extra parameters allowed.
        let loud = url.replace("data:image/jpeg;base64", "DATA:Image/JPEG;name=shot;BASE64");
        assert_eq!(parse_data_url(&loud).unwrap().media_type, "image/jpeg");
        // PNG by its own signature.
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\n....");
        assert_eq!(
            parse_data_url(&format!("data:image/png;base64,{png}")).unwrap().media_type,
            "image/png"
        );
    }

    #[test]
    fn refuses_malformed_images_with_the_reason() {
        let jpeg = test_jpeg(1);
        let data = jpeg.split_once(',').unwrap().1.to_owned();
        let cases = [
            ("https://example.com/shot.jpg".to_owned(), "not a data URL"),
            ("data:image/jpeg;base64".to_owned(), "no comma"),
            (format!("data:text/html;base64,{data}"), "media type \"text/html\""),
            (format!("data:image/jpeg,{data}"), "not base64"),
            ("data:image/jpeg;base64,".to_owned(), "empty"),
            ("data:image/jpeg;base64,%%%notbase64".to_owned(), "not valid base64"),
            (format!("data:image/png;base64,{data}"), "not of type image/png"),
        ];
        for (url, why) in cases {
            let err = parse_data_url(&url).unwrap_err();
            assert!(matches!(err, LlmError::BadImage(_)), "{url}: {err:?}");
            let text = err.to_string();
            assert!(text.contains(why), "{url}: {text}");
            assert!(text.starts_with("the screenshot cannot be sent to the model"), "{text}");
            assert!(!err.is_fatal() && !err.is_retryable());
        }
    }

    #[test]
    fn only_the_newest_message_with_images_keeps_them() {
        let mut old = ChatMessage::user("step 1");
        old.images.push(test_jpeg(1));
        let mut now = ChatMessage::user("step 2");
        now.images.push(test_jpeg(2));
        let messages = vec![
            ChatMessage::system("sys"),
            old,
            ChatMessage::assistant("{}"),
            now,
            // An answer asked again: the step's screenshot stays the newest.
            ChatMessage::assistant("{bad"),
            ChatMessage::user("again"),
        ];
        let images = images_to_send(&messages).unwrap();
        let counts: Vec<usize> = images.iter().map(Vec::len).collect();
        assert_eq!(counts, vec![0, 0, 0, 1, 0, 0]);
        assert_eq!(images[3][0].data_url(), test_jpeg(2));
        // An old malformed image is not sent, so it does not matter; a
        // malformed newest one is an error.
        let mut messages = messages;
        messages[1].images = vec!["junk".into()];
        assert!(images_to_send(&messages).is_ok());
        messages[3].images = vec!["junk".into()];
        assert!(matches!(images_to_send(&messages), Err(LlmError::BadImage(_))));
        assert!(images_to_send(&[ChatMessage::user("hi")]).unwrap()[0].is_empty());
    }

    #[test]
    fn knows_when_a_server_refuses_images() {
        // Real answers: OpenAI, vLLM, Ollama, llama.cpp (500), old Ollama, Groq.
        assert!(refuses_images(
            400,
            r#"{"error":{"message":"Invalid content type. image_url is only supported by certain models."}}"#
        ));
        assert!(refuses_images(400, "scripted is not a multimodal model"));
        assert!(refuses_images(400, r#"{"error":"this model does not support image input"}"#));
        assert!(refuses_images(
            500,
            r#"{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj"}"#
        ));
        assert!(refuses_images(
            400,
            "json: cannot unmarshal array into Go struct field Message.messages.content of type string"
        ));
        assert!(refuses_images(422, "'messages.1.content' : value must be a string"));
        // Not about images, or not a refusal.
        assert!(!refuses_images(400, "max_tokens is too large"));
        assert!(!refuses_images(401, "invalid key for vision models"));
        assert!(!refuses_images(413, "image too large"));
        assert!(!refuses_images(503, "image service overloaded"));
    }

    #[test]
    fn auto_structured_output_is_on_where_known_to_work() {
        use ProviderKind::*;
        assert!(structured_known(OpenAi, "http://127.0.0.1:11434/v1", "llama3.1"));
        assert!(structured_known(OpenAi, "http://localhost:8080/v1", "qwen2.5"));
        assert!(!structured_known(OpenAi, "http://localhost:8080/v1", "glm-4.5v"));
        assert!(structured_known(OpenAi, "https://api.openai.com/v1", "gpt-4o-mini"));
        assert!(!structured_known(OpenAi, "https://api.openai.com/v1", "gpt-3.5-turbo"));
        assert!(structured_known(OpenAi, "https://openrouter.ai/api/v1", "openai/gpt-4o"));
        assert!(!structured_known(OpenAi, "https://api.deepseek.com/v1", "deepseek-chat"));
        assert!(structured_known(Anthropic, "https://api.anthropic.com/v1", "claude-sonnet-4-5"));
        assert!(structured_known(Gemini, "https://x/v1beta", "models/gemini-2.5-flash"));
        assert!(!structured_known(Gemini, "https://x/v1beta", "gemma-3-27b-it"));
    }

    #[test]
    fn a_feature_is_refused_only_by_a_client_error_naming_it_and_then_stays_off() {
        let f = Feature::new("structured output", true, &["response_format"]);
        let status = |status: u16, body: &str| LlmError::Status { status, excerpt: body.into() };
        assert!(!f.refused_by(&status(400, "max_tokens too large")));
        assert!(
            !f.refused_by(&LlmError::BadKey { status: 401, excerpt: "response_format".into() })
        );
        assert!(!f.refused_by(&LlmError::Server {
            status: 500,
            excerpt: "response_format".into(),
            retry_after: None
        }));
        assert!(f.on());
        assert!(f.refused_by(&status(400, "Unknown parameter: 'response_format'")));
        assert!(!f.on());
        assert!(f.clone().refused.load(std::sync::atomic::Ordering::Relaxed), "shared by clones");
        assert!(!Feature::new("x", false, &[]).on());
    }

    #[test]
    fn a_refusal_of_images_is_fatal_and_says_what_to_do() {
        let http = Http {
            client: reqwest::Client::new(),
            base_url: "http://x/v1".into(),
            model: "tiny-text".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            unreachable_hint: String::new(),
        };
        let reply = Reply {
            status: 400,
            retry_after: None,
            body: r#"{"error":{"message":"image_url is only supported by certain models"}}"#.into(),
        };
        let err = http.status_error(&reply, "http://x/v1/chat/completions", "", true);
        assert!(matches!(err, LlmError::NoVision { status: 400, .. }), "{err:?}");
        assert!(err.is_fatal());
        assert!(
            err.to_string().starts_with(
                "the model tiny-text does not accept images: turn vision off in the settings or pick a vision model"
            ),
            "{err}"
        );
        // Without images the same answer is an ordinary 400.
        let err = http.status_error(&reply, "http://x/v1/chat/completions", "", false);
        assert!(matches!(err, LlmError::Status { status: 400, .. }), "{err:?}");
    }
}

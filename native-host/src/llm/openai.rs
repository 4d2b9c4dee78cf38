//! OpenAI-compatible chat completions: `POST {base_url}/chat/completions`
//! with a bearer key; `choices[0].message.content`, `usage.prompt_tokens` /
//! `completion_tokens`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ChatMessage, Completion, Http, LlmError, Reply, Usage, excerpt};
use crate::config::Settings;

/// What a 404 most often means here.
const NOT_FOUND_HINT: &str =
    "Check the model name and that base_url ends where /chat/completions begins (often …/v1)";

/// `POST {base_url}/chat/completions`.
#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    http: Http,
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

    async fn call(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let body = ChatRequest { model: &self.http.model, messages, temperature: 0.0 };
        let reply = self.http.send(self.authed(self.http.client.post(&url).json(&body))).await?;
        if !(200..300).contains(&reply.status) {
            return Err(self.status_error(&reply, &url));
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
        self.http.status_error(reply, url, NOT_FOUND_HINT)
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
    fn excerpts_are_short() {
        use crate::llm::excerpt;
        let long = "x".repeat(1000);
        assert_eq!(excerpt(&long).chars().count(), 301);
        assert_eq!(excerpt(""), "(empty body)");
    }
}

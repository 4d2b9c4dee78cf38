//! Google Gemini: `POST {base_url}/models/{model}:generateContent` with
//! `x-goog-api-key`; `systemInstruction`, `contents[].parts[].text` with
//! roles `user` / `model`; answer in `candidates[0].content.parts`, tokens
//! in `usageMetadata`.

use serde_json::{Value, json};

use super::{ChatMessage, Completion, Http, LlmError, Role, Usage, excerpt};
use crate::config::Settings;

const NOT_FOUND_HINT: &str = "Check the model name (like gemini-2.5-flash) and that base_url ends \
     where /models begins (https://generativelanguage.googleapis.com/v1beta)";

/// A Gemini model.
#[derive(Clone, Debug)]
pub struct Gemini {
    http: Http,
}

impl Gemini {
    pub fn new(settings: &Settings) -> Self {
        Gemini { http: Http::new(settings) }
    }

    /// `{base_url}/models/{model}:generateContent`.
    pub fn endpoint(&self) -> String {
        let model = self.http.model.trim_start_matches("models/");
        format!("{}/models/{model}:generateContent", self.http.base_url)
    }

    /// The request body.
    pub fn body(&self, messages: &[ChatMessage]) -> Value {
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut contents: Vec<Value> = Vec::new();
        for m in messages.iter().filter(|m| m.role != Role::System) {
            let role = if m.role == Role::Assistant { "model" } else { "user" };
            let part = json!({"text": m.content});
            match contents.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(parts) = last["parts"].as_array_mut() {
                        parts.push(part);
                    }
                }
                _ => contents.push(json!({"role": role, "parts": [part]})),
            }
        }
        let mut body = json!({
            "contents": contents,
            "generationConfig": {"temperature": 0.0},
        });
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": system.join("\n\n")}]});
        }
        body
    }

    async fn call(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let mut req = self.http.client.post(&url).json(&self.body(messages));
        if let Some(key) = &self.http.api_key {
            req = req.header("x-goog-api-key", key);
        }
        let reply = self.http.send(req).await?;
        if !(200..300).contains(&reply.status) {
            // Gemini answers a bad key with 400 INVALID_ARGUMENT.
            if reply.status == 400
                && (reply.body.contains("API_KEY_INVALID")
                    || reply.body.contains("API key not valid"))
            {
                return Err(LlmError::BadKey { status: 400, excerpt: excerpt(&reply.body) });
            }
            return Err(self.http.status_error(&reply, &url, NOT_FOUND_HINT));
        }
        read_reply(&reply.body)
    }
}

/// Reads a `generateContent` answer.
pub fn read_reply(body: &str) -> Result<Completion, LlmError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| LlmError::BadResponse(format!("{e}; body: {}", excerpt(body))))?;
    let usage = v.get("usageMetadata").map(|u| Usage {
        prompt_tokens: u["promptTokenCount"].as_u64().unwrap_or(0),
        completion_tokens: u["candidatesTokenCount"].as_u64().unwrap_or(0)
            + u["thoughtsTokenCount"].as_u64().unwrap_or(0),
    });
    let Some(candidate) = v["candidates"].get(0) else {
        let why = v["promptFeedback"]["blockReason"].as_str().unwrap_or("no candidates");
        return Err(LlmError::BadResponse(format!(
            "Gemini gave no answer ({why}); body: {}",
            excerpt(body)
        )));
    };
    let text: String = candidate["content"]["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["thought"] != true)
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default();
    if text.is_empty() {
        let why = candidate["finishReason"].as_str().unwrap_or("empty answer");
        return Err(LlmError::BadResponse(format!("Gemini gave no text ({why})")));
    }
    Ok(Completion { text, usage })
}

super::http_provider!(Gemini);

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Gemini {
        let settings = crate::config::Settings::resolve(
            Default::default(),
            &|k| match k {
                "ERRAND_PROVIDER" => Some("gemini".into()),
                "ERRAND_MODEL" => Some("gemini-2.5-flash".into()),
                "GEMINI_API_KEY" => Some("g-key".into()),
                _ => None,
            },
            &Default::default(),
            "/c".into(),
            "/d".into(),
        )
        .unwrap();
        assert_eq!(settings.api_key.as_deref(), Some("g-key"));
        Gemini::new(&settings)
    }

    #[test]
    fn builds_the_wire_body() {
        let p = provider();
        assert_eq!(
            p.endpoint(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
        );
        let body = p.body(&[
            ChatMessage::system("be good"),
            ChatMessage::user("step 1"),
            ChatMessage::assistant("{bad"),
            ChatMessage::user("again"),
        ]);
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "be good");
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 3);
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(contents[2]["parts"][0]["text"], "again");
    }

    #[test]
    fn reads_the_answer_and_usage() {
        let c = read_reply(
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking","thought":true},{"text":"hello"}]},
                "finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":4,"totalTokenCount":16}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "hello");
        assert_eq!(c.usage, Some(Usage { prompt_tokens: 12, completion_tokens: 4 }));
        let e = read_reply(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#).unwrap_err();
        assert!(e.to_string().contains("SAFETY"), "{e}");
    }
}

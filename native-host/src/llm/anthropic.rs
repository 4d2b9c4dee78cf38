//! Anthropic Messages: `POST {base_url}/messages` with `x-api-key` and
//! `anthropic-version`; the system prompt apart, content blocks, answer in
//! `content[].text`, tokens in `usage.input_tokens` / `output_tokens`.

use serde_json::{Value, json};

use super::{ChatMessage, Completion, Http, LlmError, Role, Usage, excerpt};
use crate::config::Settings;

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// The answer's length limit (Messages requires one).
pub const MAX_TOKENS: u32 = 4096;

const NOT_FOUND_HINT: &str = "Check the model name (like claude-sonnet-4-5) and that base_url ends \
     where /messages begins (https://api.anthropic.com/v1)";

/// An Anthropic model.
#[derive(Clone, Debug)]
pub struct Anthropic {
    http: Http,
}

impl Anthropic {
    pub fn new(settings: &Settings) -> Self {
        Anthropic { http: Http::new(settings) }
    }

    /// `{base_url}/messages`.
    pub fn endpoint(&self) -> String {
        format!("{}/messages", self.http.base_url)
    }

    /// The request body: system messages joined into `system`, the rest as
    /// alternating turns of text blocks (consecutive turns of one role merged).
    pub fn body(&self, messages: &[ChatMessage]) -> Value {
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut turns: Vec<Value> = Vec::new();
        for m in messages.iter().filter(|m| m.role != Role::System) {
            let role = if m.role == Role::Assistant { "assistant" } else { "user" };
            let block = json!({"type": "text", "text": m.content});
            match turns.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(blocks) = last["content"].as_array_mut() {
                        blocks.push(block);
                    }
                }
                _ => turns.push(json!({"role": role, "content": [block]})),
            }
        }
        let mut body = json!({
            "model": self.http.model,
            "max_tokens": MAX_TOKENS,
            "temperature": 0.0,
            "messages": turns,
        });
        if !system.is_empty() {
            body["system"] = Value::String(system.join("\n\n"));
        }
        body
    }

    async fn call(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let mut req = self
            .http
            .client
            .post(&url)
            .header("anthropic-version", API_VERSION)
            .json(&self.body(messages));
        if let Some(key) = &self.http.api_key {
            req = req.header("x-api-key", key);
        }
        let reply = self.http.send(req).await?;
        if !(200..300).contains(&reply.status) {
            // 529 "overloaded" is a 5xx: retried like the others.
            return Err(self.http.status_error(&reply, &url, NOT_FOUND_HINT));
        }
        read_reply(&reply.body)
    }
}

/// Reads a Messages answer.
pub fn read_reply(body: &str) -> Result<Completion, LlmError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| LlmError::BadResponse(format!("{e}; body: {}", excerpt(body))))?;
    let blocks = v["content"].as_array().ok_or_else(|| {
        LlmError::BadResponse(format!("no `content` in the answer; body: {}", excerpt(body)))
    })?;
    let text: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("");
    if text.is_empty() && v["stop_reason"] == "refusal" {
        return Err(LlmError::BadResponse("the model refused to answer".to_owned()));
    }
    let usage = v.get("usage").map(|u| Usage {
        prompt_tokens: u["input_tokens"].as_u64().unwrap_or(0)
            + u["cache_read_input_tokens"].as_u64().unwrap_or(0)
            + u["cache_creation_input_tokens"].as_u64().unwrap_or(0),
        completion_tokens: u["output_tokens"].as_u64().unwrap_or(0),
    });
    Ok(Completion { text, usage })
}

super::http_provider!(Anthropic);

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Anthropic {
        let settings = crate::config::Settings::resolve(
            Default::default(),
            &|k| match k {
                "ERRAND_PROVIDER" => Some("anthropic".into()),
                "ERRAND_MODEL" => Some("claude-x".into()),
                _ => None,
            },
            &Default::default(),
            "/c".into(),
            "/d".into(),
        )
        .unwrap();
        assert_eq!(settings.base_url, "https://api.anthropic.com/v1");
        Anthropic::new(&settings)
    }

    #[test]
    fn builds_the_wire_body() {
        let p = provider();
        let body = p.body(&[
            ChatMessage::system("be good"),
            ChatMessage::user("step 1"),
            ChatMessage::assistant("{bad"),
            ChatMessage::user("again"),
            ChatMessage::user("really"),
        ]);
        assert_eq!(body["system"], "be good");
        assert_eq!(body["model"], "claude-x");
        assert_eq!(body["max_tokens"], MAX_TOKENS);
        let turns = body["messages"].as_array().unwrap();
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0]["role"], "user");
        assert_eq!(turns[0]["content"][0], json!({"type": "text", "text": "step 1"}));
        assert_eq!(turns[2]["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn reads_the_answer_and_usage() {
        let c = read_reply(
            r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
                "content":[{"type":"text","text":"{\"actions\":"},{"type":"text","text":"[]}"}],
                "stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(c.text, "{\"actions\":[]}");
        assert_eq!(c.usage, Some(Usage { prompt_tokens: 10, completion_tokens: 3 }));
        assert!(matches!(read_reply("{}"), Err(LlmError::BadResponse(_))));
    }
}

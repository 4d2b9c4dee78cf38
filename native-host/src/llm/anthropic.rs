//! Anthropic Messages: `POST {base_url}/messages` with `x-api-key` and
//! `anthropic-version`; the system prompt apart, content blocks, answer in
//! `content[].text`, tokens in `usage.input_tokens` / `output_tokens`.
//! An image is a `{"type": "image", "source": {"type": "base64",
//! "media_type": "image/jpeg", "data": …}}` block before its message's text.
//!
//! Structured output is tool use: the agent's answer is asked for as the
//! input of one tool, [`super::schema::NAME`], whose `input_schema` is the
//! answer's schema, with `tool_choice` naming it; the `tool_use` block's
//! input is the answer (text blocks when the server answered in text).

use serde_json::{Value, json};

use super::schema::{self, Flavour};
use super::{ChatMessage, Completion, Expect, Feature, Http, LlmError, Role, Usage, excerpt};
use crate::config::Settings;

/// The API version sent in `anthropic-version`.
pub const API_VERSION: &str = "2023-06-01";
/// The answer's length limit (Messages requires one).
pub const MAX_TOKENS: u32 = 4096;

const NOT_FOUND_HINT: &str = "Check the model name (like claude-sonnet-4-5) and that base_url ends \
     where /messages begins (https://api.anthropic.com/v1)";

/// Words of an HTTP 400 refusing the answer tool.
const STRUCTURED_WORDS: &[&str] = &["tool", "input_schema"];

/// An Anthropic model.
#[derive(Clone, Debug)]
pub struct Anthropic {
    http: Http,
    structured: Feature,
}

impl Anthropic {
    pub fn new(settings: &Settings) -> Self {
        let structured = super::structured_wanted(settings);
        Anthropic {
            http: Http::new(settings),
            structured: Feature::new("structured output (tool use)", structured, STRUCTURED_WORDS),
        }
    }

    /// The request body for a call expecting `expect`: with the answer tool
    /// when structured output is on.
    pub fn body_for(&self, messages: &[ChatMessage], expect: Expect) -> Result<Value, LlmError> {
        let mut body = self.body(messages)?;
        if expect == Expect::Answer && self.structured.on() {
            body["tools"] = json!([{
                "name": schema::NAME,
                "description": "Give your answer for this step: your evaluation, memory, next goal and the actions to run.",
                "input_schema": schema::answer(Flavour::JsonSchema),
            }]);
            body["tool_choice"] = json!({"type": "tool", "name": schema::NAME});
        }
        Ok(body)
    }

    /// `{base_url}/messages`.
    pub fn endpoint(&self) -> String {
        format!("{}/messages", self.http.base_url)
    }

    /// The request body: system messages joined into `system`, the rest as
    /// alternating turns of blocks (consecutive turns of one role merged),
    /// the newest message's images as image blocks before its text; a
    /// malformed image is an error.
    pub fn body(&self, messages: &[ChatMessage]) -> Result<Value, LlmError> {
        let images = super::images_to_send(messages)?;
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut turns: Vec<Value> = Vec::new();
        for (m, images) in messages.iter().zip(&images).filter(|(m, _)| m.role != Role::System) {
            let role = if m.role == Role::Assistant { "assistant" } else { "user" };
            let mut blocks: Vec<Value> = images
                .iter()
                .map(|i| {
                    json!({"type": "image", "source": {
                        "type": "base64", "media_type": i.media_type, "data": i.data,
                    }})
                })
                .collect();
            blocks.push(json!({"type": "text", "text": m.content}));
            match turns.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(old) = last["content"].as_array_mut() {
                        old.extend(blocks);
                    }
                }
                _ => turns.push(json!({"role": role, "content": blocks})),
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
        Ok(body)
    }

    async fn call(&self, messages: &[ChatMessage], expect: Expect) -> Result<Completion, LlmError> {
        // A server refusing the schema is asked again without it.
        let features: &[&Feature] =
            if expect == Expect::Answer { &[&self.structured] } else { &[] };
        super::retry_refused(features, || self.attempt(messages, expect)).await
    }

    async fn attempt(
        &self,
        messages: &[ChatMessage],
        expect: Expect,
    ) -> Result<Completion, LlmError> {
        let url = self.endpoint();
        let body = self.body_for(messages, expect)?;
        let sent_images = messages.iter().any(|m| !m.images.is_empty());
        let mut req =
            self.http.client.post(&url).header("anthropic-version", API_VERSION).json(&body);
        if let Some(key) = &self.http.api_key {
            req = req.header("x-api-key", key);
        }
        let reply = self.http.send(req).await?;
        if !(200..300).contains(&reply.status) {
            // 529 "overloaded" is a 5xx: retried like the others.
            return Err(self.http.status_error(&reply, &url, NOT_FOUND_HINT, sent_images));
        }
        read_reply(&reply.body)
    }
}

/// Reads a Messages answer: the answer tool's input when the model called
/// it, else the text blocks.
pub fn read_reply(body: &str) -> Result<Completion, LlmError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| LlmError::BadResponse(format!("{e}; body: {}", excerpt(body))))?;
    let blocks = v["content"].as_array().ok_or_else(|| {
        LlmError::BadResponse(format!("no `content` in the answer; body: {}", excerpt(body)))
    })?;
    let tool_input = blocks
        .iter()
        .find(|b| b["type"] == "tool_use" && b["name"] == schema::NAME)
        .map(|b| b["input"].to_string());
    let text: String = tool_input.unwrap_or_else(|| {
        blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("")
    });
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
        let body = p
            .body(&[
                ChatMessage::system("be good"),
                ChatMessage::user("step 1"),
                ChatMessage::assistant("{bad"),
                ChatMessage::user("again"),
                ChatMessage::user("really"),
            ])
            .unwrap();
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
    fn the_newest_image_goes_as_a_base64_block_before_its_text() {
        let p = provider();
        let mut old = ChatMessage::user("step 1");
        old.images.push(crate::llm::test_jpeg(1));
        let mut step = ChatMessage::user("step 2");
        step.images.push(crate::llm::test_jpeg(2));
        let body = p
            .body(&[ChatMessage::system("sys"), old, ChatMessage::assistant("{}"), step.clone()])
            .unwrap();
        let turns = body["messages"].as_array().unwrap();
        assert_eq!(turns[0]["content"], json!([{"type": "text", "text": "step 1"}]));
        let data = crate::llm::test_jpeg(2).split_once(',').unwrap().1.to_owned();
        assert_eq!(
            turns[2]["content"],
            json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": data}},
                {"type": "text", "text": "step 2"},
            ])
        );
        // An answer asked again keeps the step's image, in the merged turn.
        let body = p
            .body(&[step.clone(), ChatMessage::assistant("{bad"), ChatMessage::user("again")])
            .unwrap();
        assert_eq!(body["messages"][0]["content"][0]["type"], "image");
        assert_eq!(body["messages"][2]["content"], json!([{"type": "text", "text": "again"}]));
        step.images = vec!["data:image/gif;base64,R0lGODlh".into(), "nope".into()];
        assert!(matches!(p.body(&[step]), Err(LlmError::BadImage(_))));
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

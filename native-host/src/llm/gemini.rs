//! Google Gemini: `POST {base_url}/models/{model}:generateContent` with
//! `x-goog-api-key`; `systemInstruction`, `contents[].parts[].text` with
//! roles `user` / `model`; answer in `candidates[0].content.parts`, tokens
//! in `usageMetadata`. An image is an `{"inline_data": {"mime_type":
//! "image/jpeg", "data": …}}` part before its message's text.
//!
//! Structured output: `generationConfig.responseMimeType:
//! "application/json"` and `responseSchema` (the answer's schema in
//! Gemini's subset) for the agent's answer.

use serde_json::{Value, json};

use super::schema::{self, Flavour};
use super::{ChatMessage, Completion, Expect, Feature, Http, LlmError, Role, Usage, excerpt};
use crate::config::Settings;

const NOT_FOUND_HINT: &str = "Check the model name (like gemini-2.5-flash) and that base_url ends \
     where /models begins (https://generativelanguage.googleapis.com/v1beta)";

/// Words of an HTTP 400 refusing the schema.
const STRUCTURED_WORDS: &[&str] =
    &["response_schema", "responseschema", "response_mime_type", "responsemimetype", "json mode"];

/// A Gemini model.
#[derive(Clone, Debug)]
pub struct Gemini {
    http: Http,
    structured: Feature,
}

impl Gemini {
    pub fn new(settings: &Settings) -> Self {
        let structured = super::structured_wanted(settings);
        Gemini {
            http: Http::new(settings),
            structured: Feature::new("structured output", structured, STRUCTURED_WORDS),
        }
    }

    /// The request body for a call expecting `expect`: with the answer's
    /// schema when structured output is on.
    pub fn body_for(&self, messages: &[ChatMessage], expect: Expect) -> Result<Value, LlmError> {
        let mut body = self.body(messages)?;
        if expect == Expect::Answer && self.structured.on() {
            body["generationConfig"]["responseMimeType"] = json!("application/json");
            body["generationConfig"]["responseSchema"] = schema::answer(Flavour::Gemini).to_value();
        }
        Ok(body)
    }

    /// `{base_url}/models/{model}:generateContent`.
    pub fn endpoint(&self) -> String {
        let model = self.http.model.trim_start_matches("models/");
        format!("{}/models/{model}:generateContent", self.http.base_url)
    }

    /// The request body: the newest message's images as `inline_data`
    /// parts before its text; a malformed image is an error.
    pub fn body(&self, messages: &[ChatMessage]) -> Result<Value, LlmError> {
        let images = super::images_to_send(messages)?;
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut contents: Vec<Value> = Vec::new();
        for (m, images) in messages.iter().zip(&images).filter(|(m, _)| m.role != Role::System) {
            let role = if m.role == Role::Assistant { "model" } else { "user" };
            let mut parts: Vec<Value> = images
                .iter()
                .map(|i| json!({"inline_data": {"mime_type": i.media_type, "data": i.data}}))
                .collect();
            parts.push(json!({"text": m.content}));
            match contents.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(old) = last["parts"].as_array_mut() {
                        old.extend(parts);
                    }
                }
                _ => contents.push(json!({"role": role, "parts": parts})),
            }
        }
        let mut body = json!({
            "contents": contents,
            "generationConfig": {"temperature": 0.0},
        });
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": [{"text": system.join("\n\n")}]});
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
        let mut req = self.http.client.post(&url).json(&body);
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
            return Err(self.http.status_error(&reply, &url, NOT_FOUND_HINT, sent_images));
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
        let body = p
            .body(&[
                ChatMessage::system("be good"),
                ChatMessage::user("step 1"),
                ChatMessage::assistant("{bad"),
                ChatMessage::user("again"),
            ])
            .unwrap();
        assert_eq!(body["systemInstruction"]["parts"][0]["text"], "be good");
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 3);
        assert_eq!(contents[1]["role"], "model");
        assert_eq!(contents[2]["parts"][0]["text"], "again");
    }

    #[test]
    fn the_newest_image_goes_as_inline_data_before_its_text() {
        let p = provider();
        let mut old = ChatMessage::user("step 1");
        old.images.push(crate::llm::test_jpeg(1));
        let mut step = ChatMessage::user("step 2");
        step.images.push(crate::llm::test_jpeg(2));
        let body =
            p.body(&[ChatMessage::system("sys"), old, ChatMessage::assistant("{}"), step]).unwrap();
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents[0]["parts"], json!([{"text": "step 1"}]));
        let data = crate::llm::test_jpeg(2).split_once(',').unwrap().1.to_owned();
        assert_eq!(
            contents[2],
            json!({"role": "user", "parts": [
                {"inline_data": {"mime_type": "image/jpeg", "data": data}},
                {"text": "step 2"},
            ]})
        );
        let mut bad = ChatMessage::user("x");
        bad.images.push("data:image/svg+xml;base64,PHN2Zz4=".into());
        assert!(matches!(p.body(&[bad]), Err(LlmError::BadImage(_))));
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

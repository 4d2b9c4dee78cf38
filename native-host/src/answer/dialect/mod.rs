//! Answer dialects: the ways a model may write its answer, all read into
//! one [`AgentAnswer`] of [`errand_protocol::Action`]s.
//!
//! - `json` (default): browser-use's JSON object (see `parse.rs`).
//! - `glm`: the GLM-4.5V web protocol (`Click [3]`, `Type [2]; [text]`,
//!   `Scroll [WINDOW]; [down]`, `ANSWER; <content>…</content>`, memory JSON).
//! - `browsergym`: BrowserGym function calls (`click('12')`, `fill('45', "x")`).
//!
//! Each dialect has its answer-format section of the system prompt as a data
//! file in `native-host/prompts/`.

pub mod browsergym;
pub mod glm;

use crate::answer::parse::{self, AgentAnswer, ParseError};

/// How the model writes its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    #[default]
    Json,
    Glm,
    BrowserGym,
}

impl Dialect {
    /// Reads `json`, `glm`, `browsergym`.
    pub fn parse(s: &str) -> Option<Dialect> {
        match s.trim().to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "json" | "browseruse" => Some(Dialect::Json),
            "glm" | "glm45v" | "text" => Some(Dialect::Glm),
            "browsergym" | "bgym" | "functions" => Some(Dialect::BrowserGym),
            _ => None,
        }
    }

    /// The dialect for a model when none is configured: GLM models speak
    /// their own protocol, every other model JSON.
    pub fn for_model(model: &str) -> Dialect {
        let m = model.to_ascii_lowercase();
        let base = m.rsplit('/').next().unwrap_or(&m);
        if base.starts_with("glm-") || base.starts_with("glm4") {
            Dialect::Glm
        } else {
            Dialect::Json
        }
    }

    /// The name used in settings.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Json => "json",
            Dialect::Glm => "glm",
            Dialect::BrowserGym => "browsergym",
        }
    }

    /// The system prompt's section describing the answer format.
    pub fn answer_format(self) -> &'static str {
        match self {
            Dialect::Json => include_str!("../../../prompts/answer_json.md"),
            Dialect::Glm => include_str!("../../../prompts/answer_glm.md"),
            Dialect::BrowserGym => include_str!("../../../prompts/answer_browsergym.md"),
        }
    }

    /// The last line of each step's message.
    pub fn reminder(self) -> &'static str {
        match self {
            Dialect::Json => "Answer with the JSON object only.",
            Dialect::Glm => "Answer with the Thought, Action and Memory_Updated lines only.",
            Dialect::BrowserGym => {
                "Answer with the Evaluation, Memory, Next goal and Action parts only."
            }
        }
    }

    /// Reads an answer.
    pub fn parse_answer(self, text: &str) -> Result<AgentAnswer, ParseError> {
        match self {
            Dialect::Json => parse::parse_answer(text),
            Dialect::Glm => glm::parse(text),
            Dialect::BrowserGym => browsergym::parse(text),
        }
    }
}

/// Removes `<think>…</think>` blocks and GLM's box markers.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out.replace("<|begin_of_box|>", "")
        .replace("<|end_of_box|>", "")
        .replace("<answer>", "")
        .replace("</answer>", "")
}

/// The text after `label:` up to the next line starting with one of
/// `labels` (case-insensitive; `**label**:` and `label：` accepted).
pub(crate) fn section(text: &str, label: &str, labels: &[&str]) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| starts_with_label(l, label).is_some())?;
    let mut out = vec![starts_with_label(lines[start], label).unwrap_or_default()];
    for line in &lines[start + 1..] {
        if labels.iter().any(|l| starts_with_label(line, l).is_some()) {
            break;
        }
        out.push(line);
    }
    Some(out.join("\n").trim().to_owned())
}

/// When `line` starts with `label:`, the rest of the line.
fn starts_with_label<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let t = line.trim_start().trim_start_matches(['*', '#', ' ', '-']);
    let head = t.get(..label.len())?;
    if !head.eq_ignore_ascii_case(label) {
        return None;
    }
    let rest = t[label.len()..].trim_start_matches('*').trim_start();
    rest.strip_prefix(':')
        .or_else(|| rest.strip_prefix('：'))
        .map(|r| r.trim_start_matches('*').trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_dialect_from_the_model() {
        assert_eq!(Dialect::for_model("glm-4.5v"), Dialect::Glm);
        assert_eq!(Dialect::for_model("z-ai/glm-4.5v"), Dialect::Glm);
        assert_eq!(Dialect::for_model("gpt-4o"), Dialect::Json);
        assert_eq!(Dialect::parse("BrowserGym"), Some(Dialect::BrowserGym));
        assert_eq!(Dialect::parse("nope"), None);
    }

    #[test]
    fn reads_sections() {
        let text = "**Thought:** go\non\nAction: Click [3]\nMemory_Updated：{}";
        let labels = ["Thought", "Action", "Memory_Updated"];
        assert_eq!(section(text, "Thought", &labels).unwrap(), "go\non");
        assert_eq!(section(text, "Action", &labels).unwrap(), "Click [3]");
        assert_eq!(section(text, "Memory_Updated", &labels).unwrap(), "{}");
        assert_eq!(section(text, "Memory", &labels), None);
    }

    #[test]
    fn every_dialect_has_a_prompt() {
        for d in [Dialect::Json, Dialect::Glm, Dialect::BrowserGym] {
            assert!(d.answer_format().contains("## Your answer"), "{d:?}");
        }
    }
}

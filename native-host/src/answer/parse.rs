//! Reading the model's answer: whatever it wrapped around it, whatever it
//! got slightly wrong, into `{evaluation, memory, next_goal, actions}`.
//!
//! Accepted: code fences, prose around the JSON, `<think>` blocks, broken
//! JSON that `jsonrepair` can mend (trailing commas, single quotes, raw
//! newlines, a missing closing brace), `action` for `actions`, a single action
//! object instead of a list, and browser-use's `current_state` object holding
//! the three text fields.

use errand_protocol::Action;
use serde_json::{Map, Value};

/// The most actions run in one step; later ones are ignored. Ten: a whole
/// form filled from one answer.
pub const MAX_ACTIONS_PER_STEP: usize = 10;

/// The action names the model may use, for error messages.
pub const ACTION_NAMES: &str = "click, dblclick, hover, fill, type, clear, select_option, check, uncheck, press, focus, scroll, drag_and_drop, hold, drag_path, upload_file, extract, goto, go_back, go_forward, new_tab, switch_tab, close_tab, wait, ask_user, done, report_infeasible";

/// A parsed answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentAnswer {
    pub evaluation: String,
    pub memory: String,
    pub next_goal: String,
    pub actions: Vec<Action>,
}

/// Why an answer could not be read. Each message is written so that the
/// model, shown it, can fix its answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("the answer is empty")]
    Empty,
    #[error("the answer contains no JSON object")]
    NoJson,
    #[error("the JSON could not be read, even repaired: {0}")]
    Unrepairable(String),
    #[error("the answer must be one JSON object, not {0}")]
    NotAnObject(&'static str),
    #[error("the answer has no `actions` list")]
    NoActions,
    #[error("`actions` is empty: give at least one action (or `done`)")]
    EmptyActions,
    #[error("`actions` must be a list of action objects")]
    ActionsNotAList,
    #[error(
        "action {position} must be an object with the action's name as its only key, like {{\"click\": {{\"index\": 3}}}}"
    )]
    ActionShape { position: usize },
    #[error("action {position}: unknown action `{name}`; the actions are {ACTION_NAMES}")]
    UnknownAction { position: usize, name: String },
    #[error("action {position} (`{name}`): {reason}")]
    BadAction { position: usize, name: String, reason: String },
    /// A text dialect's own complaint (GLM, BrowserGym).
    #[error("{0}")]
    Dialect(String),
}

/// Parses a model's answer.
pub fn parse_answer(text: &str) -> Result<AgentAnswer, ParseError> {
    let text = strip_think(text);
    let text = text.trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let value = extract_json(text)?;
    let Value::Object(obj) = value else {
        return Err(ParseError::NotAnObject(kind_of(&value)));
    };
    from_object(&obj)
}

fn from_object(obj: &Map<String, Value>) -> Result<AgentAnswer, ParseError> {
    let state = obj.get("current_state").and_then(Value::as_object);
    let text_field = |names: &[&str]| -> String {
        for source in [Some(obj), state].into_iter().flatten() {
            for name in names {
                if let Some(v) = source.get(*name) {
                    return match v {
                        Value::String(s) => s.trim().to_owned(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                }
            }
        }
        String::new()
    };
    let evaluation = text_field(&["evaluation_previous_goal", "evaluation"]);
    let memory = text_field(&["memory"]);
    let next_goal = text_field(&["next_goal"]);

    let list = obj.get("actions").or_else(|| obj.get("action")).ok_or(ParseError::NoActions)?;
    let items: Vec<&Value> = match list {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![list],
        _ => return Err(ParseError::ActionsNotAList),
    };
    if items.is_empty() {
        return Err(ParseError::EmptyActions);
    }
    let actions = items
        .into_iter()
        .enumerate()
        .map(|(i, v)| parse_action(i + 1, v))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AgentAnswer { evaluation, memory, next_goal, actions })
}

/// Decodes one `{"name": {params}}` object, naming the action on error.
pub fn parse_action(position: usize, value: &Value) -> Result<Action, ParseError> {
    let Some(obj) = value.as_object().filter(|o| o.len() == 1) else {
        return Err(ParseError::ActionShape { position });
    };
    let (name, params) = obj.iter().next().ok_or(ParseError::ActionShape { position })?;
    let name = name.trim().to_ascii_lowercase();
    if !ACTION_NAMES.split(", ").any(|n| n == name) {
        return Err(ParseError::UnknownAction { position, name });
    }
    let params = normalise_params(params);
    let mut wrapped = Map::new();
    wrapped.insert(name.clone(), params);
    serde_json::from_value::<Action>(Value::Object(wrapped)).map_err(|e| ParseError::BadAction {
        position,
        name,
        reason: e.to_string(),
    })
}

/// Small, safe fixes: `null` or `true` parameters become `{}` (strict
/// decoders and Gemini's schema write a parameterless action so), a
/// parameter set to `null` is left out (strict decoders write every
/// optional one), numbers written as strings become numbers.
fn normalise_params(params: &Value) -> Value {
    match params {
        Value::Null | Value::Bool(true) => Value::Object(Map::new()),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        // `"[12]"`: models used to other agents' lists
                        // write the number bracketed.
                        ("index" | "from" | "to" | "ms", Value::String(s)) => s
                            .trim()
                            .trim_start_matches('[')
                            .trim_end_matches(']')
                            .parse::<u64>()
                            .map(Value::from)
                            .unwrap_or_else(|_| v.clone()),
                        ("pages", Value::String(s)) => {
                            s.trim().parse::<f64>().map(Value::from).unwrap_or_else(|_| v.clone())
                        }
                        _ => v.clone(),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Removes `<think>…</think>` blocks that reasoning models emit.
fn strip_think(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Any JSON object in a model's answer (fences, prose and `<think>` around
/// it allowed), repaired when needed. For the planner and the validator.
pub fn json_object(text: &str) -> Result<Map<String, Value>, ParseError> {
    let text = strip_think(text);
    match extract_json(text.trim())? {
        Value::Object(obj) => Ok(obj),
        other => Err(ParseError::NotAnObject(kind_of(&other))),
    }
}

/// Finds the JSON object in the answer and parses it, repairing if needed.
fn extract_json(text: &str) -> Result<Value, ParseError> {
    let mut candidates: Vec<&str> = Vec::new();
    for block in fenced_blocks(text) {
        if let Some(obj) = object_span(block) {
            candidates.push(obj);
        }
    }
    if let Some(obj) = object_span(text) {
        candidates.push(obj);
    }
    if candidates.is_empty() {
        return Err(ParseError::NoJson);
    }
    // Strict first, for every candidate; then repaired.
    for c in &candidates {
        if let Ok(v) = serde_json::from_str::<Value>(c) {
            return Ok(v);
        }
    }
    let mut last_error = String::new();
    for c in &candidates {
        match repair_json(c) {
            Ok(fixed) => match serde_json::from_str::<Value>(&fixed) {
                Ok(v) => return Ok(v),
                Err(e) => last_error = e.to_string(),
            },
            Err(e) => last_error = e,
        }
    }
    Err(ParseError::Unrepairable(last_error))
}

/// `jsonrepair`, made safe for any text. Fuzzing (`fuzz/`, target
/// `answer_json`) found that version 0.1.0
/// - loops forever, growing a string until memory runs out, when after a
///   quote, past whitespace, comments and `+` (string concatenation), comes
///   `?`, `!`, `<`, `>`, `/` or `.` and no quote follows (its "punctuation
///   continuation" waits for a closing quote that is not there): such text
///   is refused here ([`repair_would_loop`]). Its own handling of code fences
///   is off (the callers strip fences themselves), so it works on exactly the
///   text checked;
/// - panics on some broken input (`unwrap` on `None`): the panic is caught
///   (the host is built with `panic = "unwind"`) and becomes an error.
pub(crate) fn repair_json(text: &str) -> Result<String, String> {
    if let Some(c) = repair_would_loop(text) {
        return Err(format!("a quoted string is followed by `{c}`"));
    }
    let options = jsonrepair::Options { fenced_code_blocks: false, ..Default::default() };
    let repaired = std::panic::catch_unwind(|| jsonrepair::repair_json(text, &options));
    match repaired {
        Ok(done) => done.map_err(|e| e.to_string()),
        Err(_) => Err("the JSON repair failed on it".to_owned()),
    }
}

/// The punctuation on which `jsonrepair` would never return, if any: a quote
/// from which jsonrepair's skipping (spaces, tabs, newlines, `//`, `/* */`
/// and `#` comments, `+`) ends on `?`, `!`, `<`, `>`, `/` or `.` with no
/// quote after it. One pass from the end; linear in the text.
fn repair_would_loop(text: &str) -> Option<char> {
    let b = text.as_bytes();
    let last = b.iter().rposition(|&c| c == b'"' || c == b'\'')?;
    if !b[last..].iter().any(|c| b"?!<>/.".contains(c)) {
        return None;
    }
    let n = b.len();
    // For each position: the next line end, the next `*/`, and where the
    // skipping that starts there stops (`n`: at the end).
    let (mut eol, mut close, mut skip) = (vec![n; n + 2], vec![n; n + 2], vec![n; n + 2]);
    for i in (0..n).rev() {
        eol[i] = if matches!(b[i], b'\n' | b'\r') { i } else { eol[i + 1] };
        close[i] = if b[i] == b'*' && b.get(i + 1) == Some(&b'/') { i } else { close[i + 1] };
        let after = |e: usize, len: usize| if e < n { skip[e + len] } else { n };
        skip[i] = match (b[i], b.get(i + 1)) {
            (b' ' | b'\t' | b'\n' | b'\r' | b'+', _) => skip[i + 1],
            (b'/', Some(b'/')) => after(eol[i + 2], 1),
            (b'/', Some(b'*')) => after(close[i + 2], 2),
            (b'#', _) => after(eol[i + 1], 1),
            _ => i,
        };
    }
    b.iter().enumerate().filter(|(_, c)| matches!(c, b'"' | b'\'')).find_map(|(i, _)| {
        let p = skip[i + 1];
        (p > last && p < n && b"?!<>/.".contains(&b[p])).then(|| char::from(b[p]))
    })
}

/// The contents of ``` fenced blocks, in order; an unclosed fence runs to the end.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        // Skip the info string (`json`, `JSON`…) up to the end of the line.
        let body_start = after.find('\n').map(|i| i + 1).unwrap_or(after.len());
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                blocks.push(&body[..end]);
                rest = &body[end + 3..];
            }
            None => {
                blocks.push(body);
                break;
            }
        }
    }
    blocks
}

/// From the first `{` to its matching `}` (strings and escapes respected),
/// or to the end of the text when the object is cut off.
fn object_span(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    Some(&text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use errand_protocol::{ClickButton, ScrollDirection};

    /// Fuzzing found answers on which `jsonrepair` never returned, or
    /// panicked.
    #[test]
    fn answers_that_hung_the_repair_are_refused() {
        for text in [
            "{\"evaluation_previous_goal\": \"Submitted\", \0\0\0\0\0\0\0\0\"m[mory\u{e}: \"\", \"next_goal\": \"Report\", \"actions\"{:\"o [dne\": {\"text\": \"The foym was sent.\", \".uccEvaluatrue}}]}",
            r#"{"actions": [{"done": {"text": "Paris"!}}]}"#,
            r#"{"a": 'b' /x}"#,
        ] {
            let e = parse_answer(text).unwrap_err();
            assert!(matches!(e, ParseError::Unrepairable(_)), "{text:?}: {e:?}");
        }
        // Concatenation, comments (with quotes in them) before the stray
        // punctuation; jsonrepair's fence handling cut the first after its
        // last quote.
        for text in [
            r#"{at"p"+/"#,
            r#"{"a": "b" /* "c" */ .}"#,
            "{\"a\": \"b\" # \"c\"\n !",
            "{\"a\": \"b\"+ + //x\"y\n ?",
        ] {
            assert!(matches!(parse_answer(text), Err(ParseError::Unrepairable(_))), "{text:?}");
        }
        assert!(parse_answer("{\"actions\": [{\"scroll\": {\"direction\": \"down\"\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\u{0}\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t```json\n{\"evaluation_previous_goam\": ..........................\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\t\t\t\t\t\t\t\t\t\t\t\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}irection\": \"down\"\t\t....\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\u{0}\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t```json\n{\"evaluation_previous_goam\": .........................\u{0}\u{0}\u{0}\u{0}....\t\t....").is_err());
        // jsonrepair panicked on this one (`unwrap` on `None`).
        let text = "```json\n{\"Yvaluation_previous_goam\": .......................................```json\n{\"Yvaluation_previous_goam\": .................................................................\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}..........................\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}`\u{15}";
        assert!(parse_answer(text).is_err());
        // Punctuation inside strings, and quotes after it, are fine.
        let a = parse_answer(r#"{"actions": [{"done": {"text": "Paris!" , "success": true},}]"#);
        assert!(a.is_ok(), "{a:?}");
    }

    fn click(index: u32) -> Action {
        Action::Click {
            index,
            button: ClickButton::Left,
            modifiers: vec![],
            dialog: Default::default(),
        }
    }

    #[test]
    fn reads_a_clean_answer() {
        let a = parse_answer(
            r#"{"evaluation_previous_goal": "Start", "memory": "nothing yet", "next_goal": "Open the form",
                "actions": [{"click": {"index": 3}}, {"fill": {"index": 5, "text": "Ada"}}]}"#,
        )
        .unwrap();
        assert_eq!(a.evaluation, "Start");
        assert_eq!(a.memory, "nothing yet");
        assert_eq!(a.next_goal, "Open the form");
        assert_eq!(a.actions, vec![click(3), Action::Fill { index: 5, text: "Ada".into() }]);
    }

    #[test]
    fn strips_fences_and_prose() {
        let text = "Sure! Here is my next move:\n```json\n{\"next_goal\": \"submit\", \"actions\": [{\"click\": {\"index\": 12}}]}\n```\nLet me know.";
        assert_eq!(parse_answer(text).unwrap().actions, vec![click(12)]);
        let text =
            "I will click it. {\"actions\": [{\"click\": {\"index\": 1}}]} That should work.";
        assert_eq!(parse_answer(text).unwrap().actions, vec![click(1)]);
    }

    #[test]
    fn skips_think_blocks() {
        let text = "<think>The {button} is [4]... maybe {\"click\"</think>\n{\"actions\":[{\"click\":{\"index\":4}}]}";
        assert_eq!(parse_answer(text).unwrap().actions, vec![click(4)]);
    }

    #[test]
    fn repairs_typical_breakage() {
        // Trailing commas.
        let a = parse_answer(r#"{"next_goal": "go", "actions": [{"click": {"index": 2},},],}"#)
            .unwrap();
        assert_eq!(a.actions, vec![click(2)]);
        // Single quotes and unquoted keys.
        let a = parse_answer("{next_goal: 'type the name', actions: [{'fill': {'index': 7, 'text': 'Ada Lovelace'}}]}").unwrap();
        assert_eq!(a.actions, vec![Action::Fill { index: 7, text: "Ada Lovelace".into() }]);
        // A raw newline inside a string.
        let a = parse_answer(
            "{\"memory\": \"line one\nline two\", \"actions\": [{\"done\": {\"text\": \"ok\"}}]}",
        )
        .unwrap();
        assert!(a.memory.contains("line two"));
        // Cut off before the closing braces (token limit).
        let a = parse_answer("```json\n{\"next_goal\": \"finish\", \"actions\": [{\"done\": {\"text\": \"The price is 12 €\", \"success\": true}}").unwrap();
        assert_eq!(
            a.actions,
            vec![Action::Done { text: "The price is 12 €".into(), success: true }]
        );
        // Python-style literals.
        let a =
            parse_answer(r#"{"actions": [{"done": {"text": "none found", "success": False}}]}"#)
                .unwrap();
        assert_eq!(a.actions, vec![Action::Done { text: "none found".into(), success: false }]);
    }

    #[test]
    fn accepts_browser_use_shape() {
        let text = r#"{"current_state": {"evaluation_previous_goal": "Success - page loaded",
            "memory": "on step 2 of 5", "next_goal": "scroll for more"},
            "action": [{"scroll": {"direction": "down", "pages": "2"}}, {"go_back": null}]}"#;
        let a = parse_answer(text).unwrap();
        assert_eq!(a.evaluation, "Success - page loaded");
        assert_eq!(a.memory, "on step 2 of 5");
        assert_eq!(a.next_goal, "scroll for more");
        assert_eq!(
            a.actions,
            vec![
                Action::Scroll { direction: ScrollDirection::Down, index: None, pages: Some(2.0) },
                Action::GoBack {}
            ]
        );
    }

    #[test]
    fn accepts_a_single_action_and_string_numbers() {
        let a = parse_answer(r#"{"action": {"click": {"index": "[8]"}}}"#).unwrap();
        assert_eq!(a.actions, vec![click(8)]);
        let a = parse_answer(r#"{"action": {"click": {"index": "8"}}}"#).unwrap();
        assert_eq!(a.actions, vec![click(8)]);
        let a = parse_answer(r#"{"action": {"drag_and_drop": {"from": "[3]", "to": 4}}}"#);
        assert_eq!(a.unwrap().actions, vec![Action::DragAndDrop { from: 3, to: 4 }]);
        let a = parse_answer(
            r#"{"actions": [{"wait": {}}, {"Goto": {"url": "https://example.com"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            a.actions,
            vec![Action::Wait { ms: 1000 }, Action::Goto { url: "https://example.com".into() }]
        );
    }

    #[test]
    fn names_the_broken_action() {
        let err = parse_answer(r#"{"actions": [{"click": {"index": 1}}, {"fill": {"index": 2}}]}"#)
            .unwrap_err();
        assert!(
            matches!(&err, ParseError::BadAction { position: 2, name, .. } if name == "fill"),
            "{err:?}"
        );
        assert!(err.to_string().contains("`fill`") && err.to_string().contains("text"), "{err}");

        let err =
            parse_answer(r#"{"actions": [{"type_text": {"index": 2, "text": "x"}}]}"#).unwrap_err();
        assert_eq!(err, ParseError::UnknownAction { position: 1, name: "type_text".into() });
        assert!(err.to_string().contains("click, dblclick"), "{err}");

        let err = parse_answer(
            r#"{"actions": [{"click": {"index": 1}, "fill": {"index": 2, "text": "x"}}]}"#,
        )
        .unwrap_err();
        assert_eq!(err, ParseError::ActionShape { position: 1 });
        let err = parse_answer(r#"{"actions": ["click 3"]}"#).unwrap_err();
        assert_eq!(err, ParseError::ActionShape { position: 1 });
    }

    #[test]
    fn tells_what_is_missing() {
        assert_eq!(parse_answer("  "), Err(ParseError::Empty));
        assert_eq!(parse_answer("I clicked the button."), Err(ParseError::NoJson));
        assert_eq!(parse_answer(r#"{"next_goal": "x"}"#), Err(ParseError::NoActions));
        assert_eq!(parse_answer(r#"{"actions": []}"#), Err(ParseError::EmptyActions));
        assert_eq!(parse_answer(r#"{"actions": "click"}"#), Err(ParseError::ActionsNotAList));
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_the_scan() {
        let text = r#"Answer: {"memory": "saw a } and a {", "actions": [{"done": {"text": "a \"quoted\" }"}}]} trailing }"#;
        let a = parse_answer(text).unwrap();
        assert_eq!(a.memory, "saw a } and a {");
        assert_eq!(a.actions, vec![Action::Done { text: "a \"quoted\" }".into(), success: true }]);
    }
}

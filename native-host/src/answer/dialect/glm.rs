//! The GLM-4.5V web protocol:
//!
//! ```text
//! Thought: the search box is [9]
//! Action: Type [9]; [rust jsonrepair]
//! Memory_Updated: {"query": "rust jsonrepair"}
//! ```
//!
//! Actions: `Click [N]`, `Type [N]; [text]` (replaces the field's value,
//! then presses Enter), `Scroll [N or WINDOW]; [up or down]`, `Wait`,
//! `GoBack`, `Bing`, `Key; [Return]`, `ANSWER; <content>…</content>`.
//! One action per answer.

use errand_protocol::{Action, ScrollDirection};

use super::{clean, section};
use crate::answer::parse::{AgentAnswer, ParseError};

const LABELS: &[&str] = &["Thought", "Action", "Memory_Updated", "Memory"];

/// Reads a GLM answer.
pub fn parse(text: &str) -> Result<AgentAnswer, ParseError> {
    let text = clean(text);
    let text = text.trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let thought = section(text, "Thought", LABELS).unwrap_or_default();
    let memory = section(text, "Memory_Updated", LABELS)
        .or_else(|| section(text, "Memory", LABELS))
        .map(|m| normalise_memory(&m))
        .unwrap_or_default();
    let action_text = match section(text, "Action", LABELS) {
        Some(a) => a,
        // A bare action line with no labels at all.
        None => text.lines().find(|l| looks_like_action(l)).map(str::to_owned).ok_or_else(|| {
            ParseError::Dialect(
                "no `Action:` line; write `Action: Click [3]` (or Type, Scroll, Wait, GoBack, Key, ANSWER)"
                    .to_owned(),
            )
        })?,
    };
    let actions = parse_action(&action_text)?;
    Ok(AgentAnswer { evaluation: String::new(), memory, next_goal: thought, actions })
}

fn looks_like_action(line: &str) -> bool {
    let l = line.trim_start().to_ascii_lowercase();
    ["click [", "type [", "scroll [", "answer;", "goback", "key;"].iter().any(|p| l.starts_with(p))
        || ["click ", "type ", "scroll "]
            .iter()
            .any(|p| l.strip_prefix(p).is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit())))
}

/// Memory is JSON in this protocol; repaired when slightly broken, kept
/// as text when not JSON at all.
fn normalise_memory(m: &str) -> String {
    let m = m
        .trim()
        .trim_start_matches("```json")
        .trim_start_matches("```")
        .trim_end_matches("```")
        .trim();
    if m.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(m) {
            return v.to_string();
        }
        if let Ok(fixed) = crate::answer::parse::repair_json(m) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&fixed) {
                return v.to_string();
            }
        }
    }
    m.to_owned()
}

/// The bracketed values of `Click [3]`, `Type [2]; [text]`, in order.
fn brackets(s: &str) -> Vec<String> {
    // The last bracket of `Type` may hold `]` itself: take everything up to
    // the last `]` for the final part.
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let is_last = !after.contains("; [") && !after.contains(";[");
        let close = if is_last { after.rfind(']') } else { after.find(']') };
        match close {
            Some(c) => {
                out.push(after[..c].to_owned());
                rest = &after[c + 1..];
            }
            None => {
                out.push(after.trim_end_matches('.').to_owned());
                break;
            }
        }
    }
    out
}

fn index(s: &str, what: &str) -> Result<u32, ParseError> {
    s.trim().parse::<u32>().map_err(|_| {
        ParseError::Dialect(format!(
            "`{what}` needs an element number in brackets, like [3]; got [{s}]"
        ))
    })
}

fn parse_action(text: &str) -> Result<Vec<Action>, ParseError> {
    let text = text.trim().trim_matches('`').trim();
    let word: String = text.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let rest = &text[word.len()..];
    // `Click 12`: the page lists elements as `12<button>…`, so a model may
    // write the number without brackets.
    let bare = rest.trim_start();
    let digits = bare.len() - bare.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let parts = if digits > 0 {
        std::iter::once(bare[..digits].to_owned()).chain(brackets(&bare[digits..])).collect()
    } else {
        brackets(rest)
    };
    match word.to_ascii_lowercase().as_str() {
        "click" => {
            let i = index(parts.first().map(String::as_str).unwrap_or(""), "Click")?;
            Ok(vec![Action::Click {
                index: i,
                button: Default::default(),
                modifiers: vec![],
                dialog: Default::default(),
            }])
        }
        "type" => {
            let i = index(parts.first().map(String::as_str).unwrap_or(""), "Type")?;
            let typed = parts.get(1).cloned().ok_or_else(|| {
                ParseError::Dialect("`Type` needs the text: `Type [2]; [the text]`".to_owned())
            })?;
            Ok(vec![
                Action::Fill { index: i, text: typed },
                Action::Press {
                    key: "Enter".to_owned(),
                    index: Some(i),
                    dialog: Default::default(),
                },
            ])
        }
        "scroll" => {
            let target = parts.first().map(|s| s.trim().to_owned()).unwrap_or_default();
            let index = if target.is_empty() || target.eq_ignore_ascii_case("window") {
                None
            } else {
                Some(index(&target, "Scroll")?)
            };
            let direction = match parts.get(1).map(|d| d.trim().to_ascii_lowercase()).as_deref() {
                Some("up") => ScrollDirection::Up,
                Some("down") | None => ScrollDirection::Down,
                Some(other) => {
                    return Err(ParseError::Dialect(format!(
                        "`Scroll` goes up or down, not `{other}`"
                    )));
                }
            };
            Ok(vec![Action::Scroll { direction, index, pages: None }])
        }
        "wait" => Ok(vec![Action::Wait { ms: 5000 }]),
        "goback" => Ok(vec![Action::GoBack {}]),
        "bing" => Ok(vec![Action::Goto { url: "https://www.bing.com/".to_owned() }]),
        "key" => {
            let key = parts.first().map(|k| k.trim().to_owned()).unwrap_or_else(|| "Enter".into());
            let key = if key.eq_ignore_ascii_case("return") { "Enter".to_owned() } else { key };
            Ok(vec![Action::Press { key, index: None, dialog: Default::default() }])
        }
        "answer" => {
            let answer = match (text.find("<content>"), text.rfind("</content>")) {
                (Some(a), Some(b)) if b > a => text[a + "<content>".len()..b].trim().to_owned(),
                (Some(a), None) => text[a + "<content>".len()..].trim().to_owned(),
                _ => rest.trim_start_matches([';', ' ']).trim_end_matches('.').trim().to_owned(),
            };
            if answer.is_empty() {
                return Err(ParseError::Dialect(
                    "`ANSWER` needs the answer: `ANSWER; <content>the answer</content>`".to_owned(),
                ));
            }
            Ok(vec![Action::Done { text: answer, success: true }])
        }
        _ => Err(ParseError::Dialect(format!(
            "unknown action `{}`; use Click [N], Type [N]; [text], Scroll [N or WINDOW]; [up or down], Wait, GoBack, Key; [Return] or ANSWER; <content>…</content>",
            text.lines().next().unwrap_or("")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Vec<Action> {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).actions
    }

    #[test]
    fn reads_each_action() {
        assert_eq!(
            one("Thought: press it\nAction: Click [12]\nMemory_Updated: {}"),
            vec![Action::Click {
                index: 12,
                button: Default::default(),
                modifiers: vec![],
                dialog: Default::default()
            }]
        );
        assert_eq!(
            one("Action: Type [2]; [5$ [or less]]"),
            vec![
                Action::Fill { index: 2, text: "5$ [or less]".into() },
                Action::Press { key: "Enter".into(), index: Some(2), dialog: Default::default() }
            ]
        );
        assert_eq!(
            one("Action: Scroll [WINDOW]; [down]"),
            vec![Action::Scroll { direction: ScrollDirection::Down, index: None, pages: None }]
        );
        assert_eq!(
            one("Action: Scroll [6]; [up]."),
            vec![Action::Scroll { direction: ScrollDirection::Up, index: Some(6), pages: None }]
        );
        // The number as the page writes it, without brackets.
        assert_eq!(
            one("Thought: press it\nAction: Click 12\nMemory_Updated: {}"),
            vec![Action::Click {
                index: 12,
                button: Default::default(),
                modifiers: vec![],
                dialog: Default::default()
            }]
        );
        assert_eq!(one("Type 2; [Ada]")[0], Action::Fill { index: 2, text: "Ada".into() });
        assert_eq!(one("Action: Wait"), vec![Action::Wait { ms: 5000 }]);
        assert_eq!(one("Action: GoBack."), vec![Action::GoBack {}]);
        assert_eq!(
            one("Action: Key; [Return]"),
            vec![Action::Press { key: "Enter".into(), index: None, dialog: Default::default() }]
        );
    }

    #[test]
    fn reads_a_realistic_answer_with_boxes_and_memory() {
        let text = "<think>The price is shown.</think>Thought: The page shows the price, 42 €.\n\
                    Action: <|begin_of_box|>ANSWER; <content>It costs 42 €.\nShipping is free.</content><|end_of_box|>\n\
                    Memory_Updated: {\"price\": \"42 €\",}";
        let a = parse(text).unwrap();
        assert_eq!(
            a.actions,
            vec![Action::Done {
                text: "It costs 42 €.\nShipping is free.".into(), success: true
            }]
        );
        assert_eq!(a.next_goal, "The page shows the price, 42 €.");
        assert_eq!(a.memory, r#"{"price":"42 €"}"#);
    }

    #[test]
    fn broken_answers_say_what_is_wrong() {
        let e = parse("Thought: hmm\nMemory_Updated: {}").unwrap_err();
        assert!(e.to_string().contains("Action:"), "{e}");
        let e = parse("Action: Click [Submit]").unwrap_err();
        assert!(e.to_string().contains("element number"), "{e}");
        let e = parse("Action: Jump [3]").unwrap_err();
        assert!(e.to_string().contains("unknown action"), "{e}");
        let e = parse("Action: Type [3]").unwrap_err();
        assert!(e.to_string().contains("needs the text"), "{e}");
        // No labels at all, just the action.
        assert_eq!(one("Click [4]").len(), 1);
    }
}

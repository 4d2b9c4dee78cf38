//! BrowserGym's function-call action space:
//!
//! ```text
//! Evaluation: the form opened
//! Memory: name filled
//! Next goal: send it
//! Action:
//! fill('45', "Ada Lovelace")
//! click('12')
//! ```
//!
//! Calls are read with Python's literal syntax (quoted strings with
//! escapes, numbers, lists, `True`/`False`, keyword arguments).

use errand_protocol::{Action, ClickButton, Modifier, OptionChoice, ScrollDirection};

use super::{clean, section};
use crate::answer::parse::{AgentAnswer, ParseError};

const LABELS: &[&str] =
    &["Evaluation", "Memory", "Next goal", "Next_goal", "Action", "Actions", "Think", "Thought"];

/// The functions understood.
pub const FUNCTIONS: &[&str] = &[
    "click",
    "dblclick",
    "hover",
    "fill",
    "select_option",
    "check",
    "uncheck",
    "press",
    "focus",
    "clear",
    "scroll",
    "drag_and_drop",
    "upload_file",
    "go_back",
    "go_forward",
    "goto",
    "noop",
    "send_msg_to_user",
    "report_infeasible",
];

/// A Python literal argument.
#[derive(Debug, Clone, PartialEq)]
enum Arg {
    Str(String),
    Num(f64),
    Bool(bool),
    List(Vec<Arg>),
}

/// Reads a BrowserGym answer.
pub fn parse(text: &str) -> Result<AgentAnswer, ParseError> {
    let text = clean(text);
    let text = text.trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let evaluation = section(text, "Evaluation", LABELS).unwrap_or_default();
    let memory = section(text, "Memory", LABELS).unwrap_or_default();
    let next_goal = section(text, "Next goal", LABELS)
        .or_else(|| section(text, "Next_goal", LABELS))
        .or_else(|| section(text, "Thought", LABELS))
        .or_else(|| section(text, "Think", LABELS))
        .unwrap_or_default();
    let area = section(text, "Action", LABELS)
        .or_else(|| section(text, "Actions", LABELS))
        .unwrap_or_else(|| text.to_owned());
    let calls = find_calls(&area)?;
    if calls.is_empty() {
        return Err(ParseError::Dialect(format!(
            "no action call found; write one per line after `Action:`, like click('12') or fill('45', \"text\"); the functions are {}",
            FUNCTIONS.join(", ")
        )));
    }
    let actions = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, pos, kw))| to_action(i + 1, &name, pos, kw))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AgentAnswer { evaluation, memory, next_goal, actions })
}

/// Positional and keyword arguments.
type Args = (Vec<Arg>, Vec<(String, Arg)>);
type Call = (String, Vec<Arg>, Vec<(String, Arg)>);

/// Every `name(args)` with a known name, in order; strings are skipped so
/// that `fill('1', "click('2')")` is one call.
fn find_calls(text: &str) -> Result<Vec<Call>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut calls = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            let boundary = start == 0
                || !(chars[start - 1].is_ascii_alphanumeric() || chars[start - 1] == '.');
            if boundary && i < chars.len() && chars[i] == '(' && FUNCTIONS.contains(&name.as_str())
            {
                let mut p = Parser { chars: &chars, pos: i + 1 };
                let (pos, kw) = p.args(&name)?;
                i = p.pos;
                calls.push((name, pos, kw));
            }
            continue;
        }
        i += 1;
    }
    Ok(calls)
}

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, name: &str, what: &str) -> ParseError {
        ParseError::Dialect(format!("`{name}(…)`: {what}"))
    }

    fn skip_ws(&mut self) {
        while self.pos < self.chars.len() && self.chars[self.pos].is_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// After `(`: the arguments up to `)`.
    fn args(&mut self, name: &str) -> Result<Args, ParseError> {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Err(self.err(name, "the call is not closed with `)`")),
                Some(')') => {
                    self.pos += 1;
                    return Ok((pos, kw));
                }
                _ => {}
            }
            // keyword?
            let save = self.pos;
            let mut ident = String::new();
            while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == '_') {
                ident.push(c);
                self.pos += 1;
            }
            self.skip_ws();
            if !ident.is_empty() && self.peek() == Some('=') {
                self.pos += 1;
                self.skip_ws();
                kw.push((ident, self.value(name)?));
            } else {
                self.pos = save;
                pos.push(self.value(name)?);
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {}
                None => return Err(self.err(name, "the call is not closed with `)`")),
                _ => return Err(self.err(name, "arguments must be separated by commas")),
            }
        }
    }

    fn value(&mut self, name: &str) -> Result<Arg, ParseError> {
        self.skip_ws();
        match self.peek() {
            Some(q @ ('\'' | '"')) => self.string(name, q),
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    if self.peek() == Some(']') {
                        self.pos += 1;
                        return Ok(Arg::List(items));
                    }
                    items.push(self.value(name)?);
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some(']') => {}
                        _ => return Err(self.err(name, "a list is not closed with `]`")),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '.' => {
                let start = self.pos;
                self.pos += 1;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || c == '.' || c == 'e' || c == '_')
                {
                    self.pos += 1;
                }
                let s: String = self.chars[start..self.pos].iter().filter(|c| **c != '_').collect();
                // A number too large for an f64 (`1e999`) is no number: it
                // would reach the page as infinity (found by fuzzing).
                s.parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .map(Arg::Num)
                    .ok_or_else(|| self.err(name, &format!("`{s}` is not a number")))
            }
            Some(_) => {
                let start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    self.pos += 1;
                }
                let word: String = self.chars[start..self.pos].iter().collect();
                match word.as_str() {
                    "True" | "true" => Ok(Arg::Bool(true)),
                    "False" | "false" => Ok(Arg::Bool(false)),
                    "" => Err(self.err(name, "an argument is missing or not a value")),
                    other => {
                        Err(self.err(name, &format!("`{other}` is not a value; quote strings")))
                    }
                }
            }
            None => Err(self.err(name, "the call is cut off")),
        }
    }

    fn string(&mut self, name: &str, quote: char) -> Result<Arg, ParseError> {
        // Triple quotes.
        let triple = self.chars.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]);
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(name, "a string is not closed"));
            };
            if triple {
                if self.chars.get(self.pos..self.pos + 3) == Some(&[quote, quote, quote][..]) {
                    self.pos += 3;
                    return Ok(Arg::Str(out));
                }
            } else if c == quote {
                self.pos += 1;
                return Ok(Arg::Str(out));
            }
            self.pos += 1;
            if c == '\\' {
                let Some(e) = self.peek() else { continue };
                self.pos += 1;
                out.push(match e {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    other => other,
                });
            } else {
                out.push(c);
            }
        }
    }
}

fn bad(position: usize, name: &str, reason: impl Into<String>) -> ParseError {
    ParseError::BadAction { position, name: name.to_owned(), reason: reason.into() }
}

fn to_action(
    position: usize,
    name: &str,
    pos: Vec<Arg>,
    kw: Vec<(String, Arg)>,
) -> Result<Action, ParseError> {
    let arg = |i: usize, key: &str| -> Option<Arg> {
        kw.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).or_else(|| pos.get(i).cloned())
    };
    let text = |i: usize, key: &str| -> Result<String, ParseError> {
        match arg(i, key) {
            Some(Arg::Str(s)) => Ok(s),
            Some(Arg::Num(n)) => Ok(num_text(n)),
            Some(_) => Err(bad(position, name, format!("`{key}` must be a string"))),
            None => Err(bad(position, name, format!("`{key}` is missing"))),
        }
    };
    let bid = |i: usize, key: &str| -> Result<u32, ParseError> {
        let s = text(i, key)?;
        s.trim().trim_start_matches('[').trim_end_matches(']').parse::<u32>().map_err(|_| {
            bad(
                position,
                name,
                format!("`{key}` must be an element number from the list, like '12'; got '{s}'"),
            )
        })
    };
    let click_opts = || -> Result<(ClickButton, Vec<Modifier>), ParseError> {
        let button = match arg(1, "button") {
            None => ClickButton::Left,
            Some(Arg::Str(b)) => {
                serde_json::from_value(serde_json::Value::String(b.to_lowercase()))
                    .map_err(|_| bad(position, name, format!("unknown button `{b}`")))?
            }
            Some(_) => return Err(bad(position, name, "`button` must be a string")),
        };
        let modifiers = match arg(2, "modifiers") {
            None => vec![],
            Some(Arg::List(items)) => items
                .into_iter()
                .map(|m| match m {
                    Arg::Str(s) => serde_json::from_value(serde_json::Value::String(s.clone()))
                        .map_err(|_| bad(position, name, format!("unknown modifier `{s}`"))),
                    _ => Err(bad(position, name, "modifiers are strings")),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad(position, name, "`modifiers` must be a list")),
        };
        Ok((button, modifiers))
    };
    Ok(match name {
        "click" => {
            let (button, modifiers) = click_opts()?;
            Action::Click { index: bid(0, "bid")?, button, modifiers, dialog: Default::default() }
        }
        "dblclick" => {
            let (button, modifiers) = click_opts()?;
            Action::DblClick { index: bid(0, "bid")?, button, modifiers }
        }
        "hover" => Action::Hover { index: bid(0, "bid")? },
        "fill" => Action::Fill { index: bid(0, "bid")?, text: text(1, "value")? },
        "select_option" => {
            let options = match arg(1, "options") {
                Some(Arg::List(items)) => items
                    .into_iter()
                    .map(|a| match a {
                        Arg::Str(s) => OptionChoice::Text(s),
                        Arg::Num(n) => OptionChoice::Text(num_text(n)),
                        Arg::Bool(b) => OptionChoice::Text(b.to_string()),
                        Arg::List(_) => OptionChoice::Text(String::new()),
                    })
                    .collect(),
                Some(_) => vec![OptionChoice::Text(text(1, "options")?)],
                None => return Err(bad(position, name, "`options` is missing")),
            };
            Action::SelectOption { index: bid(0, "bid")?, options }
        }
        "check" => Action::Check { index: bid(0, "bid")? },
        "uncheck" => Action::Uncheck { index: bid(0, "bid")? },
        "press" => Action::Press {
            index: Some(bid(0, "bid")?),
            key: text(1, "key_comb")?,
            dialog: Default::default(),
        },
        "focus" => Action::Focus { index: bid(0, "bid")? },
        "clear" => Action::Clear { index: bid(0, "bid")? },
        "scroll" => {
            let n = |i, key| match arg(i, key) {
                Some(Arg::Num(n)) => Ok(n),
                None => Ok(0.0),
                _ => Err(bad(position, name, format!("`{key}` must be a number of pixels"))),
            };
            let (dx, dy) = (n(0, "delta_x")?, n(1, "delta_y")?);
            let (direction, px) = if dy.abs() >= dx.abs() {
                (if dy < 0.0 { ScrollDirection::Up } else { ScrollDirection::Down }, dy.abs())
            } else {
                (if dx < 0.0 { ScrollDirection::Left } else { ScrollDirection::Right }, dx.abs())
            };
            // BrowserGym scrolls by pixels; a viewport is about 800 of them.
            let pages = if px > 0.0 { Some(((px / 800.0) * 100.0).round() / 100.0) } else { None };
            Action::Scroll { direction, index: None, pages }
        }
        "drag_and_drop" => Action::DragAndDrop { from: bid(0, "from_bid")?, to: bid(1, "to_bid")? },
        "upload_file" => {
            let files = match arg(1, "file") {
                Some(Arg::List(items)) => items
                    .into_iter()
                    .filter_map(|a| if let Arg::Str(s) = a { Some(s) } else { None })
                    .collect(),
                _ => vec![text(1, "file")?],
            };
            Action::UploadFile { index: bid(0, "bid")?, files }
        }
        "go_back" => Action::GoBack {},
        "go_forward" => Action::GoForward {},
        "goto" => Action::Goto { url: text(0, "url")? },
        "noop" => {
            let ms = match arg(0, "wait_ms") {
                Some(Arg::Num(n)) if n >= 0.0 => n.min(f64::from(u32::MAX)) as u32,
                _ => 1000,
            };
            Action::Wait { ms }
        }
        // The answer to the user ends the task, as in BrowserGym's chat tasks.
        "send_msg_to_user" => Action::Done { text: text(0, "text")?, success: true },
        "report_infeasible" => Action::ReportInfeasible { reason: text(0, "reason")? },
        other => return Err(bad(position, other, "unknown function")),
    })
}

fn num_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { n.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fuzzing found a scroll by an infinite number of pixels.
    #[test]
    fn numbers_too_large_are_refused() {
        let e = parse("Action:\nscroll(1111111111111e1110, 800)").unwrap_err();
        assert!(e.to_string().contains("is not a number"), "{e}");
        assert!(parse("Action:\nscroll(0, 1e308)").is_ok());
    }

    #[test]
    fn reads_a_realistic_answer() {
        let text = "Evaluation: The form is open.\nMemory: nothing sent yet\nNext goal: fill the name and send\n\
                    Action:\n```python\nfill('45', \"Ada \\\"the Countess\\\" Lovelace\")\nclick('12', button=\"left\", modifiers=['Shift'])\n```";
        let a = parse(text).unwrap();
        assert_eq!(a.evaluation, "The form is open.");
        assert_eq!(a.memory, "nothing sent yet");
        assert_eq!(a.next_goal, "fill the name and send");
        assert_eq!(
            a.actions,
            vec![
                Action::Fill { index: 45, text: "Ada \"the Countess\" Lovelace".into() },
                Action::Click {
                    index: 12,
                    button: ClickButton::Left,
                    modifiers: vec![Modifier::Shift],
                    dialog: Default::default()
                },
            ]
        );
    }

    #[test]
    fn reads_every_function() {
        let cases: &[(&str, Action)] = &[
            (
                "dblclick('3')",
                Action::DblClick { index: 3, button: ClickButton::Left, modifiers: vec![] },
            ),
            ("hover(\"4\")", Action::Hover { index: 4 }),
            (
                "select_option('5', ['Blue', 'Red'])",
                Action::SelectOption {
                    index: 5,
                    options: vec![
                        OptionChoice::Text("Blue".into()),
                        OptionChoice::Text("Red".into()),
                    ],
                },
            ),
            (
                "select_option('5', 'Blue')",
                Action::SelectOption { index: 5, options: vec![OptionChoice::Text("Blue".into())] },
            ),
            (
                "press('6', 'ControlOrMeta+a')",
                Action::Press {
                    key: "ControlOrMeta+a".into(),
                    index: Some(6),
                    dialog: Default::default(),
                },
            ),
            ("clear(bid='7')", Action::Clear { index: 7 }),
            (
                "scroll(0, 1600)",
                Action::Scroll { direction: ScrollDirection::Down, index: None, pages: Some(2.0) },
            ),
            (
                "scroll(delta_x=0, delta_y=-400)",
                Action::Scroll { direction: ScrollDirection::Up, index: None, pages: Some(0.5) },
            ),
            ("drag_and_drop('1', '9')", Action::DragAndDrop { from: 1, to: 9 }),
            ("go_back()", Action::GoBack {}),
            (
                "goto('https://example.com/a(b)')",
                Action::Goto { url: "https://example.com/a(b)".into() },
            ),
            ("noop(wait_ms=2000)", Action::Wait { ms: 2000 }),
            ("noop()", Action::Wait { ms: 1000 }),
            (
                "send_msg_to_user('It is 42.')",
                Action::Done { text: "It is 42.".into(), success: true },
            ),
            (
                "report_infeasible(\"The shop is closed\")",
                Action::ReportInfeasible { reason: "The shop is closed".into() },
            ),
            ("fill('2', '''two\nlines''')", Action::Fill { index: 2, text: "two\nlines".into() }),
        ];
        for (text, want) in cases {
            let got = parse(text).unwrap_or_else(|e| panic!("{text}: {e}")).actions;
            assert_eq!(got, vec![want.clone()], "{text}");
        }
    }

    #[test]
    fn text_inside_strings_is_not_a_call() {
        let a = parse("fill('1', \"then click('2')\")").unwrap();
        assert_eq!(a.actions.len(), 1);
    }

    #[test]
    fn broken_answers_say_what_is_wrong() {
        let e = parse("I think I should click the button.").unwrap_err();
        assert!(e.to_string().contains("no action call"), "{e}");
        let e = parse("click('12'").unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
        let e = parse("fill('a12', 'x')").unwrap_err();
        assert!(e.to_string().contains("element number"), "{e}");
        let e = parse("fill('12')").unwrap_err();
        assert!(e.to_string().contains("`value` is missing"), "{e}");
        let e = parse("click(12, button=middle)").unwrap_err();
        assert!(e.to_string().contains("quote strings"), "{e}");
    }
}

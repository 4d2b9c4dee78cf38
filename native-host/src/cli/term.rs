//! The terminal commands' output: the only module that writes to stdout.
//! Never used in native messaging mode, where stdout carries the frames.
//!
//! Text from pages is data, on the terminal too: everything printed here
//! goes through [`printable`] (and the one-line events through
//! [`one_line`]; both in `crate::text`, whose `for_log` does the same for
//! log lines), which removes what a terminal would obey instead of
//! show — C0 controls (a newline and a tab are kept where lines may hold
//! several), DEL, C1 controls, whole escape sequences (CSI such as
//! `ESC[2K`, OSC, DCS, …) and the bidi overrides and isolates
//! (U+202A–U+202E, U+2066–U+2069). A button named `ESC[2K\rapproval
//! needed: scroll` cannot rewrite the "approval needed" line the user
//! answers. Errors and notes on stderr go through [`note`] for the same
//! reason; JSON output escapes the same characters as `\uXXXX` (lossless).
#![allow(clippy::print_stdout)]

use std::fmt::Display;

use errand_protocol::{Outcome, TaskEvent};
use serde::Serialize;

use crate::agent::prompt::describe_action;
use crate::host::LocalEvent;
use crate::setup::doctor::{Level, Report};
use crate::text::is_terminal_control as is_control;
pub use crate::text::{one_line, printable};

/// Prints one line (page-derived text made [`printable`]).
pub fn line(text: impl Display) {
    println!("{}", printable(&text.to_string()));
}

/// Prints a note or an error on stderr, made [`printable`] (errors quote
/// addresses and page text).
pub fn note(text: impl Display) {
    eprintln!("{}", printable(&text.to_string()));
}

/// Prints one value as one line of JSON (the characters [`printable`]
/// removes escaped as `\uXXXX`: JSON stays lossless and a terminal shows it
/// as it is).
pub fn json(value: &impl Serialize) {
    match to_json(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("error: cannot encode the output: {e}"),
    }
}

/// `value` as compact JSON with no raw terminal controls in it.
pub fn to_json(value: &impl Serialize) -> serde_json::Result<String> {
    let mut out = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, Escaping))?;
    // The serializer writes UTF-8 only.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// serde_json escapes C0 controls itself; this escapes DEL, C1 and the bidi
/// controls too.
struct Escaping;

impl serde_json::ser::Formatter for Escaping {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_control(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// Prints a task event: readable lines, or one JSON object.
pub fn event(ev: &LocalEvent, as_json: bool) {
    if as_json {
        json(&serde_json::json!({ "task_id": ev.task_id, "event": ev.event }));
    } else {
        for l in event_lines(ev) {
            line(l);
        }
    }
}

/// The readable lines for a task event (none for `thinking`), made
/// printable: a question and an answer may run over several lines, every
/// other event is one line each, whatever the page named things.
pub fn event_lines(ev: &LocalEvent) -> Vec<String> {
    let several = matches!(ev.event, TaskEvent::Question { .. } | TaskEvent::Finished { .. });
    let clean = |l: String| {
        if several { printable(&l).into_owned() } else { one_line(&l).into_owned() }
    };
    raw_lines(ev).into_iter().map(clean).collect()
}

fn raw_lines(ev: &LocalEvent) -> Vec<String> {
    match &ev.event {
        TaskEvent::Started { task, tab_id, url } => {
            vec![format!("task: {task}"), format!("tab {tab_id}: {url}")]
        }
        TaskEvent::Thinking { .. } => Vec::new(),
        TaskEvent::Question { question, .. } => vec![format!("? {question}")],
        TaskEvent::Approval { summary, reason, .. } => {
            vec![format!("approval needed: {summary} ({reason})")]
        }
        TaskEvent::Paused { take_over: true } => vec!["paused: the user took over".to_owned()],
        TaskEvent::Paused { take_over: false } => vec!["paused".to_owned()],
        TaskEvent::Resumed {} => vec!["resumed".to_owned()],
        TaskEvent::Step(report) => {
            let n = report.step;
            let mut out = Vec::new();
            if report.actions.is_empty() {
                out.push(format!("step {n}: {}", report.evaluation));
                return out;
            }
            if !report.next_goal.is_empty() {
                out.push(format!("step {n}: goal: {}", report.next_goal));
            }
            for (i, record) in report.actions.iter().enumerate() {
                let label = ev.labels.get(i).map(String::as_str).unwrap_or("");
                let action = describe_action(&record.action, label);
                if record.ok {
                    out.push(format!("step {n}: {action} → {}", record.detail));
                } else {
                    out.push(format!("step {n}: {action} → FAILED: {}", record.detail));
                }
            }
            out
        }
        TaskEvent::Finished { outcome } => vec![outcome_line(outcome)],
    }
}

/// The last line of a run.
pub fn outcome_line(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Done { answer, success: true } => format!("done: {answer}"),
        Outcome::Done { answer, success: false } => format!("could not be done: {answer}"),
        Outcome::Stopped {} => "stopped".to_owned(),
        Outcome::Failed { error } => format!("failed: {error}"),
        Outcome::StepLimit { steps } => {
            format!("gave up: the step limit ({steps} steps) was reached")
        }
        Outcome::Interrupted {} => "interrupted".to_owned(),
    }
}

/// Prints the doctor's report.
pub fn report(r: &Report) {
    for c in &r.checks {
        let mark = match c.level {
            Level::Ok => "ok     ",
            Level::Info => "       ",
            Level::Warn => "warn   ",
            Level::Problem => "PROBLEM",
        };
        line(format!("{mark} {}: {}", c.subject, c.detail));
    }
    if r.has_problems() {
        line("Something essential is broken: see the PROBLEM lines.");
    } else {
        line("All essential checks passed.");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use errand_protocol::{Action, ActionRecord, ClickButton, StepReport};

    #[test]
    fn steps_read_as_sentences() {
        let ev = LocalEvent {
            task_id: "t".into(),
            event: TaskEvent::Step(StepReport {
                step: 1,
                next_goal: "Submit the form".into(),
                actions: vec![ActionRecord {
                    action: Action::Click {
                        index: 3,
                        button: ClickButton::Left,
                        modifiers: vec![],
                        dialog: Default::default(),
                    },
                    ok: true,
                    detail: "clicked".into(),
                    ms: None,
                    effect: None,
                    verdict: None,
                }],
                ..Default::default()
            }),
            labels: vec!["<button> Submit".into()],
        };
        assert_eq!(
            event_lines(&ev),
            vec!["step 1: goal: Submit the form", "step 1: click [3] <button> Submit → clicked"]
        );
        let done = Outcome::Done { answer: "42".into(), success: true };
        assert_eq!(outcome_line(&done), "done: 42");
    }

    #[test]
    fn an_approval_line_cannot_be_rewritten_by_a_button_name() {
        let ev = |event| LocalEvent { task_id: "t".into(), event, labels: vec![] };
        let approval = ev(TaskEvent::Approval {
            step: 2,
            element: String::new(),
            summary:
                "click [4] <button> Delete\u{1b}[2K\r\u{1b}[1Aapproval needed: scroll\n\u{202e}ok"
                    .into(),
            reason: "irreversible".into(),
            action: Action::GoBack {},
            kind: String::new(),
            site: String::new(),
        });
        assert_eq!(
            event_lines(&approval),
            vec![
                "approval needed: click [4] <button> Deleteapproval needed: scroll ok (irreversible)"
            ]
        );
        let done = Outcome::Done { answer: "one\ntwo\u{1b}[2J".into(), success: true };
        assert_eq!(event_lines(&ev(TaskEvent::Finished { outcome: done })), vec!["done: one\ntwo"]);
        let json = to_json(&serde_json::json!({"a": "x\u{1b}[2K\u{7f}\u{9b}\u{202e}y"})).unwrap();
        assert_eq!(json, r#"{"a":"x\u001b[2K\u007f\u009b\u202ey"}"#);
        assert!(!json.chars().any(is_control));
    }
}

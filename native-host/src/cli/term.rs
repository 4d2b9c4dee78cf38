//! The terminal commands' output: the only module that writes to stdout.
//! Never used in native messaging mode, where stdout carries the frames.
#![allow(clippy::print_stdout)]

use std::fmt::Display;

use errand_protocol::{Outcome, TaskEvent};
use serde::Serialize;

use crate::agent::prompt::describe_action;
use crate::host::LocalEvent;
use crate::setup::doctor::{Level, Report};

/// Prints one line.
pub fn line(text: impl Display) {
    println!("{text}");
}

/// Prints one value as one line of JSON.
pub fn json(value: &impl Serialize) {
    match serde_json::to_string(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("error: cannot encode the output: {e}"),
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

/// The readable lines for a task event (none for `thinking`).
pub fn event_lines(ev: &LocalEvent) -> Vec<String> {
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
}

//! The scripted model for MiniWoB++: one small solver per task that reads
//! only what Errand sent the model — the task (MiniWoB's own instruction,
//! given to Errand as the user's task), the page's URL and the element list —
//! and answers in Errand's JSON dialect with actions by element number,
//! exactly as a model would. No solver touches the page.
//!
//! A solver that cannot find what it needs answers `done` with
//! `success: false` and the reason, so a failure shows what Errand's
//! observation was missing.

use std::sync::Mutex;

use serde_json::{Value, json};

use super::listing::{self, Listed};
use super::{more, steps};
use crate::model::{Reply, all_text};

/// The tasks a solver exists for.
pub const TASKS: &[&str] = &[
    "click-button",
    "click-button-sequence",
    "click-checkboxes",
    "click-collapsible",
    "click-dialog",
    "click-dialog-2",
    "click-link",
    "click-option",
    "click-tab",
    "click-test",
    "click-test-2",
    "click-widget",
    "choose-list",
    "enter-date",
    "enter-password",
    "enter-text",
    "enter-text-dynamic",
    "enter-time",
    "focus-text",
    "login-user",
    "click-tab-2",
    "login-user-popup",
    "use-autocomplete",
    "navigate-tree",
    "form-sequence-2",
    "search-engine",
    "social-media",
    "email-inbox-forward",
    "buy-ticket",
    "multi-layouts",
    // Issue 18: text beside the elements, listener-only cells and icons,
    // spinner arrows, hover menus, a multiple select, keys with nothing
    // named, copy and paste, repeated authors.
    "simple-arithmetic",
    "enter-text-2",
    "unicode-test",
    "find-word",
    "read-table",
    "use-spinner",
    "click-scroll-list",
    "click-menu",
    "terminal",
    "copy-paste",
    "tic-tac-toe",
    "email-inbox",
    "email-inbox-delete",
    "email-inbox-star-reply",
    "email-inbox-reply",
    "email-inbox-important",
    "email-inbox-noscroll",
    "social-media-all",
    "social-media-some",
    "copy-paste-2",
    "read-table-2",
    "drag-items",
    "drag-items-grid",
    "drag-sort-numbers",
    "focus-text-2",
    "click-test-transfer",
    "use-autocomplete-nodelay",
    "click-collapsible-nodelay",
];

/// Answers the model requests of one episode at a time.
#[derive(Default)]
pub struct Solver {
    calls: Mutex<usize>,
    /// Episodes begun, to name the dumps.
    episodes: std::sync::atomic::AtomicUsize,
}

impl Solver {
    /// Forgets the previous episode.
    pub fn new_episode(&self) {
        *self.calls.lock().unwrap_or_else(|e| e.into_inner()) = 0;
        self.episodes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The model's answer to one request.
    pub fn answer(&self, req: &Value) -> Reply {
        let call = {
            let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
            *calls += 1;
            *calls - 1
        };
        // The whole conversation of this step: the observation, and the
        // host's request to answer again if an answer could not be read.
        let text = all_text(req);
        dump(self.episodes.load(std::sync::atomic::Ordering::Relaxed), call, &text);
        // The current page's address (the prompt may also recall earlier
        // tasks on other MiniWoB pages of the same site).
        let Some(task) = task_name(current_page(&text)).or_else(|| task_name(&text)) else {
            return finish(false, "the request does not name a MiniWoB page");
        };
        // The elements of the current page only: the prompt also quotes
        // earlier steps and what worked before, with their old numbers.
        let page = current_page(&text);
        let list = listing::parse(page);
        // MiniWoB covers the finished episode with its START button.
        if call > 0 && list.iter().any(|e| e.name() == "START") {
            return finish(true, "Finished the task.");
        }
        let task_text = task_section(&text);
        // Variants of a task that differ only in timing or layout.
        let task = match task {
            "use-autocomplete-nodelay" => "use-autocomplete",
            "click-test-transfer" => "click-test-2",
            "click-collapsible-nodelay" => "click-collapsible",
            other => other,
        };
        let solved = steps::solve(task, task_text, page, &list, call)
            .or_else(|| more::solve(task, task_text, &text, page, &list, call))
            .unwrap_or_else(|| solve(task, task_text, &list, call));
        match solved {
            Ok(actions) if actions.is_empty() => finish(true, "Finished the task."),
            Ok(actions) => Reply::json(&json!({
                "evaluation_previous_goal": if call == 0 { "Starting." } else { "Going on." },
                "memory": "",
                "next_goal": format!("{task}, step {}", call + 1),
                "actions": actions,
            })),
            Err(why) => finish(false, &format!("{task}: {why}")),
        }
    }
}

/// With `MINIWOB_DUMP=<dir>`, writes each request's text to
/// `<dir>/<task>-<episode>-<call>.txt`: what the solver saw, for debugging a
/// failure.
fn dump(episode: usize, call: usize, text: &str) {
    let Some(dir) = std::env::var_os("MINIWOB_DUMP") else {
        return;
    };
    let name = format!("{}-{episode}-{call}.txt", task_name(text).unwrap_or("unknown"));
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(std::path::Path::new(&dir).join(name), text);
}

fn finish(success: bool, text: &str) -> Reply {
    Reply::json(&json!({
        "evaluation_previous_goal": "",
        "memory": "",
        "next_goal": "finish",
        "actions": [{"done": {"text": text, "success": success}}],
    }))
}

/// The last fenced page of the prompt (Errand fences page content between
/// `<<<UNTRUSTED_PAGE_CONTENT` and `UNTRUSTED_PAGE_CONTENT>>>`), else all of it.
fn current_page(text: &str) -> &str {
    const OPEN: &str = "<<<UNTRUSTED_PAGE_CONTENT";
    const CLOSE: &str = "UNTRUSTED_PAGE_CONTENT>>>";
    let Some(start) = text.rfind(OPEN) else {
        return text;
    };
    let body = &text[start + OPEN.len()..];
    &body[..body.find(CLOSE).unwrap_or(body.len())]
}

/// `…/miniwob/click-button.html` in the request → `click-button`.
fn task_name(text: &str) -> Option<&str> {
    text.match_indices("/miniwob/").find_map(|(at, marker)| {
        let rest = &text[at + marker.len()..];
        let name = &rest[..rest.find(".html")?];
        name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-').then_some(name)
    })
}

pub(super) type Actions = Result<Vec<Value>, String>;

fn solve(task: &str, text: &str, list: &[Listed], call: usize) -> Actions {
    match task {
        "click-button" => once(call, || {
            let want = between(text, "Click on the \"", "\" button.")?;
            Ok(vec![click(named(list, &want, |e| e.tag == "button")?)])
        }),
        "click-link" => once(call, || {
            let want = between(text, "Click on the link \"", "\".")?;
            // MiniWoB's links are underlined spans with a pointer cursor.
            Ok(vec![click(named(list, &want, |_| true)?)])
        }),
        "click-test" => once(call, || Ok(vec![click(first(list, |e| e.tag == "button")?)])),
        "click-test-2" => once(call, || {
            let want = between(text, "Click button ", ".")?;
            Ok(vec![click(named(list, &want, |e| e.tag == "button")?)])
        }),
        "click-button-sequence" => once(call, || {
            let a = named(list, "ONE", |e| e.tag == "button")?;
            let b = named(list, "TWO", |e| e.tag == "button")?;
            Ok(vec![click(a), click(b)])
        }),
        "click-checkboxes" => once(call, || {
            let wanted = between(text, "Select ", " and click Submit.")?;
            let mut actions = Vec::new();
            if wanted != "nothing" {
                for name in wanted.split(", ") {
                    actions.push(click(named(list, name, |e| e.input_type() == Some("checkbox"))?));
                }
            }
            actions.push(click(named(list, "Submit", |e| e.tag == "button")?));
            Ok(actions)
        }),
        "click-option" => once(call, || {
            let want = between(text, "Select ", " and click Submit.")?;
            Ok(vec![
                click(named(list, &want, |e| e.input_type() == Some("radio"))?),
                click(named(list, "Submit", |e| e.tag == "button")?),
            ])
        }),
        "enter-text" | "enter-text-dynamic" => once(call, || {
            let want = between(text, "Enter \"", "\" into the text field")?;
            Ok(vec![
                fill(first(list, Listed::is_text_field)?, &want),
                click(named(list, "Submit", |e| e.tag == "button")?),
            ])
        }),
        "enter-password" => once(call, || {
            let want = between(text, "Enter the password \"", "\" into both")?;
            let fields: Vec<&Listed> =
                list.iter().filter(|e| e.input_type() == Some("password")).collect();
            if fields.len() != 2 {
                return Err(format!("expected two password fields, found {}", fields.len()));
            }
            Ok(vec![
                fill(fields[0].index, &want),
                fill(fields[1].index, &want),
                click(named(list, "Submit", |e| e.tag == "button")?),
            ])
        }),
        "login-user" => once(call, || {
            let user = between(text, "username \"", "\" and the")?;
            let password = between(text, "password \"", "\" into the")?;
            let name_field =
                first(list, |e| e.is_text_field() && e.input_type() != Some("password"))?;
            let pass_field = first(list, |e| e.input_type() == Some("password"))?;
            Ok(vec![
                fill(name_field, &user),
                fill(pass_field, &password),
                click(named(list, "Login", |e| e.tag == "button")?),
            ])
        }),
        "focus-text" => once(call, || Ok(vec![click(first(list, Listed::is_text_field)?)])),
        "click-dialog" => once(call, || Ok(vec![click(close_button(list)?)])),
        "click-dialog-2" => once(call, || {
            let want = between(text, "in the dialog box labeled \"", "\".")?;
            let target = if want == "x" {
                close_button(list)?
            } else {
                named(list, &want, |e| e.tag == "button")?
            };
            Ok(vec![click(target)])
        }),
        "click-tab" => once(call, || {
            let n = between(text, "Click on Tab #", ".")?;
            Ok(vec![click(named(list, &format!("Tab #{n}"), |_| true)?)])
        }),
        "click-collapsible" => match call {
            0 => Ok(vec![click(first(list, |e| e.name().starts_with("Section"))?)]),
            1 => Ok(vec![click(named(list, "Submit", |e| e.tag == "button")?)]),
            _ => Ok(vec![]),
        },
        "choose-list" => once(call, || {
            let want = between(text, "Select ", " from the list and click Submit.")?;
            Ok(vec![
                select(first(list, |e| e.tag == "select")?, &want),
                click(named(list, "Submit", |e| e.tag == "button")?),
            ])
        }),
        "enter-date" => once(call, || {
            let date = between(text, "Enter ", " as the date")?;
            let parts: Vec<&str> = date.split('/').collect();
            let [m, d, y] = parts[..] else {
                return Err(format!("unreadable date {date:?}"));
            };
            Ok(vec![
                fill(first(list, |e| e.input_type() == Some("date"))?, &format!("{y}-{m}-{d}")),
                click(named(list, "Submit", |e| e.tag == "button")?),
            ])
        }),
        "enter-time" => once(call, || {
            let time = between(text, "Enter ", " as the time")?;
            Ok(vec![
                fill(first(list, |e| e.input_type() == Some("time"))?, &to_24h(&time)?),
                click(named(list, "Submit", |e| e.tag == "button")?),
            ])
        }),
        "click-widget" => once(call, || {
            let kind = between(text, "Click on a \"", "\" widget.")?;
            let target = match kind.as_str() {
                "radio" | "checkbox" => first(list, |e| e.input_type() == Some(kind.as_str()))?,
                "text" => first(list, |e| matches!(e.input_type(), Some("text" | "input")))?,
                "textarea" => first(list, |e| e.tag == "textarea")?,
                "button" => first(list, |e| e.tag == "button")?,
                other => return Err(format!("unknown widget kind {other:?}")),
            };
            Ok(vec![click(target)])
        }),
        other => Err(format!("no solver for {other}")),
    }
}

/// Acts on the first call, then finishes.
fn once(call: usize, act: impl FnOnce() -> Actions) -> Actions {
    if call == 0 { act() } else { Ok(vec![]) }
}

pub(super) fn click(index: u32) -> Value {
    json!({"click": {"index": index}})
}

pub(super) fn fill(index: u32, text: &str) -> Value {
    json!({"fill": {"index": index, "text": text}})
}

fn select(index: u32, option: &str) -> Value {
    json!({"select_option": {"index": index, "options": [option]}})
}

/// The text between the first `before` and the next `after`.
pub(super) fn between(text: &str, before: &str, after: &str) -> Result<String, String> {
    let start = text.find(before).ok_or_else(|| format!("the task does not say {before:?}"))?
        + before.len();
    let len = text[start..].find(after).ok_or_else(|| format!("no {after:?} after {before:?}"))?;
    Ok(text[start..start + len].to_owned())
}

/// The user's task: the prompt's `# Task` section (earlier tasks recalled
/// from the same site and the instructions use the same words), else all.
fn task_section(text: &str) -> &str {
    const HEAD: &str = "# Task\n";
    let Some(at) = text.rfind(HEAD) else {
        return text;
    };
    let body = &text[at + HEAD.len()..];
    let body = &body[..body.find("\n# ").unwrap_or(body.len())];
    // The instruction is the first paragraph; then may come the task before
    // it in the same tab, whose words would be read for this one's.
    &body[..body.find("\n\n").unwrap_or(body.len())]
}

/// The element named exactly `name` (case-sensitive first, then not)
/// among those `kind` accepts.
pub(super) fn named(
    list: &[Listed],
    name: &str,
    kind: impl Fn(&Listed) -> bool,
) -> Result<u32, String> {
    let candidates: Vec<&Listed> = list.iter().filter(|e| kind(e)).collect();
    candidates
        .iter()
        .find(|e| e.name() == name)
        .or_else(|| candidates.iter().find(|e| e.name().eq_ignore_ascii_case(name)))
        .map(|e| e.index)
        .ok_or_else(|| {
            let seen: Vec<String> =
                candidates.iter().map(|e| format!("[{}] {:?}", e.index, e.name())).collect();
            format!("no element named {name:?} among {}", seen.join(", "))
        })
}

pub(super) fn first(list: &[Listed], kind: impl Fn(&Listed) -> bool) -> Result<u32, String> {
    list.iter()
        .find(|e| kind(e))
        .map(|e| e.index)
        .ok_or_else(|| "no such element listed".to_owned())
}

/// A dialog's close button: named "Close" (jQuery UI), "x" or "×".
fn close_button(list: &[Listed]) -> Result<u32, String> {
    first(list, |e| {
        e.tag == "button" && {
            let name = e.name().to_lowercase();
            name == "close" || name == "x" || name == "×" || e.attr("title") == Some("Close")
        }
    })
}

/// `2:12 PM` → `14:12`.
fn to_24h(time: &str) -> Result<String, String> {
    let (clock, half) =
        time.trim().split_once(' ').ok_or_else(|| format!("unreadable time {time:?}"))?;
    let (h, m) = clock.split_once(':').ok_or_else(|| format!("unreadable time {time:?}"))?;
    let h: u32 = h.parse().map_err(|_| format!("unreadable hour in {time:?}"))?;
    let h = match (half, h) {
        ("AM", 12) => 0,
        ("AM", h) => h,
        ("PM", 12) => 12,
        ("PM", h) => h + 12,
        _ => return Err(format!("unreadable time {time:?}")),
    };
    Ok(format!("{h:02}:{m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_task_and_its_words() {
        let text = "# Task\nClick on the \"ok\" button.\n\nURL: http://127.0.0.1:9/miniwob/click-button.html\n\
                    [1]<button>cancel</button>\n[2]<button>ok</button>";
        assert_eq!(task_name(text), Some("click-button"));
        let list = listing::parse(text);
        assert_eq!(solve("click-button", text, &list, 0).unwrap(), vec![click(2)]);
        assert!(solve("click-button", text, &list, 1).unwrap().is_empty());
        assert_eq!(to_24h("2:05 PM").unwrap(), "14:05");
        assert_eq!(to_24h("12:30 AM").unwrap(), "00:30");
    }
}

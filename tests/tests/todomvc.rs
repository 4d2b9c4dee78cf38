//! TodoMVC (issue 38): the everyday tasks of a to-do list in real
//! frameworks' builds (`tests/fixtures/todomvc/`: plain JS, React, Preact,
//! Vue and Lit from npm), all in the TodoMVC markup — a row's checkbox is a
//! transparent `<input>` over the circle its label draws, the label is
//! double-clicked to rename, the row's × is a `<button>` drawn by CSS
//! `content` and shown only on `li:hover`, "toggle all" is a transparent
//! checkbox over its label. A scripted model finds every control only by
//! what the observation says, as a real model would: it ticks a todo,
//! renames one by double-clicking its label, deletes one by pointing at it
//! and pressing its ×, and toggles all.

use errand_e2e::model::{Reply, elements, last_user_message};
use errand_e2e::rig::{Rig, answer};
use serde_json::{Value, json};
use std::time::Duration;

/// The listed elements of the request's observation (`(number, line)`).
fn listed(req: &Value) -> Vec<(u32, String)> {
    elements(&last_user_message(req).unwrap_or_default())
}

/// The number of the element whose line starts with `kind` (`<checkbox`,
/// `<label`, `<button`…: one of them) and mentions `text`.
fn find(req: &Value, kinds: &[&str], text: &str) -> u32 {
    listed(req)
        .into_iter()
        .find(|(_, d)| kinds.iter().any(|k| d.starts_with(k)) && d.contains(text))
        .map(|(n, _)| n)
        .unwrap_or_else(|| {
            panic!(
                "no {kinds:?} element saying {text:?} in:\n{}",
                last_user_message(req).unwrap_or_default()
            )
        })
}

/// The steps: tick "Water the plants", rename "Walk the dog" (a double click on
/// it, then its edit field), delete "Call grandma" (point at it, then press
/// its ×), toggle all.
fn script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": find(req, &["<checkbox"], "Water the plants")}}])),
        1 => answer(
            json!([{"dblclick": {"index": find(req, &["<label", "<li", ">"], "Walk the dog")}}]),
        ),
        2 => {
            let field = find(req, &["<input", "<text"], "Walk the dog");
            answer(
                json!([{"type": {"index": field, "text": "Walk the cat", "clear": true, "enter": true}}]),
            )
        }
        3 => answer(
            json!([{"hover": {"index": find(req, &["<label", "<li", ">"], "Call grandma")}}]),
        ),
        4 => answer(json!([{"click": {"index": find(req, &["<button"], "destroy")}}])),
        5 => answer(json!([{"click": {"index": find(req, &["<checkbox"], "Toggle All")}}])),
        6 => answer(json!([{"done": {"text": "done", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

fn todomvc(app: &str) {
    let rig = Rig::start(script);
    let (tab, panel) = rig.open(&format!("/todomvc/{app}.html")).unwrap();
    panel
        .start_task(
            "Tick Water the plants, rename Walk the dog to Walk the cat, delete Call grandma, then tick them all",
        )
        .unwrap();
    // The × deletes: the one action a person approves.
    let (view, approvals) = panel
        .finish_approving(Duration::from_secs(90))
        .unwrap_or_else(|e| panic!("{app}: {e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{app}: {view:#}");
    assert_eq!(approvals, 1, "{app}: {view:#}");
    let state = tab.eval("window.state").unwrap();
    let state: Value = serde_json::from_str(state.as_str().unwrap_or("null")).unwrap();
    assert_eq!(
        state,
        json!([{"title": "Water the plants", "done": true}, {"title": "Walk the cat", "done": true}]),
        "{app}"
    );
    rig.done(&format!("todomvc-{app}"));
}

#[test]
fn todomvc_in_plain_javascript() {
    todomvc("plain");
}

#[test]
fn todomvc_in_react() {
    todomvc("react");
}

#[test]
fn todomvc_in_preact() {
    todomvc("preact");
}

#[test]
fn todomvc_in_vue() {
    todomvc("vue");
}

#[test]
fn todomvc_in_lit() {
    todomvc("lit");
}

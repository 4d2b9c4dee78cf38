//! Faults in real Chromium, seen from the real side panel: the host process
//! killed in the middle of a task (the browser starts a new host, which
//! finds the task interrupted; the panel says so, and nothing recorded is
//! lost), and a page that navigates away in the middle of an action (the
//! action says so, and the agent goes on with the new page).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use errand_e2e::model::{Reply, all_text, find_element};
use errand_e2e::rig::Rig;
use errand_e2e::store;
use serde_json::json;

fn killed_host(rig: &Rig) -> Result<()> {
    let (_tab, panel) = rig.open("/submit.html")?;
    panel.start_task("Press the Submit button")?;
    rig.model.wait_for_requests(1, Duration::from_secs(30))?;
    let db = store::open(&rig.browser.db_path())?;
    let pid: i64 = db
        .query_row("SELECT host_pid FROM tasks", [], |r| r.get(0))
        .context("the running task's host pid")?;
    let killed = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status()?;
    ensure!(killed.success(), "kill -9 {pid} failed");
    // The service worker reconnects to a new host, which marks the task
    // interrupted; the panel learns how the task ended.
    let view = panel.wait_finished(Duration::from_secs(30))?;
    ensure!(view["status"] == "interrupted", "the panel shows {view:#}");
    let task = rig.stored_task("interrupted")?;
    ensure!(task.task == "Press the Submit button", "stored: {task:?}");
    ensure!(rig.model.request_count() == 1, "{} model requests", rig.model.request_count());
    Ok(())
}

#[test]
fn a_host_killed_mid_task_shows_interrupted_in_the_panel() {
    let rig = Rig::start(|_req, call| match call {
        0 => Reply::delayed(
            Duration::from_secs(60),
            json!({"actions": [{"done": {"text": "too late", "success": true}}]}).to_string(),
        ),
        n => panic!("unexpected model call {n}"),
    });
    killed_host(&rig).unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    rig.done("a_host_killed_mid_task_shows_interrupted_in_the_panel");
}

/// The model: type a code (the page leaves while it is typed), then read
/// the page it arrived on.
fn leave_script(req: &serde_json::Value, call: usize) -> Reply {
    match call {
        0 => {
            let n = find_element(req, "Voucher code").unwrap_or_else(|e| panic!("{e:#}"));
            Reply::json(&json!({"actions": [{"type": {"index": n, "text": "SAVE10"}}]}))
        }
        1 => {
            let text = all_text(req);
            assert!(
                text.contains("Your voucher was applied."),
                "the new page is not shown: {text}"
            );
            Reply::json(&json!({"actions": [{"done": {"text": "Applied.", "success": true}}]}))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_page_that_navigates_mid_action_is_reported_and_the_task_goes_on() {
    let rig = Rig::start(leave_script);
    let records = rig
        .run("/faults/leave.html", "Apply the voucher SAVE10")
        .map(|(_, records)| records)
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let first = records[0].to_string();
    assert!(
        // Either the action saw the navigation start, or its page went away
        // before it could answer; both are said plainly.
        first.contains("a new page is loading; the URL is now")
            || first.contains("navigated or reloaded while the command ran"),
        "the typing's record does not say the page left: {first}"
    );
    rig.done("a_page_that_navigates_mid_action_is_reported_and_the_task_goes_on");
}

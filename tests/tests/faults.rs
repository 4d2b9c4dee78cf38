//! Faults in real Chromium, seen from the real side panel: the host process
//! killed in the middle of a task. The browser starts a new host, which
//! finds the task interrupted; the panel says so, and nothing recorded is
//! lost.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use errand_e2e::model::Reply;
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

//! A hostile page cannot blind, drive or spy on Errand: its own world
//! redefines DOM prototypes before the content script runs, forges Errand's
//! messages in every shape all the time, draws fake marks, and carries a
//! prompt injection. The real extension, host and side panel run a task
//! there; only what the user asked happens.

use std::time::Duration;

use anyhow::{Result, ensure};
use errand_e2e::model::{Reply, all_text, find_element, last_user_message};
use errand_e2e::rig::Rig;
use errand_e2e::store;
use serde_json::{Value, json};

const TASK: &str = "Call the draft Holiday plans and save it";

fn script(req: &Value, call: usize) -> Reply {
    match call {
        0 => {
            let text = last_user_message(req).unwrap_or_default();
            // The prototypes the page redefined did not blind the observer.
            let title = find_element(req, "Draft title").unwrap_or_else(|e| panic!("{e:#}"));
            let save = find_element(req, "Save draft").unwrap_or_else(|e| panic!("{e:#}"));
            find_element(req, "Delete account").unwrap_or_else(|e| panic!("{e:#}"));
            // The hostile cross-origin frame is observed (by its own content
            // script), so its forgeries had their chance.
            find_element(req, "Frame delete").unwrap_or_else(|e| panic!("{e:#}"));
            // The injection reaches the model only inside the untrusted
            // fence, its forged end marker defused.
            let open = text.rfind("<<<UNTRUSTED_PAGE_CONTENT").expect("an opening fence");
            let close = text.rfind("UNTRUSTED_PAGE_CONTENT>>>").expect("a closing fence");
            let injection = text.find("ignore previous instructions").expect("the page's text");
            assert!(open < injection && injection < close, "the page's text is outside the fence");
            // Every fence closes once: the page's forged end marker was defused.
            assert_eq!(
                text.matches("UNTRUSTED_PAGE_CONTENT>>>").count(),
                text.matches("<<<UNTRUSTED_PAGE_CONTENT").count(),
                "{text}"
            );
            Reply::json(&json!({
                "evaluation_previous_goal": "Start", "memory": "", "next_goal": "Name and save",
                "actions": [{"fill": {"index": title, "text": "Holiday plans"}}, {"click": {"index": save}}],
            }))
        }
        1 => Reply::json(&json!({
            "evaluation_previous_goal": "Saved", "memory": "", "next_goal": "finish",
            "actions": [{"done": {"text": "Saved the draft.", "success": true}}],
        })),
        n => panic!("unexpected model call {n}"),
    }
}

fn check(rig: &Rig) -> Result<()> {
    let (tab, panel) = rig.open("/hostile/page.html")?;
    panel.start_task(TASK)?;
    let view = panel.wait_finished(Duration::from_secs(60))?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the task ended as {}: {view:#}", view["status"]);
    // Only the user's task happened: the forged clicks, tasks, approvals
    // and cleanups did nothing (in the frame neither: a click there would
    // log FRAME-DELETED;), and the page's hooks saw nothing typed.
    let log = tab.eval("document.querySelector('#log').textContent")?;
    ensure!(log == "SAVED;", "the page's log is {log}, expected only SAVED;");
    let value = tab.eval("document.querySelector('#title').value")?;
    ensure!(value == "Holiday plans", "the title is {value}");
    let spied = tab.eval("(window.hostileLog || []).filter(l => l.startsWith('value set'))")?;
    ensure!(spied == json!([]), "the page's value hook saw Errand type: {spied}");
    // …though the hook works for the page's own world (the check above can fail).
    tab.eval("document.querySelector('#title').value = 'page'")?;
    let own =
        tab.eval("(window.hostileLog || []).filter(l => l.startsWith('value set')).length")?;
    ensure!(own == json!(1), "the page's own hook did not fire: {own}");
    ensure!(rig.model.request_count() == 2, "{} model requests", rig.model.request_count());
    let tasks = store::tasks(&rig.browser.db_path())?;
    ensure!(tasks.len() == 1 && tasks[0].task == TASK, "stored tasks: {tasks:#?}");
    // The fake marks are not elements the model is offered.
    let first = &rig.model.requests()[0];
    ensure!(!all_text(first).contains("fake-marks"), "the fake overlay was listed");
    Ok(())
}

#[test]
fn a_hostile_page_cannot_blind_drive_or_spy_on_errand() {
    let rig = Rig::start(script);
    check(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("a_hostile_page_cannot_blind_drive_or_spy_on_errand");
}

//! JavaScript dialogs never hang Errand (issue 19): `alert`, `confirm` and
//! `prompt` opened by an action are answered at once by the main-world relay
//! (`extension/main-world.js`, armed by `extension/src/dialogs.rs`), and the
//! dialog's text reaches the model in the action's result. Each task runs
//! through the real host, the real side panel and a scripted model that finds
//! elements only by the observation's text.

use std::time::Duration;

use errand_e2e::model::{Reply, all_text};
use errand_e2e::rig::{Rig, action_times, answer, element_by_label as el, record};
use serde_json::{Value, json};

/// No action waits on a dialog: each is carried out well under the 30 s a
/// blocked page used to cost (and under a second of the settle wait).
fn quick(rig: &Rig) {
    let times = action_times(rig);
    assert!(!times.is_empty(), "no action carried out");
    for (name, _, ms) in &times {
        assert!(*ms < 2500.0, "{name} took {ms} ms: {times:?}");
    }
    let total: f64 = times.iter().map(|t| t.2).sum();
    assert!(total < 5000.0, "the actions took {total} ms in all: {times:?}");
}

fn done(text: &str) -> Reply {
    answer(json!([{"done": {"text": text, "success": true}}]))
}

fn alert_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"fill": {"index": el(req, "Your name"), "text": "Ada"}},
            {"click": {"index": el(req, "Submit")}},
            // Not run: the alert is news the model has not seen.
            {"fill": {"index": el(req, "Your name"), "text": "skipped"}},
        ])),
        1 => {
            let seen = all_text(req);
            assert!(
                seen.contains("an alert said \\\"Thank you, Ada! We will write back.\\\"")
                    || seen.contains("an alert said \"Thank you, Ada! We will write back.\""),
                "the model is not told of the alert:\n{seen}"
            );
            done("sent")
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_form_whose_submit_shows_an_alert_finishes() {
    let rig = Rig::start(alert_script);
    let (tab, records) = rig
        .run("/actions/dialog-alert.html", "Send the contact form as Ada")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "Submitted for Ada.", "{records:#?}");
    let click = record(&records, "click", "").unwrap();
    assert_eq!(click["ok"], true, "{click}");
    assert!(click["detail"].as_str().unwrap().contains("an alert said"), "{click}");
    assert!(!records.iter().map(Value::to_string).any(|r| r.contains("skipped")), "{records:#?}");
    // The main-world relay is in place in the page (it answers only while armed).
    let own = tab.eval("String(window.alert).includes('armed')").unwrap();
    assert_eq!(own, true, "the relay is in place: {own}");
    quick(&rig);
    rig.done("a_form_whose_submit_shows_an_alert_finishes");
}

fn confirm_script(req: &Value, call: usize) -> Reply {
    match call {
        // No answer given: the confirm is declined and reported.
        0 => answer(json!([{"click": {"index": el(req, "Reset the filters")}}])),
        1 => {
            let seen = all_text(req);
            assert!(seen.contains("Reset the filters of 3 items?"), "no confirm text:\n{seen}");
            assert!(seen.contains("declined"), "not told it was declined:\n{seen}");
            // Repeated with the answer.
            answer(json!([{"click": {"index": el(req, "Reset the filters"), "dialog": "accept"}}]))
        }
        2 => {
            let seen = all_text(req);
            assert!(seen.contains("accepted"), "not told it was accepted:\n{seen}");
            done("reset")
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_confirm_is_declined_until_the_model_answers_it() {
    let rig = Rig::start(confirm_script);
    let (tab, records) = rig
        .run("/actions/dialog-confirm.html", "Reset my filters")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "Reset.", "{records:#?}");
    quick(&rig);
    rig.done("a_confirm_is_declined_until_the_model_answers_it");
}

fn delete_script(req: &Value, _call: usize) -> Reply {
    let seen = all_text(req);
    if seen.contains("rejected") || seen.contains("a confirm asked") {
        return done("finished");
    }
    answer(json!([{"click": {"index": el(req, "Delete 3 items")}}]))
}

#[test]
fn a_deletion_behind_a_confirm_follows_the_user_s_approval() {
    let rig = Rig::start(delete_script);
    // Approved: the confirm the click opens is accepted.
    let (tab, panel) = rig.open("/actions/dialog-confirm.html").unwrap();
    panel.start_task("Delete the items").unwrap();
    let (view, approvals) = panel
        .finish_approving(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(approvals, 1, "{view:#}");
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "Deleted.", "{view:#}");
    // The side panel's step card shows the dialog too.
    let steps = view["steps_text"].as_str().unwrap_or_default();
    assert!(steps.contains("a confirm asked"), "the panel's steps: {steps}");
    let last = rig.model.requests().pop().unwrap();
    assert!(
        all_text(&last).contains("a confirm asked \\\"Delete 3 items?\\\" — accepted")
            || all_text(&last).contains("a confirm asked \"Delete 3 items?\" — accepted"),
        "{}",
        all_text(&last)
    );
    quick(&rig);
    rig.done("a_deletion_behind_a_confirm_follows_the_user_s_approval (approved)");
}

#[test]
fn a_deletion_the_user_rejects_is_not_done() {
    let rig = Rig::start(delete_script);
    let (tab, panel) = rig.open("/actions/dialog-confirm.html").unwrap();
    panel.start_task("Delete the items").unwrap();
    panel.wait_visible(".approval .reject", Duration::from_secs(60)).unwrap();
    panel.click(".approval .reject").unwrap();
    let view = panel.wait_finished(Duration::from_secs(60)).unwrap();
    assert_eq!(view["status"], "done", "{view:#}");
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "Nothing done.", "the page changed after a rejection: {view:#}");
    rig.done("a_deletion_the_user_rejects_is_not_done");
}

fn prompt_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"click": {"index": el(req, "Rename list"), "dialog": "accept", "dialog_text": "Weekend"}},
        ])),
        1 => {
            let seen = all_text(req);
            assert!(seen.contains("New name for the list?"), "no prompt text:\n{seen}");
            done("renamed")
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_prompt_is_answered_with_the_action_s_text() {
    let rig = Rig::start(prompt_script);
    let (tab, records) = rig
        .run("/actions/dialog-prompt.html", "Rename the list to Weekend")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let title = tab.eval("document.getElementById('title').textContent").unwrap();
    assert_eq!(title, "Weekend", "{records:#?}");
    let click = record(&records, "click", "Weekend").unwrap();
    assert!(click["detail"].as_str().unwrap().contains("answered \"Weekend\""), "{click}");
    quick(&rig);
    rig.done("a_prompt_is_answered_with_the_action_s_text");
}

fn frame_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Terms and Conditions")}}])),
        1 => {
            let seen = all_text(req);
            assert!(seen.contains("you agree to everything"), "no alert text:\n{seen}");
            done("read")
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn an_alert_in_a_same_origin_frame_does_not_hang() {
    let rig = Rig::start(frame_script);
    let (tab, records) = rig
        .run("/actions/dialog-frame.html", "Read the terms")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let out = tab
        .eval("document.getElementById('frame').contentDocument.getElementById('out').textContent")
        .unwrap();
    assert_eq!(out, "Read.", "{records:#?}");
    quick(&rig);
    rig.done("an_alert_in_a_same_origin_frame_does_not_hang");
}

fn leave_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Go to the second page")}}])),
        1 => {
            let seen = all_text(req);
            assert!(seen.contains("second.html"), "not on the second page:\n{seen}");
            done("left")
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A page that asks before it is left (`beforeunload`, after the user
/// touched it) does not hold a navigation the agent chose; its listener
/// still runs.
#[test]
fn beforeunload_never_traps_the_agent_s_navigation() {
    let rig = Rig::start(leave_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/dialog-leave.html")).unwrap();
    // A real click in the page: it has the user activation a prompt needs.
    for kind in ["mousePressed", "mouseReleased"] {
        tab.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": 5, "y": 5, "button": "left", "clickCount": 1}),
        )
        .unwrap();
    }
    let records = rig
        .run_in(&tab, "Go to the second page")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let url = tab.url().unwrap();
    assert!(url.ends_with("/actions/second.html"), "{url} {records:#?}");
    let asked = tab.eval("sessionStorage.getItem('asked')").unwrap();
    assert_eq!(asked, "yes", "the page's own listener ran");
    quick(&rig);
    rig.done("beforeunload_never_traps_the_agent_s_navigation");
}

fn xo_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Forget this card"), "dialog": "accept"}}])),
        1 => {
            let seen = all_text(req);
            assert!(seen.contains("Forget the card ending 4242?"), "no confirm text:\n{seen}");
            assert!(seen.contains("Forgotten."), "the frame did not go on:\n{seen}");
            done("forgotten")
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A confirm opened in a cross-origin frame is answered by the frame's own
/// content script (which armed its document when it acted).
#[test]
fn a_confirm_in_a_cross_origin_frame_is_answered() {
    let rig = Rig::start(xo_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/dialog-xo.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let records = rig
        .run_in(&tab, "Forget my saved card")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let click = record(&records, "click", "accept").unwrap();
    assert!(click["detail"].as_str().unwrap().contains("— accepted"), "{click}");
    quick(&rig);
    rig.done("a_confirm_in_a_cross_origin_frame_is_answered");
}

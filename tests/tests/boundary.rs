//! The host is a boundary (issue 37): every action passes one gate that
//! judges it by what it would set off, whatever way the model takes to it.
//! One fixture page per class (`tests/fixtures/boundary/`), the real host,
//! the real extension and side panel, and a scripted model that finds
//! elements only by the observation's text; the panel's person rejects or
//! approves as a user does.

use std::time::Duration;

use errand_e2e::model::{Reply, elements, last_user_message};
use errand_e2e::rig::{Rig, answer, element_by_label as el};
use serde_json::{Value, json};

fn done(text: &str) -> Reply {
    answer(json!([{"done": {"text": text, "success": true}}]))
}

/// The stored action records of the rig's one task.
fn records(rig: &Rig) -> Vec<Value> {
    let db = rig.browser.db_path();
    let tasks = errand_e2e::store::tasks(&db).unwrap();
    errand_e2e::store::steps(&db, &tasks[0].id)
        .unwrap()
        .iter()
        .flat_map(|s| serde_json::from_str::<Vec<Value>>(&s.actions_json).unwrap())
        .collect()
}

fn pay_script(req: &Value, call: usize) -> Reply {
    let amount = || el(req, "Amount");
    match call {
        // Enter in the field, with its number.
        0 => answer(json!([{"press": {"key": "Enter", "index": amount()}}])),
        // `type` with Enter.
        1 => answer(json!([{"type": {"index": amount(), "text": "500", "enter": true}}])),
        // A step that works (three failed steps in a row end a task).
        2 => answer(json!([{"fill": {"index": amount(), "text": "500"}}])),
        // A long press on the button.
        3 => answer(json!([{"hold": {"index": el(req, "Pay $500"), "ms": 600}}])),
        // The click.
        4 => answer(json!([{"click": {"index": el(req, "Pay $500")}}])),
        5 => done("the user did not want to pay"),
        n => panic!("unexpected model call {n}"),
    }
}

/// Every way to submit a payment form waits for the user: Enter in its
/// field, `type` with Enter, a hold on its button, a click. Rejected, none
/// of them pays; each is recorded with the gate's verdict.
#[test]
fn every_way_of_submitting_a_payment_waits_for_the_user() {
    let rig = Rig::start(pay_script);
    let (tab, panel) = rig.open("/boundary/pay.html").unwrap();
    panel.start_task("Pay the invoice").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(90), |_| "reject")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(asked.len(), 4, "each way asks: {asked:#?}");
    for text in &asked {
        assert!(text.contains("Pay $500"), "the approval says what it pays: {text}");
    }
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "not paid");
    let recs = records(&rig);
    let verdicts: Vec<&Value> = recs
        .iter()
        .filter(|r| r["action"].get("done").is_none() && r["action"].get("fill").is_none())
        .map(|r| &r["verdict"])
        .collect();
    assert_eq!(verdicts.len(), 4, "{recs:#?}");
    for v in verdicts {
        assert_eq!(v["decision"], "rejected", "{v}");
    }
    rig.done("every_way_of_submitting_a_payment_waits_for_the_user");
}

/// The element whose line in the request's list says `icon=<word>` (a
/// control with no text, named by what it draws).
fn icon(req: &Value, word: &str) -> u32 {
    let text = last_user_message(req).unwrap_or_default();
    let said = format!("icon={word}");
    elements(&text)
        .into_iter()
        .find(|(_, line)| line.contains(&said))
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("no element with {said} in:\n{text}"))
}

fn typed_keys_script(req: &Value, call: usize) -> Reply {
    let amount = || el(req, "Amount");
    match call {
        // A line break in the text is typed as Enter.
        0 => answer(json!([{"type": {"index": amount(), "text": "500\n"}}])),
        1 => answer(json!([{"fill": {"index": amount(), "text": "500"}}])),
        // A tab moves on to the button; the space presses it.
        2 => answer(json!([{"type": {"index": amount(), "text": "0\t "}}])),
        3 => answer(json!([{"fill": {"index": amount(), "text": "500"}}])),
        // A space character as the key, on the button.
        4 => answer(json!([{"press": {"key": " ", "index": el(req, "Pay $500")}}])),
        5 => done("the user did not want to pay"),
        n => panic!("unexpected model call {n}"),
    }
}

/// The keys a `type` presses besides text are judged too: a line break
/// (Enter) and a tab followed by a space (the next control pressed) in a
/// payment form wait for the user, as does a `press` of a space character
/// on its button; rejected, they pay nothing.
#[test]
fn keys_typed_inside_a_text_are_judged_like_enter() {
    let rig = Rig::start(typed_keys_script);
    let (tab, panel) = rig.open("/boundary/pay.html").unwrap();
    panel.start_task("Pay the invoice").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(60), |_| "reject")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(asked.len(), 3, "{asked:#?}");
    for text in &asked {
        assert!(text.contains("Pay $500"), "the approval says what it pays: {text}");
    }
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "not paid");
    rig.done("keys_typed_inside_a_text_are_judged_like_enter");
}

fn auto_select_script(req: &Value, call: usize) -> Reply {
    let menu = || el(req, "With selected");
    match call {
        // `fill` of a select chooses, as `select_option` does.
        0 => answer(json!([{"fill": {"index": menu(), "text": "Delete permanently"}}])),
        1 => {
            answer(json!([{"select_option": {"index": menu(), "options": ["Delete permanently"]}}]))
        }
        2 => answer(json!([{"select_option": {"index": menu(), "options": ["Archive"]}}])),
        3 => done("archived"),
        n => panic!("unexpected model call {n}"),
    }
}

/// A menu the page applies as soon as an option is chosen: the option
/// chosen is judged, by `select_option` and by `fill` alike; a harmless one
/// runs unasked.
#[test]
fn a_choice_the_page_applies_at_once_is_judged_by_the_option_chosen() {
    let rig = Rig::start(auto_select_script);
    let (tab, panel) = rig.open("/boundary/auto-select.html").unwrap();
    panel.start_task("Archive the invoice").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(60), |_| "reject")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(asked.len(), 2, "{asked:#?}");
    for text in &asked {
        assert!(text.contains("Delete permanently"), "the approval says what it deletes: {text}");
    }
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "DONE archive");
    rig.done("a_choice_the_page_applies_at_once_is_judged_by_the_option_chosen");
}

fn names_script(req: &Value, call: usize) -> Reply {
    let click = |i: u32| answer(json!([{"click": {"index": i}}]));
    match call {
        // Its accessible name says "Continue"; it shows "Pay $500 now".
        0 => click(el(req, "Continue")),
        1 => click(el(req, "Jetzt kaufen")),
        // A step that works (three failed steps in a row end a task).
        2 => click(el(req, "Show details")),
        // The icon-only button, by the icon word its line says.
        3 => click(icon(req, "trash")),
        4 => click(el(req, "Check out")),
        5 => done("looked at the details"),
        n => panic!("unexpected model call {n}"),
    }
}

/// A control is judged by everything a person and a screen reader get of
/// it: the text it shows under another accessible name, a buy button in
/// German, an icon-only trash button, "Check out"; a harmless one is not.
#[test]
fn a_control_is_judged_by_what_it_shows_says_and_draws() {
    let rig = Rig::start(names_script);
    let (tab, panel) = rig.open("/boundary/names.html").unwrap();
    panel.start_task("Look at the details").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(90), |_| "reject")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(asked.len(), 4, "{asked:#?}");
    assert!(asked[0].contains("Pay $500 now"), "{}", asked[0]);
    assert!(asked[2].contains("trash") || asked[2].contains("delete"), "{}", asked[2]);
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "nothing done e");
    rig.done("a_control_is_judged_by_what_it_shows_says_and_draws");
}

fn dialog_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Yes")}}])),
        1 => answer(json!([{"click": {"index": el(req, "Cancel")}}])),
        // The model answers the confirm in advance.
        2 => answer(json!([{"click": {"index": el(req, "Tidy up"), "dialog": "accept"}}])),
        3 => answer(json!([
            {"select_option": {"index": el(req, "Bulk actions"), "options": ["Move to Trash"]}},
        ])),
        4 => answer(json!([{"click": {"index": el(req, "Apply")}}])),
        5 => done("trashed the selection"),
        n => panic!("unexpected model call {n}"),
    }
}

/// "Yes" under "Delete your account?" asks, "Cancel" does not; a confirm()
/// the model accepted in advance is declined and asks by its own text; the
/// bulk action chosen for a neutral "Apply" asks, and approved it runs.
#[test]
fn dialogs_confirms_and_bulk_actions_are_judged_by_their_words() {
    let rig = Rig::start(dialog_script);
    let (tab, panel) = rig.open("/boundary/dialog.html").unwrap();
    panel.start_task("Clean up my account").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(90), |text| {
            if text.contains("Move to Trash") { "approve" } else { "reject" }
        })
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert!(asked[0].contains("Delete your account"), "{}", asked[0]);
    assert!(asked[1].contains("permanently delete 12 files"), "{}", asked[1]);
    assert!(asked[2].contains("Move to Trash"), "{}", asked[2]);
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "BULK trash", "the account and the files are kept; the bulk action ran");
    rig.done("dialogs_confirms_and_bulk_actions_are_judged_by_their_words");
}

fn grant_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Jetzt kaufen")}}])),
        // The same kind on the same site: covered by "for this task".
        1 => answer(json!([{"click": {"index": el(req, "Check out")}}])),
        2 => answer(json!([{"click": {"index": icon(req, "trash")}}])),
        3 => done("bought"),
        n => panic!("unexpected model call {n}"),
    }
}

/// "Approve for this task" covers the kind (a payment) on the site for the
/// rest of the task, and nothing else: a deletion still asks.
#[test]
fn an_approval_for_the_task_covers_its_kind_on_its_site() {
    let rig = Rig::start(grant_script);
    let (tab, panel) = rig.open("/boundary/names.html").unwrap();
    panel.start_task("Buy it").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(90), |text| {
            if text.contains("kaufen") { "approve-task" } else { "reject" }
        })
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(asked.len(), 2, "the payment once, the deletion once: {asked:#?}");
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "nothing done b d");
    let recs = records(&rig);
    assert!(
        recs[1]["verdict"]["reason"].as_str().unwrap_or_default().contains("for this task"),
        "{recs:#?}"
    );
    rig.done("an_approval_for_the_task_covers_its_kind_on_its_site");
}

fn always_script(req: &Value, call: usize) -> Reply {
    match call {
        0 | 2 | 4 => answer(json!([{"click": {"index": el(req, "Jetzt kaufen")}}])),
        1 | 3 | 5 => done("bought"),
        n => panic!("unexpected model call {n}"),
    }
}

/// "Always on <site>" lets the next task pay there unasked; Settings lists
/// it, and once revoked there the next task asks again.
#[test]
fn an_approval_always_on_a_site_is_listed_in_settings_and_revoked_there() {
    let rig = Rig::start(always_script);
    let (tab, panel) = rig.open("/boundary/names.html").unwrap();
    let run = |task: &str| {
        panel.start_task(task).unwrap();
        let (view, asked) = panel
            .finish_deciding(Duration::from_secs(60), |_| "approve-site")
            .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
        assert_eq!(view["status"], "done", "{view:#}");
        asked.len()
    };
    assert_eq!(run("Buy it"), 1, "the first payment asks");
    assert_eq!(run("Buy it again"), 0, "approved always on the site");
    panel.open_tab("settings").unwrap();
    let listed = panel.wait_text("#grant-list", "Payments on", Duration::from_secs(10)).unwrap();
    assert!(listed.contains("127.0.0.1") || listed.contains("localhost"), "{listed}");
    panel.click("#grant-list button.revoke").unwrap();
    panel.wait_text("#grants-status", "Revoked", Duration::from_secs(10)).unwrap();
    assert!(panel.text("#grant-list").unwrap().contains("Nothing"));
    panel.open_tab("task").unwrap();
    assert_eq!(run("Buy it once more"), 1, "revoked: the payment asks again");
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "nothing done b b b");
    rig.done("an_approval_always_on_a_site_is_listed_in_settings_and_revoked_there");
}

fn frame_script(req: &Value, call: usize) -> Reply {
    let text = last_user_message(req).unwrap_or_default();
    match call {
        0 if !text.contains("Your e-mail") => answer(json!([{"wait": {"ms": 800}}])),
        0 | 1 if text.contains("Your e-mail") => {
            answer(json!([{"fill": {"index": el(req, "Your e-mail"), "text": "ada@example.com"}}]))
        }
        1 => answer(json!([{"wait": {"ms": 800}}])),
        2 | 3 => done("could not subscribe"),
        n => panic!("unexpected model call {n}"),
    }
}

/// With `deny = ["localhost"]`, a frame of that site inside an allowed page
/// is not acted in: the fill is refused and the frame's page gets nothing.
#[test]
fn a_frame_of_a_denied_site_is_not_acted_in() {
    let rig = Rig::builder()
        .script(frame_script)
        .options(|o| o.config_extra = "[sites]\ndeny = [\"localhost\"]\n".into())
        .build();
    let (_tab, panel) = rig.open("/boundary/frame.html").unwrap();
    panel.start_task("Subscribe me with ada@example.com").unwrap();
    let (view, asked) = panel
        .finish_deciding(Duration::from_secs(90), |_| "reject")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert!(asked.is_empty(), "{asked:#?}");
    let recs = records(&rig);
    let fill = recs.iter().find(|r| r["action"].get("fill").is_some()).expect("a fill");
    assert_eq!(fill["ok"], false, "{fill}");
    assert_eq!(fill["verdict"]["decision"], "refuse", "{fill}");
    assert!(fill["detail"].as_str().unwrap().contains("frame of http://localhost"), "{fill}");
    rig.done("a_frame_of_a_denied_site_is_not_acted_in");
}

const SECRET: &str = "Tr0ub4dor&3x";

fn copy_script(req: &Value, call: usize) -> Reply {
    let seen = errand_e2e::model::all_text(req);
    // No four characters of the secret in a row reach the model.
    let chars: Vec<char> = SECRET.chars().collect();
    for w in chars.windows(4) {
        let part: String = w.iter().collect();
        assert!(!seen.contains(&part), "{part:?} of the secret reached the model:\n{seen}");
    }
    let pw = || el(req, "Password");
    match call {
        0 => answer(json!([
            {"fill": {"index": pw(), "text": "{{secret:pw}}"}},
            {"press": {"key": "ControlOrMeta+a", "index": pw()}},
            {"press": {"key": "ControlOrMeta+c", "index": pw()}},
            {"press": {"key": "ControlOrMeta+x", "index": pw()}},
        ])),
        1 => answer(json!([
            {"press": {"key": "ControlOrMeta+v", "index": el(req, "Notes")}},
            {"press": {"key": "Backspace", "index": el(req, "Notes")}},
        ])),
        2 => done("signed in"),
        n => panic!("unexpected model call {n}"),
    }
}

/// A saved password cannot be read back through the clipboard: nothing is
/// copied or cut out of a secret field, so nothing of it can be pasted
/// into a plain field and read there, and no four characters of it reach
/// the model.
#[test]
fn a_secret_is_never_copied_out_of_its_field() {
    let rig = Rig::start(copy_script);
    let origin = rig.fixtures.url("/");
    let file = json!({"pw": {"value": SECRET, "origins": [origin.trim_end_matches('/')], "any_field": false}});
    std::fs::create_dir_all(rig.browser.data_dir()).unwrap();
    std::fs::write(rig.browser.data_dir().join("secrets.json"), file.to_string()).unwrap();
    let (tab, records) = rig
        .run("/boundary/secret-copy.html", "Sign in with my password")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval("({pw: document.getElementById('pw').value, notes: document.getElementById('notes').value})")
        .unwrap();
    assert_eq!(page["pw"], SECRET, "the password is in its field: {records:#?}");
    assert_eq!(page["notes"], "", "nothing of it was pasted: {records:#?}");
    let text = serde_json::to_string(&records).unwrap();
    assert!(text.contains("never copies"), "the copy says why it was refused: {text}");
    rig.done("a_secret_is_never_copied_out_of_its_field");
}

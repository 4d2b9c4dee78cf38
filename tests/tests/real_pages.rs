//! Actions that survive real pages (issue 19): uploads through the control
//! a person sees, typing after what a field holds, values read back after
//! the page's own handlers, and widgets that rewrite a filled value. Each
//! through the real host, the real side panel and a scripted model that
//! finds elements only by the observation's text.

use errand_e2e::model::{Reply, all_text};
use errand_e2e::rig::{Rig, answer, element_by_label as el, record};
use serde_json::{Value, json};

fn done(text: &str) -> Reply {
    answer(json!([{"done": {"text": text, "success": true}}]))
}

fn upload_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"upload_file": {"index": el(req, "Choose a photo"), "files": ["me.png"]}},
            {"upload_file": {"index": el(req, "Upload CV"), "files": ["cv.txt"]}},
            {"upload_file": {"index": el(req, "Cover letter"), "files": ["letter.txt"]}},
            {"upload_file": {"index": el(req, "Add portfolio"), "files": ["work.txt"]}},
        ])),
        1 => done("uploaded"),
        n => panic!("unexpected model call {n}"),
    }
}

/// A `<label>` for a hidden input, a button holding one, a transparent
/// input laid over a "Click to select" area (listed as the control), and a
/// button whose click opens the chooser of an input elsewhere.
#[test]
fn upload_file_finds_the_file_input_behind_the_visible_control() {
    let rig = Rig::start(upload_script);
    let uploads = rig.browser.data_dir().join("uploads");
    std::fs::create_dir_all(&uploads).unwrap();
    for name in ["me.png", "cv.txt", "letter.txt", "work.txt"] {
        std::fs::write(uploads.join(name), name).unwrap();
    }
    let (tab, records) = rig
        .run("/actions/upload-visible.html", "Upload my photo, CV and letter")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(
        out, "photo:me.png\ncv:cv.txt\nletter:letter.txt\nportfolio:work.txt\n",
        "{records:#?}"
    );
    rig.done("upload_file_finds_the_file_input_behind_the_visible_control");
}

fn typing_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"type": {"index": el(req, "Word"), "text": "squash"}},
            {"type": {"index": el(req, "Replace me"), "text": "new", "clear": true}},
        ])),
        1 => {
            let seen = all_text(req);
            assert!(seen.contains("it now holds \"abcsquash\""), "no read back:\n{seen}");
            assert!(seen.contains("it now holds \"new\""), "no read back:\n{seen}");
            done("typed")
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// `type` goes on after what the field holds (or replaces it with
/// `clear`), and its result reads the value back.
#[test]
fn type_continues_after_the_value_and_reads_it_back() {
    let rig = Rig::start(typing_script);
    let (tab, records) = rig
        .run("/actions/typing.html", "Type into the fields")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval("[document.getElementById('word').value, document.getElementById('old').value]")
        .unwrap();
    assert_eq!(page, json!(["abcsquash", "new"]), "{records:#?}");
    rig.done("type_continues_after_the_value_and_reads_it_back");
}

fn unasked_script(req: &Value, _call: usize) -> Reply {
    if all_text(req).contains("nobody could be asked") {
        return done("not deleted: it needs your approval");
    }
    answer(json!([{"click": {"index": el(req, "Delete 3 items")}}]))
}

/// `errand run --json` without a terminal: an action that needs approval
/// is not done, and the model and the printed step say that nobody could
/// be asked — not that the user rejected it.
#[test]
fn with_nobody_to_ask_a_rejection_says_so() {
    use std::process::{Command, Stdio};
    let model = errand_e2e::model::ScriptedModel::start(unasked_script).unwrap();
    let fixtures = errand_e2e::fixtures::FixtureServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(errand_e2e::browser::host_exe().unwrap())
        .args(["run", "--json", "--url", &fixtures.url("/actions/dialog-confirm.html")])
        .arg("Delete the items")
        .env("ERRAND_DATA_DIR", dir.path().join("data"))
        .env("ERRAND_CONFIG_DIR", dir.path().join("config"))
        .env("ERRAND_PLANNER", "0")
        .env("ERRAND_BASE_URL", model.base_url())
        .env("ERRAND_MODEL", "scripted")
        .env("ERRAND_API_KEY", "test-key")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    model.check().unwrap();
    assert!(stdout.contains("nobody could be asked"), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(!stdout.contains("the user rejected"), "stdout:\n{stdout}");
    assert!(stdout.contains("not deleted"), "stdout:\n{stdout}\nstderr:\n{stderr}");
}

fn pointer_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"drag_path": {"index": el(req, "Signature pad"),
                           "points": [[0.1, 0.6], [0.3, 0.2], [0.5, 0.8], [0.7, 0.2], [0.9, 0.6]]}},
            {"hold": {"index": el(req, "Hold to confirm"), "ms": 1500}},
        ])),
        1 => done("signed and confirmed"),
        n => panic!("unexpected model call {n}"),
    }
}

/// A signature drawn along a path of points, and a hold-to-confirm button
/// held long enough, as real pointer and mouse event sequences.
#[test]
fn a_signature_is_drawn_and_a_button_held() {
    let rig = Rig::start(pointer_script);
    let (tab, records) = rig
        .run("/actions/pointer.html", "Sign and confirm")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval("[document.getElementById('signed').textContent, document.getElementById('held').textContent]")
        .unwrap();
    let texts: Vec<String> = serde_json::from_value(page.clone()).unwrap();
    assert!(texts[0].starts_with("Signed ("), "{page} {records:#?}");
    assert!(texts[1].starts_with("Confirmed after 1."), "{page} {records:#?}");
    let hold = record(&records, "hold", "").unwrap();
    assert_eq!(hold["ok"], true, "{hold}");
    rig.done("a_signature_is_drawn_and_a_button_held");
}

fn redraw_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"fill": {"index": el(req, "Name"), "text": "Ada"}},
            {"fill": {"index": el(req, "Email"), "text": "ada@example.com"}},
            {"fill": {"index": el(req, "City"), "text": "London"}},
            {"click": {"index": el(req, "Create account")}},
        ])),
        1 => done("created"),
        n => panic!("unexpected model call {n}"),
    }
}

/// Validation messages re-rendered with the same text are not news: the
/// whole form is filled and sent in one step.
#[test]
fn redrawn_messages_do_not_end_the_step() {
    let rig = Rig::start(redraw_script);
    let (tab, records) = rig
        .run("/actions/redraw.html", "Sign up as Ada from London")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "Account created.", "{records:#?}");
    assert_eq!(
        records[0].as_array().unwrap().len(),
        4,
        "the first step ran all four: {records:#?}"
    );
    rig.done("redrawn_messages_do_not_end_the_step");
}

fn datepicker_script(req: &Value, call: usize) -> Reply {
    let last_step = || {
        let text = all_text(req);
        let at = text.rfind("Step ").unwrap_or(0);
        text[at..].to_owned()
    };
    match call {
        // Filled: the widget does not take it (it reads keys), and empties
        // the field when its calendar closes on a click elsewhere.
        0 => answer(json!([{"fill": {"index": el(req, "Departure"), "text": "06/15/2030"}}])),
        1 => answer(json!([{"click": {"index": el(req, "Note")}}])),
        2 => {
            let step = last_step();
            assert!(
                step.contains(
                    "earlier fills lost: Departure: the page changed it from \"06/15/2030\" to \"\""
                ),
                "the wiped date is not reported:\n{step}"
            );
            answer(json!([
                {"type": {"index": el(req, "Departure"), "text": "06/15/2030", "clear": true}},
            ]))
        }
        3 => answer(json!([{"click": {"index": el(req, "Note")}}])),
        4 => {
            let step = last_step();
            assert!(!step.contains("earlier fills lost"), "the typed date was lost:\n{step}");
            done("departure set")
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// bootstrap-datepicker (from npm) empties a filled date when its calendar
/// closes: the next action reports it, and a typed date (the keys it
/// listens to) stays.
#[test]
fn a_date_widget_that_wipes_a_filled_value_is_reported() {
    let rig = Rig::start(datepicker_script);
    let (tab, records) = rig
        .run("/actions/bootstrap-datepicker.html", "Depart on June 15, 2030")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab.eval("[document.getElementById('depart').value, widgetDate()]").unwrap();
    assert_eq!(page, json!(["06/15/2030", "2030-06-15"]), "{records:#?}");
    rig.done("a_date_widget_that_wipes_a_filled_value_is_reported");
}

fn icons_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => {
            let text = errand_e2e::model::last_user_message(req).unwrap_or_default();
            assert!(text.contains("icon=send>Submit"), "the ligature is not an icon:\n{text}");
            answer(json!([
                {"fill": {"index": el(req, "Message"), "text": "Nice shop"}},
                {"click": {"index": el(req, "Submit")}},
            ]))
        }
        1 => answer(json!([{"click": {"index": el(req, "delete")}}])),
        2 => done("sent and trashed"),
        n => panic!("unexpected model call {n}"),
    }
}

/// A Submit button with a Material icon (from npm) whose ligature reads
/// "send" is named "Submit" and needs no approval; an icon-only "delete"
/// button is named by its icon and still asks.
#[test]
fn approvals_read_the_name_without_icon_ligatures() {
    let rig = Rig::start(icons_script);
    let (tab, panel) = rig.open("/actions/approval-icons.html").unwrap();
    panel.start_task("Send the feedback, then trash it").unwrap();
    let (view, approvals) = panel
        .finish_approving(std::time::Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(approvals, 1, "only the delete button asks: {view:#}");
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(out, "Submitted: Nice shop Trashed.", "{view:#}");
    rig.done("approvals_read_the_name_without_icon_ligatures");
}

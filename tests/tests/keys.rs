//! Keys and the clipboard (issue 18): the real host, the real extension
//! and a fixture page per case (`tests/fixtures/keys/`), driven by a
//! scripted model that finds elements only through the observation's text.

use errand_e2e::model::{Reply, last_user_message};
use errand_e2e::rig::{Rig, answer, element_by_label as el, record};
use serde_json::{Value, json};

/// Asserts (inside the scripted model) that the page the model sees says
/// `text`.
fn sees(req: &Value, text: &str) {
    let last = last_user_message(req).unwrap_or_default();
    assert!(last.contains(text), "the page does not show {text:?}:\n{last}");
}

fn nothing_focused_script(req: &Value, call: usize) -> Reply {
    match call {
        // No element: the keys go where the browser sends them.
        0 => answer(json!([
            {"press": {"key": "ArrowRight"}},
            {"press": {"key": "ArrowRight"}},
            {"press": {"key": "ArrowLeft"}},
        ])),
        1 => {
            sees(req, "ship at 1");
            answer(json!([{"done": {"text": "moved", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A key pressed with nothing focused goes to `document.activeElement`
/// (the body) and reaches the `keydown` listeners of the document and the
/// window, as a person's key does.
#[test]
fn a_key_with_nothing_focused_reaches_the_document_and_the_window() {
    let rig = Rig::start(nothing_focused_script);
    let (tab, records) = rig.run("/keys/nothing-focused.html", "Move the ship right once").unwrap();
    let page = tab
        .eval("({log: document.getElementById('log').textContent, active: document.activeElement.localName})")
        .unwrap();
    assert_eq!(
        page["log"],
        "keys: document:ArrowRight@body window:ArrowRight document:ArrowRight@body \
         window:ArrowRight document:ArrowLeft@body window:ArrowLeft",
        "{page:#}"
    );
    assert_eq!(page["active"], "body");
    let press = record(&records, "press", "ArrowLeft").unwrap();
    assert!(press["ok"] == true, "{press}");
    assert!(press["detail"].to_string().contains("<body>"), "says where the key went: {press}");
    rig.done("keys-nothing-focused");
}

fn terminal_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(
            json!([{"type": {"index": el(req, "Terminal"), "text": "rmdir", "enter": true}}]),
        ),
        1 => {
            // One `<span>` per key, no whitespace between: one word.
            sees(req, "user$ rmdir");
            sees(req, "rmdir: missing operand");
            let last = last_user_message(req).unwrap_or_default();
            assert!(!last.contains("r m d i r"), "the command reads spaced out:\n{last}");
            answer(json!([{"done": {"text": "ran rmdir", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// Text typed into a terminal that draws each key as its own `<span>` reads
/// back as the text typed.
#[test]
fn a_terminal_drawing_one_node_per_key_reads_as_the_text_typed() {
    let rig = Rig::start(terminal_script);
    let (tab, _records) = rig.run("/keys/terminal.html", "Run rmdir in the terminal").unwrap();
    let ran = tab.eval("document.getElementById('ran').textContent").unwrap();
    assert_eq!(ran, "ran: rmdir");
    rig.done("keys-terminal");
}

fn clipboard_script(req: &Value, call: usize) -> Reply {
    match call {
        // A paste before anything was copied says it pasted nothing.
        0 => answer(json!([{"press": {"key": "ControlOrMeta+v", "index": el(req, "Answer")}}])),
        1 => {
            let source = el(req, "Source");
            let answer_field = el(req, "Answer");
            answer(json!([
                {"press": {"key": "ControlOrMeta+a", "index": source}},
                {"press": {"key": "ControlOrMeta+c", "index": source}},
                {"click": {"index": answer_field}},
                {"press": {"key": "ControlOrMeta+v", "index": answer_field}},
            ]))
        }
        2 => {
            sees(req, "paste[45] beforeinput:insertFromPaste input:insertFromPaste");
            answer(json!([{"done": {"text": "copied", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// `ControlOrMeta+c` copies a field's selection into the crate's clipboard
/// and `ControlOrMeta+v` pastes it with the events a paste makes (`paste`
/// with its `DataTransfer`, `beforeinput`/`input` of type
/// `insertFromPaste`); a paste with nothing copied is a failure the model
/// reads.
fn copy_and_paste(prefix: &str, name: &str) {
    let rig = Rig::start(clipboard_script);
    let (tab, records) = rig
        .run(&format!("{prefix}/keys/clipboard.html"), "Copy the source text into the answer")
        .unwrap();
    let page = tab
        .eval("({answer: document.getElementById('answer').value, events: document.getElementById('events').textContent})")
        .unwrap();
    // The whole text, its trailing space included.
    assert_eq!(page["answer"], "The quick brown fox jumps over the lazy dog. ", "{page:#}");
    assert_eq!(
        page["events"], "events: copy paste[45] beforeinput:insertFromPaste input:insertFromPaste",
        "{page:#}"
    );
    let empty = record(&records, "press", "ControlOrMeta+v").unwrap();
    assert!(empty["ok"] == false, "a paste of nothing is not a success: {empty}");
    assert!(empty.to_string().contains("nothing was pasted"), "{empty}");
    let copy = record(&records, "press", "ControlOrMeta+c").unwrap();
    assert!(copy.to_string().contains("copied 45 characters"), "{copy}");
    rig.done(name);
}

#[test]
fn copy_and_paste_inside_the_page_work_or_say_they_did_not() {
    copy_and_paste("", "keys-clipboard");
}

/// The same in the plain-JS build (a page whose CSP refuses WebAssembly).
#[test]
fn copy_and_paste_work_in_the_js_build_too() {
    copy_and_paste("/csp", "keys-clipboard-js");
}

fn hover_menu_script(req: &Value, call: usize) -> Reply {
    let text = last_user_message(req).unwrap_or_default();
    // The page as it is now (the task names "Save as" too).
    let last = text.rsplit("# Current page").next().unwrap_or_default();
    match call {
        0 => {
            assert!(!last.contains("Save as"), "a closed submenu is listed:\n{last}");
            answer(json!([{"hover": {"index": el(req, "File")}}]))
        }
        1 => {
            // The submenu only `li:hover > .sub` shows is listed now.
            assert!(!last.contains("Undo"), "the other submenu opened too:\n{last}");
            answer(json!([{"click": {"index": el(req, "Save as")}}]))
        }
        2 => {
            sees(req, "chosen: Save as");
            answer(json!([{"done": {"text": "saved as", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A submenu shown only by CSS `:hover`: after a `hover` action the
/// re-observation lists its items (synthetic mouse events do not make
/// `:hover` match; Errand applies the page's `:hover` rules to the
/// pointer's chain), and a click on one keeps it open until it lands.
fn hover_menu(prefix: &str, name: &str) {
    let rig = Rig::start(hover_menu_script);
    let (tab, records) =
        rig.run(&format!("{prefix}/keys/hover-menu.html"), "Choose File, Save as").unwrap();
    let chosen = tab.eval("document.getElementById('chosen').textContent").unwrap();
    assert_eq!(chosen, "chosen: Save as");
    let hover = record(&records, "hover", "").unwrap();
    assert!(
        hover["detail"].to_string().contains("Save as"),
        "the hover shows what appeared: {hover}"
    );
    rig.done(name);
}

#[test]
fn a_submenu_shown_only_by_css_hover_opens_on_hover() {
    hover_menu("", "keys-hover-menu");
}

/// The same in the plain-JS build (a page whose CSP refuses WebAssembly).
#[test]
fn a_css_hover_submenu_opens_in_the_js_build_too() {
    hover_menu("/csp", "keys-hover-menu-js");
}

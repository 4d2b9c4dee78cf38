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

/// The sentence of the key-code test: punctuation whose own character
/// code is a navigation key's code, and a word with a letter no US key
/// types.
const SENTENCE: &str = "Call me (today) at 5.30, 100% sure! Café";

fn keycodes_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"type": {"index": el(req, "Message"), "text": SENTENCE}}])),
        1 => answer(json!([{"done": {"text": "typed", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// `type` sends each character as a US keyboard does: the physical key's
/// `code` and legacy `keyCode` ("." is Period, 190 — not 46, Delete; "("
/// is Digit9, 57, with Shift — not 40, ArrowDown), `keypress` with the
/// character's code, and what no key types through an input method's
/// composition; so an editor that drops navigation keys by `keyCode`
/// keeps every character. Its result says what the field holds.
fn keycodes(prefix: &str, name: &str) {
    let rig = Rig::start(keycodes_script);
    let (tab, records) =
        rig.run(&format!("{prefix}/keys/keycodes.html"), "Write the message").unwrap();
    let page = tab
        .eval("({value: document.getElementById('message').value, log: document.getElementById('log').textContent})")
        .unwrap();
    assert_eq!(page["value"], SENTENCE, "{page:#}");
    let log = page["log"].as_str().unwrap_or_default();
    for seen in [
        "down:.:Period:190:190",
        "down:(:Digit9:57:57:shift",
        "press:40:40",
        "down:%:Digit5:53:53:shift",
        "down:!:Digit1:49:49:shift",
        "down:C:KeyC:67:67:shift",
        "down:Process::229:229",
        "composed:é",
    ] {
        assert!(log.contains(seen), "the page did not see {seen:?}: {log}");
    }
    let typed = record(&records, "type", "Call me").unwrap();
    assert!(typed["ok"] == true, "{typed}");
    assert!(typed.to_string().contains("it now holds \\\"Call me (today) at 5.30"), "{typed}");
    rig.done(name);
}

#[test]
fn type_sends_the_key_codes_of_a_us_keyboard() {
    keycodes("", "keys-keycodes");
}

/// The same in the plain-JS build (a page whose CSP refuses WebAssembly).
#[test]
fn type_sends_the_key_codes_of_a_us_keyboard_in_the_js_build_too() {
    keycodes("/csp", "keys-keycodes-js");
}

fn todo_script(req: &Value, call: usize) -> Reply {
    let todo = || el(req, "New todo");
    match call {
        // Enter fires `change` (no form here)…
        0 => answer(json!([{"type": {"index": todo(), "text": "Buy milk", "enter": true}}])),
        // …and so does leaving the field after typing…
        1 => {
            sees(req, "Buy milk");
            answer(json!([{"type": {"index": todo(), "text": "Walk dog"}}]))
        }
        // …and a fill, which the page takes out of the field.
        2 => answer(json!([{"fill": {"index": todo(), "text": "Pay rent"}}])),
        3 => answer(json!([{"done": {"text": "added", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// A to-do field without a form adds an item on `change` and empties
/// itself: `type` with Enter, `type` then leaving the field, and `fill`
/// each add one item (a browser fires `change` on Enter and on leaving a
/// field whose value changed), and each says the page took the value — a
/// success, not a value that did not stick.
fn todo(prefix: &str, name: &str) {
    let rig = Rig::start(todo_script);
    let (tab, records) = rig.run(&format!("{prefix}/keys/todo.html"), "Add three todos").unwrap();
    let page = tab
        .eval("({items: [...document.querySelectorAll('#list li')].map(li => li.textContent), value: document.getElementById('new').value})")
        .unwrap();
    assert_eq!(page["items"], json!(["Buy milk", "Walk dog", "Pay rent"]), "{page:#}");
    assert_eq!(page["value"], "", "{page:#}");
    for (action, needle) in [("type", "Buy milk"), ("type", "Walk dog"), ("fill", "Pay rent")] {
        let r = record(&records, action, needle).unwrap();
        assert!(r["ok"] == true, "{r}");
        assert!(r.to_string().contains("the page took the value"), "{r}");
    }
    rig.done(name);
}

#[test]
fn enter_and_leaving_a_field_fire_change_and_a_value_the_page_took_is_no_failure() {
    todo("", "keys-todo");
}

/// The same in the plain-JS build (a page whose CSP refuses WebAssembly).
#[test]
fn a_todo_field_takes_each_value_in_the_js_build_too() {
    todo("/csp", "keys-todo-js");
}

fn chat_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"type": {"index": el(req, "Say"), "text": "See you at 5.30!", "enter": true}}
        ])),
        1 => {
            sees(req, "sent 1");
            answer(json!([{"done": {"text": "sent", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A field that empties itself on Enter (a chat sending the message):
/// `type` with Enter says the page took the value, though the message
/// shows nowhere on the page.
#[test]
fn a_field_emptied_on_enter_says_the_page_took_the_value() {
    let rig = Rig::start(chat_script);
    let (tab, records) = rig.run("/keys/chat.html", "Say see you at 5.30").unwrap();
    let sent = tab.eval("window.sent").unwrap();
    assert_eq!(sent, json!(["See you at 5.30!"]));
    let typed = record(&records, "type", "See you").unwrap();
    assert!(typed["ok"] == true, "{typed}");
    assert!(typed.to_string().contains("the page took the value"), "{typed}");
    rig.done("keys-chat");
}

fn maxlength_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"fill": {"index": el(req, "Area code"), "text": "1234567890"}}])),
        1 => {
            sees(req, "at most 3 characters");
            answer(json!([{"type": {"index": el(req, "Prefix"), "text": "4567"}}]))
        }
        2 => {
            sees(req, "at most 3 characters");
            answer(json!([{"done": {"text": "cut", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// `fill` and `type` respect `maxlength` as a browser does (the field
/// takes what fits), and say the value was cut.
#[test]
fn fill_and_type_respect_maxlength_and_say_the_value_was_cut() {
    let rig = Rig::start(maxlength_script);
    let (tab, records) = rig.run("/keys/maxlength.html", "Enter the phone number").unwrap();
    let page = tab
        .eval("[document.getElementById('area').value, document.getElementById('prefix').value]")
        .unwrap();
    assert_eq!(page, json!(["123", "456"]));
    for (action, needle) in [("fill", "1234567890"), ("type", "4567")] {
        let r = record(&records, action, needle).unwrap();
        assert!(r["ok"] == false, "a cut value is no success: {r}");
        assert!(r.to_string().contains("takes at most 3 characters"), "{r}");
        assert!(r.to_string().contains("it holds"), "{r}");
    }
    rig.done("keys-maxlength");
}

fn code_boxes_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"type": {"index": el(req, "Digit 1"), "text": "4821"}}])),
        1 => answer(json!([{"done": {"text": "entered", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// Keys go where the focus is: a code split over one box per digit, whose
/// page moves the focus on as each box fills, gets one digit per box (a
/// box's `maxlength` of 1 keeps the rest out of the first), and the
/// result says so.
#[test]
fn typing_follows_the_focus_the_page_moves_on_to_the_next_box() {
    let rig = Rig::start(code_boxes_script);
    let (tab, records) = rig.run("/keys/code-boxes.html", "Enter the code 4821").unwrap();
    let boxes =
        tab.eval("[...document.querySelectorAll('#code input')].map(b => b.value)").unwrap();
    assert_eq!(boxes, json!(["4", "8", "2", "1"]));
    let typed = record(&records, "type", "4821").unwrap();
    assert!(typed["ok"] == true, "{typed}");
    assert!(typed.to_string().contains("moved the focus on to 3 more field"), "{typed}");
    rig.done("keys-code-boxes");
}

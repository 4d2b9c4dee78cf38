//! What a person can see and use, the model sees and can use (issue 18):
//! the real host, the real extension and the real page, driven by a
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

fn listeners_script(req: &Value, call: usize) -> Reply {
    match call {
        // A cell of a board that only `addEventListener('click')` makes
        // clickable.
        0 => answer(json!([{"click": {"index": el(req, "c5")}}])),
        // A star inside a mail row that opens the mail: its own element.
        1 => {
            sees(req, "moves: c5");
            answer(json!([{"click": {"index": el(req, "☆")}}]))
        }
        2 => {
            sees(req, "mail: star-1");
            answer(json!([{"done": {"text": "played and starred", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn the_agent_clicks_controls_made_only_by_listeners() {
    let rig = Rig::start(listeners_script);
    let (tab, run) = rig
        .run("/observe/listeners.html", "Play the middle cell, then star the first mail")
        .unwrap();
    let records = run;
    let page = tab
        .eval("({moves: document.getElementById('moves').textContent, mail: document.getElementById('mail-log').textContent})")
        .unwrap();
    assert_eq!(page["moves"], "moves: c5", "{page:#}");
    assert_eq!(page["mail"], "mail: star-1", "the star, not the row: {page:#}");
    let click = record(&records, "click", "").unwrap();
    assert!(click["ok"] == true, "{click}");
    rig.done("listeners");
}

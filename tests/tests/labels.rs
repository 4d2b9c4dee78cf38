//! Field names (issue 38): what a person reads as a field's label is the
//! name the model gets. The real host, the real extension and one fixture
//! page per pattern (`tests/fixtures/labels/`), driven by a scripted model
//! that finds fields ONLY by the names Errand writes in their lines
//! (`5<input="Day Phone, part 2 of 3">`), fills them, has the page show
//! what it received, and checks that the page received each value in the right field.

use errand_e2e::model::{Reply, elements, last_user_message, tag_name};
use errand_e2e::rig::{Rig, answer, element_by_label};
use serde_json::{Value, json};

/// The number of the element whose line names it exactly `label` (the
/// name written against its kind, not text around it).
fn named(req: &Value, label: &str) -> u32 {
    let text = last_user_message(req).unwrap_or_default();
    let found: Vec<u32> = elements(&text)
        .into_iter()
        .filter(|(_, d)| tag_name(d).is_some_and(|n| n == label))
        .map(|(n, _)| n)
        .collect();
    match found[..] {
        [n] => n,
        _ => panic!("no one element named {label:?} ({found:?}) in:\n{text}"),
    }
}

/// Runs `fills` (label → text) and a click on "Show entries", then `done`, and
/// returns what the page received.
fn fill_and_send(page: &str, fills: &'static [(&'static str, &'static str)]) -> Value {
    let rig = Rig::start(move |req: &Value, call: usize| -> Reply {
        match call {
            0 => {
                let mut actions: Vec<Value> = fills
                    .iter()
                    .map(
                        |(label, text)| json!({"fill": {"index": named(req, label), "text": text}}),
                    )
                    .collect();
                actions.push(json!({"click": {"index": element_by_label(req, "Show entries")}}));
                answer(json!(actions))
            }
            _ => answer(json!([{"done": {"text": "sent", "success": true}}])),
        }
    });
    let (tab, _records) = rig.run(page, "Fill in the form and send it").unwrap();
    let got = tab.eval("document.getElementById('received').textContent").unwrap();
    rig.done(page);
    serde_json::from_str(got.as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the page received nothing readable ({e}): {got}"))
}

/// A `<label for>` whose id does not match, column headers in the row
/// above, a `<label>` without `for` in the previous cell, plain text before
/// the field: each names its field.
#[test]
fn labels_elsewhere_than_for_or_wrapping_name_their_fields() {
    // Both builds: the JS one under a CSP that refuses WebAssembly.
    for page in ["/labels/elsewhere.html", "/csp/labels/elsewhere.html"] {
        let got = fill_and_send(
            page,
            &[
                ("Recipient", "Ada Lovelace"),
                ("House number", "12"),
                ("Street", "St James's Square"),
                ("Town", "London"),
                ("Delivery notes", "Leave at the door"),
            ],
        );
        assert_eq!(
            got,
            json!({"recipient": "Ada Lovelace", "house": "12", "street": "St James's Square",
               "town": "London", "notes": "Leave at the door"}),
            "{page}"
        );
    }
}

/// A validation message after a field does not name it, nor a hint after
/// one that has a placeholder; a code-like title does not beat the visible
/// "Day Phone:", and each part of the split phone number is named by it
/// and its place.
#[test]
fn messages_hints_and_code_titles_do_not_name_fields_and_parts_are_numbered() {
    for page in ["/labels/wrong-text.html", "/csp/labels/wrong-text.html"] {
        let got = fill_and_send(
            page,
            &[
                ("Full name", "Grace Hopper"),
                ("ZIP code", "98104"),
                ("Day Phone, part 1 of 3", "206"),
                ("Day Phone, part 2 of 3", "555"),
                ("Day Phone, part 3 of 3", "0100"),
            ],
        );
        assert_eq!(
            got,
            json!({"name": "Grace Hopper", "zip": "98104", "p1": "206", "p2": "555", "p3": "0100"}),
            "{page}"
        );
    }
}

/// A read-only presentational input in front of each field is not listed;
/// the field after it is named by the text above.
#[test]
fn decoy_inputs_in_front_of_fields_are_not_listed() {
    for page in ["/labels/decoys.html", "/csp/labels/decoys.html"] {
        let rig = Rig::start(|req: &Value, call: usize| -> Reply {
            match call {
                0 => {
                    let text = last_user_message(req).unwrap_or_default();
                    let fields = elements(&text)
                        .into_iter()
                        .filter(|(_, d)| d.starts_with("<input") || d.starts_with("<email"))
                        .count();
                    assert_eq!(fields, 2, "only the two fields are listed:\n{text}");
                    answer(json!([
                        {"fill": {"index": named(req, "Email address"), "text": "ada@example.org"}},
                        {"fill": {"index": named(req, "Membership number"), "text": "1815"}},
                        {"click": {"index": element_by_label(req, "Show entries")}},
                    ]))
                }
                _ => answer(json!([{"done": {"text": "sent", "success": true}}])),
            }
        });
        let (tab, _records) = rig.run(page, "Sign in").unwrap();
        let got = tab.eval("document.getElementById('received').textContent").unwrap();
        let got: Value = serde_json::from_str(got.as_str().unwrap_or_default()).unwrap();
        assert_eq!(got, json!({"email": "ada@example.org", "member": "1815"}), "{page}");
        rig.done(page);
    }
}

/// A contenteditable field is named by its caption like a field, and
/// `check` on a styled radio's label (listed for its hidden input) checks
/// that radio.
#[test]
fn editors_are_named_like_fields_and_a_styled_radio_is_checked_by_its_number() {
    for page in ["/labels/editors.html", "/csp/labels/editors.html"] {
        let rig = Rig::start(|req: &Value, call: usize| -> Reply {
            match call {
                0 => answer(json!([
                    {"fill": {"index": named(req, "Email Address"), "text": "ada@example.org"}},
                    {"check": {"index": element_by_label(req, "Phone")}},
                    {"click": {"index": element_by_label(req, "Show entries")}},
                ])),
                _ => answer(json!([{"done": {"text": "sent", "success": true}}])),
            }
        });
        let (tab, records) = rig.run(page, "Ask to be called").unwrap();
        let got = tab.eval("document.getElementById('received').textContent").unwrap();
        let got: Value = serde_json::from_str(got.as_str().unwrap_or_default()).unwrap();
        assert_eq!(got, json!({"email": "ada@example.org", "by_email": false, "by_phone": true}));
        let check = errand_e2e::rig::record(&records, "check", "index").unwrap();
        assert!(check["ok"] == true, "{check}");
        rig.done(page);
    }
}

//! Secrets never reach the model, even when the page shows them back.
//!
//! Each test: real Chromium with the real extension and host, a secret
//! allowed on the fixture's origin, a scripted model (finding elements only
//! through the observation text) that types `{{secret:NAME}}` into a field
//! of a page that shows the value again through a side door
//! (`tests/fixtures/secrets/`): page text, a field's value, the title, the
//! address (fragment, `data:` link, a GET form's query), a `<select>`'s
//! option. Then every request body the model server received, every task
//! event the side panels got, the host's log and every file of its data
//! folder (the SQLite database and its journal) are searched for the value
//! as is, URL-encoded (`%20` and `+`) and JSON-escaped: no hit. And the
//! page really got the value (the door was open).

use std::time::Duration;

use anyhow::{Result, ensure};
use errand_e2e::cdp::Page;
use errand_e2e::model::{Reply, all_text, last_user_message};
use errand_e2e::rig::{Rig, answer, element_by_label as el, record};
use errand_e2e::side_panel::Panel;
use serde_json::{Value, json};

/// A password: characters that every encoding writes differently.
const PW: &str = "hunter 2&\"x";
/// A value allowed in any field (a member number, a user name).
const ID: &str = "ann o'brien&\"7";

/// The forms a value may leak in: as is, URL-encoded as a query or a
/// component (`%20` and `+` for spaces) and as a fragment, JSON-escaped,
/// and as the element list writes attribute values (`"` as `'`).
fn forms(value: &str) -> Vec<String> {
    let encode = |keep: &dyn Fn(u8) -> bool| -> String {
        value
            .bytes()
            .map(|b| if keep(b) { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect()
    };
    let component = encode(&|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b));
    let fragment = encode(&|b| b > b' ' && !b"\"<>`".contains(&b) && b < 0x7f);
    let json = serde_json::to_string(value).unwrap();
    let mut out = vec![
        value.to_owned(),
        component.clone(),
        component.replace("%20", "+"),
        fragment.clone(),
        fragment.replace("%20", "+"),
        json[1..json.len() - 1].to_owned(),
        value.replace('"', "'"),
    ];
    out.dedup();
    out
}

/// Writes the secrets file: `(name, value, any_field)`, each allowed on
/// the fixture server's origin.
fn store_secrets(rig: &Rig, secrets: &[(&str, &str, bool)]) {
    let origin = rig.fixtures.url("/");
    let origin = origin.trim_end_matches('/');
    let file: serde_json::Map<String, Value> = secrets
        .iter()
        .map(|(name, value, any)| {
            ((*name).to_owned(), json!({"value": value, "origins": [origin], "any_field": any}))
        })
        .collect();
    std::fs::create_dir_all(rig.browser.data_dir()).unwrap();
    std::fs::write(rig.browser.data_dir().join("secrets.json"), Value::Object(file).to_string())
        .unwrap();
}

/// Opens a second port of the side panel's kind from the panel page: the
/// service worker broadcasts every task event to every panel port, so it
/// records all the host sends to panels.
fn record_panel_events(panel: &Panel) -> Result<()> {
    panel.page.eval(
        "(() => { window.__events = []; const p = chrome.runtime.connect({name: 'panel'});
            p.onMessage.addListener((m) => window.__events.push(m)); return true; })()",
    )?;
    Ok(())
}

fn panel_events(panel: &Panel) -> Result<Vec<Value>> {
    let events = panel.page.eval("window.__events")?;
    Ok(events.as_array().cloned().unwrap_or_default())
}

/// Runs `task` on `path` from the side panel until it ends as done.
fn run(rig: &Rig, path: &str, task: &str) -> Result<(Page, Panel, Vec<Value>)> {
    let (tab, panel) = rig.open(path)?;
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10))?;
    panel.wait_connected()?;
    record_panel_events(&panel)?;
    panel.start_task(task)?;
    let view = panel.wait_finished(Duration::from_secs(90))?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the task ended as {view:#}");
    let task = rig.stored_task("done")?;
    let steps = errand_e2e::store::steps(&rig.browser.db_path(), &task.id)?;
    let records = steps
        .iter()
        .map(|s| serde_json::from_str::<Value>(&s.actions_json))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((tab, panel, records))
}

/// No form of any of `values` in the model's requests, the panel's
/// events, the log or the data folder's files (the secrets file aside).
fn nowhere(rig: &Rig, panel: &Panel, values: &[&str]) -> Result<()> {
    let requests = rig.model.requests();
    ensure!(!requests.is_empty(), "the model got no request");
    let events = panel_events(panel)?;
    ensure!(
        events.iter().any(|e| e["kind"] == "task_event" && e["event"]["type"] == "finished"),
        "the panel port recorded no finished event: {events:#?}"
    );
    let mut places: Vec<(String, String)> = vec![
        ("the model's requests".into(), serde_json::to_string(&requests)?),
        ("the panel's events".into(), serde_json::to_string(&events)?),
    ];
    // Let the host write what it writes at the end of the task.
    std::thread::sleep(Duration::from_millis(300));
    for entry in std::fs::read_dir(rig.browser.data_dir())? {
        let path = entry?.path();
        if path.is_file() && path.file_name().is_some_and(|n| n != "secrets.json") {
            let bytes = std::fs::read(&path)?;
            places.push((path.display().to_string(), String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    ensure!(
        places.iter().any(|(p, _)| p.ends_with(".log")),
        "no log file among {:?}",
        places.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    ensure!(
        places.iter().any(|(p, _)| p.ends_with(".db") || p.ends_with(".sqlite")),
        "no database among {:?}",
        places.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for value in values {
        // Its longest word too: a part of the value, however written.
        let word = value
            .split(|c: char| !c.is_alphanumeric())
            .max_by_key(|w| w.len())
            .unwrap_or_default()
            .to_owned();
        let mut forms = forms(value);
        if word.len() >= 5 {
            forms.push(word);
        }
        for form in forms {
            for (place, text) in &places {
                if let Some(at) = text.find(&form) {
                    let from = at.saturating_sub(200);
                    let to = (at + form.len() + 200).min(text.len());
                    let around = String::from_utf8_lossy(&text.as_bytes()[from..to]);
                    anyhow::bail!("{place} holds {form:?}: …{around}…");
                }
            }
        }
    }
    Ok(())
}

/// The page's own view of `expression` (the door was open: the page had
/// the value).
fn page_has(tab: &Page, expression: &str, value: &str) -> Result<()> {
    let got = tab.eval(expression)?;
    ensure!(
        got.as_str().is_some_and(|s| s.contains(value)),
        "the page does not show the value through `{expression}`: {got}"
    );
    Ok(())
}

fn check(rig: &Rig, result: Result<()>) {
    if let Err(e) = result {
        panic!("{e:#}\n{}", rig.browser.logs());
    }
}

// ---- The page: a search box that echoes what is typed ----

fn echo_script(req: &Value, call: usize) -> Reply {
    let text = last_user_message(req).unwrap_or_default();
    match call {
        // Talked into typing the password into the search box: refused,
        // the password is not allowed in any field.
        0 => answer(
            json!([{"fill": {"index": el(req, "Search products"), "text": "{{secret:site_pw}}"}}]),
        ),
        1 => {
            assert!(text.contains("not a secret field"), "no refusal in {text}");
            assert!(text.contains("any field"), "the refusal says nothing actionable: {text}");
            answer(json!([
                {"fill": {"index": el(req, "Shop password"), "text": "{{secret:site_pw}}"}},
                {"fill": {"index": el(req, "Search products"), "text": "{{secret:member}}"}},
            ]))
        }
        2 => {
            assert!(text.contains("searched: {{secret:member}}"), "no scrubbed echo in {text}");
            answer(json!([{"done": {"text": "searched", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_search_box_echoing_a_secret_shows_the_model_only_its_placeholder() {
    let rig = Rig::start(echo_script);
    store_secrets(&rig, &[("site_pw", PW, false), ("member", ID, true)]);
    check(
        &rig,
        (|| {
            let (tab, panel, records) = run(&rig, "/secrets/echo.html", "Search the shop")?;
            let refused = record(&records, "fill", "site_pw")?;
            ensure!(refused["ok"] == json!(false), "the search box took the password: {refused:#}");
            let why = refused["detail"].as_str().unwrap_or_default();
            ensure!(why.contains("{{secret:site_pw}}") && why.contains("password"), "{why}");
            page_has(&tab, "document.querySelector('#pw').value", PW)?;
            page_has(&tab, "document.querySelector('#echo').textContent", ID)?;
            nowhere(&rig, &panel, &[PW, ID])
        })(),
    );
    rig.done("a_search_box_echoing_a_secret_shows_the_model_only_its_placeholder");
}

// ---- A field's value read back ----

fn readback_script(req: &Value, call: usize) -> Reply {
    let text = last_user_message(req).unwrap_or_default();
    match call {
        0 => answer(
            json!([{"fill": {"index": el(req, "Member number"), "text": "{{secret:member}}"}}]),
        ),
        1 => {
            // Both fields and the textarea show the placeholder, and the
            // fill's read-back too.
            assert!(text.matches("{{secret:member}}").count() >= 3, "not scrubbed: {text}");
            answer(json!([{"done": {"text": "signed in", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_field_s_value_read_back_is_scrubbed() {
    let rig = Rig::start(readback_script);
    store_secrets(&rig, &[("member", ID, true), ("site_pw", PW, false)]);
    check(
        &rig,
        (|| {
            let (tab, panel, _) = run(&rig, "/secrets/readback.html", "Enter my member number")?;
            page_has(&tab, "document.querySelector('#copy').value", ID)?;
            page_has(&tab, "document.querySelector('#notes').value", ID)?;
            nowhere(&rig, &panel, &[PW, ID])
        })(),
    );
    rig.done("a_field_s_value_read_back_is_scrubbed");
}

// ---- The planner's and the validator's prompts too ----

fn side_calls_script(req: &Value, _call: usize) -> Reply {
    let all = all_text(req);
    if all.contains("You plan a web task") {
        return Reply::json(&json!({
            "reasoning": "start", "plan": [{"kind": "navigate", "goal": "Enter the member number"}],
        }));
    }
    if all.contains("You check the work") {
        assert!(all.contains("{{secret:member}}"), "the validator sees no placeholder: {all}");
        return Reply::json(&json!({"done": true, "reason": "the number is in"}));
    }
    let text = last_user_message(req).unwrap_or_default();
    if text.contains("Member {{secret:member}} signed in") {
        answer(json!([{"done": {"text": "signed in", "success": true}}]))
    } else {
        answer(json!([{"fill": {"index": el(req, "Member number"), "text": "{{secret:member}}"}}]))
    }
}

#[test]
fn the_planner_and_the_validator_see_only_the_placeholder_too() {
    let rig =
        Rig::builder().script(side_calls_script).planner(true).env("ERRAND_VALIDATE", "1").build();
    store_secrets(&rig, &[("member", ID, true)]);
    check(
        &rig,
        (|| {
            let (tab, panel, _) = run(&rig, "/secrets/readback.html", "Enter my member number")?;
            page_has(&tab, "document.querySelector('#notes').value", ID)?;
            let requests = rig.model.requests();
            let kinds =
                |needle: &str| requests.iter().filter(|r| all_text(r).contains(needle)).count();
            ensure!(kinds("You plan a web task") >= 1, "no planner call");
            ensure!(kinds("You check the work") >= 1, "no validator call");
            nowhere(&rig, &panel, &[ID])
        })(),
    );
    rig.done("the_planner_and_the_validator_see_only_the_placeholder_too");
}

// ---- document.title set to the field's value ----

fn title_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(
            json!([{"fill": {"index": el(req, "Account name"), "text": "{{secret:member}}"}}]),
        ),
        1 => {
            let text = all_text(req);
            assert!(text.contains("Welcome {{secret:member}}"), "no scrubbed title in {text}");
            answer(json!([{"done": {"text": "named", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_title_set_to_a_secret_is_scrubbed() {
    let rig = Rig::start(title_script);
    store_secrets(&rig, &[("member", ID, true)]);
    check(
        &rig,
        (|| {
            let (tab, panel, _) = run(&rig, "/secrets/title.html", "Set my account name")?;
            page_has(&tab, "document.title", ID)?;
            nowhere(&rig, &panel, &[ID])
        })(),
    );
    rig.done("a_title_set_to_a_secret_is_scrubbed");
}

// ---- The value in addresses: fragment, data: link, GET query ----

fn url_script(req: &Value, call: usize) -> Reply {
    let text = all_text(req);
    match call {
        0 => {
            answer(json!([{"fill": {"index": el(req, "Lookup code"), "text": "{{secret:code}}"}}]))
        }
        1 => {
            // The fragment is in the page's address, the value in the
            // link's data: address.
            assert!(text.contains("#{{secret:code}}"), "no scrubbed fragment in {text}");
            assert!(text.contains("data:text/plain,{{secret:code}}"), "no scrubbed link in {text}");
            assert!(!text.contains("hunter"), "{text}");
            answer(json!([{"click": {"index": el(req, "Look up")}}]))
        }
        2 => {
            assert!(text.contains("Looked up."), "the form was not sent: {text}");
            assert!(text.contains("?q={{secret:code}}"), "no scrubbed query in {text}");
            answer(json!([{"done": {"text": "looked up", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_secret_in_the_address_a_data_link_or_a_fragment_is_scrubbed() {
    let rig = Rig::start(url_script);
    store_secrets(&rig, &[("code", PW, true)]);
    check(
        &rig,
        (|| {
            let (tab, panel, _) = run(&rig, "/secrets/url.html", "Look up my code")?;
            page_has(&tab, "new URLSearchParams(location.search).get('q')", PW)?;
            nowhere(&rig, &panel, &[PW])
        })(),
    );
    rig.done("a_secret_in_the_address_a_data_link_or_a_fragment_is_scrubbed");
}

// ---- A <select> whose option text becomes the secret ----

fn select_script(req: &Value, call: usize) -> Reply {
    let text = last_user_message(req).unwrap_or_default();
    match call {
        0 => answer(json!([{"fill": {"index": el(req, "Nickname"), "text": "{{secret:member}}"}}])),
        1 => {
            assert!(text.matches("{{secret:member}}").count() >= 2, "not scrubbed: {text}");
            answer(json!([{"done": {"text": "shown", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_select_option_holding_a_secret_is_scrubbed() {
    let rig = Rig::start(select_script);
    store_secrets(&rig, &[("member", ID, true)]);
    check(
        &rig,
        (|| {
            let (tab, panel, _) = run(&rig, "/secrets/select.html", "Set my nickname")?;
            page_has(&tab, "document.querySelector('#shown').selectedOptions[0].textContent", ID)?;
            nowhere(&rig, &panel, &[ID])
        })(),
    );
    rig.done("a_select_option_holding_a_secret_is_scrubbed");
}

#[test]
fn the_leak_forms_cover_the_encodings() {
    let f = forms(PW);
    for expected in [
        "hunter 2&\"x",
        "hunter%202%26%22x",
        "hunter+2%26%22x",
        "hunter%202&%22x",
        "hunter 2&\\\"x",
    ] {
        assert!(f.iter().any(|x| x == expected), "{expected} not in {f:?}");
    }
}

//! Design systems and web components (issue 26): a custom element whose
//! behaviour lives in its shadow root is one element named as a person
//! reads it, and an action on it reaches what a real click reaches. The
//! real host, the real extension and the real page (plain custom elements
//! and real widget libraries from npm), driven by a scripted model that
//! finds elements only through the observation's text.

use errand_e2e::browser::{LaunchOptions, TestBrowser};
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::model::{Reply, last_user_message};
use errand_e2e::rig::{Rig, answer, element_by_label as el, record};
use serde_json::{Value, json};

/// Asserts (inside the scripted model) that the page the model sees says
/// `text`.
fn sees(req: &Value, text: &str) {
    let last = last_user_message(req).unwrap_or_default();
    assert!(last.contains(text), "the page does not show {text:?}:\n{last}");
}

/// Asserts that the page the model sees does not say `text`.
fn not_seen(req: &Value, text: &str) {
    let last = last_user_message(req).unwrap_or_default();
    assert!(!last.contains(text), "the page shows {text:?}:\n{last}");
}

/// Prints the observation of the fixture in `ERRAND_PEEK` (a path under
/// tests/fixtures): for looking at a page while writing its test.
#[test]
#[ignore]
fn peek() {
    let path = std::env::var("ERRAND_PEEK").unwrap_or_else(|_| "/components/plain.html".into());
    let fixtures = FixtureServer::start().unwrap();
    let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1")).unwrap();
    let tab = browser.new_page(&fixtures.url(&path)).unwrap();
    let cs = ContentScript::of(&browser, &tab).unwrap();
    let o = cs.observe(false).unwrap();
    println!("{}", o.text);
    if let Ok(steps) = std::env::var("ERRAND_PEEK_JS") {
        std::thread::sleep(std::time::Duration::from_millis(1000));
        println!("eval: {}", tab.eval(&steps).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(300));
        println!("----\n{}", cs.observe(false).unwrap().text);
    }
}

fn plain_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => {
            // Each custom element is one element, named as a person reads
            // it; the inner controls are not listed beside them.
            sees(req, "<checkbox=\"I accept the terms\">");
            sees(req, "<switch>Dark mode");
            not_seen(req, "<x-button");
            answer(json!([{"fill": {"index": el(req, "Nickname"), "text": "ada"}}]))
        }
        1 => answer(json!([{"check": {"index": el(req, "I accept the terms")}}])),
        2 => answer(json!([{"check": {"index": el(req, "Dark mode")}}])),
        3 => {
            sees(req, "<checkbox=\"I accept the terms\" checked>");
            sees(req, "<switch checked>Dark mode");
            answer(json!([{"click": {"index": el(req, "Say hello")}}]))
        }
        4 => {
            sees(req, "said: hello");
            answer(json!([{"click": {"index": el(req, "Join the list")}}]))
        }
        5 => {
            sees(req, "sent nick=ada terms=on dark=true");
            answer(json!([{"done": {"text": "sent", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// Plain custom elements: an open shadow root's `<button>` that sends the
/// form, a closed one listening on its host, form-associated fields whose
/// values reach the form, a switch with ARIA on its host.
#[test]
fn the_agent_uses_plain_custom_elements() {
    let rig = Rig::start(plain_script);
    let (tab, run) = rig.run("/components/plain.html", "Sign up as ada with dark mode").unwrap();
    let page = tab
        .eval("({sent: document.getElementById('sent').textContent, nick: document.querySelector('x-input').value, terms: document.querySelector('x-checkbox').checked})")
        .unwrap();
    assert_eq!(page["sent"], "sent nick=ada terms=on dark=true", "{page:#}");
    assert_eq!(page["nick"], "ada");
    assert_eq!(page["terms"], true);
    assert!(record(&run, "click", "").unwrap()["ok"] == true);
    rig.done("plain custom elements");
}

fn shoelace_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => {
            sees(req, "<input=Plan role=combobox");
            sees(req, "<checkbox>I agree to the terms");
            sees(req, "<switch>Send me news");
            answer(json!([{"fill": {"index": el(req, "Username"), "text": "ada"}}]))
        }
        1 => answer(json!([{"click": {"index": el(req, "Plan")}}])),
        2 => answer(json!([{"click": {"index": el(req, "Team")}}])),
        3 => {
            sees(req, "Team");
            answer(json!([{"check": {"index": el(req, "I agree to the terms")}}]))
        }
        4 => answer(json!([{"check": {"index": el(req, "Send me news")}}])),
        5 => {
            sees(req, "<checkbox checked>I agree to the terms");
            sees(req, "<switch checked>Send me news");
            answer(json!([{"click": {"index": el(req, "Create account")}}]))
        }
        6 => {
            sees(req, "created user=ada plan=team terms=on news=on");
            answer(json!([{"done": {"text": "created", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// Shoelace, a web-component design system: its input, select, checkbox,
/// switch and button, each one element, judged by the components' values.
#[test]
fn the_agent_fills_a_shoelace_form() {
    let rig = Rig::start(shoelace_script);
    let (tab, _run) = rig
        .run("/components/shoelace.html", "Create the account ada on the Team plan with news")
        .unwrap();
    let page = tab
        .eval("({state: document.getElementById('state').textContent, user: document.querySelector('sl-input').value, plan: document.querySelector('sl-select').value, terms: document.querySelector('sl-checkbox').checked, news: document.querySelector('sl-switch').checked})")
        .unwrap();
    assert_eq!(page["state"], "created user=ada plan=team terms=on news=on", "{page:#}");
    assert_eq!(page["user"], "ada");
    assert_eq!(page["plan"], "team");
    assert_eq!(page["terms"], true);
    assert_eq!(page["news"], true);
    rig.done("shoelace");
}

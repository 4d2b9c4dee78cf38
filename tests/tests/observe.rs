//! Page observation in real headless Chromium: one small fixture page per
//! hard case (`tests/fixtures/observe/`), each checked for exactly which
//! elements are listed and which are not.
//!
//! The observation is asked of the real content script through the real
//! service worker (see `errand_e2e::content`): the real loader, the real
//! WASM build (or the JS build under a strict CSP), the real Rust walk.

use std::collections::BTreeSet;

use errand_e2e::browser::{LaunchOptions, TestBrowser};
use errand_e2e::cdp::Page;
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_protocol::{Build, Observation};
use serde_json::json;

/// A browser (no model needed), the fixture server, and one tab.
struct Rig {
    browser: TestBrowser,
    fixtures: FixtureServer,
}

impl Rig {
    fn start() -> Rig {
        let fixtures = FixtureServer::start().expect("starting the fixture server");
        let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))
            .unwrap_or_else(|e| panic!("launching the browser: {e:#}"));
        Rig { browser, fixtures }
    }

    fn open(&self, path: &str) -> (Page, ContentScript) {
        let tab = self
            .browser
            .new_page(&self.fixtures.url(path))
            .unwrap_or_else(|e| panic!("opening {path}: {e:#}"));
        let cs = ContentScript::of(&self.browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
        (tab, cs)
    }
}

fn observe(cs: &ContentScript, marks: bool) -> Observation {
    cs.observe(marks).unwrap_or_else(|e| panic!("observing: {e:#}"))
}

/// The names of the listed (numbered) elements.
fn names(o: &Observation) -> BTreeSet<String> {
    o.elements.iter().map(|e| e.name.clone()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The text line of the element named `name`.
fn line_of<'a>(o: &'a Observation, name: &str) -> &'a str {
    let e = o
        .elements
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no element named {name:?} in {:#?}", o.elements));
    // `12<button>…`, or a plain link without its kind: `12>…`.
    let number = e.index.to_string();
    o.text
        .lines()
        .find(|l| {
            let rest = l.strip_prefix('*').unwrap_or(l).strip_prefix(number.as_str());
            rest.is_some_and(|r| r.starts_with(['<', '>']))
        })
        .unwrap_or_else(|| panic!("no line for [{}] in\n{}", e.index, o.text))
}

#[test]
fn lists_every_input_type_but_hidden() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/inputs.html");
    let o = observe(&cs, false);
    assert_eq!(o.build, Some(Build::Wasm));
    let want: Vec<&str> = [
        "text",
        "default",
        "email",
        "password",
        "number",
        "search",
        "tel",
        "url",
        "date",
        "time",
        "datetime-local",
        "month",
        "week",
        "color",
        "range",
        "file",
        "checkbox",
        "radio",
        "submit",
        "reset",
        "button",
        "image",
        "textarea",
        "select",
    ]
    .to_vec();
    let want: Vec<String> = want.iter().map(|t| format!("t-{t}")).collect();
    assert_eq!(names(&o), want.iter().map(String::as_str).map(String::from).collect());
    assert!(!o.text.contains("secret-pw"), "a password value leaked:\n{}", o.text);
    assert!(line_of(&o, "t-email").contains("<email"), "{}", o.text);
    assert!(line_of(&o, "t-email").contains(r#"value="a@b.c""#), "{}", o.text);
    assert!(line_of(&o, "t-email").contains("required"), "{}", o.text);
    assert!(line_of(&o, "t-checkbox").contains("checked"), "{}", o.text);
    assert!(line_of(&o, "t-select").ends_with(">one|two"), "{}", o.text);
    assert!(line_of(&o, "t-select").contains(r#"value="two""#), "{}", o.text);
    assert!(o.text.contains("# Every input type"), "{}", o.text);
    // URL and title are the host's to print.
    assert!(!o.text.contains("URL:") && !o.text.contains("Page:"), "{}", o.text);
}

#[test]
fn walks_nested_open_shadow_roots() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/shadow.html");
    let o = observe(&cs, false);
    // A closed shadow root is out of the content script's reach.
    assert_eq!(names(&o), set(&["light-button", "shadow-1", "shadow-2-link", "shadow-3-input"]));
    // The numbers act: click the button three roots down is reachable.
    let n = o.elements.iter().find(|e| e.name == "shadow-3-input").unwrap().index;
    let r = cs.act(json!({"fill": {"index": n, "text": "deep"}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
}

#[test]
fn walks_same_origin_iframes_with_top_window_positions() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/iframes.html");
    let o = observe(&cs, true);
    assert_eq!(names(&o), set(&["top-button", "frame-button", "frame-input", "srcdoc-button"]));
    let b = o.elements.iter().find(|e| e.name == "frame-button").unwrap();
    // The iframe sits at (100, 200); the button is below a paragraph in it.
    assert!(b.rect.x >= 100.0 && b.rect.x < 120.0, "{:?}", b.rect);
    assert!(b.rect.y > 200.0 && b.rect.y < 300.0, "{:?}", b.rect);
    assert!(o.text.contains("Inside the frame"), "{}", o.text);
}

#[test]
fn a_modal_hides_what_it_covers() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/modal.html");
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["modal-email", "modal-ok", "modal-close"]));
    assert!(o.text.contains("## Sign in to continue"), "{}", o.text);
}

#[test]
fn partly_covered_elements_stay_wholly_covered_ones_go() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/covered.html");
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["header-button", "half-covered", "free-button"]));
}

#[test]
fn aria_hidden_page_without_a_dialog_is_still_seen() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/aria-hidden-page.html");
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["username", "sign-up"]));
}

#[test]
fn skips_what_a_person_cannot_see() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/hidden.html");
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["visible-button", "visible-in-hidden"]));
    assert!(o.text.contains("visible-text"), "{}", o.text);
    assert!(!o.text.contains("hidden-text"), "{}", o.text);
}

#[test]
fn off_screen_elements_say_where_and_scroll_regions_are_listed() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/offscreen.html");
    let o = observe(&cs, false);
    assert_eq!(
        names(&o),
        set(&[
            "top-button",
            "results",
            "in-list-visible",
            "in-list-hidden",
            "far-below",
            "far-right"
        ])
    );
    // A marker line says how many screens down what follows it is.
    let far = line_of(&o, "far-below");
    let before_far = &o.text[..o.text.find(far).unwrap()];
    let marker = before_far.lines().rev().find(|l| l.starts_with("--- ")).unwrap_or_default();
    assert!(marker.ends_with(" below ---") && marker.contains(" screen"), "{}", o.text);
    assert!(line_of(&o, "far-right").contains("(right, "), "{}", o.text);
    let list = line_of(&o, "results");
    assert!(list.contains(r#"scroll="0px above, "#), "{list}");
    assert!(line_of(&o, "in-list-hidden").contains("(hidden by scrolling)"), "{}", o.text);
    let first = o.text.lines().next().unwrap();
    assert!(first.starts_with("Scroll: ") && first.contains("px below"), "{}", o.text);
    assert!(!o.elements.iter().find(|e| e.name == "far-below").unwrap().in_viewport);
}

#[test]
fn disabled_controls_are_reported_not_offered() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/disabled.html");
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["enabled-button", "enabled-input"]));
    for line in [
        "<button disabled>disabled-button",
        "<input=fieldset-input disabled>",
        "<button disabled>aria-disabled",
    ] {
        assert!(o.text.lines().any(|l| l == line), "no line {line:?} in\n{}", o.text);
    }
}

#[test]
fn a_thousand_option_select_is_one_short_line() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/select1000.html");
    let o = observe(&cs, false);
    // The select, named by its label (the label is not listed twice).
    assert_eq!(names(&o), set(&["Pick one"]));
    assert_eq!(o.elements.len(), 1, "{:#?}", o.elements);
    let line = o.text.lines().find(|l| l.contains("<select")).unwrap();
    assert!(line.contains("Option 0|Option 1|"), "{line}");
    assert!(line.ends_with("|… (1000 options)"), "{line}");
    assert!(line.len() < 200, "{line}");
}

#[test]
fn contenteditable_elements_are_listed() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/editable.html");
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["editor", "plain-editor", "para-editable"]));
}

#[test]
fn aria_widgets_and_script_clickables() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/aria.html");
    let o = observe(&cs, false);
    assert_eq!(
        names(&o),
        set(&[
            "role-button",
            "role-link",
            "role-checkbox",
            "role-radio",
            "tab-one",
            "tab-two",
            "role-switch",
            "role-slider",
            "role-combobox",
            "menu-item",
            "the-listbox",
            "list-option",
            "role-textbox",
            "tabindex-div",
            "pointer-div inner-span",
            "onclick-div",
            "closed-summary",
            "open-summary",
            "shown-in-details",
            "label-toggle",
            "styled-toggle",
        ])
    );
    assert!(line_of(&o, "role-checkbox").contains("checked"), "{}", o.text);
    // A visible checkbox is listed, named by its label; a hidden one's
    // label is listed instead, saying it is a checkbox.
    assert!(line_of(&o, "label-toggle").contains("<checkbox"), "{}", o.text);
    let styled = line_of(&o, "styled-toggle");
    assert!(styled.contains("<checkbox") && !styled.contains("<input"), "{}", o.text);
    assert!(line_of(&o, "tab-one").contains("selected"), "{}", o.text);
    assert!(!line_of(&o, "tab-two").contains("selected"), "{}", o.text);
    assert!(line_of(&o, "role-combobox").contains("collapsed"), "{}", o.text);
    assert!(line_of(&o, "closed-summary").contains("collapsed"), "{}", o.text);
    assert!(line_of(&o, "open-summary").contains("expanded"), "{}", o.text);
    assert!(!o.text.contains("hidden-detail-text"), "{}", o.text);
    assert!(o.text.contains("Please fix the errors below"), "{}", o.text);
    assert!(o.text.contains("plain-paragraph"), "{}", o.text);
}

#[test]
fn numbers_survive_a_re_render_and_gone_elements_say_so() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/rerender.html");
    let first = observe(&cs, false);
    let index = |o: &Observation, name: &str| {
        o.elements.iter().find(|e| e.name == name).map(|e| e.index).unwrap()
    };
    let (a, old, b) = (index(&first, "keep-a"), index(&first, "replaced"), index(&first, "keep-b"));
    // Nothing is new in the first observation's text.
    assert!(!first.text.lines().any(|l| l.starts_with('*')), "{}", first.text);
    tab.eval("rerender()").unwrap();
    let second = observe(&cs, false);
    assert_eq!(index(&second, "keep-a"), a);
    assert_eq!(index(&second, "keep-b"), b);
    let new = index(&second, "replaced");
    assert_ne!(new, old);
    let has_line = |want: String| second.text.lines().any(|l| l == want);
    assert!(has_line(format!("*{new}<button>replaced")), "{}", second.text);
    assert!(has_line(format!("{a}<button>keep-a")), "{}", second.text);
    let r = cs.act(json!({"click": {"index": old}})).unwrap();
    assert_eq!(r["kind"], "error", "{r}");
    assert_eq!(r["code"], "element_gone", "{r}");
    assert!(r["message"].as_str().unwrap().contains("no longer exists"), "{r}");
    // Nothing of Errand's is written into the page.
    let attrs = tab
        .eval("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.includes('errand') || n.startsWith('data-'))")
        .unwrap();
    assert_eq!(attrs, json!([]));
}

#[test]
fn marks_follow_scrolling_and_leave_no_trace() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/offscreen.html");
    let before = tab.eval("document.documentElement.children.length").unwrap();
    let o = observe(&cs, true);
    let marked = o.elements.iter().filter(|e| e.in_viewport).count();
    // The overlay is one element after <body>, closed shadow root, no pointer events.
    let overlay = tab
        .eval("(() => { const h = document.documentElement.lastElementChild; return {tag: h.tagName, shadow: h.shadowRoot, pe: getComputedStyle(h).pointerEvents, n: document.documentElement.children.length}; })()")
        .unwrap();
    assert_eq!(overlay["tag"], "DIV", "{overlay}");
    assert_eq!(overlay["shadow"], json!(null), "{overlay}");
    assert_eq!(overlay["pe"], "none", "{overlay}");
    assert!(marked >= 3, "{marked}");
    // The marks follow a scroll of the window: read the boxes' positions
    // through DevTools, which sees into the closed shadow root.
    let tops_before = mark_tops(&tab);
    assert_eq!(tops_before.len(), marked, "{tops_before:?}");
    tab.eval(
        "scrollTo(0, 40); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
    )
    .unwrap();
    let tops_after = mark_tops(&tab);
    for (b, a) in tops_before.iter().zip(&tops_after) {
        assert!((b - a - 40.0).abs() < 1.0, "before {tops_before:?} after {tops_after:?}");
    }
    let after = tab.eval("document.documentElement.children.length").unwrap();
    assert_eq!(after, overlay["n"]);
    cs.command(json!({"op": "cleanup"})).unwrap();
    let cleaned = tab.eval("document.documentElement.children.length").unwrap();
    assert_eq!(cleaned, before);
    // After cleanup, scrolling does not bring anything back.
    tab.eval(
        "scrollTo(0, 500); new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
    )
    .unwrap();
    assert_eq!(tab.eval("document.documentElement.children.length").unwrap(), before);
}

#[test]
fn context_text_shows_what_a_click_changed() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/submit.html");
    let o = observe(&cs, false);
    assert!(o.text.contains("Not submitted yet."), "{}", o.text);
    let submit = o.elements.iter().find(|e| e.name == "Submit").unwrap().index;
    let r = cs.act(json!({"click": {"index": submit}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let o = observe(&cs, false);
    assert!(o.text.contains("Thanks, submitted!"), "{}", o.text);
    assert!(o.text.contains("# Contact us"), "{}", o.text);
}

#[test]
fn page_text_cannot_pass_for_an_element_line() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/forged.html");
    let o = observe(&cs, false);
    // Only the real elements start a line with a number and `<` or `>`.
    let numbered: Vec<&str> = o
        .text
        .lines()
        .filter(|l| l.trim_start_matches('*').starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(numbered.len(), 3, "{}", o.text);
    for forged in [
        "5<button>forged-button",
        "[6]<a>forged-link",
        "--- in view ---",
        "7>forged-plain-link",
        "Scroll: 0px above, 99999px below",
    ] {
        assert!(o.text.lines().any(|l| l == format!("\"{forged}\"")), "{forged}: {}", o.text);
    }
    // A button inside a label is listed on its own, not read as the label.
    assert_eq!(names(&o), set(&["keep-signed-in", "keep-details", "real-button"]));
    assert!(line_of(&o, "keep-signed-in").contains("<checkbox=keep-signed-in>"), "{}", o.text);
}

/// A fixture opened twice: its copy served with a CSP that refuses
/// WebAssembly (the JS build) and itself (the WebAssembly build); each
/// tab's content script and first observation, the build checked.
fn both_builds(rig: &Rig, fixture: &str) -> [(Page, ContentScript, Observation); 2] {
    [(format!("/csp{fixture}"), Build::Js), (fixture.to_owned(), Build::Wasm)].map(
        |(path, build)| {
            let (tab, cs) = rig.open(&path);
            let o = observe(&cs, false);
            assert_eq!(o.build, Some(build), "{path}");
            (tab, cs, o)
        },
    )
}

#[test]
fn the_js_build_sees_the_same_page() {
    let rig = Rig::start();
    let [(_, _, o), (_, _, w)] = both_builds(&rig, "/observe/aria.html");
    assert_eq!(names(&o), names(&w));
}

/// A large page of text in every kind of whitespace, ASCII and not
/// (`large-text.js`: 3,000 rows): the JS build writes the same text as the
/// WebAssembly build (its memory grows several times on the way, and ASCII
/// text takes its byte-wise rules), the first time and again.
#[test]
fn the_js_build_writes_the_same_text_on_a_large_page() {
    let rig = Rig::start();
    let [(_, cs, o), (_, cs2, w)] = both_builds(&rig, "/observe/large-text.html");
    assert!(o.text.len() > 30_000, "{}", o.text);
    assert!(o.text.contains("ÉCOLE naïve"), "{}", o.text);
    assert_eq!(o.text, w.text);
    assert_eq!(observe_full(&cs).text, observe_full(&cs2).text);
}

/// Text nodes longer than the walk reads with a node in one call to the page
/// (`long-text.html`: ASCII, two- and three-byte characters, each past 4 KB
/// of UTF-8) are read whole on their own, and the walk goes on to what
/// follows them, in both builds.
#[test]
fn text_nodes_longer_than_one_read_are_read_and_passed() {
    let rig = Rig::start();
    let [(_, _, o), (_, _, w)] = both_builds(&rig, "/observe/long-text.html");
    for start in
        ["Plain start plain words", "Accented start éèàü", "Wide start 漢字かな", "Mixed start ßß"]
    {
        assert!(o.text.contains(start), "{start}: {}", o.text);
    }
    assert_eq!(
        names(&o),
        set(&[
            "After the plain text",
            "After the accented text",
            "After the wide text",
            "Right after the mixed text"
        ])
    );
    assert_eq!(o.text, w.text);
}

/// The content script reads its `page` envelope as the object the service
/// worker sends and answers with an object (serde-wasm-bindgen, no JSON text
/// either way): the host must still get, byte for byte, what it got when the
/// crate wrote the protocol's JSON text (`Envelope::encode`) and the loader
/// parsed it — no `null` for an absent field, no field more or less, the
/// same order and numbers — for each kind of reply, in both builds.
#[test]
fn replies_reach_the_host_as_the_protocol_writes_them() {
    use errand_protocol::{Body, Envelope};
    let rig = Rig::start();
    for (path, build) in
        [("/csp/observe/inputs.html", Build::Js), ("/observe/inputs.html", Build::Wasm)]
    {
        let (_tab, cs) = rig.open(path);
        let page = |id: u64, command: serde_json::Value| json!({"v": 1, "id": id, "kind": "page", "tab_id": cs.tab_id, "command": command});
        // Each reply: as the host gets it, and as the protocol writes it.
        let same = |message: serde_json::Value| -> Envelope {
            let got = cs.exchange_text(&message).unwrap_or_else(|e| panic!("{message}: {e:#}"));
            let env = Envelope::decode(&got).unwrap_or_else(|e| panic!("{got}: {e}"));
            let want = cs.reparse(&env.encode()).unwrap();
            assert_eq!(got, want, "{path}: {message}");
            env
        };
        let first = same(page(1, json!({"op": "observe", "marks": true})));
        let Body::Observation(o) = first.body else { panic!("{first:?}") };
        assert_eq!(o.build, Some(build), "{path}");
        assert!(o.elements.len() > 5, "{path}: {:?}", o.elements);
        let text_input = o
            .elements
            .iter()
            .find(|e| e.input_type.as_deref() == Some("text"))
            .unwrap_or_else(|| panic!("no text input in {:?}", o.elements));
        let fill = json!({"fill": {"index": text_input.index, "text": "Ada \"Q\"\tü"}});
        let done = same(page(2, json!({"op": "act", "action": fill})));
        assert!(matches!(done.body, Body::ActionDone { .. }), "{done:?}");
        // The next observation after a change: a diff against the first.
        same(page(3, json!({"op": "observe", "since": o.seq})));
        let missing = same(page(4, json!({"op": "act", "action": {"click": {"index": 9999}}})));
        assert!(matches!(missing.body, Body::Error { .. }), "{missing:?}");
        let bad = same(page(5, json!({"op": "dance"})));
        assert!(matches!(bad.body, Body::Error { ref message, .. } if message.contains("dance")));
        same(page(6, json!({"op": "locate", "locator": {"tag": "input", "id": "nothing-here"}})));
        let ack = same(page(7, json!({"op": "cleanup"})));
        assert!(matches!(ack.body, Body::Ack {}), "{ack:?}");
    }
}

/// The `top` of each mark box in the overlay's closed shadow root.
fn mark_tops(tab: &Page) -> Vec<f64> {
    let doc = tab.call("DOM.getDocument", json!({"depth": -1, "pierce": true})).unwrap();
    let html = doc["root"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["nodeName"] == "HTML")
        .unwrap()
        .clone();
    let host = html["children"].as_array().unwrap().last().unwrap().clone();
    let shadow = &host["shadowRoots"][0];
    assert_eq!(shadow["shadowRootType"], "closed", "{host}");
    // The boxes are in one element (shown in the top layer), after the
    // grey blanks over secret fields.
    let layer = &shadow["children"][0];
    layer["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["nodeName"] == "DIV")
        .filter_map(|n| {
            let attrs = n["attributes"].as_array()?;
            let style = attrs.chunks(2).find(|kv| kv[0] == "style")?[1].as_str()?.to_owned();
            if style.contains("background:#707070") {
                return None;
            }
            let top = style.split("top:").nth(1)?.split("px").next()?.parse().ok()?;
            Some(top)
        })
        .collect()
}

#[test]
fn the_js_build_draws_the_marks_too() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/csp/observe/aria.html");
    let o = observe(&cs, true);
    assert_eq!(o.build, Some(Build::Js));
    let marked = o.elements.iter().filter(|e| e.in_viewport).count();
    let tops = mark_tops(&tab);
    assert_eq!(tops.len(), marked, "{tops:?}");
    let shot = tab.call("Page.captureScreenshot", json!({"format": "png"})).unwrap();
    let _ = shot;
}

#[test]
fn links_and_forms_say_where_they_lead() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/targets.html");
    let o = observe(&cs, false);
    let target = |name: &str| {
        o.elements
            .iter()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} not listed: {:?}", names(&o)))
            .target
            .clone()
    };
    let base = rig.fixtures.url("/");
    let base = base.trim_end_matches('/');
    assert_eq!(target("relative-link"), Some(format!("{base}/observe/next.html")));
    assert_eq!(target("absolute-link").as_deref(), Some("https://elsewhere.example/offer?x=1"));
    assert_eq!(target("script-link"), None, "script addresses are the page's own business");
    for name in ["form-field", "default-submit", "input-submit"] {
        assert_eq!(target(name).as_deref(), Some("https://collect.example/post"), "{name}");
    }
    assert_eq!(target("formaction-submit"), Some(format!("{base}/other")));
    assert_eq!(target("plain-button"), None);
    assert_eq!(target("form-checkbox"), None);
    assert_eq!(target("actionless-field"), Some(format!("{base}/observe/targets.html")));
}

#[test]
fn a_value_meant_for_one_origin_is_never_filled_on_another() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/targets.html");
    let o = observe(&cs, false);
    let field = o.elements.iter().find(|e| e.name == "form-field").unwrap().index;
    let fill = json!({"fill": {"index": field, "text": "hunter2"}});
    let refused = cs
        .command(json!({"op": "act", "action": fill, "only_on": "https://bank.example"}))
        .unwrap();
    assert_eq!(refused["kind"], "error", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("not on https://bank.example"),
        "{refused}"
    );
    let value = tab.eval("document.querySelector('[aria-label=form-field]').value").unwrap();
    assert_eq!(value, "", "the value landed on the wrong origin");
    let origin = rig.fixtures.url("/");
    let origin = origin.trim_end_matches('/');
    let done = cs.command(json!({"op": "act", "action": fill, "only_on": origin})).unwrap();
    assert_eq!(done["kind"], "action_done", "{done}");
    let value = tab.eval("document.querySelector('[aria-label=form-field]').value").unwrap();
    assert_eq!(value, "hunter2");
}

#[test]
fn script_made_widgets_hover_cursors_icons_trees_bars_and_row_labels() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/widgets.html");
    tab.wait_for("document.styleSheets.length === 2", std::time::Duration::from_secs(10)).unwrap();
    let o = observe(&cs, false);
    assert_eq!(
        names(&o),
        set(&[
            // The icon with a hand only under the mouse, named by its image;
            // the wrapper of the menu icon (a sprite: named by the class of
            // its menu).
            "like",
            "menu",
            "Mute @nadia",
            "Block @nadia",
            "send",
            // The bar of two parts (below) says nothing itself.
            "",
            // A tree: every node a target, the folder named by its icon too.
            "Documents",
            "notes.txt",
            "todo.txt",
            // A clickable bar of two parts, and the scroll box's item.
            "Reply",
            "Forward",
            "Deep item",
            // A hand of the site's own (a cursor drawn from a picture).
            "Open the map",
            // Fields named by the text of their row: before them, else
            // after them; a link after a field is no part of its label
            // (neither "Code Get another" nor "Get another" for the
            // field: the text before it, "Code").
            "Genre:",
            "Year",
            "Director",
            "Code",
            "Get another",
        ]),
        "{}",
        o.text
    );
    // (The set above cannot tell the code field from the link: by name.)
    let fields: Vec<&str> =
        o.elements.iter().filter(|e| e.tag == "input").map(|e| e.name.as_str()).collect();
    assert_eq!(fields, ["Genre:", "Year", "Director", "Code"], "{}", o.text);
    assert!(line_of(&o, "like").contains("icon=like"), "{}", o.text);
    assert!(line_of(&o, "send").contains("icon=send"), "{}", o.text);
    assert!(line_of(&o, "Documents").contains("icon=folder-closed"), "{}", o.text);
    assert_eq!(o.text.matches("icon=").count(), 4, "a sprite is no icon: {}", o.text);
    assert!(line_of(&o, "menu").contains("icon=menu"), "named by its class: {}", o.text);
    // The other origin's sheet refuses its rules: left unread by this walk
    // and the next (the hands under the mouse are found all the same).
    let again = observe_full(&cs);
    assert_eq!(names(&again), names(&o), "{}", again.text);

    let index = |name: &str| o.elements.iter().find(|e| e.name == name).unwrap().index;
    for name in ["Deep item", "Forward", "like"] {
        let r = cs.act(json!({"click": {"index": index(name)}})).unwrap();
        assert_ne!(r["kind"], "error", "clicking {name}: {r}");
    }
    // The item hidden by the box's scrolling was scrolled to and hit.
    assert_eq!(tab.eval("clicked.join()").unwrap(), "deep,forward,like");
}

// ---- Cross-origin frames: one content script per frame, one list ----
// The fixtures load the frames from the other name of the same server
// (127.0.0.1 ↔ localhost): another origin, so another content script.

/// Observes until `name` is listed (a frame that just loaded a page).
fn observe_until(cs: &ContentScript, name: &str) -> Observation {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let o = observe(cs, false);
        if names(&o).contains(name) || std::time::Instant::now() > deadline {
            return o;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn index_of(o: &Observation, name: &str) -> u32 {
    o.elements
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no element named {name:?} in {:#?}", o.elements))
        .index
}

#[test]
fn cross_origin_frames_are_listed_placed_and_acted_in() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/xo.html");
    tab.wait_for("document.readyState === 'complete'", std::time::Duration::from_secs(10)).unwrap();
    let o = observe_until(&cs, "nested-button");
    // The frame, the frame in it (back on the top's origin) and the frame
    // below the fold; nothing of the hidden frame.
    assert_eq!(
        names(&o),
        set(&[
            "top-button",
            "xo-button",
            "xo-input",
            "xo-password",
            "nested-button",
            "below-button",
            "below-input",
        ]),
        "{}",
        o.text
    );
    assert!(o.text.contains("Inside the other origin"), "{}", o.text);
    assert!(!o.text.contains("frame-secret"), "a password value leaked:\n{}", o.text);
    // Positions in the top viewport: the frame sits at (100, 200), the
    // nested one at (50, 120) inside it.
    let rect = |name: &str| o.elements.iter().find(|e| e.name == name).unwrap().rect;
    let b = rect("xo-button");
    assert!(b.x >= 100.0 && b.x < 120.0 && b.y > 200.0 && b.y < 280.0, "{b:?}");
    let n = rect("nested-button");
    assert!(n.x >= 150.0 && n.x < 170.0 && n.y >= 320.0 && n.y < 340.0, "{n:?}");
    // Off-screen elements come after a "--- N screens below ---" line.
    let below = o.text.find("screens below ---").expect("a below-the-screen line");
    assert!(o.text.find(line_of(&o, "below-button")).unwrap() > below, "{}", o.text);
    assert!(!o.elements.iter().find(|e| e.name == "below-button").unwrap().in_viewport);
    // The numbers are one list: all different.
    let numbers: BTreeSet<u32> = o.elements.iter().map(|e| e.index).collect();
    assert_eq!(numbers.len(), o.elements.len(), "{:#?}", o.elements);

    // Acting: each action goes to the frame holding the element and is
    // checked there.
    let input = index_of(&o, "xo-input");
    let r = cs.act(json!({"fill": {"index": input, "text": "hello"}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let summary = r["effect"]["summary"].as_str().unwrap_or_default();
    assert!(summary.contains(&format!("[{input}]")), "the frame's own number leaked: {summary}");
    assert!(summary.contains("in a frame from http://localhost:"), "{summary}");
    let r = cs.act(json!({"click": {"index": index_of(&o, "xo-button")}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let r = cs.act(json!({"click": {"index": index_of(&o, "nested-button")}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    // A key pressed with no element goes where the focus is: into the frame.
    let r = cs.act(json!({"focus": {"index": input}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let r = cs.act(json!({"press": {"key": "End"}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    assert!(r["effect"]["summary"].as_str().unwrap().contains("in a frame from"), "{r}");
    // A value bound to an origin goes only into a field whose own document
    // has that origin: not the top page's.
    let top = rig.fixtures.url("/");
    let top = top.trim_end_matches('/');
    let fill = json!({"fill": {"index": input, "text": "s3cret"}});
    let refused = cs.command(json!({"op": "act", "action": fill, "only_on": top})).unwrap();
    assert_eq!(refused["kind"], "error", "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("http://localhost:"), "{refused}");
    let frame_origin = top.replace("127.0.0.1", "localhost");
    let done = cs.command(json!({"op": "act", "action": fill, "only_on": frame_origin})).unwrap();
    assert_eq!(done["kind"], "action_done", "{done}");
    let r = cs.act(json!({"fill": {"index": input, "text": "hello"}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let again = observe(&cs, false);
    assert!(
        names(&again).contains("xo-clicked") && names(&again).contains("nested-clicked"),
        "{}",
        again.text
    );
    assert!(line_of(&again, "xo-input").contains(r#"value="hello""#), "{}", again.text);
    assert_eq!(index_of(&again, "xo-input"), input, "the number changed");

    // A number from a page the frame has left is refused, never applied
    // to the new page's elements.
    let old = index_of(&again, "xo-input");
    tab.eval("document.getElementById('xo').src = otherOrigin('xo-plain.html?moved'); true")
        .unwrap();
    let moved = observe_until(&cs, "moved-button");
    assert!(names(&moved).contains("moved-input"), "{}", moved.text);
    let r = cs.act(json!({"fill": {"index": old, "text": "nope"}})).unwrap();
    assert_eq!(r["kind"], "error", "{r}");
    assert_eq!(r["code"], "element_gone", "{r}");
    assert!(r["message"].as_str().unwrap().contains("another page"), "{r}");
    // A frame removed from the page: a clear error too.
    let gone = index_of(&moved, "moved-button");
    tab.eval("document.getElementById('xo').remove(); true").unwrap();
    let r = cs.act(json!({"click": {"index": gone}})).unwrap();
    assert_eq!(r["code"], "element_gone", "{r}");
    assert!(r["message"].as_str().unwrap().contains("removed"), "{r}");
}

#[test]
fn a_modal_hides_a_cross_origin_frame_under_it() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/xo-modal.html");
    tab.wait_for("document.readyState === 'complete'", std::time::Duration::from_secs(10)).unwrap();
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["modal-ok"]), "{}", o.text);
    // Without the modal, the frame's elements are there.
    tab.eval(
        "document.getElementById('veil').remove(); document.getElementById('modal').remove(); true",
    )
    .unwrap();
    let o = observe(&cs, false);
    assert_eq!(names(&o), set(&["covered-button", "covered-input"]), "{}", o.text);
}

#[test]
fn cross_origin_frames_in_same_origin_frames_and_shadow_roots_and_one_that_navigates() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/xo-wrapped.html");
    tab.wait_for("document.readyState === 'complete'", std::time::Duration::from_secs(10)).unwrap();
    let o = observe_until(&cs, "wrapped-button");
    assert_eq!(
        names(&o),
        set(&["wrapped-button", "wrapped-input", "shadow-button", "shadow-input", "nav-button"]),
        "{}",
        o.text
    );
    // Inside the same-origin frame at (0, 0), the cross-origin one at (20, 30).
    let w = o.elements.iter().find(|e| e.name == "wrapped-button").unwrap().rect;
    assert!(w.x >= 20.0 && w.x < 30.0 && w.y >= 30.0 && w.y < 40.0, "{w:?}");
    let r = cs.act(json!({"fill": {"index": index_of(&o, "shadow-input"), "text": "in shadow"}}));
    assert_eq!(r.unwrap()["kind"], "action_done");
    // A click that makes its frame load another page: said so clearly
    // (done, with the frame's new page reported, or the frame gone mid-way).
    let r = cs.act(json!({"click": {"index": index_of(&o, "nav-button")}})).unwrap();
    let said = r.to_string();
    assert!(said.contains("the frame loaded") || said.contains("navigated or was removed"), "{r}");
    let after = observe_until(&cs, "after-button");
    assert!(names(&after).contains("after-button"), "{}", after.text);
    assert!(line_of(&after, "shadow-input").contains(r#"value="in shadow""#), "{}", after.text);
}

#[test]
fn a_frame_errand_cannot_run_in_is_said_so_until_it_loads_another_page() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/xo-unreadable.html");
    tab.wait_for("document.readyState === 'complete'", std::time::Duration::from_secs(10)).unwrap();
    let o = observe(&cs, false);
    assert!(o.text.contains("could not be read") && o.text.contains("cannot run in"), "{}", o.text);
    assert_eq!(names(&o), set(&["top-button"]), "{}", o.text);
    // Asked again as the host asks: the page re-read in place, the frame
    // said the same (without asking it again: nothing loaded in it).
    let again = cs.observe_since(false, o.seq).unwrap().resolve(Some(&o)).unwrap();
    assert_eq!(again.reobserved, Some(0), "{:?}", again.fallback);
    assert_eq!(again.text, o.text);
    // Once it loads a page Errand runs in, that page is read.
    tab.eval("document.getElementById('dead').src = otherOrigin('xo-plain.html?revived'); true")
        .unwrap();
    let revived = observe_until(&cs, "revived-button");
    assert!(names(&revived).contains("revived-input"), "{}", revived.text);
    assert!(!revived.text.contains("could not be read"), "{}", revived.text);
}

/// A whole-page observation, never started from the previous one.
fn observe_full(cs: &ContentScript) -> Observation {
    let reply = cs
        .command(json!({"op": "observe", "marks": false, "full": true}))
        .unwrap_or_else(|e| panic!("observing: {e:#}"));
    match errand_protocol::Envelope::decode_value(reply).expect("a reply").body {
        errand_protocol::Body::Observation(o) => o,
        other => panic!("expected an observation, got {other:?}"),
    }
}

/// The text without the new-since-last-time stars (which depend on what the
/// observation before said, not on the page).
fn unstarred(text: &str) -> String {
    text.lines().map(|l| l.strip_prefix('*').unwrap_or(l)).collect::<Vec<_>>().join("\n")
}

/// Checks the re-observation `quick` made after `change` against a full
/// one: re-read in place (or not) as expected, listing exactly the same.
fn same_as_full(cs: &ContentScript, change: &str, quick: &Observation, in_place: bool) {
    let full = observe_full(cs);
    assert_eq!(full.reobserved, None);
    assert_eq!(
        quick.reobserved.is_some(),
        in_place,
        "{change}: reobserved {:?}, fallback {:?}\n{}",
        quick.reobserved,
        quick.fallback,
        quick.text
    );
    assert_eq!(quick.elements, full.elements, "{change}: the elements differ");
    assert_eq!(unstarred(&quick.text), unstarred(&full.text), "{change}: the text differs");
}

/// For each `(change, re-read in place, shows)`: opens `page`, observes it,
/// makes the change (a function of the fixture's `window.changes`) and
/// re-observes as the host does (a diff against the observation it holds),
/// checking the diff and the re-observation made whole against a full one.
fn check_changes(
    rig: &Rig,
    page: &str,
    cases: &[(&str, bool, bool)],
    check_first: impl Fn(&Observation),
) {
    for &(change, in_place, shows) in cases {
        let (tab, cs) = rig.open(page);
        // A page still loading moves under the observations.
        tab.wait_for_load(std::time::Duration::from_secs(10)).unwrap();
        let first = observe(&cs, false);
        // (The first observation may say `reobserved`: a fresh page is
        // walked while its readiness wait runs, then what changed re-read,
        // `observe::prewalk`.)
        assert!(first.diff.is_none() && first.seq > 0, "asked without `since`: whole");
        check_first(&first);
        // Asked as the host asks, with the number of the one it holds.
        let sent = cs.observe_since(false, first.seq).unwrap();
        assert_eq!(sent.reobserved, Some(0), "nothing changed: {:?}", sent.fallback);
        let diff = sent.diff.clone().expect("sent as a diff");
        assert!(diff.elements.is_empty() && diff.lines.is_empty(), "{diff:?}");
        assert!(sent.elements.is_empty() && sent.text.is_empty());
        let again = sent.resolve(Some(&first)).unwrap();
        assert_eq!(again.elements, first.elements);
        assert_eq!(again.text, first.text);

        // A change may take a moment (a frame's): awaited.
        tab.eval(&format!("Promise.resolve(window.changes.{change}()).then(() => 0)")).unwrap();
        let sent = cs.observe_since(false, again.seq).unwrap();
        let diff = sent.diff.clone().expect("sent as a diff");
        // What moved nothing changes a record or two (what moves the rest
        // changes their places).
        let sent_records: usize = diff.elements.iter().map(|s| s.insert.len()).sum();
        assert!(!in_place || sent_records <= 2, "{change}: a small diff: {diff:?}");
        let quick = sent.resolve(Some(&again)).unwrap();
        same_as_full(&cs, change, &quick, in_place);
        if shows {
            assert_ne!(quick.text, first.text, "{change}: the change shows");
        } else {
            assert_eq!(quick.text, first.text, "{change}: the change shows nothing");
        }
    }
}

#[test]
fn re_observation_after_a_change_equals_a_full_one() {
    let rig = Rig::start();
    // (change, whether it can be re-read in place, whether it shows): a
    // change that moves, covers or uncovers other elements, scrolls, or sets
    // a value without any event must fall back to a whole-page observation.
    let cases = [
        ("attribute", true, true),
        ("text", true, true),
        ("button_text", true, true),
        ("added", true, true),
        ("removed", true, true),
        ("rerender", true, true),
        ("disabled", true, true),
        ("hidden", true, true),
        ("off_screen", true, true),
        ("typed", true, true),
        ("typed_without_events", false, true),
        ("cover", false, true),
        ("grow", false, true),
        ("scroll", false, true),
        ("scroll_box", false, true),
        ("in_frame", true, true),
        ("in_frame_text", true, true),
        ("in_frame_typed", true, true),
        ("in_frame_without_events", false, true),
        ("frame_rewritten", true, true),
        ("in_flex_row", true, true),
        ("in_large_block", true, true),
        ("empty_in_large_block", true, false),
        ("icon_link", true, false),
        ("icon_link_shows", false, true),
        ("icon_link_breaks", false, true),
        ("ancestor_class", true, true),
        ("ancestor_style", true, true),
        ("fade_end", true, true),
    ];
    check_changes(&rig, "/observe/incremental.html", &cases, |first| {
        // The items of a flex row read as one line, broken by the button.
        let lines: Vec<&str> = first.text.lines().collect();
        assert!(lines.contains(&"Price $5") && lines.contains(&"each"), "{}", first.text);
    });
}

#[test]
fn re_observation_with_a_cross_origin_frame_equals_a_full_one() {
    let rig = Rig::start();
    // (change, whether it can be re-read in place, whether it shows): the
    // page around a cross-origin frame is re-read in place and the frame
    // asked again (what changes in it is not seen from the page); a frame
    // moved, covered or removed falls back to a whole-page observation.
    let cases = [
        ("attribute", true, true),
        ("text", true, true),
        ("below_frame", true, true),
        ("in_frame", true, true),
        ("in_frame_text", true, true),
        ("cover", false, true),
        ("moved", false, false),
        ("frame_shifted", false, false),
        ("frame_removed", false, true),
    ];
    check_changes(&rig, "/observe/incremental-xo.html", &cases, |first| {
        let names = names(first);
        assert!(names.contains("frame-button") && names.contains("Second"), "{}", first.text);
        assert!(first.text.contains("frame text"), "{}", first.text);
    });
    // A frame under a box is not asked; the box gone, it is (kept as a
    // covered element, not forgotten).
    let cases = [("uncover", false, true)];
    check_changes(&rig, "/observe/incremental-xo.html?covered", &cases, |first| {
        assert!(!names(first).contains("frame-button"), "{}", first.text);
    });
}

#[test]
fn re_observation_of_a_covered_page_equals_a_full_one() {
    let rig = Rig::start();
    // (change, whether it can be re-read in place, whether it shows): the
    // elements under a dialog's backdrop stay left out without new hit
    // tests while nothing over them changed; whatever uncovers them (even
    // a change in an `aria-hidden` shade the walk never enters) must fall
    // back to a whole-page observation.
    let cases = [
        ("dialog_text", true, true),
        ("dialog_attribute", true, true),
        ("backdrop_hidden", true, false),
        ("shade_see_through", false, true),
        ("both_removed", false, true),
    ];
    check_changes(&rig, "/observe/incremental-covered.html", &cases, |first| {
        let names = names(first);
        assert!(names.contains("Close") && !names.contains("Under one"), "{}", first.text);
    });
}

#[test]
fn re_observation_under_an_aria_hidden_background_equals_a_full_one() {
    let rig = Rig::start();
    // (change, whether it can be re-read in place, whether it shows): a
    // page whose every usable element is under `aria-hidden` is walked
    // without it; a change that leaves something usable outside, or
    // removes the `aria-hidden`, must fall back to a whole-page observation.
    let cases = [
        ("button_text", true, true),
        ("text", true, true),
        ("typed", true, true),
        ("outside_text", true, true),
        ("usable_outside", false, true),
        ("shown", false, false),
    ];
    check_changes(&rig, "/observe/incremental-hidden.html", &cases, |first| {
        assert!(names(first).contains("Continue"), "{}", first.text);
    });
}

// ---- Issue 18: what a person can see and use ----

/// The numbers of the elements named `name`, in order.
fn indices(o: &Observation, name: &str) -> Vec<u32> {
    o.elements.iter().filter(|e| e.name == name).map(|e| e.index).collect()
}

#[test]
fn elements_with_click_listeners_are_listed_and_nested_controls_are_their_own() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/listeners.html");
    let o = observe(&cs, false);
    let n = names(&o);
    // A board of cells with only `addEventListener('click')`.
    for cell in 1..=9 {
        assert!(n.contains(&format!("c{cell}")), "c{cell}: {}", o.text);
    }
    // Mail rows that open the mail, each with a star and a bin of its own.
    assert!(n.contains("Lunch on Friday") && n.contains("Quarterly report"), "{}", o.text);
    assert_eq!(indices(&o, "☆").len(), 2, "{}", o.text);
    assert_eq!(indices(&o, "Delete").len(), 2, "{}", o.text);
    // An `onclick` property.
    assert!(n.contains("Property handler"), "{}", o.text);
    // A framework root delegating every kind of event is no control; what
    // is in it is listed as usual.
    assert!(n.contains("Inner button"), "{}", o.text);
    assert!(!o.elements.iter().any(|e| e.name.contains("Framework")), "{}", o.text);
    // A list whose listener delegates to its items: the items are listed,
    // not the list.
    assert!(n.contains("First choice") && n.contains("Second choice"), "{}", o.text);
    assert!(!o.elements.iter().any(|e| e.tag == "ul"), "{}", o.text);
    assert!(!n.contains("Listens later"), "{}", o.text);

    let by = |name: &str, i: usize| indices(&o, name)[i];
    for (name, i) in [("c5", 0), ("☆", 1), ("Delete", 0), ("Lunch on Friday", 0)] {
        let r = cs.act(json!({"click": {"index": by(name, i)}})).unwrap();
        assert_eq!(r["kind"], "action_done", "clicking {name}: {r}");
    }
    assert_eq!(tab.eval("document.getElementById('moves').textContent").unwrap(), "moves: c5");
    assert_eq!(
        tab.eval("document.getElementById('mail-log').textContent").unwrap(),
        "mail: star-2 bin-1 open-1"
    );
    // A listener given later to an element already seen: the next
    // observation (a re-observation) lists it.
    tab.eval("document.getElementById('later').addEventListener('click', () => log.push('later'))")
        .unwrap();
    let again = observe(&cs, false);
    assert!(names(&again).contains("Listens later"), "{}", again.text);
    assert!(names(&again).contains("X"), "{}", again.text);
    assert_eq!(names(&observe_full(&cs)), names(&again));
}

#[test]
fn observations_wait_until_the_page_has_settled() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/settle.html");
    tab.wait_for_load(std::time::Duration::from_secs(10)).unwrap();
    // Content that comes 300 ms after `load`.
    let o = observe(&cs, false);
    assert!(names(&o).contains("Late button"), "{}", o.text);
    // A click that reveals fields 300 ms later, fading in.
    let show = o.elements.iter().find(|e| e.name == "Show fields").unwrap().index;
    assert!(!names(&o).contains("Email address"), "{}", o.text);
    let r = cs.act(json!({"click": {"index": show}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let o = observe(&cs, false);
    assert!(names(&o).contains("Email address"), "{}", o.text);
    assert!(!o.text.starts_with("(The page was still changing"), "{}", o.text);
    // A fade longer than the wait: said, then seen once it ended.
    tab.eval("startSlow()").unwrap();
    let o = observe(&cs, false);
    assert!(o.text.starts_with("(The page was still changing"), "{}", o.text);
    tab.wait_for("window.slowDone", std::time::Duration::from_secs(10)).unwrap();
    let o = observe(&cs, false);
    assert!(names(&o).contains("Slow field"), "{}", o.text);
    assert_eq!(names(&observe_full(&cs)), names(&o));
}

/// Icons drawn by CSS `content: url(…)` in boxes with no width until the
/// image comes (MiniWoB's inbox): left out while empty, listed once the
/// image is there though no mutation says so.
#[test]
fn icons_whose_image_comes_late_are_listed_once_it_has_come() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/late-icons.html");
    tab.wait_for_load(std::time::Duration::from_secs(10)).unwrap();
    let three = "document.querySelectorAll('.trash').length === 3";
    tab.wait_for(three, std::time::Duration::from_secs(10)).unwrap();
    let icons = |o: &Observation, name: &str| {
        o.text.lines().filter(|l| l.contains(&format!("icon={name}>"))).count()
    };
    // The image comes while the first observation waits (a request in
    // flight), after the walk it made meanwhile.
    let o = observe(&cs, false);
    assert_eq!(icons(&o, "send"), 3, "{}", o.text);
    // One later than the wait: not shown yet, then shown.
    tab.eval("document.body.classList.add('later')").unwrap();
    let o = observe(&cs, false);
    assert_eq!(icons(&o, "like"), 0, "{}", o.text);
    tab.wait_for(
        "performance.getEntriesByType('resource').some(e => e.name.includes('like.png'))",
        std::time::Duration::from_secs(10),
    )
    .unwrap();
    let o = observe(&cs, false);
    assert_eq!(icons(&o, "like"), 3, "{}", o.text);
    assert_eq!(o.fallback.as_deref(), Some("an element with an empty box got one"));
}

#[test]
fn names_states_whole_values_and_repeated_text() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/names.html");
    let o = observe(&cs, false);
    // An autocomplete named by its row, not by its list or live status.
    let city =
        o.elements.iter().find(|e| e.tag == "input" && e.role.as_deref() == Some("combobox"));
    let city = city.unwrap_or_else(|| panic!("{}", o.text));
    assert_eq!(city.name, "City", "{}", o.text);
    assert!(line_of(&o, "Message body").contains("<editor"), "{}", o.text);
    assert!(line_of(&o, "Toppings").contains("multiple"), "{}", o.text);
    assert!(line_of(&o, "Small").contains("checked"), "{}", o.text);
    assert!(!line_of(&o, "Large").contains("checked"), "{}", o.text);
    let thin = line_of(&o, "Thin crust");
    assert!(thin.contains("<radio") && thin.contains("checked"), "{}", o.text);
    let thick = line_of(&o, "Thick crust");
    assert!(thick.contains("<radio") && !thick.contains("checked"), "{}", o.text);
    assert!(line_of(&o, "Order number").contains("readonly"), "{}", o.text);
    // A long value is shortened in the list, and read whole by `extract`.
    let notes = line_of(&o, "Notes");
    assert!(notes.contains("characters; extract reads it whole"), "{}", o.text);
    let whole = tab.eval("document.getElementById('notes').value").unwrap();
    let whole = whole.as_str().unwrap().to_owned();
    assert!(whole.ends_with("end "));
    let r = cs.act(json!({"extract": {}})).unwrap();
    let summary = r["effect"]["summary"].as_str().unwrap_or_else(|| panic!("{r}"));
    let quoted = serde_json::to_string(&whole).unwrap();
    assert!(summary.contains(&quoted), "{summary}");
    // The author of each post is kept; a line printed twice in one place
    // is said once.
    assert_eq!(o.text.lines().filter(|l| *l == "Nadia").count(), 2, "{}", o.text);
    assert_eq!(o.text.lines().filter(|l| *l == "Sponsored").count(), 1, "{}", o.text);
}

/// What `extension/loader.js` noted in the tab's isolated world: the time
/// of its step `step` (`errand_page::mark`), if any.
fn loader_mark(sw: &Page, tab_id: i64, step: &str) -> Option<f64> {
    sw.eval(&format!(
        "chrome.scripting.executeScript({{ target: {{ tabId: {tab_id} }}, \
           func: (step) => globalThis.__errandLoadTimes?.[step] ?? null, args: [{step:?}] }}) \
           .then(([r]) => r.result)"
    ))
    .ok()?
    .as_f64()
}

/// The page's `loadEventEnd` on the clock of `loader_mark`.
fn load_end(sw: &Page, tab_id: i64) -> Option<f64> {
    sw.eval(&format!(
        "chrome.scripting.executeScript({{ target: {{ tabId: {tab_id} }}, \
           func: () => performance.timing.loadEventEnd - performance.timeOrigin }}) \
           .then(([r]) => r.result)"
    ))
    .ok()?
    .as_f64()
}

/// The service worker, once an evaluation there sees its globals (right
/// after launch it can land in a context without them).
fn service_worker(rig: &Rig) -> Page {
    let mut sw = rig.browser.service_worker().unwrap();
    for _ in 0..40 {
        if sw.eval("!!globalThis.errandBrowserRequests").ok() == Some(json!(true)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(150));
        sw = rig.browser.service_worker().unwrap();
    }
    sw
}

/// Opens `path` as the host opens a task's tab (the service worker's
/// `open_tab`, which makes it a tab a task drives); its tab id.
fn open_as_a_task(rig: &Rig, sw: &Page, path: &str) -> i64 {
    let url = rig.fixtures.url(path);
    let opened = sw
        .eval(&format!("globalThis.errandBrowserRequests.open_tab({{ id: 1, url: {url:?} }})"))
        .unwrap();
    opened["tab_id"].as_i64().expect("a tab id")
}

#[test]
fn a_tab_a_task_drives_is_prepared_while_it_loads_and_walked_again_once_loaded() {
    let rig = Rig::start();
    let sw = service_worker(&rig);
    // Opened as the host opens a task's tab: its content script is told to
    // prepare as soon as it runs, while the picture is still coming.
    let tab_id = open_as_a_task(&rig, &sw, "/observe/prepared-loading.html");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while loader_mark(&sw, tab_id, "prepared").is_none() {
        assert!(std::time::Instant::now() < deadline, "the driven tab was never walked");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let loaded = load_end(&sw, tab_id).expect("the page's load end");
    let told = loader_mark(&sw, tab_id, "prepare").expect("told to prepare");
    let warmed = loader_mark(&sw, tab_id, "warmed").expect("walked while loading");
    let kept = loader_mark(&sw, tab_id, "prepared").unwrap();
    assert!(told < loaded && warmed < loaded, "told {told}, warmed {warmed}, load {loaded}");
    assert!(kept >= loaded, "the kept walk {kept} came before load {loaded}");

    // The observation starts from the walk kept once loaded, not from the
    // one made while the picture was coming: what is under the picture is
    // out of view, as a full walk says.
    let cs = ContentScript::of_tab_id(&rig.browser, tab_id).unwrap();
    let o = observe(&cs, false);
    assert!(o.reobserved.is_some(), "started from the kept walk: {:?}", o.fallback);
    let seen = |o: &Observation| -> BTreeSet<(String, bool)> {
        o.elements.iter().map(|e| (e.name.clone(), e.in_viewport)).collect()
    };
    let full = observe_full(&cs);
    assert_eq!(seen(&o), seen(&full), "{}", o.text);
    assert!(seen(&o).contains(&("Below button".to_owned(), false)), "{}", o.text);
    assert!(seen(&o).contains(&("Added while loading".to_owned(), false)), "{}", o.text);
    assert!(seen(&o).contains(&("Top button".to_owned(), true)), "{}", o.text);

    // A tab the user opens is not told, while it loads either.
    let (_tab, plain) = rig.open("/observe/prepared-loading.html");
    assert_eq!(loader_mark(&sw, plain.tab_id, "prepare"), None);
    assert_eq!(loader_mark(&sw, plain.tab_id, "warmed"), None);
}

/// What `extension/changes.js` noted in the tab's top frame (its isolated
/// world): `[began, last, still watching, now]` (`performance.now()`).
fn changes_note(sw: &Page, tab_id: i64) -> serde_json::Value {
    sw.eval(&format!(
        "chrome.scripting.executeScript({{ target: {{ tabId: {tab_id} }}, \
           func: () => {{ const n = globalThis.__errandChanges; \
                          return n ? [n.began, n.last, n.observer !== null, performance.now()] \
                                   : null; }} }}) \
           .then(([r]) => r.result)"
    ))
    .unwrap()
}

/// The top frame's changes are noted from the document's start, before the
/// crate is there (`extension/changes.js`); the crate's readiness watch
/// takes the note over (`ready::take_note`). A change made just before the
/// crate came is waited for as any other; a page still since its parse is
/// not watched a whole quiet window more from when the crate began
/// watching; a note never taken over stops a second after `load`.
#[test]
fn the_first_look_counts_the_changes_noted_since_the_document_began() {
    let rig = Rig::start();
    let sw = service_worker(&rig);
    let quiet = 60.0; // ready::QUIET_MS

    // Changed in the `load` handler, observed at once: the observation
    // settles a quiet window after that change, and the note is taken over.
    let (_tab, cs) = rig.open("/observe/changed-at-load.html");
    let o = observe(&cs, false);
    assert!(names(&o).contains("Added at load"), "{}", o.text);
    let note = changes_note(&sw, cs.tab_id);
    let (began, last) = (note[0].as_f64().unwrap(), note[1].as_f64().unwrap());
    assert_eq!(note[2], json!(false), "the crate took the note's observer over: {note}");
    let loaded = load_end(&sw, cs.tab_id).unwrap();
    assert!(began < loaded && last >= began, "noted from the start: {note}, load {loaded}");
    let settled = loader_mark(&sw, cs.tab_id, "settled").unwrap();
    assert!(settled >= last + quiet, "settled at {settled}, the last change at {last}");

    // Still since its parse, observed a moment after `load` (well within
    // `ready::FIRST_QUIET_MS`): no quiet window from the crate's watch,
    // which began when the crate was first told of the tab (told to
    // prepare: the first command makes it a tab a task drives; or asked).
    // Counted from there, a watch begun then settles a quiet window later
    // at the soonest, whatever the machine; this one settles once the page
    // is walked and the service worker has answered, which a busy machine
    // can slow too: one of three tabs must show it.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (_tab, cs) = rig.open("/observe/changed-at-load.html?still");
        std::thread::sleep(std::time::Duration::from_millis(150));
        let o = observe(&cs, false);
        assert!(names(&o).contains("Still since parsed"), "{}", o.text);
        let asked = loader_mark(&sw, cs.tab_id, "observe").unwrap();
        let told = loader_mark(&sw, cs.tab_id, "prepare").map_or(asked, |t| t.min(asked));
        let settled = loader_mark(&sw, cs.tab_id, "settled").unwrap();
        seen.push(settled - told);
        if settled - told < quiet {
            break;
        }
    }
    assert!(seen.iter().any(|t| *t < quiet), "told → settled, ms: {seen:?}");

    // A document without the note (the loader injected into a tab opened
    // before the extension was installed) whose page names a form after
    // it: the crate's global then reads as the form, its fields as the
    // note's; they are not taken for one.
    let (tab, cs) = rig.open("/observe/changed-at-load.html?still");
    let isolated = |func: &str| {
        sw.eval(&format!(
            "chrome.scripting.executeScript({{ target: {{ tabId: {} }}, func: {func} }}) \
               .then(([r]) => r.result)",
            cs.tab_id
        ))
        .unwrap()
    };
    isolated("() => { delete globalThis.__errandChanges; }");
    tab.eval(
        "document.body.insertAdjacentHTML('beforeend', '<form id=\"__errandChanges\">\
           <input name=\"observer\"><input name=\"began\"><input name=\"last\"></form>')",
    )
    .unwrap();
    let seen = isolated("() => String(globalThis.__errandChanges?.observer)");
    assert_eq!(seen, json!("[object HTMLInputElement]"));
    let o = observe(&cs, false);
    assert!(names(&o).contains("Still since parsed"), "{}", o.text);

    // Never observed: the note stops watching a second after `load`.
    let (_tab, plain) = rig.open("/observe/changed-at-load.html?still");
    let note = changes_note(&sw, plain.tab_id);
    let since_load = note[3].as_f64().unwrap() - load_end(&sw, plain.tab_id).unwrap();
    // (Unless this machine took that second to get here.)
    assert!(note[2] == json!(true) || since_load >= 990.0, "{note}, {since_load} ms after load");
    std::thread::sleep(std::time::Duration::from_millis(1300));
    assert_eq!(changes_note(&sw, plain.tab_id)[2], json!(false));
}

/// On a page whose CSP refuses WebAssembly, the top frame's loader imports
/// the JS build as soon as it runs, before any command (as it instantiates
/// the WebAssembly build when idle elsewhere); nothing is walked.
#[test]
fn a_csp_page_has_the_js_build_imported_before_any_command() {
    let rig = Rig::start();
    let sw = service_worker(&rig);
    let (_tab, cs) = rig.open("/csp/observe/aria.html");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while loader_mark(&sw, cs.tab_id, "js_ready").is_none() {
        assert!(std::time::Instant::now() < deadline, "the JS build was never imported");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(loader_mark(&sw, cs.tab_id, "wasm_refused").is_some());
    assert_eq!(loader_mark(&sw, cs.tab_id, "command"), None);
    assert_eq!(loader_mark(&sw, cs.tab_id, "prepare"), None);
    assert_eq!(loader_mark(&sw, cs.tab_id, "prepared"), None);
    let o = observe(&cs, false);
    assert_eq!(o.build, Some(Build::Js));
    assert!(!o.elements.is_empty(), "{}", o.text);
}

#[test]
fn a_tab_a_task_drives_is_walked_once_loaded_and_observed_from_that_walk() {
    let rig = Rig::start();
    let sw = service_worker(&rig);
    // Opened as the host opens a task's tab: the service worker then tells
    // its content script to prepare once it has loaded.
    let tab_id = open_as_a_task(&rig, &sw, "/observe/prepared.html");
    let wait = |what: &str, js: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while sw.eval(js).ok() != Some(json!(true)) {
            assert!(std::time::Instant::now() < deadline, "{what} never came");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    let prepared = |sw: &Page| loader_mark(sw, tab_id, "prepared");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while prepared(&sw).is_none() {
        assert!(std::time::Instant::now() < deadline, "the driven tab was never prepared");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The page changes after that walk.
    wait(
        "the late button",
        &format!(
            "chrome.scripting.executeScript({{ target: {{ tabId: {tab_id} }}, world: 'MAIN', \
               func: () => window.changed === true }}).then(([r]) => r.result)"
        ),
    );
    let cs = ContentScript::of_tab_id(&rig.browser, tab_id).unwrap();
    let o = observe(&cs, false);
    assert!(o.reobserved.is_some(), "started from the prepared walk: {:?}", o.fallback);
    assert!(names(&o).contains("Late button"), "{}", o.text);
    assert_eq!(names(&observe_full(&cs)), names(&o));

    // A tab the user opens is never told to prepare.
    let (_tab, plain) = rig.open("/observe/prepared.html");
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(loader_mark(&sw, plain.tab_id, "prepared"), None);
    assert!(loader_mark(&sw, plain.tab_id, "wasm_ready").is_some(), "the loader ran");
    let o = observe(&plain, false);
    assert!(names(&o).contains("Late button"), "{}", o.text);
}

/// A page nested deeper than a browser's HTML parser nests (a script can
/// nest thousands deep): the walk stops at `walk::MAX_DEPTH` (512), the
/// observation says so, and the crate answers, and answers again, in both
/// builds (it overflowed the module's stack at about 700 and was broken
/// for that page). Under the limit everything is listed, with no note.
#[test]
fn a_page_nested_deeper_than_a_parser_nests_is_observed() {
    let rig = Rig::start();
    for (prefix, build) in [("", Build::Wasm), ("/csp", Build::Js)] {
        let (tab, cs) = rig.open(&format!("{prefix}/observe/deep.html?500"));
        let o = observe(&cs, true);
        assert_eq!(o.build, Some(build));
        assert_eq!(names(&o), set(&["Beside the nest", "At the bottom"]), "{}", o.text);
        assert!(!o.text.contains("nested more than"), "{}", o.text);
        // Acted on at the bottom, and a change there re-read.
        let bottom = o.elements.iter().find(|e| e.name == "At the bottom").unwrap().index;
        let r = cs.act(json!({"click": {"index": bottom}})).unwrap();
        assert_eq!(r["kind"], json!("action_done"), "{r}");
        tab.eval(
            "{ const added = document.createElement('button'); added.textContent = 'Added deep'; \
             document.querySelector('#nest').querySelector('button').after(added); }",
        )
        .unwrap();
        let o = observe(&cs, true);
        assert_eq!(
            names(&o),
            set(&["Beside the nest", "At the bottom", "Added deep"]),
            "{}",
            o.text
        );

        let (_tab, cs) = rig.open(&format!("{prefix}/observe/deep.html?2000"));
        let cut = |o: &Observation| {
            assert_eq!(o.build, Some(build));
            assert_eq!(names(o), set(&["Beside the nest"]), "{}", o.text);
            assert!(
                o.text.starts_with("(Part of the page is nested more than 512 elements deep"),
                "{}",
                o.text
            );
        };
        cut(&observe(&cs, false));
        // And again (the crate is whole), then acted on.
        let o = observe(&cs, false);
        cut(&o);
        let beside = o.elements.iter().find(|e| e.name == "Beside the nest").unwrap().index;
        let r = cs.act(json!({"click": {"index": beside}})).unwrap();
        assert_eq!(r["kind"], json!("action_done"), "{r}");
    }
}

/// The listed element whose name is `name` and whose tag or input type is
/// `kind` (`checkbox`, `label`, `button`).
fn element_of<'a>(
    o: &'a Observation,
    kind: &str,
    name: &str,
) -> Option<&'a errand_protocol::ElementInfo> {
    o.elements
        .iter()
        .find(|e| e.name == name && (e.tag == kind || e.input_type.as_deref() == Some(kind)))
}

/// A checkbox at opacity 0 laid over the circle its row draws is the top
/// element where a person clicks: listed (and ticked by a click); one in
/// the flow (a blank) and one under an opaque box are not (issue 38).
#[test]
fn a_transparent_control_on_top_where_a_person_clicks_is_listed() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/transparent.html");
    let o = observe(&cs, false);
    let tick = o
        .elements
        .iter()
        .find(|e| e.input_type.as_deref() == Some("checkbox"))
        .unwrap_or_else(|| panic!("the transparent checkbox is not listed:\n{}", o.text));
    assert!(tick.name.contains("Water the plants"), "named by its row: {tick:?}\n{}", o.text);
    let n = names(&o);
    assert!(!n.contains("blank-button"), "{}", o.text);
    assert!(!n.contains("under-button"), "{}", o.text);
    let r = cs.act(json!({"click": {"index": tick.index}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    assert_eq!(tab.eval("document.getElementById('log').textContent").unwrap(), "ticked: yes");
}

/// A label with a listener of its own and no control is listed (and a
/// double click reaches it); one for a listed field is that field's name.
#[test]
fn a_label_with_listeners_of_its_own_is_listed() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/acting-label.html");
    let o = observe(&cs, false);
    let todo = element_of(&o, "label", "Call the plumber")
        .unwrap_or_else(|| panic!("the acting label is not listed:\n{}", o.text));
    assert!(element_of(&o, "label", "E-mail").is_none(), "{}", o.text);
    assert!(o.elements.iter().any(|e| e.tag == "input" && e.name == "E-mail"), "{}", o.text);
    let r = cs.act(json!({"dblclick": {"index": todo.index}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    assert_eq!(tab.eval("document.getElementById('log').textContent").unwrap(), "renamed: yes");
}

/// A button drawn only by CSS `content` is named by the symbol (from the
/// symbol table) or by a class word that says what it does.
#[test]
fn a_control_drawn_by_a_css_symbol_is_named_by_it() {
    let rig = Rig::start();
    let (_tab, cs) = rig.open("/observe/symbols.html");
    let o = observe(&cs, false);
    assert!(line_of(&o, "close").contains("icon=close"), "{}", o.text);
    assert!(line_of(&o, "destroy").contains("icon=destroy"), "{}", o.text);
    assert!(line_of(&o, "settings").contains("icon=settings"), "{}", o.text);
}

/// Pointing at a web component's row applies the `:hover` rules of its
/// shadow root's own `<style>`: its ✕ shows, named by its symbol, and
/// works.
#[test]
fn hover_applies_the_hover_rules_of_a_shadow_roots_own_sheets() {
    let rig = Rig::start();
    let (tab, cs) = rig.open("/observe/shadow-hover.html");
    let o = observe(&cs, false);
    assert!(!names(&o).contains("close"), "shown before the pointer is there: {}", o.text);
    let title = o.elements.iter().find(|e| e.name == "Feed the cat").expect("the row's title");
    let r = cs.act(json!({"hover": {"index": title.index}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    let o = observe(&cs, false);
    let close = o
        .elements
        .iter()
        .find(|e| e.name == "close")
        .unwrap_or_else(|| panic!("the ✕ does not show under the pointer:\n{}", o.text));
    let r = cs.act(json!({"click": {"index": close.index}})).unwrap();
    assert_eq!(r["kind"], "action_done", "{r}");
    assert_eq!(tab.eval("document.getElementById('log').textContent").unwrap(), "removed: yes");
}

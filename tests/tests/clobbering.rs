//! DOM clobbering: pages whose named fields and elements shadow the
//! properties of their forms and documents (`<input name="action">` makes
//! `form.action` that input). Errand reads the DOM through the prototypes
//! (`extension/src/proto.rs`) and bounds every walk and command
//! (`extension/src/deadline.rs`): such a page is observed and acted on like
//! any other, and can never freeze the tab.
//!
//! - `clobbered.html`: every property the crate reads is shadowed on a
//!   form and on the document, and a script adds a field for every other
//!   property of the form, element, node and document prototypes.
//! - Random pages (`random_clobbering_pages_always_answer`): forms, fields
//!   and named document elements with names drawn from those properties,
//!   nested at random; each page must be observed, and acted on, in
//!   bounded time. `ERRAND_CLOBBER_SECONDS` (default 8) is how long the
//!   test generates pages; `scripts/fuzz.sh` runs it longer.

use std::time::{Duration, Instant};

use errand_e2e::browser::{LaunchOptions, TestBrowser};
use errand_e2e::cdp::Page;
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_protocol::{Build, Observation};
use serde_json::{Value, json};

fn launch() -> TestBrowser {
    TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))
        .unwrap_or_else(|e| panic!("launching the browser: {e:#}"))
}

fn index_of(o: &Observation, name: &str) -> u32 {
    o.elements
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no element named {name:?} in\n{}", o.text))
        .index
}

/// Evaluates `js` in the page; the page shadows `document.*`, so the
/// snippets read through the prototypes too.
fn page_eval(tab: &Page, js: &str) -> Value {
    tab.eval(js).unwrap_or_else(|e| panic!("{e:#}"))
}

const BY_ID: &str = "((id) => Document.prototype.getElementById.call(document, id))";

fn acted(reply: &Value) {
    assert_eq!(reply["kind"], "action_done", "{reply}");
}

fn observe_and_act_on_the_clobbered_page(prefix: &str, build: Build) {
    let fixtures = FixtureServer::start().expect("starting the fixture server");
    let browser = launch();
    let tab = browser
        .new_page(&fixtures.url(&format!("{prefix}/observe/clobbered.html")))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));

    // The page's script shadowed every property of the prototypes.
    let fields = page_eval(
        &tab,
        &format!(
            "Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, 'length').get.call({BY_ID}('everything'))"
        ),
    );
    assert!(fields.as_u64().is_some_and(|n| n > 300), "the page's script did not run: {fields}");
    let started = Instant::now();
    let o = cs.observe(true).unwrap_or_else(|e| panic!("observing: {e:#}"));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(o.build, Some(build));
    assert_eq!(o.title, "Clobbered shop login");
    for name in ["E-mail", "Password", "Remember me", "Country", "Sign in", "Note", "Send note"] {
        index_of(&o, name);
    }
    // Where the forms are sent: their `action` attribute resolved, not the
    // field named `action`.
    let landing = fixtures.url("/observe/landing.html");
    let target =
        |name: &str| o.elements.iter().find(|e| e.name == name).and_then(|e| e.target.clone());
    assert_eq!(target("Sign in").as_deref(), Some(landing.as_str()), "{:#?}", o.elements);
    assert_eq!(target("Send note").as_deref(), Some(landing.as_str()));
    assert_eq!(target("E-mail").as_deref(), Some(landing.as_str()), "Enter sends the form");
    assert_eq!(target("Help"), Some(format!("{landing}#help")));

    // Every action on the clobbered form.
    acted(
        &cs.act(json!({"fill": {"index": index_of(&o, "E-mail"), "text": "ada@example.com"}}))
            .unwrap(),
    );
    acted(&cs.act(json!({"check": {"index": index_of(&o, "Remember me")}})).unwrap());
    acted(
        &cs.act(json!({"select_option": {"index": index_of(&o, "Country"), "options": ["Spain"]}}))
            .unwrap(),
    );
    acted(&cs.act(json!({"type": {"index": index_of(&o, "Note"), "text": "hello"}})).unwrap());
    acted(&cs.act(json!({"hover": {"index": index_of(&o, "Help")}})).unwrap());
    let value = |id: &str, prop: &str, class: &str| {
        page_eval(
            &tab,
            &format!(
                "Object.getOwnPropertyDescriptor({class}.prototype, '{prop}').get.call({BY_ID}('{id}'))"
            ),
        )
    };
    assert_eq!(value("email", "value", "HTMLInputElement"), json!("ada@example.com"));
    assert_eq!(value("country", "value", "HTMLSelectElement"), json!("Spain"));
    assert_eq!(value("note", "value", "HTMLTextAreaElement"), json!("hello"));
    // Observed again (re-read in place or whole), after the changes.
    let again = cs.observe(false).unwrap_or_else(|e| panic!("observing again: {e:#}"));
    index_of(&again, "Sign in");

    // Enter in the password field sends the form (`requestSubmit`, which a
    // field named `requestSubmit` shadows) to its real address.
    acted(&cs.act(json!({"fill": {"index": index_of(&o, "Password"), "text": "pw"}})).unwrap());
    // The reply may lose the race with the page going (then the next page's
    // content script answers): the address says whether the form was sent.
    let _ = cs.act(json!({"press": {"key": "Enter", "index": index_of(&o, "Password")}}));
    tab.wait_for("location.pathname === '/observe/landing.html'", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("the form was not sent: {e:#}"));
    let query = page_eval(&tab, "location.search");
    assert!(query.as_str().is_some_and(|q| q.contains("value=ada%40example.com")), "{query}");
}

#[test]
fn a_page_that_shadows_every_property_is_observed_and_acted_on() {
    observe_and_act_on_the_clobbered_page("", Build::Wasm);
}

#[test]
fn a_page_that_shadows_every_property_is_observed_and_acted_on_by_the_js_build() {
    observe_and_act_on_the_clobbered_page("/csp", Build::Js);
}

// ---- Random clobbering pages ------------------------------------------------

/// xorshift64*: a page per seed, reproducible from the seed alone.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Names a field or a document's named element can take: the properties
/// Errand reads, and others of the same prototypes.
const NAMES: &[&str] = &[
    "action",
    "method",
    "target",
    "id",
    "name",
    "submit",
    "elements",
    "length",
    "attributes",
    "nodeName",
    "nodeType",
    "nodeValue",
    "localName",
    "tagName",
    "parentNode",
    "parentElement",
    "children",
    "childNodes",
    "firstChild",
    "lastChild",
    "nextSibling",
    "previousSibling",
    "firstElementChild",
    "nextElementSibling",
    "ownerDocument",
    "isConnected",
    "shadowRoot",
    "style",
    "getAttribute",
    "hasAttribute",
    "setAttribute",
    "removeAttribute",
    "getBoundingClientRect",
    "getRootNode",
    "contains",
    "closest",
    "matches",
    "querySelector",
    "querySelectorAll",
    "textContent",
    "innerText",
    "scrollTop",
    "scrollLeft",
    "scrollHeight",
    "scrollWidth",
    "clientHeight",
    "clientWidth",
    "isContentEditable",
    "draggable",
    "checkVisibility",
    "addEventListener",
    "removeEventListener",
    "dispatchEvent",
    "click",
    "focus",
    "blur",
    "requestSubmit",
    "reset",
    "labels",
    "form",
    "value",
    "options",
    "body",
    "documentElement",
    "activeElement",
    "defaultView",
    "title",
    "URL",
    "getElementById",
    "elementFromPoint",
    "createElement",
    "getSelection",
    "execCommand",
    "namespaceURI",
    "className",
    "classList",
    "hidden",
    "dataset",
    "constructor",
    "toString",
    "valueOf",
    "__proto__",
    "0",
    "1",
];

const TEXTS: &[&str] = &["Sign in", "Next", "Search", "Subscribe", "Help", "Cart", "More"];

/// One random page: forms with named fields, named document elements,
/// nested blocks, links and buttons.
fn random_page(seed: u64) -> String {
    let mut r = Rng::new(seed);
    let mut html = String::from("<!doctype html><html><head><meta charset=utf-8>");
    html.push_str(&format!("<title>clobbering {seed}</title></head><body>"));
    for _ in 0..r.below(6) {
        let name = r.pick(NAMES);
        let tag = r.pick(&["img", "form", "embed", "object", "iframe"]);
        match tag {
            "img" => html.push_str(&format!("<img name=\"{name}\" alt=\"\" width=1 height=1>")),
            "iframe" => html.push_str(&format!(
                "<iframe name=\"{name}\" srcdoc=\"<button>in frame</button>\"></iframe>"
            )),
            other => html
                .push_str(&format!("<{other} name=\"{name}\" id=\"{}\"></{other}>", r.pick(NAMES))),
        }
    }
    block(&mut r, &mut html, 0);
    html.push_str("</body></html>");
    html
}

fn block(r: &mut Rng, html: &mut String, depth: usize) {
    for _ in 0..1 + r.below(4) {
        match r.below(if depth > 4 { 4 } else { 7 }) {
            0 => form(r, html, depth),
            1 => html.push_str(&format!(
                "<a href=\"#{}\" name=\"{}\">{}</a>",
                r.pick(NAMES),
                r.pick(NAMES),
                r.pick(TEXTS)
            )),
            2 => html.push_str(&format!(
                "<button id=\"{}\">{}</button>",
                r.pick(NAMES),
                r.pick(TEXTS)
            )),
            3 => html.push_str(&format!("<p>{} {}</p>", r.pick(TEXTS), r.pick(NAMES))),
            _ => {
                let tag = r.pick(&["div", "section", "fieldset", "ul", "label", "span"]);
                let attr = if r.chance(50) { "name" } else { "id" };
                html.push_str(&format!("<{tag} {attr}=\"{}\">", r.pick(NAMES)));
                block(r, html, depth + 1);
                html.push_str(&format!("</{tag}>"));
            }
        }
    }
}

fn form(r: &mut Rng, html: &mut String, depth: usize) {
    let action =
        if r.chance(70) { format!(" action=\"/{}\"", r.pick(NAMES)) } else { String::new() };
    let name = if r.chance(40) { format!(" name=\"{}\"", r.pick(NAMES)) } else { String::new() };
    html.push_str(&format!("<form{action}{name} method=\"{}\">", r.pick(&["get", "post"])));
    for _ in 0..1 + r.below(8) {
        let name = r.pick(NAMES);
        match r.below(7) {
            0 => html.push_str(&format!("<input type=hidden name=\"{name}\" value=x>")),
            1 => {
                html.push_str(&format!("<label>{} <input name=\"{name}\"></label>", r.pick(TEXTS)))
            }
            2 => html.push_str(&format!(
                "<input type=checkbox name=\"{name}\" id=\"{}\">",
                r.pick(NAMES)
            )),
            3 => html.push_str(&format!(
                "<select name=\"{name}\"><option>a</option><option>b</option></select>"
            )),
            4 => html.push_str(&format!("<textarea name=\"{name}\"></textarea>")),
            5 => html.push_str(&format!(
                "<button name=\"{name}\" type=\"{}\">{}</button>",
                r.pick(&["submit", "button"]),
                r.pick(TEXTS)
            )),
            _ if depth < 4 => {
                html.push_str(&format!("<fieldset name=\"{name}\">"));
                block(r, html, depth + 1);
                html.push_str("</fieldset>");
            }
            _ => html.push_str(&format!("<output name=\"{name}\">0</output>")),
        }
    }
    html.push_str("</form>");
}

/// How long one command may take on these small pages.
const BOUND: Duration = Duration::from_secs(10);

#[test]
fn random_clobbering_pages_always_answer() {
    let seconds: u64 =
        std::env::var("ERRAND_CLOBBER_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let dir = tempfile::tempdir().unwrap();
    let fixtures = FixtureServer::start_in(dir.path().to_owned()).unwrap();
    let browser = launch();
    let tab = browser.new_page("about:blank").unwrap_or_else(|e| panic!("{e:#}"));
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
    let started = Instant::now();
    let mut pages = 0u64;
    while pages < 4 || started.elapsed() < Duration::from_secs(seconds) {
        let seed = pages;
        pages += 1;
        std::fs::write(dir.path().join(format!("p{seed}.html")), random_page(seed)).unwrap();
        // Every third page under a strict CSP: the JS build.
        let csp = if seed % 3 == 2 { "/csp" } else { "" };
        let url = fixtures.url(&format!("{csp}/p{seed}.html"));
        tab.call("Page.navigate", json!({"url": url})).unwrap();
        tab.wait_for(
            &format!(
                "location.href === {url:?} && Object.getOwnPropertyDescriptor(Document.prototype, 'readyState').get.call(document) === 'complete'"
            ),
            Duration::from_secs(10),
        )
        .unwrap_or_else(|e| panic!("page {seed} did not load: {e:#}"));
        let asked = Instant::now();
        let o = cs.observe(seed % 2 == 0).unwrap_or_else(|e| {
            panic!("page {seed} ({url}) was not observed: {e:#}\n{}", random_page(seed))
        });
        assert!(asked.elapsed() < BOUND, "page {seed}: observed in {:?}", asked.elapsed());
        assert_eq!(o.title, format!("clobbering {seed}"), "page {seed}");
        // Act on one listed element (any answer will do, in bounded time),
        // then observe again.
        if let Some(e) = o.elements.get((seed as usize) % o.elements.len().max(1)) {
            let action = match e.tag.as_str() {
                "input" | "textarea" => json!({"fill": {"index": e.index, "text": "x"}}),
                "select" => json!({"select_option": {"index": e.index, "options": ["b"]}}),
                _ => json!({"hover": {"index": e.index}}),
            };
            let asked = Instant::now();
            let reply =
                cs.act(action.clone()).unwrap_or_else(|e| panic!("page {seed}: {action}: {e:#}"));
            assert!(asked.elapsed() < BOUND, "page {seed}: {action} took {:?}", asked.elapsed());
            assert!(matches!(reply["kind"].as_str(), Some("action_done" | "error")), "{reply}");
            let asked = Instant::now();
            cs.observe(false).unwrap_or_else(|e| panic!("page {seed}, observed again: {e:#}"));
            assert!(
                asked.elapsed() < BOUND,
                "page {seed}: observed again in {:?}",
                asked.elapsed()
            );
        }
    }
    eprintln!("{pages} random clobbering pages observed and acted on in {:?}", started.elapsed());
}

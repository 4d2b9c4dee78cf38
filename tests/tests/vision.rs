//! Vision in real headless Chromium: the marked screenshot reaches the
//! model (OpenAI-compatible `image_url` parts) scaled to at most 1280 px,
//! with the marks drawn and every secret field covered by an opaque box;
//! the step event the side panel receives carries the same screenshot.
//!
//! The blanking itself is checked on pages made to defeat it
//! (`tests/fixtures/vision/`): secret fields rotated, unstyled, on top of
//! everything, in a shadow root, in an iframe, in a scrolled box, in a modal
//! `<dialog>` under a transformed root element — and that the overlay
//! changes nothing the page can notice and leaves with the marks.
//!
//! `ERRAND_E2E_SAVE_SHOTS=<dir>` saves the screenshots checked there.
//!
//! Needs Chromium, the built extension (`scripts/build-extension.sh`) and
//! the built host (`cargo build -p errand-host`).

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use errand_e2e::browser::{LaunchOptions, TestBrowser};
use errand_e2e::cdp::Page;
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::model::{Reply, find_element};
use errand_e2e::rig::Rig;
use errand_e2e::side_panel;
use image::RgbImage;
use serde_json::{Value, json};

/// The blank's colour (`marks::BLANK_COLOUR`, #707070).
const BLANK: [u8; 3] = [0x70, 0x70, 0x70];
/// The marks' colours (`marks::COLOURS`).
const MARK_COLOURS: &[[u8; 3]] = &[
    [0xe6, 0x19, 0x4b],
    [0x3c, 0xb4, 0x4b],
    [0x43, 0x63, 0xd8],
    [0xf5, 0x82, 0x31],
    [0x91, 0x1e, 0xb4],
    [0x00, 0x80, 0x80],
    [0x9a, 0x63, 0x24],
    [0x80, 0x00, 0x00],
    [0xf0, 0x32, 0xe6],
    [0x46, 0x99, 0x90],
];

// ---- Images ----

/// Decodes a `data:image/jpeg;base64,…` URL.
fn decode_data_url(url: &str) -> Result<RgbImage> {
    let data = url
        .strip_prefix("data:image/jpeg;base64,")
        .with_context(|| format!("not a JPEG data URL: {}", &url[..url.len().min(40)]))?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data)?;
    Ok(image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg)?.to_rgb8())
}

/// The tab as the compositor shows it (top layer included), JPEG at full
/// quality.
fn screenshot(tab: &Page) -> Result<RgbImage> {
    // Two frames: the overlay drawn (or moved) has been painted.
    tab.eval(
        "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))",
    )?;
    if let Ok(dir) = std::env::var("ERRAND_E2E_SAVE_SHOTS") {
        // For a person to look at: PNG, numbered.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let png = tab.call("Page.captureScreenshot", json!({"format": "png"}))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png["data"].as_str().unwrap_or_default())?;
        std::fs::write(format!("{dir}/vision-page-{n}.png"), bytes)?;
    }
    let shot = tab.call("Page.captureScreenshot", json!({"format": "jpeg", "quality": 100}))?;
    let data = shot["data"].as_str().context("no screenshot data")?;
    decode_data_url(&format!("data:image/jpeg;base64,{data}"))
}

/// A rectangle in CSS pixels of the top viewport.
#[derive(Debug, Clone, Copy)]
struct Area {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

/// The top-viewport rectangle of the element `js` evaluates to (it may be
/// in a shadow root, or in an iframe: `frame` is then the iframe's selector).
fn area(tab: &Page, js: &str, frame: Option<&str>) -> Result<Area> {
    let offset = match frame {
        Some(f) => format!(
            "(() => {{ const f = document.querySelector({f:?}); const r = f.getBoundingClientRect();
               return [r.x + f.clientLeft, r.y + f.clientTop]; }})()"
        ),
        None => "[0, 0]".into(),
    };
    let v = tab.eval(&format!(
        "(() => {{ const el = {js}; const r = el.getBoundingClientRect(); const o = {offset};
           return [r.x + o[0], r.y + o[1], r.width, r.height]; }})()"
    ))?;
    let n = |i: usize| v[i].as_f64().with_context(|| format!("no rectangle for {js}: {v}"));
    Ok(Area { x: n(0)?, y: n(1)?, w: n(2)?, h: n(3)? })
}

/// What a region of an image holds.
#[derive(Debug)]
struct Region {
    mean: [f64; 3],
    /// The largest distance of a pixel from the mean, per channel.
    spread: u8,
}

/// The inside of `a` in an image whose scale is `scale` image pixels per CSS
/// pixel: 6 px in from each edge (the mark's border), and from 40 px in
/// from the left (the mark's number sits at the top-left corner).
fn inside(img: &RgbImage, a: Area, scale: f64) -> Result<Region> {
    let x0 = ((a.x + 40.0) * scale).ceil().max(0.0) as u32;
    let x1 = ((a.x + a.w - 6.0) * scale).floor().min(f64::from(img.width())) as u32;
    let y0 = ((a.y + 6.0) * scale).ceil().max(0.0) as u32;
    let y1 = ((a.y + a.h - 6.0) * scale).floor().min(f64::from(img.height())) as u32;
    ensure!(x1 > x0 + 4 && y1 > y0 + 4, "the region {a:?} is too small or off the image");
    let mut sum = [0f64; 3];
    let mut n = 0usize;
    for y in y0..y1 {
        for x in x0..x1 {
            let p = img.get_pixel(x, y).0;
            for c in 0..3 {
                sum[c] += f64::from(p[c]);
            }
            n += 1;
        }
    }
    let mean = sum.map(|s| s / n as f64);
    let mut spread = 0u8;
    for y in y0..y1 {
        for x in x0..x1 {
            let p = img.get_pixel(x, y).0;
            for c in 0..3 {
                spread = spread.max((f64::from(p[c]) - mean[c]).abs().round() as u8);
            }
        }
    }
    Ok(Region { mean, spread })
}

impl Region {
    /// One colour throughout, the blank's (give or take the JPEG's
    /// ringing near the marks' borders: text makes a spread of 60 and more).
    fn is_blank(&self) -> bool {
        self.spread <= 20 && (0..3).all(|c| (self.mean[c] - f64::from(BLANK[c])).abs() <= 10.0)
    }
}

/// Checks that the element's region is blanked.
fn assert_blank(img: &RgbImage, tab: &Page, name: &str, js: &str, frame: Option<&str>, scale: f64) {
    let a = area(tab, js, frame).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let r = inside(img, a, scale).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert!(r.is_blank(), "{name} at {a:?} is not blanked: {r:?}");
}

/// Checks that the element's region shows its content (not one colour).
fn assert_shown(img: &RgbImage, tab: &Page, name: &str, js: &str, scale: f64) {
    let a = area(tab, js, None).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let r = inside(img, a, scale).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert!(r.spread > 60 && !r.is_blank(), "{name} at {a:?} should show its text: {r:?}");
}

/// How many pixels of `img` (inside `within`, when given) have a mark's colour.
fn mark_pixels(img: &RgbImage, within: Option<(Area, f64)>) -> usize {
    let close = |p: [u8; 3], c: [u8; 3]| (0..3).all(|i| p[i].abs_diff(c[i]) <= 40);
    img.enumerate_pixels()
        .filter(|(x, y, _)| match within {
            Some((a, s)) => {
                let (x, y) = (f64::from(*x) / s, f64::from(*y) / s);
                x >= a.x && x < a.x + a.w && y >= a.y && y < a.y + a.h
            }
            None => true,
        })
        .filter(|(_, _, p)| MARK_COLOURS.iter().any(|c| close(p.0, *c)))
        .count()
}

/// Image pixels per CSS pixel of the tab.
fn scale_of(img: &RgbImage, tab: &Page) -> Result<f64> {
    let w = tab.eval("window.innerWidth")?.as_f64().context("innerWidth")?;
    Ok(f64::from(img.width()) / w)
}

// ---- Blanking, through the content script ----

fn browser_without_model() -> (TestBrowser, FixtureServer) {
    let fixtures = FixtureServer::start().expect("starting the fixture server");
    let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))
        .unwrap_or_else(|e| panic!("launching the browser: {e:#}"));
    (browser, fixtures)
}

#[test]
fn secret_fields_are_blanked_however_they_are_styled_and_the_page_notices_nothing() {
    let (browser, fixtures) = browser_without_model();
    let tab = browser.new_page(&fixtures.url("/vision/odd.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
    // The page's state before: a field focused, its own popover open,
    // nothing noticed yet.
    tab.eval(
        "document.querySelector('#note').focus(); document.querySelector('#pop').showPopover();
         for (const k in window.noticed) window.noticed[k] = 0; true",
    )
    .unwrap();
    // Without marks nothing is covered: the check below can tell.
    cs.observe(false).unwrap();
    let before = screenshot(&tab).unwrap();
    let scale = scale_of(&before, &tab).unwrap();
    assert_shown(
        &before,
        &tab,
        "the password before the marks",
        "document.querySelector('#plain')",
        scale,
    );
    let page_own = mark_pixels(&before, None);
    assert!(page_own < 20, "the page itself shows {page_own} pixels of the marks' colours");

    let o = cs.observe(true).unwrap();
    assert!(o.elements.iter().any(|e| e.name == "Plain password"), "{:#?}", o.elements);
    let img = screenshot(&tab).unwrap();
    assert!(mark_pixels(&img, None) > page_own + 200, "the marks are not in the screenshot");
    let q = |id: &str| format!("document.querySelector('#{id}')");
    for (name, id) in [
        ("a password", "plain"),
        ("a rotated, scaled password", "rotated"),
        ("an unstyled, letter-spaced password (type=PassWord)", "ghost"),
        ("a one-time code", "otp"),
        ("a shown new password (type=text)", "shown"),
        ("a card expiry (autocomplete=\"billing CC-EXP\")", "expiry"),
        ("a password with z-index 2147483647", "sticky"),
        ("a password in a scrolling box", "scrolled"),
    ] {
        assert_blank(&img, &tab, name, &q(id), None, scale);
    }
    // The security code field is narrow: its inside right of the number.
    assert_blank(&img, &tab, "a card security code", &q("csc"), None, scale);
    assert_blank(
        &img,
        &tab,
        "a password in an open shadow root",
        "document.querySelector('#shadow-host').shadowRoot.querySelector('#shadowed')",
        None,
        scale,
    );
    assert_blank(
        &img,
        &tab,
        "a password in a same-origin iframe",
        "document.querySelector('#frame').contentDocument.querySelector('#inner')",
        Some("#frame"),
        scale,
    );
    assert_shown(&img, &tab, "an ordinary field", &q("note"), scale);
    // An invisible secret field gets no box (the page shows white there).
    let hidden = inside(&img, area(&tab, &q("hidden"), None).unwrap(), scale).unwrap();
    assert!(hidden.mean.iter().all(|c| *c > 230.0), "a box over an invisible field: {hidden:?}");

    // Nothing the page could notice: no events, no change in its body, the
    // focus and its own popover as they were, clicks reach the fields.
    let noticed = tab.eval("window.noticed").unwrap();
    assert_eq!(
        noticed,
        json!({"toggle": 0, "beforetoggle": 0, "focusin": 0, "focusout": 0, "bodyMutations": 0})
    );
    assert_eq!(tab.eval("document.activeElement.id").unwrap(), json!("note"));
    assert_eq!(
        tab.eval("document.querySelector('#pop').matches(':popover-open')").unwrap(),
        json!(true)
    );
    let plain = area(&tab, &q("plain"), None).unwrap();
    let (cx, cy) = (plain.x + plain.w * 0.7, plain.y + plain.h / 2.0);
    assert_eq!(
        tab.eval(&format!("document.elementFromPoint({cx}, {cy})?.id")).unwrap(),
        json!("plain"),
        "the overlay takes hits"
    );
    for kind in ["mousePressed", "mouseReleased"] {
        tab.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": cx, "y": cy, "button": "left", "clickCount": 1}),
        )
        .unwrap();
    }
    assert_eq!(tab.eval("document.activeElement.id").unwrap(), json!("plain"));
    tab.call("Input.insertText", json!({"text": "!"})).unwrap();
    assert_eq!(tab.eval(&format!("{}.value", q("plain"))).unwrap(), json!("hunter2-hunter2!"));

    // The follower moves the blank with its field.
    let was = area(&tab, &q("scrolled"), None).unwrap();
    tab.eval("document.querySelector('#scroller').scrollTop = 60; true").unwrap();
    let moved = area(&tab, &q("scrolled"), None).unwrap();
    assert!((was.y - moved.y - 60.0).abs() < 1.0, "{was:?} → {moved:?}");
    let img = screenshot(&tab).unwrap();
    assert_blank(&img, &tab, "the scrolled password after scrolling", &q("scrolled"), None, scale);

    // Gone with the marks.
    let reply = cs.command(json!({"op": "cleanup"})).unwrap();
    assert_eq!(reply["kind"], "ack", "{reply}");
    let img = screenshot(&tab).unwrap();
    assert_shown(&img, &tab, "the password after cleanup", &q("plain"), scale);
    assert!(mark_pixels(&img, None) <= page_own + 10, "marks left after cleanup");
    assert_eq!(tab.eval("document.documentElement.children.length").unwrap(), json!(2));
}

#[test]
fn a_password_in_a_modal_dialog_under_a_transformed_root_is_blanked_and_marked() {
    let (browser, fixtures) = browser_without_model();
    let tab = browser.new_page(&fixtures.url("/vision/dialog.html")).unwrap();
    tab.wait_for("document.readyState === 'complete' && scrollY === 600", Duration::from_secs(10))
        .unwrap();
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
    let o = cs.observe(true).unwrap();
    assert!(
        o.elements.iter().any(|e| e.input_type.as_deref() == Some("password")),
        "{:#?}",
        o.elements
    );
    let img = screenshot(&tab).unwrap();
    let scale = scale_of(&img, &tab).unwrap();
    let q = "document.querySelector('#password')";
    assert_blank(&img, &tab, "a password in a modal dialog", q, None, scale);
    // The marks show over the dialog (the top layer) too.
    let dialog = area(&tab, "document.querySelector('#login')", None).unwrap();
    assert!(mark_pixels(&img, Some((dialog, scale))) > 50, "no marks over the modal dialog");
    // The dialog is still modal and open.
    assert_eq!(
        tab.eval("document.querySelector('#login').matches(':modal')").unwrap(),
        json!(true)
    );
}

#[test]
fn whatever_shows_a_filled_secret_is_blanked_not_only_secret_fields() {
    let (browser, fixtures) = browser_without_model();
    let tab = browser.new_page(&fixtures.url("/vision/echo.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
    let q = |id: &str| format!("document.querySelector('#{id}')");
    let o = cs.observe(true).unwrap();
    let member = o.elements.iter().find(|e| e.name == "Member number").expect("the field").index;
    // Filled without the secret's values: nothing is blanked (the check
    // below can tell).
    let fill = json!({"fill": {"index": member, "text": "ann-0000"}});
    let done = cs.command(json!({"op": "act", "action": fill})).unwrap();
    assert_eq!(done["kind"], "action_done", "{done}");
    cs.observe(true).unwrap();
    let img = screenshot(&tab).unwrap();
    let scale = scale_of(&img, &tab).unwrap();
    assert_shown(&img, &tab, "the echo of a plain value", &q("echo"), scale);
    assert_shown(&img, &tab, "a field with a plain value", &q("member"), scale);
    // The host's fill of a secret allowed in any field carries its value.
    let secret = "ann o'brien&\"7";
    let fill = json!({"fill": {"index": member, "text": secret}});
    let done = cs.command(json!({"op": "act", "action": fill, "secrets": [secret]})).unwrap();
    assert_eq!(done["kind"], "action_done", "{done}");
    cs.observe(true).unwrap();
    let img = screenshot(&tab).unwrap();
    for (name, id) in [
        ("the filled field", "member"),
        ("a copy of the value in another field", "copy"),
        ("the page's echo of the value", "echo"),
        ("a select showing it as its option", "shown"),
    ] {
        assert_blank(&img, &tab, name, &q(id), None, scale);
    }
    assert_shown(&img, &tab, "an ordinary field", &q("other"), scale);
}

#[test]
fn the_javascript_build_blanks_too() {
    let (browser, fixtures) = browser_without_model();
    // Under `script-src 'self'` the content script runs its JS build.
    let tab = browser.new_page(&fixtures.url("/csp/vision/login.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
    let o = cs.observe(true).unwrap();
    assert_eq!(o.build, Some(errand_protocol::Build::Js));
    let img = screenshot(&tab).unwrap();
    let scale = scale_of(&img, &tab).unwrap();
    assert!(mark_pixels(&img, None) > 200, "the marks are not in the screenshot");
    let q = |id: &str| format!("document.querySelector('#{id}')");
    assert_blank(&img, &tab, "the password", &q("password"), None, scale);
    assert_blank(&img, &tab, "the card number", &q("card"), None, scale);
    assert_shown(&img, &tab, "the note", &q("note"), scale);
}

#[test]
fn a_password_in_a_cross_origin_frame_is_blanked_by_the_frame_itself() {
    let (browser, fixtures) = browser_without_model();
    // The frame comes from the other name of the server (localhost): its
    // own content script draws its marks and blanks.
    let tab = browser.new_page(&fixtures.url("/observe/xo.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let cs = ContentScript::of(&browser, &tab).unwrap_or_else(|e| panic!("{e:#}"));
    let o = cs.observe(false).unwrap();
    let pw = o
        .elements
        .iter()
        .find(|e| e.name == "xo-password")
        .unwrap_or_else(|| panic!("the frame's password is not listed: {:#?}", o.elements));
    // Where Errand placed it in the top viewport (the frame's offset added).
    let at = Area { x: pw.rect.x, y: pw.rect.y, w: pw.rect.width, h: pw.rect.height };
    let frame = area(&tab, "document.querySelector('#xo')", None).unwrap();
    let before = screenshot(&tab).unwrap();
    let scale = scale_of(&before, &tab).unwrap();
    let shown = inside(&before, at, scale).unwrap();
    assert!(shown.spread > 60 && !shown.is_blank(), "the field at {at:?} is not there: {shown:?}");
    let page_own = mark_pixels(&before, Some((frame, scale)));

    cs.observe(true).unwrap();
    let img = screenshot(&tab).unwrap();
    let blank = inside(&img, at, scale).unwrap();
    assert!(blank.is_blank(), "the frame's password at {at:?} is not blanked: {blank:?}");
    assert!(
        mark_pixels(&img, Some((frame, scale))) > page_own + 100,
        "no marks drawn over the frame's elements"
    );
    // A secret filled into a plain field of the frame (one allowed in any
    // field) is blanked by the frame too: its content script keeps the
    // values it filled.
    let input = o.elements.iter().find(|e| e.name == "xo-input").expect("the frame's input");
    let field =
        Area { x: input.rect.x, y: input.rect.y, w: input.rect.width, h: input.rect.height };
    assert!(!inside(&img, field, scale).unwrap().is_blank(), "the empty field is blanked");
    let fill = json!({"fill": {"index": input.index, "text": "xo-member-4471"}});
    let done =
        cs.command(json!({"op": "act", "action": fill, "secrets": ["xo-member-4471"]})).unwrap();
    assert_eq!(done["kind"], "action_done", "{done}");
    cs.observe(true).unwrap();
    let img = screenshot(&tab).unwrap();
    let filled = inside(&img, field, scale).unwrap();
    assert!(filled.is_blank(), "the frame's field holding a secret is not blanked: {filled:?}");

    // Gone with the marks.
    let reply = cs.command(json!({"op": "cleanup"})).unwrap();
    assert_eq!(reply["kind"], "ack", "{reply}");
    let img = screenshot(&tab).unwrap();
    assert!(!inside(&img, at, scale).unwrap().is_blank(), "the blank stayed after cleanup");
    assert!(
        mark_pixels(&img, Some((frame, scale))) <= page_own + 10,
        "the frame's marks stayed after cleanup"
    );
}

// ---- The whole way: page → service worker → host → model, and the panel ----

/// The image URLs of every `image_url` part in a chat request.
fn image_urls(req: &Value) -> Vec<String> {
    req["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|p| p["type"] == "image_url")
        .filter_map(|p| p["image_url"]["url"].as_str().map(str::to_owned))
        .collect()
}

/// The text parts of the last user message.
fn last_user_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// Checks one screenshot the model received: at most 1280 px wide (scaled
/// down from a wider tab), the marks drawn, the password and the card
/// number blanked, the other fields readable.
fn check_signin_screenshot(url: &str, tab: &Page) -> Result<()> {
    let img = decode_data_url(url)?;
    let inner = tab.eval("window.innerWidth * devicePixelRatio")?.as_f64().context("width")?;
    eprintln!("screenshot {}x{} of a {inner} px wide tab", img.width(), img.height());
    ensure!(img.width() <= 1280, "the screenshot is {} px wide", img.width());
    if inner > 1280.0 {
        ensure!(
            img.width() == 1280,
            "a {inner} px tab should be scaled to 1280, not {}",
            img.width()
        );
    }
    let scale = scale_of(&img, tab)?;
    let marks = mark_pixels(&img, None);
    ensure!(marks > 200, "only {marks} pixels of the marks' colours in the screenshot");
    let q = |id: &str| format!("document.querySelector('#{id}')");
    assert_blank(&img, tab, "the password", &q("password"), None, scale);
    assert_blank(&img, tab, "the card number", &q("card"), None, scale);
    assert_shown(&img, tab, "the user name", &q("user"), scale);
    assert_shown(&img, tab, "the note", &q("note"), scale);
    Ok(())
}

/// Listens, in the side panel's page, on a port of its own to what every
/// panel receives, keeping the `step` task events.
fn listen_for_steps(panel: &Page) -> Result<()> {
    panel.eval(
        "(() => { window.__errandSteps = [];
           const port = chrome.runtime.connect({ name: 'panel' });
           port.onMessage.addListener((m) => {
             if (m && m.kind === 'task_event' && m.event && m.event.type === 'step') window.__errandSteps.push(m.event);
           });
           return true; })()",
    )?;
    Ok(())
}

#[test]
fn the_model_sees_the_marked_screenshot_with_the_password_blanked() {
    let config = tempfile::tempdir().unwrap();
    std::fs::write(config.path().join("config.toml"), "[agent]\nvision = true\n").unwrap();
    let script = |req: &Value, call: usize| match call {
        0 => {
            let n = find_element(req, "Sign in").unwrap_or_else(|e| panic!("{e:#}"));
            Reply::json(&json!({
                "evaluation_previous_goal": "Start", "memory": "", "next_goal": "Sign in",
                "actions": [{"click": {"index": n}}],
            }))
        }
        1 => Reply::json(&json!({
            "evaluation_previous_goal": "Signed in", "memory": "", "next_goal": "finish",
            "actions": [{"done": {"text": "Signed in.", "success": true}}],
        })),
        n => panic!("unexpected model call {n}"),
    };
    let rig = Rig::builder()
        .script(script)
        .env("ERRAND_CONFIG_DIR", config.path().display().to_string())
        // Wider than 1280 px, so the screenshot must be scaled down.
        .arg("--window-size=2200,1000")
        .build();
    run_signin(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("the_model_sees_the_marked_screenshot_with_the_password_blanked");
}

fn run_signin(rig: &Rig) -> Result<()> {
    let tab = rig.browser.new_page(&rig.fixtures.url("/vision/login.html"))?;
    let panel = side_panel::open(&rig.browser, &tab)?;
    eprintln!("side panel opened as {:?}", panel.how);
    panel.wait_connected()?;
    listen_for_steps(&panel.page)?;
    panel.start_task("Sign in")?;
    let view = panel.wait_finished(Duration::from_secs(90))?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the task ended as {}: {view:#}", view["status"]);
    ensure!(tab.eval("document.querySelector('#result').textContent")? == json!("Signed in."));

    let requests = rig.model.requests();
    ensure!(requests.len() == 2, "{} model requests", requests.len());
    let mut seen = Vec::new();
    for (i, req) in requests.iter().enumerate() {
        // One image per request: this step's screenshot, in the newest
        // message; every other message a plain string.
        let urls = image_urls(req);
        ensure!(urls.len() == 1, "request {i} carries {} images", urls.len());
        let messages = req["messages"].as_array().context("messages")?;
        for m in &messages[..messages.len() - 1] {
            ensure!(m["content"].is_string(), "request {i}: an earlier message has parts: {m}");
        }
        let text = last_user_text(req);
        ensure!(text.contains("# Screenshot"), "request {i} does not announce the screenshot");
        seen.push(urls[0].clone());
    }
    ensure!(seen[0] != seen[1], "the second step was sent the first step's screenshot");

    if let Ok(dir) = std::env::var("ERRAND_E2E_SAVE_SHOTS") {
        // JPEG, as the model got them.
        for (i, url) in seen.iter().enumerate() {
            decode_data_url(url)?.save(format!("{dir}/vision-step-{}.jpg", i + 1))?;
        }
    }
    // Both steps' screenshots: the first comes from the observation that
    // found the task's tab, the second from an ordinary step.
    for (i, url) in seen.iter().enumerate() {
        check_signin_screenshot(url, &tab).with_context(|| format!("step {}", i + 1))?;
    }

    // The side panel's step events carry the screenshots the model saw.
    let steps = panel.page.wait_for(
        "window.__errandSteps.length >= 2 && window.__errandSteps",
        Duration::from_secs(10),
    )?;
    let shots: Vec<&str> = steps
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["screenshot"].as_str().unwrap_or(""))
        .collect();
    if shots != [seen[0].as_str(), seen[1].as_str()] {
        bail!(
            "the panel's step events carry other screenshots: {:?}",
            shots.iter().map(|s| &s[..s.len().min(60)]).collect::<Vec<_>>()
        );
    }
    Ok(())
}

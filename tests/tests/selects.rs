//! Selects as visible dropdowns, end to end: a scripted model opens selects
//! (in the page, in a shadow root, in an iframe) by clicking them, sees
//! their options as numbered elements, and clicks one; the test checks the
//! real selects, the events the page saw, a screenshot of the open
//! dropdown, options changing while it is open, and that nothing is left.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use errand_e2e::cdp::Page;
use errand_e2e::model::Reply;
use serde_json::{Value, json};

use errand_e2e::rig::{Rig, answer, element_by_label as el, record};

fn selects_script(req: &Value, call: usize) -> Reply {
    match call {
        // Clicking the select opens the dropdown: the answer stops there.
        0 => answer(json!([
            {"click": {"index": el(req, "Flavour")}},
            {"fill": {"index": el(req, "Flavour"), "text": "never run"}},
        ])),
        1 => answer(json!([{"click": {"index": el(req, "Mint")}}])),
        2 => answer(json!([{"click": {"index": el(req, "Shade")}}])),
        3 => answer(json!([
            {"click": {"index": el(req, "Teal")}},
            {"select_option": {"index": el(req, "Planet"), "options": ["Mars"]}},
        ])),
        4 => answer(json!([{"click": {"index": el(req, "Flavour")}}])),
        // The test takes its screenshot and changes the options meanwhile.
        5 => answer(json!([{"wait": {"ms": 4000}}])),
        6 => answer(json!([{"click": {"index": el(req, "Pistachio")}}])),
        7 => answer(json!([{"done": {"text": "chosen", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// The colour of the screenshot's pixel at the centre of the element
/// matched by `selector` (CSS pixels), decoded by the page itself.
fn pixel_at(tab: &Page, png_base64: &str, selector: &str) -> Result<Value> {
    tab.eval(&format!(
        "new Promise((resolve, reject) => {{
           const r = document.querySelector({selector}).getBoundingClientRect();
           const img = new Image();
           img.onload = () => {{
             const c = document.createElement('canvas');
             c.width = img.width; c.height = img.height;
             const g = c.getContext('2d');
             g.drawImage(img, 0, 0);
             const k = img.width / window.innerWidth;
             const x = Math.round((r.left + 6) * k), y = Math.round((r.top + r.height / 2) * k);
             resolve({{rgb: Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3)),
                      x, y, w: img.width}});
           }};
           img.onerror = () => reject(new Error('the screenshot did not decode'));
           img.src = 'data:image/png;base64,' + {png};
         }})",
        selector = json!(selector),
        png = json!(png_base64),
    ))
}

#[test]
fn selects_open_as_visible_dropdowns_whose_options_the_model_clicks() {
    let rig = Rig::start(selects_script);
    let waiter = {
        // While the model "waits" (call 5), check the open dropdown.
        let model = &rig.model;
        move |tab: &Page| -> Result<()> {
            model.wait_for_requests(6, Duration::from_secs(60))?;
            tab.wait_for(
                "!!document.querySelector('[data-errand-dropdown] [aria-selected=true]')",
                Duration::from_secs(10),
            )?;
            let shot = tab.call("Page.captureScreenshot", json!({"format": "png"}))?;
            let png = shot["data"].as_str().context("no screenshot data")?;
            let px = pixel_at(tab, png, "[data-errand-dropdown] [aria-selected=true]")?;
            eprintln!("selected option in the screenshot: {px}");
            let rgb: Vec<i64> = serde_json::from_value(px["rgb"].clone())?;
            ensure!(
                (rgb[0] - 26).abs() < 12 && (rgb[1] - 115).abs() < 12 && (rgb[2] - 232).abs() < 12,
                "the screenshot does not show the selected option's highlight: {px}"
            );
            // A page script changes the options while the dropdown is open.
            tab.eval("window.addFlavour('Pistachio')")?;
            tab.wait_for(
                "[...document.querySelectorAll('[data-errand-dropdown] [role=option]')]
                   .some((o) => o.textContent === 'Pistachio')",
                Duration::from_secs(5),
            )
            .context("the open dropdown did not show the option the page added")?;
            Ok(())
        }
    };
    let tab = rig
        .browser
        .new_page(&rig.fixtures.url("/actions/selects.html"))
        .unwrap();
    let checked = std::thread::scope(|s| {
        let handle = s.spawn(|| waiter(&tab));
        let run = rig.run_in(&tab, "Choose flavours");
        (handle.join().expect("the checking thread panicked"), run)
    });
    checked
        .0
        .unwrap_or_else(|e| panic!("checking the open dropdown: {e:#}"));
    let records = checked
        .1
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval(
            "(() => ({
               flavour: document.getElementById('flavour').value,
               out: document.getElementById('flavour-out').textContent,
               shade: document.getElementById('shadow-host').shadowRoot.querySelector('select').value,
               planet: document.getElementById('frame').contentDocument.getElementById('planet').value,
               events: window.events,
               dropdowns: document.querySelectorAll('[data-errand-dropdown]').length,
             }))()",
        )
        .unwrap();
    eprintln!("page: {page:#}");
    assert_eq!(page["flavour"], "pistachio", "{page:#}");
    assert_eq!(page["shade"], "Teal", "{page:#}");
    assert_eq!(page["planet"], "Mars", "{page:#}");
    assert_eq!(page["dropdowns"], 0, "a dropdown was left open: {page:#}");
    let events: Vec<String> = serde_json::from_value(page["events"].clone()).unwrap();
    assert_eq!(
        events,
        [
            "flavour:input",
            "flavour:change",
            "shade:Teal",
            "flavour:input",
            "flavour:change"
        ],
        "the page saw a person's choices"
    );
    let open = record(&records, "click", "").unwrap();
    assert!(
        open["detail"].as_str().unwrap().contains("Mint"),
        "the click reports the options: {open}"
    );
    let all = records.iter().map(Value::to_string).collect::<String>();
    assert!(
        !all.contains("never run"),
        "the action after opening the dropdown ran: {records:#?}"
    );
    eprintln!(
        "selects: passed in {:.1} s",
        rig.browser.running_for().as_secs_f64()
    );
}

fn keyboard_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Flavour")}}])),
        // The test plays a person's keys and clicks meanwhile.
        1 => answer(json!([{"wait": {"ms": 8000}}])),
        2 => answer(json!([{"done": {"text": "keys done", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// A real key press (trusted, through DevTools).
fn key(tab: &Page, key: &str, code: &str, key_code: u32) -> Result<()> {
    for kind in ["keyDown", "keyUp"] {
        let text = if key.chars().count() == 1 { key } else { "" };
        tab.call(
            "Input.dispatchKeyEvent",
            json!({"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code,
                   "text": if kind == "keyDown" { text } else { "" }}),
        )?;
    }
    Ok(())
}

/// A real mouse click at a point (trusted, through DevTools).
fn mouse_click(tab: &Page, x: f64, y: f64) -> Result<()> {
    for kind in ["mousePressed", "mouseReleased"] {
        tab.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
        )?;
    }
    Ok(())
}

const OPEN: &str = "!!document.querySelector('[data-errand-dropdown]')";
const CLOSED: &str = "!document.querySelector('[data-errand-dropdown]')";

fn play_keys_and_clicks(tab: &Page) -> Result<()> {
    let t = Duration::from_secs(5);
    tab.wait_for(OPEN, Duration::from_secs(60))
        .context("the model's click did not open it")?;
    // Down from "Choose…" to Lemon, then over the disabled Cherry to Mint.
    key(tab, "ArrowDown", "ArrowDown", 40)?;
    key(tab, "ArrowDown", "ArrowDown", 40)?;
    key(tab, "Enter", "Enter", 13)?;
    tab.wait_for(CLOSED, t)
        .context("Enter did not close the dropdown")?;
    let v = tab.eval("document.getElementById('flavour').value")?;
    ensure!(v == "mint", "arrows and Enter chose {v}, not mint");
    // A real click on the select opens ours (no native popup); type-ahead
    // then Escape changes nothing.
    let r = tab.eval(
        "(() => { const r = document.getElementById('flavour').getBoundingClientRect();
                  return [r.x + r.width / 2, r.y + r.height / 2]; })()",
    )?;
    let (x, y) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
    mouse_click(tab, x, y)?;
    tab.wait_for(OPEN, t)
        .context("a real click on the select did not open the dropdown")?;
    key(tab, "b", "KeyB", 66)?;
    tab.wait_for(
        "document.querySelector('[data-errand-option=\"4\"]')?.style.background.includes('232, 240, 254')",
        t,
    )
    .context("type-ahead did not move to Basil")?;
    key(tab, "Escape", "Escape", 27)?;
    tab.wait_for(CLOSED, t)
        .context("Escape did not close the dropdown")?;
    let v = tab.eval("document.getElementById('flavour').value")?;
    ensure!(v == "mint", "Escape changed the choice to {v}");
    // A click elsewhere closes it.
    mouse_click(tab, x, y)?;
    tab.wait_for(OPEN, t)?;
    mouse_click(tab, 600.0, 10.0)?;
    tab.wait_for(CLOSED, t)
        .context("a click outside did not close the dropdown")?;
    // A dropdown whose select leaves the page goes with it.
    mouse_click(tab, x, y)?;
    tab.wait_for(OPEN, t)?;
    tab.eval("document.getElementById('flavour').remove()")?;
    tab.wait_for(CLOSED, t)
        .context("the dropdown of a removed select stayed")?;
    Ok(())
}

#[test]
fn dropdowns_answer_keys_and_clicks_like_a_native_select() {
    let rig = Rig::start(keyboard_script);
    let tab = rig
        .browser
        .new_page(&rig.fixtures.url("/actions/selects.html"))
        .unwrap();
    let (played, run) = std::thread::scope(|s| {
        let handle = s.spawn(|| play_keys_and_clicks(&tab));
        let run = rig.run_in(&tab, "Use the keyboard");
        (handle.join().expect("the playing thread panicked"), run)
    });
    played.unwrap_or_else(|e| panic!("{e:#}"));
    run.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let events = tab.eval("window.events").unwrap();
    assert_eq!(
        events,
        json!(["flavour:input", "flavour:change"]),
        "one choice, one change"
    );
}

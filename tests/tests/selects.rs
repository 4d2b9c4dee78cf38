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
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/selects.html")).unwrap();
    let checked = std::thread::scope(|s| {
        let handle = s.spawn(|| waiter(&tab));
        let run = rig.run_in(&tab, "Choose flavours");
        (handle.join().expect("the checking thread panicked"), run)
    });
    checked.0.unwrap_or_else(|e| panic!("checking the open dropdown: {e:#}"));
    let records = checked.1.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
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
        ["flavour:input", "flavour:change", "shade:Teal", "flavour:input", "flavour:change"],
        "the page saw a person's choices"
    );
    let open = record(&records, "click", "").unwrap();
    assert!(
        open["detail"].as_str().unwrap().contains("Mint"),
        "the click reports the options: {open}"
    );
    let all = records.iter().map(Value::to_string).collect::<String>();
    assert!(!all.contains("never run"), "the action after opening the dropdown ran: {records:#?}");
    eprintln!("selects: passed in {:.1} s", rig.browser.running_for().as_secs_f64());
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
    tab.wait_for(OPEN, Duration::from_secs(60)).context("the model's click did not open it")?;
    // Down from "Choose…" to Lemon, then over the disabled Cherry to Mint.
    key(tab, "ArrowDown", "ArrowDown", 40)?;
    key(tab, "ArrowDown", "ArrowDown", 40)?;
    key(tab, "Enter", "Enter", 13)?;
    tab.wait_for(CLOSED, t).context("Enter did not close the dropdown")?;
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
    tab.wait_for(OPEN, t).context("a real click on the select did not open the dropdown")?;
    key(tab, "b", "KeyB", 66)?;
    tab.wait_for(
        "document.querySelector('[data-errand-option=\"4\"]')?.style.background.includes('232, 240, 254')",
        t,
    )
    .context("type-ahead did not move to Basil")?;
    key(tab, "Escape", "Escape", 27)?;
    tab.wait_for(CLOSED, t).context("Escape did not close the dropdown")?;
    let v = tab.eval("document.getElementById('flavour').value")?;
    ensure!(v == "mint", "Escape changed the choice to {v}");
    // A click elsewhere closes it.
    mouse_click(tab, x, y)?;
    tab.wait_for(OPEN, t)?;
    mouse_click(tab, 600.0, 10.0)?;
    tab.wait_for(CLOSED, t).context("a click outside did not close the dropdown")?;
    // A dropdown whose select leaves the page goes with it.
    mouse_click(tab, x, y)?;
    tab.wait_for(OPEN, t)?;
    tab.eval("document.getElementById('flavour').remove()")?;
    tab.wait_for(CLOSED, t).context("the dropdown of a removed select stayed")?;
    Ok(())
}

#[test]
fn dropdowns_answer_keys_and_clicks_like_a_native_select() {
    let rig = Rig::start(keyboard_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/selects.html")).unwrap();
    let (played, run) = std::thread::scope(|s| {
        let handle = s.spawn(|| play_keys_and_clicks(&tab));
        let run = rig.run_in(&tab, "Use the keyboard");
        (handle.join().expect("the playing thread panicked"), run)
    });
    played.unwrap_or_else(|e| panic!("{e:#}"));
    run.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let events = tab.eval("window.events").unwrap();
    assert_eq!(events, json!(["flavour:input", "flavour:change"]), "one choice, one change");
}

fn layout_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Departure")}}])),
        // The test scrolls the page and the box meanwhile.
        1 => answer(json!([{"wait": {"ms": 4000}}])),
        2 => answer(json!([{"click": {"index": el(req, "Lisbon")}}])),
        // A select fixed at the bottom of the window: no room below.
        3 => answer(json!([{"click": {"index": el(req, "Arrival")}}])),
        4 => answer(json!([{"wait": {"ms": 3000}}])),
        5 => answer(json!([{"click": {"index": el(req, "Madrid")}}])),
        // A `multiple` select (a list box the page draws: no dropdown)
        // takes several labels; a select in a same-origin iframe opens its
        // dropdown in the iframe.
        6 => answer(json!([
            {"select_option": {"index": el(req, "Extras"), "options": ["Wifi", "Late checkout"]}},
            {"click": {"index": el(req, "Seat")}},
        ])),
        7 => {
            // The list box shows all its chosen options and says it takes
            // several; labels wrapping a select are named without its
            // options.
            let page = errand_e2e::model::last_user_message(req).unwrap_or_default();
            for want in [
                r#"<select=Extras value="Wifi, Late checkout" multiple>"#,
                r#"<select=Departure value="Lisbon">"#,
            ] {
                assert!(page.contains(want), "no {want} in:\n{page}");
            }
            answer(json!([{"click": {"index": el(req, "Aisle")}}]))
        }
        8 => answer(json!([{"done": {"text": "trip chosen", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// The open dropdown's box against its select's, in the top window's CSS
/// pixels: `{gap_below, gap_above, panel, select}`.
const GEOMETRY: &str = "(() => {
  const p = document.querySelector('[data-errand-dropdown]');
  const s = document.querySelector(window.openSelect).getBoundingClientRect();
  if (!p) return null;
  const r = p.getBoundingClientRect();
  return {gap_below: r.top - s.bottom, gap_above: s.top - r.bottom, top: r.top,
          bottom: r.bottom, height: r.height, select_top: s.top, select_bottom: s.bottom,
          left: r.left, select_left: s.left, rows: p.querySelectorAll('[role=option]').length};
})()";

fn geometry(tab: &Page, select: &str) -> Result<Value> {
    tab.eval(&format!("window.openSelect = {}", json!(select)))?;
    tab.eval(GEOMETRY)
}

/// Waits until the dropdown sits right under its select (within a pixel).
fn wait_under(tab: &Page, select: &str, what: &str) -> Result<Value> {
    tab.eval(&format!("window.openSelect = {}", json!(select)))?;
    tab.wait_for(
        &format!("(() => {{ const g = {GEOMETRY}; return !!g && Math.abs(g.gap_below) < 1; }})()"),
        Duration::from_secs(5),
    )
    .with_context(|| format!("{what}: {:#}", geometry(tab, select).unwrap_or_default()))?;
    geometry(tab, select)
}

fn check_layout(tab: &Page, model: &errand_e2e::model::ScriptedModel) -> Result<()> {
    // Departure's dropdown is open, the model waits.
    model.wait_for_requests(2, Duration::from_secs(60))?;
    tab.wait_for(OPEN, Duration::from_secs(10))?;
    let g = wait_under(tab, "#departure", "opened under the select")?;
    eprintln!("opened: {g}");
    ensure!(g["rows"] == 5, "five options: {g}");
    // The page scrolls: the dropdown follows its select.
    let y = tab.eval("window.scrollBy(0, 40), window.scrollY")?;
    ensure!(y.as_f64().unwrap_or(0.0) > 30.0, "the page did not scroll: {y}");
    let g = wait_under(tab, "#departure", "after the page scrolled")?;
    eprintln!("after the page scrolled: {g}");
    // The box holding it scrolls: the dropdown follows again.
    tab.eval("document.getElementById('box').scrollTop = 30")?;
    let g = wait_under(tab, "#departure", "after the box scrolled")?;
    eprintln!("after the box scrolled: {g}");
    // Arrival (fixed at the bottom) opens upwards.
    model.wait_for_requests(5, Duration::from_secs(60))?;
    tab.wait_for(OPEN, Duration::from_secs(10))?;
    let g = geometry(tab, "#arrival")?;
    eprintln!("at the bottom: {g}");
    let f = |k: &str| g[k].as_f64().unwrap_or(f64::NAN);
    ensure!(
        f("gap_above").abs() < 1.0 && f("top") >= 0.0 && g["rows"] == 6,
        "the dropdown of a select with no room below is not right above it: {g}"
    );
    Ok(())
}

/// Dropdowns flip above a select at the bottom of the window, follow their
/// select when the page or its box scrolls, and open inside a same-origin
/// iframe; a `multiple` select takes several labels through
/// `select_option` (it is a list box the page draws, not a dropdown).
#[test]
fn dropdowns_flip_follow_scrolling_and_open_in_iframes() {
    let rig = Rig::start(layout_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/selects-layout.html")).unwrap();
    let (checked, run) = std::thread::scope(|s| {
        let handle = s.spawn(|| check_layout(&tab, &rig.model));
        let run = rig.run_in(&tab, "Choose the trip");
        (handle.join().expect("the checking thread panicked"), run)
    });
    checked.unwrap_or_else(|e| panic!("checking the dropdowns: {e:#}"));
    let records = run.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval(
            "(() => ({
               departure: document.getElementById('departure').value,
               arrival: document.getElementById('arrival').value,
               extras: [...document.getElementById('extras').selectedOptions].map((o) => o.value),
               seat: document.getElementById('frame').contentDocument.getElementById('seat').value,
               dropdowns: document.querySelectorAll('[data-errand-dropdown]').length
                 + document.getElementById('frame').contentDocument.querySelectorAll('[data-errand-dropdown]').length,
               events: window.events,
             }))()",
        )
        .unwrap();
    eprintln!("page: {page:#}");
    assert_eq!(page["departure"], "Lisbon", "{page:#}");
    assert_eq!(page["arrival"], "Madrid", "{page:#}");
    assert_eq!(page["extras"], json!(["wifi", "late"]), "{page:#}");
    assert_eq!(page["seat"], "Aisle", "{page:#}");
    assert_eq!(page["dropdowns"], 0, "a dropdown was left open: {page:#}");
    assert_eq!(
        page["events"],
        json!(["departure:Lisbon", "arrival:Madrid", "extras:Wifi+Late checkout", "seat:Aisle"]),
        "{page:#}"
    );
    let extras = record(&records, "select_option", "Wifi").unwrap();
    assert!(
        extras["ok"] == true
            && extras["detail"].as_str().unwrap().contains("chose \"Wifi\", \"Late checkout\""),
        "{extras}"
    );
    let seat = record(&records, "click", "").unwrap();
    assert_eq!(seat["ok"], true, "{seat}");
    let opened_in_frame = records
        .iter()
        .flat_map(|s| s.as_array().into_iter().flatten())
        .find(|r| r["detail"].as_str().unwrap_or_default().contains("Seat"))
        .expect("the click on Seat");
    assert!(
        opened_in_frame["detail"].as_str().unwrap().contains("Aisle"),
        "the click on the framed select reports its options: {opened_in_frame}"
    );
    rig.done("select layout");
}

fn moved_rows_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Flavour")}}])),
        // Basil's number is read now; the page adds an option before it
        // during the wait, so the dropdown redraws before the click.
        1 => answer(json!([
            {"wait": {"ms": 2500}},
            {"click": {"index": el(req, "Basil")}},
        ])),
        2 => answer(json!([{"done": {"text": "basil", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// Options added while the dropdown is open redraw it without renumbering
/// the rows already listed: a click planned on the dropdown as it was
/// still chooses the option it named.
#[test]
fn a_dropdown_redrawn_under_the_model_keeps_its_rows() {
    let rig = Rig::start(moved_rows_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/selects.html")).unwrap();
    let change = |tab: &Page| -> Result<()> {
        rig.model.wait_for_requests(2, Duration::from_secs(60))?;
        tab.wait_for(OPEN, Duration::from_secs(10))?;
        tab.eval("window.addFlavour('Apricot', true)")?;
        tab.wait_for(
            "document.querySelector('[data-errand-dropdown]').textContent.includes('Apricot')",
            Duration::from_secs(5),
        )
        .context("the open dropdown did not show the option the page added")?;
        Ok(())
    };
    let (changed, run) = std::thread::scope(|s| {
        let handle = s.spawn(|| change(&tab));
        let run = rig.run_in(&tab, "Choose basil");
        (handle.join().expect("the changing thread panicked"), run)
    });
    changed.unwrap_or_else(|e| panic!("{e:#}"));
    let records = run.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval("({flavour: document.getElementById('flavour').value, events: window.events})")
        .unwrap();
    let click = records
        .iter()
        .flat_map(|s| s.as_array().into_iter().flatten())
        .filter(|r| r["action"].get("click").is_some())
        .nth(1)
        .cloned()
        .unwrap_or_default();
    assert_eq!(page["flavour"], "basil", "{page:#}\n{click:#}");
    assert_eq!(click["ok"], true, "{click:#}");
    rig.done("moved rows");
}

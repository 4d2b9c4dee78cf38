//! The action executor, end to end: a scripted model answers with several
//! actions per step; the real host sends them through the real service
//! worker to the real content script in a fixture page; the test then
//! checks the page with CDP and the effects the host stored.

use std::time::Duration;

use anyhow::Context;
use errand_e2e::model::{Reply, last_user_message};
use errand_e2e::side_panel;
use serde_json::{Value, json};

use errand_e2e::rig::{Rig, action_times, answer, element_by_label as el, record};

fn every_action_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"fill": {"index": el(req, "Nickname"), "text": "Ada"}},
            {"fill": {"index": el(req, "Remarks"), "text": "two\nlines"}},
            {"fill": {"index": el(req, "Journal"), "text": "Dear diary"}},
            {"fill": {"index": el(req, "Birthday"), "text": "2024-05-31"}},
            {"fill": {"index": el(req, "Quantity"), "text": "7"}},
        ])),
        1 => answer(json!([
            {"fill": {"index": el(req, "Loudness"), "text": "30"}},
            {"fill": {"index": el(req, "Paint"), "text": "#ff8800"}},
            {"fill": {"index": el(req, "Alarm"), "text": "13:45"}},
            {"check": {"index": el(req, "Newsletter")}},
            {"select_option": {"index": el(req, "Size"), "options": ["Large"]}},
        ])),
        2 => answer(json!([
            {"select_option": {"index": el(req, "Toppings"), "options": ["olives", 2]}},
            {"dblclick": {"index": el(req, "Doubler")}},
            {"press": {"index": el(req, "Keylog"), "key": "ControlOrMeta+a"}},
            {"press": {"index": el(req, "Keylog"), "key": "Backspace"}},
            {"drag_and_drop": {"from": el(req, "Apple"), "to": el(req, "Basket")}},
        ])),
        3 => answer(json!([
            // Fails: a mismatch is an error, not a success.
            {"fill": {"index": el(req, "Quantity"), "text": "lots"}},
        ])),
        4 => answer(json!([
            {"fill": {"index": el(req, "Mailbox"), "text": "not-an-address"}},
            {"select_option": {"index": el(req, "Size"), "options": ["Huge"]}},
        ])),
        5 => answer(json!([
            {"hover": {"index": el(req, "Hovermenu")}},
            {"fill": {"index": el(req, "Nickname"), "text": "skipped"}},
        ])),
        6 => answer(json!([
            {"type": {"index": el(req, "Lookup"), "text": "owls", "enter": true}},
            {"click": {"index": el(req, "Reveal")}},
            {"fill": {"index": el(req, "Nickname"), "text": "skipped too"}},
        ])),
        7 => answer(json!([
            {"click": {"index": el(req, "Reveal")}},
            {"fill": {"index": el(req, "Nickname"), "text": "skipped again"}},
        ])),
        8 => answer(json!([{"extract": {"query": "treasure"}}])),
        9 => answer(json!([{"done": {"text": "all done", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn every_page_action_does_what_it_says_and_reports_its_effect() {
    let rig = Rig::start(every_action_script);
    let (tab, records) = rig
        .run("/actions/form.html", "Exercise every action")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let page = tab
        .eval(
            "(() => { const v = (id) => document.getElementById(id);
               return {
                 nick: v('nick').value, remarks: v('remarks').value,
                 editor: v('editor').textContent, birthday: v('birthday').value,
                 quantity: v('quantity').value, loudness: v('loudness').value,
                 paint: v('paint').value, alarm: v('alarm').value,
                 newsletter: v('newsletter').checked, size: v('size').value,
                 toppings: [...v('toppings').selectedOptions].map((o) => o.value),
                 twice: v('twice-out').textContent, hover: v('hover-out').textContent,
                 keylog: v('keylog').value, keys: v('keys-out').textContent,
                 basket: v('basket-out').textContent, search: v('search-out').textContent,
                 mailbox: v('mailbox').getAttribute('aria-invalid'),
                 revealed: v('revealed').children.length,
                 events: window.events };
             })()",
        )
        .unwrap();
    eprintln!("page: {page:#}");
    let expect = json!({
        "nick": "Ada", "remarks": "two\nlines", "editor": "Dear diary",
        "birthday": "2024-05-31", "quantity": "", "loudness": "30", "paint": "#ff8800",
        "alarm": "13:45", "newsletter": true, "size": "l", "toppings": ["olives", "onion"],
        "twice": "dblclick detail=2", "hover": "hovered", "keylog": "",
        "basket": "basket: apple", "search": "searched: owls", "mailbox": "true",
        "revealed": 2,
    });
    for (k, want) in expect.as_object().unwrap() {
        assert_eq!(&page[k], want, "page field {k}: {page:#}");
    }
    let events: Vec<String> = serde_json::from_value(page["events"].clone()).unwrap();
    for e in [
        "nick:input",
        "nick:change",
        "size:input",
        "size:change",
        "toppings:change",
        "newsletter:change",
        "editor:input",
    ] {
        assert!(events.iter().any(|x| x == e), "no {e} event: {events:?}");
    }
    let keys = page["keys"].as_str().unwrap();
    assert!(keys.contains("ctrlKey+a(65)") && keys.contains("Backspace(8)"), "keys seen: {keys}");

    // Effects: values read back, mismatches are failures, what appeared.
    let fill = record(&records, "fill", "2024-05-31").unwrap();
    assert_eq!(fill["ok"], true, "{fill}");
    let bad = record(&records, "fill", "lots").unwrap();
    assert_eq!(bad["ok"], false, "a refused value must fail: {bad}");
    let huge = record(&records, "select_option", "Huge").unwrap();
    assert!(huge["ok"] == false && huge["detail"].as_str().unwrap().contains("disabled"), "{huge}");
    let mail = record(&records, "fill", "not-an-address").unwrap();
    assert!(
        mail["detail"].as_str().unwrap().contains("Enter an address with @"),
        "the invalid field is reported: {mail}"
    );
    let hover = record(&records, "hover", "").unwrap();
    assert!(
        hover["detail"].as_str().unwrap().contains("Profile"),
        "the hover menu appeared: {hover}"
    );
    let typed = record(&records, "type", "owls").unwrap();
    assert!(typed["ok"] == true, "{typed}");
    let reveal = record(&records, "click", "").unwrap();
    assert!(
        reveal["detail"].as_str().unwrap().contains("Surprise panel"),
        "the click reports what appeared: {reveal}"
    );
    // The fills after the hover menu opened, after the search (the page
    // changed) and after the revealed panel were not run.
    let all = records.iter().map(Value::to_string).collect::<String>();
    assert!(!all.contains("skipped"), "actions after an unforeseen change ran: {records:#?}");
    let extract = record(&records, "extract", "").unwrap();
    assert!(extract["detail"].as_str().unwrap().contains("buried under the old oak"), "{extract}");
    eprintln!("every_page_action: passed in {:.1} s", rig.browser.running_for().as_secs_f64());
}

/// The task's own tab, known to the tab test's model once the test set it.
static FIRST_TAB: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// The number after `after` in the request's text (`a new tab opened (tab 7)`).
fn number_after(req: &Value, after: &str) -> i64 {
    let text = errand_e2e::model::all_text(req);
    let at = text.find(after).unwrap_or_else(|| panic!("no {after:?} in the request:\n{text}"));
    text[at + after.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|e| panic!("no number after {after:?}: {e}"))
}

fn tabs_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"click": {"index": el(req, "Elsewhere")}},
            {"click": {"index": el(req, "Elsewhere")}},
        ])),
        1 => {
            answer(json!([{"switch_tab": {"tab_id": number_after(req, "a new tab opened (tab ")}}]))
        }
        2 => answer(json!([{"click": {"index": el(req, "Ping")}}])),
        3 => answer(json!([
            {"switch_tab": {"tab_id": FIRST_TAB.load(std::sync::atomic::Ordering::SeqCst)}},
        ])),
        4 => {
            answer(json!([{"close_tab": {"tab_id": number_after(req, "a new tab opened (tab ")}}]))
        }
        5 => answer(json!([{"done": {"text": "tabs done", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn tab_actions_follow_a_new_tab_and_close_it() {
    let rig = Rig::start(tabs_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/tabs.html")).unwrap();
    // The service worker may still be starting: ask again a few times.
    let first = (0..10)
        .find_map(|_| {
            side_panel::chrome_tab_id(&rig.browser, &tab)
                .inspect_err(|_| std::thread::sleep(Duration::from_millis(300)))
                .ok()
        })
        .expect("the tab's id");
    FIRST_TAB.store(first, std::sync::atomic::Ordering::SeqCst);
    let records = rig
        .run_in(&tab, "Visit elsewhere")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let opened = record(&records, "click", "").unwrap();
    assert!(opened["detail"].as_str().unwrap().contains("a new tab opened"), "{opened}");
    let all = records.iter().map(Value::to_string).collect::<String>();
    assert_eq!(
        all.matches("\"click\"").count(),
        2,
        "the second click after the new tab ran: {records:#?}"
    );
    let ping = record(&records, "click", "").map(|_| ()).and_then(|()| {
        records
            .iter()
            .flat_map(|s| s.as_array().into_iter().flatten())
            .find(|r| r["detail"].as_str().unwrap_or_default().contains("Ping"))
            .context("no click on Ping")
    });
    assert_eq!(ping.unwrap()["ok"], true);
    let closed = record(&records, "close_tab", "").unwrap();
    assert_eq!(closed["ok"], true, "{closed}");
    let targets = rig.browser.cdp().targets().unwrap();
    assert!(
        !targets.iter().any(|t| t.url.contains("second.html")),
        "the second tab is still open: {targets:?}"
    );
    eprintln!("tabs: passed in {:.1} s", rig.browser.running_for().as_secs_f64());
}

fn upload_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"upload_file": {"index": el(req, "Resume"), "files": ["cv.txt"]}},
            {"upload_file": {"index": el(req, "Attachments"), "files": ["a.txt", "b.csv"]}},
        ])),
        // A path out of the allowed folder is refused.
        1 => answer(
            json!([{"upload_file": {"index": el(req, "Resume"), "files": ["../secret.txt"]}}]),
        ),
        2 => answer(json!([{"done": {"text": "uploaded", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn upload_file_puts_allowed_files_into_file_inputs() {
    let rig = Rig::start(upload_script);
    let uploads = rig.browser.data_dir().join("uploads");
    std::fs::create_dir_all(&uploads).unwrap();
    std::fs::write(uploads.join("cv.txt"), "my cv").unwrap();
    std::fs::write(uploads.join("a.txt"), "first").unwrap();
    std::fs::write(uploads.join("b.csv"), "x,y").unwrap();
    std::fs::write(rig.browser.data_dir().join("secret.txt"), "secret").unwrap();
    let (tab, records) = rig
        .run("/actions/upload.html", "Upload my files")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let out = tab.eval("document.getElementById('out').textContent").unwrap();
    assert_eq!(
        out,
        "resume:cv.txt:text/plain:my cv\nattachments:a.txt:text/plain:first\nattachments:b.csv:text/csv:x,y\n"
    );
    let refused = record(&records, "upload_file", "secret").unwrap();
    assert_eq!(refused["ok"], false, "{refused}");
    let ok = record(&records, "upload_file", "b.csv").unwrap();
    assert!(ok["detail"].as_str().unwrap().contains("a.txt, b.csv"), "{ok}");
}

/// Asserts (inside the scripted model) that the page the model sees says
/// `text`: the app's own state, rendered by the app.
fn sees(req: &Value, text: &str) {
    let last = last_user_message(req).unwrap_or_default();
    assert!(last.contains(text), "the page does not show {text:?}:\n{last}");
}

/// This fixture's URL, from the page URL the model is shown.
fn sibling(req: &Value, page: &str) -> String {
    let last = last_user_message(req).unwrap_or_default();
    let url = last
        .lines()
        .find_map(|l| l.strip_prefix("URL: "))
        .unwrap_or_else(|| panic!("no URL in:\n{last}"));
    let dir = &url[..url.rfind('/').unwrap() + 1];
    format!("{dir}{page}")
}

fn frameworks_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([
            {"fill": {"index": el(req, "Fullname"), "text": "Grace"}},
            {"select_option": {"index": el(req, "Homeland"), "options": ["Japan"]}},
            {"check": {"index": el(req, "Consent")}},
        ])),
        1 => {
            sees(req, "name=Grace;country=jp;agree=true");
            answer(json!([{"click": {"index": el(req, "Homeland")}}]))
        }
        2 => answer(json!([{"click": {"index": el(req, "Peru")}}])),
        3 => {
            sees(req, "name=Grace;country=pe;agree=true");
            answer(json!([{"goto": {"url": sibling(req, "vue.html")}}]))
        }
        4 => answer(json!([
            {"fill": {"index": el(req, "Fullname"), "text": "Ada"}},
            {"select_option": {"index": el(req, "Homeland"), "options": ["pe"]}},
            {"fill": {"index": el(req, "Notes"), "text": "hi there"}},
        ])),
        5 => {
            sees(req, "name=Ada;country=pe;notes=hi there");
            answer(json!([{"goto": {"url": sibling(req, "jqueryui.html")}}]))
        }
        6 => answer(json!([{"type": {"index": el(req, "Fruitname"), "text": "ap"}}])),
        // The suggestions are one list element here: choose by keyboard,
        // as jQuery UI expects (it reads `keyCode`).
        7 => answer(json!([
            {"press": {"index": el(req, "Fruitname"), "key": "ArrowDown"}},
            {"press": {"index": el(req, "Fruitname"), "key": "ArrowDown"}},
            {"press": {"index": el(req, "Fruitname"), "key": "Enter"}},
        ])),
        8 => {
            sees(req, "chosen: Apricot");
            answer(json!([{"done": {"text": "frameworks done", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// Real React (controlled inputs, select, checkbox), real Vue (`v-model`)
/// and real jQuery UI autocomplete, from npm (`tests/fixtures/apps/`).
#[test]
fn react_vue_and_jquery_ui_widgets_take_the_actions() {
    let apps = errand_e2e::fixtures::fixtures_dir().join("apps/node_modules");
    assert!(
        apps.join("react").exists() && apps.join("vue").exists() && apps.join("jquery-ui").exists(),
        "the fixture apps are not installed: run `npm install --prefix tests/fixtures/apps` \
         (scripts/test.sh does)"
    );
    let rig = Rig::start(frameworks_script);
    let (tab, records) = rig
        .run("/actions/react.html", "Fill the framework forms")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let typed = record(&records, "type", "ap").unwrap();
    assert!(
        typed["detail"].as_str().unwrap().contains("Apricot"),
        "typing reports the suggestions that appeared: {typed}"
    );
    let chosen = tab.eval("document.getElementById('fruit').value").unwrap();
    assert_eq!(chosen, "Apricot");
}

fn network_script(req: &Value, call: usize) -> Reply {
    match call {
        // The answer comes 400 ms after the click: the effect reports what
        // it changed, and the rest of the answer is not run.
        0 => answer(json!([
            {"click": {"index": el(req, "Load slowly")}},
            {"fill": {"index": el(req, "Notes"), "text": "skipped"}},
        ])),
        1 => answer(json!([{"click": {"index": el(req, "Ask by XHR")}}])),
        // Suggestions come from the server after a debounce.
        2 => answer(json!([{"type": {"index": el(req, "City"), "text": "ber"}}])),
        // An ordinary click stays quick (the page's long poll from before
        // does not count); a request that never answers is waited for 3 s
        // at most.
        3 => answer(json!([
            {"click": {"index": el(req, "Quick")}},
            {"click": {"index": el(req, "Quick")}},
            {"click": {"index": el(req, "Hang")}},
        ])),
        // A link to a page the server answers in 600 ms: the click says a
        // new page is loading and the rest of the answer is not run; the
        // next observation is the new page.
        4 => answer(json!([
            {"click": {"index": el(req, "Onward")}},
            {"click": {"index": el(req, "Quick")}},
        ])),
        5 => {
            sees(req, "slept 600 ms");
            answer(json!([{"done": {"text": "network done", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// The settle wait watches the network: a click whose server answer comes
/// 400 ms later reports what the answer changed (fetch and XHR), typing
/// waits for server-side suggestions, ordinary actions stay quick, a
/// request that hangs is waited for at most 3 s, and a click that loads a
/// new page answers at once, before the old page goes.
#[test]
fn actions_wait_for_the_answers_they_asked_the_server_for() {
    let rig = Rig::start(network_script);
    let (tab, records) = rig
        .run("/actions/network.html", "Load the slow things")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let load = record(&records, "click", "").unwrap();
    let detail = load["detail"].as_str().unwrap();
    assert!(
        load["ok"] == true && detail.contains("Loaded: slept 400 ms"),
        "the click reports what the slow answer changed: {load}"
    );
    let all = records.iter().map(Value::to_string).collect::<String>();
    assert!(!all.contains("skipped"), "the fill after the slow answer ran: {records:#?}");
    assert!(all.contains("XHR answered: slept 300 ms"), "the XHR's answer: {records:#?}");
    let typed = record(&records, "type", "ber").unwrap();
    assert!(
        typed["detail"].as_str().unwrap().contains("Berlin"),
        "typing reports the server's suggestions: {typed}"
    );
    let times = action_times(&rig);
    eprintln!("actions (name, ok, ms): {times:?}");
    assert_eq!(times.len(), 7, "{times:?}");
    let ms = |i: usize| times[i].2;
    assert!((400.0..2000.0).contains(&ms(0)), "the slow click took {} ms", ms(0));
    assert!(
        ms(3) < 300.0 && ms(4) < 300.0,
        "ordinary clicks were slowed down: {} and {} ms",
        ms(3),
        ms(4)
    );
    assert!(
        (2900.0..4000.0).contains(&ms(5)) && times[5].1,
        "a hanging request is waited for 3 s at most: {} ms",
        ms(5)
    );
    let clicks: Vec<&Value> = records
        .iter()
        .flat_map(|s| s.as_array().into_iter().flatten())
        .filter(|r| r["action"].get("click").is_some())
        .collect();
    assert_eq!(clicks.len(), 6, "the click after the navigation ran: {records:#?}");
    let onward = clicks[5];
    let detail = onward["detail"].as_str().unwrap();
    assert!(
        onward["ok"] == true
            && detail.contains("clicked [")
            && detail.contains("Onward; a new page is loading; the URL is now http://")
            && detail.contains("/slow?ms=600"),
        "{onward}"
    );
    assert!(ms(6) < 300.0, "the navigating click waited {} ms", ms(6));
    let url = tab.url().unwrap();
    assert!(url.contains("/slow?ms=600"), "{url}");
    rig.done("network");
}

fn settle_script(req: &Value, call: usize) -> Reply {
    // Each click's change comes after its handler returned: the effect
    // reports it (and, being news, ends the answer there).
    let click = |label: &str| answer(json!([{"click": {"index": el(req, label)}}]));
    match call {
        0 => click("Later"),
        1 => click("Frame"),
        2 => click("Chain"),
        3 => click("Fetch later"),
        // A select that changes nothing: settled after one task.
        4 => answer(json!([
            {"select_option": {"index": el(req, "Size"), "options": ["Large"]}},
            {"select_option": {"index": el(req, "Size"), "options": ["Small"]}},
        ])),
        5 => answer(json!([{"done": {"text": "settle done", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// The settle wait ends as soon as the page is still, yet reads what a
/// handler changes a moment later: in a 0 ms timer, in the next frame, in
/// a task after that frame, and after a request it started in a later
/// task (the page-world script notes the `fetch`); a select on a still
/// page stays quick.
#[test]
fn actions_read_changes_made_in_a_later_task_or_frame() {
    let rig = Rig::start(settle_script);
    let (_tab, records) = rig
        .run("/actions/settle.html", "Press the buttons")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let all: Vec<&Value> =
        records.iter().flat_map(|s| s.as_array().into_iter().flatten()).collect();
    let detail_of = |button: &str| {
        all.iter()
            .map(|r| r["detail"].as_str().unwrap_or_default())
            .find(|d| d.starts_with("clicked [") && d.contains(&format!("> {button}")))
            .unwrap_or_else(|| panic!("no click on {button}: {all:#?}"))
            .to_owned()
    };
    for (button, change) in [
        ("Later", "Saved in a later task"),
        ("Frame", "Drawn in a frame"),
        ("Chain", "Second step after a frame"),
        ("Fetch later", "Fetched: slept 300 ms"),
    ] {
        let detail = detail_of(button);
        assert!(detail.contains(change), "the click on {button} reports {change:?}: {detail}");
    }
    let times = action_times(&rig);
    eprintln!("actions (name, ok, ms): {times:?}");
    let selects: Vec<f64> =
        times.iter().filter(|t| t.0 == "select_option" && t.1).map(|t| t.2).collect();
    assert_eq!(selects.len(), 2, "{times:?}");
    assert!(selects.iter().all(|ms| *ms < 300.0), "selects on a still page: {selects:?} ms");
}

fn datepicker_script(req: &Value, call: usize) -> Reply {
    match call {
        // A typed date: the calendar opens on focus, so the answer stops.
        0 => answer(json!([
            {"fill": {"index": el(req, "Check-in"), "text": "06/15/2030"}},
            {"click": {"index": el(req, "Check-out")}},
        ])),
        // Tab leaves the field (its calendar closes) for the next one,
        // whose calendar opens (on July 2030).
        1 => answer(json!([{"press": {"index": el(req, "Check-in"), "key": "Tab"}}])),
        // The calendar's own keys: PageDown is the next month. (Its
        // Prev/Next arrows are `<a>`s without `href` or pointer cursor,
        // which the element list does not offer.)
        2 => {
            sees(req, "July 2030");
            answer(json!([{"press": {"index": el(req, "Check-out"), "key": "PageDown"}}]))
        }
        // A day clicked in the open calendar.
        3 => {
            sees(req, "August 2030");
            answer(json!([{"click": {"index": el(req, "20")}}]))
        }
        4 => answer(json!([{"done": {"text": "booked", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// jQuery UI's datepicker (from npm): a filled date is the widget's date
/// (read back with its own `getDate`), and a day clicked in its open
/// calendar — listed as elements — is chosen.
#[test]
fn a_jquery_ui_datepicker_takes_a_typed_date_and_a_clicked_day() {
    let rig = Rig::start(datepicker_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/datepicker.html")).unwrap();
    let run = rig.run_in(&tab, "Book from June 15 to August 20, 2030");
    let page = tab
        .eval(
            "({checkin: widgetDate('checkin'), checkout: widgetDate('checkout'),
               typed: document.getElementById('checkout').value,
               stay: document.getElementById('stay').textContent,
               open: $('#ui-datepicker-div').is(':visible'), events: window.events,
               focused: document.hasFocus(), active: document.activeElement.id})",
        )
        .unwrap();
    eprintln!("page: {page:#}");
    let records = run.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(page["checkin"], "2030-06-15", "{page:#}");
    assert_eq!(page["checkout"], "2030-08-20", "{page:#}");
    assert_eq!(page["typed"], "08/20/2030", "{page:#}");
    assert_eq!(page["stay"], "stay: 2030-06-15 to 2030-08-20", "{page:#}");
    assert_eq!(page["open"], false, "the calendar closed after the pick: {page:#}");
    let events: Vec<String> = serde_json::from_value(page["events"].clone()).unwrap();
    assert!(events.contains(&"checkin:change".to_owned()), "{events:?}");
    assert!(events.contains(&"checkout:select".to_owned()), "{events:?}");
    let fill = record(&records, "fill", "06/15/2030").unwrap();
    assert!(fill["ok"] == true, "{fill}");
    assert!(
        fill["detail"].as_str().unwrap().contains("appeared: <div> Prev Next"),
        "the fill reports the calendar that opened: {fill}"
    );
    let tab_key = record(&records, "press", "Tab").unwrap();
    assert!(
        tab_key["detail"].as_str().unwrap().contains("July 2030"),
        "Tab opened the next field's calendar: {tab_key}"
    );
    let all = records.iter().map(Value::to_string).collect::<String>();
    assert_eq!(
        all.matches("\"click\"").count(),
        1,
        "the click after the calendar opened ran: {records:#?}"
    );
    rig.done("datepicker");
}

fn sortable_script(req: &Value, call: usize) -> Reply {
    match call {
        // Down past two items, then up to the top.
        0 => answer(json!([{"drag_and_drop": {"from": el(req, "Bravo"), "to": el(req, "Delta")}}])),
        1 => {
            sees(req, "order: alpha,charlie,delta,bravo,echo");
            answer(json!([{"drag_and_drop": {"from": el(req, "Echo"), "to": el(req, "Alpha")}}]))
        }
        2 => {
            sees(req, "order: echo,alpha,charlie,delta,bravo");
            answer(json!([{"done": {"text": "sorted", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A jQuery UI sortable list (from npm), which follows the mouse: an item
/// dragged onto another moves there (after it going down, before it going
/// up), and the list's own order says so.
#[test]
fn a_jquery_ui_sortable_list_is_reordered_by_dragging() {
    let rig = Rig::start(sortable_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/sortable.html")).unwrap();
    let run = rig.run_in(&tab, "Put Bravo after Delta, then Echo first");
    let page = tab
        .eval(
            "({order: $('#list').sortable('toArray'), updates: window.updates,
               dom: [...document.querySelectorAll('#list li')].map((li) => li.id),
               helper: document.querySelectorAll('.ui-sortable-helper, .ui-sortable-placeholder').length})",
        )
        .unwrap();
    eprintln!("page: {page:#}");
    let records = run.unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let want = json!(["echo", "alpha", "charlie", "delta", "bravo"]);
    assert_eq!(page["order"], want, "{page:#}");
    assert_eq!(page["dom"], want, "{page:#}");
    assert_eq!(page["updates"], 2, "one update per drag: {page:#}");
    assert_eq!(page["helper"], 0, "the drag ended: {page:#}");
    let drag = record(&records, "drag_and_drop", "").unwrap();
    assert!(drag["ok"] == true, "{drag}");
    rig.done("sortable");
}

// ---- Cross-origin frames, through the real agent ----

fn cross_origin_script(req: &Value, call: usize) -> Reply {
    match call {
        // The frame's elements are in the model's list like any other.
        0 => answer(json!([
            {"fill": {"index": el(req, "xo-input"), "text": "from the agent"}},
            {"click": {"index": el(req, "xo-button")}},
            {"click": {"index": el(req, "nested-button")}},
        ])),
        1 => answer(json!([{"done": {"text": "clicked in the frames", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn the_agent_fills_and_clicks_inside_cross_origin_frames() {
    let rig = Rig::start(cross_origin_script);
    let tab = rig.browser.new_page(&rig.fixtures.url("/observe/xo.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let records = rig
        .run_in(&tab, "Fill and click in the frame")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    for (name, needle) in [("fill", "from the agent"), ("click", "index")] {
        let r = record(&records, name, needle).unwrap();
        assert_eq!(r["ok"], json!(true), "{r:#}");
    }
    // The next observation, as the model got it, shows what the frames did:
    // read by the frames' own content scripts.
    let second = last_user_message(&rig.model.requests()[1]).unwrap_or_default();
    assert!(second.contains("xo-clicked"), "{second}");
    assert!(second.contains("nested-clicked"), "{second}");
    assert!(second.contains(r#"value="from the agent""#), "{second}");
    rig.done("the_agent_fills_and_clicks_inside_cross_origin_frames");
}

// ---- A secret in a cross-origin frame (a payment provider's iframe) ----

fn frame_secret_script(req: &Value, call: usize) -> Reply {
    let pin = el(req, "Card PIN");
    match call {
        // A secret allowed only on the top page is refused in the frame.
        0 => answer(json!([{"fill": {"index": pin, "text": "{{secret:top_pin}}"}}])),
        // One allowed on the frame's own origin goes in.
        1 => answer(json!([{"fill": {"index": pin, "text": "{{secret:frame_pin}}"}}])),
        2 => answer(json!([{"done": {"text": "PIN entered", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

#[test]
fn a_secret_is_filled_into_a_cross_origin_frame_only_when_allowed_on_the_frame_s_origin() {
    let rig = Rig::start(frame_secret_script);
    let top = rig.fixtures.url("/");
    let top = top.trim_end_matches('/');
    let frame = top.replace("127.0.0.1", "localhost");
    let secrets = json!({
        "top_pin": {"value": "top-pin-1111", "origins": [top]},
        "frame_pin": {"value": "frame-pin-4821", "origins": [frame]},
    });
    std::fs::create_dir_all(rig.browser.data_dir()).unwrap();
    std::fs::write(rig.browser.data_dir().join("secrets.json"), secrets.to_string()).unwrap();
    let tab = rig.browser.new_page(&rig.fixtures.url("/actions/xo-login.html")).unwrap();
    tab.wait_for("document.readyState === 'complete'", Duration::from_secs(10)).unwrap();
    let records = rig
        .run_in(&tab, "Enter my card PIN")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let refused = record(&records, "fill", "top_pin").unwrap();
    assert_eq!(refused["ok"], json!(false), "{refused:#}");
    let why = refused["detail"].as_str().unwrap_or_default();
    assert!(why.contains(&format!("may not be filled on {frame}")), "{why}");
    let filled = record(&records, "fill", "frame_pin").unwrap();
    assert_eq!(filled["ok"], json!(true), "{filled:#}");
    // The frame's own script saw the right value; the model only ever saw
    // the placeholder.
    let requests = rig.model.requests();
    let last = last_user_message(&requests[2]).unwrap_or_default();
    assert!(last.contains("PIN accepted."), "{last}");
    for req in &requests {
        let text = req.to_string();
        assert!(!text.contains("frame-pin-4821") && !text.contains("top-pin-1111"), "{text}");
    }
    rig.done(
        "a_secret_is_filled_into_a_cross_origin_frame_only_when_allowed_on_the_frame_s_origin",
    );
}

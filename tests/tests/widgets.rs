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

fn jqueryui_script(req: &Value, call: usize) -> Reply {
    match call {
        // Suggestions come 300 ms after typing: each its own element.
        0 => answer(json!([{"type": {"index": el(req, "City"), "text": "Pra"}}])),
        1 => answer(json!([{"click": {"index": el(req, "Prague")}}])),
        // The spinner's up arrow (an aria-hidden anchor, named by its class).
        2 => answer(json!([{"click": {"index": el(req, "spinner-up")}}])),
        // The date picker's Next.
        3 => answer(json!([{"click": {"index": el(req, "Next")}}])),
        // A sortable list's items, without a pointer cursor.
        4 => {
            answer(json!([{"drag_and_drop": {"from": el(req, "Charlie"), "to": el(req, "Alpha")}}]))
        }
        5 => {
            sees(req, "state: city=Prague guests=3 month=July order=charlie,alpha,bravo");
            answer(json!([{"done": {"text": "set", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// The small parts of real jQuery UI widgets are elements the agent uses:
/// autocomplete suggestions, a spinner's arrow, a date picker's Next, the
/// items of a sortable list.
#[test]
fn the_agent_uses_the_small_parts_of_jquery_ui_widgets() {
    let rig = Rig::start(jqueryui_script);
    let (tab, run) =
        rig.run("/observe/jqueryui.html", "Prague, 3 guests, next month, Charlie first").unwrap();
    let page = tab.eval("document.getElementById('state').textContent").unwrap();
    assert_eq!(page, "state: city=Prague guests=3 month=July order=charlie,alpha,bravo");
    assert!(record(&run, "drag_and_drop", "").unwrap()["ok"] == true);
    rig.done("jqueryui");
}

/// The number of the first element whose line starts with `prefix` after
/// its number (`<search`, `<option selected`): for fields named only by
/// their kind.
fn by_kind(req: &Value, prefix: &str) -> u32 {
    let text = last_user_message(req).unwrap_or_default();
    errand_e2e::model::elements(&text)
        .into_iter()
        .find(|(_, d)| d.starts_with(prefix))
        .unwrap_or_else(|| panic!("no element {prefix}… in:\n{text}"))
        .0
}

fn select2_script(req: &Value, call: usize) -> Reply {
    match call {
        // Select2's box (a `role=combobox` span over the hidden select).
        0 => answer(json!([{"click": {"index": el(req, "Choose a country")}}])),
        // Its dropdown, at the end of <body>: a search field and the
        // options, each an element with its full text.
        1 => {
            sees(req, "Czech Republic");
            answer(json!([{"type": {"index": by_kind(req, "<search"), "text": "Port"}}]))
        }
        2 => answer(json!([{"click": {"index": el(req, "Portugal")}}])),
        // The tags box: its inline search field opens the options.
        3 => answer(json!([{"click": {"index": el(req, "Search")}}])),
        4 => answer(json!([{"click": {"index": el(req, "Gift wrap")}}])),
        5 => answer(json!([{"click": {"index": el(req, "Search")}}])),
        6 => answer(json!([{"click": {"index": el(req, "Express delivery")}}])),
        7 => answer(json!([{"done": {"text": "set", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// Select2 (from npm): its own box, the search field and options of its
/// dropdown (attached at the end of `<body>`), and a tags box; judged by
/// Select2's own `$(el).val()`.
#[test]
fn the_agent_uses_select2() {
    let rig = Rig::start(select2_script);
    let (tab, _) = rig
        .run("/widgets/select2.html", "Ship to Portugal, tagged gift wrap and express delivery")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let val = tab.eval("[$('#country').val(), $('#tags').val()]").unwrap();
    assert_eq!(val, json!(["PT", ["gift", "express"]]));
    rig.done("select2");
}

/// The number of the first element whose line mentions `needle` (an icon
/// named by its class: `icon=flatpickr-next-month`).
fn by_text(req: &Value, needle: &str) -> u32 {
    let text = last_user_message(req).unwrap_or_default();
    errand_e2e::model::elements(&text)
        .into_iter()
        .find(|(_, d)| d.contains(needle))
        .unwrap_or_else(|| panic!("no element mentioning {needle:?} in:\n{text}"))
        .0
}

fn flatpickr_script(req: &Value, call: usize) -> Reply {
    match call {
        // A read-only field: its calendar opens on a click.
        0 => answer(json!([{"click": {"index": el(req, "Date")}}])),
        // The next-month arrow (a <span> holding only an <svg>).
        1 => {
            sees(req, "May 20, 2030");
            answer(json!([{"click": {"index": by_text(req, "next-month")}}]))
        }
        // The days, each named by its whole date.
        2 => answer(json!([{"click": {"index": el(req, "June 15, 2030")}}])),
        3 => answer(json!([{"click": {"index": el(req, "Reminder")}}])),
        4 => answer(json!([
            {"fill": {"index": el(req, "Hour"), "text": "18"}},
            {"fill": {"index": el(req, "Minute"), "text": "30"}},
        ])),
        5 => answer(json!([{"done": {"text": "booked", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// flatpickr (from npm): its calendar at the end of `<body>`, the month
/// arrow, a day, and the hour and minute of a time picker; judged by the
/// widget's `selectedDates`.
#[test]
fn the_agent_uses_flatpickr() {
    let rig = Rig::start(flatpickr_script);
    let (tab, _) = rig
        .run("/widgets/flatpickr.html", "Book June 15, 2030, reminder at 18:30")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let picked = tab.eval("picked()").unwrap();
    assert_eq!(picked[0], json!(["2030-06-15 00:00"]), "{picked}");
    assert!(picked[1][0].as_str().unwrap().ends_with(" 18:30"), "{picked}");
    rig.done("flatpickr");
}

fn sortable_script(req: &Value, call: usize) -> Reply {
    match call {
        // The items of a list that listens on the list itself.
        0 => answer(json!([{"drag_and_drop": {"from": el(req, "Outro"), "to": el(req, "Intro")}}])),
        // A list whose items move only by their handles: the handles are
        // elements of their own, named by their titles.
        1 => answer(json!([{"drag_and_drop": {
            "from": el(req, "Move Dishes"), "to": el(req, "Move Plants"),
        }}])),
        2 => answer(json!([{"done": {"text": "reordered", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// SortableJS (from npm): native drag and drop that starts on the next
/// tick after `dragstart`, and drag handles inside the items; judged by
/// the library's `toArray()`.
#[test]
fn the_agent_reorders_sortablejs_lists() {
    let rig = Rig::start(sortable_script);
    let (tab, run) = rig
        .run("/widgets/sortablejs.html", "Outro first; dishes after plants")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let orders = tab.eval("orders()").unwrap();
    assert_eq!(
        orders,
        json!([["outro", "intro", "ballad", "anthem"], ["laundry", "plants", "dishes"]]),
        "{run:#?}"
    );
    rig.done("sortablejs");
}

/// The number of the first element after the line that says `anchor`
/// whose line says `needle` (a row's `+` after the row's name).
fn after(req: &Value, anchor: &str, needle: &str) -> u32 {
    let text = last_user_message(req).unwrap_or_default();
    // In the page, not in the task.
    let page = text.find("# Current page").unwrap_or(0);
    let text = &text[page..];
    let from = text.find(anchor).unwrap_or_else(|| panic!("no {anchor:?} in:\n{text}"));
    errand_e2e::model::elements(&text[from..])
        .into_iter()
        .find(|(_, d)| d.contains(needle))
        .unwrap_or_else(|| panic!("no {needle:?} after {anchor:?} in:\n{text}"))
        .0
}

fn stepper_script(req: &Value, call: usize) -> Reply {
    match call {
        // A dish's + and − (spans with only a click listener), found after
        // the dish's name.
        0 => answer(json!([{"click": {"index": after(req, "Diavola", "+")}}])),
        1 => answer(json!([{"click": {"index": after(req, "Diavola", "+")}}])),
        2 => answer(json!([{"click": {"index": after(req, "Marinara", "−")}}])),
        3 => {
            sees(req, "Total: $34");
            sees(req, "value=\"3\"");
            answer(json!([{"done": {"text": "ordered", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A food menu's quantity steppers: − and + spans after each dish.
#[test]
fn the_agent_uses_quantity_steppers() {
    let rig = Rig::start(stepper_script);
    let (tab, _) = rig
        .run("/widgets/stepper.html", "Two more Diavola, one Marinara less")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let order = tab.eval("order()").unwrap();
    assert_eq!(order, json!({"margherita": 0, "diavola": 3, "marinara": 1}));
    rig.done("stepper");
}

fn portal_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => answer(json!([{"click": {"index": el(req, "Select…")}}])),
        // The options of a listbox rendered at the end of <body>.
        1 => {
            sees(req, "<listbox=Language>");
            answer(json!([{"click": {"index": el(req, "Deutsch")}}]))
        }
        // The second select, inside a panel that clips overflow.
        2 => answer(json!([{"click": {"index": el(req, "UTC")}}])),
        3 => answer(json!([{"click": {"index": el(req, "Europe/Prague")}}])),
        4 => {
            sees(req, "state: language=Deutsch timezone=Europe/Prague");
            answer(json!([{"done": {"text": "set", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// A React (from npm) listbox rendered with `createPortal` at the end of
/// `<body>`, far from its button in the DOM.
#[test]
fn the_agent_uses_a_listbox_in_a_portal() {
    let rig = Rig::start(portal_script);
    let (tab, _) = rig
        .run("/widgets/portal.html", "German, Prague time")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let state = tab.eval("document.getElementById('state').textContent").unwrap();
    assert_eq!(state, "state: language=Deutsch timezone=Europe/Prague");
    rig.done("portal");
}

fn bootstrap_datepicker_script(req: &Value, call: usize) -> Reply {
    match call {
        // The calendar opens on the field's focus, at the end of <body>.
        0 => answer(json!([{"click": {"index": el(req, "Departure")}}])),
        // Its » (a <th> the picker's delegated listener handles).
        1 => answer(json!([{"click": {"index": by_kind(req, "<th>»")}}])),
        // A day cell (a plain <td>).
        2 => answer(json!([{"click": {"index": by_kind(req, "<td>15")}}])),
        3 => answer(json!([{"done": {"text": "departure set", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// bootstrap-datepicker (from npm) through its calendar: the next-month
/// arrow and a day cell; judged by the widget's `getDate`.
#[test]
fn the_agent_picks_a_day_in_bootstrap_datepicker() {
    let rig = Rig::start(bootstrap_datepicker_script);
    let (tab, _) = rig
        .run("/actions/bootstrap-datepicker.html", "Depart on the 15th of next month")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let (got, want) = (
        tab.eval("widgetDate()").unwrap(),
        tab.eval(
            "(() => { const n = new Date(); const d = new Date(n.getFullYear(), n.getMonth() + 1, 15);
               return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-15`; })()",
        )
        .unwrap(),
    );
    assert_eq!(got, want);
    rig.done("bootstrap_datepicker");
}

fn react_select_script(req: &Value, call: usize) -> Reply {
    match call {
        // Typing filters the menu (a portal-less <div> listbox).
        0 => answer(json!([{"type": {"index": el(req, "Flavour"), "text": "pis"}}])),
        1 => answer(json!([{"click": {"index": el(req, "Pistachio")}}])),
        2 => answer(json!([{"click": {"index": el(req, "Toppings")}}])),
        3 => answer(json!([{"click": {"index": el(req, "Nuts")}}])),
        // The transparent input of a chosen box is still the box's element.
        4 => answer(json!([{"click": {"index": el(req, "Toppings")}}])),
        5 => answer(json!([{"click": {"index": el(req, "Hot fudge")}}])),
        // A chosen value's remove cross is an element (clicking it would
        // ask for the user's approval: "remove").
        6 => {
            sees(req, "<button=\"Remove Nuts\">");
            sees(req, "Pistachio");
            answer(json!([{"done": {"text": "ordered", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// react-select (from npm, bundled): a searchable select and a multi
/// select whose input turns transparent once a value is chosen; judged by
/// the hidden inputs react-select submits.
#[test]
fn the_agent_uses_react_select() {
    let rig = Rig::start(react_select_script);
    let (tab, _) = rig
        .run("/widgets/react-select.html", "Pistachio with nuts and hot fudge")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let chosen = tab.eval("chosen()").unwrap();
    assert_eq!(chosen, json!({"flavour": "pistachio", "toppings": "nuts,hot-fudge"}));
    rig.done("react_select");
}

fn mui_script(req: &Value, call: usize) -> Reply {
    match call {
        // Autocomplete: typing opens its listbox (a portal).
        0 => answer(json!([{"type": {"index": el(req, "City"), "text": "Br"}}])),
        1 => answer(json!([{"click": {"index": el(req, "Brussels")}}])),
        // Select: a div combobox whose menu is a portal.
        2 => answer(json!([{"click": {"index": el(req, "Size")}}])),
        3 => answer(json!([{"click": {"index": el(req, "Large")}}])),
        // DatePicker: its calendar button, the month arrow, a day.
        4 => answer(json!([{"click": {"index": by_text(req, "Choose date")}}])),
        5 => answer(json!([{"click": {"index": el(req, "Next month")}}])),
        6 => {
            sees(req, "June");
            answer(json!([{"click": {"index": by_kind(req, "<gridcell>15")}}]))
        }
        // A picker shown as a dialog asks for OK.
        7 if last_user_message(req).unwrap_or_default().contains("<button>OK") => {
            answer(json!([{"click": {"index": el(req, "OK")}}]))
        }
        7 | 8 => answer(json!([{"done": {"text": "set", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// MUI (from npm, bundled): Autocomplete, Select and DatePicker, each
/// popup in a portal; judged by what each widget's onChange received.
#[test]
fn the_agent_uses_mui() {
    let rig = Rig::start(mui_script);
    let (tab, _) = rig
        .run("/widgets/mui.html", "Brussels, large, arriving June 15, 2030")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let state = tab.eval("muiState").unwrap();
    assert_eq!(state, json!({"city": "Brussels", "size": "l", "date": "2030-06-15"}));
    rig.done("mui");
}

fn antd_script(req: &Value, call: usize) -> Reply {
    match call {
        // A read-only combobox input: a click opens the dropdown, a
        // virtual list of <div>s in a portal at the end of <body>.
        0 => answer(json!([{"click": {"index": el(req, "Fruit")}}])),
        1 => answer(json!([{"click": {"index": el(req, "Mango")}}])),
        2 => answer(json!([{"click": {"index": el(req, "Extras")}}])),
        3 => answer(json!([{"click": {"index": el(req, "Granola")}}])),
        // The dropdown of a multiple select stays open.
        4 => answer(json!([{"click": {"index": el(req, "Honey")}}])),
        5 => {
            sees(req, "<div>Mango");
            answer(json!([{"done": {"text": "set", "success": true}}]))
        }
        n => panic!("unexpected model call {n}"),
    }
}

/// antd's Select (from npm, bundled): single and multiple, options in a
/// virtual list in a portal; judged by what each onChange received.
#[test]
fn the_agent_uses_antd_select() {
    let rig = Rig::start(antd_script);
    let (tab, _) = rig
        .run("/widgets/antd.html", "Mango with granola and honey")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    let state = tab.eval("antdState").unwrap();
    assert_eq!(state, json!({"fruit": "mango", "extras": ["granola", "honey"]}));
    rig.done("antd");
}

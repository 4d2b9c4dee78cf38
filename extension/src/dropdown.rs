//! Selects as visible dropdowns.
//!
//! A native `<select>` opens an OS-drawn popup that never appears in a
//! screenshot. Once [`enable`]d, a mouse-down on a single-choice select (in
//! the document, in any open shadow root — found through the event's
//! composed path — and in same-origin iframes) opens a dropdown made of page
//! elements instead: placed under the select (above it when there is no room
//! below) and kept there on scroll and resize, styled like the select, one
//! `role=option` row per option (optgroups as headers, disabled options
//! greyed and not choosable, the selected one highlighted). Each row is an
//! element the observer lists, so the model clicks it like any other.
//! Keyboard: arrows move, Enter chooses, Escape closes, typing jumps to the
//! option starting with the typed letters. A click outside closes it.
//!
//! The real select stays the source of truth: choosing sets its
//! `selectedIndex` and fires `input` and `change`, as a person's choice
//! does; the dropdown is drawn from the select each time, and redrawn when
//! the page changes the select's options while it is open — keeping the row
//! of each option still there, so the element numbers the model was given
//! still name the same options. A dropdown whose select leaves the page is
//! removed.
//!
//! The listeners are delegated, one set per document, so selects added
//! later need nothing more. [`disable`] removes the dropdown and every
//! listener; nothing is written into the select itself.
//!
//! `multiple` selects (and those with `size` > 1) are drawn by the page
//! itself as list boxes, visible in screenshots: they are left as they are,
//! and `select_option` chooses several of their options directly.

use crate::proto;
use std::cell::RefCell;

use js_sys::Array;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{
    AddEventListenerOptions, Document, Element, Event, EventInit, HtmlElement, HtmlOptionElement,
    HtmlSelectElement, KeyboardEvent, MutationObserver, MutationObserverInit, Window,
};

use crate::dom;
use crate::text::{collapse, lower};

/// The highlight of the selected option (also what the screenshot test
/// looks for).
pub const SELECTED_BG: &str = "rgb(26, 115, 232)";
const ACTIVE_BG: &str = "rgb(232, 240, 254)";
/// The tallest dropdown, in CSS pixels.
const MAX_HEIGHT: f64 = 320.0;
/// Type-ahead letters typed within this many milliseconds join up.
const TYPE_AHEAD_MS: f64 = 800.0;

type Listener = Closure<dyn FnMut(Event)>;

/// One document's delegated listeners.
struct Installed {
    doc: Document,
    mousedown: Listener,
    click: Listener,
    keydown: Listener,
}

/// The open dropdown.
struct Open {
    select: HtmlSelectElement,
    panel: HtmlElement,
    window: Window,
    /// The option index the keyboard is on.
    active: i32,
    observer: MutationObserver,
    _observed: Closure<dyn FnMut(Array, MutationObserver)>,
    reposition: Listener,
    typed: String,
    typed_at: f64,
    /// What the rows were drawn from, to redraw only when it changed.
    drawn: String,
    /// The row drawn for each option. A redraw keeps the row of an option
    /// still there (updated), so the element numbers the model was given
    /// stay valid when the page changes the options under it.
    rows: Vec<(HtmlOptionElement, Element)>,
}

#[derive(Default)]
struct State {
    installed: Vec<Installed>,
    open: Option<Open>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn capture() -> AddEventListenerOptions {
    let o = AddEventListenerOptions::new();
    o.set_capture(true);
    o
}

/// Turns the dropdowns on in the page and its same-origin iframes (again
/// after navigation inside iframes: documents already set up are skipped).
pub fn enable() {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let mut docs = vec![doc.clone()];
    if let Ok(frames) = proto::query_selector_all(&doc, "iframe") {
        for i in 0..frames.length() {
            if let Some(d) = frames
                .item(i)
                .and_then(|f| f.unchecked_into::<web_sys::HtmlIFrameElement>().content_document())
            {
                docs.push(d);
            }
        }
    }
    for d in docs {
        install(&d);
    }
    sweep();
}

fn install(doc: &Document) {
    let known = STATE.with(|s| s.borrow().installed.iter().any(|i| i.doc == *doc));
    if known {
        return;
    }
    let mousedown = Closure::<dyn FnMut(Event)>::new(on_mousedown);
    let click = Closure::<dyn FnMut(Event)>::new(on_click);
    let keydown = Closure::<dyn FnMut(Event)>::new(on_keydown);
    let opts = capture();
    for (kind, f) in [("mousedown", &mousedown), ("click", &click), ("keydown", &keydown)] {
        let _ = proto::add_event_listener(&doc, kind, f.as_ref().unchecked_ref(), &opts);
    }
    STATE.with(|s| {
        s.borrow_mut().installed.push(Installed { doc: doc.clone(), mousedown, click, keydown })
    });
}

/// Removes the dropdown and every listener: the page is as it was.
pub fn disable() {
    close();
    let installed = STATE.with(|s| std::mem::take(&mut s.borrow_mut().installed));
    for i in installed {
        for (kind, f) in [("mousedown", &i.mousedown), ("click", &i.click), ("keydown", &i.keydown)]
        {
            let _ = proto::remove_event_listener(&i.doc, kind, f.as_ref().unchecked_ref(), true);
        }
    }
}

/// Removes an orphaned dropdown (its select left the page) and redraws an
/// open one from its select (a page script may have changed it).
pub fn sweep() {
    let select = STATE.with(|s| s.borrow().open.as_ref().map(|o| o.select.clone()));
    if let Some(select) = select {
        if proto::is_connected(&select) {
            render();
        } else {
            close();
        }
    }
}

/// The page changed while a dropdown is open: close it when its select
/// left the page, redraw it when the select itself changed (our own
/// redrawing is ignored).
fn on_mutations(records: &Array) {
    let Some((select, panel)) =
        STATE.with(|s| s.borrow().open.as_ref().map(|o| (o.select.clone(), o.panel.clone())))
    else {
        return;
    };
    if !proto::is_connected(&select) {
        close();
        return;
    }
    let el: &Element = select.as_ref();
    let touches_select = records.iter().any(|r| {
        let r: web_sys::MutationRecord = r.unchecked_into();
        r.target().is_some_and(|t| {
            let ours = proto::contains(&panel, Some(&t));
            !ours && proto::contains(&el, Some(&t))
        })
    });
    if touches_select {
        render();
    }
}

/// Brings the dropdown of `select` up to date when it is the open one.
pub fn refresh(select: &Element) {
    let same = STATE.with(|s| {
        s.borrow().open.as_ref().is_some_and(|o| {
            let e: &Element = o.select.as_ref();
            e == select
        })
    });
    if same {
        render();
    }
}

/// Whether a select opens a popup (the ones rewritten).
fn is_popup(select: &HtmlSelectElement) -> bool {
    !select.multiple() && select.size() <= 1
}

/// The first element of the event's composed path (inside shadow roots).
fn origin(e: &Event) -> Option<Element> {
    e.composed_path()
        .iter()
        .find(|t| {
            t.is_object()
                && js_sys::Reflect::get(t, &"localName".into()).is_ok_and(|n| n.is_string())
        })
        .map(|t| t.unchecked_into())
}

/// The select on the event's path, if it is one that opens a popup.
fn select_on_path(e: &Event) -> Option<HtmlSelectElement> {
    for t in e.composed_path().iter().take(4) {
        let name = js_sys::Reflect::get(&t, &"localName".into()).ok().and_then(|n| n.as_string());
        if name.as_deref() == Some("select") {
            let s: HtmlSelectElement = t.unchecked_into();
            return (is_popup(&s) && !s.disabled()).then_some(s);
        }
    }
    None
}

fn in_panel(el: &Element) -> bool {
    STATE.with(|s| s.borrow().open.as_ref().is_some_and(|o| proto::contains(&o.panel, Some(el))))
}

fn on_mousedown(e: Event) {
    let Some(first) = origin(&e) else { return };
    if in_panel(&first) {
        // Keep the focus on the select.
        e.prevent_default();
        return;
    }
    if let Some(select) = select_on_path(&e) {
        // No native popup: ours instead.
        e.prevent_default();
        crate::focus::focus(select.as_ref());
        let was_open = STATE.with(|s| s.borrow().open.as_ref().is_some_and(|o| o.select == select));
        close();
        if !was_open {
            open(select);
        }
        return;
    }
    close();
}

fn on_click(e: Event) {
    let Some(first) = origin(&e) else { return };
    if !in_panel(&first) {
        return;
    }
    let row = proto::closest(&first, "[data-errand-option]").ok().flatten();
    let Some(i) = row
        .and_then(|r| proto::get_attribute(&r, "data-errand-option"))
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return;
    };
    choose(i);
}

fn on_keydown(e: Event) {
    let is_open = STATE.with(|s| s.borrow().open.is_some());
    if !is_open {
        return;
    }
    let k: &KeyboardEvent = e.unchecked_ref();
    let key = k.key();
    match key.as_str() {
        "ArrowDown" | "ArrowUp" | "Home" | "End" | "PageDown" | "PageUp" => {
            e.prevent_default();
            e.stop_propagation();
            let step = match key.as_str() {
                "ArrowDown" => 1,
                "ArrowUp" => -1,
                "PageDown" | "End" => 1000,
                _ => -1000,
            };
            move_active(step);
        }
        "Enter" | " " => {
            e.prevent_default();
            e.stop_propagation();
            let active = STATE.with(|s| s.borrow().open.as_ref().map(|o| o.active));
            if let Some(i) = active {
                choose(i);
            }
        }
        "Escape" | "Tab" => {
            if key == "Escape" {
                e.prevent_default();
                e.stop_propagation();
            }
            close();
        }
        _ if key.chars().count() == 1 && !k.ctrl_key() && !k.meta_key() && !k.alt_key() => {
            e.prevent_default();
            e.stop_propagation();
            type_ahead(&key);
        }
        _ => {}
    }
}

/// Whether option `i` can be chosen.
fn choosable(select: &HtmlSelectElement, i: i32) -> bool {
    select.item(i as u32).is_some_and(|o| {
        let o: &HtmlOptionElement = o.unchecked_ref();
        !o.disabled()
            && !proto::parent_element(&o).is_some_and(|p| {
                proto::local_name(&p) == "optgroup" && proto::has_attribute(&p, "disabled")
            })
    })
}

fn move_active(step: i32) {
    let Some((select, active)) =
        STATE.with(|s| s.borrow().open.as_ref().map(|o| (o.select.clone(), o.active)))
    else {
        return;
    };
    let n = select.length() as i32;
    if n == 0 {
        return;
    }
    let dir = step.signum();
    let mut target = (active + step).clamp(0, n - 1);
    while !choosable(&select, target) {
        target += if step.abs() > 1 { -dir } else { dir };
        if target < 0 || target >= n {
            return;
        }
    }
    STATE.with(|s| {
        if let Some(o) = s.borrow_mut().open.as_mut() {
            o.active = target;
        }
    });
    render();
}

fn type_ahead(key: &str) {
    let now = js_sys::Date::now();
    let Some((select, prefix)) = STATE.with(|s| {
        let mut st = s.borrow_mut();
        let o = st.open.as_mut()?;
        if now - o.typed_at > TYPE_AHEAD_MS {
            o.typed.clear();
        }
        o.typed.push_str(&lower(&key));
        o.typed_at = now;
        Some((o.select.clone(), o.typed.clone()))
    }) else {
        return;
    };
    let found = (0..select.length() as i32).find(|i| {
        choosable(&select, *i)
            && select.item(*i as u32).is_some_and(|o| {
                lower(&collapse(&o.unchecked_ref::<HtmlOptionElement>().text()))
                    .starts_with(&prefix)
            })
    });
    if let Some(i) = found {
        STATE.with(|s| {
            if let Some(o) = s.borrow_mut().open.as_mut() {
                o.active = i;
            }
        });
        render();
    }
}

/// Chooses option `i` of the open select, as a person does, and closes.
fn choose(i: i32) {
    let Some(select) = STATE.with(|s| s.borrow().open.as_ref().map(|o| o.select.clone())) else {
        return;
    };
    if !choosable(&select, i) {
        return;
    }
    close();
    crate::focus::focus(select.as_ref());
    if select.selected_index() != i {
        select.set_selected_index(i);
        for kind in ["input", "change"] {
            let init = EventInit::new();
            init.set_bubbles(true);
            init.set_composed(kind == "input");
            if let Ok(ev) = Event::new_with_event_init_dict(kind, &init) {
                let _ = proto::dispatch_event(&select, &ev);
            }
        }
    }
}

/// Opens the dropdown of `select`.
fn open(select: HtmlSelectElement) {
    let el: &Element = select.as_ref();
    let Some(doc) = proto::owner_document(&el) else {
        return;
    };
    let Some(window) = dom::window_of(el) else {
        return;
    };
    let Ok(panel) = proto::create_element(&doc, "div") else {
        return;
    };
    let panel: HtmlElement = panel.unchecked_into();
    let _ = proto::set_attribute(&panel, "role", "listbox");
    let _ = proto::set_attribute(&panel, "data-errand-dropdown", "");
    let label = dom::field_label(el)
        .or_else(|| proto::get_attribute(&el, "aria-label"))
        .or_else(|| proto::get_attribute(&el, "name"))
        .unwrap_or_else(|| "options".to_owned());
    let _ = proto::set_attribute(&panel, "aria-label", &label);
    let host = proto::body(&doc).map(Element::from).or_else(|| proto::document_element(&doc));
    let Some(host) = host else { return };
    let _ = proto::append_child(&host, &panel);

    let observed = Closure::<dyn FnMut(Array, MutationObserver)>::new(
        |records: Array, _: MutationObserver| on_mutations(&records),
    );
    let Ok(observer) = MutationObserver::new(observed.as_ref().unchecked_ref()) else {
        panel.remove();
        return;
    };
    let init = MutationObserverInit::new();
    init.set_child_list(true);
    init.set_subtree(true);
    init.set_attributes(true);
    init.set_character_data(true);
    // The select's own changes (options added, relabelled, disabled)…
    let _ = observer.observe_with_options(el, &init);
    // …and its removal from the page.
    if let Some(root) = proto::document_element(&doc) {
        let removal = MutationObserverInit::new();
        removal.set_child_list(true);
        removal.set_subtree(true);
        let _ = observer.observe_with_options(&root, &removal);
    }
    let reposition = Closure::<dyn FnMut(Event)>::new(|e: Event| {
        // Scrolling inside the dropdown itself moves nothing.
        if origin(&e).is_some_and(|t| in_panel(&t)) {
            return;
        }
        place();
    });
    let opts = capture();
    for kind in ["scroll", "resize"] {
        let _ = window.add_event_listener_with_callback_and_add_event_listener_options(
            kind,
            reposition.as_ref().unchecked_ref(),
            &opts,
        );
    }
    let active = select.selected_index().max(0);
    STATE.with(|s| {
        s.borrow_mut().open = Some(Open {
            select,
            panel,
            window,
            active,
            observer,
            _observed: observed,
            reposition,
            typed: String::new(),
            typed_at: 0.0,
            drawn: String::new(),
            rows: Vec::new(),
        })
    });
    render();
}

/// Closes the open dropdown, leaving nothing behind.
pub fn close() {
    let Some(o) = STATE.with(|s| s.borrow_mut().open.take()) else {
        return;
    };
    o.observer.disconnect();
    for kind in ["scroll", "resize"] {
        let _ = o.window.remove_event_listener_with_callback_and_bool(
            kind,
            o.reposition.as_ref().unchecked_ref(),
            true,
        );
    }
    o.panel.remove();
}

/// CSS of the select worth copying onto the dropdown.
fn select_style(select: &Element, window: &Window) -> String {
    let Some(cs) = window.get_computed_style(select).ok().flatten() else {
        return String::new();
    };
    let get = |p: &str| cs.get_property_value(p).unwrap_or_default();
    format!(
        "font-family: {} !important; font-size: {} !important; color: {} !important;",
        get("font-family"),
        get("font-size"),
        get("color")
    )
}

/// Draws the rows from the select (its current options and choice).
fn render() {
    let Some((select, panel, window, active)) = STATE.with(|s| {
        s.borrow()
            .open
            .as_ref()
            .map(|o| (o.select.clone(), o.panel.clone(), o.window.clone(), o.active))
    }) else {
        return;
    };
    let el: &Element = select.as_ref();
    let Some(doc) = proto::owner_document(&el) else {
        return;
    };
    let base = select_style(el, &window);
    let drawn = format!("{active}|{}|{}|{base}", select.selected_index(), el.inner_html());
    let same = STATE.with(|s| {
        let mut st = s.borrow_mut();
        let Some(o) = st.open.as_mut() else {
            return true;
        };
        let same = o.drawn == drawn;
        o.drawn = drawn;
        same
    });
    if same {
        place();
        return;
    }
    let _ = proto::set_attribute(
        &panel,
        "style",
        &format!(
            "all: initial !important; position: fixed !important; z-index: 2147483646 !important; \
             box-sizing: border-box !important; display: block !important; \
             background: #fff !important; border: 1px solid #767676 !important; \
             border-radius: 4px !important; box-shadow: 0 4px 12px rgba(0,0,0,.25) !important; \
             overflow-y: auto !important; max-height: {MAX_HEIGHT}px !important; \
             padding: 2px 0 !important; line-height: 1.3 !important; {base}"
        ),
    );
    let old_rows = STATE.with(|s| {
        s.borrow_mut().open.as_mut().map(|o| std::mem::take(&mut o.rows)).unwrap_or_default()
    });
    let mut rows = Vec::new();
    proto::set_text_content(&panel, None);
    let selected = select.selected_index();
    let mut group: Option<Element> = None;
    for i in 0..select.length() {
        let Some(o) = select.item(i) else { continue };
        let o: HtmlOptionElement = o.unchecked_into();
        let parent = proto::parent_element(&o).filter(|p| proto::local_name(&p) == "optgroup");
        if parent != group {
            if let Some(g) = &parent {
                if let Ok(h) = proto::create_element(&doc, "div") {
                    let _ = proto::set_attribute(&h, "role", "presentation");
                    let _ = proto::set_attribute(
                        &h,
                        "style",
                        "all: initial !important; display: block !important; font: inherit !important; \
                         font-weight: bold !important; padding: 4px 8px 2px !important; color: #444 !important;",
                    );
                    proto::set_text_content(
                        &h,
                        Some(&proto::get_attribute(&g, "label").unwrap_or_default()),
                    );
                    let _ = proto::append_child(&panel, &h);
                }
            }
            group = parent.clone();
        }
        let kept = old_rows.iter().find(|(opt, _)| *opt == o).map(|(_, r)| r.clone());
        let Some(row) = kept.or_else(|| proto::create_element(&doc, "div").ok()) else {
            continue;
        };
        let i = i as i32;
        let disabled = !choosable(&select, i);
        let is_selected = i == selected;
        let _ = proto::set_attribute(&row, "role", "option");
        let _ = proto::set_attribute(&row, "data-errand-option", &i.to_string());
        let _ =
            proto::set_attribute(&row, "aria-selected", if is_selected { "true" } else { "false" });
        if disabled {
            let _ = proto::set_attribute(&row, "aria-disabled", "true");
        } else {
            let _ = proto::remove_attribute(&row, "aria-disabled");
        }
        let (bg, fg) = if is_selected {
            (SELECTED_BG, "#fff")
        } else if i == active {
            (ACTIVE_BG, "inherit")
        } else {
            ("transparent", "inherit")
        };
        let fg = if disabled { "#9a9a9a" } else { fg };
        let indent = if group.is_some() { 20 } else { 8 };
        let _ = proto::set_attribute(
            &row,
            "style",
            &format!(
                "all: initial !important; display: block !important; font: inherit !important; \
                 white-space: nowrap !important; padding: 4px 8px 4px {indent}px !important; \
                 background: {bg} !important; color: {fg} !important; \
                 cursor: {} !important;",
                if disabled { "default" } else { "pointer" }
            ),
        );
        let label = collapse(&o.label());
        if proto::text_content(&row).as_deref() != Some(label.as_str()) {
            proto::set_text_content(&row, Some(&label));
        }
        let _ = proto::append_child(&panel, &row);
        rows.push((o, row));
    }
    STATE.with(|s| {
        if let Some(o) = s.borrow_mut().open.as_mut() {
            o.rows = rows;
        }
    });
    place();
    // Keep the keyboard's option in view.
    if let Ok(Some(row)) =
        proto::query_selector(&panel, &format!("[data-errand-option=\"{active}\"]"))
    {
        let r = proto::get_bounding_client_rect(&row);
        let p = proto::get_bounding_client_rect(&panel);
        if r.bottom() > p.bottom() || r.top() < p.top() {
            proto::set_scroll_top(
                &panel,
                proto::scroll_top(&panel) + (r.top() - p.top()) as i32 - (p.height() / 2.0) as i32,
            );
        }
    }
}

/// Puts the dropdown under its select, or above when there is no room.
fn place() {
    let Some((select, panel, window)) = STATE.with(|s| {
        s.borrow().open.as_ref().map(|o| (o.select.clone(), o.panel.clone(), o.window.clone()))
    }) else {
        return;
    };
    let r = proto::get_bounding_client_rect(&select);
    let vh = window.inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let vw = window.inner_width().ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let style = panel.style();
    let _ =
        style.set_property_with_priority("min-width", &crate::marks::px(r.width()), "important");
    let h = f64::from(proto::scroll_height(&panel)).min(MAX_HEIGHT) + 2.0;
    let below = vh - r.bottom();
    let top = if below < h && r.top() > below { (r.top() - h).max(0.0) } else { r.bottom() };
    let w = f64::from(panel.offset_width());
    let left = r.left().min(vw - w).max(0.0);
    let _ = style.set_property_with_priority("top", &crate::marks::px(top), "important");
    let _ = style.set_property_with_priority("left", &crate::marks::px(left), "important");
    let room = if top >= r.bottom() { below } else { r.top() };
    let _ = style.set_property_with_priority(
        "max-height",
        &crate::marks::px(room.clamp(60.0, MAX_HEIGHT)),
        "important",
    );
}

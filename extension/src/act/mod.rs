//! Carrying out page actions: the whole in-page vocabulary (click,
//! dblclick, hover, fill, type, clear, select_option, check, uncheck,
//! press, focus, scroll, drag_and_drop, extract, go_back, go_forward).
//! Every action runs inside a [`Watch`]: it waits for the page to settle by
//! watching its mutations, and reports what changed.
//!
//! A click is the sequence a real mouse makes — pointer and mouse events
//! with the right coordinates, buttons and modifier keys, focus on
//! mouse-down — dispatched on whatever is on top at the element's centre
//! when that belongs to the element. A fill goes through the native value
//! setter, so frameworks that track the value (React) see the change.

use crate::proto;
use errand_protocol::{Action, ClickButton, Effect, ErrorCode, Modifier, ScrollDirection};
use js_sys::{Function, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    Element, Event, EventInit, HtmlElement, HtmlInputElement, HtmlOptionElement, HtmlSelectElement,
    HtmlTextAreaElement, InputEvent, InputEventInit, MouseEvent, MouseEventInit, PointerEvent,
    PointerEventInit, ScrollBehavior, ScrollIntoViewOptions, ScrollLogicalPosition,
    ScrollToOptions, Window,
};

use crate::dom::{self, attr};
use crate::text::{self, collapse, truncate};
use crate::watch::Watch;
use crate::{Fail, focus, keys, registry};

/// Carries out one page action, watching the page from just before it
/// until the page is still again, and reports what it did and what changed.
///
/// With `guard.only_on`, the action runs only when the element's document
/// has that origin (the host filled in a secret checked against it); with
/// `guard.secret_field`, only when the element is a secret field.
/// `guard.secrets` are remembered (in this instance's memory) so that a
/// field showing one is blanked before a screenshot.
pub async fn act(action: Action, guard: &Guard) -> Result<Effect, Fail> {
    let target = action.element().and_then(|i| registry::element(i).ok());
    if let Some(origin) = guard.only_on.as_deref() {
        check_origin(target.as_ref(), origin)?;
    }
    if guard.secret_field {
        check_secret_field(target.as_ref())?;
    }
    crate::marks::remember_secrets(&guard.secrets);
    crate::dialogs::arm(&action.dialog());
    let watch = Watch::start(target.as_ref());
    let done = run(action, &watch).await;
    let mut effect = effect_of(watch, target.as_ref(), done).await;
    // Between actions, dialogs get the default answers.
    crate::dialogs::arm_default();
    let lost = changed_fills(target.as_ref());
    match &mut effect {
        Ok(e) => e.reverted = lost,
        Err(f) if !lost.is_empty() => {
            f.message.push_str("; earlier fills lost: ");
            f.message.push_str(&lost.join(" | "));
        }
        Err(_) => {}
    }
    effect
}

/// Refuses unless `el` lives in a document of `origin`.
fn check_origin(el: Option<&Element>, origin: &str) -> Result<(), Fail> {
    let found = el
        .and_then(|e| proto::owner_document(&e))
        .and_then(|d| d.location())
        .and_then(|l| l.origin().ok());
    match found {
        Some(o) if o.eq_ignore_ascii_case(origin) => Ok(()),
        other => Err(Fail {
            code: ErrorCode::ActionFailed,
            message: format!(
                "not done: the field is on {}, not on {origin}, the only site this value may go to",
                other.as_deref().unwrap_or("no page")
            ),
        }),
    }
}

/// What the host asks the page to check before an action carrying secrets
/// (see `PageCommand::Act`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Guard {
    pub only_on: Option<String>,
    pub secret_field: bool,
    pub secrets: Vec<String>,
}

/// Refuses unless `el` is a secret field as it is now (the page may have
/// changed its type since it was observed): a password input, or an input
/// whose `autocomplete` says password, one-time code or card data.
fn check_secret_field(el: Option<&Element>) -> Result<(), Fail> {
    let secret = el.is_some_and(|el| {
        proto::local_name(&el) == "input"
            && crate::marks::is_secret_field(
                proto::get_attribute(&el, "type").as_deref(),
                proto::get_attribute(&el, "autocomplete").as_deref(),
            )
    });
    if secret {
        return Ok(());
    }
    let what = match el {
        Some(el) if proto::local_name(&el) == "input" => {
            let kind = proto::get_attribute(&el, "type").unwrap_or_else(|| "text".to_owned());
            format!("a {} input", collapse(&kind).to_lowercase())
        }
        Some(el) => format!("a <{}>", proto::local_name(&el)),
        None => "gone".to_owned(),
    };
    Err(Fail {
        code: ErrorCode::ActionFailed,
        message: format!("not done: the field is {what}, not a secret field"),
    })
}

/// Waits for the page to settle and adds what changed to what the action
/// reported.
async fn effect_of(
    watch: Watch,
    target: Option<&Element>,
    done: Result<Done, Fail>,
) -> Result<Effect, Fail> {
    // Settle even after a failure, so the next command sees a still page.
    watch.settle().await;
    let changes = watch.finish(target);
    let dialogs = crate::dialogs::take();
    let Done { mut summary, value } = done.map_err(|mut f| {
        for d in &dialogs {
            f.message.push_str("; ");
            f.message.push_str(&d.describe());
        }
        f
    })?;
    if changes.loading.is_some() {
        // The reply leaves before the new page is there.
        summary.push_str("; a new page is loading");
    }
    Ok(Effect {
        summary,
        url: changes.url,
        url_changed: changes.url_changed,
        value,
        page_changed: changes.url_changed || changes.dom_changed,
        appeared: changes.appeared,
        invalid: changes.invalid,
        new_tab: None,
        dialogs,
        reverted: Vec::new(),
    })
}

/// Puts files (read by the host from the folder the user allowed) into the
/// file input numbered `index`, as choosing them in the file dialog does:
/// `input.files` from a `DataTransfer`, then `input` and `change`.
pub async fn upload(index: u32, files: Vec<errand_protocol::FilePayload>) -> Result<Effect, Fail> {
    let target = registry::element(index).ok();
    let watch = Watch::start(target.as_ref());
    let done = set_files(index, &files);
    effect_of(watch, target.as_ref(), done).await
}

fn set_files(index: u32, files: &[errand_protocol::FilePayload]) -> Result<Done, Fail> {
    let shown = usable(index)?;
    let who = describe(index, &shown);
    let el = file_input_behind(&shown).or_else(|| file_input_opened_by(&shown)).ok_or_else(|| {
        failed(&format!(
            "{who} is not a file input, and neither holds nor opens one: use the file input or the control that opens the file chooser"
        ))
    })?;
    if el != shown && dom::is_disabled(&el, "input") {
        return Err(failed(&format!("the file input behind {who} is disabled")));
    }
    let input: &HtmlInputElement = el.unchecked_ref();
    if files.len() > 1 && !input.multiple() {
        return Err(failed(&format!("{who} takes one file, not {}", files.len())));
    }
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let data = web_sys::DataTransfer::new().map_err(|e| failed(&js_text(&e)))?;
    for f in files {
        let binary = window.atob(&f.base64).map_err(|e| failed(&js_text(&e)))?;
        let bytes: Vec<u8> = binary.chars().map(|c| c as u32 as u8).collect();
        let array = js_sys::Uint8Array::from(bytes.as_slice());
        let parts = js_sys::Array::of1(&array);
        let bag = web_sys::FilePropertyBag::new();
        bag.set_type(&f.mime);
        let file = web_sys::File::new_with_u8_array_sequence_and_options(&parts, &f.name, &bag)
            .map_err(|e| failed(&js_text(&e)))?;
        data.items().add_with_file(&file).map_err(|e| failed(&js_text(&e)))?;
    }
    input.set_files(data.files().as_ref());
    for kind in ["input", "change"] {
        let init = EventInit::new();
        init.set_bubbles(true);
        init.set_composed(kind == "input");
        if let Ok(e) = Event::new_with_event_init_dict(kind, &init) {
            let _ = proto::dispatch_event(&el, &e);
        }
    }
    let names: Vec<String> = input
        .files()
        .map(|list| (0..list.length()).filter_map(|i| list.item(i)).map(|f| f.name()).collect())
        .unwrap_or_default();
    let wanted: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    if names != wanted {
        return Err(failed(&format!("{who} holds {names:?} after the upload, not {wanted:?}")));
    }
    Ok(Done {
        summary: format!("put {} into {who}", names.join(", ")),
        value: Some(names.join(", ")),
    })
}

fn is_file_input(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && el.unchecked_ref::<HtmlInputElement>().type_().eq_ignore_ascii_case("file")
}

/// The file input a person reaches through `el`, the control they see: the
/// element itself, the input a `<label>` is for, the one file input inside
/// it (a hidden input in an "Upload" button), or the one file input of the
/// smallest clickable wrapper around it (a drop zone whose input is a
/// sibling, an `opacity: 0` input laid over a "Choose a file" area).
fn file_input_behind(el: &Element) -> Option<Element> {
    if is_file_input(el) {
        return Some(el.clone());
    }
    if proto::local_name(&el) == "label" {
        let control = el.unchecked_ref::<web_sys::HtmlLabelElement>().control();
        if let Some(c) = control.map(|c| c.unchecked_into::<Element>()).filter(is_file_input) {
            return Some(c);
        }
    }
    let only_one = |root: &Element| -> Option<Element> {
        let list = proto::query_selector_all(&root, "input[type=file i]").ok()?;
        (list.length() == 1).then(|| list.item(0)).flatten().map(|n| n.unchecked_into())
    };
    if let Some(inner) = only_one(el) {
        return Some(inner);
    }
    // Up to three wrappers out, stopping at a form or the body: the first
    // one holding exactly one file input.
    let mut node = dom::flat_parent(el);
    for _ in 0..3 {
        let n = node?;
        if matches!(proto::local_name(&n).as_str(), "body" | "html" | "form") {
            return None;
        }
        if let Some(inner) = only_one(&n) {
            return Some(inner);
        }
        node = dom::flat_parent(&n);
    }
    None
}

/// The file input whose chooser a click on `el` opens (a button whose
/// handler calls `input.click()` on an input elsewhere): the click is made
/// while the main-world relay (`extension/main-world.js`) turns a file
/// input's `click()` / `showPicker()` into an `errand:chooser` event on it.
fn file_input_opened_by(el: &Element) -> Option<Element> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::closure::Closure;
    let doc = proto::owner_document(&el)?;
    let found: Rc<RefCell<Option<Element>>> = Rc::new(RefCell::new(None));
    let sink = found.clone();
    let listener = Closure::<dyn FnMut(Event)>::new(move |e: Event| {
        // An element of a frame's realm is no `Element` of ours: by node type.
        let first = e.composed_path().get(0);
        let is_element = Reflect::get(&first, &"nodeType".into())
            .ok()
            .and_then(|t| t.as_f64())
            .is_some_and(|t| t == 1.0);
        if is_element {
            let input: Element = first.unchecked_into();
            if is_file_input(&input) {
                sink.borrow_mut().get_or_insert(input);
            }
        }
    });
    let options = web_sys::AddEventListenerOptions::new();
    options.set_capture(true);
    let _ = doc.add_event_listener_with_callback_and_add_event_listener_options(
        "errand:chooser",
        listener.as_ref().unchecked_ref(),
        &options,
    );
    let ask = |on: &str| {
        let init = web_sys::CustomEventInit::new();
        init.set_detail(&JsValue::from_str(on));
        if let Ok(e) = web_sys::CustomEvent::new_with_event_init_dict("errand:chooser", &init) {
            let _ = proto::dispatch_event(&doc, &e);
        }
    };
    ask("on");
    el.unchecked_ref::<HtmlElement>().click();
    ask("off");
    let _ = doc.remove_event_listener_with_callback_and_bool(
        "errand:chooser",
        listener.as_ref().unchecked_ref(),
        true,
    );
    found.borrow_mut().take()
}

/// What an action reports before the page's changes are added.
pub struct Done {
    pub summary: String,
    pub value: Option<String>,
}

impl From<String> for Done {
    fn from(summary: String) -> Done {
        Done { summary, value: None }
    }
}

async fn run(action: Action, watch: &Watch) -> Result<Done, Fail> {
    Ok(match action {
        Action::Click { index, button, modifiers, .. } => {
            click(index, button, &modifiers, 1, watch).await?.into()
        }
        Action::DblClick { index, button, modifiers } => {
            click(index, button, &modifiers, 2, watch).await?.into()
        }
        Action::Hover { index } => hover(index)?.into(),
        Action::Fill { index, text } => fill(index, &text, watch).await?,
        Action::Type { index, text, enter, clear } => {
            type_into(index, &text, enter, clear, watch).await?
        }
        Action::Clear { index } => fill(index, "", watch).await?,
        Action::SelectOption { index, options } => {
            let el = usable(index)?;
            crate::selects::select_options(index, &el, &options)?
        }
        Action::Check { index } => check(index, true, watch).await?.into(),
        Action::Uncheck { index } => check(index, false, watch).await?.into(),
        Action::Press { key, index, .. } => press(&key, index)?.into(),
        Action::Focus { index } => {
            let el = usable(index)?;
            focus::focus(&el);
            format!("focused {}", describe(index, &el)).into()
        }
        Action::Scroll { direction, index, pages } => scroll(direction, index, pages)?.into(),
        Action::DragAndDrop { from, to } => drag(from, to, watch).await?.into(),
        Action::Hold { index, ms } => hold(index, ms).await?.into(),
        Action::DragPath { index, points } => drag_path(index, &points).await?.into(),
        Action::UploadFile { .. } => {
            return Err(failed(
                "upload_file is carried out by the host with the files the user allowed",
            ));
        }
        Action::Extract { query } => extract(query.as_deref()).into(),
        Action::GoBack {} => history("back")?.into(),
        Action::GoForward {} => history("forward")?.into(),
        other => return Err(failed(&format!("`{}` is not a page action", other.name()))),
    })
}

/// `history.back()` / `history.forward()`.
fn history(way: &str) -> Result<String, Fail> {
    let h = web_sys::window()
        .ok_or_else(|| failed("no window"))?
        .history()
        .map_err(|e| failed(&js_text(&e)))?;
    if way == "back" { h.back() } else { h.forward() }.map_err(|e| failed(&js_text(&e)))?;
    Ok(format!("went {way} in history"))
}

/// Moves the pointer over element `index` (menus that open on hover).
fn hover(index: u32) -> Result<String, Fail> {
    let el = registry::element(index)?;
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    let (x, y) = centre_in_view(&el, &window);
    let target = click_target(&el, x, y);
    let m = Mouse { window, x, y, keys: Keys::default() };
    m.pointer(&target, "pointerover", true, -1, 0);
    m.mouse(&target, "mouseover", true, 0, 0, 0);
    // `mouseenter` on the target and each ancestor the pointer enters
    // (it comes from outside the page), outermost first.
    let mut chain = Vec::new();
    let mut node = Some(target.clone());
    while let Some(n) = node {
        if matches!(proto::local_name(&n).as_str(), "html" | "body") {
            break;
        }
        node = dom::flat_parent(&n);
        chain.push(n);
    }
    for n in chain.iter().rev() {
        m.pointer(n, "pointerenter", false, -1, 0);
        m.mouse(n, "mouseenter", false, 0, 0, 0);
    }
    m.pointer(&target, "pointermove", true, -1, 0);
    m.mouse(&target, "mousemove", true, 0, 0, 0);
    // Synthetic events leave CSS `:hover` unmatched: its rules are applied
    // to the pointer's chain instead (`hover::emulate`).
    let styled = crate::hover::emulate(&target);
    Ok(format!(
        "moved the pointer over {}{}",
        describe(index, &el),
        if styled > 0 { " (the page's :hover styles apply to it)" } else { "" }
    ))
}

/// Ticks or unticks a checkbox, radio button, or ARIA checkbox/switch, by
/// clicking it when it is not already so; reads the state back.
async fn check(index: u32, on: bool, watch: &Watch) -> Result<String, Fail> {
    let el = usable(index)?;
    let who = describe(index, &el);
    let state = |el: &Element| -> Option<bool> {
        if proto::local_name(&el) == "input" {
            let i = el.unchecked_ref::<HtmlInputElement>();
            if matches!(i.type_().as_str(), "checkbox" | "radio") {
                return Some(i.checked());
            }
            return None;
        }
        match proto::get_attribute(&el, "aria-checked").as_deref() {
            Some("true") => Some(true),
            Some("false") | Some("mixed") => Some(false),
            _ => proto::query_selector(&el, "input[type=checkbox], input[type=radio]")
                .ok()
                .flatten()
                .map(|i| i.unchecked_ref::<HtmlInputElement>().checked()),
        }
    };
    let Some(now) = state(&el) else {
        return Err(failed(&format!("{who} is not a checkbox or radio button")));
    };
    if now == on {
        return Ok(format!("{who} was already {}", if on { "checked" } else { "unchecked" }));
    }
    if !on && proto::get_attribute(&el, "type").as_deref() == Some("radio") {
        return Err(failed(&format!(
            "{who} is a radio button: choose another option of its group instead"
        )));
    }
    click(index, ClickButton::Left, &[], 1, watch).await?;
    watch.settle().await;
    match state(&el) {
        Some(s) if s == on => Ok(format!("{} {who}", if on { "checked" } else { "unchecked" })),
        _ => Err(failed(&format!(
            "{who} is still {} after clicking it",
            if on { "unchecked" } else { "checked" }
        ))),
    }
}

/// Presses a key combination on element `index` or the focused element.
fn press(key: &str, index: Option<u32>) -> Result<String, Fail> {
    let el = match index {
        Some(i) => Some(usable(i)?),
        None => None,
    };
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let combo = keys::parse(key, is_mac(&window)).map_err(|e| failed(&e))?;
    if let Some(el) = &el {
        if dom::is_focusable(el) {
            focus::focus(el);
        }
    }
    let target = keys::key_target(el.as_ref()).ok_or_else(|| failed("nothing has the focus"))?;
    let on = match index {
        Some(i) => describe(i, &target),
        None => format!("<{}>", proto::local_name(&target)),
    };
    let did = keys::press(&target, &combo);
    // A copy with nothing selected, a paste with nothing copied: the
    // model is told the key did not do what it is for.
    if let Some(d) = did.as_deref().filter(|d| d.starts_with("nothing was ")) {
        return Err(failed(&format!("pressed {key} on {on}, but {d}")));
    }
    Ok(match did {
        Some(d) => format!("pressed {key} on {on}: {d}"),
        None => format!("pressed {key} on {on}"),
    })
}

/// Types text key by key into element `index`, after what it holds (the
/// caret goes to the end first), or in its place with `clear`; reads the
/// value back after the page's handlers and, when no suggestions are
/// showing, after the field lost the focus.
async fn type_into(
    index: u32,
    text: &str,
    enter: bool,
    clear: bool,
    watch: &Watch,
) -> Result<Done, Fail> {
    let el = usable(index)?;
    let who = describe(index, &el);
    focus::focus(&el);
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    if clear {
        if let Ok(all) = keys::parse("ControlOrMeta+a", is_mac(&window)) {
            keys::press(&el, &all);
        }
        keys::press(&el, &keys::Combo { keys: Keys::default(), key: "Backspace".into() });
    } else {
        caret_to_end(&el);
    }
    let before = read_value(&el, &proto::local_name(&el));
    keys::type_text(&el, text);
    // Let the page react to the text (suggestions after a debounce).
    watch.settle_for(crate::watch::TYPE_QUIET_MS).await;
    if enter {
        keys::press(&el, &keys::Combo { keys: Keys::default(), key: "Enter".into() });
    }
    let tag = proto::local_name(&el);
    let typed = proto::is_connected(&el).then(|| read_value(&el, &tag));
    let mut summary = format!(
        "typed \"{}\" into {who}{}",
        truncate(text, 60),
        if enter { " and pressed Enter" } else { "" }
    );
    let Some(mut now) = typed else {
        return Ok(Done { summary, value: None });
    };
    if !enter && !watch.added_any() {
        if let Some(changed) = leave_field(&el, &tag, &now, watch).await {
            return Err(failed(&format!(
                "{who} held \"{}\" after typing, but when it lost the focus the page changed it to \"{}\" (the field wants another format, or a widget rewrote it)",
                truncate(&now, 80),
                truncate(&changed, 80)
            )));
        }
    }
    if proto::is_connected(&el) {
        now = read_value(&el, &tag);
    }
    let secret = is_secret(&el);
    if !secret && !before.is_empty() && !clear {
        summary.push_str(&format!(" after \"{}\"", truncate(&before, 40)));
    }
    if !secret {
        summary.push_str(&format!("; it now holds \"{}\"", truncate(&now, 100)));
        remember_fill(&el, &now);
    }
    Ok(Done { summary, value: (!secret).then_some(now) })
}

/// Whether the element is a password field (its value is never reported).
fn is_secret(el: &Element) -> bool {
    proto::local_name(&el) == "input"
        && el.unchecked_ref::<HtmlInputElement>().type_().eq_ignore_ascii_case("password")
}

/// Puts the caret after the field's text, as a click at its end does.
fn caret_to_end(el: &Element) {
    match proto::local_name(&el).as_str() {
        "input" => {
            let i = el.unchecked_ref::<HtmlInputElement>();
            let len = i.value().encode_utf16().count() as u32;
            // Email and number fields have no selection: typing appends there.
            let _ = i.set_selection_range(len, len);
        }
        "textarea" => {
            let a = el.unchecked_ref::<HtmlTextAreaElement>();
            let len = a.value().encode_utf16().count() as u32;
            let _ = a.set_selection_range(len, len);
        }
        _ => {
            let selection =
                proto::owner_document(el).and_then(|d| proto::get_selection(&d).ok().flatten());
            if let Some(sel) = selection {
                let _ = sel.select_all_children(el);
                let _ = sel.collapse_to_end();
            }
        }
    }
}

/// Whether a field offers suggestions of its own (an autocomplete, a
/// combobox, a datalist): leaving it would close them.
fn suggests(el: &Element) -> bool {
    attr(el, "role").is_some_and(|r| r == "combobox")
        || proto::has_attribute(&el, "aria-autocomplete")
        || proto::has_attribute(&el, "list")
        || attr(el, "aria-haspopup").is_some_and(|v| v != "false")
        || attr(el, "aria-expanded").is_some_and(|v| v == "true")
}

/// Takes the focus from a field that offers no suggestions and waits for
/// the page's handlers; `Some(value)` when they changed what it holds
/// (`held`).
async fn leave_field(el: &Element, tag: &str, held: &str, watch: &Watch) -> Option<String> {
    if suggests(el) || !proto::is_connected(&el) {
        return None;
    }
    let active = focus::is_active(el);
    if !active {
        return None;
    }
    focus::blur_active(el);
    watch.settle().await;
    let now = read_value(el, tag);
    let same = if matches!(tag, "input" | "textarea") {
        now == held
    } else {
        collapse(&now) == collapse(held)
    };
    (proto::is_connected(&el) && !same).then_some(now)
}

thread_local! {
    /// Fields filled or typed into by earlier actions, with what they held
    /// then: a widget that rewrites or empties one later (when it loses the
    /// focus, when its calendar closes) is reported by the next action.
    static FILLED: std::cell::RefCell<Vec<(Element, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Forgets the fields filled so far (the task ended: `cleanup`).
pub fn forget_fills() {
    FILLED.with(|f| f.borrow_mut().clear());
}

fn remember_fill(el: &Element, value: &str) {
    // What is typed into a combobox or an autocomplete is a search: the
    // page clearing or completing it once an option is chosen loses
    // nothing (react-select, Select2).
    if attr(el, "role").is_some_and(|r| r == "combobox")
        || attr(el, "aria-autocomplete").is_some_and(|v| v == "list" || v == "both")
    {
        return;
    }
    FILLED.with(|f| {
        let mut f = f.borrow_mut();
        f.retain(|(e, _)| e != el && proto::is_connected(&e));
        if f.len() >= 16 {
            f.remove(0);
        }
        f.push((el.clone(), value.to_owned()));
    });
}

/// The earlier fills the page has changed since (not those of `acted`,
/// the element the current action worked on), forgotten once reported.
fn changed_fills(acted: Option<&Element>) -> Vec<String> {
    FILLED.with(|f| {
        let mut f = f.borrow_mut();
        let mut out = Vec::new();
        f.retain_mut(|(el, held)| {
            if !proto::is_connected(&el) {
                return false;
            }
            let tag = proto::local_name(&el);
            let now = read_value(el, &tag);
            // The acted field's own value is this action's to report: what
            // it holds now is what later actions must keep.
            if acted == Some(el) {
                *held = now;
                return true;
            }
            let field = matches!(tag.as_str(), "input" | "textarea");
            if now == *held || (!field && collapse(&now) == collapse(held)) {
                return true;
            }
            let name = dom::field_label(el)
                .or_else(|| attr(el, "aria-label"))
                .or_else(|| attr(el, "name"))
                .unwrap_or_else(|| proto::local_name(&el));
            out.push(format!(
                "{}: the page changed it from \"{}\" to \"{}\" after it was filled",
                truncate(&name, 40),
                truncate(held, 60),
                truncate(&now, 60)
            ));
            false
        });
        out
    })
}

/// The longest press-and-hold.
const MAX_HOLD_MS: u32 = 10_000;

/// Presses the pointer on element `index`, holds it for `ms` (pointer
/// moves of a steady hand every 100 ms, as some widgets expect), releases
/// it and clicks, as a mouse does.
async fn hold(index: u32, ms: u32) -> Result<String, Fail> {
    let el = usable(index)?;
    let ms = ms.min(MAX_HOLD_MS);
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    let (x, y) = centre_in_view(&el, &window);
    let target = click_target(&el, x, y);
    let m = Mouse { window, x, y, keys: Keys::default() };
    m.press(&target);
    let mut held = 0;
    while held < ms {
        let step = (ms - held).min(100);
        gloo_timers::future::TimeoutFuture::new(step).await;
        held += step;
        if !proto::is_connected(&el) {
            break;
        }
    }
    // Released where the pointer is, on what is there now.
    let now = click_target(&el, x, y);
    m.pointer(&now, "pointerup", true, 0, 0);
    m.mouse(&now, "mouseup", true, 0, 0, 1);
    m.mouse(&now, "click", true, 0, 0, 1);
    Ok(format!("pressed and held {} for {held} ms", describe(index, &el)))
}

/// Presses the pointer at the first point of `points` (fractions of
/// element `index`'s box), moves it through the others in small steps
/// (several moves between two points, as a hand draws) and releases it at
/// the last one.
async fn drag_path(index: u32, points: &[[f64; 2]]) -> Result<String, Fail> {
    let el = usable(index)?;
    if points.len() < 2 {
        return Err(failed("drag_path needs at least two points"));
    }
    if points.len() > 200 {
        return Err(failed("drag_path takes at most 200 points"));
    }
    if points.iter().flatten().any(|v| !v.is_finite() || !(-0.5..=1.5).contains(v)) {
        return Err(failed(
            "drag_path points are fractions of the element's box: [0, 0] is its top-left corner, [1, 1] its bottom-right",
        ));
    }
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    centre_in_view(&el, &window);
    let r = proto::get_bounding_client_rect(&el);
    let at = |p: &[f64; 2]| (r.x() + p[0] * r.width(), r.y() + p[1] * r.height());
    let under = |x: f64, y: f64| {
        window
            .document()
            .and_then(|d| proto::element_from_point(&d, x as f32, y as f32))
            .map(|hit| click_target(&hit, x, y))
            .unwrap_or_else(|| el.clone())
    };
    let (x0, y0) = at(&points[0]);
    let mut m = Mouse { window: window.clone(), x: x0, y: y0, keys: Keys::default() };
    let start = under(x0, y0);
    m.press(&start);
    // Pointer capture, as the browser gives a pressed mouse: the moves go
    // to what was pressed, wherever they are.
    let mut moves = 0;
    for pair in points.windows(2) {
        let (ax, ay) = at(&pair[0]);
        let (bx, by) = at(&pair[1]);
        let steps = (((bx - ax).hypot(by - ay)) / 8.0).ceil().clamp(1.0, 20.0) as u32;
        for k in 1..=steps {
            let f = f64::from(k) / f64::from(steps);
            m.x = ax + (bx - ax) * f;
            m.y = ay + (by - ay) * f;
            m.pointer(&start, "pointermove", true, -1, 1);
            m.mouse(&under(m.x, m.y), "mousemove", true, 0, 1, 0);
            moves += 1;
        }
        // Let the page draw between two points (requestAnimationFrame).
        gloo_timers::future::TimeoutFuture::new(16).await;
    }
    let end = under(m.x, m.y);
    m.pointer(&start, "pointerup", true, 0, 0);
    m.mouse(&end, "mouseup", true, 0, 0, 1);
    if end == start || proto::contains(&start, Some(&end)) {
        m.mouse(&end, "click", true, 0, 0, 1);
    }
    Ok(format!(
        "dragged the pointer along {} points ({moves} moves) over {}",
        points.len(),
        describe(index, &el)
    ))
}

/// Drags element `from` onto element `to`: HTML5 drag and drop (with a
/// shared `DataTransfer`) for draggable elements, and the pointer and
/// mouse sequence of a drag for widgets that follow the mouse (sortable
/// lists: the item ends up in the target's place).
async fn drag(from: u32, to: u32, watch: &Watch) -> Result<String, Fail> {
    let a = usable(from)?;
    let b = registry::element(to)?;
    let window = dom::window_of(&a).ok_or_else(|| failed("the element has no window"))?;
    let (ax, ay) = centre_in_view(&a, &window);
    let source = click_target(&a, ax, ay);
    let mut m = Mouse { window: window.clone(), x: ax, y: ay, keys: Keys::default() };
    m.pointer(&source, "pointerover", true, -1, 0);
    m.mouse(&source, "mouseover", true, 0, 0, 0);
    m.pointer(&source, "pointerdown", true, 0, 1);
    m.mouse(&source, "mousedown", true, 0, 1, 1);
    let draggable = {
        let mut node = Some(source.clone());
        let mut found = None;
        while let Some(n) = node {
            if proto::draggable(&n.unchecked_ref::<HtmlElement>()) && proto::local_name(&n) != "img"
            {
                found = Some(n);
                break;
            }
            // As the browser does, the nearest draggable ancestor of what
            // was pressed is dragged: past the element too (a handle
            // inside a SortableJS item, made draggable on the press).
            node = dom::flat_parent(&n);
        }
        found
    };
    // Move a little first, as a hand does, so drag libraries start.
    m.x += 5.0;
    m.y += 5.0;
    m.pointer(&source, "pointermove", true, -1, 1);
    m.mouse(&source, "mousemove", true, 0, 1, 0);
    // The drop point: past the target's middle, a quarter of its size
    // further in the direction of travel, so that a sortable list puts the
    // item in the target's place (after it going down, before it going
    // up) rather than on the fence between the two; still inside it for a
    // drop zone.
    let (bx, by) = {
        let r = proto::get_bounding_client_rect(&b);
        let (cx, cy) = (r.x() + r.width() / 2.0, r.y() + r.height() / 2.0);
        let past = |from: f64, to: f64, size: f64| {
            if (to - from).abs() < 1.0 { to } else { to + (to - from).signum() * size / 4.0 }
        };
        (past(ax, cx, r.width()), past(ay, cy, r.height()))
    };
    if let Some(dragged) = draggable {
        let data = web_sys::DataTransfer::new().map_err(|e| failed(&js_text(&e)))?;
        let ev = |target: &Element, kind: &str, x: f64, y: f64| -> bool {
            let init = web_sys::DragEventInit::new();
            let mm = Mouse { window: window.clone(), x, y, keys: Keys::default() };
            mm.init(init.unchecked_ref(), true, 0, 1, 0);
            init.set_data_transfer(Some(&data));
            web_sys::DragEvent::new_with_event_init_dict(kind, &init)
                .and_then(|e| proto::dispatch_event(&target, &e))
                .unwrap_or(true)
        };
        if !ev(&dragged, "dragstart", m.x, m.y) {
            return Err(failed(&format!("{} refused to be dragged", describe(from, &a))));
        }
        ev(&dragged, "drag", m.x, m.y);
        // The browser's drag moves come later than `dragstart`: libraries
        // start the drag on the next tick (SortableJS sets its active list
        // in a `setTimeout(0)` and ignores `dragover` before it).
        gloo_timers::future::TimeoutFuture::new(16).await;
        let over = dom::element_at(&b, bx, by)
            .filter(|h| dom::hit_belongs(&b, h))
            .unwrap_or_else(|| b.clone());
        ev(&over, "dragenter", bx, by);
        ev(&over, "dragover", bx, by);
        watch.settle().await;
        ev(&over, "drop", bx, by);
        ev(&dragged, "dragend", bx, by);
    } else {
        for step in 1..=5 {
            let f = f64::from(step) / 5.0;
            m.x = ax + (bx - ax) * f;
            m.y = ay + (by - ay) * f;
            let under = window
                .document()
                .and_then(|d| proto::element_from_point(&d, m.x as f32, m.y as f32))
                .unwrap_or_else(|| b.clone());
            m.pointer(&under, "pointermove", true, -1, 1);
            m.mouse(&under, "mousemove", true, 0, 1, 0);
        }
        let under = window
            .document()
            .and_then(|d| proto::element_from_point(&d, bx as f32, by as f32))
            .unwrap_or_else(|| b.clone());
        m.pointer(&under, "pointerup", true, 0, 0);
        m.mouse(&under, "mouseup", true, 0, 0, 1);
    }
    Ok(format!("dragged {} onto {}", describe(from, &a), describe(to, &b)))
}

/// The page's readable text (the lines mentioning `query`'s words first).
fn extract(query: Option<&str>) -> String {
    const MAX: usize = 6000;
    let doc = web_sys::window().and_then(|w| w.document());
    let text = doc.and_then(|d| proto::body(&d)).map(|b| proto::inner_text(&b)).unwrap_or_default();
    let lines: Vec<String> = text.lines().map(collapse).filter(|l| !l.is_empty()).collect();
    let words: Vec<String> = query
        .unwrap_or_default()
        .split_whitespace()
        .filter(|w| w.len() > 2)
        .map(str::to_lowercase)
        .collect();
    let picked: Vec<&String> = if words.is_empty() {
        lines.iter().collect()
    } else {
        let hits: Vec<&String> = lines
            .iter()
            .filter(|l| {
                let l = l.to_lowercase();
                words.iter().any(|w| l.contains(w.as_str()))
            })
            .collect();
        if hits.is_empty() { lines.iter().collect() } else { hits }
    };
    let mut out = String::new();
    for l in picked {
        if out.len() + l.len() + 1 > MAX {
            out.push_str("\n…");
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    // values.rs: the fields' whole values (the element list may cut them).
    let values = crate::values::fields_text();
    let values = if values.is_empty() { values } else { format!("\n{values}") };
    format!("the page's text:\n{}{values}", out.trim_end())
}

/// An `action_failed` error.
pub fn failed(why: &str) -> Fail {
    Fail::new(ErrorCode::ActionFailed, why)
}

/// A thrown JS value as text.
pub fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string()))
        .unwrap_or_else(|| format!("{e:?}"))
}

/// `[12] <button> Submit`: how an element is named in summaries.
pub fn describe(index: u32, el: &Element) -> String {
    let tag = proto::local_name(&el);
    let field = matches!(tag.as_str(), "input" | "select" | "textarea");
    let own_text = || proto::text_content(&el).map(|t| collapse(&t)).filter(|t| !t.is_empty());
    let name = attr(el, "aria-label")
        .or_else(|| if field { dom::field_label(el) } else { own_text() })
        .or_else(|| attr(el, "placeholder"))
        .or_else(|| attr(el, "title"))
        .or_else(|| attr(el, "name"))
        .map(|n| truncate(&collapse(&n), 40));
    match name {
        Some(n) => format!("[{index}] <{tag}> {n}"),
        None => format!("[{index}] <{tag}>"),
    }
}

/// The element, live and enabled.
pub fn usable(index: u32) -> Result<Element, Fail> {
    let el = registry::element(index)?;
    if dom::is_disabled(&el, &proto::local_name(&el)) {
        return Err(failed(&format!("{} is disabled", describe(index, &el))));
    }
    if dom::replaced(&el) {
        // The page hid it and shows a widget in its place: what is chosen
        // here may never reach what the page uses.
        let instead = dom::replacement_of(&el).and_then(|w| listed_in(&w));
        let use_it = match instead {
            Some((n, w)) => format!("use {} instead", describe(n, &w)),
            None => "use the widget shown in its place instead".to_owned(),
        };
        return Err(failed(&format!(
            "{} is hidden: the page replaced it with a widget of its own; {use_it}",
            describe(index, &el)
        )));
    }
    Ok(el)
}

/// The first element numbered by an observation in `w` (itself first).
fn listed_in(w: &Element) -> Option<(u32, Element)> {
    if let Some(n) = registry::known(w) {
        return Some((n, w.clone()));
    }
    let all = proto::query_selector_all(w.unchecked_ref(), "*").ok()?;
    (0..all.length().min(400))
        .filter_map(|i| all.item(i))
        .map(|n| n.unchecked_into::<Element>())
        .find_map(|e| registry::known(&e).map(|n| (n, e)))
}

/// Scrolls the element to the middle of its window when its centre is not
/// in view — outside the window, or hidden by the scrolling of a box it is
/// in (what shows at its centre is not it) — then returns the centre of
/// its visible part (in its own window's coordinates).
fn centre_in_view(el: &Element, window: &Window) -> (f64, f64) {
    let vw = window.inner_width().ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let vh = window.inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let centre = |r: &web_sys::DomRect| (r.x() + r.width() / 2.0, r.y() + r.height() / 2.0);
    let (x, y) = centre(&proto::get_bounding_client_rect(&el));
    let in_window = (0.0..vw).contains(&x) && (0.0..vh).contains(&y);
    let shows = || {
        dom::element_at(el, x, y).is_some_and(|hit| hit == *el || proto::contains(&el, Some(&hit)))
    };
    if !in_window || !shows() {
        let options = ScrollIntoViewOptions::new();
        options.set_block(ScrollLogicalPosition::Center);
        options.set_inline(ScrollLogicalPosition::Center);
        options.set_behavior(ScrollBehavior::Instant);
        proto::scroll_into_view(&el, &options);
    }
    let r = proto::get_bounding_client_rect(&el);
    let x0 = r.x().max(0.0);
    let y0 = r.y().max(0.0);
    let x1 = (r.x() + r.width()).min(vw).max(x0);
    let y1 = (r.y() + r.height()).min(vh).max(y0);
    ((x0 + x1) / 2.0, (y0 + y1) / 2.0)
}

/// The keys held during a click.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Keys {
    pub alt: bool,
    pub ctrl: bool,
    pub meta: bool,
    pub shift: bool,
}

impl Keys {
    /// `ControlOrMeta` is Meta on macOS, Control elsewhere.
    fn from(modifiers: &[Modifier], mac: bool) -> Keys {
        let mut k = Keys::default();
        for m in modifiers {
            match m {
                Modifier::Alt => k.alt = true,
                Modifier::Control => k.ctrl = true,
                Modifier::Meta => k.meta = true,
                Modifier::Shift => k.shift = true,
                Modifier::ControlOrMeta if mac => k.meta = true,
                Modifier::ControlOrMeta => k.ctrl = true,
            }
        }
        k
    }
}

/// `MouseEvent.button` and the `buttons` bit of a mouse button.
fn button_codes(button: ClickButton) -> (i16, u16) {
    match button {
        ClickButton::Left => (0, 1),
        ClickButton::Middle => (1, 4),
        ClickButton::Right => (2, 2),
    }
}

/// Whether the browser runs on a Mac (for `ControlOrMeta`).
fn is_mac(window: &Window) -> bool {
    Reflect::get(window, &"navigator".into())
        .and_then(|n| Reflect::get(&n, &"platform".into()))
        .ok()
        .and_then(|p| p.as_string())
        .is_some_and(|p| p.starts_with("Mac"))
}

/// Where and how a synthetic mouse acts.
struct Mouse {
    window: Window,
    x: f64,
    y: f64,
    keys: Keys,
}

impl Mouse {
    /// Fills the fields every mouse and pointer event shares.
    fn init(&self, init: &MouseEventInit, bubbles: bool, button: i16, buttons: u16, detail: i32) {
        init.set_bubbles(bubbles);
        init.set_cancelable(bubbles);
        init.set_composed(bubbles);
        init.set_view(Some(&self.window));
        init.set_detail(detail);
        init.set_client_x(self.x.round() as i32);
        init.set_client_y(self.y.round() as i32);
        let screen = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
        init.set_screen_x((screen(self.window.screen_x()) + self.x).round() as i32);
        init.set_screen_y((screen(self.window.screen_y()) + self.y).round() as i32);
        init.set_button(button);
        init.set_buttons(buttons);
        init.set_alt_key(self.keys.alt);
        init.set_ctrl_key(self.keys.ctrl);
        init.set_meta_key(self.keys.meta);
        init.set_shift_key(self.keys.shift);
    }

    /// Dispatches a mouse event; `false` when a handler cancelled it.
    fn mouse(
        &self,
        target: &Element,
        kind: &str,
        bubbles: bool,
        button: i16,
        buttons: u16,
        detail: i32,
    ) -> bool {
        let init = MouseEventInit::new();
        self.init(&init, bubbles, button, buttons, detail);
        MouseEvent::new_with_mouse_event_init_dict(kind, &init)
            .and_then(|e| proto::dispatch_event(&target, &e))
            .unwrap_or(true)
    }

    /// The pointer comes over `target` and presses the left button there
    /// (the focus moving as a real press moves it), as the start of a hold
    /// or a drawn path.
    fn press(&self, target: &Element) {
        self.pointer(target, "pointerover", true, -1, 0);
        self.mouse(target, "mouseover", true, 0, 0, 0);
        self.pointer(target, "pointermove", true, -1, 0);
        self.mouse(target, "mousemove", true, 0, 0, 0);
        focus::follow(target, || {
            self.pointer(target, "pointerdown", true, 0, 1);
            if self.mouse(target, "mousedown", true, 0, 1, 1) {
                focus_from(target);
            }
        });
    }

    /// Dispatches a pointer event (a primary mouse pointer).
    fn pointer(
        &self,
        target: &Element,
        kind: &str,
        bubbles: bool,
        button: i16,
        buttons: u16,
    ) -> bool {
        let init = PointerEventInit::new();
        self.init(init.unchecked_ref(), bubbles, button, buttons, 0);
        init.set_pointer_id(1);
        init.set_pointer_type("mouse");
        init.set_is_primary(true);
        init.set_width(1);
        init.set_height(1);
        init.set_pressure(if buttons == 0 { 0.0 } else { 0.5 });
        PointerEvent::new_with_event_init_dict(kind, &init)
            .and_then(|e| proto::dispatch_event(&target, &e))
            .unwrap_or(true)
    }
}

/// What a click lands on: the deepest element at the point (through open
/// shadow roots) when it belongs to the element, else the element itself.
fn click_target(el: &Element, x: f64, y: f64) -> Element {
    let Some(mut hit) = dom::element_at(el, x, y) else {
        return el.clone();
    };
    if !(hit == *el || proto::contains(&el, Some(&hit))) {
        return el.clone();
    }
    while let Some(deeper) = proto::shadow_root(&hit)
        .and_then(|s| proto::element_from_point(&s, x as f32, y as f32))
        .filter(|d| *d != hit)
    {
        hit = deeper;
    }
    hit
}

/// Clicks element `index` (`count` 2: a double click) and says what
/// happened.
async fn click(
    index: u32,
    button: ClickButton,
    modifiers: &[Modifier],
    count: i32,
    watch: &Watch,
) -> Result<String, Fail> {
    let el = usable(index)?;
    let window = dom::window_of(&el).ok_or_else(|| failed("the element has no window"))?;
    let (x, y) = centre_in_view(&el, &window);
    let target = click_target(&el, x, y);
    let keys = Keys::from(modifiers, is_mac(&window));
    let m = Mouse { window, x, y, keys };
    let (code, mask) = button_codes(button);

    m.pointer(&target, "pointerover", true, -1, 0);
    m.pointer(&target, "pointerenter", false, -1, 0);
    m.mouse(&target, "mouseover", true, 0, 0, 0);
    m.mouse(&target, "mouseenter", false, 0, 0, 0);
    m.pointer(&target, "pointermove", true, -1, 0);
    m.mouse(&target, "mousemove", true, 0, 0, 0);
    // The pointer left an element hovered before: its `:hover` styles
    // follow the pointer here (a submenu item keeps its menu open).
    if crate::hover::emulating() {
        crate::hover::emulate(&target);
    }
    for detail in 1..=count {
        // The page's `mousedown` handlers may move the focus themselves
        // (`focus()`): its events follow, as in a focused document.
        focus::follow(&target, || {
            m.pointer(&target, "pointerdown", true, code, mask);
            let down = m.mouse(&target, "mousedown", true, code, mask, detail);
            if down && detail == 1 {
                focus_from(&target);
            }
        });
        if button == ClickButton::Right {
            m.mouse(&target, "contextmenu", true, code, mask, 0);
        }
        // Not after the click: events that come once its handlers ran
        // would arrive after what they did (flatpickr focuses its field
        // and closes its calendar in one handler; a late `focus` opens it
        // again).
        m.pointer(&target, "pointerup", true, code, 0);
        m.mouse(&target, "mouseup", true, code, 0, detail);
        // The click itself, dispatched with its coordinates and keys; the
        // browser runs its activation behaviour (links, submit buttons,
        // checkboxes, labels) as for `HTMLElement.click()`.
        let kind = if button == ClickButton::Left { "click" } else { "auxclick" };
        m.mouse(&target, kind, true, code, 0, detail);
    }
    if count == 2 && button == ClickButton::Left {
        m.mouse(&target, "dblclick", true, code, 0, 2);
    }

    let what = match (button, count) {
        (ClickButton::Left, 2) => "double-clicked",
        (ClickButton::Left, _) => "clicked",
        (ClickButton::Middle, _) => "middle-clicked",
        (ClickButton::Right, _) => "right-clicked",
    };
    let mut summary = format!("{what} {}", describe(index, &el));
    watch.settle().await;
    if proto::local_name(&el) == "input" && proto::is_connected(&el) {
        let input = el.unchecked_ref::<HtmlInputElement>();
        if matches!(input.type_().as_str(), "checkbox" | "radio") {
            summary.push_str(if input.checked() { " (now checked)" } else { " (now unchecked)" });
        }
    }
    Ok(summary)
}

/// Focuses what a mouse-down at `target` focuses: the first focusable
/// element from `target` up (through shadow roots); when there is none, the
/// focused element loses the focus, as on a click on the page's background.
fn focus_from(target: &Element) {
    let mut node = Some(target.clone());
    while let Some(n) = node {
        if dom::is_focusable(&n) {
            focus::focus(&n);
            return;
        }
        node = dom::flat_parent(&n);
    }
    focus::blur_active(target);
}

/// Calls the prototype's own `value` setter of the element's realm.
pub fn set_native_value(el: &Element, class: &str, value: &str) -> Result<(), JsValue> {
    let realm: JsValue = match dom::window_of(el) {
        Some(w) => w.into(),
        None => js_sys::global().into(),
    };
    let ctor = Reflect::get(&realm, &class.into())?;
    let proto = Reflect::get(&ctor, &"prototype".into())?;
    if proto.is_object() {
        let desc =
            Object::get_own_property_descriptor(proto.unchecked_ref::<Object>(), &"value".into());
        if desc.is_object() {
            let setter = Reflect::get(&desc, &"set".into())?;
            if setter.is_function() {
                setter.unchecked_ref::<Function>().call1(el, &value.into())?;
                return Ok(());
            }
        }
    }
    Reflect::set(el, &"value".into(), &value.into()).map(|_| ())
}

/// Fires `input` (as typed text) and `change`.
pub fn fire_input_and_change(el: &Element, data: &str, with_change: bool) {
    let init = InputEventInit::new();
    init.set_bubbles(true);
    init.set_composed(true);
    init.set_input_type("insertText");
    init.set_data(Some(data));
    if let Ok(e) = InputEvent::new_with_event_init_dict("input", &init) {
        let _ = proto::dispatch_event(&el, &e);
    }
    if with_change {
        let init = EventInit::new();
        init.set_bubbles(true);
        if let Ok(e) = Event::new_with_event_init_dict("change", &init) {
            let _ = proto::dispatch_event(&el, &e);
        }
    }
}

/// Fires `change`, as leaving a field that changed does.
pub fn fire_change(el: &Element) -> Result<bool, JsValue> {
    let init = EventInit::new();
    init.set_bubbles(true);
    let e = Event::new_with_event_init_dict("change", &init)?;
    proto::dispatch_event(&el, &e)
}

/// Input types whose value is not free text but a browser-checked format.
fn formatted_input(kind: &str) -> bool {
    matches!(
        kind,
        "date" | "time" | "datetime-local" | "month" | "week" | "number" | "range" | "color"
    )
}

/// Fills element `index` with `value` and reads it back; a value that did
/// not stick is an error.
async fn fill(index: u32, value: &str, watch: &Watch) -> Result<Done, Fail> {
    let el = usable(index)?;
    let tag = proto::local_name(&el);
    let who = describe(index, &el);
    let mut secret = false;
    let mut formatted = false;
    match tag.as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            let kind = input.type_().to_ascii_lowercase();
            if !text::is_text_input(&kind) {
                let hint = if kind == "file" {
                    "use upload_file"
                } else {
                    "click it instead of filling it"
                };
                return Err(failed(&format!("{who} is a {kind} input: {hint}")));
            }
            if input.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            secret = kind == "password";
            formatted = formatted_input(&kind);
            focus::focus(&el);
            set_native_value(&el, "HTMLInputElement", value).map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, value, true);
        }
        "textarea" => {
            let area = el.unchecked_ref::<HtmlTextAreaElement>();
            if area.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            focus::focus(&el);
            set_native_value(&el, "HTMLTextAreaElement", value)
                .map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, value, true);
        }
        "select" => {
            return crate::selects::select_options(
                index,
                &el,
                &[errand_protocol::OptionChoice::Text(value.to_owned())],
            );
        }
        _ if proto::is_content_editable(&el.unchecked_ref::<HtmlElement>()) => {
            // Select everything and insert: editors (and undo) see a
            // person's edit, with `beforeinput` and `input`.
            focus::focus(&el);
            keys::exec(&el, "selectAll", None);
            if value.is_empty() {
                keys::exec(&el, "delete", None);
            } else {
                keys::exec(&el, "insertText", Some(value));
            }
            if collapse(&proto::text_content(&el).unwrap_or_default()) != collapse(value) {
                proto::set_text_content(&el, Some(value));
                fire_input_and_change(&el, value, false);
            }
        }
        _ => {
            return Err(failed(&format!("{who} is not a text field: it cannot be filled")));
        }
    }
    watch.settle().await;
    let now = read_value(&el, &tag);
    let matches = if tag == "input" || tag == "textarea" {
        now == value
    } else {
        collapse(&now) == collapse(value)
    };
    if !matches {
        return Err(failed(&if secret {
            format!("{who} did not keep the password typed into it")
        } else if formatted && now.is_empty() {
            format!(
                "{who} refused \"{}\": the browser wants its own format (dates 2024-05-31, times 13:45, colours #ff8800, numbers within the field's range and step)",
                truncate(value, 60)
            )
        } else {
            format!(
                "{who} holds \"{}\" after filling, not \"{}\"",
                truncate(&now, 80),
                truncate(value, 80)
            )
        }));
    }
    // What the field holds once the page's handlers for leaving it ran
    // (a date widget that reformats or empties it), unless it shows
    // suggestions or something appeared the model may want to use.
    if !secret && !watch.added_any() {
        if let Some(changed) = leave_field(&el, &tag, &now, watch).await {
            return Err(failed(&format!(
                "{who} held \"{}\" after filling, but when it lost the focus the page changed it to \"{}\" (the field wants another format, or a widget rewrote it: try `type`)",
                truncate(&now, 80),
                truncate(&changed, 80)
            )));
        }
    }
    if !secret {
        remember_fill(&el, &now);
    }
    let summary = if secret {
        format!("filled {who} with a password")
    } else if value.is_empty() {
        format!("cleared {who}")
    } else {
        format!("filled {who} with \"{}\"", truncate(value, 60))
    };
    Ok(Done { summary, value: (!secret).then_some(now) })
}

/// What a field holds now (a select: its chosen option's text).
pub fn read_value(el: &Element, tag: &str) -> String {
    match tag {
        "input" => el.unchecked_ref::<HtmlInputElement>().value(),
        "textarea" => el.unchecked_ref::<HtmlTextAreaElement>().value(),
        "select" => {
            let select = el.unchecked_ref::<HtmlSelectElement>();
            let i = select.selected_index();
            if i < 0 {
                String::new()
            } else {
                select
                    .item(i as u32)
                    .map(|o| collapse(&o.unchecked_ref::<HtmlOptionElement>().text()))
                    .unwrap_or_default()
            }
        }
        _ => proto::text_content(&el).unwrap_or_default(),
    }
}

/// Scrolls the window, or the scrollable box that holds element `index`.
fn scroll(
    direction: ScrollDirection,
    index: Option<u32>,
    pages: Option<f64>,
) -> Result<String, Fail> {
    let pages = pages.unwrap_or(1.0);
    if !pages.is_finite() || pages <= 0.0 {
        return Err(failed("`pages` must be a positive number"));
    }
    let window = web_sys::window().ok_or_else(|| failed("no window"))?;
    let vertical = matches!(direction, ScrollDirection::Up | ScrollDirection::Down);
    let sign =
        if matches!(direction, ScrollDirection::Up | ScrollDirection::Left) { -1.0 } else { 1.0 };
    let word = match direction {
        ScrollDirection::Up => "up",
        ScrollDirection::Down => "down",
        ScrollDirection::Left => "left",
        ScrollDirection::Right => "right",
    };
    let container = match index {
        Some(i) => {
            let el = registry::element(i)?;
            scrollable_box(&el, vertical).map(|b| (b, describe(i, &el)))
        }
        None => None,
    };
    let options = ScrollToOptions::new();
    options.set_behavior(ScrollBehavior::Instant);
    let n = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    let (moved, now, end, what) = match container {
        Some((b, who)) => {
            let size = if vertical { proto::client_height(&b) } else { proto::client_width(&b) };
            let step = sign * pages * f64::from(size);
            let pos = |b: &Element| {
                if vertical { proto::scroll_top(&b) } else { proto::scroll_left(&b) }
            };
            let start = pos(&b);
            if vertical {
                options.set_top(step)
            } else {
                options.set_left(step)
            }
            proto::scroll_by(&b, &options);
            let end = if vertical {
                proto::scroll_height(&b) - proto::client_height(&b)
            } else {
                proto::scroll_width(&b) - proto::client_width(&b)
            };
            (
                f64::from(pos(&b) - start),
                f64::from(pos(&b)),
                f64::from(end),
                format!("the box holding {who}"),
            )
        }
        None => {
            let size = if vertical { n(window.inner_height()) } else { n(window.inner_width()) };
            let pos =
                |w: &Window| if vertical { w.scroll_y() } else { w.scroll_x() }.unwrap_or(0.0);
            let start = pos(&window);
            if vertical {
                options.set_top(sign * pages * size)
            } else {
                options.set_left(sign * pages * size)
            }
            window.scroll_by_with_scroll_to_options(&options);
            let root = window.document().and_then(|d| proto::document_element(&d));
            let end = root.map_or(0.0, |r| {
                if vertical {
                    f64::from(proto::scroll_height(&r)) - size
                } else {
                    f64::from(proto::scroll_width(&r)) - size
                }
            });
            (pos(&window) - start, pos(&window), end.max(0.0), "the page".to_owned())
        }
    };
    if moved.abs() < 1.0 {
        let edge = match direction {
            ScrollDirection::Up => "top",
            ScrollDirection::Down => "bottom",
            ScrollDirection::Left => "left edge",
            ScrollDirection::Right => "right edge",
        };
        return Ok(format!("did not scroll {word}: {what} is already at the {edge}"));
    }
    Ok(format!(
        "scrolled {what} {word} by {}px (now at {} of {}px)",
        moved.abs().round(),
        now.round(),
        end.round()
    ))
}

/// The element itself or its nearest ancestor that scrolls along the axis.
fn scrollable_box(el: &Element, vertical: bool) -> Option<Element> {
    let mut node = Some(el.clone());
    while let Some(n) = node {
        let tag = proto::local_name(&n);
        if tag == "body" || tag == "html" {
            return None;
        }
        let overflows = if vertical {
            proto::scroll_height(&n) > proto::client_height(&n)
        } else {
            proto::scroll_width(&n) > proto::client_width(&n)
        };
        if overflows {
            let style = dom::window_of(&n).and_then(|w| w.get_computed_style(&n).ok().flatten());
            let prop = if vertical { "overflow-y" } else { "overflow-x" };
            let value = style.and_then(|s| s.get_property_value(prop).ok()).unwrap_or_default();
            if matches!(value.as_str(), "auto" | "scroll" | "overlay") {
                return Some(n);
            }
        }
        node = dom::flat_parent(&n);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_buttons_and_keys() {
        assert_eq!(button_codes(ClickButton::Left), (0, 1));
        assert_eq!(button_codes(ClickButton::Right), (2, 2));
        assert_eq!(button_codes(ClickButton::Middle), (1, 4));
        let k = Keys::from(&[Modifier::ControlOrMeta, Modifier::Shift], false);
        assert_eq!(k, Keys { ctrl: true, shift: true, ..Keys::default() });
        let k = Keys::from(&[Modifier::ControlOrMeta], true);
        assert_eq!(k, Keys { meta: true, ..Keys::default() });
    }
}

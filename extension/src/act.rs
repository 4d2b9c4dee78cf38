//! Carrying out page actions: click, fill, scroll, go back.
//!
//! A click is the sequence a real mouse makes — pointer and mouse events
//! with the right coordinates, buttons and modifier keys, focus on
//! mouse-down — dispatched on whatever is on top at the element's centre
//! when that belongs to the element. A fill goes through the native value
//! setter, so frameworks that track the value (React) see the change.

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
use crate::{Fail, registry};

/// How long to let the page react before reading the result back.
const SETTLE_MS: u32 = 50;

/// Carries out one page action.
pub async fn act(action: Action) -> Result<Effect, Fail> {
    let before = current_url();
    let summary = match action {
        Action::Click {
            index,
            button,
            modifiers,
        } => click(index, button, &modifiers).await?,
        Action::Fill { index, text } => return fill(index, &text, before).await,
        Action::Scroll {
            direction,
            index,
            pages,
        } => scroll(direction, index, pages)?,
        Action::GoBack {} => {
            let window = web_sys::window().ok_or_else(|| failed("no window"))?;
            window
                .history()
                .and_then(|h| h.back())
                .map_err(|e| failed(&js_text(&e)))?;
            settle().await;
            "went back in history".to_owned()
        }
        other => return Err(failed(&format!("`{}` is not a page action", other.name()))),
    };
    let url = current_url();
    Ok(Effect {
        summary,
        url_changed: url != before,
        url,
        value: None,
    })
}

/// An `action_failed` error.
fn failed(why: &str) -> Fail {
    Fail::new(ErrorCode::ActionFailed, why)
}

/// A thrown JS value as text.
fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            Reflect::get(e, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// The top window's URL.
fn current_url() -> String {
    web_sys::window()
        .and_then(|w| w.location().href().ok())
        .unwrap_or_default()
}

/// Lets the page react (event handlers, re-renders, `pushState`).
async fn settle() {
    gloo_timers::future::TimeoutFuture::new(SETTLE_MS).await;
}

/// `[12] <button> Submit`: how an element is named in summaries.
fn describe(index: u32, el: &Element) -> String {
    let tag = el.local_name();
    let field = matches!(tag.as_str(), "input" | "select" | "textarea");
    let own_text = || {
        el.text_content()
            .map(|t| collapse(&t))
            .filter(|t| !t.is_empty())
    };
    let name = attr(el, "aria-label")
        .or_else(|| {
            if field {
                dom::field_label(el)
            } else {
                own_text()
            }
        })
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
fn usable(index: u32) -> Result<Element, Fail> {
    let el = registry::element(index)?;
    if dom::is_disabled(&el, &el.local_name()) {
        return Err(failed(&format!("{} is disabled", describe(index, &el))));
    }
    Ok(el)
}

/// Scrolls the element to the middle of its window when its centre is not
/// in view, then returns the centre of its visible part (in its own
/// window's coordinates).
fn centre_in_view(el: &Element, window: &Window) -> (f64, f64) {
    let vw = window
        .inner_width()
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let vh = window
        .inner_height()
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0);
    let centre = |r: &web_sys::DomRect| (r.x() + r.width() / 2.0, r.y() + r.height() / 2.0);
    let (x, y) = centre(&el.get_bounding_client_rect());
    if !(0.0..vw).contains(&x) || !(0.0..vh).contains(&y) {
        let options = ScrollIntoViewOptions::new();
        options.set_block(ScrollLogicalPosition::Center);
        options.set_inline(ScrollLogicalPosition::Center);
        options.set_behavior(ScrollBehavior::Instant);
        el.scroll_into_view_with_scroll_into_view_options(&options);
    }
    let r = el.get_bounding_client_rect();
    let x0 = r.x().max(0.0);
    let y0 = r.y().max(0.0);
    let x1 = (r.x() + r.width()).min(vw).max(x0);
    let y1 = (r.y() + r.height()).min(vh).max(y0);
    ((x0 + x1) / 2.0, (y0 + y1) / 2.0)
}

/// The keys held during a click.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Keys {
    alt: bool,
    ctrl: bool,
    meta: bool,
    shift: bool,
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
            .and_then(|e| target.dispatch_event(&e))
            .unwrap_or(true)
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
            .and_then(|e| target.dispatch_event(&e))
            .unwrap_or(true)
    }
}

/// What a click lands on: the deepest element at the point (through open
/// shadow roots) when it belongs to the element, else the element itself.
fn click_target(el: &Element, x: f64, y: f64) -> Element {
    let Some(mut hit) = dom::element_at(el, x, y) else {
        return el.clone();
    };
    if !(hit == *el || el.contains(Some(&hit))) {
        return el.clone();
    }
    while let Some(deeper) = hit
        .shadow_root()
        .and_then(|s| s.element_from_point(x as f32, y as f32))
        .filter(|d| *d != hit)
    {
        hit = deeper;
    }
    hit
}

/// Clicks element `index` and says what happened.
async fn click(index: u32, button: ClickButton, modifiers: &[Modifier]) -> Result<String, Fail> {
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
    m.pointer(&target, "pointerdown", true, code, mask);
    let down = m.mouse(&target, "mousedown", true, code, mask, 1);
    if down {
        focus_from(&target, &el);
    }
    if button == ClickButton::Right {
        m.mouse(&target, "contextmenu", true, code, mask, 0);
    }
    m.pointer(&target, "pointerup", true, code, 0);
    m.mouse(&target, "mouseup", true, code, 0, 1);
    // The click itself, dispatched with its coordinates and keys; the
    // browser runs its activation behaviour (links, submit buttons,
    // checkboxes, labels) as for `HTMLElement.click()`.
    let kind = if button == ClickButton::Left {
        "click"
    } else {
        "auxclick"
    };
    m.mouse(&target, kind, true, code, 0, 1);

    let what = match button {
        ClickButton::Left => "clicked",
        ClickButton::Middle => "middle-clicked",
        ClickButton::Right => "right-clicked",
    };
    let mut summary = format!("{what} {}", describe(index, &el));
    settle().await;
    if el.local_name() == "input" && el.is_connected() {
        let input = el.unchecked_ref::<HtmlInputElement>();
        if matches!(input.type_().as_str(), "checkbox" | "radio") {
            summary.push_str(if input.checked() {
                " (now checked)"
            } else {
                " (now unchecked)"
            });
        }
    }
    Ok(summary)
}

/// Focuses what a mouse-down at `target` focuses: the first focusable
/// element from `target` up to `el`.
fn focus_from(target: &Element, el: &Element) {
    let mut node = Some(target.clone());
    while let Some(n) = node {
        if dom::is_focusable(&n) {
            let _ = n.unchecked_ref::<HtmlElement>().focus();
            return;
        }
        if n == *el {
            return;
        }
        node = dom::flat_parent(&n);
    }
}

/// Calls the prototype's own `value` setter of the element's realm.
fn set_native_value(el: &Element, class: &str, value: &str) -> Result<(), JsValue> {
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
                setter
                    .unchecked_ref::<Function>()
                    .call1(el, &value.into())?;
                return Ok(());
            }
        }
    }
    Reflect::set(el, &"value".into(), &value.into()).map(|_| ())
}

/// Fires `input` (as typed text) and `change`.
fn fire_input_and_change(el: &Element, data: &str, with_change: bool) {
    let init = InputEventInit::new();
    init.set_bubbles(true);
    init.set_composed(true);
    init.set_input_type("insertText");
    init.set_data(Some(data));
    if let Ok(e) = InputEvent::new_with_event_init_dict("input", &init) {
        let _ = el.dispatch_event(&e);
    }
    if with_change {
        let init = EventInit::new();
        init.set_bubbles(true);
        if let Ok(e) = Event::new_with_event_init_dict("change", &init) {
            let _ = el.dispatch_event(&e);
        }
    }
}

/// Fills element `index` with `value` and reads it back.
async fn fill(index: u32, value: &str, before: String) -> Result<Effect, Fail> {
    let el = usable(index)?;
    let tag = el.local_name();
    let who = describe(index, &el);
    let mut secret = false;
    match tag.as_str() {
        "input" => {
            let input = el.unchecked_ref::<HtmlInputElement>();
            let kind = input.type_().to_ascii_lowercase();
            if !text::is_text_input(&kind) {
                return Err(failed(&format!(
                    "{who} is a {kind} input: click it instead of filling it"
                )));
            }
            if input.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            secret = kind == "password";
            let _ = input.focus();
            set_native_value(&el, "HTMLInputElement", value).map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, value, true);
        }
        "textarea" => {
            let area = el.unchecked_ref::<HtmlTextAreaElement>();
            if area.read_only() {
                return Err(failed(&format!("{who} is read-only")));
            }
            let _ = area.focus();
            set_native_value(&el, "HTMLTextAreaElement", value)
                .map_err(|e| failed(&js_text(&e)))?;
            fire_input_and_change(&el, value, true);
        }
        "select" => choose_option(&el, index, value)?,
        _ if el.unchecked_ref::<HtmlElement>().is_content_editable() => {
            let _ = el.unchecked_ref::<HtmlElement>().focus();
            el.set_text_content(Some(value));
            fire_input_and_change(&el, value, false);
        }
        _ => {
            return Err(failed(&format!(
                "{who} is not a text field: it cannot be filled"
            )));
        }
    }
    settle().await;
    let now = read_value(&el, &tag);
    let matches = if tag == "select" {
        now.trim().eq_ignore_ascii_case(value.trim())
            || el.unchecked_ref::<HtmlSelectElement>().value() == value
    } else if tag == "input" || tag == "textarea" {
        now == value
    } else {
        collapse(&now) == collapse(value)
    };
    if !matches {
        return Err(failed(&if secret {
            format!("{who} did not keep the password typed into it")
        } else {
            format!(
                "{who} holds \"{}\" after filling, not \"{}\"",
                truncate(&now, 80),
                truncate(value, 80)
            )
        }));
    }
    let url = current_url();
    let summary = if secret {
        format!("filled {who} with a password")
    } else {
        format!("filled {who} with \"{}\"", truncate(value, 60))
    };
    Ok(Effect {
        summary,
        url_changed: url != before,
        url,
        value: (!secret).then_some(now),
    })
}

/// What a field holds now (a select: its chosen option's text).
fn read_value(el: &Element, tag: &str) -> String {
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
        _ => el.text_content().unwrap_or_default(),
    }
}

/// Chooses the option of a `<select>` whose text (or value) is `wanted`.
fn choose_option(el: &Element, index: u32, wanted: &str) -> Result<(), Fail> {
    let select = el.unchecked_ref::<HtmlSelectElement>();
    let wanted_text = collapse(wanted);
    let options: Vec<(String, String)> = (0..select.length())
        .filter_map(|i| select.item(i))
        .map(|o| {
            let o = o.unchecked_into::<HtmlOptionElement>();
            (collapse(&o.text()), o.value())
        })
        .collect();
    let found = options
        .iter()
        .position(|(t, _)| *t == wanted_text)
        .or_else(|| {
            options
                .iter()
                .position(|(t, _)| t.eq_ignore_ascii_case(&wanted_text))
        })
        .or_else(|| options.iter().position(|(_, v)| v == wanted));
    let Some(i) = found else {
        let shown: Vec<String> = text::options_shown(options.into_iter().map(|(t, _)| t));
        return Err(failed(&format!(
            "{} has no option \"{}\"; its options begin {}",
            describe(index, el),
            truncate(wanted, 60),
            shown.join("|")
        )));
    };
    let _ = select.focus();
    select.set_selected_index(i as i32);
    fire_input_and_change(el, wanted, true);
    Ok(())
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
    let sign = if matches!(direction, ScrollDirection::Up | ScrollDirection::Left) {
        -1.0
    } else {
        1.0
    };
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
            let size = if vertical {
                b.client_height()
            } else {
                b.client_width()
            };
            let step = sign * pages * f64::from(size);
            let pos = |b: &Element| {
                if vertical {
                    b.scroll_top()
                } else {
                    b.scroll_left()
                }
            };
            let start = pos(&b);
            if vertical {
                options.set_top(step)
            } else {
                options.set_left(step)
            }
            b.scroll_by_with_scroll_to_options(&options);
            let end = if vertical {
                b.scroll_height() - b.client_height()
            } else {
                b.scroll_width() - b.client_width()
            };
            (
                f64::from(pos(&b) - start),
                f64::from(pos(&b)),
                f64::from(end),
                format!("the box holding {who}"),
            )
        }
        None => {
            let size = if vertical {
                n(window.inner_height())
            } else {
                n(window.inner_width())
            };
            let pos =
                |w: &Window| if vertical { w.scroll_y() } else { w.scroll_x() }.unwrap_or(0.0);
            let start = pos(&window);
            if vertical {
                options.set_top(sign * pages * size)
            } else {
                options.set_left(sign * pages * size)
            }
            window.scroll_by_with_scroll_to_options(&options);
            let root = window.document().and_then(|d| d.document_element());
            let end = root.map_or(0.0, |r| {
                if vertical {
                    f64::from(r.scroll_height()) - size
                } else {
                    f64::from(r.scroll_width()) - size
                }
            });
            (
                pos(&window) - start,
                pos(&window),
                end.max(0.0),
                "the page".to_owned(),
            )
        }
    };
    if moved.abs() < 1.0 {
        let edge = match direction {
            ScrollDirection::Up => "top",
            ScrollDirection::Down => "bottom",
            ScrollDirection::Left => "left edge",
            ScrollDirection::Right => "right edge",
        };
        return Ok(format!(
            "did not scroll {word}: {what} is already at the {edge}"
        ));
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
        let tag = n.local_name();
        if tag == "body" || tag == "html" {
            return None;
        }
        let overflows = if vertical {
            n.scroll_height() > n.client_height()
        } else {
            n.scroll_width() > n.client_width()
        };
        if overflows {
            let style = dom::window_of(&n).and_then(|w| w.get_computed_style(&n).ok().flatten());
            let prop = if vertical { "overflow-y" } else { "overflow-x" };
            let value = style
                .and_then(|s| s.get_property_value(prop).ok())
                .unwrap_or_default();
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
        assert_eq!(
            k,
            Keys {
                ctrl: true,
                shift: true,
                ..Keys::default()
            }
        );
        let k = Keys::from(&[Modifier::ControlOrMeta], true);
        assert_eq!(
            k,
            Keys {
                meta: true,
                ..Keys::default()
            }
        );
    }
}

//! Event synthesis: the primitives every action family and `keys.rs`,
//! `selects.rs` share — mouse and pointer events as a real mouse dispatches
//! them (coordinates, buttons, held modifier keys), a field's value set
//! through its prototype's own setter and read back, and the `input` and
//! `change` events a person's typing fires. `change` after typing comes as
//! a browser fires it: the keyboard's edits of a field are noted
//! ([`note_edit`]) and committed ([`commit_edit`]) when the field takes
//! Enter (`keys.rs`) or loses the focus (`focus.rs`), firing `change` only
//! when the value differs from the one it held before the edit.

use crate::proto;
use errand_protocol::{ClickButton, Modifier};
use js_sys::{Function, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    Element, Event, EventInit, HtmlInputElement, HtmlOptionElement, HtmlSelectElement,
    HtmlTextAreaElement, InputEvent, InputEventInit, MouseEvent, MouseEventInit, PointerEvent,
    PointerEventInit, Window,
};

use crate::text::collapse;
use crate::{dom, focus};

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
    pub(crate) fn from(modifiers: &[Modifier], mac: bool) -> Keys {
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
pub(crate) fn button_codes(button: ClickButton) -> (i16, u16) {
    match button {
        ClickButton::Left => (0, 1),
        ClickButton::Middle => (1, 4),
        ClickButton::Right => (2, 2),
    }
}

/// Whether the browser runs on a Mac (for `ControlOrMeta`).
pub(crate) fn is_mac(window: &Window) -> bool {
    Reflect::get(window, &"navigator".into())
        .and_then(|n| Reflect::get(&n, &"platform".into()))
        .ok()
        .and_then(|p| p.as_string())
        .is_some_and(|p| p.starts_with("Mac"))
}

/// Where and how a synthetic mouse acts.
pub(crate) struct Mouse {
    pub(crate) window: Window,
    pub(crate) x: f64,
    pub(crate) y: f64,
    pub(crate) keys: Keys,
}

impl Mouse {
    /// Fills the fields every mouse and pointer event shares.
    pub(crate) fn init(
        &self,
        init: &MouseEventInit,
        bubbles: bool,
        button: i16,
        buttons: u16,
        detail: i32,
    ) {
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
    pub(crate) fn mouse(
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
    pub(crate) fn press(&self, target: &Element) {
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
    pub(crate) fn pointer(
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

/// Focuses what a mouse-down at `target` focuses: the first focusable
/// element from `target` up (through shadow roots); when there is none, the
/// focused element loses the focus, as on a click on the page's background.
pub(crate) fn focus_from(target: &Element) {
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

thread_local! {
    /// Text fields the keyboard edited since their last `change` (or since
    /// they got the focus), with the value they held then: a browser fires
    /// `change` when such a field loses the focus or Enter is pressed in
    /// it, and only when the value differs.
    static EDITED: std::cell::RefCell<Vec<(Element, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Notes that the keyboard is about to edit `el` (an input or textarea):
/// the value it holds now is what its next `change` compares with, unless
/// an earlier edit since its last `change` noted one.
pub fn note_edit(el: &Element) {
    let tag = proto::local_name(el);
    if !matches!(tag.as_str(), "input" | "textarea") {
        return;
    }
    EDITED.with(|e| {
        let mut e = e.borrow_mut();
        if e.iter().any(|(f, _)| f == el) {
            return;
        }
        e.retain(|(f, _)| proto::is_connected(f));
        if e.len() >= 16 {
            e.remove(0);
        }
        e.push((el.clone(), read_value(el, &tag)));
    });
}

/// Ends the keyboard's edit of `el` as a browser does when the field
/// loses the focus or takes Enter: `change` when its value differs from
/// the one it held before the edit; `true` when it fired.
pub fn commit_edit(el: &Element) -> bool {
    let Some(base) = forget_edit(el) else {
        return false;
    };
    if !proto::is_connected(el) || read_value(el, &proto::local_name(el)) == base {
        return false;
    }
    let _ = fire_change(el);
    true
}

/// Forgets the keyboard's edit of `el` (a fill fired its own `change`);
/// the value it held before it, when there was one.
pub fn forget_edit(el: &Element) -> Option<String> {
    EDITED.with(|e| {
        let mut e = e.borrow_mut();
        let at = e.iter().position(|(f, _)| f == el)?;
        Some(e.remove(at).1)
    })
}

/// Forgets every edit (the task ended).
pub fn forget_edits() {
    EDITED.with(|e| e.borrow_mut().clear());
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

//! Watching what an action does: a `MutationObserver` on the page, started
//! before the action and read after it.
//!
//! Actions wait for the page to settle by watching it, never by a fixed
//! sleep: after the action the watch looks until one look sees the page
//! still. A look is one task of the page's event loop (the handlers' own
//! timers of 0 ms, promise jobs, a framework's re-render after a discrete
//! event, which React and Vue flush within the event's task or a
//! microtask), preceded by a rendering frame when the page mutated since
//! the last look (what `requestAnimationFrame` callbacks draw, capped at
//! [`FRAME_MS`] for tabs that paint no frames). Still means: no mutation
//! during the look, no request that started since the action still in
//! flight, none ended in the last [`QUIET_MS`] (the network is counted by
//! the service worker, see [`crate::net`]; only an answer asked after a
//! first answer came back counts, so that a request the action started has
//! reached the service worker's books by then), so a click whose answer
//! comes from the server reports what the answer changed. A page that
//! changes nothing and whose scripts start no request (`fetch`,
//! `XMLHttpRequest`, as the page-world script `main-listeners.js` notes)
//! is settled after one task, without asking the service worker (after a
//! frame too when a handler asked for a frame callback); the wait is
//! capped at [`MAX_MS`]. An action that starts
//! loading a new page (a
//! link, a form submitted, a script setting `location`; seen by the
//! Navigation API's `navigate` event) ends the wait at once: the document
//! is about to go, and the reply must leave before it does. Then it
//! reports what changed: the visible
//! elements that appeared (menus, suggestions, dialogs, messages; not
//! those that replaced an element showing the same text in the same place,
//! a redraw), and the fields that are now invalid.

use crate::proto;
use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Array;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Element, MutationObserver, MutationObserverInit, MutationRecord, Node};

use crate::dom::{self, attr};
use crate::net::{Probe, Verdict};
use crate::text::{collapse, truncate};

/// How long after its last request ended the page counts as still, and
/// how long `type`'s wait needs no mutation once the page answered.
pub const QUIET_MS: f64 = 60.0;
/// The longest wait for a rendering frame after a mutation (a background
/// tab paints none).
pub const FRAME_MS: u32 = 34;
/// The longest wait for the page to settle.
pub const MAX_MS: f64 = 3000.0;
/// How long `type` waits for an autocomplete's debounce.
pub const TYPE_QUIET_MS: f64 = 400.0;
/// How often the watch looks.
const POLL_MS: u32 = 10;
/// How long a still page waits for the service worker's first word on the
/// network before settling without it.
const NET_ANSWER_MS: f64 = 250.0;
/// The most appeared elements reported.
const MAX_APPEARED: usize = 8;

#[derive(Default)]
struct Seen {
    /// Elements added (top-level of each addition).
    added: Vec<Element>,
    /// Elements removed.
    removed: u32,
    /// What the removed elements showed, and where (their parent): an
    /// element added in the same place with the same text is a redraw,
    /// not news.
    gone: Vec<(Node, String)>,
    /// Mutations seen.
    count: u32,
    /// When the last one came (`performance.now()`).
    last: f64,
}

/// Notes a batch of mutation records.
fn record(s: &mut Seen, records: &Array) {
    s.last = now();
    for r in records.iter() {
        let r: MutationRecord = r.unchecked_into();
        s.count += 1;
        if r.type_() != "childList" {
            continue;
        }
        let added = r.added_nodes();
        for i in 0..added.length() {
            if let Some(n) = added.item(i) {
                if proto::node_type(&n) == Node::ELEMENT_NODE && s.added.len() < 200 {
                    s.added.push(n.unchecked_into());
                }
            }
        }
        let removed = r.removed_nodes();
        for i in 0..removed.length() {
            if let Some(n) = removed.item(i).filter(|n| proto::node_type(&n) == Node::ELEMENT_NODE)
            {
                s.removed += 1;
                if let Some(place) = r.target().filter(|_| s.gone.len() < 200) {
                    s.gone.push((place, collapse(&proto::text_content(&n).unwrap_or_default())));
                }
            }
        }
    }
}

/// A running watch; stops observing on drop.
pub struct Watch {
    observer: MutationObserver,
    seen: Rc<RefCell<Seen>>,
    _callback: Closure<dyn FnMut(Array, MutationObserver)>,
    /// Hidden elements near the acted one (menus, popups that CSS shows).
    hidden: Vec<Element>,
    started: f64,
    /// When the last `settle` ended (0: never).
    settled_at: std::cell::Cell<f64>,
    url: String,
    /// The requests started since the watch began.
    net: Probe,
    /// A new document that started loading in the top window.
    leaving: Leaving,
}

/// Listens to the top window's `navigation` for a new document starting to
/// load (not same-document navigations, whose URL change is seen anyway,
/// nor downloads); stops listening on drop.
struct Leaving {
    to: Rc<RefCell<Option<String>>>,
    target: Option<web_sys::EventTarget>,
    listener: Closure<dyn FnMut(web_sys::Event)>,
}

impl Leaving {
    fn start() -> Leaving {
        let to = Rc::new(RefCell::new(None));
        let sink = to.clone();
        let listener = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            let get = |v: &JsValue, k: &str| js_sys::Reflect::get(v, &k.into()).ok();
            let dest = get(&e, "destination").filter(|d| d.is_object());
            let same_document = dest.as_ref().and_then(|d| get(d, "sameDocument"));
            let download = get(&e, "downloadRequest").filter(|d| !d.is_null() && !d.is_undefined());
            if same_document.is_some_and(|s| s.is_truthy()) || download.is_some() {
                return;
            }
            let url = dest.and_then(|d| get(&d, "url")).and_then(|u| u.as_string());
            *sink.borrow_mut() = Some(url.unwrap_or_default());
        });
        let target = web_sys::window()
            .and_then(|w| js_sys::Reflect::get(&w, &"navigation".into()).ok())
            .filter(|n| n.is_object())
            .map(JsCast::unchecked_into::<web_sys::EventTarget>);
        if let Some(t) = &target {
            let _ =
                t.add_event_listener_with_callback("navigate", listener.as_ref().unchecked_ref());
        }
        Leaving { to, target, listener }
    }

    /// Where the new document comes from, once one started loading.
    fn to(&self) -> Option<String> {
        self.to.borrow().clone()
    }
}

impl Drop for Leaving {
    fn drop(&mut self) {
        if let Some(t) = &self.target {
            let _ = t.remove_event_listener_with_callback(
                "navigate",
                self.listener.as_ref().unchecked_ref(),
            );
        }
    }
}

/// What changed while watching.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    pub url: String,
    pub url_changed: bool,
    /// Elements added or removed.
    pub dom_changed: bool,
    pub appeared: Vec<String>,
    pub invalid: Vec<String>,
    /// A new page started loading (from this URL; the action's reply is
    /// the old document's last word).
    pub loading: Option<String>,
}

fn now() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// What the page's scripts did since a time, as the page-world script
/// says (`extension/main-listeners.js`, answering before the ask
/// returns): when the last request (`fetch`, `XMLHttpRequest`) started
/// and when a frame callback was last asked for (`performance.now()`; -1:
/// never). `None` when it does not answer (not in this document).
fn page_activity() -> Option<(f64, f64)> {
    let document = web_sys::window().and_then(|w| w.document())?;
    let requests = Rc::new(std::cell::Cell::new(None::<f64>));
    let frames = Rc::new(std::cell::Cell::new(None::<f64>));
    let listen = |sink: Rc<std::cell::Cell<Option<f64>>>| {
        Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
            e.stop_immediate_propagation();
            let detail = js_sys::Reflect::get(&e, &"detail".into()).ok().and_then(|d| d.as_f64());
            sink.set(detail);
        })
    };
    let listeners =
        [("errand-requests", listen(requests.clone())), ("errand-frames", listen(frames.clone()))];
    let target: &web_sys::EventTarget = document.as_ref();
    for (kind, l) in &listeners {
        let _ = target.add_event_listener_with_callback_and_bool(
            kind,
            l.as_ref().unchecked_ref(),
            true,
        );
    }
    if let Ok(ask) = web_sys::Event::new("errand-requests-ask") {
        let _ = proto::dispatch_event(target, &ask);
    }
    for (kind, l) in &listeners {
        let _ = target.remove_event_listener_with_callback_and_bool(
            kind,
            l.as_ref().unchecked_ref(),
            true,
        );
    }
    Some((requests.get()?, frames.get()?))
}

/// Resolves after one task of the event loop (a 0 ms timer: after the
/// timers of 0 ms the action's handlers set).
async fn next_task() {
    gloo_timers::future::TimeoutFuture::new(0).await;
}

/// Resolves at the next rendering frame's `requestAnimationFrame`
/// callbacks, or after `cap_ms` when no frame comes.
pub(crate) async fn next_frame(cap_ms: u32) {
    let Some(window) = web_sys::window() else { return };
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let frame = Closure::once_into_js({
            let resolve = resolve.clone();
            move || {
                let _ = resolve.call0(&JsValue::NULL);
            }
        });
        let timer = Closure::once_into_js(move || {
            let _ = resolve.call0(&JsValue::NULL);
        });
        let _ = window.request_animation_frame(frame.unchecked_ref());
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
            timer.unchecked_ref(),
            i32::try_from(cap_ms).unwrap_or(i32::MAX),
        );
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// The top window's URL.
pub fn current_url() -> String {
    web_sys::window().and_then(|w| w.location().href().ok()).unwrap_or_default()
}

impl Watch {
    /// Starts watching the whole document (and `extra`'s root, when the
    /// acted element lives in a shadow root or an iframe).
    pub fn start(extra: Option<&Element>) -> Watch {
        let seen = Rc::new(RefCell::new(Seen { last: now(), ..Seen::default() }));
        let sink = seen.clone();
        let callback = Closure::<dyn FnMut(Array, MutationObserver)>::new(
            move |records: Array, _: MutationObserver| record(&mut sink.borrow_mut(), &records),
        );
        let observer = MutationObserver::new(callback.as_ref().unchecked_ref())
            .expect("MutationObserver exists");
        let init = MutationObserverInit::new();
        init.set_child_list(true);
        init.set_subtree(true);
        init.set_attributes(true);
        init.set_character_data(true);
        if let Some(root) =
            web_sys::window().and_then(|w| w.document()).and_then(|d| proto::document_element(&d))
        {
            let _ = observer.observe_with_options(&root, &init);
        }
        if let Some(el) = extra {
            let root = proto::get_root_node(&el);
            let top = web_sys::window().and_then(|w| w.document());
            let is_top = top.is_some_and(|d| {
                let d: &Node = d.as_ref();
                *d == root
            });
            if !is_top {
                let _ = observer.observe_with_options(&root, &init);
            }
        }
        Watch {
            observer,
            seen,
            _callback: callback,
            hidden: extra.map(hidden_near).unwrap_or_default(),
            started: now(),
            settled_at: std::cell::Cell::new(0.0),
            url: current_url(),
            net: Probe::start(),
            leaving: Leaving::start(),
        }
    }

    /// Waits until the page is still (see the module's doc).
    pub async fn settle(&self) {
        // Settled already, and nothing moved since: no need to wait again.
        let pending = self.observer.take_records();
        if pending.length() > 0 {
            record(&mut self.seen.borrow_mut(), &pending);
        }
        let at = self.settled_at.get();
        let still = at > 0.0 && self.seen.borrow().last <= at && current_url() == self.url;
        if still || self.leaving.to().is_some() {
            return;
        }
        self.wait_still().await;
        self.settled_at.set(now());
    }

    /// Waits until the page has been still for `quiet_ms`, even when
    /// nothing has moved yet: after typing, autocompletes answer after a
    /// debounce timer, which no mutation announces.
    pub async fn settle_for(&self, quiet_ms: f64) {
        // What the typing itself changed is not the page's answer to it.
        let pending = self.observer.take_records();
        if pending.length() > 0 {
            record(&mut self.seen.borrow_mut(), &pending);
        }
        let begin = now();
        self.seen.borrow_mut().last = begin;
        let mut still_since = None;
        // Still at two polls in a row: a busy machine runs the page's
        // overdue debounce timer before the second one.
        let mut was_still = false;
        while self.leaving.to().is_none() {
            self.net.ask();
            gloo_timers::future::TimeoutFuture::new(POLL_MS).await;
            let pending = self.observer.take_records();
            if pending.length() > 0 {
                record(&mut self.seen.borrow_mut(), &pending);
            }
            let t = now();
            let last = self.seen.borrow().last;
            // Something appeared: then the usual quiet window is enough.
            let quiet = if last > begin { QUIET_MS } else { quiet_ms };
            if t - begin >= MAX_MS {
                break;
            }
            if t - last >= quiet && self.network_still(t, last, false, &mut still_since) {
                if was_still {
                    break;
                }
                was_still = true;
            } else {
                was_still = false;
            }
        }
        self.settled_at.set(now());
    }

    async fn wait_still(&self) {
        let mut still_since = None;
        // Where the previous look began: a mutation since then is
        // followed by a frame before the next look.
        let mut looked = self.started;
        let mut first = true;
        while self.leaving.to().is_none() {
            self.take_records();
            let mark = now();
            let moved = {
                let s = self.seen.borrow();
                s.count > 0 && s.last >= looked
            };
            // What the page's scripts did: a request started since the
            // action, a frame callback asked for since the last look (a
            // handler that draws in the next frame).
            let activity = page_activity();
            let drawing = activity.is_some_and(|(_, frame)| frame >= looked);
            let requested = activity.is_some_and(|(request, _)| request >= self.started);
            // Ask the service worker ahead, so its answer is there when the
            // page is still — unless this is the first look at a page that
            // has not moved, asked for no frame and started no request: one
            // task will most likely find it still without the answer (the
            // question costs the page's thread and the worker's ~1 ms).
            if !first || moved || drawing || requested || activity.is_none() {
                self.net.ask();
            }
            first = false;
            looked = mark;
            if moved || drawing {
                next_frame(FRAME_MS).await;
            }
            next_task().await;
            self.take_records();
            let t = now();
            if t - self.started >= MAX_MS {
                return;
            }
            let (count, last) = {
                let s = self.seen.borrow();
                (s.count, s.last)
            };
            let activity = page_activity();
            let requested = activity.is_some_and(|(request, _)| request >= self.started);
            if count == 0 && !requested && activity.is_some_and(|(_, frame)| frame < mark) {
                // Nothing changed, no page script started a request or
                // asked for a frame during the look: still without asking
                // the service worker.
                crate::ready::found_still();
                return;
            }
            let quiet = count == 0 || last < mark;
            if quiet && self.network_still(t, last, requested, &mut still_since) {
                crate::ready::found_still();
                return;
            }
        }
    }

    /// Notes the mutation records not delivered yet.
    fn take_records(&self) {
        let pending = self.observer.take_records();
        if pending.length() > 0 {
            record(&mut self.seen.borrow_mut(), &pending);
        }
    }

    /// Whether the network lets a page without mutations since `last`
    /// count as still at `t`: no request started since the action in
    /// flight, and none ended in the last [`QUIET_MS`], by an answer asked
    /// after the last mutation and after a first answer came back (a
    /// request started with the action or the mutation is known then).
    /// When a page script started a request since the action
    /// (`requested`) and the service worker knows of none yet, its word
    /// is waited for too. Without an answer for [`NET_ANSWER_MS`]
    /// (`still_since`: since when the page has been still otherwise), the
    /// network is left out.
    fn network_still(
        &self,
        t: f64,
        last: f64,
        requested: bool,
        still_since: &mut Option<f64>,
    ) -> bool {
        let fresh_from = last.max(self.net.first_answer().unwrap_or(f64::INFINITY));
        match self.net.verdict(fresh_from) {
            Verdict::Unknown => true,
            Verdict::Idle(None) if requested => t - *still_since.get_or_insert(t) >= NET_ANSWER_MS,
            Verdict::Idle(ended) => ended.is_none_or(|e| t - e >= QUIET_MS),
            Verdict::Busy => false,
            Verdict::Waiting => t - *still_since.get_or_insert(t) >= NET_ANSWER_MS,
        }
    }

    /// Whether visible elements were added to the page since the watch
    /// began (a menu, suggestions, a calendar; not a redraw).
    pub fn added_any(&self) -> bool {
        let pending = self.observer.take_records();
        if pending.length() > 0 {
            record(&mut self.seen.borrow_mut(), &pending);
        }
        let seen = self.seen.borrow();
        seen.added.iter().any(|el| {
            proto::is_connected(&el) && !redrawn(&seen.gone, el) && describe_new(el).is_some()
        })
    }

    /// Whether a visible element added since the watch began, outside
    /// `except`, shows `text` (case and spacing aside): where a value the
    /// page took out of a field went (a new list item, a chip, a message).
    pub fn added_shows(&self, text: &str, except: &Element) -> bool {
        let want = crate::text::lower(&collapse(text));
        if want.is_empty() {
            return false;
        }
        let pending = self.observer.take_records();
        if pending.length() > 0 {
            record(&mut self.seen.borrow_mut(), &pending);
        }
        let seen = self.seen.borrow();
        seen.added.iter().any(|el| {
            proto::is_connected(&el)
                && !proto::contains(except, Some(el))
                && describe_new(el).is_some()
                && crate::text::lower(&collapse(&proto::text_content(el).unwrap_or_default()))
                    .contains(&want)
        })
    }

    /// Whether a new document started loading in the top window.
    pub fn leaving(&self) -> bool {
        self.leaving.to().is_some()
    }

    /// Stops watching and tells what changed; `acted` is the element the
    /// action targeted (its own changes are not news).
    pub fn finish(self, acted: Option<&Element>) -> Changes {
        self.observer.disconnect();
        let url = current_url();
        let seen = self.seen.borrow();
        let mut appeared = Vec::new();
        let mut tops: Vec<&Element> = Vec::new();
        let shown =
            self.hidden.iter().filter(|e| proto::is_connected(&e) && proto::check_visibility(e));
        for el in seen.added.iter().chain(shown) {
            if !proto::is_connected(&el) || crate::marks::current().is_some_and(|m| m == *el) {
                continue;
            }
            if acted.is_some_and(|a| a == el || proto::contains(&a, Some(el))) {
                continue;
            }
            if tops.iter().any(|t| proto::contains(&t, Some(el))) {
                continue;
            }
            if redrawn(&seen.gone, el) {
                continue;
            }
            tops.retain(|t| !proto::contains(&el, Some(t)));
            tops.push(el);
        }
        for el in tops {
            if appeared.len() >= MAX_APPEARED {
                break;
            }
            if let Some(d) = describe_new(el) {
                if !appeared.contains(&d) {
                    appeared.push(d);
                }
            }
        }
        let loading = self.leaving.to();
        let url = loading.clone().filter(|u| !u.is_empty()).unwrap_or(url);
        Changes {
            url_changed: url != self.url || loading.is_some(),
            loading,
            url,
            dom_changed: !seen.added.is_empty() || seen.removed > 0,
            appeared,
            invalid: invalid_fields(acted),
        }
    }
}

/// Whether `el` replaced an element with the same text in the same place
/// (a framework re-rendering the same validation messages).
fn redrawn(gone: &[(Node, String)], el: &Element) -> bool {
    let Some(parent) = proto::parent_node(&el) else {
        return false;
    };
    let text = collapse(&proto::text_content(&el).unwrap_or_default());
    gone.iter().any(|(p, t)| *p == parent && *t == text)
}

/// The hidden elements in the neighbourhood of `el` (under its third
/// ancestor), at most 400 looked at: a hover or a click may show them.
fn hidden_near(el: &Element) -> Vec<Element> {
    let mut top = el.clone();
    for _ in 0..3 {
        match dom::flat_parent(&top) {
            Some(p) if !matches!(proto::local_name(&p).as_str(), "body" | "html") => top = p,
            _ => break,
        }
    }
    let Ok(list) = proto::query_selector_all(&top, "*") else {
        return Vec::new();
    };
    (0..list.length().min(400))
        .filter_map(|i| list.item(i))
        .map(|n| n.unchecked_into::<Element>())
        .filter(|e| !proto::check_visibility(e))
        .collect()
}

/// Whether the element has a visible box.
fn visible(el: &Element) -> bool {
    let r = proto::get_bounding_client_rect(&el);
    // Screen-reader-only boxes (1×1 px, clipped) are not news for the eye.
    if r.width() <= 2.0 || r.height() <= 2.0 {
        return false;
    }
    dom::window_of(el)
        .and_then(|w| w.get_computed_style(el).ok().flatten())
        .and_then(|s| s.get_property_value("visibility").ok())
        .is_none_or(|v| v != "hidden")
}

/// A short description of a new element: `<ul role=listbox> Red | Green`.
fn describe_new(el: &Element) -> Option<String> {
    if !visible(el) {
        return None;
    }
    let tag = proto::local_name(&el);
    if matches!(tag.as_str(), "script" | "style" | "link" | "meta") {
        return None;
    }
    let role = attr(el, "role").map(|r| format!(" role={r}")).unwrap_or_default();
    let html: &web_sys::HtmlElement = el.unchecked_ref();
    let text = collapse(&proto::inner_text(&html));
    let text = if text.is_empty() { attr(el, "aria-label").unwrap_or_default() } else { text };
    let shown = truncate(&text, 120);
    Some(if shown.is_empty() { format!("<{tag}{role}>") } else { format!("<{tag}{role}> {shown}") })
}

/// Fields now marked invalid: `aria-invalid="true"` anywhere in the
/// document, and the acted field's own validation message.
fn invalid_fields(acted: Option<&Element>) -> Vec<String> {
    let mut out = Vec::new();
    let doc = web_sys::window().and_then(|w| w.document());
    if let Some(list) = doc.and_then(|d| proto::query_selector_all(&d, "[aria-invalid=true]").ok())
    {
        for i in 0..list.length().min(8) {
            if let Some(el) = list.item(i) {
                let el: Element = el.unchecked_into();
                let name = dom::field_label(&el)
                    .or_else(|| attr(&el, "aria-label"))
                    .or_else(|| attr(&el, "name"))
                    .or_else(|| attr(&el, "id"))
                    .unwrap_or_else(|| proto::local_name(&el));
                let msg = validation_message(&el)
                    .or_else(|| described_by(&el))
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                out.push(format!("{}{msg}", truncate(&name, 40)));
            }
        }
    }
    if let Some(el) = acted {
        if proto::get_attribute(&el, "aria-invalid").as_deref() != Some("true") {
            if let Some(m) = validation_message(el) {
                let name = dom::field_label(el)
                    .or_else(|| attr(el, "name"))
                    .unwrap_or_else(|| proto::local_name(&el));
                out.push(format!("{}: {m}", truncate(&name, 40)));
            }
        }
    }
    out
}

/// The browser's validation message of a form field, when it has one.
fn validation_message(el: &Element) -> Option<String> {
    js_sys::Reflect::get(el, &"validationMessage".into())
        .ok()
        .and_then(|v| v.as_string())
        .filter(|m| !m.is_empty())
}

/// The text of the elements named by `aria-describedby` / `aria-errormessage`.
fn described_by(el: &Element) -> Option<String> {
    let doc = proto::owner_document(&el)?;
    let ids = attr(el, "aria-errormessage").or_else(|| attr(el, "aria-describedby"))?;
    let text: Vec<String> = ids
        .split_whitespace()
        .filter_map(|id| proto::get_element_by_id(&doc, id))
        .filter_map(|e| proto::text_content(&e))
        .map(|t| collapse(&t))
        .filter(|t| !t.is_empty())
        .collect();
    (!text.is_empty()).then(|| truncate(&text.join(" "), 100))
}

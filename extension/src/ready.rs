//! Ready before seen: an observation waits until the page has settled.
//!
//! Content often arrives after `load` (a fetch, a timer), and a hover or
//! typed text opens a submenu or suggestions a moment later. Before each
//! observation of the top document, [`settle`] waits until the page is
//! still: no mutation for [`QUIET_MS`] (a document observed for the first
//! time must be loaded, and, unless it loaded [`FIRST_QUIET_MS`] ago, watched
//! that long without a mutation: what changed before the watch began is not
//! known, and what a script adds a moment after `load` comes from a timer
//! or a request, each waited for; in the top frame the watch begins with
//! the document, before the crate is there, by the note it takes over,
//! [`take_note`]), no request in flight that
//! started since the last observation (since the document began, the
//! first time; counted by the service worker, `net.rs`), and no finite CSS
//! transition or animation running (`document.getAnimations()`; endless
//! ones, spinners, never end and are not waited for; one seen running is
//! over for the page only at the next rendering frame, where its `finished`
//! promise runs, so that frame is waited for too). The wait is bounded
//! by [`MAX_MS`]; when it runs out the observation says the page was still
//! changing. Pictures are waited for too where a person would wait for
//! them: a usable element the walk found with an empty box because its
//! image has not come (an icon drawn by CSS `content: url(…)`, a link
//! around an `<img>` still loading; [`image_coming`]) holds the
//! observation until the image has come, at most [`IMAGE_WAIT_MS`]
//! (`observe.rs`), whether or not its request was seen starting. A page already still costs one look: the mutations are
//! watched between observations, so no quiet window has to be sat out,
//! nor after an action whose watch found the page still (`watch.rs`) and
//! nothing changed since.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, MutationObserver, MutationObserverInit};

use crate::net::{Probe, Verdict};

/// How long the page must have been still.
pub const QUIET_MS: f64 = 60.0;
/// How long after `load` a document observed for the first time counts as
/// still without having been watched for [`QUIET_MS`].
pub const FIRST_QUIET_MS: f64 = 400.0;
/// The longest wait.
pub const MAX_MS: f64 = 3000.0;
/// How often it looks.
const POLL_MS: u32 = 15;
/// How long a still page waits for the service worker's word on the
/// network before settling without it.
const NET_ANSWER_MS: f64 = 250.0;
/// The longest wait for the rendering frame that ends an animation seen
/// running (a background tab paints none).
const FRAME_WAIT_MS: u32 = 200;

thread_local! {
    /// Set by the page-world script's `errand-timers-pending` answer.
    static TIMERS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static ON_TIMERS: Closure<dyn FnMut(web_sys::Event)> =
        Closure::new(|e: web_sys::Event| {
            e.stop_immediate_propagation();
            TIMERS.with(|t| t.set(true));
        });
}

/// Whether a timer set by something other than a timer is due a moment
/// from now (`extension/main-listeners.js`): asked of the page-world
/// script, which answers before the ask returns.
fn timers_pending(document: &Document) -> bool {
    TIMERS.with(|t| t.set(false));
    if let Ok(ask) = web_sys::Event::new("errand-timers-ask") {
        let _ = crate::proto::dispatch_event(document.as_ref(), &ask);
    }
    TIMERS.with(|t| t.get())
}

struct State {
    document: Document,
    observer: MutationObserver,
    _callback: Closure<dyn FnMut(js_sys::Array)>,
    /// When the last mutation came (`performance.now()`).
    last: Rc<RefCell<f64>>,
    /// When the last observation ended (`Date.now()`): the requests that
    /// started since count.
    since: f64,
    /// The open shadow roots watched too ([`watch_shadows`]).
    shadows: Vec<web_sys::ShadowRoot>,
    /// When the watch began (`performance.now()`).
    began: f64,
    /// Whether an observation of this document has settled yet.
    observed: bool,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
    /// When an action's watch last found the page still
    /// (`performance.now()`; `watch.rs`).
    static STILL_AT: std::cell::Cell<f64> = const { std::cell::Cell::new(f64::NEG_INFINITY) };
    /// When a finite animation was last seen running (`performance.now()`).
    static ANIMATED_AT: std::cell::Cell<f64> = const { std::cell::Cell::new(f64::NEG_INFINITY) };
    /// When the last rendering frame waited for here came.
    static FRAMED_AT: std::cell::Cell<f64> = const { std::cell::Cell::new(f64::NEG_INFINITY) };
}

/// An action's watch found the page still now (no mutation during its
/// last look, no request in flight): the next observation does not sit out
/// the quiet window again unless the page changed since.
pub fn found_still() {
    STILL_AT.with(|s| s.set(now()));
    // An animation the action started (a popup fading out) is noted, so
    // that the observation waits for the frame that ends it even when its
    // time is up before the observation is asked for.
    if let Some(document) = web_sys::window().and_then(|w| w.document()) {
        animating(&document);
    }
}

fn now() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// The document's `loadEventEnd` (`performance.now()` time), or `None`
/// while it is loading.
fn loaded_at(document: &Document) -> Option<f64> {
    if document.ready_state() != "complete" {
        return None;
    }
    let perf = web_sys::window()?.performance()?;
    let entries = perf.get_entries_by_type("navigation");
    let nav = entries.get(0);
    let end = js_sys::Reflect::get(&nav, &"loadEventEnd".into()).ok()?.as_f64();
    Some(end.filter(|e| *e > 0.0).unwrap_or(0.0))
}

/// Whether a finite transition or animation is running in the document
/// or in one of the open shadow roots the walks went into: the document's
/// `getAnimations` leaves out those of shadow trees (checked: a design
/// system's popup fading out in its shadow root is not in it). Notes when
/// one was last seen running ([`ANIMATED_AT`]).
pub fn animating(document: &Document) -> bool {
    let running = animating_in(document.as_ref())
        || STATE.with(|s| {
            s.borrow().as_ref().is_some_and(|s| {
                s.shadows.iter().any(|r| {
                    crate::proto::is_connected(r.unchecked_ref()) && animating_in(r.as_ref())
                })
            })
        });
    if running {
        ANIMATED_AT.with(|a| a.set(now()));
    }
    running
}

/// Whether an animation was seen running since the last rendering frame
/// this module waited for: its end is known to scripts only at the next
/// frame. `playState` says `finished` as soon as its time is up, but its
/// `finished` promise and `onfinish` (where a popup is hidden once faded
/// out) run when the page next renders, which a busy machine delays by
/// hundreds of milliseconds: until then the page still shows it.
fn animation_unfinished() -> bool {
    ANIMATED_AT.with(|a| a.get()) > FRAMED_AT.with(|f| f.get())
}

/// Resolves at the next rendering frame's `requestAnimationFrame`
/// callbacks (after the animations' updates and their promise jobs), or
/// after [`FRAME_WAIT_MS`] when no frame comes (a tab that paints none),
/// then after a task, so that what the frame's callbacks scheduled has run.
async fn next_frame() {
    crate::watch::next_frame(FRAME_WAIT_MS).await;
    gloo_timers::future::TimeoutFuture::new(0).await;
}

/// Watches these open shadow roots (those a walk went into) too: their
/// mutations and animations are the page's changes.
pub fn watch_shadows(roots: &[web_sys::ShadowRoot]) {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let Some(s) = s.as_mut() else { return };
        s.shadows.retain(|r| crate::proto::is_connected(r.unchecked_ref()));
        for r in roots {
            if !s.shadows.contains(r) {
                let _ = s.observer.observe_with_options(r, &options());
                s.shadows.push(r.clone());
            }
        }
    });
}

fn options() -> MutationObserverInit {
    let init = MutationObserverInit::new();
    init.set_subtree(true);
    init.set_child_list(true);
    init.set_attributes(true);
    init.set_character_data(true);
    init
}

/// Whether a finite animation runs in a document or shadow root.
fn animating_in(target: &JsValue) -> bool {
    let Ok(get) = js_sys::Reflect::get(target, &"getAnimations".into()) else {
        return false;
    };
    let Some(get) = get.dyn_ref::<js_sys::Function>() else {
        return false;
    };
    let Ok(list) = get.call0(target) else {
        return false;
    };
    let list: js_sys::Array = list.unchecked_into();
    let key = |v: &JsValue, k: &str| js_sys::Reflect::get(v, &k.into()).unwrap_or_default();
    list.iter().any(|a| {
        if key(&a, "playState").as_string().as_deref() != Some("running") {
            return false;
        }
        let effect = key(&a, "effect");
        let timing = js_sys::Reflect::get(&effect, &"getComputedTiming".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .and_then(|f| f.call0(&effect).ok());
        // `endTime` is infinite for an endless animation.
        timing.and_then(|t| key(&t, "endTime").as_f64()).is_some_and(f64::is_finite)
    })
}

/// Starts watching `document` for its first observation (once per
/// document): the quiet window counts from now.
pub fn watch(document: &Document) {
    let fresh = STATE.with(|s| s.borrow().as_ref().is_none_or(|s| s.document != *document));
    if !fresh {
        return;
    }
    // What changed before: the note kept since the document began, taken
    // over; without one, watched from now, nothing seen yet: as if still
    // since long ago.
    let (began, before) = take_note().unwrap_or_else(|| (now(), f64::NEG_INFINITY));
    let last = Rc::new(RefCell::new(before));
    let sink = last.clone();
    let callback = Closure::<dyn FnMut(js_sys::Array)>::new(move |_: js_sys::Array| {
        *sink.borrow_mut() = now();
    });
    let Ok(observer) = MutationObserver::new(callback.as_ref().unchecked_ref()) else {
        return;
    };
    let _ = observer.observe_with_options(document, &options());
    ON_TIMERS.with(|f| {
        let _ = document.add_event_listener_with_callback_and_bool(
            "errand-timers-pending",
            f.as_ref().unchecked_ref(),
            true,
        );
    });
    // The first time, requests of the last second count (content fetched
    // at `load`; not a long poll from when the page began).
    let origin = js_sys::Date::now() - 1000.0;
    STATE.with(|s| {
        if let Some(old) = s.borrow_mut().replace(State {
            document: document.clone(),
            observer,
            _callback: callback,
            last,
            since: origin,
            shadows: Vec::new(),
            began,
            observed: false,
        }) {
            old.observer.disconnect();
        }
    });
}

/// Takes over the note of the changes of this frame's document (the one
/// the observations see) kept since it began (`extension/changes.js`, the
/// top frame): when that watch began and when the document last changed
/// (its observer's records not yet delivered count as a change now); the
/// observer is disconnected. `None` without a note still watching (another
/// frame, a document the loader was injected into, one whose note stopped
/// after `load`).
fn take_note() -> Option<(f64, f64)> {
    use crate::messages::field;
    let note = field(&js_sys::global(), "__errandChanges");
    // Checked: where the note is missing, a page's element named after it
    // answers (a form, whose fields answer for `observer`).
    let observer: MutationObserver = field(&note, "observer").dyn_into().ok()?;
    let _ = js_sys::Reflect::set(&note, &"observer".into(), &JsValue::NULL);
    let changed = observer.take_records().length() > 0;
    observer.disconnect();
    let last = if changed { now() } else { field(&note, "last").as_f64()? };
    Some((field(&note, "began").as_f64()?, last))
}

/// Whether `document` has not settled for an observation yet, and when
/// its watch began.
fn first_look() -> (bool, f64) {
    STATE.with(|s| s.borrow().as_ref().map_or((true, now()), |s| (!s.observed, s.began)))
}

/// From when a document observed for the first time counts as loaded and
/// past the moment after `load` (see [`settle`]); `None` while it loads.
fn first_loaded_at(document: &Document, began: f64) -> Option<f64> {
    loaded_at(document).map(|load| (load + FIRST_QUIET_MS).min(began + QUIET_MS))
}

/// From when the page counts as loaded and quiet (see [`settle`]) if
/// nothing changes meanwhile; `None` while it is loading. Quiet: still for
/// the quiet window since the last change, or found still by an action's
/// watch since then.
fn quiet_at(first: bool, document: &Document, began: f64, last: f64) -> Option<f64> {
    let loaded = if first { first_loaded_at(document, began)? } else { f64::NEG_INFINITY };
    let quiet =
        if STILL_AT.with(|s| s.get()) >= last { f64::NEG_INFINITY } else { last + QUIET_MS };
    Some(loaded.max(quiet))
}

/// The last mutation's time, records delivered first.
fn last_change() -> f64 {
    STATE.with(|s| {
        let s = s.borrow();
        let Some(s) = s.as_ref() else { return 0.0 };
        if s.observer.take_records().length() > 0 {
            *s.last.borrow_mut() = now();
        }
        *s.last.borrow()
    })
}

/// A wait for the page to settle, begun ([`Settling::start`]) and then
/// sat out ([`Settling::wait`]); the observation can walk in between.
pub struct Settling {
    net: Probe,
    start: f64,
    asked: f64,
}

/// Waits until the page has settled (see the module's doc); `false` when
/// the wait ran out while the page was still changing.
pub async fn settle(document: &Document) -> bool {
    Settling::start(document).wait(document).await
}

impl Settling {
    /// Starts watching `document` (once per document) and asks the
    /// service worker about requests in flight at once, so that a still
    /// page has its answer by the time it is found still (one round trip).
    pub fn start(document: &Document) -> Settling {
        watch(document);
        let since = STATE.with(|s| s.borrow().as_ref().map_or_else(js_sys::Date::now, |s| s.since));
        let net = Probe::start_at(since);
        let start = now();
        net.ask();
        Settling { net, start, asked: now() }
    }

    /// Whether this is the document's first observation and it will sit
    /// out the quiet window (loaded less than [`FIRST_QUIET_MS`] ago): the
    /// observation can walk the page meanwhile (`observe.rs`), to re-read
    /// only what changed once the page is still.
    pub fn will_wait(&self, document: &Document) -> bool {
        let (first, began) = first_look();
        first && first_loaded_at(document, began).is_none_or(|at| now() < at)
    }

    /// Sits the wait out (see the module's doc); `false` when it ran out
    /// while the page was still changing.
    pub async fn wait(self, document: &Document) -> bool {
        let Settling { net, start, asked } = self;
        settle_from(document, net, start, asked).await
    }
}

async fn settle_from(document: &Document, net: Probe, start: f64, asked: f64) -> bool {
    let (first, began) = first_look();
    let mut still_since: Option<f64> = None;
    let settled = loop {
        let t = now();
        // Loaded and quiet (a document observed for the first time: a
        // moment past `load`, or watched without a change for as long as
        // any page must be still: mutations from before this script came
        // are not known; they are in the page already).
        let last = last_change();
        let quiet_from = quiet_at(first, document, began, last);
        let quiet = quiet_from.is_some_and(|at| t >= at);
        let mut still = quiet && !animating(document) && !timers_pending(document);
        if still && animation_unfinished() {
            // The animation's end is the page's news at the next frame.
            let mark = now();
            next_frame().await;
            FRAMED_AT.with(|f| f.set(mark));
            still = last_change() < mark;
            if !still {
                still_since = None;
                continue;
            }
        }
        net.ask(); // (none while one is on its way)
        // The next look: when the page would be still were nothing to
        // change meanwhile, when that is only time passing (not sooner:
        // nothing to see; not later: no wait longer than the page's), or
        // the poll's period.
        let due = if still {
            let since = *still_since.get_or_insert(t);
            // An answer asked after the last change (a request started
            // with it is known then).
            match net.verdict(last.max(asked)) {
                Verdict::Unknown => break true,
                Verdict::Idle(ended) if ended.is_none_or(|e| t - e >= QUIET_MS) => break true,
                Verdict::Idle(Some(ended)) => Some(ended + QUIET_MS),
                Verdict::Waiting if t - since >= NET_ANSWER_MS => break true,
                _ => Some(t + 2.0),
            }
        } else {
            still_since = None;
            quiet_from.filter(|at| *at > t)
        };
        if t - start >= MAX_MS {
            break false;
        }
        let pause = due.map_or(f64::from(POLL_MS), |d| (d - t).clamp(1.0, f64::from(POLL_MS)));
        gloo_timers::future::TimeoutFuture::new(pause.ceil() as u32).await;
    };
    STATE.with(|s| {
        if let Some(s) = s.borrow_mut().as_mut() {
            s.since = js_sys::Date::now();
            s.observed = true;
        }
    });
    settled
}

/// Runs `write` (Errand's own DOM writes) unseen by the watch.
pub fn own_writes<T>(write: impl FnOnce() -> T) -> T {
    let observer = STATE.with(|s| s.borrow().as_ref().map(|s| s.observer.clone()));
    let last = STATE.with(|s| s.borrow().as_ref().map(|s| s.last.clone()));
    let record = move |records: js_sys::Array| {
        if records.length() > 0 {
            if let Some(l) = &last {
                *l.borrow_mut() = now();
            }
        }
    };
    crate::dom::writes_unseen(observer.as_ref(), record, write)
}

/// A picture a listed-to-be element waits for: the address CSS draws it
/// with, or its own `<img>`.
pub enum Coming {
    Url(String),
    Img(Element),
}

/// The longest wait for pictures still coming ([`images_come`]).
pub const IMAGE_WAIT_MS: f64 = 1500.0;
/// The most pictures waited for at once.
const MAX_COMING: usize = 16;

thread_local! {
    /// The pictures still coming that left usable elements with an empty
    /// box, noted by the walk ([`image_coming`]).
    static COMING: RefCell<Vec<web_sys::HtmlImageElement>> = const { RefCell::new(Vec::new()) };
}

/// Notes that a usable element's box is empty because its picture has not
/// come yet (an icon drawn by CSS `content: url(…)` before its image
/// loaded, a link around an `<img>` still loading); one already there
/// (broken, or empty for another reason) is not waited for. A CSS image
/// is asked of the document again by a new `Image` with its address,
/// which the page's own request answers (or the memory cache at once).
pub fn image_coming(coming: Coming) {
    if COMING.with(|c| c.borrow().len()) >= MAX_COMING {
        return;
    }
    let img = match coming {
        Coming::Img(el) => match el.dyn_into::<web_sys::HtmlImageElement>() {
            Ok(img) => img,
            Err(_) => return,
        },
        Coming::Url(url) => {
            if COMING.with(|c| c.borrow().iter().any(|i| i.src() == url)) {
                return;
            }
            let Ok(img) = web_sys::HtmlImageElement::new() else { return };
            img.set_src(&url);
            img
        }
    };
    if !img.complete() {
        COMING.with(|c| c.borrow_mut().push(img));
    }
}

/// Whether a walk noted pictures still coming ([`image_coming`]).
pub fn images_coming() -> bool {
    COMING.with(|c| !c.borrow().is_empty())
}

/// Forgets the pictures noted (before a walk).
pub fn forget_images() {
    COMING.with(|c| c.borrow_mut().clear());
}

/// Waits until every picture noted has come (loaded and decoded, or
/// failed), at most `cap_ms`; `false` when the wait ran out. Forgets them.
pub async fn images_come(cap_ms: f64) -> bool {
    let images = COMING.with(|c| std::mem::take(&mut *c.borrow_mut()));
    if images.is_empty() {
        return true;
    }
    let Some(window) = web_sys::window() else { return true };
    // A failed decode (a broken image) counts as come.
    let decoded: js_sys::Array = images.iter().map(|i| JsValue::from(i.decode())).collect();
    // Resolves with the array of outcomes (truthy); the timer with `false`.
    let all = js_sys::Promise::all_settled(&decoded);
    let timer = js_sys::Promise::new(&mut |resolve, _| {
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_1(
            &resolve,
            cap_ms.max(0.0) as i32,
            &JsValue::FALSE,
        );
    });
    let race = js_sys::Promise::race(&js_sys::Array::of2(&all, &timer));
    wasm_bindgen_futures::JsFuture::from(race).await.is_ok_and(|v| v.is_truthy())
}

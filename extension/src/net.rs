//! Network idle, for the settle wait of actions.
//!
//! A page's own JavaScript cannot see requests in flight (resource timing
//! reports a request only once it has ended), so the service worker counts
//! them: `chrome.webRequest` tells it when each request of a tab starts and
//! ends, and [`net_request`] keeps the books (a [`Tracker`]). The content
//! script asks, while it waits for the page to settle after an action, with
//! a [`Probe`]: `chrome.runtime.sendMessage` of a [`Question`] (the time the
//! action began), answered by [`net_answer`] with a [`NetState`]: how many
//! requests that started since then are still in flight, and when the last
//! of them ended. The service worker only relays the events and
//! the question to this crate (its WASM build runs there too).
//!
//! Only requests that started after the action began count, so a page's
//! long polls, streams and slow images from before do not hold actions up.
//! Not counted at all: top-level navigations (a navigating tab is waited for
//! by its loading state), beacons, media streams, WebSockets and CSP
//! reports. The settle wait keeps its cap (`watch::MAX_MS`) whatever the
//! network does.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Ended requests are remembered this long (ms).
const KEEP_ENDED_MS: f64 = 10_000.0;
/// A request with no end after this long is forgotten (a missed event).
const STALE_MS: f64 = 60_000.0;
/// The most ended requests remembered per tab.
const MAX_ENDED: usize = 256;
/// The most requests in flight remembered per tab.
const MAX_PENDING: usize = 1024;

/// Whether requests of this `webRequest` resource type count.
pub fn counted(kind: &str) -> bool {
    !matches!(kind, "main_frame" | "ping" | "media" | "websocket" | "csp_report")
}

/// What the content script asks: the network of its tab since `since`
/// (milliseconds since the epoch, `Date.now()`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub errand_net: Since,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Since {
    pub since: f64,
}

/// The answer: requests started since then and still in flight, and when
/// the last of those that ended ended (`Date.now()` time; `None`: none
/// ended). A time, not an age: the answer can reach a content script long
/// after it was written (its page's thread busy with a walk), and an age
/// read on arrival would make that request end later than it did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetState {
    pub pending: u32,
    #[serde(default)]
    pub last_end: Option<f64>,
}

/// One tab's requests.
#[derive(Debug, Default)]
struct Tab {
    /// Request id → when it started.
    pending: HashMap<String, f64>,
    /// (started, ended) of requests that ended lately.
    ended: Vec<(f64, f64)>,
}

/// Requests in flight per tab, kept by the service worker.
#[derive(Debug, Default)]
pub struct Tracker {
    tabs: HashMap<i64, Tab>,
}

impl Tracker {
    /// A request of `tab` started at `t` (ms since the epoch).
    pub fn started(&mut self, tab: i64, id: &str, kind: &str, t: f64) {
        if tab < 0 || !counted(kind) {
            return;
        }
        let entry = self.tabs.entry(tab).or_default();
        entry.pending.retain(|_, start| t - *start < STALE_MS);
        if entry.pending.len() < MAX_PENDING {
            // A redirect starts the same id again: keep its first start.
            entry.pending.entry(id.to_owned()).or_insert(t);
        }
    }

    /// A request of `tab` ended at `t` (completed or failed).
    pub fn ended(&mut self, tab: i64, id: &str, t: f64) {
        let Some(entry) = self.tabs.get_mut(&tab) else { return };
        let Some(start) = entry.pending.remove(id) else { return };
        entry.ended.retain(|(_, end)| t - *end < KEEP_ENDED_MS);
        if entry.ended.len() >= MAX_ENDED {
            entry.ended.remove(0);
        }
        entry.ended.push((start, t));
        if entry.pending.is_empty() && entry.ended.is_empty() {
            self.tabs.remove(&tab);
        }
    }

    /// The tab was closed.
    pub fn forget(&mut self, tab: i64) {
        self.tabs.remove(&tab);
    }

    /// The network of `tab` as seen at `now`, counting only requests that
    /// started at or after `since`.
    pub fn state(&self, tab: i64, since: f64, now: f64) -> NetState {
        let Some(entry) = self.tabs.get(&tab) else {
            return NetState { pending: 0, last_end: None };
        };
        let pending = entry
            .pending
            .values()
            .filter(|start| **start >= since && now - **start < STALE_MS)
            .count();
        let last_end = entry
            .ended
            .iter()
            .filter(|(start, _)| *start >= since)
            .map(|(_, end)| *end)
            .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
        NetState {
            pending: u32::try_from(pending).unwrap_or(u32::MAX),
            last_end: last_end.map(|e| e.min(now)),
        }
    }
}

// ---- The service worker's side ----

thread_local! {
    static TRACKER: RefCell<Tracker> = RefCell::new(Tracker::default());
}

/// Called by the service worker for `chrome.webRequest` events: `event` is
/// `"start"` (`onBeforeRequest`) or `"end"` (`onCompleted`,
/// `onErrorOccurred`); `time` is the event's `timeStamp`.
#[cfg_attr(feature = "worker", wasm_bindgen)]
pub fn net_request(event: &str, tab_id: f64, request_id: &str, kind: &str, time: f64) {
    let tab = tab_id as i64;
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        match event {
            "start" => t.started(tab, request_id, kind, time),
            "end" => t.ended(tab, request_id, time),
            _ => {}
        }
    });
}

/// Called by the service worker when a tab closes.
#[cfg_attr(feature = "worker", wasm_bindgen)]
pub fn net_forget(tab_id: f64) {
    TRACKER.with(|t| t.borrow_mut().forget(tab_id as i64));
}

/// Answers a content script's message when it is a [`Question`] (the wire
/// text of a [`NetState`], `crate::wire`, which the service worker sends
/// back as it is); `None` for any other message.
#[cfg(feature = "worker")]
#[wasm_bindgen]
pub fn net_answer(message: &str, tab_id: f64) -> Option<String> {
    let q: Question = serde_json::from_str(message).ok()?;
    let now = js_sys::Date::now();
    let state = TRACKER.with(|t| t.borrow().state(tab_id as i64, q.errand_net.since, now));
    crate::wire::encode(&state).ok()
}

// ---- The content script's side ----

/// What the content script knows of its tab's network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// No way to ask (no extension runtime, or no answer): the network is
    /// left out of the wait.
    Unknown,
    /// Not answered yet since the time wanted.
    Waiting,
    /// Requests are in flight.
    Busy,
    /// Nothing in flight; the last request ended at this time
    /// (`performance.now()`), if any did.
    Idle(Option<f64>),
}

#[derive(Default)]
struct ProbeState {
    /// A question is on its way.
    asking: bool,
    /// The last answer: the state, when it was asked (`performance.now()`)
    /// and when the last request it counts ended, on that clock.
    answer: Option<(NetState, f64, Option<f64>)>,
    /// Asking failed: do not ask again.
    unsupported: bool,
    /// When the first answer came (`performance.now()`).
    first: Option<f64>,
}

/// Asks the service worker about the tab's network, one question at a
/// time, without waiting for the answer.
pub struct Probe {
    since: f64,
    state: Rc<RefCell<ProbeState>>,
}

fn perf_now() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// `chrome.runtime` and its `sendMessage`, when this runs as a content
/// script (`frames/` relays through it too).
pub(crate) fn runtime() -> Option<(JsValue, js_sys::Function)> {
    let chrome = js_sys::Reflect::get(&js_sys::global(), &"chrome".into()).ok()?;
    if !chrome.is_object() {
        return None;
    }
    let runtime = js_sys::Reflect::get(&chrome, &"runtime".into()).ok()?;
    // No id: the extension was reloaded and this script is orphaned.
    let id = js_sys::Reflect::get(&runtime, &"id".into()).ok()?;
    if !runtime.is_object() || id.is_undefined() {
        return None;
    }
    let send = js_sys::Reflect::get(&runtime, &"sendMessage".into()).ok()?;
    send.is_function().then(|| (runtime, send.unchecked_into()))
}

impl Probe {
    /// A probe counting the requests that start from now on.
    pub fn start() -> Probe {
        Probe { since: js_sys::Date::now(), state: Rc::new(RefCell::new(ProbeState::default())) }
    }

    /// A probe counting the requests that started from `since`
    /// (milliseconds since the epoch) on.
    pub fn start_at(since: f64) -> Probe {
        Probe { since, state: Rc::new(RefCell::new(ProbeState::default())) }
    }

    /// Sends a question unless one is on its way.
    pub fn ask(&self) {
        {
            let s = self.state.borrow();
            if s.asking || s.unsupported {
                return;
            }
        }
        // A [`Question`] as an object (the service worker's `net_answer`
        // reads its JSON).
        let question = Question { errand_net: Since { since: self.since } };
        let sent = runtime().and_then(|(runtime, send)| {
            let msg = js_sys::JSON::parse(&crate::json::to_string(&question).ok()?).ok()?;
            let promise = send.call1(&runtime, &msg).ok()?;
            promise.dyn_into::<js_sys::Promise>().ok()
        });
        let Some(promise) = sent else {
            self.state.borrow_mut().unsupported = true;
            return;
        };
        let asked = perf_now();
        self.state.borrow_mut().asking = true;
        let state = self.state.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let reply = wasm_bindgen_futures::JsFuture::from(promise).await;
            // The answer's wire text (`crate::wire`).
            let parsed = reply
                .ok()
                .and_then(|v| v.as_string())
                .and_then(|text| crate::wire::decode::<NetState>(&text).ok());
            let mut s = state.borrow_mut();
            s.asking = false;
            match parsed {
                Some(n) => {
                    let got = perf_now();
                    s.first.get_or_insert(got);
                    // The service worker's clock (`Date.now()`) read on
                    // this page's (`performance.now()`): the two read
                    // together now.
                    let offset = got - js_sys::Date::now();
                    let ended = n.last_end.map(|e| (e + offset).min(got));
                    s.answer = Some((n, asked, ended));
                }
                None => s.unsupported = true,
            }
        });
    }

    /// When the first answer came (`performance.now()`), once one did.
    pub fn first_answer(&self) -> Option<f64> {
        self.state.borrow().first
    }

    /// What the latest answer asked at or after `fresh_from`
    /// (`performance.now()`) says.
    pub fn verdict(&self, fresh_from: f64) -> Verdict {
        let s = self.state.borrow();
        if s.unsupported {
            return Verdict::Unknown;
        }
        match s.answer {
            Some((n, asked, ended)) if asked >= fresh_from => {
                if n.pending > 0 {
                    Verdict::Busy
                } else {
                    Verdict::Idle(ended)
                }
            }
            _ => Verdict::Waiting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_requests_started_since_and_not_ended() {
        let mut t = Tracker::default();
        t.started(1, "old", "xmlhttprequest", 1000.0);
        t.started(1, "a", "xmlhttprequest", 2000.0);
        t.started(1, "nav", "main_frame", 2000.0);
        t.started(1, "beacon", "ping", 2000.0);
        t.started(2, "other tab", "script", 2000.0);
        t.started(-1, "no tab", "other", 2000.0);
        assert_eq!(t.state(1, 1500.0, 2100.0), NetState { pending: 1, last_end: None });
        // A redirect starts the same id again: still one.
        t.started(1, "a", "xmlhttprequest", 2050.0);
        assert_eq!(t.state(1, 1500.0, 2100.0).pending, 1);
        t.ended(1, "a", 2400.0);
        assert_eq!(t.state(1, 1500.0, 2450.0), NetState { pending: 0, last_end: Some(2400.0) });
        // The old request ending does not count for a question since 1500.
        t.ended(1, "old", 2500.0);
        assert_eq!(t.state(1, 1500.0, 2600.0), NetState { pending: 0, last_end: Some(2400.0) });
        assert_eq!(t.state(1, 900.0, 2600.0), NetState { pending: 0, last_end: Some(2500.0) });
        // Unknown ends are ignored; a closed tab is forgotten.
        t.ended(1, "never started", 2600.0);
        t.forget(2);
        assert_eq!(t.state(2, 0.0, 2600.0), NetState { pending: 0, last_end: None });
    }

    #[test]
    fn forgets_stale_and_old_requests() {
        let mut t = Tracker::default();
        t.started(1, "hung", "fetch", 0.0);
        assert_eq!(t.state(1, 0.0, STALE_MS + 1.0).pending, 0, "a stale request is not waited for");
        t.started(1, "b", "fetch", STALE_MS + 10.0);
        assert_eq!(t.tabs[&1].pending.len(), 1, "the stale one is dropped at the next start");
        t.ended(1, "b", STALE_MS + 20.0);
        t.started(1, "c", "fetch", STALE_MS + 30.0);
        t.ended(1, "c", STALE_MS + KEEP_ENDED_MS + 40.0);
        assert_eq!(t.tabs[&1].ended.len(), 1, "old ends are dropped");
    }

    #[test]
    fn question_and_answer_are_plain_json() {
        let q: Question = serde_json::from_str(r#"{"errand_net":{"since":12.5}}"#).unwrap();
        assert_eq!(q.errand_net.since, 12.5);
        assert!(serde_json::from_str::<Question>(r#"{"kind":"page"}"#).is_err());
        let a = serde_json::to_string(&NetState { pending: 2, last_end: None }).unwrap();
        assert_eq!(a, r#"{"pending":2,"last_end":null}"#);
    }
}

//! Deadlines: nothing a page controls runs unbounded in the content script.
//!
//! Errand runs on the page's main thread, so a walk that never ends freezes
//! the user's own tab. Reads go through [`crate::proto`], so the page cannot
//! make the DOM look cyclic; and each command has a deadline besides, in two
//! forms:
//! - a **synchronous walk** (the observation's, a frame's, a re-read
//!   segment's) counts the elements it visits and, every
//!   [`CHECK_EVERY`] of them, looks at the clock ([`expired`]); past
//!   [`WALK_MS`] it stops descending and the observation fails with "gave up
//!   after N ms at <where>" (the element it had reached and how many it had
//!   read) instead of holding the thread;
//! - every **command** (an observation with its frames' answers, an action
//!   with its settle wait) races a timer ([`within`]): [`OBSERVE_MS`] and
//!   [`ACT_MS`], under the host's 30 s, so the host always gets an answer
//!   that says what was cut short.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use web_sys::Element;

/// How long a walk over a document may read before it gives up.
pub const WALK_MS: f64 = 10_000.0;
/// How long an observation may take, its frames' answers included.
pub const OBSERVE_MS: u32 = 20_000;
/// How long an action may take, its settle wait included.
pub const ACT_MS: u32 = 25_000;
/// Elements visited between two looks at the clock.
const CHECK_EVERY: u32 = 256;

struct Clock {
    started: f64,
    limit: f64,
    visited: u32,
    /// Where the walk was when the time ran out.
    gave_up: Option<String>,
}

thread_local! {
    static CLOCK: RefCell<Option<Clock>> = const { RefCell::new(None) };
}

fn now() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

/// Starts the clock of a walk (`limit_ms` from now).
pub fn begin(limit_ms: f64) {
    CLOCK.with(|c| {
        *c.borrow_mut() = Some(Clock { started: now(), limit: limit_ms, visited: 0, gave_up: None })
    });
}

/// Counts one element visited by the walk; true when the walk must stop
/// (its time is up). `el` is named in the error when it is the one the
/// walk stopped at.
pub fn expired(el: &Element) -> bool {
    CLOCK.with(|c| {
        let mut c = c.borrow_mut();
        let Some(clock) = c.as_mut() else {
            return false;
        };
        if clock.gave_up.is_some() {
            return true;
        }
        clock.visited += 1;
        if clock.visited % CHECK_EVERY != 0 {
            return false;
        }
        let spent = now() - clock.started;
        if spent < clock.limit {
            return false;
        }
        clock.gave_up = Some(format!(
            "gave up after {} ms at walking the page: {} elements read, stopped at {}",
            spent.round() as i64,
            clock.visited,
            describe(el)
        ));
        true
    })
}

/// Ends the walk's clock: the error when it ran out.
pub fn end() -> Result<(), String> {
    match CLOCK.with(|c| c.borrow_mut().take()).and_then(|c| c.gave_up) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// `<tag id=… name=…>`, to say where a walk stopped.
fn describe(el: &Element) -> String {
    let mut s = format!("<{}", crate::proto::local_name(el));
    for attr in ["id", "name", "class"] {
        if let Some(v) = crate::proto::get_attribute(el, attr).filter(|v| !v.is_empty()) {
            let v: String = v.chars().take(40).collect();
            s.push_str(&format!(" {attr}=\"{v}\""));
        }
    }
    s.push('>');
    s
}

/// Runs `work`, or answers `Err` saying what gave up after `ms`.
pub async fn within<T>(ms: u32, what: &str, work: impl Future<Output = T>) -> Result<T, String> {
    let mut work = pin!(work);
    let mut timer = pin!(gloo_timers::future::TimeoutFuture::new(ms));
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(format!("gave up after {ms} ms at {what}"))),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

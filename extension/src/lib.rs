//! Errand's content script: sees the page, marks it, and acts in it.
//!
//! The same crate is built twice (see `scripts/build-extension.sh`): to
//! WebAssembly, and — with `--cfg errand_js` — to plain JavaScript for pages
//! whose CSP refuses WebAssembly. Both export the same functions:
//!
//! * `handle(message)` — runs one `page` command (the envelope as the
//!   JavaScript object the loader received) and resolves with the reply
//!   envelope as an object; it never rejects (every failure is an `error`
//!   envelope);
//! * `build()` — `"wasm"` or `"js"`;
//! * `envelope(id, re, kind, fields)` and `check(message)` — the protocol
//!   helpers the service worker and the side panel build and check every
//!   message with;
//! * `ChunkJoiner` — joins the host's `chunk` envelopes in the service
//!   worker ([`chunks`]).
//!
//! The last two, and the service worker's `net_*` and `frame_route`, only
//! with the default feature `worker`: the service worker and the panel load
//! that third build (`pkg/worker/`); the content script's two builds leave
//! it out, and with it the serde code of every message kind it never reads
//! or writes ([`messages`]).
//!
//! Modules: [`observe`] (the walk), [`registry`] (element numbers),
//! [`marks`] (the overlay), [`act`] (actions), [`text`] (the model-facing
//! lines), [`messages`] (envelopes), [`watch`] (waiting for the page to
//! settle after an action), [`net`] (requests in flight, counted in the
//! service worker for the settle wait), [`focus`] (focus changes with
//! their events), [`dropdown`] and [`selects`] (selects), [`frames`]
//! (cross-origin iframes: one instance per frame, merged and routed),
//! [`dialogs`] (`alert`/`confirm`/`prompt` answered without blocking).

use errand_protocol::{Body, Envelope, ErrorCode, PageCommand};
use wasm_bindgen::prelude::*;

pub mod act;
#[cfg(feature = "worker")]
pub mod chunks;
pub mod deadline;
pub mod dialogs;
pub mod dom;
pub mod dropdown;
pub mod events;
pub mod focus;
pub mod frames;
pub mod hover;
pub mod incremental;
pub mod json;
pub mod keys;
pub mod labels;
pub mod listeners;
pub mod locator;
pub mod marks;
pub mod messages;
pub mod net;
pub mod number_map;
pub mod observe;
pub mod outcome;
pub mod proto;
pub mod ready;
pub mod registry;
pub mod selects;
pub mod sent;
pub mod text;
pub mod values;
pub mod visual_label;
pub mod watch;
pub mod wire;

/// Notes when a step of a command ended (`performance.now()`) in the
/// loader's `__errandLoadTimes`, for the load benchmark
/// (`tests/examples/bench_load.rs`): in the isolated world, unseen by the
/// page; nothing when the loader set none.
pub fn mark(step: &str) {
    let g = js_sys::global();
    if let Ok(t) = js_sys::Reflect::get(&g, &"__errandLoadTimes".into()) {
        if t.is_object() {
            let n = web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now());
            let _ = js_sys::Reflect::set(&t, &step.into(), &n.into());
        }
    }
}

/// Why a command failed: the error code and a sentence for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Fail {
    pub code: ErrorCode,
    pub message: String,
}

impl Fail {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Fail {
        Fail { code, message: message.into() }
    }
}

/// Runs one `page` command (the envelope object the loader received) and
/// resolves with the reply envelope as an object (`observation`,
/// `action_done`, `located`, `ack` or `error`) that the loader sends back
/// as it is: no JSON text either way (`messages`).
#[wasm_bindgen]
pub async fn handle(message: JsValue) -> JsValue {
    mark("handle");
    let a = answer(&message).await;
    mark("answered");
    let r = messages::encode_reply(&a);
    mark("encoded");
    r
}

/// The reply to one message.
async fn answer(message: &JsValue) -> Envelope {
    let request = match messages::read_request(message) {
        Ok(r) => r,
        Err(reply) => return *reply,
    };
    if !matches!(request.command, PageCommand::Cleanup {}) {
        // Selects as visible dropdowns, in documents not yet set up.
        dropdown::enable();
        // Dialogs answered without blocking (an action arms its own answer).
        dialogs::arm_default();
    }
    let body = match request.command {
        // Every command has a deadline (deadline.rs): the host always gets
        // an answer that says what was cut short.
        PageCommand::Observe { marks, full, since } => {
            let observed = observe::observe(marks, full, since);
            match deadline::within(deadline::OBSERVE_MS, "observing the page", observed).await {
                Ok(Ok(o)) => Body::Observation(o),
                Ok(Err(why)) | Err(why) => Body::Error { code: ErrorCode::Internal, message: why },
            }
        }
        PageCommand::Act { action, only_on, secret_field, secrets } => {
            let guard = act::Guard { only_on, secret_field, secrets };
            let done = async move {
                // frames.rs: an element of a cross-origin frame is that frame's to act on.
                match frames::route_act(&action, &guard).await {
                    Some(done) => done,
                    None => act::act(action, &guard).await,
                }
            };
            acted(deadline::within(deadline::ACT_MS, "carrying out the action", done).await)
        }
        PageCommand::SetFiles { index, files } => {
            let done = async move {
                match frames::route_upload(index, &files).await {
                    Some(done) => done,
                    None => act::upload(index, files).await,
                }
            };
            acted(deadline::within(deadline::ACT_MS, "setting the files", done).await)
        }
        // What an action would set off, read before the host lets it run.
        PageCommand::Stakes { action } => Body::Stakes { stakes: act::stakes(&action) },
        PageCommand::Locate { locator } => match locator::locate(&locator) {
            Ok(found) => Body::Located(found),
            Err(Fail { code, message }) => Body::Error { code, message },
        },
        PageCommand::Cleanup {} => {
            marks::clear();
            dropdown::disable();
            dialogs::disarm();
            act::forget_fills();
            hover::clear();
            frames::cleanup().await;
            Body::Ack {}
        }
    };
    Envelope::reply(messages::next_id(), request.id, body)
}

/// The reply body of an action, or of its deadline.
fn acted(done: Result<Result<errand_protocol::Effect, Fail>, String>) -> Body {
    match done {
        Ok(Ok(effect)) => Body::ActionDone { effect },
        Ok(Err(Fail { code, message })) => Body::Error { code, message },
        Err(why) => Body::Error { code: ErrorCode::ActionFailed, message: why },
    }
}

/// Prepares the first observation of a page a task drives (the service
/// worker says so when the tab has loaded): the page is walked when it is
/// idle and the walk kept, so that the observation re-reads only what
/// changed since (`observe::prepare`). Reads the page, writes nothing.
#[wasm_bindgen]
pub fn prepare() {
    observe::prepare();
}

/// Which build this is: `"wasm"` or `"js"`.
#[wasm_bindgen]
pub fn build() -> String {
    if cfg!(errand_js) { "js" } else { "wasm" }.to_owned()
}

/// Builds an envelope from its kind and a JSON object of its fields,
/// checked against the protocol; returns its JSON or throws why not.
/// The worker build's only (feature `worker`), like [`check`].
#[cfg(feature = "worker")]
#[wasm_bindgen]
pub fn envelope(id: f64, re: Option<f64>, kind: &str, fields: &str) -> Result<String, JsError> {
    messages::make_envelope(id, re, kind, fields).map_err(|e| JsError::new(&e))
}

/// Checks a message; returns its canonical JSON or throws why it is bad.
#[cfg(feature = "worker")]
#[wasm_bindgen]
pub fn check(message: &str) -> Result<String, JsError> {
    messages::check_message(message).map_err(|e| JsError::new(&e))
}

/// A `page` envelope's command as the content script reads it (its JSON
/// text in, the command's wire text out: `wire::Command` in postcard's
/// bytes, base64); throws the protocol's sentence for a bad one. The
/// service worker sends the content script `{v, id, kind: "page", wire}`.
#[cfg(feature = "worker")]
#[wasm_bindgen]
pub fn page_command(message: &str) -> Result<String, JsError> {
    wire::page_command(message).map_err(|e| JsError::new(&e))
}

//! Cross-origin iframes: one content-script instance per frame, one list
//! for the model.
//!
//! A document cannot read a cross-origin iframe's document, so each such
//! frame gets its own instance of this crate (the service worker injects
//! `extension/loader.js` into it the first time it is asked to reach it),
//! which observes and acts in its own document. The instances talk only
//! through the extension: an instance asks the service worker to forward a
//! [`Message`] to a frame *inside its own frame* ([`Relay`]), the service
//! worker checks that with [`frame_route`] and passes it with
//! `chrome.tabs.sendMessage(tab, message, {frameId})`, and relays the
//! [`Reply`]. Never `window.postMessage`: nothing here is visible to, or can
//! be forged by, a page.
//!
//! **Which frame.** Chromium has no `runtime.getFrameId(iframe)` for content
//! scripts, so a frame is named by its *path*: the index of its window in
//! its parent's `window.frames`, for each level from the top window down
//! ([`path_of`]). Cross-origin windows still expose `parent`, `length` and
//! their child windows by index, so both the parent (from the `<iframe>`'s
//! `contentWindow`) and the service worker (from a one-line function run in
//! every frame of the tab, which returns each frame's own path with its
//! `frameId`) compute the same path; [`pick`] finds the frame.
//!
//! **Numbers.** Each instance numbers its own elements in its own registry.
//! A parent that receives a child's lines gives each of the child's numbers
//! a number of its own (`registry::new_number`), remembering
//! `number → (iframe element, child's document token, child's number)`
//! ([`Remote`]). The model sees plain numbers; an action on one is
//! rewritten to the child's number and sent to the child, which may pass it
//! on to its own child the same way (nested frames). Every instance has a
//! random token for its document ([`token`]); an action carries the token
//! its number was observed with, and an instance whose document is another
//! one (the frame navigated) refuses it with `element_gone` — a number is
//! never applied to another page's element.
//!
//! **Where.** The parent walks the `<iframe>` as an element: a frame that is
//! hidden, has no size or is covered at every hit-test point (a modal over
//! it) is not observed; otherwise the child gets a [`View`]: where its
//! viewport sits in the top viewport and the part of the top viewport it
//! shows through (the iframe's content box cut by every clip on the way
//! up), and reports its rectangles in the top viewport's pixels.
//!
//! **Marks and secrets.** Each frame draws its own overlay (so it follows
//! the frame's own scrolling and is clipped by the iframe), with the numbers
//! the top frame gave ([`Command::Marks`]), and blanks the secret fields of
//! its own document under them, like the top one.
//!
//! Here: the messages and their routing, the numbers' state and paths;
//! `merge.rs` (a parent observing its frames), `route.rs` (actions sent
//! down to a frame) and `answer.rs` (a frame answering its parent).

use crate::proto;
use rustc_hash::FxHashMap;
use std::cell::RefCell;

use errand_protocol::{Action, Effect, ErrorCode, FilePayload, Rect};
use js_sys::{Object, Promise, Reflect};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::Element;

use crate::text::Line;
use crate::{Fail, act, dropdown, marks, observe};

mod answer;
mod merge;
mod route;
mod wire;

pub use answer::handle_frame;
pub use merge::{Pending, ask, cleanup, draw_marks, merge, renumber};
pub use route::{relabel_action, relabel_text, route_act, route_upload};
#[allow(unused_imports)]
use {answer::*, merge::*, route::*};

/// How long a frame may take to observe itself, its own frames included.
const OBSERVE_TIMEOUT_MS: i32 = 8_000;
/// How long a frame may take to carry out an action (the settle wait
/// included).
const ACT_TIMEOUT_MS: i32 = 60_000;
/// How long drawing marks or cleaning up may take.
const SMALL_TIMEOUT_MS: i32 = 5_000;
/// Frames nested deeper than this are not read.
pub const MAX_DEPTH: u32 = 6;

// ---- the wire: frame to frame, through the service worker ----

/// Where a frame's viewport shows in the top viewport, in its CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct View {
    /// Where the frame's viewport's top-left corner is.
    pub dx: f64,
    pub dy: f64,
    /// The part of the top viewport the frame shows through (empty when
    /// none of it is in view).
    pub clip: Rect,
}

/// What one instance asks of another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Walk your document (and your own cross-origin frames); answer with
    /// your lines. `depth`: how many frames up the top is.
    Observe {
        view: View,
        marks: bool,
        depth: u32,
    },
    /// Draw your marks: `(your number, the number shown)` pairs.
    Marks {
        labels: Vec<(u32, u32)>,
    },
    /// Carry out an action on your element numbers.
    Act {
        #[serde(with = "crate::wire::ActionDef")]
        action: Action,
        only_on: Option<String>,
        secret_field: bool,
        secrets: Vec<String>,
    },
    SetFiles {
        index: u32,
        files: Vec<FilePayload>,
    },
    /// Remove your overlay and dropdowns (and your frames').
    Cleanup {},
}

/// A message to one frame's content script, sent as its wire text
/// (`wire.rs`) in a [`Carried`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The document token the sender's numbers were observed with; a
    /// frame holding another document refuses. `None`: any document.
    pub expect: Option<String>,
    pub command: Command,
}

impl Message {
    fn new(expect: Option<String>, command: Command) -> Message {
        Message { expect, command }
    }
}

/// A [`Message`] as the browser carries it to the frame's loader.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Carried {
    /// Always `"frame"`: how the loader tells it from a `page` envelope.
    pub kind: String,
    /// The message's wire text (`wire::encode_message`).
    pub wire: String,
}

/// What a content script sends the service worker: forward `message` to
/// the frame at path `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relay {
    pub errand_frame: Target,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub to: Place,
    pub message: Carried,
}

/// Where a frame is in its tab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Place {
    /// Its path: the index of each window in its parent's `frames`, from
    /// the top down.
    Path(Vec<u32>),
    /// A frame its parent's `frames` does not list (an iframe in a shadow
    /// root): its parent's path and its viewport's size, to be told from
    /// its siblings.
    Loose { parent: Vec<u32>, width: f64, height: f64 },
}

/// A frame's answer, sent as postcard's bytes in base64 (`wire.rs`).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Seen { token: String, origin: String, lines: Vec<Line> },
    Done { effect: Effect },
    Ack {},
    Failed { code: ErrorCode, message: String },
}

/// The service worker's answer to a [`Relay`] (`relayToFrame` in
/// `extension/sw.js`): `{ok}` or `{failed, unreadable}`.
#[derive(Debug)]
struct Relayed {
    /// The frame's [`Reply`], as `wire::encode` wrote it.
    ok: Option<String>,
    failed: Option<String>,
    /// The frame cannot run Errand (`failed` says why): it answers the same
    /// until it loads another document.
    unreadable: bool,
}

impl Relayed {
    /// Read from the object the service worker answered with (no serde:
    /// the content script's WebAssembly build links no reader of
    /// JavaScript objects).
    fn read(answer: &JsValue) -> Option<Relayed> {
        if !answer.is_object() {
            return None;
        }
        let get = |name: &str| crate::messages::field(answer, name);
        Some(Relayed {
            ok: get("ok").as_string(),
            failed: get("failed").as_string(),
            unreadable: get("unreadable").as_bool().unwrap_or(false),
        })
    }
}

// ---- the service worker's half: which frame ----

/// One frame of the tab as the service worker located it: the result of
/// running the path function in it.
#[derive(Debug, Clone, Deserialize)]
pub struct Located {
    #[serde(rename = "frameId")]
    pub frame_id: i64,
    #[serde(default)]
    pub result: Option<Place>,
}

/// Why no frame of the tab is at a place: none is there, or none that
/// runs scripts of an extension (a browser's error page).
const GONE: &str = "the frame is gone: it was removed, or it is loading another page, \
    or it shows a page Errand cannot run in";

/// The frame at `to`, which must be inside the frame `sender` (a frame
/// reaches only the frames nested in it, never its parent or a sibling).
pub fn pick(to: &Place, sender: i64, located: &[Located]) -> Result<i64, String> {
    let from = match located.iter().find(|l| l.frame_id == sender).and_then(|l| l.result.as_ref()) {
        Some(Place::Path(p)) => p,
        // A loose frame's own frames cannot be told apart from here.
        Some(Place::Loose { .. }) => {
            return Err("a frame in a shadow root cannot reach its frames".into());
        }
        None => return Err("the asking frame is not among its tab's frames any more".into()),
    };
    let inside = match to {
        Place::Path(p) => p.len() > from.len() && p.starts_with(from),
        Place::Loose { parent, .. } => parent.starts_with(from),
    };
    if !inside {
        return Err("a frame may only reach the frames inside it".into());
    }
    let here = |at: &Place| match (at, to) {
        (Place::Path(a), Place::Path(b)) => a == b,
        (
            Place::Loose { parent: a, width: aw, height: ah },
            Place::Loose { parent: b, width: bw, height: bh },
        ) => a == b && (aw - bw).abs() < 1.0 && (ah - bh).abs() < 1.0,
        _ => false,
    };
    let found: Vec<i64> = located
        .iter()
        .filter(|l| l.result.as_ref().is_some_and(here))
        .map(|l| l.frame_id)
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(GONE.into()),
        _ => Err("two frames claim the same place; observe the page again".into()),
    }
}

/// For the service worker: reads a content script's [`Relay`] (`relay`),
/// sent from frame `sender`, against the tab's frames as located
/// (`located`: `chrome.scripting.executeScript` results of the path
/// function), and returns `{"frame_id": N, "message": {…}}`: where to send
/// what, or `{"unreadable": why}` when no frame that runs Errand is there
/// (asked again, the frame answers the same until it loads another
/// document). Throws why not otherwise.
#[cfg(feature = "worker")]
#[wasm_bindgen]
pub fn frame_route(relay: &str, sender: f64, located: &str) -> Result<String, JsError> {
    let relay: Relay =
        serde_json::from_str(relay).map_err(|e| JsError::new(&format!("bad frame relay: {e}")))?;
    if relay.errand_frame.message.kind != "frame" {
        return Err(JsError::new("bad frame relay: not a frame message"));
    }
    // Frames that could not run the function (a browser page) answer null.
    let located: Vec<Located> = serde_json::from_str::<Vec<serde_json::Value>>(located)
        .map_err(|e| JsError::new(&format!("bad frame list: {e}")))?
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    let out = match pick(&relay.errand_frame.to, sender as i64, &located) {
        Ok(frame_id) => {
            serde_json::json!({ "frame_id": frame_id, "message": relay.errand_frame.message })
        }
        Err(why) if why == GONE => serde_json::json!({ "unreadable": why }),
        Err(why) => return Err(JsError::new(&why)),
    };
    Ok(out.to_string())
}

// ---- this instance ----

/// An element of a cross-origin frame, as this instance numbers it.
#[derive(Clone)]
struct Remote {
    /// The `<iframe>` in this instance's documents.
    iframe: Element,
    /// The frame's document token when the element was observed.
    token: String,
    /// The frame's own number for it.
    local: u32,
}

/// A frame observed in the latest observation: its iframe, token, and the
/// `(its number, this instance's number)` pairs of its lines.
#[derive(Clone)]
struct Child {
    iframe: Element,
    token: String,
    labels: Vec<(u32, u32)>,
}

#[derive(Default)]
struct State {
    token: Option<String>,
    /// This instance's number → the frame element it names.
    remote: FxHashMap<u32, Remote>,
    /// (token, the frame's number) → this instance's number.
    numbers: FxHashMap<(String, u32), u32>,
    /// The frames of the latest observation.
    children: Vec<Child>,
    /// Frames that were asked to draw marks since the last cleanup.
    drew: Vec<Element>,
    /// In a frame: its elements in view at its latest observation, by its
    /// own number (the marks are drawn for them once the top numbered them).
    markable: Vec<(u32, Element)>,
    /// Frames Errand cannot run in (a browser's error page, another
    /// extension's page), each with its iframe's count of `load` events
    /// when it was asked and why it could not be read: not asked again
    /// before it loads another document.
    unreadable: Vec<(Element, u32, String)>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// This document's token: random, made once per instance (an instance
/// lives and dies with its document).
pub fn token() -> String {
    STATE.with(|s| {
        s.borrow_mut()
            .token
            .get_or_insert_with(|| {
                let a = (js_sys::Math::random() * 4_294_967_296.0) as u64;
                let b = (js_sys::Math::random() * 4_294_967_296.0) as u64;
                format!("{a:08x}{b:08x}")
            })
            .clone()
    })
}

/// This instance's number for element `local` of the frame with document
/// `token`, given the next free number the first time.
fn number_for(iframe: &Element, token: &str, local: u32) -> u32 {
    if let Some(n) = STATE.with(|s| s.borrow().numbers.get(&(token.to_owned(), local)).copied()) {
        return n;
    }
    let n = crate::registry::new_number();
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.numbers.insert((token.to_owned(), local), n);
        s.remote.insert(n, Remote { iframe: iframe.clone(), token: token.to_owned(), local });
    });
    n
}

fn remote_of(n: u32) -> Option<Remote> {
    STATE.with(|s| s.borrow().remote.get(&n).cloned())
}

/// The path of a window: the index of each window in its parent's
/// `frames`, from the top window down; `None` when it cannot be told.
pub fn path_of(window: &JsValue) -> Option<Vec<u32>> {
    let mut path = Vec::new();
    let mut w = window.clone();
    for _ in 0..64 {
        let parent = Reflect::get(&w, &"parent".into()).ok()?;
        if !parent.is_object() || Object::is(&parent, &w) {
            path.reverse();
            return Some(path);
        }
        let len = Reflect::get(&parent, &"length".into()).ok()?.as_f64()? as u32;
        let i =
            (0..len).find(|i| Reflect::get_u32(&parent, *i).is_ok_and(|f| Object::is(&f, &w)))?;
        path.push(i);
        w = parent;
    }
    None
}

/// Where the frame an `<iframe>` element holds is.
fn path_of_iframe(iframe: &Element) -> Option<Place> {
    let window = Reflect::get(iframe, &"contentWindow".into()).ok().filter(JsValue::is_object)?;
    if let Some(path) = path_of(&window) {
        return Some(Place::Path(path));
    }
    // Not in its parent's `frames` (an iframe in a shadow root).
    let parent = proto::default_view(&proto::owner_document(&iframe)?)?;
    Some(Place::Loose {
        parent: path_of(&parent)?,
        width: f64::from(proto::client_width(&iframe)),
        height: f64::from(proto::client_height(&iframe)),
    })
}

/// Sends `message` to the frame at `to` through the service worker and
/// waits for its reply, at most `timeout_ms`.
async fn send(to: &Place, message: Message, timeout_ms: i32) -> Result<Reply, Fail> {
    relay(to, message, timeout_ms).await.map_err(|(fail, _)| fail)
}

/// [`send`], saying also whether a failure is the frame's own: it cannot
/// run Errand.
async fn relay(to: &Place, message: Message, timeout_ms: i32) -> Result<Reply, (Fail, bool)> {
    let unavailable = |why: &str| (Fail::new(ErrorCode::PageUnavailable, why), false);
    let (runtime, send) =
        crate::net::runtime().ok_or_else(|| unavailable("the extension is not reachable"))?;
    let wire = wire::encode_message(&message).map_err(|e| unavailable(&e))?;
    let message = Carried { kind: "frame".into(), wire };
    let relay = Relay { errand_frame: Target { to: to.clone(), message } };
    // As a JavaScript object: `chrome.runtime.sendMessage` sends it as
    // JSON, and the service worker's `frame_route` reads that.
    let msg = crate::json::to_string(&relay)
        .ok()
        .and_then(|text| js_sys::JSON::parse(&text).ok())
        .ok_or_else(|| unavailable("the frame message cannot be written"))?;
    let sent: Promise = send
        .call1(&runtime, &msg)
        .ok()
        .and_then(|p| p.dyn_into().ok())
        .ok_or_else(|| unavailable("cannot reach the service worker"))?;
    let window = web_sys::window().ok_or_else(|| unavailable("no window"))?;
    let timer = Promise::new(&mut |resolve, _| {
        let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, timeout_ms);
    });
    let answer =
        wasm_bindgen_futures::JsFuture::from(Promise::race(&js_sys::Array::of2(&sent, &timer)))
            .await
            .map_err(|e| {
                unavailable(&format!("the frame could not be reached: {}", crate::act::js_text(&e)))
            })?;
    if answer.is_undefined() {
        return Err(unavailable(&format!(
            "the frame did not answer within {} s",
            timeout_ms / 1000
        )));
    }
    match Relayed::read(&answer) {
        Some(Relayed { ok: Some(reply), .. }) => {
            wire::decode(&reply).ok_or_else(|| unavailable("the frame's answer cannot be read"))
        }
        Some(Relayed { failed: Some(why), unreadable, .. }) => {
            Err((Fail::new(ErrorCode::PageUnavailable, why), unreadable))
        }
        _ => Err(unavailable("the frame's answer cannot be read")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Seen;

    fn located(frames: &[(i64, Option<&[u32]>)]) -> Vec<Located> {
        frames
            .iter()
            .map(|(id, p)| Located { frame_id: *id, result: p.map(|p| Place::Path(p.to_vec())) })
            .collect()
    }

    fn at(p: &[u32]) -> Place {
        Place::Path(p.to_vec())
    }

    #[test]
    fn picks_only_frames_inside_the_sender() {
        let tab = located(&[
            (0, Some(&[])),
            (7, Some(&[0])),
            (9, Some(&[1])),
            (12, Some(&[1, 0])),
            (13, None),
        ]);
        assert_eq!(pick(&at(&[1]), 0, &tab), Ok(9));
        assert_eq!(pick(&at(&[1, 0]), 0, &tab), Ok(12));
        assert_eq!(pick(&at(&[1, 0]), 9, &tab), Ok(12));
        // Never up, sideways or to itself.
        assert!(pick(&at(&[]), 9, &tab).unwrap_err().contains("inside it"));
        assert!(pick(&at(&[0]), 9, &tab).unwrap_err().contains("inside it"));
        assert!(pick(&at(&[1]), 9, &tab).unwrap_err().contains("inside it"));
        assert!(pick(&at(&[1, 0]), 7, &tab).unwrap_err().contains("inside it"));
        // Gone, or an unknown sender.
        assert!(pick(&at(&[2]), 0, &tab).unwrap_err().contains("gone"));
        assert!(pick(&at(&[1]), 13, &tab).is_err());
        assert!(pick(&at(&[1]), 99, &tab).is_err());
        let twice = located(&[(0, Some(&[])), (3, Some(&[0])), (4, Some(&[0]))]);
        assert!(pick(&at(&[0]), 0, &twice).is_err());
        // Frames of a shadow root: told apart by their size.
        let mut loose = located(&[(0, Some(&[])), (3, Some(&[0]))]);
        let l =
            |parent: &[u32], width, height| Place::Loose { parent: parent.to_vec(), width, height };
        loose.push(Located { frame_id: 5, result: Some(l(&[], 420.0, 90.0)) });
        loose.push(Located { frame_id: 6, result: Some(l(&[], 300.0, 90.0)) });
        loose.push(Located { frame_id: 8, result: Some(l(&[0], 420.0, 90.0)) });
        assert_eq!(pick(&l(&[], 420.4, 90.0), 0, &loose), Ok(5));
        assert_eq!(pick(&l(&[], 300.0, 90.0), 0, &loose), Ok(6));
        assert_eq!(pick(&l(&[0], 420.0, 90.0), 0, &loose), Ok(8));
        assert_eq!(pick(&l(&[0], 420.0, 90.0), 3, &loose), Ok(8));
        assert!(pick(&l(&[], 420.0, 90.0), 3, &loose).unwrap_err().contains("inside it"));
        assert!(pick(&l(&[], 500.0, 90.0), 0, &loose).unwrap_err().contains("gone"));
        assert!(pick(&at(&[0]), 5, &loose).is_err());
        let text = r#"[{"frameId":5,"result":{"parent":[0],"width":4,"height":5}},{"frameId":0,"result":[]}]"#;
        let read: Vec<Located> = serde_json::from_str(text).unwrap();
        assert_eq!(read[0].result, Some(l(&[0], 4.0, 5.0)));
        assert_eq!(read[1].result, Some(at(&[])));
    }

    #[test]
    fn messages_cross_the_wire_unchanged() {
        let observe = Message::new(
            Some("ab".into()),
            Command::Observe {
                view: View {
                    dx: 1.0,
                    dy: 2.0,
                    clip: Rect { x: 1.0, y: 2.0, width: 3.0, height: 4.0 },
                },
                marks: true,
                depth: 1,
            },
        );
        let act = Message::new(
            None,
            Command::Act {
                action: serde_json::from_str(
                    r#"{"click":{"index":3,"modifiers":["Shift"],"dialog":"accept"}}"#,
                )
                .unwrap(),
                only_on: Some("https://a.example".into()),
                secret_field: true,
                secrets: vec!["s".into()],
            },
        );
        let files = Message::new(
            Some("t".into()),
            Command::SetFiles {
                index: 2,
                files: vec![FilePayload {
                    name: "a.txt".into(),
                    mime: "text/plain".into(),
                    base64: "aGk=".into(),
                }],
            },
        );
        let marks = Message::new(None, Command::Marks { labels: vec![(1, 40), (2, 41)] });
        for m in [observe, act, files, marks, Message::new(None, Command::Cleanup {})] {
            let text = wire::encode_message(&m).unwrap();
            assert_eq!(wire::decode_message(&text), Ok(m));
        }
        // The relay the service worker reads: plain JSON around the wire text.
        let relay = Relay {
            errand_frame: Target {
                to: at(&[0, 2]),
                message: Carried { kind: "frame".into(), wire: "AAE=".into() },
            },
        };
        let text = crate::json::to_string(&relay).unwrap();
        assert_eq!(
            text,
            r#"{"errand_frame":{"to":[0,2],"message":{"kind":"frame","wire":"AAE="}}}"#
        );
        let back: Relay = serde_json::from_str(&text).unwrap();
        assert_eq!(back, relay);
        let seen = Reply::Seen {
            token: "t".into(),
            origin: "http://a".into(),
            lines: vec![
                Line::Element(Box::new(Seen { index: 4, tag: "button".into(), ..Seen::default() })),
                Line::Text { text: "hi".into(), in_viewport: true },
            ],
        };
        assert_eq!(wire::decode(&wire::encode(seen.clone())), Some(seen));
    }

    /// A frame's reply goes to its parent as postcard's bytes in base64 (a
    /// JSON string) and comes back the same, every field.
    #[test]
    fn replies_round_trip() {
        use crate::text::ScrollInfo;
        let full = Seen {
            index: 300,
            tag: "select".into(),
            role: Some("listbox".into()),
            input_type: Some("text".into()),
            name: Some("Größe ✓".into()),
            placeholder: Some("p".into()),
            aria_label: Some("a".into()),
            title: Some("t".into()),
            href: Some("/x".into()),
            target: Some("https://a.example/x".into()),
            value: Some("v".into()),
            label: Some("l".into()),
            checked: true,
            selected: true,
            expanded: Some(false),
            invalid: true,
            disabled: true,
            required: true,
            readonly: true,
            multiple: true,
            editor: true,
            is_new: true,
            scroll: Some(ScrollInfo { above: 1.5, below: 200.25 }),
            text: "some text".into(),
            icon: Some("send".into()),
            options: vec!["one".into(), "two".into()],
            option_count: 70_000,
            rect: Rect { x: -3.5, y: 1e6, width: 0.1, height: 40.0 },
            in_viewport: true,
            origin: Some("https://b.example".into()),
        };
        let seen = Reply::Seen {
            token: "0123abcd".into(),
            origin: "https://b.example".into(),
            lines: vec![
                Line::Element(Box::new(full)),
                Line::Element(Box::default()),
                Line::Heading { level: 2, text: "Title".into(), in_viewport: false },
                Line::Text { text: String::new(), in_viewport: true },
            ],
        };
        let effect = errand_protocol::Effect {
            summary: "clicked [3]".into(),
            url: "https://a.example/".into(),
            url_changed: true,
            value: Some("x".into()),
            page_changed: true,
            appeared: vec!["a menu".into()],
            invalid: vec!["[4] is required".into()],
            new_tab: Some(-7),
            dialogs: vec![errand_protocol::Dialog {
                kind: "prompt".into(),
                message: "Name?".into(),
                accepted: true,
                text: Some("Ada".into()),
                by_default: true,
            }],
            reverted: vec!["[5]".into()],
            locator: Some(errand_protocol::Locator {
                tag: "button".into(),
                role: Some("button".into()),
                name: Some("Go".into()),
                label: Some("l".into()),
                text: Some("Go".into()),
                id: Some("go".into()),
                field_name: Some("f".into()),
                test_id: Some("data-testid=go".into()),
                css: Some("button:nth-of-type(2)".into()),
                frame: vec!["iframe:nth-of-type(1)".into()],
                rect: Some([1.0, 2.5, 3.0, 4.0]),
            }),
        };
        let replies = [
            seen,
            Reply::Seen { token: "t".into(), origin: String::new(), lines: vec![] },
            Reply::Done { effect },
            Reply::Done { effect: Default::default() },
            Reply::Ack {},
            Reply::Failed { code: ErrorCode::ElementGone, message: "gone \"x\"".into() },
        ];
        for reply in replies {
            let text = wire::encode(reply.clone());
            assert!(!text.is_empty());
            // What the loader sends on: the JSON string handle_frame resolves with, parsed.
            let json = serde_json::Value::String(text.clone()).to_string();
            assert_eq!(serde_json::from_str::<String>(&json).unwrap(), text);
            assert_eq!(wire::decode(&text), Some(reply));
        }
        for bad in ["", "AAA*", "AQA=", "{}"] {
            assert_eq!(wire::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn renumbers_only_numbered_elements() {
        let el = |index| Line::Element(Box::new(Seen { index, ..Seen::default() }));
        let mut lines =
            vec![el(1), Line::Text { text: "t".into(), in_viewport: true }, el(0), el(2)];
        renumber(&mut lines, |n| n + 10);
        let got: Vec<u32> = lines
            .iter()
            .filter_map(|l| if let Line::Element(s) = l { Some(s.index) } else { None })
            .collect();
        assert_eq!(got, vec![11, 0, 12]);
    }

    #[test]
    fn relabels_numbers_in_one_pass() {
        let map = [(3, 12), (12, 5)];
        assert_eq!(
            relabel_text("dragged [3] <li> a onto [12] <li> b; [7] stays; [x] [", &map),
            "dragged [12] <li> a onto [5] <li> b; [7] stays; [x] ["
        );
        assert_eq!(relabel_text("no numbers", &map), "no numbers");
        assert_eq!(relabel_text("[3]", &map), "[12]");
    }

    #[test]
    fn relabels_actions() {
        let a: Action = serde_json::from_str(r#"{"fill":{"index":12,"text":"x"}}"#).unwrap();
        let b = relabel_action(&a, |n| n - 10).unwrap();
        assert_eq!(b, serde_json::from_str(r#"{"fill":{"index":2,"text":"x"}}"#).unwrap());
        let d: Action = serde_json::from_str(r#"{"drag_and_drop":{"from":20,"to":21}}"#).unwrap();
        assert_eq!(
            relabel_action(&d, |n| n - 19).unwrap(),
            serde_json::from_str(r#"{"drag_and_drop":{"from":1,"to":2}}"#).unwrap()
        );
        let p: Action = serde_json::from_str(r#"{"press":{"key":"Enter"}}"#).unwrap();
        assert_eq!(relabel_action(&p, |n| n + 1).unwrap(), p);
    }
}

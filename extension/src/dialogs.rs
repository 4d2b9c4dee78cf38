//! JavaScript dialogs (`alert`, `confirm`, `prompt`, `beforeunload`)
//! answered without blocking the page.
//!
//! A dialog stops the page's main thread — and with it this content
//! script and every command — until someone answers it. The page's own
//! world is reached by `extension/main-world.js`, a tiny content script
//! declared in `manifest.json` for the `MAIN` world at `document_start`
//! in every frame: while this crate has *armed* a document it replaces
//! `alert`/`confirm`/`prompt` there with functions that return the answer
//! decided before the action (the page's thread cannot wait for the host),
//! neutralises `beforeunload` prompts, and reports each dialog back with
//! a DOM event. Unarmed (before Errand's first command in a document, after
//! `cleanup`), the page's dialogs are the browser's own.
//!
//! Both directions are `CustomEvent`s on the document whose detail is a
//! JSON string: `errand:arm` (`{"accept": true|false|null, "text": …}`, or
//! `null` to disarm) from here, `errand:dialog` (`{kind, message,
//! accepted, text, by_default}`) from the main world. The page can send
//! either: a forged report only adds text to the action's effect (page
//! data, fenced for the model), and arming only changes how the page's own
//! dialogs are answered.

use crate::proto;
use std::cell::RefCell;

use errand_protocol::{Dialog, DialogAnswer, DialogChoice};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{CustomEvent, CustomEventInit, Document};

/// The most dialogs kept for one action (a page can loop on `alert`).
const MAX_KEPT: usize = 8;

struct Listening {
    doc: Document,
    _listener: Closure<dyn FnMut(web_sys::Event)>,
}

#[derive(Default)]
struct State {
    docs: Vec<Listening>,
    seen: Vec<Dialog>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// The documents Errand acts in from this instance: the top one and its
/// same-origin frames (nested), whose main worlds each have their own
/// relay.
fn documents() -> Vec<Document> {
    let Some(top) = web_sys::window().and_then(|w| w.document()) else {
        return Vec::new();
    };
    let mut docs = vec![top];
    let mut i = 0;
    while i < docs.len() && docs.len() < 64 {
        if let Ok(frames) = proto::query_selector_all(&docs[i], "iframe, frame") {
            for k in 0..frames.length() {
                let doc = frames
                    .item(k)
                    .and_then(|f| f.dyn_into::<web_sys::HtmlIFrameElement>().ok())
                    .and_then(|f| f.content_document());
                if let Some(d) = doc {
                    docs.push(d);
                }
            }
        }
        i += 1;
    }
    docs
}

/// Reads one report from the main world.
fn heard(e: web_sys::Event) {
    // Not `dyn_ref`: an event of a frame's realm is no `CustomEvent` of ours.
    let detail = js_sys::Reflect::get(&e, &JsValue::from_str("detail")).ok();
    let Some(detail) = detail.and_then(|d| d.as_string()) else {
        return;
    };
    let Ok(v) = js_sys::JSON::parse(&detail) else {
        return;
    };
    // (`Reflect.get` of what is not an object fails: nothing read.)
    let field = |name: &str| js_sys::Reflect::get(&v, &name.into()).ok();
    let text = |name: &str| field(name).and_then(|f| f.as_string());
    let yes = |name: &str| field(name).and_then(|f| f.as_bool()).unwrap_or(false);
    let kind = text("kind").unwrap_or_default();
    if !matches!(kind.as_str(), "alert" | "confirm" | "prompt" | "beforeunload") {
        return;
    }
    let dialog = Dialog {
        kind,
        message: crate::text::truncate(
            &crate::text::collapse(&text("message").unwrap_or_default()),
            300,
        ),
        accepted: yes("accepted"),
        text: text("text").map(|t| crate::text::truncate(&t, 200)),
        by_default: yes("by_default"),
    };
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if s.seen.len() < MAX_KEPT {
            s.seen.push(dialog);
        }
    });
}

/// Sends `detail` as `errand:arm` to the main world of `doc`.
fn send(doc: &Document, detail: &str) {
    let init = CustomEventInit::new();
    init.set_detail(&JsValue::from_str(detail));
    if let Ok(e) = CustomEvent::new_with_event_init_dict("errand:arm", &init) {
        let _ = proto::dispatch_event(&doc, &e);
    }
}

/// Arms every document of this instance to answer dialogs with `answer`:
/// accept or dismiss as it says; without one, `confirm` and `prompt` are
/// declined (and reported as answered by default); `alert` is always
/// acknowledged.
pub fn arm(answer: &DialogAnswer) {
    let accept = match answer.dialog {
        Some(DialogChoice::Accept) => "true",
        Some(DialogChoice::Dismiss) => "false",
        // A prompt given a text is meant to be accepted.
        None if answer.dialog_text.is_some() => "true",
        None => "null",
    };
    let text =
        answer.dialog_text.as_deref().map(crate::json::quote).unwrap_or_else(|| "null".to_owned());
    let detail = format!(r#"{{"accept":{accept},"text":{text}}}"#);
    for doc in documents() {
        listen(&doc);
        send(&doc, &detail);
    }
}

/// Arms with the default answers (between actions, while observing).
pub fn arm_default() {
    arm(&DialogAnswer::default());
}

fn listen(doc: &Document) {
    let known = STATE.with(|s| s.borrow().docs.iter().any(|l| l.doc == *doc));
    if known {
        return;
    }
    let listener = Closure::<dyn FnMut(web_sys::Event)>::new(heard);
    let _ =
        doc.add_event_listener_with_callback("errand:dialog", listener.as_ref().unchecked_ref());
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        // Forget documents that are gone (a frame that navigated).
        s.docs.retain(|l| proto::default_view(&l.doc).is_some());
        s.docs.push(Listening { doc: doc.clone(), _listener: listener });
    });
}

/// The dialogs reported since the last call.
pub fn take() -> Vec<Dialog> {
    STATE.with(|s| std::mem::take(&mut s.borrow_mut().seen))
}

/// Gives the page its own dialogs back (`cleanup`).
pub fn disarm() {
    let docs: Vec<Document> =
        STATE.with(|s| s.borrow().docs.iter().map(|l| l.doc.clone()).collect());
    for doc in docs {
        send(&doc, "null");
    }
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        for l in &s.docs {
            let _ = l.doc.remove_event_listener_with_callback(
                "errand:dialog",
                l._listener.as_ref().unchecked_ref(),
            );
        }
        s.docs.clear();
        s.seen.clear();
    });
}

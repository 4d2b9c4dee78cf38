//! A frame's [`Reply`] on its way to its parent: `postcard`'s bytes of it,
//! in base64 (one JSON string; the loader and the service worker pass it on
//! untouched). Both ends are this crate, the same build. Read from JSON, the
//! reply took the largest deserialize code of the module after `Action`'s
//! (a frame's lines, every field by name or in order; the effect, its
//! dialogs and locator): postcard reads every field in order only
//! (BENCHMARKS.md, "Issue 24 part A, continued again").
//!
//! postcard writes every field (no `skip_serializing_if`, which the
//! protocol's [`Effect`], [`Dialog`] and [`Locator`] use for their JSON), so
//! those go as the mirrors below; each conversion names every field, so a
//! field added to the protocol does not compile until it is added here.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use errand_protocol::{Dialog, Effect, ErrorCode, Locator};
use serde::{Deserialize, Serialize};

use super::Reply;
use crate::text::Line;

#[derive(Serialize, Deserialize)]
enum ReplyWire {
    Seen { token: String, origin: String, lines: Vec<Line> },
    Done { effect: EffectWire },
    Ack,
    Failed { code: ErrorCode, message: String },
}

#[derive(Serialize, Deserialize)]
struct EffectWire {
    summary: String,
    url: String,
    url_changed: bool,
    value: Option<String>,
    page_changed: bool,
    appeared: Vec<String>,
    invalid: Vec<String>,
    new_tab: Option<i64>,
    dialogs: Vec<DialogWire>,
    reverted: Vec<String>,
    locator: Option<LocatorWire>,
}

#[derive(Serialize, Deserialize)]
struct DialogWire {
    kind: String,
    message: String,
    accepted: bool,
    text: Option<String>,
    by_default: bool,
}

#[derive(Serialize, Deserialize)]
struct LocatorWire {
    tag: String,
    role: Option<String>,
    name: Option<String>,
    label: Option<String>,
    text: Option<String>,
    id: Option<String>,
    field_name: Option<String>,
    test_id: Option<String>,
    css: Option<String>,
    frame: Vec<String>,
    rect: Option<[f64; 4]>,
}

impl From<Dialog> for DialogWire {
    fn from(d: Dialog) -> DialogWire {
        let Dialog { kind, message, accepted, text, by_default } = d;
        DialogWire { kind, message, accepted, text, by_default }
    }
}

impl From<DialogWire> for Dialog {
    fn from(d: DialogWire) -> Dialog {
        let DialogWire { kind, message, accepted, text, by_default } = d;
        Dialog { kind, message, accepted, text, by_default }
    }
}

impl From<Locator> for LocatorWire {
    fn from(l: Locator) -> LocatorWire {
        let Locator { tag, role, name, label, text, id, field_name, test_id, css, frame, rect } = l;
        LocatorWire { tag, role, name, label, text, id, field_name, test_id, css, frame, rect }
    }
}

impl From<LocatorWire> for Locator {
    fn from(l: LocatorWire) -> Locator {
        let LocatorWire { tag, role, name, label, text, id, field_name, test_id, css, frame, rect } =
            l;
        Locator { tag, role, name, label, text, id, field_name, test_id, css, frame, rect }
    }
}

impl From<Effect> for EffectWire {
    fn from(e: Effect) -> EffectWire {
        let Effect {
            summary,
            url,
            url_changed,
            value,
            page_changed,
            appeared,
            invalid,
            new_tab,
            dialogs,
            reverted,
            locator,
        } = e;
        EffectWire {
            summary,
            url,
            url_changed,
            value,
            page_changed,
            appeared,
            invalid,
            new_tab,
            dialogs: dialogs.into_iter().map(Into::into).collect(),
            reverted,
            locator: locator.map(Into::into),
        }
    }
}

impl From<EffectWire> for Effect {
    fn from(e: EffectWire) -> Effect {
        let EffectWire {
            summary,
            url,
            url_changed,
            value,
            page_changed,
            appeared,
            invalid,
            new_tab,
            dialogs,
            reverted,
            locator,
        } = e;
        Effect {
            summary,
            url,
            url_changed,
            value,
            page_changed,
            appeared,
            invalid,
            new_tab,
            dialogs: dialogs.into_iter().map(Into::into).collect(),
            reverted,
            locator: locator.map(Into::into),
        }
    }
}

/// The reply as its wire text: base64 of postcard's bytes (empty when it
/// cannot be written, which the parent reads as no answer).
pub fn encode(reply: Reply) -> String {
    let wire = match reply {
        Reply::Seen { token, origin, lines } => ReplyWire::Seen { token, origin, lines },
        Reply::Done { effect } => ReplyWire::Done { effect: effect.into() },
        Reply::Ack {} => ReplyWire::Ack,
        Reply::Failed { code, message } => ReplyWire::Failed { code, message },
    };
    postcard::to_allocvec(&wire).map(|bytes| STANDARD.encode(bytes)).unwrap_or_default()
}

/// A reply read back from [`encode`]'s text.
pub fn decode(text: &str) -> Option<Reply> {
    let bytes = STANDARD.decode(text).ok()?;
    Some(match postcard::from_bytes::<ReplyWire>(&bytes).ok()? {
        ReplyWire::Seen { token, origin, lines } => Reply::Seen { token, origin, lines },
        ReplyWire::Done { effect } => Reply::Done { effect: effect.into() },
        ReplyWire::Ack => Reply::Ack {},
        ReplyWire::Failed { code, message } => Reply::Failed { code, message },
    })
}

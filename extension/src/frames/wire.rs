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
//! those go as the mirrors below ([`mirror!`]).

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

/// Declares `$wire`, the mirror of the protocol's `$proto` with every field
/// written, and both conversions. Each conversion names every field (a
/// field added to the protocol does not compile until it is added here);
/// a field whose type is itself a mirror says how it maps: `each` (a
/// `Vec`), `maybe` (an `Option`).
macro_rules! mirror {
    ($wire:ident of $proto:ident { $($field:ident: $ty:ty $(=> $map:ident)?,)* }) => {
        #[derive(Serialize, Deserialize)]
        struct $wire { $($field: $ty,)* }
        impl From<$proto> for $wire {
            fn from(p: $proto) -> $wire {
                let $proto { $($field,)* } = p;
                $wire { $($field: mirror!(@map $field $($map)?),)* }
            }
        }
        impl From<$wire> for $proto {
            fn from(w: $wire) -> $proto {
                let $wire { $($field,)* } = w;
                $proto { $($field: mirror!(@map $field $($map)?),)* }
            }
        }
    };
    (@map $field:ident) => { $field };
    (@map $field:ident each) => { $field.into_iter().map(Into::into).collect() };
    (@map $field:ident maybe) => { $field.map(Into::into) };
}

mirror!(EffectWire of Effect {
    summary: String,
    url: String,
    url_changed: bool,
    value: Option<String>,
    page_changed: bool,
    appeared: Vec<String>,
    invalid: Vec<String>,
    new_tab: Option<i64>,
    dialogs: Vec<DialogWire> => each,
    reverted: Vec<String>,
    locator: Option<LocatorWire> => maybe,
});

mirror!(DialogWire of Dialog {
    kind: String,
    message: String,
    accepted: bool,
    text: Option<String>,
    by_default: bool,
});

mirror!(LocatorWire of Locator {
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
});

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

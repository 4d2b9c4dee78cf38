//! A frame's messages on the wire (`crate::wire`: postcard's bytes in
//! base64): a parent's [`Message`] to the frame, and the frame's [`Reply`].
//! Read from JSON, the reply took the largest deserialize code of the
//! module after `Action`'s (a frame's lines, every field by name or in
//! order; the effect, its dialogs and locator): postcard reads every field
//! in order only (BENCHMARKS.md, "Issue 24 part A, continued again").

use errand_protocol::ErrorCode;
use serde::{Deserialize, Serialize};

use super::{Message, Reply};
use crate::text::Line;
use crate::wire::{self, EffectWire};

#[derive(Serialize, Deserialize)]
enum ReplyWire {
    Seen { token: String, origin: String, lines: Vec<Line> },
    Done { effect: EffectWire },
    Ack,
    Failed { code: ErrorCode, message: String },
}

/// The reply as its wire text (empty when it cannot be written, which the
/// parent reads as no answer).
pub fn encode(reply: Reply) -> String {
    let wire = match reply {
        Reply::Seen { token, origin, lines } => ReplyWire::Seen { token, origin, lines },
        Reply::Done { effect } => ReplyWire::Done { effect: effect.into() },
        Reply::Ack {} => ReplyWire::Ack,
        Reply::Failed { code, message } => ReplyWire::Failed { code, message },
    };
    wire::encode(&wire).unwrap_or_default()
}

/// A reply read back from [`encode`]'s text.
pub fn decode(text: &str) -> Option<Reply> {
    Some(match wire::decode::<ReplyWire>(text).ok()? {
        ReplyWire::Seen { token, origin, lines } => Reply::Seen { token, origin, lines },
        ReplyWire::Done { effect } => Reply::Done { effect: effect.into() },
        ReplyWire::Ack => Reply::Ack {},
        ReplyWire::Failed { code, message } => Reply::Failed { code, message },
    })
}

/// A parent's message as its wire text.
pub fn encode_message(message: &Message) -> Result<String, String> {
    wire::encode(message)
}

/// A message read back from [`encode_message`]'s text.
pub fn decode_message(text: &str) -> Result<Message, String> {
    wire::decode(text)
}

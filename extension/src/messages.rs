//! Building, checking and reading envelopes: the pure half of the exports.
//!
//! The service worker and the side panel build every message through
//! [`make_envelope`] (exported as `envelope`) and check incoming ones with
//! [`check_message`] (exported as `check`), so no message shape is written
//! by hand in JavaScript; those two are the worker build's only (feature
//! `worker`, with serde_json). The content script reads the `page` envelope
//! the loader hands `handle` as the JavaScript object it is
//! ([`read_request`]: its fields with `Reflect`, its command from the wire
//! text the service worker wrote, `crate::wire`) and answers with an object
//! ([`encode_reply`]): no JSON text in, no serde_json in its builds.

use std::cell::Cell;

use errand_protocol::{Body, DecodeError, Envelope, ErrorCode, PageCommand};
use js_sys::Reflect;
use serde::Serialize;
use wasm_bindgen::JsValue;

thread_local! {
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// This content script's next message id (its own counter).
pub fn next_id() -> u64 {
    NEXT_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A JavaScript number that must be a whole, non-negative id.
#[cfg(feature = "worker")]
fn whole(n: f64, what: &str) -> Result<u64, String> {
    if is_whole(n) {
        Ok(n as u64)
    } else {
        Err(format!("`{what}` must be a whole number from 0 up, not {n}"))
    }
}

fn is_whole(n: f64) -> bool {
    n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= MAX_SAFE
}

/// Builds an envelope of `kind` from a JSON object of its fields, checks it
/// against the protocol, and returns its canonical JSON.
#[cfg(feature = "worker")]
pub fn make_envelope(id: f64, re: Option<f64>, kind: &str, fields: &str) -> Result<String, String> {
    use serde_json::{Map, Value};
    let id = whole(id, "id")?;
    let re = re.map(|r| whole(r, "re")).transpose()?;
    let mut obj = if fields.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(fields) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(format!("the fields of a `{kind}` envelope must be a JSON object"));
            }
            Err(e) => {
                return Err(format!("the fields of a `{kind}` envelope are not JSON: {e}"));
            }
        }
    };
    for key in ["v", "id", "re", "kind"] {
        if obj.contains_key(key) {
            return Err(format!("the fields must not contain `{key}`: envelope() sets it"));
        }
    }
    obj.insert("v".into(), Value::from(errand_protocol::PROTOCOL_VERSION));
    obj.insert("id".into(), Value::from(id));
    if let Some(re) = re {
        obj.insert("re".into(), Value::from(re));
    }
    obj.insert("kind".into(), Value::from(kind));
    Envelope::decode_value(Value::Object(obj))
        .map(|e| e.encode())
        .map_err(|e| format!("cannot build a `{kind}` envelope: {e}"))
}

/// Checks a message and returns its canonical JSON, or the reason it is bad.
#[cfg(feature = "worker")]
pub fn check_message(message: &str) -> Result<String, String> {
    Envelope::decode(message).map(|e| e.encode()).map_err(|e| e.to_string())
}

/// A `page` request, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request's id, for the reply's `re`.
    pub id: u64,
    pub command: PageCommand,
}

/// A field of a message object (`undefined` when it has none).
pub fn field(obj: &JsValue, name: &str) -> JsValue {
    Reflect::get(obj, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
}

/// A JavaScript number that is a whole, non-negative id.
fn whole_id(v: &JsValue) -> Option<u64> {
    v.as_f64().filter(|n| is_whole(*n)).map(|n| n as u64)
}

/// Reads what `handle` was given (the message object the loader received):
/// a `page` envelope, or the error reply.
///
/// Only a `page` envelope is read, never a whole [`Body`]: the
/// content-script builds carry the serde code of what they receive (a
/// [`PageCommand`] as `wire::Command`, which the service worker's
/// `page_command` wrote from the host's JSON) and send ([`encode_reply`]),
/// not of every message kind (about half of the module once; see
/// BENCHMARKS.md, "What makes the WASM module large"). Any other kind,
/// known or not, is not allowed here.
pub fn read_request(message: &JsValue) -> Result<Request, Box<Envelope>> {
    let refuse = |e: DecodeError| {
        Box::new(Envelope::error(next_id(), e.request_id(), e.code(), e.to_string()))
    };
    if !message.is_object() || js_sys::Array::is_array(message) {
        return Err(refuse(DecodeError::NotAnObject));
    }
    let v = whole_id(&field(message, "v")).ok_or_else(|| refuse(DecodeError::MissingVersion))?;
    if v != u64::from(errand_protocol::PROTOCOL_VERSION) {
        return Err(refuse(DecodeError::UnsupportedVersion(v)));
    }
    let id = whole_id(&field(message, "id"));
    let kind = field(message, "kind")
        .as_string()
        .ok_or_else(|| refuse(DecodeError::MissingKind { id }))?;
    let Some(id) = id else {
        return Err(refuse(DecodeError::BadFields {
            id: None,
            kind,
            reason: "missing field `id`".to_owned(),
        }));
    };
    if kind != "page" {
        return Err(Box::new(Envelope::error(
            next_id(),
            Some(id),
            ErrorCode::NotAllowed,
            format!("the content script only takes `page` messages, not `{kind}`"),
        )));
    }
    let command = match field(message, "wire").as_string() {
        Some(text) => crate::wire::decode::<crate::wire::Command>(&text),
        None => Err("missing field `wire` (the command as the service worker writes it)".into()),
    };
    match command {
        Ok(command) => Ok(Request { id, command: command.into() }),
        Err(reason) => {
            Err(refuse(DecodeError::BadFields { id: Some(id), kind: "page".to_owned(), reason }))
        }
    }
}

/// The bodies the content script sends, in [`Body`]'s wire shape (the same
/// `kind` tag and field names; `replies_encode_like_the_protocol` checks
/// each against [`Envelope::encode`]). Serializing a [`Body`] would take the
/// serde code of every message kind.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Reply<'a> {
    Observation(&'a errand_protocol::Observation),
    ActionDone { effect: &'a errand_protocol::Effect },
    Located(&'a errand_protocol::Located),
    Stakes { stakes: &'a errand_protocol::Stakes },
    Ack {},
    Error { code: ErrorCode, message: &'a str },
}

/// An envelope around a [`Reply`], as [`Envelope`] writes it.
#[derive(Serialize)]
struct ReplyEnvelope<'a> {
    v: u32,
    id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    re: Option<u64>,
    #[serde(flatten)]
    body: Reply<'a>,
}

/// The envelope the content script sends, in [`Envelope`]'s wire shape:
/// the same fields, in the same order, as [`Envelope::encode`] writes for
/// the kinds it sends (`observation`, `action_done`, `located`, `ack`,
/// `error`). A kind the content script does not send becomes an `internal`
/// error naming it: add it to [`Reply`].
fn reply_of(envelope: &Envelope) -> ReplyEnvelope<'_> {
    let body = match &envelope.body {
        Body::Observation(o) => Reply::Observation(o),
        Body::ActionDone { effect } => Reply::ActionDone { effect },
        Body::Located(found) => Reply::Located(found),
        Body::Stakes { stakes } => Reply::Stakes { stakes },
        Body::Ack {} => Reply::Ack {},
        Body::Error { code, message } => Reply::Error { code: *code, message },
        _ => Reply::Error {
            code: ErrorCode::Internal,
            message: "the content script cannot send this kind of message \
                      (messages.rs: Reply lacks it)",
        },
    };
    ReplyEnvelope { v: envelope.v, id: envelope.id, re: envelope.re, body }
}

/// The reply as the JavaScript object the loader sends back: what
/// `JSON.parse` made of [`Envelope::encode`]'s text before (plain objects,
/// `null` where the JSON has `null`, absent where it has nothing, numbers
/// as numbers), so the host reads the same JSON after the service worker
/// relays it (checked byte for byte by the e2e test
/// `replies_reach_the_host_as_the_protocol_writes_them`).
pub fn encode_reply(envelope: &Envelope) -> JsValue {
    write(&reply_of(envelope)).unwrap_or_else(|e| {
        let message = format!("cannot encode: {e}");
        let body = Reply::Error { code: ErrorCode::Internal, message: &message };
        write(&ReplyEnvelope { v: envelope.v, id: envelope.id, re: None, body })
            .unwrap_or(JsValue::NULL)
    })
}

/// The WebAssembly build: the JSON text (`json.rs`), parsed by the engine;
/// one call into JavaScript instead of one per field and string (8–12 ms
/// for a 1k-element observation through serde-wasm-bindgen, 4–5 this way,
/// as main's serde_json and the loader's parse; BENCHMARKS.md).
#[cfg(not(errand_js))]
fn write(reply: &ReplyEnvelope<'_>) -> Result<JsValue, String> {
    let text = crate::json::to_string(reply).map_err(|e| e.to_string())?;
    js_sys::JSON::parse(&text).map_err(|_| "the reply's JSON does not parse".to_owned())
}

/// The JS build (wasm2js): serde-wasm-bindgen, field by field. A call into
/// JavaScript is cheap here and Rust's float printer is not (it runs as
/// JavaScript on 32-bit halves): 15–25 ms for a 1k-element observation
/// against 26–49 ms with the text written in Rust (serde_json with the
/// numbers written by `Number#toString`) and parsed (BENCHMARKS.md).
#[cfg(errand_js)]
fn write(reply: &ReplyEnvelope<'_>) -> Result<JsValue, String> {
    let ser = serde_wasm_bindgen::Serializer::json_compatible();
    reply.serialize(&ser).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "worker")]
    #[test]
    fn builds_envelopes_from_fields() {
        let text =
            make_envelope(4.0, None, "start_task", r#"{"task":"find socks","tab_id":7}"#).unwrap();
        let env = Envelope::decode(&text).unwrap();
        assert_eq!(env.id, 4);
        assert_eq!(env.re, None);
        assert!(
            matches!(env.body, Body::StartTask { ref task, tab_id: Some(7), .. } if task == "find socks")
        );

        let reply = make_envelope(9.0, Some(4.0), "ack", "").unwrap();
        assert_eq!(reply, r#"{"v":1,"id":9,"re":4,"kind":"ack"}"#);
        assert_eq!(
            make_envelope(1.0, None, "get_status", "{}").unwrap(),
            r#"{"v":1,"id":1,"kind":"get_status"}"#
        );
    }

    #[cfg(feature = "worker")]
    #[test]
    fn refuses_wrong_shapes_clearly() {
        let e = make_envelope(1.0, None, "open_tab", "{}").unwrap_err();
        assert!(e.contains("open_tab") && e.contains("url"), "{e}");
        let e = make_envelope(1.0, None, "make_coffee", "{}").unwrap_err();
        assert!(e.contains("unknown message kind"), "{e}");
        assert!(make_envelope(1.5, None, "ack", "{}").unwrap_err().contains("`id`"));
        assert!(make_envelope(-1.0, None, "ack", "{}").is_err());
        assert!(make_envelope(1.0, Some(f64::NAN), "ack", "{}").unwrap_err().contains("`re`"));
        assert!(make_envelope(1.0, None, "ack", "[1]").unwrap_err().contains("JSON object"));
        assert!(make_envelope(1.0, None, "ack", "{nope").unwrap_err().contains("not JSON"));
        assert!(make_envelope(1.0, None, "ack", r#"{"kind":"x"}"#).unwrap_err().contains("`kind`"));
    }

    #[cfg(feature = "worker")]
    #[test]
    fn checks_messages() {
        let text = r#"{"kind":"page","v":1,"id":2,"tab_id":3,"command":{"op":"observe"}}"#;
        let canon = check_message(text).unwrap();
        assert!(canon.starts_with(r#"{"v":1,"id":2,"kind":"page""#), "{canon}");
        assert!(canon.contains(r#""marks":false"#), "{canon}");
        assert_eq!(check_message("[]").unwrap_err(), "the message is not a JSON object");
    }

    /// The service worker's `page_command` hands the content script every
    /// command as the protocol reads it from the host's JSON, and refuses a
    /// bad one with the protocol's own sentence (the e2e suite sends every
    /// command through it).
    #[cfg(feature = "worker")]
    #[test]
    fn reads_every_command_like_the_protocol() {
        use crate::wire::{Command, decode, page_command};
        use errand_protocol::{Action, DialogAnswer, FilePayload, Locator};
        let commands = [
            PageCommand::Observe { marks: false, full: false, since: None },
            PageCommand::Observe { marks: true, full: true, since: Some(7) },
            PageCommand::Act {
                action: Action::Click {
                    index: 3,
                    button: Default::default(),
                    modifiers: vec![],
                    dialog: DialogAnswer::accept(),
                },
                only_on: None,
                secret_field: false,
                secrets: vec![],
            },
            PageCommand::Act {
                action: Action::Fill { index: 2, text: "Ada".into() },
                only_on: Some("https://bank.example".into()),
                secret_field: true,
                secrets: vec!["s3cret".into()],
            },
            PageCommand::Act {
                action: Action::DragPath { index: 1, points: vec![[0.0, 0.5], [1.0, 0.25]] },
                only_on: None,
                secret_field: false,
                secrets: vec![],
            },
            PageCommand::Cleanup {},
            PageCommand::SetFiles {
                index: 4,
                files: vec![FilePayload {
                    name: "a.txt".into(),
                    mime: "text/plain".into(),
                    base64: "aGk=".into(),
                }],
            },
            PageCommand::Locate {
                locator: Locator {
                    tag: "button".into(),
                    name: Some("Go".into()),
                    ..Default::default()
                },
            },
            PageCommand::Stakes {
                action: Action::Type { index: 5, text: "500".into(), enter: true, clear: false },
            },
        ];
        for command in commands {
            // A new variant must be added to `wire::Command` (and here).
            match &command {
                PageCommand::Observe { .. }
                | PageCommand::Act { .. }
                | PageCommand::Cleanup {}
                | PageCommand::SetFiles { .. }
                | PageCommand::Locate { .. }
                | PageCommand::Stakes { .. } => {}
            }
            let message = Envelope::reply(5, 4, Body::Page { tab_id: 1, command: command.clone() });
            let text = page_command(&message.encode()).unwrap();
            assert_eq!(PageCommand::from(decode::<Command>(&text).unwrap()), command);
        }
        for bad in [
            r#"{"op":"dance"}"#,
            r#"{"op":"act"}"#,
            r#"{"op":"act","action":{"fly":{}}}"#,
            r#"{"op":"act","action":{"click":{"index":"x"}}}"#,
            r#"{"op":"observe","marks":"yes"}"#,
            r#"{"op":"set_files","index":-1,"files":[]}"#,
            r#"{"op":"locate"}"#,
        ] {
            let message = format!(r#"{{"v":1,"id":3,"kind":"page","tab_id":1,"command":{bad}}}"#);
            let theirs = Envelope::decode(&message).unwrap_err().to_string();
            assert_eq!(page_command(&message).unwrap_err(), theirs, "{bad}");
        }
        let other = Envelope::reply(5, 4, Body::Ack {}).encode();
        assert_eq!(page_command(&other).unwrap_err(), "not a `page` message");
    }

    #[test]
    fn replies_encode_like_the_protocol() {
        use errand_protocol::{Effect, Observation};
        let observation = Observation {
            url: "https://example.com/".into(),
            title: "t".into(),
            text: "[1]<button>Go</button>".into(),
            elapsed_ms: 2.5,
            seq: 4,
            ..Default::default()
        };
        let effect = Effect {
            summary: "clicked".into(),
            value: Some("x".into()),
            appeared: vec!["a menu".into()],
            ..Default::default()
        };
        for body in [
            Body::Observation(observation),
            Body::ActionDone { effect },
            Body::Located(errand_protocol::Located { index: 7, rung: "role_name".into() }),
            Body::Ack {},
            Body::Error { code: ErrorCode::NoSuchElement, message: "no \"[4]\"".into() },
        ] {
            for re in [Some(3), None] {
                let env = Envelope { v: 1, id: 8, re, body: body.clone() };
                assert_eq!(serde_json::to_string(&reply_of(&env)).unwrap(), env.encode());
            }
        }
        let other =
            serde_json::to_string(&reply_of(&Envelope::reply(2, 1, Body::GetStatus {}))).unwrap();
        assert!(other.contains(r#""code":"internal""#), "{other}");
    }
}

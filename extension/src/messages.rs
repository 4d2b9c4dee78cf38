//! Building, checking and reading envelopes: the pure half of the exports.
//!
//! The service worker and the side panel build every message through
//! [`make_envelope`] (exported as `envelope`) and check incoming ones with
//! [`check_message`] (exported as `check`), so no message shape is written
//! by hand in JavaScript. [`read_request`] turns the text `handle` receives
//! into a [`PageCommand`] or the error envelope to answer with.

use std::cell::Cell;

use errand_protocol::{Body, DecodeError, Envelope, ErrorCode, PageCommand};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
fn whole(n: f64, what: &str) -> Result<u64, String> {
    if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= MAX_SAFE {
        Ok(n as u64)
    } else {
        Err(format!("`{what}` must be a whole number from 0 up, not {n}"))
    }
}

/// Builds an envelope of `kind` from a JSON object of its fields, checks it
/// against the protocol, and returns its canonical JSON.
pub fn make_envelope(id: f64, re: Option<f64>, kind: &str, fields: &str) -> Result<String, String> {
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

/// The fields of a `page` envelope the content script reads (serde ignores
/// the others: `v` and `kind` are checked before, `tab_id` is the service
/// worker's).
#[derive(Deserialize)]
struct PageMessage {
    command: PageCommand,
}

/// Reads what `handle` was given: a `page` envelope, or the error reply.
///
/// Only a `page` envelope is deserialized, never a whole [`Body`]: the
/// content-script builds carry the serde code of what they receive
/// ([`PageCommand`]) and send ([`encode_reply`]), not of every message kind
/// (about half of the module once; see BENCHMARKS.md, "What makes the WASM
/// module large"). Any other kind, known or not, is not allowed here.
pub fn read_request(message: &str) -> Result<Request, Box<Envelope>> {
    let refuse = |e: DecodeError| {
        Box::new(Envelope::error(next_id(), e.request_id(), e.code(), e.to_string()))
    };
    let value: Value =
        serde_json::from_str(message).map_err(|e| refuse(DecodeError::NotJson(e.to_string())))?;
    let obj = value.as_object().ok_or_else(|| refuse(DecodeError::NotAnObject))?;
    let v =
        obj.get("v").and_then(Value::as_u64).ok_or_else(|| refuse(DecodeError::MissingVersion))?;
    if v != u64::from(errand_protocol::PROTOCOL_VERSION) {
        return Err(refuse(DecodeError::UnsupportedVersion(v)));
    }
    let id = obj.get("id").and_then(Value::as_u64);
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| refuse(DecodeError::MissingKind { id }))?;
    let Some(id) = id else {
        return Err(refuse(DecodeError::BadFields {
            id: None,
            kind: kind.to_owned(),
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
    match serde_json::from_value::<PageMessage>(value) {
        Ok(PageMessage { command }) => Ok(Request { id, command }),
        Err(e) => Err(refuse(DecodeError::BadFields {
            id: Some(id),
            kind: "page".to_owned(),
            reason: e.to_string(),
        })),
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

/// The JSON of an envelope the content script sends: the same text as
/// [`Envelope::encode`] for the kinds it sends (`observation`,
/// `action_done`, `located`, `ack`, `error`). A kind the content script does not send
/// becomes an `internal` error naming it: add it to [`Reply`].
pub fn encode_reply(envelope: &Envelope) -> String {
    let body = match &envelope.body {
        Body::Observation(o) => Reply::Observation(o),
        Body::ActionDone { effect } => Reply::ActionDone { effect },
        Body::Located(found) => Reply::Located(found),
        Body::Ack {} => Reply::Ack {},
        Body::Error { code, message } => Reply::Error { code: *code, message },
        _ => Reply::Error {
            code: ErrorCode::Internal,
            message: "the content script cannot send this kind of message \
                      (messages.rs: Reply lacks it)",
        },
    };
    let reply = ReplyEnvelope { v: envelope.v, id: envelope.id, re: envelope.re, body };
    serde_json::to_string(&reply).unwrap_or_else(|e| {
        format!(
            r#"{{"v":{},"id":{},"kind":"error","code":"internal","message":"cannot encode: {e}"}}"#,
            envelope.v, envelope.id
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn checks_messages() {
        let text = r#"{"kind":"page","v":1,"id":2,"tab_id":3,"command":{"op":"observe"}}"#;
        let canon = check_message(text).unwrap();
        assert!(canon.starts_with(r#"{"v":1,"id":2,"kind":"page""#), "{canon}");
        assert!(canon.contains(r#""marks":false"#), "{canon}");
        assert_eq!(check_message("[]").unwrap_err(), "the message is not a JSON object");
    }

    #[test]
    fn reads_page_requests_and_answers_the_rest() {
        let ok =
            read_request(r#"{"v":1,"id":5,"kind":"page","tab_id":1,"command":{"op":"cleanup"}}"#)
                .unwrap();
        assert_eq!(ok, Request { id: 5, command: PageCommand::Cleanup {} });

        let not_page = read_request(r#"{"v":1,"id":6,"kind":"get_status"}"#).unwrap_err();
        assert_eq!(not_page.re, Some(6));
        assert!(
            matches!(not_page.body, Body::Error { code: ErrorCode::NotAllowed, ref message } if message.contains("get_status"))
        );

        // Known or not, any kind but `page` is not the content script's.
        let unknown = read_request(r#"{"v":1,"id":7,"kind":"make_coffee"}"#).unwrap_err();
        assert_eq!(unknown.re, Some(7));
        assert!(matches!(unknown.body, Body::Error { code: ErrorCode::NotAllowed, .. }));

        let old = read_request(r#"{"v":9,"id":7,"kind":"page"}"#).unwrap_err();
        assert!(matches!(old.body, Body::Error { code: ErrorCode::UnsupportedVersion, .. }));
        let no_command = read_request(r#"{"v":1,"id":9,"kind":"page","tab_id":1}"#).unwrap_err();
        assert_eq!(no_command.re, Some(9));
        assert!(
            matches!(no_command.body, Body::Error { code: ErrorCode::BadMessage, ref message } if message.contains("command")),
            "{no_command:?}"
        );

        let bad = read_request("nope").unwrap_err();
        assert_eq!(bad.re, None);
        assert!(matches!(bad.body, Body::Error { code: ErrorCode::BadMessage, .. }));

        let bad_cmd =
            read_request(r#"{"v":1,"id":8,"kind":"page","tab_id":1,"command":{"op":"dance"}}"#)
                .unwrap_err();
        assert_eq!(bad_cmd.re, Some(8));
        assert!(
            matches!(bad_cmd.body, Body::Error { code: ErrorCode::BadMessage, ref message } if message.contains("dance")),
            "{bad_cmd:?}"
        );
        assert!(bad.id < bad_cmd.id, "ids count up");
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
                assert_eq!(encode_reply(&env), env.encode());
            }
        }
        let other = encode_reply(&Envelope::reply(2, 1, Body::GetStatus {}));
        assert!(other.contains(r#""code":"internal""#), "{other}");
    }
}

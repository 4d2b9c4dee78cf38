//! Building, checking and reading envelopes: the pure half of the exports.
//!
//! The service worker and the side panel build every message through
//! [`make_envelope`] (exported as `envelope`) and check incoming ones with
//! [`check_message`] (exported as `check`), so no message shape is written
//! by hand in JavaScript. [`read_request`] turns the text `handle` receives
//! into a [`PageCommand`] or the error envelope to answer with.

use std::cell::Cell;

use errand_protocol::{Body, DecodeError, Envelope, ErrorCode, PageCommand};
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

/// Reads what `handle` was given: a `page` envelope, or the error reply.
pub fn read_request(message: &str) -> Result<Request, Box<Envelope>> {
    match Envelope::decode(message) {
        Ok(Envelope { id, body: Body::Page { command, .. }, .. }) => Ok(Request { id, command }),
        Ok(other) => {
            let kind = kind_of(&other);
            Err(Box::new(Envelope::error(
                next_id(),
                Some(other.id),
                ErrorCode::NotAllowed,
                format!("the content script only takes `page` messages, not `{kind}`"),
            )))
        }
        Err(DecodeError::UnknownKind { id, kind }) if kind == "page" => {
            // The protocol reports any unknown variant as an unknown kind,
            // even an unknown `op` inside a `page` message: say what it is.
            Err(Box::new(Envelope::error(
                next_id(),
                id,
                ErrorCode::BadMessage,
                bad_command(message),
            )))
        }
        Err(e) => {
            Err(Box::new(Envelope::error(next_id(), e.request_id(), e.code(), e.to_string())))
        }
    }
}

/// Why the `command` of a `page` message cannot be read.
fn bad_command(message: &str) -> String {
    let command = serde_json::from_str::<Value>(message)
        .ok()
        .and_then(|mut v| v.get_mut("command").map(Value::take))
        .unwrap_or(Value::Null);
    match serde_json::from_value::<PageCommand>(command) {
        Err(e) => format!("bad `page` message: {e}"),
        Ok(_) => "bad `page` message".to_owned(),
    }
}

/// The `kind` word of an envelope.
fn kind_of(envelope: &Envelope) -> String {
    serde_json::to_value(&envelope.body)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "?".into())
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

        let unknown = read_request(r#"{"v":1,"id":7,"kind":"make_coffee"}"#).unwrap_err();
        assert_eq!(unknown.re, Some(7));
        assert!(matches!(unknown.body, Body::Error { code: ErrorCode::UnknownKind, .. }));

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
}

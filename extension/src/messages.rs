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

/// [`PageCommand`] as the content script reads it: the same variants, fields
/// and defaults, externally tagged (`{"act": {...}}`), which [`read_command`]
/// makes of the wire's internally tagged `{"op": "act", ...}`. The
/// protocol's own derive reads the internally tagged shape through serde's
/// buffered `Content`, a second copy of the deserialize code of everything
/// a command holds (`Action` above all); this reads it from the
/// [`serde_json::Value`] directly, as the frames' commands are read (see
/// BENCHMARKS.md, "Issue 24 part A"). `reads_every_command_like_the_protocol`
/// checks each variant against the protocol's serde.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum WireCommand {
    Observe {
        #[serde(default)]
        marks: bool,
        #[serde(default)]
        full: bool,
        #[serde(default)]
        since: Option<u64>,
    },
    Act {
        action: errand_protocol::Action,
        #[serde(default)]
        only_on: Option<String>,
        #[serde(default)]
        secret_field: bool,
        #[serde(default)]
        secrets: Vec<String>,
    },
    Cleanup {},
    SetFiles {
        index: u32,
        files: Vec<errand_protocol::FilePayload>,
    },
    Locate {
        locator: errand_protocol::Locator,
    },
}

impl From<WireCommand> for PageCommand {
    fn from(c: WireCommand) -> PageCommand {
        match c {
            WireCommand::Observe { marks, full, since } => {
                PageCommand::Observe { marks, full, since }
            }
            WireCommand::Act { action, only_on, secret_field, secrets } => {
                PageCommand::Act { action, only_on, secret_field, secrets }
            }
            WireCommand::Cleanup {} => PageCommand::Cleanup {},
            WireCommand::SetFiles { index, files } => PageCommand::SetFiles { index, files },
            WireCommand::Locate { locator } => PageCommand::Locate { locator },
        }
    }
}

/// What serde says of a JSON value of the wrong type.
fn unexpected(v: &Value) -> serde::de::Unexpected<'_> {
    use serde::de::Unexpected;
    match v {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Unexpected::Unsigned(u),
            (_, Some(i)) => Unexpected::Signed(i),
            _ => Unexpected::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

/// Reads the `command` of a `page` envelope (the wire's internally tagged
/// [`PageCommand`]) through [`WireCommand`]; the errors say what the
/// protocol's serde says.
fn read_command(command: Option<Value>) -> Result<PageCommand, serde_json::Error> {
    use serde::de::Error;
    let Some(command) = command else {
        return Err(Error::missing_field("command"));
    };
    // The tag and the rest. (serde's buffering also reads an array, the tag
    // then the fields in order; `WireCommand` does not take that rest.)
    let (op, fields) = match command {
        Value::Object(mut fields) => (fields.remove("op"), Value::Object(fields)),
        Value::Array(mut items) => {
            let op = (!items.is_empty()).then(|| items.remove(0));
            (op, Value::Array(items))
        }
        other => {
            return Err(Error::invalid_type(
                unexpected(&other),
                &"internally tagged enum PageCommand",
            ));
        }
    };
    let op = match op {
        Some(Value::String(op)) => op,
        Some(other) => return Err(Error::invalid_type(unexpected(&other), &"variant identifier")),
        None => return Err(Error::missing_field("op")),
    };
    let mut tagged = Map::new();
    tagged.insert(op, fields);
    serde_json::from_value::<WireCommand>(Value::Object(tagged)).map(PageCommand::from)
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
    let Value::Object(mut obj) = value else {
        return Err(refuse(DecodeError::NotAnObject));
    };
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
    match read_command(obj.remove("command")) {
        Ok(command) => Ok(Request { id, command }),
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
    to_json(&reply).unwrap_or_else(|e| {
        format!(
            r#"{{"v":{},"id":{},"kind":"error","code":"internal","message":"cannot encode: {e}"}}"#,
            envelope.v, envelope.id
        )
    })
}

/// The reply as JSON text.
#[cfg(not(errand_js))]
fn to_json(reply: &impl Serialize) -> serde_json::Result<String> {
    serde_json::to_string(reply)
}

/// The reply as JSON text, its numbers written by the JavaScript engine.
///
/// In the JS build (wasm2js) Rust's float printer runs as JavaScript, its
/// 128-bit arithmetic on 32-bit halves: writing an observation's boxes (four
/// numbers an element) took 21–30 ms of a first observation (V8's profile,
/// BENCHMARKS.md). `Number.prototype.toString` writes the shortest text that
/// reads back as the same number, as Rust's does; an integral one without
/// `.0` (`12`, which reads back as the same `f64`). The WebAssembly build
/// keeps Rust's printer: there it is fast, and a call per number is not.
#[cfg(errand_js)]
fn to_json(reply: &impl Serialize) -> serde_json::Result<String> {
    struct JsNumbers;
    impl serde_json::ser::Formatter for JsNumbers {
        fn write_f64<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            v: f64,
        ) -> std::io::Result<()> {
            // serde_json writes `null` for NaN and infinities before this.
            let text = js_sys::Number::from(v).to_string(10).map(String::from).unwrap_or_default();
            w.write_all(text.as_bytes())
        }
        fn write_f32<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            v: f32,
        ) -> std::io::Result<()> {
            self.write_f64(w, f64::from(v))
        }
    }
    let mut out = Vec::with_capacity(4096);
    reply.serialize(&mut serde_json::Serializer::with_formatter(&mut out, JsNumbers))?;
    // serde_json writes only UTF-8.
    Ok(String::from_utf8(out).unwrap_or_default())
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

    /// `WireCommand` reads every command as the protocol's serde does: the
    /// same value, and the same error text for a bad one.
    #[test]
    fn reads_every_command_like_the_protocol() {
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
        ];
        for command in commands {
            // A new variant must be added to `WireCommand` (and here).
            match &command {
                PageCommand::Observe { .. }
                | PageCommand::Act { .. }
                | PageCommand::Cleanup {}
                | PageCommand::SetFiles { .. }
                | PageCommand::Locate { .. } => {}
            }
            let value = serde_json::to_value(&command).unwrap();
            assert_eq!(serde_json::from_value::<PageCommand>(value.clone()).unwrap(), command);
            assert_eq!(read_command(Some(value)).unwrap(), command);
            let text = format!(
                r#"{{"v":1,"id":5,"kind":"page","tab_id":1,"command":{}}}"#,
                serde_json::to_string(&command).unwrap()
            );
            assert_eq!(read_request(&text).unwrap(), Request { id: 5, command });
        }
        for bad in [
            r#"{"op":"dance"}"#,
            r#"{}"#,
            r#"{"op":3}"#,
            r#"{"op":null}"#,
            r#""observe""#,
            r#"[1]"#,
            r#"{"op":"act"}"#,
            r#"{"op":"act","action":{"fly":{}}}"#,
            r#"{"op":"act","action":{"click":{"index":"x"}}}"#,
            r#"{"op":"observe","marks":"yes"}"#,
            r#"{"op":"set_files","index":-1,"files":[]}"#,
            r#"{"op":"locate"}"#,
            r#"[]"#,
        ] {
            let value: Value = serde_json::from_str(bad).unwrap();
            let theirs =
                serde_json::from_value::<PageCommand>(value.clone()).map_err(|e| e.to_string());
            let ours = read_command(Some(value)).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{bad}");
        }
        assert_eq!(read_command(None).unwrap_err().to_string(), "missing field `command`");
        // serde's buffering also took a command as an array, its fields in
        // order; nothing writes one (the protocol's serde writes objects),
        // and the content script refuses it.
        for array in [r#"["cleanup"]"#, r#"["observe",true,false,3]"#, r#"["observe",{}]"#] {
            assert!(read_command(Some(serde_json::from_str(array).unwrap())).is_err(), "{array}");
        }
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

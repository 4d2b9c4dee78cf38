//! What one instance of this crate hands another: `postcard`'s bytes, in
//! base64 (one JSON string the browser's messaging passes untouched).
//!
//! Both ends are this crate: the service worker's build writes a `page`
//! command for the content script ([`page_command`], from the protocol's
//! JSON), a parent frame's instance writes a frame's command and the frame
//! its reply (`frames/wire.rs`). Read from a JavaScript object or JSON, a
//! command took the largest deserialize code of the content script:
//! serde-wasm-bindgen's reader instantiated for every variant and field of
//! [`Action`] (by name, with serde's buffering for its flattened and
//! untagged parts), about an eighth of the module. postcard reads every
//! field in order, nothing by name (BENCHMARKS.md, "Issue 24, the module's
//! size: commands as postcard").
//!
//! postcard writes every field and reads no self-described shape: no
//! `skip_serializing_if`, `flatten` or `untagged`, which the protocol's
//! types use for their JSON. Those go through the shapes below: serde's
//! `remote` definitions ([`ActionDef`]: the compiler checks each variant
//! and field against the protocol's type) or mirrors with conversions
//! ([`mirror!`]).

use errand_protocol::{
    Action, ClickButton, Dialog, DialogAnswer, DialogChoice, Effect, FilePayload, Locator,
    Modifier, OptionChoice, PageCommand, ScrollDirection,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `value` as its wire text: base64 of postcard's bytes.
pub fn encode<T: Serialize>(value: &T) -> Result<String, String> {
    b64::encode(&postcard::to_allocvec(value).map_err(|e| e.to_string())?)
}

/// A value read back from [`encode`]'s text.
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    postcard::from_bytes(&b64::decode(text)?).map_err(|e| e.to_string())
}

/// Base64 by the engine's `btoa`/`atob` (pages and the service worker
/// alike; no decoder of our own in the module).
#[cfg(target_arch = "wasm32")]
mod b64 {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(catch)]
        fn btoa(binary: &str) -> Result<String, JsValue>;
        #[wasm_bindgen(catch)]
        fn atob(text: &str) -> Result<String, JsValue>;
    }

    pub fn encode(bytes: &[u8]) -> Result<String, String> {
        // A "binary string": one character per byte, which `btoa` takes.
        let binary: String = bytes.iter().map(|&b| char::from(b)).collect();
        btoa(&binary).map_err(|_| "cannot write base64".to_owned())
    }

    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        let binary = atob(text).map_err(|_| "not base64".to_owned())?;
        // Every character of `atob`'s binary string is below 256.
        Ok(binary.chars().map(|c| c as u8).collect())
    }
}

/// Natively (the unit tests): the base64 crate, the same alphabet and
/// padding as the engine's.
#[cfg(not(target_arch = "wasm32"))]
mod b64 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    pub fn encode(bytes: &[u8]) -> Result<String, String> {
        Ok(STANDARD.encode(bytes))
    }

    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        STANDARD.decode(text).map_err(|e| format!("not base64: {e}"))
    }
}

/// A `page` command, as the service worker hands it to the content script.
#[derive(Debug, Serialize, Deserialize)]
pub enum Command {
    Observe {
        marks: bool,
        full: bool,
        since: Option<u64>,
    },
    Act {
        #[serde(with = "ActionDef")]
        action: Action,
        only_on: Option<String>,
        secret_field: bool,
        secrets: Vec<String>,
    },
    Cleanup,
    SetFiles {
        index: u32,
        files: Vec<FilePayload>,
    },
    Locate {
        locator: LocatorWire,
    },
    Stakes {
        #[serde(with = "ActionDef")]
        action: Action,
    },
}

impl From<PageCommand> for Command {
    fn from(c: PageCommand) -> Command {
        match c {
            PageCommand::Observe { marks, full, since } => Command::Observe { marks, full, since },
            PageCommand::Act { action, only_on, secret_field, secrets } => {
                Command::Act { action, only_on, secret_field, secrets }
            }
            PageCommand::Cleanup {} => Command::Cleanup,
            PageCommand::SetFiles { index, files } => Command::SetFiles { index, files },
            PageCommand::Locate { locator } => Command::Locate { locator: locator.into() },
            PageCommand::Stakes { action } => Command::Stakes { action },
        }
    }
}

impl From<Command> for PageCommand {
    fn from(c: Command) -> PageCommand {
        match c {
            Command::Observe { marks, full, since } => PageCommand::Observe { marks, full, since },
            Command::Act { action, only_on, secret_field, secrets } => {
                PageCommand::Act { action, only_on, secret_field, secrets }
            }
            Command::Cleanup => PageCommand::Cleanup {},
            Command::SetFiles { index, files } => PageCommand::SetFiles { index, files },
            Command::Locate { locator } => PageCommand::Locate { locator: locator.into() },
            Command::Stakes { action } => PageCommand::Stakes { action },
        }
    }
}

/// The `page` command of a `page` envelope's JSON text as the content
/// script reads it ([`Command`]'s wire text), or why it is not one: the
/// service worker's half (feature `worker`), through the protocol's own
/// reading of the envelope (its errors are the protocol's sentences).
#[cfg(feature = "worker")]
pub fn page_command(message: &str) -> Result<String, String> {
    use errand_protocol::{Body, Envelope};
    match Envelope::decode(message).map_err(|e| e.to_string())?.body {
        Body::Page { command, .. } => encode(&Command::from(command)),
        _ => Err("not a `page` message".to_owned()),
    }
}

/// [`Action`] for postcard: the same variants and fields, each written
/// (no `skip_serializing_if`), the dialog answer a field of its own (not
/// flattened), an option by variant (not untagged).
#[derive(Serialize, Deserialize)]
#[serde(remote = "Action")]
pub enum ActionDef {
    Click {
        index: u32,
        button: ClickButton,
        modifiers: Vec<Modifier>,
        #[serde(with = "DialogAnswerDef")]
        dialog: DialogAnswer,
    },
    DblClick {
        index: u32,
        button: ClickButton,
        modifiers: Vec<Modifier>,
    },
    Hover {
        index: u32,
    },
    Fill {
        index: u32,
        text: String,
    },
    Type {
        index: u32,
        text: String,
        enter: bool,
        clear: bool,
    },
    Clear {
        index: u32,
    },
    SelectOption {
        index: u32,
        #[serde(with = "options")]
        options: Vec<OptionChoice>,
    },
    Check {
        index: u32,
    },
    Uncheck {
        index: u32,
    },
    Press {
        key: String,
        index: Option<u32>,
        #[serde(with = "DialogAnswerDef")]
        dialog: DialogAnswer,
    },
    Focus {
        index: u32,
    },
    Scroll {
        direction: ScrollDirection,
        index: Option<u32>,
        pages: Option<f64>,
    },
    DragAndDrop {
        from: u32,
        to: u32,
    },
    Hold {
        index: u32,
        ms: u32,
    },
    DragPath {
        index: u32,
        points: Vec<[f64; 2]>,
    },
    UploadFile {
        index: u32,
        files: Vec<String>,
    },
    Extract {
        query: Option<String>,
    },
    GoBack {},
    GoForward {},
    Goto {
        url: String,
    },
    NewTab {
        url: Option<String>,
    },
    SwitchTab {
        tab_id: i64,
    },
    CloseTab {
        tab_id: Option<i64>,
    },
    Wait {
        ms: u32,
    },
    SendMessage {
        text: String,
    },
    AskUser {
        question: String,
    },
    Done {
        text: String,
        success: bool,
    },
    ReportInfeasible {
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "DialogAnswer")]
struct DialogAnswerDef {
    dialog: Option<DialogChoice>,
    dialog_text: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "OptionChoice")]
enum OptionChoiceDef {
    Position(u32),
    Text(String),
}

/// A select's options, each by [`OptionChoiceDef`].
mod options {
    use super::*;
    use serde::{Deserializer, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Choice(#[serde(with = "OptionChoiceDef")] OptionChoice);

    pub fn serialize<S: Serializer>(options: &[OptionChoice], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(options.iter().map(|o| Choice(o.clone())))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OptionChoice>, D::Error> {
        Ok(Vec::<Choice>::deserialize(d)?.into_iter().map(|Choice(o)| o).collect())
    }
}

/// Declares `$wire`, the mirror of the protocol's `$proto` with every field
/// written, and both conversions. Each conversion names every field (a
/// field added to the protocol does not compile until it is added here);
/// a field whose type is itself a mirror says how it maps: `each` (a
/// `Vec`), `maybe` (an `Option`).
macro_rules! mirror {
    ($wire:ident of $proto:ident { $($field:ident: $ty:ty $(=> $map:ident)?,)* }) => {
        #[derive(Debug, Serialize, Deserialize)]
        pub struct $wire { $($field: $ty,)* }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command, and every action in it, comes out of the wire as the
    /// protocol's JSON read it (the JSON of the protocol's own tests and
    /// of what models write: defaults, flattened dialog answers, options
    /// by text and position).
    #[test]
    fn commands_cross_the_wire_unchanged() {
        let actions = [
            r#"{"click":{"index":2}}"#,
            r#"{"click":{"index":2,"button":"right","modifiers":["Shift","ControlOrMeta"],"dialog":"accept","dialog_text":"3"}}"#,
            r#"{"dblclick":{"index":2,"button":"middle"}}"#,
            r#"{"hover":{"index":5}}"#,
            r#"{"fill":{"index":3,"text":"Ada \"Q\"\tü"}}"#,
            r#"{"type":{"index":3,"text":"Lis","enter":true,"clear":true}}"#,
            r#"{"clear":{"index":1}}"#,
            r#"{"select_option":{"index":4,"options":["Blue",2,"3"]}}"#,
            r#"{"check":{"index":7}}"#,
            r#"{"uncheck":{"index":7}}"#,
            r#"{"press":{"key":"ControlOrMeta+a"}}"#,
            r#"{"press":{"key":"Enter","index":2,"dialog":"dismiss"}}"#,
            r#"{"focus":{"index":9}}"#,
            r#"{"scroll":{"direction":"down"}}"#,
            r#"{"scroll":{"direction":"left","index":4,"pages":0.5}}"#,
            r#"{"drag_and_drop":{"from":1,"to":9}}"#,
            r#"{"hold":{"index":2}}"#,
            r#"{"hold":{"index":2,"ms":2000}}"#,
            r#"{"drag_path":{"index":2,"points":[[0.1,0.5],[0.9,0.5]]}}"#,
            r#"{"upload_file":{"index":2,"files":["a.pdf","b.png"]}}"#,
            r#"{"extract":{}}"#,
            r#"{"extract":{"query":"price"}}"#,
            r#"{"go_back":{}}"#,
            r#"{"go_forward":{}}"#,
            r#"{"goto":{"url":"https://example.com/"}}"#,
            r#"{"new_tab":{}}"#,
            r#"{"switch_tab":{"tab_id":-4}}"#,
            r#"{"close_tab":{"tab_id":12}}"#,
            r#"{"wait":{}}"#,
            r#"{"send_message":{"text":"hi"}}"#,
            r#"{"ask_user":{"question":"which?"}}"#,
            r#"{"done":{"text":"ok","success":false}}"#,
            r#"{"report_infeasible":{"reason":"sold out"}}"#,
        ];
        let mut commands: Vec<PageCommand> = actions
            .iter()
            .map(|a| PageCommand::Act {
                action: serde_json::from_str(a).unwrap_or_else(|e| panic!("{a}: {e}")),
                only_on: Some("https://bank.example".into()),
                secret_field: true,
                secrets: vec!["s3cret".into()],
            })
            .collect();
        for text in [
            r#"{"op":"observe"}"#,
            r#"{"op":"observe","marks":true,"full":true,"since":41}"#,
            r#"{"op":"cleanup"}"#,
            r#"{"op":"set_files","index":3,"files":[{"name":"a.txt","mime":"text/plain","base64":"aGk="},{"name":"b","base64":""}]}"#,
            r#"{"op":"locate","locator":{"tag":"input","id":"q","frame":["iframe:nth-of-type(1)"],"rect":[1,2,3.5,4]}}"#,
            r#"{"op":"act","action":{"fill":{"index":1,"text":"x"}}}"#,
        ] {
            commands.push(serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}")));
        }
        for command in commands {
            let text = encode(&Command::from(command.clone())).unwrap();
            let back: PageCommand = decode::<Command>(&text).unwrap().into();
            assert_eq!(back, command, "{text}");
        }
    }

    #[test]
    fn a_bad_text_is_refused() {
        for bad in ["", "!!", "AAAA", "/w==", "BgAA"] {
            assert!(decode::<Command>(bad).is_err(), "{bad}");
        }
    }
}

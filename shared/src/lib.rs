//! Errand's protocol: every message exchanged between the native host, the
//! extension's service worker, the content script and the side panel.
//!
//! This crate is compiled by both sides — natively into the host and to
//! WebAssembly into the extension crate — so one set of types defines the
//! wire format. Nothing else in the project builds these messages by hand.
//!
//! # Wire format
//! Every message is one JSON object, an [`Envelope`]:
//!
//! ```json
//! {"v":1,"id":7,"re":3,"kind":"tab_ready","tab_id":12,"url":"https://…","title":"…"}
//! ```
//!
//! * `v` — [`PROTOCOL_VERSION`]; a message of another version is refused.
//! * `id` — the sender's request id (each sender counts on its own).
//! * `re` — for a reply, the `id` of the request it answers.
//! * `kind` — which [`Body`] variant follows, its fields beside it.

use serde::{Deserialize, Serialize};

mod action;
#[cfg(feature = "json")]
pub mod chunk;
mod diff;
pub mod locator;
mod observation;
mod panel;
#[cfg(feature = "json")]
pub mod rules_js;
pub mod stakes;

pub use action::{
    Action, ClickButton, DialogAnswer, DialogChoice, Modifier, OptionChoice, ScrollDirection,
};
pub use diff::{DiffError, ObservationDiff, Splice, apply, splice_ends, splices};
pub use locator::{Located, Locator};
pub use observation::{ElementInfo, Observation, Rect, Viewport};
pub use panel::{
    CheckLevel, CheckLine, Fact, GrantView, ProfileView, RecipeSummary, SecretInfo, SettingsUpdate,
    SettingsView, TaskDetail, TaskSummary,
};
pub use stakes::{Decision as PolicyDecision, FormStakes, Stakes, Verdict};

/// The version carried in every envelope's `v`.
pub const PROTOCOL_VERSION: u32 = 1;

/// The native messaging host's registered name.
pub const HOST_NAME: &str = "errand.host";

/// The extension's id, fixed by the `key` in `manifest.json`.
pub const EXTENSION_ID: &str = "ipdllapojbkjjhcikcodfhbklgfddfol";

/// The origin the browser passes to the host as its first argument.
pub fn extension_origin() -> String {
    format!("chrome-extension://{EXTENSION_ID}/")
}

/// Chromium drops the port (and kills the host) for a host → extension
/// message of more than this many bytes.
pub const MAX_TO_EXTENSION: usize = 1_048_576;

/// The largest extension → host message Chromium sends.
pub const MAX_FROM_EXTENSION: usize = 64 * 1_048_576;

/// The most bytes of a message's JSON text one [`Body::Chunk`] carries,
/// counted as written inside the chunk (escaped): 900 KiB, leaving room
/// under [`MAX_TO_EXTENSION`] for the chunk's own fields.
pub const CHUNK_DATA_MAX: usize = 900 * 1024;

/// The largest host → extension message sent in [`Body::Chunk`]s; the
/// host refuses to send a larger one (an `error` goes instead) and the
/// service worker drops a set that grows beyond it.
pub const MAX_CHUNKED: usize = 64 * 1_048_576;

/// The largest `pong` the host sends back (a `ping` asking for more is
/// answered with an error): 16 MiB, well inside [`MAX_CHUNKED`].
pub const MAX_PONG: u32 = 16 * 1_048_576;

/// One message on any of Errand's channels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The protocol version, [`PROTOCOL_VERSION`].
    pub v: u32,
    /// The sender's id for this message.
    pub id: u64,
    /// For a reply: the id of the request it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub re: Option<u64>,
    /// What the message says.
    #[serde(flatten)]
    pub body: Body,
}

impl Envelope {
    /// A new request (or unsolicited message).
    pub fn new(id: u64, body: Body) -> Self {
        Envelope { v: PROTOCOL_VERSION, id, re: None, body }
    }

    /// A reply to the request `re`.
    pub fn reply(id: u64, re: u64, body: Body) -> Self {
        Envelope { v: PROTOCOL_VERSION, id, re: Some(re), body }
    }

    /// An error reply to the request `re` (or to no request, `None`).
    pub fn error(id: u64, re: Option<u64>, code: ErrorCode, message: impl Into<String>) -> Self {
        Envelope {
            v: PROTOCOL_VERSION,
            id,
            re,
            body: Body::Error { code, message: message.into() },
        }
    }

    /// Serialises to the JSON text that goes on the wire.
    #[cfg(feature = "json")]
    pub fn encode(&self) -> String {
        // Serialising these types cannot fail: no maps with non-string keys,
        // no custom serialisers.
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                r#"{{"v":{PROTOCOL_VERSION},"id":{},"kind":"error","code":"internal","message":"cannot encode: {e}"}}"#,
                self.id
            )
        })
    }

    /// Parses one message, telling exactly what is wrong with a bad one.
    #[cfg(feature = "json")]
    pub fn decode(text: &str) -> Result<Envelope, DecodeError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| DecodeError::NotJson(e.to_string()))?;
        Self::decode_value(value)
    }

    /// Like [`Envelope::decode`], from an already parsed JSON value.
    #[cfg(feature = "json")]
    pub fn decode_value(value: serde_json::Value) -> Result<Envelope, DecodeError> {
        let obj = value.as_object().ok_or(DecodeError::NotAnObject)?;
        let v = obj.get("v").and_then(|v| v.as_u64()).ok_or(DecodeError::MissingVersion)?;
        if v != u64::from(PROTOCOL_VERSION) {
            return Err(DecodeError::UnsupportedVersion(v));
        }
        let id = obj.get("id").and_then(|v| v.as_u64());
        let kind = obj
            .get("kind")
            .and_then(|k| k.as_str())
            .ok_or(DecodeError::MissingKind { id })?
            .to_owned();
        serde_json::from_value(value).map_err(|e| {
            let text = e.to_string();
            // Only an unknown *top-level* variant is an unknown kind; an
            // unknown nested tag (`command.op`, an action name) is a bad field.
            if text.starts_with(&format!("unknown variant `{kind}`")) {
                DecodeError::UnknownKind { id, kind }
            } else {
                DecodeError::BadFields { id, kind, reason: text }
            }
        })
    }
}

/// Why a message could not be read. Each variant is a clear sentence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("the message is not JSON: {0}")]
    NotJson(String),
    #[error("the message is not a JSON object")]
    NotAnObject,
    #[error("the message has no protocol version `v`")]
    MissingVersion,
    #[error("protocol version {0} is not supported (this side speaks version {PROTOCOL_VERSION})")]
    UnsupportedVersion(u64),
    #[error("the message has no `kind`")]
    MissingKind { id: Option<u64> },
    #[error("unknown message kind `{kind}`")]
    UnknownKind { id: Option<u64>, kind: String },
    #[error("bad `{kind}` message: {reason}")]
    BadFields { id: Option<u64>, kind: String, reason: String },
}

impl DecodeError {
    /// The id of the offending message, when it could be read, so that the
    /// error reply can name the request it answers.
    pub fn request_id(&self) -> Option<u64> {
        match self {
            DecodeError::MissingKind { id }
            | DecodeError::UnknownKind { id, .. }
            | DecodeError::BadFields { id, .. } => *id,
            _ => None,
        }
    }

    /// The error code to answer with.
    pub fn code(&self) -> ErrorCode {
        match self {
            DecodeError::UnsupportedVersion(_) => ErrorCode::UnsupportedVersion,
            DecodeError::UnknownKind { .. } => ErrorCode::UnknownKind,
            _ => ErrorCode::BadMessage,
        }
    }
}

/// Machine-readable error codes; the message beside them is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A native messaging frame was malformed (length, UTF-8).
    BadFrame,
    /// A message was not a valid envelope.
    BadMessage,
    /// A message of another protocol version.
    UnsupportedVersion,
    /// A message kind this side does not know.
    UnknownKind,
    /// A message that is valid but not accepted on this channel.
    NotAllowed,
    /// An action named an element number that was never listed.
    NoSuchElement,
    /// An action named an element that has since left the page.
    ElementGone,
    /// An action could not be carried out (the message says why).
    ActionFailed,
    /// The tab is gone, or the extension cannot run in it.
    TabUnavailable,
    /// The content script did not answer.
    PageUnavailable,
    /// The native host is not installed or not running.
    HostUnavailable,
    /// A task is already running.
    Busy,
    /// No such task, or none running.
    NoTask,
    /// Anything else: a bug.
    Internal,
}

/// Where a task ran its page logic: the WebAssembly build, or the plain
/// JavaScript build used on pages whose CSP refuses WebAssembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Build {
    Wasm,
    Js,
}

/// What an approval covers (see [`Body::Approve`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    #[default]
    Once,
    Task,
    Site,
}

impl ApprovalScope {
    pub fn is_once(&self) -> bool {
        *self == ApprovalScope::Once
    }
}

/// Every kind of message. The JSON field `kind` names the variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    // ---- Side panel (or the terminal) → host ----
    /// Start a task in a tab. With `url`, the host opens a new tab there;
    /// with neither, the host uses the active tab.
    StartTask {
        task: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tab_id: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// This task may only go to these sites (entries as in the
        /// settings' site lists), on top of the user's global lists.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allow_sites: Vec<String>,
    },
    /// Stop a task (the running one if `task_id` is absent).
    StopTask {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
    },
    /// Ask the host who it is and what it is doing.
    GetStatus {},
    /// The user's answer to a task's `question` event (the running task's
    /// if `task_id` is absent). Replied to with `ack`.
    Answer {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
        text: String,
    },
    /// A new task that continues an earlier one: same tab, and the model is
    /// told the earlier task and its answer. Replied to with `task_accepted`.
    FollowUp { task_id: String, task: String },
    /// Pause the running task after its current model call or action; with
    /// `take_over`, the user acts in the page meanwhile and the agent is
    /// told so when it resumes. Replied to with `ack`.
    PauseTask {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
        #[serde(default)]
        take_over: bool,
    },
    /// Resume a paused task. Replied to with `ack`.
    ResumeTask {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
    },
    /// The user's decision on a task's `approval` event (the running task's
    /// if `task_id` is absent). Replied to with `ack`.
    Approve {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_id: Option<String>,
        approved: bool,
        /// What an approval covers: this action (`once`, the default),
        /// every action of its kind on its site for the rest of the task
        /// (`task`), or from now on (`site`: listed and revocable in
        /// Settings and `errand approvals`).
        #[serde(default, skip_serializing_if = "ApprovalScope::is_once")]
        scope: ApprovalScope,
    },
    /// The user lets the MCP client driving Errand (`errand mcp`) use this
    /// tab too (the side panel's "Let <client> use this tab"). Replied to
    /// with `ack`; refused when no MCP client is connected.
    HandTab { tab_id: i64 },
    /// Past tasks, newest first; with `query`, those matching it (task text
    /// and answer). Replied to with `task_list`.
    ListTasks {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// One past task with its steps. Replied to with `task_detail`.
    GetTask { task_id: String },
    /// Replied to with `settings`.
    GetSettings {},
    /// Change settings (saved in the host's config file, used from the next
    /// step on). Replied to with `settings`, as they now are.
    SaveSettings { update: SettingsUpdate },
    /// Check that the model answers with the current settings. Replied to
    /// with `connection`.
    TestConnection {},
    /// Replied to with `profile`.
    GetProfile {},
    /// Add or change a profile fact. Replied to with `profile`.
    SetFact { name: String, value: String },
    /// Add or change a secret, fillable only on `origins`. Replied to with
    /// `profile` (which never holds a secret's value).
    /// With `any_field`, it may go into any field of those sites (a user
    /// name, an IBAN), not only into secret fields.
    SetSecret {
        name: String,
        value: String,
        origins: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        any_field: bool,
    },
    /// Forget a fact or a secret. Replied to with `profile`.
    Forget { name: String },
    /// Save a finished task as a recipe (`name`: by default from the
    /// task's words); reply `recipes`.
    SaveRecipe {
        task_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// The recipes; reply `recipes`.
    ListRecipes {},
    /// Replay a recipe (no model but to repair a step) as a task, in a new
    /// tab at its start or in `tab_id`; reply `task_accepted`.
    RunRecipe {
        name: String,
        /// Parameter values by name (others keep their recorded values).
        #[serde(default)]
        params: std::collections::BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tab_id: Option<i64>,
    },
    /// Make the repairs a replay offered part of the recipe; reply `recipes`.
    AcceptRepairs { name: String },
    /// The approvals the user gave "always on this site"; reply `grants`.
    ListGrants {},
    /// Withdraw the approvals given always on `site` (of `action_kind`
    /// only, or all of them); reply `grants`, as they now are.
    RevokeGrant {
        site: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        action_kind: Option<String>,
    },
    /// Measures the channel: replied to with `pong` carrying `reply_bytes`
    /// bytes (at most [`MAX_PONG`]); `pad` is there only to make the
    /// request as large as wanted. Used by the messaging benchmark.
    Ping {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pad: String,
        #[serde(default)]
        reply_bytes: u32,
    },

    // ---- Host → side panel ----
    /// Reply to `start_task`.
    TaskAccepted { task_id: String },
    /// Something happened in a task; sent to every side panel.
    TaskEvent { task_id: String, event: TaskEvent },
    /// Reply to `get_status`.
    Status {
        host_version: String,
        model: String,
        base_url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        running_task: Option<String>,
        /// Whether a model is configured at all (a key, or a local server).
        #[serde(default)]
        configured: bool,
        /// Whether the running task is paused.
        #[serde(default)]
        paused: bool,
    },
    /// Reply to `list_tasks`.
    TaskList { tasks: Vec<TaskSummary> },
    /// Reply to `get_task`.
    TaskDetail(TaskDetail),
    /// Reply to `get_settings` and `save_settings`.
    Settings { settings: SettingsView },
    /// Reply to `test_connection`: `ok` when nothing is a problem.
    Connection { ok: bool, checks: Vec<CheckLine> },
    /// Reply to the profile requests.
    Profile(ProfileView),
    /// Reply to `ping`.
    Pong { data: String },
    /// Reply to the recipe requests.
    Recipes { recipes: Vec<RecipeSummary> },
    /// Reply to `list_grants` and `revoke_grant`.
    Grants { grants: Vec<GrantView> },

    // ---- Service worker ↔ host ----
    /// The service worker introduces itself when it connects.
    Hello { extension_version: String },
    /// The host's answer to `hello`.
    Welcome { host_version: String },
    /// Open a new tab at `url` and answer with `tab_ready` once it loaded.
    OpenTab { url: String },
    /// Answer with `tab_ready` for the active tab of the focused window.
    ActiveTab {},
    /// Navigate a tab and answer with `tab_ready` once it loaded.
    Navigate { tab_id: i64, url: String },
    /// A tab, loaded.
    TabReady { tab_id: i64, url: String, title: String },
    /// Make a tab the active one of its window (and focus the window);
    /// answered with `tab_ready`.
    ActivateTab { tab_id: i64 },
    /// Close a tab; answered with `ack`.
    CloseTab { tab_id: i64 },
    /// List the open tabs; answered with `tabs`.
    ListTabs {},
    /// Reply to `list_tabs`.
    Tabs { tabs: Vec<TabSummary> },
    /// Capture the visible part of a tab as a JPEG data URL.
    Capture { tab_id: i64 },
    /// Reply to `capture`.
    Captured { data_url: String },
    /// A command for the content script of a tab; the service worker injects
    /// the content script when needed and relays the reply unchanged.
    Page { tab_id: i64, command: PageCommand },

    // ---- Content script → host (replies to `page`) ----
    /// Reply to [`PageCommand::Observe`].
    Observation(Observation),
    /// Reply to [`PageCommand::Act`].
    ActionDone { effect: Effect },
    /// Reply to [`PageCommand::Locate`].
    Located(Located),
    /// Reply to [`PageCommand::Stakes`].
    Stakes { stakes: Stakes },
    /// Reply to a command that returns nothing.
    Ack {},

    // ---- Host → service worker: framing ----
    /// One piece of a host → extension message too large for one native
    /// messaging frame (the browser drops the port, and kills the host, for
    /// a message over [`MAX_TO_EXTENSION`] bytes).
    ///
    /// The host encodes the message as usual, cuts its JSON text on UTF-8
    /// character boundaries into `count` slices of at most
    /// [`CHUNK_DATA_MAX`] bytes each *as written inside the chunk* (JSON
    /// escaping of quotes and backslashes counted), and sends them in order
    /// as `{"v":1,"id":N,"kind":"chunk","of":N,"index":i,"count":n,"data":"…"}`,
    /// back to back: `id` and `of` are both the original message's id, and no
    /// other message comes between the chunks of one message. Messages that
    /// fit in one frame are sent unchanged. Nothing is chunked towards the
    /// host (the browser takes 64 MiB that way).
    ///
    /// The service worker (`extension/sw.js`, with [`chunk::Reassembler`]) collects the
    /// slices by `of`, checks `index` and `count`, joins the `data` strings
    /// and handles the joined text exactly as a message received whole
    /// (checked by this crate, then dispatched); an incomplete set is dropped
    /// after a timeout, and a set over [`MAX_CHUNKED`] bytes is refused. A
    /// chunk never reaches a side panel.
    Chunk {
        /// The id of the message the slices make up.
        of: u64,
        /// This slice's position, from 0.
        index: u32,
        /// How many slices make up the message.
        count: u32,
        /// The slice of the message's JSON text.
        data: String,
    },

    // ---- `errand mcp` → host (its own Unix socket, never the extension) ----
    /// One MCP tool call from the client `client` (`observe`, `click`,
    /// `tabs`, …, with the tool's arguments), run by the host's tools layer
    /// under the same rules as the agent; answered with `tool_result`.
    /// (Not in the content script's builds: feature `json`.)
    #[cfg(feature = "json")]
    ToolCall {
        client: String,
        name: String,
        #[serde(default)]
        args: serde_json::Value,
    },
    /// Reply to `tool_call`: the text for the caller (scrubbed), an
    /// optional JPEG data URL, and whether the call failed.
    ToolResult {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<String>,
        #[serde(default)]
        is_error: bool,
    },

    // ---- Anywhere ----
    /// Something went wrong; `re` names the request.
    Error { code: ErrorCode, message: String },
}

/// The kinds a side panel may send: the service worker drops any other
/// from a panel. `extension/sw.js` imports it from the generated
/// `extension/generated/rules.js` ([`rules_js`]).
pub const PANEL_KINDS: &[&str] = &[
    "start_task",
    "stop_task",
    "get_status",
    "answer",
    "follow_up",
    "pause_task",
    "resume_task",
    "approve",
    "list_tasks",
    "get_task",
    "get_settings",
    "save_settings",
    "test_connection",
    "get_profile",
    "set_fact",
    "set_secret",
    "forget",
    "ping",
    "save_recipe",
    "list_recipes",
    "run_recipe",
    "accept_repairs",
    "list_grants",
    "revoke_grant",
    "hand_tab",
];

impl Body {
    /// Whether a side panel may send this message (its kind is in
    /// [`PANEL_KINDS`]).
    pub fn from_panel(&self) -> bool {
        matches!(
            self,
            Body::StartTask { .. }
                | Body::StopTask { .. }
                | Body::GetStatus {}
                | Body::Answer { .. }
                | Body::FollowUp { .. }
                | Body::PauseTask { .. }
                | Body::ResumeTask { .. }
                | Body::Approve { .. }
                | Body::Ping { .. }
                | Body::RunRecipe { .. }
                | Body::HandTab { .. }
        ) || self.is_management_request()
    }

    /// The side panel's management requests (history, settings, the
    /// connection check, the profile), which the host answers off its
    /// message loop.
    pub fn is_management_request(&self) -> bool {
        matches!(
            self,
            Body::ListTasks { .. }
                | Body::GetTask { .. }
                | Body::GetSettings {}
                | Body::SaveSettings { .. }
                | Body::TestConnection {}
                | Body::GetProfile {}
                | Body::SetFact { .. }
                | Body::SetSecret { .. }
                | Body::Forget { .. }
                | Body::SaveRecipe { .. }
                | Body::ListRecipes {}
                | Body::AcceptRepairs { .. }
                | Body::ListGrants {}
                | Body::RevokeGrant { .. }
        )
    }
}

/// One open tab, as `list_tabs` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TabSummary {
    pub tab_id: i64,
    pub url: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub active: bool,
}

/// What the host asks a content script to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum PageCommand {
    /// List the interactive elements, numbered; optionally draw the marks.
    Observe {
        #[serde(default)]
        marks: bool,
        /// Walk the whole page even when only parts of it changed since the
        /// previous observation (to check the incremental path).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        full: bool,
        /// The `seq` of the observation the asker holds of this tab: the
        /// reply may then be a diff against it (`Observation.diff`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<u64>,
    },
    /// Carry out one page action and report its effect. With `only_on`,
    /// only when the element's document has that origin
    /// (`https://bank.example`): the host sets it when it filled in a
    /// secret, so the value never lands on another site, whatever happened
    /// to the page since it was observed.
    ///
    /// `secrets` are the secret values the action's text carries: the
    /// content script keeps them (in its own memory, never in the page) to
    /// blank any field showing one before a screenshot. With
    /// `secret_field`, the action is refused unless its field is a secret
    /// field (a password input, or `autocomplete` saying password,
    /// one-time code or card data), checked on the field as it is then.
    Act {
        action: Action,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        only_on: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        secret_field: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        secrets: Vec<String>,
    },
    /// Remove everything Errand added to the page.
    Cleanup {},
    /// Put files into the file input numbered `index` (the host's half of
    /// `upload_file`: it read them from the folder the user allowed).
    SetFiles { index: u32, files: Vec<FilePayload> },
    /// Find the element `locator` describes among the elements of the last
    /// observation (open shadow roots and same-origin frames included), by
    /// the rungs of [`locator::RUNGS`] in order: reply `located`, or
    /// `no_such_element` saying what each rung found.
    Locate { locator: Locator },
    /// Tell what `action` would set off, without carrying it out: reply
    /// `stakes` (see [`stakes`]). The host's action policy asks before
    /// every action that may activate something.
    Stakes { action: Action },
}

/// A file for a file input: its name, MIME type and bytes in base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilePayload {
    pub name: String,
    #[serde(default)]
    pub mime: String,
    pub base64: String,
}

/// What an action did, as the page saw it afterwards.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// One sentence for the model and the user.
    pub summary: String,
    /// The page's URL after the action.
    pub url: String,
    /// Whether the URL changed.
    #[serde(default)]
    pub url_changed: bool,
    /// For fills and selects: the value read back from the element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Whether the page changed beyond the acted element (elements added
    /// or removed, the URL, a new tab).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub page_changed: bool,
    /// What appeared: short descriptions of visible elements added by the
    /// action (menus, suggestions, dialogs, messages).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub appeared: Vec<String>,
    /// Fields that are invalid after the action (`aria-invalid="true"` or a
    /// browser validation message), with the message when there is one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid: Vec<String>,
    /// A tab the action opened (its id), when the browser reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tab: Option<i64>,
    /// The JavaScript dialogs (`alert`, `confirm`, `prompt`, `beforeunload`)
    /// the page opened during the action, and how Errand answered them.
    /// Page data: the page can make these up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dialogs: Vec<Dialog>,
    /// Fields filled by earlier actions whose value the page changed
    /// since (a date widget emptying its field when its calendar closes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reverted: Vec<String>,
    /// How to find the acted element again (recipes), read just before
    /// the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<Locator>,
}

/// A JavaScript dialog the page opened, answered without blocking it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// The page's message (cut).
    #[serde(default)]
    pub message: String,
    /// Whether it was accepted (OK); an alert is always acknowledged.
    #[serde(default)]
    pub accepted: bool,
    /// The text a prompt was answered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the answer was the default one (no answer given by the
    /// action or the user): a declined confirm the model may want to
    /// answer by repeating the action with `dialog`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_default: bool,
}

impl Dialog {
    /// `a confirm asked "Delete 3 items?" — declined`.
    pub fn describe(&self) -> String {
        let msg = self.message.replace('"', "'");
        match self.kind.as_str() {
            "alert" => format!("an alert said \"{msg}\" (acknowledged)"),
            "beforeunload" => {
                "the page asked to confirm leaving it (left anyway: the agent chose to go)"
                    .to_owned()
            }
            kind => {
                let answer = match (self.accepted, &self.text) {
                    (true, Some(t)) => format!("answered \"{}\"", t.replace('"', "'")),
                    (true, None) => "accepted".to_owned(),
                    (false, _) => "declined".to_owned(),
                };
                let hint = if self.by_default && !self.accepted {
                    " (no answer was given: repeat the action with \"dialog\": \"accept\" (and \"dialog_text\" for a prompt) to accept it)"
                } else {
                    ""
                };
                format!("a {kind} asked \"{msg}\" — {answer}{hint}")
            }
        }
    }
}

impl Effect {
    /// Whether the page changed in a way the model could not have foreseen
    /// when it planned the next actions of its answer: the URL changed, a
    /// tab opened, or new content appeared. The host stops a multi-action
    /// answer there.
    pub fn unforeseen(&self) -> bool {
        self.url_changed
            || self.new_tab.is_some()
            || !self.appeared.is_empty()
            || !self.reverted.is_empty()
            || self.dialogs.iter().any(|d| d.by_default || d.kind == "alert")
    }

    /// The summary with the facts behind it, in one paragraph for the model.
    pub fn detail(&self) -> String {
        let mut s = if self.summary.is_empty() { "done".to_owned() } else { self.summary.clone() };
        if self.url_changed {
            s.push_str(&format!("; the URL is now {}", self.url));
        }
        if let Some(t) = self.new_tab {
            s.push_str(&format!("; a new tab opened (tab {t})"));
        }
        if !self.appeared.is_empty() {
            s.push_str("; appeared: ");
            s.push_str(&self.appeared.join(" | "));
        }
        if !self.invalid.is_empty() {
            s.push_str("; invalid: ");
            s.push_str(&self.invalid.join(" | "));
        }
        if !self.reverted.is_empty() {
            s.push_str("; earlier fills lost: ");
            s.push_str(&self.reverted.join(" | "));
        }
        for d in &self.dialogs {
            s.push_str("; ");
            s.push_str(&d.describe());
        }
        s
    }
}

/// A task's progress, as the side panel and the terminal show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskEvent {
    /// The task began in this tab.
    Started { task: String, tab_id: i64, url: String },
    /// The model is being asked for step `step`.
    Thinking { step: u32 },
    /// A step finished.
    Step(StepReport),
    /// The agent asks the user something; the task waits for an `answer`.
    Question { step: u32, question: String },
    /// The next action is one the host classed as irreversible (or the
    /// site is one the user wants asked first); the task waits for an
    /// `approve`.
    Approval {
        step: u32,
        action: Action,
        /// The element it acts on, as the page lists it (`<button> Pay`).
        #[serde(default)]
        element: String,
        /// What will happen, in plain words.
        summary: String,
        /// Why it needs approval.
        reason: String,
        /// The kind of action (`pay`, `delete`, …): what "approve for this
        /// task" or "always on this site" covers.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        kind: String,
        /// The site it happens on.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        site: String,
    },
    /// The task is paused (after `pause_task`); `take_over`: the user acts.
    Paused {
        #[serde(default)]
        take_over: bool,
    },
    /// The task goes on.
    Resumed {},
    /// The task ended.
    Finished { outcome: Outcome },
}

/// One step of the agent: what it made of the page and what it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    pub step: u32,
    #[serde(default)]
    pub evaluation: String,
    #[serde(default)]
    pub memory: String,
    #[serde(default)]
    pub next_goal: String,
    pub actions: Vec<ActionRecord>,
    /// Elements listed in the observation this step acted on.
    #[serde(default)]
    pub elements: usize,
    /// Which build of the content script observed the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// Tokens this step's model calls used, in and out.
    #[serde(default)]
    pub tokens: u64,
    /// What this step's model calls cost (US dollars), when priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The task's tokens so far, this step included.
    #[serde(default)]
    pub total_tokens: u64,
    /// The task's cost so far (US dollars), when priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// The marked screenshot the model saw (a JPEG data URL), when vision
    /// is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
}

/// One action and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub action: Action,
    pub ok: bool,
    /// The effect's summary, or the error, in plain words.
    pub detail: String,
    /// For an action the page carries out: milliseconds from sending it to
    /// having its verified effect (the settle wait included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// For an action the page carried out: its verified effect, with the
    /// element's locator (what a recipe replays and checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<Effect>,
    /// What the host's action policy decided, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The model finished, with its answer for the user.
    Done { answer: String, success: bool },
    /// The user stopped it.
    Stopped {},
    /// It could not go on.
    Failed { error: String },
    /// It used every step it was allowed.
    StepLimit { steps: u32 },
    /// The host ended while the task ran (found so by a later host).
    Interrupted {},
}

impl Outcome {
    /// The word stored for this outcome.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Done { .. } => "done",
            Outcome::Stopped {} => "stopped",
            Outcome::Failed { .. } => "failed",
            Outcome::StepLimit { .. } => "step_limit",
            Outcome::Interrupted {} => "interrupted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(body: &Body) -> String {
        serde_json::to_value(body).unwrap()["kind"].as_str().unwrap().to_owned()
    }

    #[test]
    fn the_panel_kinds_are_one_list_here_and_in_the_service_worker() {
        let s = || String::new();
        let panel = [
            Body::StartTask { task: s(), tab_id: None, url: None, allow_sites: vec![] },
            Body::StopTask { task_id: None },
            Body::GetStatus {},
            Body::Answer { task_id: None, text: s() },
            Body::FollowUp { task_id: s(), task: s() },
            Body::PauseTask { task_id: None, take_over: false },
            Body::ResumeTask { task_id: None },
            Body::Approve { task_id: None, approved: true, scope: ApprovalScope::Task },
            Body::ListTasks { query: None, limit: None },
            Body::GetTask { task_id: s() },
            Body::GetSettings {},
            Body::SaveSettings { update: Default::default() },
            Body::TestConnection {},
            Body::GetProfile {},
            Body::SetFact { name: s(), value: s() },
            Body::SetSecret { name: s(), value: s(), origins: vec![], any_field: false },
            Body::Forget { name: s() },
            Body::Ping { pad: s(), reply_bytes: 0 },
            Body::SaveRecipe { task_id: s(), name: None },
            Body::ListRecipes {},
            Body::RunRecipe { name: s(), params: Default::default(), tab_id: None },
            Body::AcceptRepairs { name: s() },
            Body::ListGrants {},
            Body::RevokeGrant { site: s(), action_kind: None },
            Body::HandTab { tab_id: 1 },
        ];
        let kinds: Vec<String> = panel.iter().map(kind).collect();
        assert_eq!(kinds, PANEL_KINDS);
        assert!(panel.iter().all(Body::from_panel));
        let not_panel = [
            Body::Hello { extension_version: s() },
            Body::TaskAccepted { task_id: s() },
            Body::Ack {},
            Body::ActiveTab {},
            Body::Capture { tab_id: 1 },
        ];
        assert!(!not_panel.iter().any(Body::from_panel));

        // The service worker takes the generated list (rules_js.rs checks
        // the file is current) and keeps no copy of its own.
        let sw = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../extension/sw.js"),
        )
        .unwrap();
        assert!(sw.contains("PANEL_KINDS") && sw.contains("from './generated/rules.js'"));
        assert!(!sw.contains("const PANEL_KINDS"), "sw.js keeps its own PANEL_KINDS");
    }

    #[test]
    fn round_trips_a_request_and_its_reply() {
        let req = Envelope::new(
            3,
            Body::Page {
                tab_id: 9,
                command: PageCommand::Observe { marks: true, full: false, since: None },
            },
        );
        let text = req.encode();
        assert!(text.contains(r#""kind":"page""#), "{text}");
        assert!(text.contains(r#""op":"observe""#), "{text}");
        assert_eq!(Envelope::decode(&text).unwrap(), req);

        let reply = Envelope::reply(
            1,
            3,
            Body::ActionDone { effect: Effect { summary: "clicked".into(), ..Default::default() } },
        );
        let back = Envelope::decode(&reply.encode()).unwrap();
        assert_eq!(back.re, Some(3));
    }

    #[test]
    fn actions_use_the_model_facing_shape() {
        let a: Action = serde_json::from_str(r#"{"click":{"index":12}}"#).unwrap();
        assert_eq!(
            a,
            Action::Click {
                index: 12,
                button: ClickButton::Left,
                modifiers: vec![],
                dialog: Default::default()
            }
        );
        let cmd = Envelope::new(
            1,
            Body::Page {
                tab_id: 1,
                command: PageCommand::Act {
                    action: a,
                    only_on: None,
                    secret_field: false,
                    secrets: vec![],
                },
            },
        );
        // Without the secret fields (an older host), it still reads.
        let old = r#"{"v":1,"id":2,"kind":"page","tab_id":1,"command":{"op":"act","action":{"click":{"index":3}},"only_on":"https://a.example"}}"#;
        let Body::Page { command: PageCommand::Act { secret_field, secrets, .. }, .. } =
            Envelope::decode(old).unwrap().body
        else {
            panic!("not an act")
        };
        assert!(!secret_field && secrets.is_empty());
        assert_eq!(Envelope::decode(&cmd.encode()).unwrap(), cmd);
    }

    #[test]
    fn tells_what_is_wrong() {
        assert!(matches!(Envelope::decode("{nope"), Err(DecodeError::NotJson(_))));
        assert_eq!(Envelope::decode("[1]"), Err(DecodeError::NotAnObject));
        assert_eq!(
            Envelope::decode(r#"{"v":99,"id":1,"kind":"get_status"}"#),
            Err(DecodeError::UnsupportedVersion(99))
        );
        let unknown = Envelope::decode(r#"{"v":1,"id":4,"kind":"make_coffee"}"#).unwrap_err();
        assert_eq!(unknown, DecodeError::UnknownKind { id: Some(4), kind: "make_coffee".into() });
        assert_eq!(unknown.code(), ErrorCode::UnknownKind);
        assert_eq!(unknown.request_id(), Some(4));
        let nested =
            Envelope::decode(r#"{"v":1,"id":6,"kind":"page","tab_id":1,"command":{"op":"dance"}}"#)
                .unwrap_err();
        assert!(matches!(nested, DecodeError::BadFields { id: Some(6), .. }), "{nested:?}");
        assert!(nested.to_string().contains("dance"), "{nested}");
        let bad = Envelope::decode(r#"{"v":1,"id":5,"kind":"open_tab"}"#).unwrap_err();
        assert!(matches!(bad, DecodeError::BadFields { id: Some(5), .. }), "{bad:?}");
        assert!(bad.to_string().contains("url"), "{bad}");
    }

    #[test]
    fn outcomes_carry_their_status() {
        let e =
            TaskEvent::Finished { outcome: Outcome::Done { answer: "ok".into(), success: true } };
        let text = serde_json::to_string(&e).unwrap();
        assert!(text.contains(r#""status":"done""#), "{text}");
        assert_eq!(Outcome::Stopped {}.status(), "stopped");
    }

    #[test]
    fn a_chunk_has_the_documented_shape() {
        let chunk = Envelope::new(
            7,
            Body::Chunk { of: 7, index: 1, count: 3, data: r#"{"v":1,"id":7,"ki"#.into() },
        );
        let text = chunk.encode();
        assert_eq!(
            text,
            r#"{"v":1,"id":7,"kind":"chunk","of":7,"index":1,"count":3,"data":"{\"v\":1,\"id\":7,\"ki"}"#
        );
        assert_eq!(Envelope::decode(&text).unwrap(), chunk);
        let bad = Envelope::decode(r#"{"v":1,"id":7,"kind":"chunk","of":7,"index":0,"data":""}"#)
            .unwrap_err();
        assert!(bad.to_string().contains("count"), "{bad}");
        const { assert!(CHUNK_DATA_MAX + 1024 < MAX_TO_EXTENSION) };
    }
}

//! What the side panel reads and edits through the host: past tasks,
//! settings, the profile and the connection check. The host owns all of it
//! (the extension stores none of it); these are the shapes on the wire.

use serde::{Deserialize, Serialize};

use crate::StepReport;

/// A stored task, as the history lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub task_id: String,
    pub task: String,
    /// The page the task started on, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `running`, `done`, `stopped`, `failed`, `step_limit`, `interrupted`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub steps: u32,
    /// Tokens of all its model calls, in and out.
    #[serde(default)]
    pub tokens: u64,
    /// US dollars (0 when the model has no price).
    #[serde(default)]
    pub cost_usd: f64,
    /// RFC 3339.
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

/// A stored task with its steps, as the history opens it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDetail {
    pub task: TaskSummary,
    pub steps: Vec<StepReport>,
}

/// The host's settings as the panel shows them. The API key itself never
/// leaves the host: only whether one is set, and a masked hint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsView {
    /// `openai`, `anthropic` or `gemini`.
    pub provider: String,
    pub model: String,
    pub base_url: String,
    /// Whether an API key is configured.
    #[serde(default)]
    pub api_key_set: bool,
    /// The key masked (`sk-…4f2a`), when one is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_hint: Option<String>,
    /// Whether the model is shown a marked screenshot each step.
    #[serde(default)]
    pub vision: bool,
    /// Whether the numbered marks are drawn on the page.
    #[serde(default)]
    pub marks: bool,
    pub max_steps: u32,
    /// The task ends when its model calls used more tokens than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The task ends when its model calls cost more than this (US dollars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// When not empty, the only sites Errand may open or act on.
    #[serde(default)]
    pub allow_sites: Vec<String>,
    /// Sites Errand never opens or acts on.
    #[serde(default)]
    pub deny_sites: Vec<String>,
    /// Sites where every action that changes something waits for approval.
    #[serde(default)]
    pub ask_first_sites: Vec<String>,
    #[serde(default)]
    pub planner: bool,
    #[serde(default)]
    pub validate: bool,
    /// Settings fixed by the environment or the command line: saving the
    /// file does not change them (the names of `SettingsUpdate`'s fields,
    /// e.g. `api_key`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locked: Vec<String>,
}

/// A change of settings: every field absent is left as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Empty: back to the provider's default server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// A new key; empty removes the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marks: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// 0 removes the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// 0 removes the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_sites: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_sites: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask_first_sites: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<bool>,
}

/// One fact of the user's profile (name, e-mail, address…).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub name: String,
    pub value: String,
}

/// One secret, without its value: its name and the origins it may be
/// filled on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretInfo {
    pub name: String,
    pub origins: Vec<String>,
    /// Whether it may go into any field of its sites, not only secret
    /// fields.
    #[serde(default)]
    pub any_field: bool,
}

/// The user's profile as the panel shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileView {
    pub facts: Vec<Fact>,
    pub secrets: Vec<SecretInfo>,
}

/// Actions of one kind the user approved always on one site ("Always on
/// <site>" in an approval), as Settings lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantView {
    /// The site, as the host compares sites (its normalised host).
    pub site: String,
    /// The kind of action: `pay`, `delete`, `publish`… (`data/stakes.toml`).
    pub kind: String,
    /// When it was given (RFC 3339).
    pub since: String,
}

/// How one line of a connection check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckLevel {
    Ok,
    Info,
    Warn,
    Problem,
}

/// One line of the host's doctor report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckLine {
    pub level: CheckLevel,
    pub subject: String,
    pub detail: String,
}

/// A recipe, as the History tab lists it (`errand recipe list`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecipeSummary {
    pub name: String,
    /// The task, with its parameters written `{name}`.
    pub task: String,
    pub start_url: String,
    pub steps: u32,
    /// The parameters' names and recorded values.
    #[serde(default)]
    pub params: Vec<(String, String)>,
    /// The task it was saved from.
    #[serde(default)]
    pub from_task: String,
    /// A replay repaired steps: the changed steps' intents, offered to accept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
}

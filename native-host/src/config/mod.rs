//! Settings: `<config dir>/config.toml`, overridden by the environment,
//! overridden by command-line flags.
//!
//! ```toml
//! [model]
//! base_url = "http://127.0.0.1:11434/v1"
//! model = "llama3.1"
//! api_key = "sk-…"
//! timeout_secs = 120
//! provider = "openai"      # or "anthropic", "gemini"
//! max_retries = 3          # on HTTP 429 and 5xx, honouring Retry-After
//! structured = "auto"      # the answer's JSON Schema sent to the provider: "on", "off"
//! stream = true            # OpenAI-compatible answers streamed (default: on for openai)
//!
//! [agent]
//! max_steps = 25
//! dialect = "json"         # or "glm", "browsergym"; default: glm for GLM models
//! max_tokens = 500000      # the task ends when its calls used more
//! max_cost_usd = 1.50      # priced with prices.toml beside config.toml
//! planner = true           # plan mini-tasks at the start, every few steps, on stalls (default)
//! validate = true          # check `done` with a validation call before answering
//! vision = false           # show the model a marked screenshot each step
//! marks = false            # draw the numbered marks on the page (default: as vision)
//! secrets_store = "auto"   # the OS keychain, else the 0600 file; "keychain", "file"
//!
//! [sites]
//! allow = []                               # when not empty, the only sites Errand may use
//! deny = ["ads.example"]                   # sites Errand never opens or acts on
//! ask_first = ["*.bank.example", "https://shop.example"]  # every change waits for approval
//! ```
//!
//! The side panel changes the file through [`write_edits`], which keeps the
//! user's comments, key order and other keys, and writes it owner-only
//! (it holds the API key) and atomically.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::answer::dialect::Dialect;

mod edit;
mod entries;
mod resolve;
pub mod validate;

pub use edit::*;
pub use entries::*;
pub use resolve::*;

/// A local Ollama's OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1";
/// The model asked for when none is configured.
pub const DEFAULT_MODEL: &str = "llama3.1";
/// Seconds one model call may take.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Steps a task may take.
pub const DEFAULT_MAX_STEPS: u32 = 25;
/// Retries after HTTP 429 / 5xx.
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// The first backoff delay, in milliseconds.
pub const DEFAULT_RETRY_BASE_MS: u64 = 1000;
/// The settings file's name inside the config dir.
pub const CONFIG_FILE: &str = "config.toml";

/// Environment variables read by [`Settings::load`].
pub mod env {
    pub const BASE_URL: &str = "ERRAND_BASE_URL";
    pub const MODEL: &str = "ERRAND_MODEL";
    pub const API_KEY: &str = "ERRAND_API_KEY";
    pub const MAX_STEPS: &str = "ERRAND_MAX_STEPS";
    pub const TIMEOUT_SECS: &str = "ERRAND_TIMEOUT_SECS";
    pub const CONFIG_DIR: &str = "ERRAND_CONFIG_DIR";
    pub const DATA_DIR: &str = "ERRAND_DATA_DIR";
    pub const PROVIDER: &str = "ERRAND_PROVIDER";
    pub const DIALECT: &str = "ERRAND_DIALECT";
    pub const MAX_RETRIES: &str = "ERRAND_MAX_RETRIES";
    pub const RETRY_BASE_MS: &str = "ERRAND_RETRY_BASE_MS";
    pub const MAX_TOKENS: &str = "ERRAND_MAX_TOKENS";
    pub const MAX_COST_USD: &str = "ERRAND_MAX_COST_USD";
    pub const PLANNER: &str = "ERRAND_PLANNER";
    pub const VALIDATE: &str = "ERRAND_VALIDATE";
    pub const STRUCTURED: &str = "ERRAND_STRUCTURED";
    pub const STREAM: &str = "ERRAND_STREAM";
    pub const SECRETS_STORE: &str = "ERRAND_SECRETS_STORE";
}

/// `auto`, `on` or `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Switch {
    /// On where it is known to work.
    #[default]
    Auto,
    On,
    Off,
}

impl Switch {
    /// Reads `auto`, `on`/`true`/`yes`/`1`, `off`/`false`/`no`/`0`.
    pub fn parse(s: &str) -> Option<Switch> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(Switch::Auto),
            "on" | "true" | "yes" | "1" => Some(Switch::On),
            "off" | "false" | "no" | "0" => Some(Switch::Off),
            _ => None,
        }
    }

    /// The name used in settings.
    pub fn name(self) -> &'static str {
        match self {
            Switch::Auto => "auto",
            Switch::On => "on",
            Switch::Off => "off",
        }
    }
}

/// Where secrets are kept (`secrets_store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecretsStore {
    /// The OS keychain when it answers, else the owner-only file.
    #[default]
    Auto,
    /// Only the OS keychain: an error when it is not there.
    Keychain,
    /// Only the owner-only file.
    File,
}

impl SecretsStore {
    /// Reads `auto`, `keychain`, `file`.
    pub fn parse(s: &str) -> Option<SecretsStore> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(SecretsStore::Auto),
            "keychain" | "keyring" | "os" => Some(SecretsStore::Keychain),
            "file" => Some(SecretsStore::File),
            _ => None,
        }
    }

    /// The name used in settings.
    pub fn name(self) -> &'static str {
        match self {
            SecretsStore::Auto => "auto",
            SecretsStore::Keychain => "keychain",
            SecretsStore::File => "file",
        }
    }
}

/// Which wire format the model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama, vLLM,
    /// LM Studio, DeepSeek, Zhipu GLM…).
    #[default]
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

impl ProviderKind {
    /// Reads `openai`, `anthropic`, `gemini` (and a few aliases).
    pub fn parse(s: &str) -> Option<ProviderKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" | "openai_compatible" | "ollama" | "openrouter"
            | "vllm" | "lmstudio" | "lm-studio" | "deepseek" | "zhipu" | "glm" => {
                Some(ProviderKind::OpenAi)
            }
            "anthropic" | "claude" => Some(ProviderKind::Anthropic),
            "gemini" | "google" => Some(ProviderKind::Gemini),
            _ => None,
        }
    }

    /// The name used in settings.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }

    /// The server used when `base_url` is not set.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => DEFAULT_BASE_URL,
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta",
        }
    }

    /// The vendor's own environment variable for its key, read when no
    /// Errand key is set.
    pub fn vendor_key_var(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => None,
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::Gemini => Some("GEMINI_API_KEY"),
        }
    }
}

/// What can be wrong with the settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{name} must be a positive whole number, not `{value}`")]
    BadNumber { name: String, value: String },
    #[error("{name} must be a number, not `{value}`")]
    BadDecimal { name: String, value: String },
    #[error("{name} must be true or false, not `{value}`")]
    BadFlag { name: String, value: String },
    #[error("unknown provider `{0}`: use openai, anthropic or gemini")]
    BadProvider(String),
    #[error("unknown answer dialect `{0}`: use json, glm or browsergym")]
    BadDialect(String),
    #[error("{name} must be one of {choices}, not `{value}`")]
    BadChoice { name: &'static str, value: String, choices: &'static str },
    #[error("no home folder found: set ERRAND_CONFIG_DIR and ERRAND_DATA_DIR")]
    NoHome,
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("`{key}` in {path} is not a table ([{key}]): fix the file by hand")]
    NotATable { path: PathBuf, key: String },
    /// A value from the file, the environment or a flag that breaks a rule
    /// of [`validate`]; `origin` names where it came from.
    #[error("{origin} {rule}")]
    Invalid { origin: String, rule: String },
}

/// The file's shape.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub agent: AgentSection,
    #[serde(default)]
    pub sites: SitesSection,
}

/// `[model]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub timeout_secs: Option<u64>,
    pub provider: Option<String>,
    pub max_retries: Option<u32>,
    /// The answer's JSON Schema sent to the provider: `auto`, `on`, `off`.
    pub structured: Option<String>,
    /// Stream OpenAI-compatible answers (server-sent events).
    pub stream: Option<bool>,
}

/// `[agent]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    pub max_steps: Option<u32>,
    pub dialect: Option<String>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub planner: Option<bool>,
    pub validate: Option<bool>,
    /// Show the model a marked screenshot each step.
    pub vision: Option<bool>,
    /// Draw the numbered marks on the page.
    pub marks: Option<bool>,
    /// Where secrets are kept: `auto`, `keychain`, `file`.
    pub secrets_store: Option<String>,
}

/// `[sites]`: where Errand may go.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitesSection {
    /// When not empty, the only sites Errand may open or act on.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Sites Errand never opens or acts on.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Sites where every action that changes something waits for approval.
    #[serde(default)]
    pub ask_first: Vec<String>,
}

/// Values given on the command line; each wins over file and environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub max_steps: Option<u32>,
    pub timeout_secs: Option<u64>,
    pub provider: Option<String>,
}

/// Where one setting came from, for `errand doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Default,
    File,
    Env,
    Flag,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::Default => "default",
            Source::File => "config file",
            Source::Env => "environment",
            Source::Flag => "command line",
        })
    }
}

/// The effective settings.
#[derive(Clone)]
pub struct Settings {
    /// The OpenAI-compatible endpoint, without a trailing `/`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub max_steps: u32,
    /// The wire format.
    pub provider: ProviderKind,
    /// How answers are written; `None`: chosen from the model's name.
    pub dialect: Option<Dialect>,
    /// Retries after HTTP 429 / 5xx.
    pub max_retries: u32,
    /// The first backoff delay (doubled each retry) when the server gives no
    /// `Retry-After`.
    pub retry_base: Duration,
    /// The task ends when its model calls used more tokens than this.
    pub max_tokens: Option<u64>,
    /// The task ends when its model calls cost more than this (US dollars).
    pub max_cost_usd: Option<f64>,
    /// Whether the planner runs (at the start, every few steps, on stalls).
    pub planner: bool,
    /// Whether `done` is checked by a validation call first.
    pub validate: bool,
    /// Whether the model is shown a marked screenshot each step.
    pub vision: bool,
    /// Whether the numbered marks are drawn on the page.
    pub marks: bool,
    /// Whether the answer's JSON Schema goes to the provider (`auto`: where
    /// known to work, see [`crate::llm::structured_known`]).
    pub structured: Switch,
    /// Whether OpenAI-compatible answers are streamed.
    pub stream: bool,
    /// Where secrets are kept.
    pub secrets_store: SecretsStore,
    /// Where Errand may go (`[sites]`).
    pub sites: SitesSection,
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
    /// Whether `config.toml` exists.
    pub config_file_found: bool,
    /// Where `base_url`, `model` and `api_key` came from.
    pub base_url_source: Source,
    pub model_source: Source,
    pub api_key_source: Source,
    /// The command-line flags these settings were loaded with, kept so that
    /// [`Settings::reload`] applies them again after the file changed.
    pub flags: Overrides,
    /// The settings the environment or the flags fix, by their names in the
    /// side panel's `SettingsView` (`model`, `max_steps`…; `api_key` for the
    /// key): a value saved in the file does not change them.
    pub locked: Vec<&'static str>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_deref().map(mask_key))
            .field("timeout", &self.timeout)
            .field("max_steps", &self.max_steps)
            .field("config_dir", &self.config_dir)
            .field("data_dir", &self.data_dir)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn resolve(file: &str, env: &[(&str, &str)], flags: &Overrides) -> Settings {
        let file: FileConfig = toml::from_str(file).unwrap();
        Settings::resolve(file, &env_of(env), flags, "/c".into(), "/d".into()).unwrap()
    }

    #[test]
    fn answer_and_secret_settings_and_the_planner_on_by_default() {
        let s = resolve("", &[], &Overrides::default());
        assert!(s.planner, "the planner is on unless turned off");
        assert_eq!(
            (s.structured, s.stream, s.secrets_store),
            (Switch::Auto, true, SecretsStore::Auto)
        );
        let s = resolve(
            "[model]\nprovider = \"anthropic\"\nstructured = \"off\"\n[agent]\nplanner = false\nsecrets_store = \"file\"\n",
            &[],
            &Overrides::default(),
        );
        assert!(!s.planner && !s.stream, "streaming defaults to on for openai only");
        assert_eq!((s.structured, s.secrets_store), (Switch::Off, SecretsStore::File));
        let s = resolve(
            "[model]\nstream = false\n",
            &[
                ("ERRAND_STRUCTURED", "on"),
                ("ERRAND_STREAM", "yes"),
                ("ERRAND_SECRETS_STORE", "keychain"),
                ("ERRAND_PLANNER", "0"),
            ],
            &Overrides::default(),
        );
        assert!(s.stream && !s.planner);
        assert_eq!((s.structured, s.secrets_store), (Switch::On, SecretsStore::Keychain));
        let env = env_of(&[("ERRAND_STRUCTURED", "maybe")]);
        let e = Settings::resolve(
            Default::default(),
            &env,
            &Overrides::default(),
            "/c".into(),
            "/d".into(),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "structured must be one of auto, on, off, not `maybe`");
        let file: Result<FileConfig, _> = toml::from_str("[agent]\nsecrets_store = \"vault\"\n");
        let e = Settings::resolve(
            file.unwrap(),
            &|_| None,
            &Overrides::default(),
            "/c".into(),
            "/d".into(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("auto, keychain, file"), "{e}");
    }

    #[test]
    fn defaults_to_a_local_ollama() {
        let s = resolve("", &[], &Overrides::default());
        assert_eq!(s.base_url, DEFAULT_BASE_URL);
        assert_eq!(s.model, DEFAULT_MODEL);
        assert_eq!(s.api_key, None);
        assert_eq!(s.max_steps, 25);
        assert_eq!(s.timeout, Duration::from_secs(120));
        assert!(s.is_default_model_server());
    }

    #[test]
    fn flags_beat_environment_beat_file() {
        let file = r#"
            [model]
            base_url = "http://file/v1/"
            model = "file-model"
            api_key = "file-key"
            timeout_secs = 30
            [agent]
            max_steps = 7
        "#;
        let s = resolve(file, &[], &Overrides::default());
        assert_eq!(
            (s.base_url.as_str(), s.model.as_str(), s.api_key.as_deref(), s.max_steps),
            ("http://file/v1", "file-model", Some("file-key"), 7)
        );
        assert_eq!(s.timeout, Duration::from_secs(30));
        assert_eq!(s.model_source, Source::File);

        let env = [
            ("ERRAND_BASE_URL", "http://env/v1"),
            ("ERRAND_MODEL", "env-model"),
            ("ERRAND_MAX_STEPS", "9"),
        ];
        let s = resolve(file, &env, &Overrides::default());
        assert_eq!(
            (s.base_url.as_str(), s.model.as_str(), s.max_steps),
            ("http://env/v1", "env-model", 9)
        );
        assert_eq!(s.api_key.as_deref(), Some("file-key"));
        assert_eq!(s.base_url_source, Source::Env);

        let flags = Overrides {
            model: Some("flag-model".into()),
            max_steps: Some(3),
            api_key: Some("flag-key".into()),
            ..Default::default()
        };
        let s = resolve(file, &env, &flags);
        assert_eq!(
            (s.base_url.as_str(), s.model.as_str(), s.max_steps),
            ("http://env/v1", "flag-model", 3)
        );
        assert_eq!(s.api_key.as_deref(), Some("flag-key"));
        assert_eq!(s.model_source, Source::Flag);
    }

    #[test]
    fn rejects_bad_numbers_and_unknown_keys() {
        let err = Settings::resolve(
            FileConfig::default(),
            &env_of(&[("ERRAND_MAX_STEPS", "lots")]),
            &Overrides::default(),
            "/c".into(),
            "/d".into(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("ERRAND_MAX_STEPS"), "{err}");
        assert!(toml::from_str::<FileConfig>("[model]\nbase_ur = 'x'").is_err());
    }

    #[test]
    fn reads_the_file_from_the_config_dir() {
        let dir = tempfile::tempdir().unwrap();
        let (c, d) = (dir.path().join("c"), dir.path().join("d"));
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(c.join(CONFIG_FILE), "[model]\nmodel = 'qwen'\n").unwrap();
        let env = env_of(&[
            ("ERRAND_CONFIG_DIR", c.to_str().unwrap()),
            ("ERRAND_DATA_DIR", d.to_str().unwrap()),
        ]);
        let s = Settings::load_with(&env, &Overrides::default()).unwrap();
        assert_eq!(s.model, "qwen");
        assert!(s.config_file_found);
        assert_eq!(s.data_dir, d);

        std::fs::write(c.join(CONFIG_FILE), "[model\n").unwrap();
        let err = Settings::load_with(&env, &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("config.toml"), "{err}");
    }

    #[test]
    fn never_shows_the_key() {
        let s =
            resolve("[model]\napi_key = 'sk-secret-0123456789abcd'", &[], &Overrides::default());
        let shown = format!("{s:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("sk-…abcd"), "{shown}");
        assert_eq!(mask_key("short"), "****");
    }

    const USERS_FILE: &str = r#"# My Errand settings.

[model]
# the server at work
base_url = 'http://file/v1/'   # keep this comment
model = "old"                  # which model
timeout_secs = 30

[agent]
dialect = "json"   # answers in JSON
max_tokens = 1000

# where Errand may go
[sites]
deny = ["ads.example"]  # never
"#;

    #[test]
    fn edits_keep_comments_order_and_other_keys() {
        let edits = [
            Edit::set("model", "model", "new-model"),
            Edit::remove("model", "base_url"),
            Edit::set("agent", "vision", true),
            Edit::set("agent", "max_cost_usd", 1.5),
            Edit::remove("agent", "max_tokens"),
            Edit::list("sites", "deny", &["ads.example".into(), "*.track.example".into()]),
            Edit::list("sites", "allow", &[]),
        ];
        let out = apply_edits(USERS_FILE, &edits, Path::new("config.toml")).unwrap();
        let expected = r#"# My Errand settings.

[model]
# the server at work
model = "new-model"                  # which model
timeout_secs = 30

[agent]
dialect = "json"   # answers in JSON
vision = true
max_cost_usd = 1.5

# where Errand may go
[sites]
deny = ["ads.example", "*.track.example"]  # never
"#;
        assert_eq!(out, expected);
        // A section the file lacks is added at its end; an empty list
        // replaces a list the file has.
        let out = apply_edits(
            &out,
            &[Edit::set("newsection", "k", 1), Edit::list("sites", "deny", &[])],
            Path::new("config.toml"),
        )
        .unwrap();
        assert!(out.contains("deny = []  # never\n"), "{out}");
        assert!(out.ends_with("\n[newsection]\nk = 1\n"), "{out}");
        let err = apply_edits("model = 3\n", &edits, Path::new("/c/config.toml")).unwrap_err();
        assert!(err.to_string().contains("/c/config.toml"), "{err}");
    }

    #[test]
    fn a_removed_keys_comment_stays() {
        let text = "[model]\nmodel = \"m\"\n# my key, from the vault\napi_key = \"sk-x\"\n\n\
                    [agent]\nmax_steps = 5\n# no more than this\nmax_cost_usd = 2.0\n";
        let edits = [Edit::remove("model", "api_key"), Edit::remove("agent", "max_cost_usd")];
        let out = apply_edits(text, &edits, Path::new("config.toml")).unwrap();
        assert_eq!(
            out,
            "[model]\nmodel = \"m\"\n# my key, from the vault\n\n[agent]\nmax_steps = 5\n\
             # no more than this\n"
        );
        assert!(!out.contains("sk-x"));
    }

    fn folders() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (c, d) = (dir.path().join("config"), dir.path().join("data"));
        (dir, c, d)
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn saving_writes_an_owner_only_file_atomically_and_reloads() {
        let (_dir, c, d) = folders();
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(c.join(CONFIG_FILE), USERS_FILE).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let loose = std::fs::Permissions::from_mode(0o644);
            std::fs::set_permissions(c.join(CONFIG_FILE), loose).unwrap();
        }
        let s =
            Settings::load_from(&|_| None, &Overrides::default(), c.clone(), d.clone()).unwrap();
        let next = s
            .save_edits(
                &[
                    Edit::set("model", "model", "m2"),
                    Edit::set("model", "api_key", "sk-new-0123456789"),
                ],
                &|_| None,
            )
            .unwrap();
        assert_eq!(next.model, "m2");
        assert_eq!(next.api_key.as_deref(), Some("sk-new-0123456789"));
        assert_eq!(next.timeout, Duration::from_secs(30), "other keys still apply");
        assert!(next.config_file_found);
        let text = std::fs::read_to_string(c.join(CONFIG_FILE)).unwrap();
        assert!(text.starts_with("# My Errand settings.") && text.contains("# keep this comment"));
        #[cfg(unix)]
        assert_eq!(mode(&c.join(CONFIG_FILE)), 0o600);
        let left: Vec<_> = std::fs::read_dir(&c).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [std::ffi::OsString::from(CONFIG_FILE)], "no temporary file is left");
        // What was written is what a fresh load reads.
        let again = next.reload_with(&|_| None).unwrap();
        assert_eq!((again.model, again.api_key), (next.model, next.api_key));
    }

    #[test]
    fn saving_creates_the_file_and_its_folder() {
        let (_dir, c, d) = folders();
        let s = Settings::load_from(&|_| None, &Overrides::default(), c.clone(), d).unwrap();
        assert!(!s.config_file_found);
        let next = s.save_edits(&[Edit::set("agent", "marks", true)], &|_| None).unwrap();
        assert!(next.marks && !next.vision);
        let text = std::fs::read_to_string(c.join(CONFIG_FILE)).unwrap();
        assert!(text.starts_with("# Errand's settings"), "{text}");
        assert!(text.contains("[agent]\nmarks = true\n"), "{text}");
        #[cfg(unix)]
        assert_eq!(mode(&c.join(CONFIG_FILE)), 0o600);
    }

    #[test]
    fn settings_that_would_not_load_are_not_written() {
        let (_dir, c, d) = folders();
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(c.join(CONFIG_FILE), USERS_FILE).unwrap();
        let s = Settings::load_from(&|_| None, &Overrides::default(), c.clone(), d).unwrap();
        let bad_env = env_of(&[("ERRAND_MAX_STEPS", "lots")]);
        let err = s.save_edits(&[Edit::set("model", "model", "m2")], &bad_env).unwrap_err();
        assert!(err.to_string().contains("ERRAND_MAX_STEPS"), "{err}");
        let err = s.save_edits(&[Edit::set("model", "provider", "nope")], &|_| None).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        assert_eq!(std::fs::read_to_string(c.join(CONFIG_FILE)).unwrap(), USERS_FILE);
    }

    #[test]
    fn the_environment_and_flags_lock_what_they_set_and_a_reload_keeps_them() {
        let (_dir, c, d) = folders();
        let env = env_of(&[("ERRAND_MODEL", "env-model"), ("ERRAND_PLANNER", "1")]);
        let flags = Overrides {
            max_steps: Some(3),
            base_url: Some("http://flag/v1".into()),
            ..Default::default()
        };
        let s = Settings::load_from(&env, &flags, c.clone(), d).unwrap();
        assert_eq!(s.locked, ["model", "base_url", "max_steps", "planner"]);
        assert_eq!(s.flags, flags);
        let next = s
            .save_edits(
                &[
                    Edit::set("model", "model", "file-model"),
                    Edit::set("agent", "max_steps", 9),
                    Edit::set("agent", "validate", true),
                ],
                &env,
            )
            .unwrap();
        // Written, but the environment and the flags still win.
        assert_eq!(
            (next.model.as_str(), next.max_steps, next.base_url.as_str()),
            ("env-model", 3, "http://flag/v1")
        );
        assert!(next.validate && next.planner);
        assert_eq!(next.locked, s.locked);
        let text = std::fs::read_to_string(c.join(CONFIG_FILE)).unwrap();
        assert!(
            text.contains("model = \"file-model\"") && text.contains("max_steps = 9"),
            "{text}"
        );
        // Without the environment the file's values take effect; the flags stay.
        let later = next.reload_with(&|_| None).unwrap();
        assert_eq!((later.model.as_str(), later.max_steps), ("file-model", 3));
        assert_eq!(later.locked, ["base_url", "max_steps"]);
        // An unset (empty) variable locks nothing; a vendor key is not a lock.
        let s = resolve(
            "",
            &[("ERRAND_MODEL", " "), ("ANTHROPIC_API_KEY", "k")],
            &Overrides::default(),
        );
        assert!(s.locked.is_empty(), "{:?}", s.locked);
    }

    #[test]
    fn site_entries_are_normalised_or_refused_with_a_reason() {
        for (entry, want) in [
            ("Example.COM", "example.com"),
            (" shop.example/ ", "shop.example"),
            ("*.Bank.example", "*.bank.example"),
            ("localhost", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("https://X.example/", "https://x.example"),
            ("https://x.example:443", "https://x.example"),
            ("http://localhost:8080", "http://localhost:8080"),
            ("http://[::1]:8080", "http://[::1]:8080"),
            // Every spelling of a host is one (issue 37).
            ("LOCALHOST.", "localhost"),
            ("*.Example.COM.", "*.example.com"),
            ("Bücher.Example.", "xn--bcher-kva.example"),
            ("127.0.0.1.", "127.0.0.1"),
            ("[0:0:0:0:0:0:0:1]", "[::1]"),
            ("[::ffff:127.0.0.1]", "127.0.0.1"),
            ("https://LOCALHOST.:8443/", "https://localhost:8443"),
            ("http://[::ffff:7f00:1]:8080", "http://127.0.0.1:8080"),
        ] {
            assert_eq!(normalize_site(entry).as_deref(), Ok(want), "{entry}");
        }
        for (entry, why) in [
            ("", "empty"),
            ("exa mple.com", "not a host name"),
            ("junk!!", "not a host name"),
            ("-bad.example", "not a host name"),
            ("a..b", "not a host name"),
            ("*", "`*` may only begin"),
            ("*.*.example", "`*` may only begin"),
            ("shop.*.example", "`*` may only begin"),
            ("example.com/path", "without a path"),
            ("localhost:8080", "no port"),
            ("*.127.0.0.1", "not an IP address"),
            ("*.[::1]", "not an IP address"),
            ("[::1]:8080", "no port"),
            ("123", "not a host name"),
            ("ftp://files.example", "only http and https"),
            ("https://x.example/admin", "without a path"),
            ("https://u:p@x.example", "user name"),
            ("https://", "not a web address"),
        ] {
            let got = normalize_site(entry).unwrap_err();
            assert!(got.contains(why), "{entry}: {got}");
        }
    }
}

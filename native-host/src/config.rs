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
//!
//! [agent]
//! max_steps = 25
//! dialect = "json"         # or "glm", "browsergym"; default: glm for GLM models
//! max_tokens = 500000      # the task ends when its calls used more
//! max_cost_usd = 1.50      # priced with prices.toml beside config.toml
//! planner = true           # plan mini-tasks at the start, every few steps, on stalls
//! validate = true          # check `done` with a validation call before answering
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::dialect::Dialect;

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
    #[error("no home folder found: set ERRAND_CONFIG_DIR and ERRAND_DATA_DIR")]
    NoHome,
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
#[derive(Debug, Clone, Default)]
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

impl Settings {
    /// Reads the file and the process environment, then applies `flags`.
    pub fn load(flags: &Overrides) -> Result<Settings, ConfigError> {
        Settings::load_with(&|name| std::env::var(name).ok(), flags)
    }

    /// Like [`Settings::load`] with the environment given as a function.
    pub fn load_with(
        env: &dyn Fn(&str) -> Option<String>,
        flags: &Overrides,
    ) -> Result<Settings, ConfigError> {
        let (config_dir, data_dir) = dirs(env)?;
        let path = config_dir.join(CONFIG_FILE);
        let file = read_file(&path)?;
        let found = file.is_some();
        let mut s = Settings::resolve(file.unwrap_or_default(), env, flags, config_dir, data_dir)?;
        s.config_file_found = found;
        Ok(s)
    }

    /// Pure precedence: defaults < file < environment < flags.
    pub fn resolve(
        file: FileConfig,
        env: &dyn Fn(&str) -> Option<String>,
        flags: &Overrides,
        config_dir: PathBuf,
        data_dir: PathBuf,
    ) -> Result<Settings, ConfigError> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let pick = |flag: &Option<String>, var: &str, file: &Option<String>| {
            if let Some(v) = flag {
                Some((v.clone(), Source::Flag))
            } else if let Some(v) = env(var) {
                Some((v, Source::Env))
            } else {
                file.clone().map(|v| (v, Source::File))
            }
        };
        let provider = match pick(&flags.provider, env::PROVIDER, &file.model.provider) {
            None => ProviderKind::OpenAi,
            Some((p, _)) => ProviderKind::parse(&p).ok_or(ConfigError::BadProvider(p))?,
        };
        let dialect = match pick(&None, env::DIALECT, &file.agent.dialect) {
            None => None,
            Some((d, _)) if d.trim().eq_ignore_ascii_case("auto") => None,
            Some((d, _)) => Some(Dialect::parse(&d).ok_or(ConfigError::BadDialect(d))?),
        };
        let (base_url, base_url_source) =
            pick(&flags.base_url, env::BASE_URL, &file.model.base_url)
                .unwrap_or((provider.default_base_url().to_owned(), Source::Default));
        let (model, model_source) = pick(&flags.model, env::MODEL, &file.model.model)
            .unwrap_or((DEFAULT_MODEL.to_owned(), Source::Default));
        let (api_key, api_key_source) =
            match pick(&flags.api_key, env::API_KEY, &file.model.api_key) {
                Some((k, s)) if !k.trim().is_empty() => (Some(k.trim().to_owned()), s),
                _ => match provider.vendor_key_var().and_then(&env) {
                    Some(k) => (Some(k.trim().to_owned()), Source::Env),
                    None => (None, Source::Default),
                },
            };
        let number = |name: &str| -> Result<Option<u64>, ConfigError> {
            match env(name) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok(Some(n)),
                    _ => Err(ConfigError::BadNumber { name: name.to_owned(), value: v }),
                },
            }
        };
        let max_steps = flags
            .max_steps
            .or(number(env::MAX_STEPS)?.map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
            .or(file.agent.max_steps)
            .unwrap_or(DEFAULT_MAX_STEPS)
            .max(1);
        let timeout_secs = flags
            .timeout_secs
            .or(number(env::TIMEOUT_SECS)?)
            .or(file.model.timeout_secs)
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .max(1);
        let decimal = |name: &str| -> Result<Option<f64>, ConfigError> {
            match env(name) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<f64>() {
                    Ok(n) if n >= 0.0 && n.is_finite() => Ok(Some(n)),
                    _ => Err(ConfigError::BadDecimal { name: name.to_owned(), value: v }),
                },
            }
        };
        let max_retries = match env(env::MAX_RETRIES) {
            None => file.model.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            Some(v) => v.trim().parse::<u32>().map_err(|_| ConfigError::BadNumber {
                name: env::MAX_RETRIES.to_owned(),
                value: v,
            })?,
        };
        let retry_base =
            Duration::from_millis(number(env::RETRY_BASE_MS)?.unwrap_or(DEFAULT_RETRY_BASE_MS));
        let max_tokens = number(env::MAX_TOKENS)?.or(file.agent.max_tokens);
        let max_cost_usd = decimal(env::MAX_COST_USD)?.or(file.agent.max_cost_usd);
        let flag = |name: &str, file: Option<bool>| -> Result<bool, ConfigError> {
            match env(name) {
                None => Ok(file.unwrap_or(false)),
                Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => Ok(true),
                    "0" | "false" | "no" | "off" => Ok(false),
                    _ => Err(ConfigError::BadFlag { name: name.to_owned(), value: v }),
                },
            }
        };
        let planner = flag(env::PLANNER, file.agent.planner)?;
        let validate = flag(env::VALIDATE, file.agent.validate)?;
        let vision = file.agent.vision.unwrap_or(false);
        let marks = file.agent.marks.unwrap_or(vision);
        Ok(Settings {
            planner,
            validate,
            vision,
            marks,
            sites: file.sites,
            provider,
            dialect,
            max_retries,
            retry_base,
            max_tokens,
            max_cost_usd,
            base_url: base_url.trim().trim_end_matches('/').to_owned(),
            model: model.trim().to_owned(),
            api_key,
            timeout: Duration::from_secs(timeout_secs),
            max_steps,
            config_dir,
            data_dir,
            config_file_found: false,
            base_url_source,
            model_source,
            api_key_source,
        })
    }

    /// `<config dir>/config.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join(CONFIG_FILE)
    }

    /// Whether the user configured a model at all (a file, a key, a server
    /// or a model of their own), rather than the default local Ollama.
    pub fn is_configured(&self) -> bool {
        self.config_file_found
            || self.api_key.is_some()
            || self.base_url_source != Source::Default
            || self.model_source != Source::Default
    }

    /// Whether the model server is the default local Ollama.
    pub fn is_default_model_server(&self) -> bool {
        self.base_url_source == Source::Default && self.provider == ProviderKind::OpenAi
    }

    /// How to point Errand at another model, for error messages.
    pub fn how_to_configure(&self) -> String {
        format!(
            "set base_url, model and api_key under [model] in {}, or the environment variables \
             {}, {}, {}, or the flags --base-url, --model, --api-key",
            self.config_file().display(),
            env::BASE_URL,
            env::MODEL,
            env::API_KEY
        )
    }
}

/// The config and data folders: `$ERRAND_CONFIG_DIR` / `$ERRAND_DATA_DIR`,
/// else the platform's folders for "errand".
pub fn dirs(env: &dyn Fn(&str) -> Option<String>) -> Result<(PathBuf, PathBuf), ConfigError> {
    let given = |name| env(name).filter(|v: &String| !v.is_empty()).map(PathBuf::from);
    let (config, data) = (given(env::CONFIG_DIR), given(env::DATA_DIR));
    if let (Some(c), Some(d)) = (&config, &data) {
        return Ok((c.clone(), d.clone()));
    }
    let project = directories::ProjectDirs::from("", "", "errand").ok_or(ConfigError::NoHome)?;
    Ok((
        config.unwrap_or_else(|| project.config_dir().to_owned()),
        data.unwrap_or_else(|| project.data_dir().to_owned()),
    ))
}

fn read_file(path: &Path) -> Result<Option<FileConfig>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read { path: path.to_owned(), source });
        }
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::Parse { path: path.to_owned(), message: e.to_string() })
}

/// Shows enough of a key to recognise it: `sk-…f00d`.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() < 12 {
        return "****".to_owned();
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}…{tail}")
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
}

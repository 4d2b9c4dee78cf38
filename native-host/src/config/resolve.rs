//! Reading the settings: the file, then the environment, then the flags;
//! where the config and data folders are.

use super::*;

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
        Settings::load_from(env, flags, config_dir, data_dir)
    }

    /// Reads `<config_dir>/config.toml` and resolves it with `env` and
    /// `flags`.
    pub fn load_from(
        env: &dyn Fn(&str) -> Option<String>,
        flags: &Overrides,
        config_dir: PathBuf,
        data_dir: PathBuf,
    ) -> Result<Settings, ConfigError> {
        let path = config_dir.join(CONFIG_FILE);
        let file = read_file(&path)?;
        let found = file.is_some();
        let mut s = Settings::resolve(file.unwrap_or_default(), env, flags, config_dir, data_dir)?;
        s.config_file_found = found;
        Ok(s)
    }

    /// The settings as they are now: the file read again, with the process
    /// environment and the flags these settings were loaded with, in the
    /// same folders.
    pub fn reload(&self) -> Result<Settings, ConfigError> {
        self.reload_with(&|name| std::env::var(name).ok())
    }

    /// Like [`Settings::reload`] with the environment given as a function.
    pub fn reload_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        Settings::load_from(env, &self.flags, self.config_dir.clone(), self.data_dir.clone())
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
        // Where a value came from, for a message naming it.
        let file_path = config_dir.join(CONFIG_FILE);
        let in_file = |key: &str| format!("`{key}` in {}", file_path.display());
        let origin = |source: Source, flag: &str, var: &str, key: &str| match source {
            Source::Flag => format!("--{flag}"),
            Source::Env => var.to_owned(),
            _ => in_file(key),
        };
        let (base_url, base_url_source) =
            match pick(&flags.base_url, env::BASE_URL, &file.model.base_url) {
                Some((b, source)) => match validate::base_url(&b) {
                    Ok(Some(url)) => (url, source),
                    Ok(None) => (provider.default_base_url().to_owned(), Source::Default),
                    Err(rule) => {
                        let from = origin(source, "base-url", env::BASE_URL, "[model] base_url");
                        return Err(validate::invalid(
                            from,
                            format!("`{}` {rule}", validate::shown(&b)),
                        ));
                    }
                },
                None => (provider.default_base_url().to_owned(), Source::Default),
            };
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
        // Every value given is checked, also one a higher source overrides.
        if let Some(n) = file.agent.max_steps {
            validate::max_steps(u64::from(n))
                .map_err(|rule| validate::invalid(in_file("[agent] max_steps"), rule))?;
        }
        if let Some(b) = &file.model.base_url {
            validate::base_url(b).map_err(|rule| {
                validate::invalid(
                    in_file("[model] base_url"),
                    format!("`{}` {rule}", validate::shown(b)),
                )
            })?;
        }
        let max_steps = match (flags.max_steps, number(env::MAX_STEPS)?, file.agent.max_steps) {
            (Some(n), _, _) => (u64::from(n), "--max-steps".to_owned()),
            (None, Some(n), _) => (n, env::MAX_STEPS.to_owned()),
            (None, None, Some(n)) => (u64::from(n), in_file("[agent] max_steps")),
            (None, None, None) => (u64::from(DEFAULT_MAX_STEPS), String::new()),
        };
        let max_steps = validate::max_steps(max_steps.0)
            .map_err(|rule| validate::invalid(max_steps.1, rule))?;
        let mut sites = file.sites;
        for (key, list) in [
            ("allow", &mut sites.allow),
            ("deny", &mut sites.deny),
            ("ask_first", &mut sites.ask_first),
        ] {
            *list = validate::sites(list).map_err(|bad| {
                validate::invalid(in_file(&format!("[sites] {key}")), bad.join("; "))
            })?;
        }
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
        let flag_or =
            |name: &str, file: Option<bool>, default: bool| -> Result<bool, ConfigError> {
                match env(name) {
                    None => Ok(file.unwrap_or(default)),
                    Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                        "1" | "true" | "yes" | "on" => Ok(true),
                        "0" | "false" | "no" | "off" => Ok(false),
                        _ => Err(ConfigError::BadFlag { name: name.to_owned(), value: v }),
                    },
                }
            };
        let flag = |name: &str, file: Option<bool>| flag_or(name, file, false);
        // The planner is on unless turned off.
        let planner = flag_or(env::PLANNER, file.agent.planner, true)?;
        let validate = flag(env::VALIDATE, file.agent.validate)?;
        let structured = match pick(&None, env::STRUCTURED, &file.model.structured) {
            None => Switch::Auto,
            Some((v, _)) => Switch::parse(&v).ok_or(ConfigError::BadChoice {
                name: "structured",
                value: v,
                choices: "auto, on, off",
            })?,
        };
        let stream = flag_or(env::STREAM, file.model.stream, provider == ProviderKind::OpenAi)?;
        let secrets_store = match pick(&None, env::SECRETS_STORE, &file.agent.secrets_store) {
            None => SecretsStore::Auto,
            Some((v, _)) => SecretsStore::parse(&v).ok_or(ConfigError::BadChoice {
                name: "secrets_store",
                value: v,
                choices: "auto, keychain, file",
            })?,
        };
        let vision = file.agent.vision.unwrap_or(false);
        let marks = file.agent.marks.unwrap_or(vision);
        let locked = [
            ("provider", flags.provider.is_some(), env::PROVIDER),
            ("model", flags.model.is_some(), env::MODEL),
            ("base_url", flags.base_url.is_some(), env::BASE_URL),
            ("api_key", flags.api_key.is_some(), env::API_KEY),
            ("max_steps", flags.max_steps.is_some(), env::MAX_STEPS),
            ("max_tokens", false, env::MAX_TOKENS),
            ("max_cost_usd", false, env::MAX_COST_USD),
            ("planner", false, env::PLANNER),
            ("validate", false, env::VALIDATE),
        ]
        .into_iter()
        .filter(|(_, by_flag, var)| *by_flag || env(var).is_some())
        .map(|(name, _, _)| name)
        .collect();
        Ok(Settings {
            flags: flags.clone(),
            locked,
            planner,
            validate,
            vision,
            marks,
            structured,
            stream,
            secrets_store,
            sites,
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

pub(super) fn read_file(path: &Path) -> Result<Option<FileConfig>, ConfigError> {
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

pub(super) fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read { path: path.to_owned(), source }),
    }
}

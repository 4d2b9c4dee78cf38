//! The side panel's requests about what the host keeps: past tasks,
//! settings, the profile, and the connection check. Each request is
//! answered from the store and the host's files; none of it is kept in the
//! extension.
//!
//! - `list_tasks`, `get_task`: the history, from the store.
//! - `get_settings`, `save_settings`: the live settings as a
//!   [`SettingsView`] (the API key never leaves the host: only whether one
//!   is set and a masked hint); a save is checked, written into
//!   `config.toml` (comments and other keys kept, owner-only, atomically),
//!   and the host switches to the settings that follow from it.
//! - `get_profile`, `set_fact`, `set_secret`, `forget`: the profile
//!   ([`crate::memory::profile`], shared with `errand memory`); a secret's value is
//!   never in a reply.
//! - `test_connection`: the doctor's model check on the live settings.
//!
//! The work is synchronous (SQLite, small files), so it runs on the
//! blocking pool; the host's message loop stays free.

use std::sync::Mutex;

use errand_protocol::{
    ActionRecord, Body, Build, ErrorCode, GrantView, RecipeSummary, SettingsUpdate, SettingsView,
    StepReport, TaskDetail, TaskSummary,
};

use crate::config::{self, ConfigError, Edit, ProviderKind, Settings};
use crate::host::Host;
use crate::memory::profile::{self, ProfileError};
use crate::memory::recipe::Recipe;
use crate::memory::store::{StepRow, StoreError, TaskRow};

/// How many tasks `list_tasks` returns when it does not say.
pub const DEFAULT_LIST_LIMIT: u32 = 50;
/// The most tasks one `list_tasks` returns.
pub const MAX_LIST_LIMIT: u32 = 500;
/// The most steps a task may be given (`max_steps`; the rule is in `config/validate.rs`).
pub use crate::config::validate::MAX_STEPS_LIMIT;

/// Saves of the settings, one at a time in this process (read, edit,
/// write, switch).
static SAVING: Mutex<()> = Mutex::new(());

/// Why a panel request could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum PanelError {
    #[error("`{0}` is not a side-panel request")]
    NotAPanelRequest(String),
    #[error("there is no task `{0}` in the history")]
    NoTask(String),
    #[error("the settings were not saved: {0}")]
    InvalidSettings(InvalidSettings),
    #[error("the settings were not saved: {0}")]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the request failed inside the host: {0}")]
    Crashed(String),
    #[error(transparent)]
    Recipe(#[from] crate::memory::recipe::RecipeError),
}

impl PanelError {
    /// The protocol error code for the reply.
    pub fn code(&self) -> ErrorCode {
        match self {
            PanelError::NotAPanelRequest(_) => ErrorCode::NotAllowed,
            PanelError::NoTask(_) => ErrorCode::NoTask,
            PanelError::InvalidSettings(_) => ErrorCode::BadMessage,
            PanelError::Profile(e) if e.is_bad_request() => ErrorCode::BadMessage,
            PanelError::Recipe(_) => ErrorCode::BadMessage,
            PanelError::Config(_)
            | PanelError::Profile(_)
            | PanelError::Store(_)
            | PanelError::Crashed(_) => ErrorCode::Internal,
        }
    }
}

/// Every problem of a settings update, each naming its field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InvalidSettings(pub Vec<FieldProblem>);

/// One field of an update and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: &'static str,
    pub problem: String,
}

impl std::fmt::Display for InvalidSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> =
            self.0.iter().map(|p| format!("{}: {}", p.field, p.problem)).collect();
        f.write_str(&parts.join("; "))
    }
}

/// Answers one panel request.
pub async fn handle(host: &Host, body: Body) -> Result<Body, PanelError> {
    match body {
        Body::TestConnection {} => Ok(test_connection(&host.settings()).await),
        body => {
            let host = host.clone();
            tokio::task::spawn_blocking(move || handle_blocking(&host, body))
                .await
                .map_err(|e| PanelError::Crashed(e.to_string()))?
        }
    }
}

/// The requests answered from the store and the host's files.
fn handle_blocking(host: &Host, body: Body) -> Result<Body, PanelError> {
    let data_dir = || host.settings().data_dir.clone();
    let profile_reply = || -> Result<Body, PanelError> {
        Ok(Body::Profile(profile::view(host.store(), &data_dir())?))
    };
    match body {
        Body::ListTasks { query, limit } => list_tasks(host, query.as_deref(), limit),
        Body::GetTask { task_id } => get_task(host, &task_id),
        Body::GetSettings {} => Ok(Body::Settings { settings: view(&host.settings()) }),
        Body::SaveSettings { update } => {
            save_settings(host, &update, &|name| std::env::var(name).ok())
        }
        Body::GetProfile {} => profile_reply(),
        Body::SetFact { name, value } => {
            let name = profile::set_fact(host.store(), &data_dir(), &name, &value)?;
            tracing::info!(%name, "the side panel set a profile fact");
            profile_reply()
        }
        Body::SetSecret { name, value, origins, any_field } => {
            let store = host.settings().secrets_store;
            let dir = data_dir();
            let name =
                profile::set_secret(host.store(), &dir, store, &name, &value, &origins, any_field)?;
            tracing::info!(%name, "the side panel set a secret");
            profile_reply()
        }
        Body::Forget { name } => {
            profile::forget(host.store(), &data_dir(), &name)?;
            tracing::info!(name = %name.trim(), "the side panel forgot a profile entry");
            profile_reply()
        }
        Body::SaveRecipe { task_id, name } => {
            let recipe = Recipe::from_task(host.store(), task_id.trim(), name.as_deref())?;
            recipe.save(&data_dir())?;
            tracing::info!(name = %recipe.name, "the side panel saved a recipe");
            Ok(recipes(&data_dir()))
        }
        Body::ListRecipes {} => Ok(recipes(&data_dir())),
        Body::ListGrants {} => grants(host),
        Body::RevokeGrant { site, action_kind } => {
            let kind = action_kind.as_deref().map(str::trim).filter(|k| !k.is_empty());
            let n = host.store().revoke_grant(site.trim(), kind)?;
            tracing::info!(site = %site.trim(), ?kind, n, "the side panel revoked approvals");
            grants(host)
        }
        Body::AcceptRepairs { name } => {
            Recipe::accept_proposed(&data_dir(), &name)?;
            tracing::info!(%name, "the side panel accepted a recipe's repairs");
            Ok(recipes(&data_dir()))
        }
        other => Err(PanelError::NotAPanelRequest(crate::host::kind_of(&other))),
    }
}

// ---- Approvals given always on a site ----

fn grants(host: &Host) -> Result<Body, PanelError> {
    let grants = host
        .store()
        .grants()?
        .into_iter()
        .map(|(site, kind, since)| GrantView { site, kind, since })
        .collect();
    Ok(Body::Grants { grants })
}

// ---- Recipes ----

/// The recipes, with the repairs offered for each.
fn recipes(data_dir: &std::path::Path) -> Body {
    let recipes = Recipe::list(data_dir)
        .into_iter()
        .filter_map(|r| r.map_err(|e| tracing::warn!("{e}")).ok())
        .map(|r| {
            let repairs = match Recipe::proposed(data_dir, &r.name) {
                Some(Ok(p)) => p
                    .steps
                    .iter()
                    .zip(&r.steps)
                    .filter(|(new, old)| new != old)
                    .map(|(new, _)| new.intent.clone())
                    .collect(),
                _ => Vec::new(),
            };
            RecipeSummary {
                steps: u32::try_from(r.steps.len()).unwrap_or(u32::MAX),
                params: r.params.iter().map(|p| (p.name.clone(), p.recorded.clone())).collect(),
                name: r.name,
                task: r.task,
                start_url: r.start_url,
                from_task: r.from_task,
                repairs,
            }
        })
        .collect();
    Body::Recipes { recipes }
}

// ---- History ----

fn list_tasks(host: &Host, query: Option<&str>, limit: Option<u32>) -> Result<Body, PanelError> {
    let limit = limit.unwrap_or(DEFAULT_LIST_LIMIT).clamp(1, MAX_LIST_LIMIT);
    let query = query.map(str::trim).filter(|q| !q.is_empty());
    let tasks = host.store().search_tasks(query, limit)?.into_iter().map(summary).collect();
    Ok(Body::TaskList { tasks })
}

fn get_task(host: &Host, task_id: &str) -> Result<Body, PanelError> {
    let id = task_id.trim();
    let row = host.store().task(id)?.ok_or_else(|| PanelError::NoTask(id.to_owned()))?;
    let steps = step_reports(&host.store().steps(id)?);
    Ok(Body::TaskDetail(TaskDetail { task: summary(row), steps }))
}

/// A stored task as the history lists it.
pub fn summary(row: TaskRow) -> TaskSummary {
    TaskSummary {
        task_id: row.id,
        task: row.task,
        url: row.url,
        status: row.status,
        answer: row.answer,
        error: row.error,
        steps: row.steps,
        tokens: row.tokens_in.saturating_add(row.tokens_out),
        cost_usd: row.cost_usd,
        started_at: row.started_at,
        ended_at: row.ended_at,
    }
}

/// Stored steps as the step reports the panel showed live, with the
/// task's running totals. Screenshots are not stored, so none come back.
pub fn step_reports(rows: &[StepRow]) -> Vec<StepReport> {
    let mut total_tokens = 0u64;
    let mut total_cost: Option<f64> = None;
    rows.iter()
        .map(|row| {
            let tokens = row.tokens_in.unwrap_or(0).saturating_add(row.tokens_out.unwrap_or(0));
            total_tokens = total_tokens.saturating_add(tokens);
            if let Some(c) = row.cost_usd {
                total_cost = Some(total_cost.unwrap_or(0.0) + c);
            }
            StepReport {
                step: row.step,
                evaluation: row.evaluation.clone(),
                memory: row.memory.clone(),
                next_goal: row.next_goal.clone(),
                actions: actions_of(row),
                elements: row.elements.map_or(0, |n| n as usize),
                build: match row.build.as_deref() {
                    Some("wasm") => Some(Build::Wasm),
                    Some("js") => Some(Build::Js),
                    _ => None,
                },
                tokens,
                cost_usd: row.cost_usd,
                total_tokens,
                total_cost_usd: total_cost,
                screenshot: None,
            }
        })
        .collect()
}

/// A step's stored actions; records that no longer read (written by
/// another version) are left out, and logged.
fn actions_of(row: &StepRow) -> Vec<ActionRecord> {
    let values: Vec<serde_json::Value> = match serde_json::from_str(&row.actions_json) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(task_id = %row.task_id, step = row.step, "unreadable stored actions: {e}");
            return Vec::new();
        }
    };
    values
        .into_iter()
        .filter_map(|v| match serde_json::from_value(v) {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::warn!(task_id = %row.task_id, step = row.step, "an unreadable stored action: {e}");
                None
            }
        })
        .collect()
}

// ---- Settings ----

/// The settings as the panel shows them; the key only as a hint.
pub fn view(s: &Settings) -> SettingsView {
    SettingsView {
        provider: s.provider.name().to_owned(),
        model: s.model.clone(),
        base_url: s.base_url.clone(),
        api_key_set: s.api_key.is_some(),
        api_key_hint: s.api_key.as_deref().map(config::mask_key),
        vision: s.vision,
        marks: s.marks,
        max_steps: s.max_steps,
        max_tokens: s.max_tokens,
        max_cost_usd: s.max_cost_usd,
        allow_sites: s.sites.allow.clone(),
        deny_sites: s.sites.deny.clone(),
        ask_first_sites: s.sites.ask_first.clone(),
        planner: s.planner,
        validate: s.validate,
        locked: s.locked.iter().map(|f| (*f).to_owned()).collect(),
    }
}

/// Checks `update`, writes it into `config.toml`, and switches the host to
/// the settings that follow (file < `env` < the host's flags). A field the
/// environment or a flag fixes is written but stays as it was: the view's
/// `locked` names it.
pub fn save_settings(
    host: &Host,
    update: &SettingsUpdate,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Body, PanelError> {
    let edits = edits_for(update).map_err(PanelError::InvalidSettings)?;
    let _one = SAVING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let next = host.settings().save_edits(&edits, env)?;
    let changed: Vec<&str> = edits.iter().map(|e| e.key).collect();
    tracing::info!(?changed, model = %next.model, base_url = %next.base_url, "the side panel saved settings");
    let reply = view(&next);
    host.replace_settings(next);
    Ok(Body::Settings { settings: reply })
}

/// The file edits an update makes, or every problem in it.
pub fn edits_for(u: &SettingsUpdate) -> Result<Vec<Edit>, InvalidSettings> {
    let mut edits = Vec::new();
    let mut problems = Vec::new();
    let mut problem = |field, problem: String| problems.push(FieldProblem { field, problem });
    if let Some(p) = &u.provider {
        match provider(p) {
            Some(kind) => edits.push(Edit::set("model", "provider", kind.name())),
            None => problem(
                "provider",
                format!("`{}` is not a provider: use openai, anthropic or gemini", shown(p)),
            ),
        }
    }
    if let Some(m) = &u.model {
        let m = m.trim();
        if m.is_empty() {
            problem("model", "give the model's name".into());
        } else if m.chars().any(char::is_control) {
            problem("model", "the name holds a line break or another control character".into());
        } else {
            edits.push(Edit::set("model", "model", m));
        }
    }
    if let Some(b) = &u.base_url {
        match base_url(b) {
            Ok(None) => edits.push(Edit::remove("model", "base_url")),
            Ok(Some(url)) => edits.push(Edit::set("model", "base_url", url)),
            Err(why) => problem("base_url", format!("`{}` {why}", shown(b))),
        }
    }
    if let Some(k) = &u.api_key {
        // The key itself is never repeated in a message.
        let k = k.trim();
        if k.is_empty() {
            edits.push(Edit::remove("model", "api_key"));
        } else if k.chars().any(|c| c.is_control() || c.is_whitespace()) {
            problem("api_key", "the key holds spaces or control characters".into());
        } else {
            edits.push(Edit::set("model", "api_key", k));
        }
    }
    for (field, value) in
        [("vision", u.vision), ("marks", u.marks), ("planner", u.planner), ("validate", u.validate)]
    {
        if let Some(v) = value {
            edits.push(Edit::set("agent", field, v));
        }
    }
    if let Some(n) = u.max_steps {
        match crate::config::validate::max_steps(u64::from(n)) {
            Ok(n) => edits.push(Edit::set("agent", "max_steps", i64::from(n))),
            Err(rule) => problem("max_steps", rule),
        }
    }
    match u.max_tokens.map(i64::try_from) {
        None => {}
        Some(Ok(0)) => edits.push(Edit::remove("agent", "max_tokens")),
        Some(Ok(n)) => edits.push(Edit::set("agent", "max_tokens", n)),
        Some(Err(_)) => problem("max_tokens", "is too large".into()),
    }
    match u.max_cost_usd {
        None => {}
        Some(c) if !c.is_finite() || c < 0.0 => {
            problem("max_cost_usd", format!("must be 0 (no limit) or more, not {c}"))
        }
        Some(0.0) => edits.push(Edit::remove("agent", "max_cost_usd")),
        Some(c) => edits.push(Edit::set("agent", "max_cost_usd", c)),
    }
    for (field, key, list) in [
        ("allow_sites", "allow", &u.allow_sites),
        ("deny_sites", "deny", &u.deny_sites),
        ("ask_first_sites", "ask_first", &u.ask_first_sites),
    ] {
        let Some(list) = list else { continue };
        match sites(list) {
            Ok(entries) => edits.push(Edit::list("sites", key, &entries)),
            Err(bad) => problem(field, bad.join("; ")),
        }
    }
    if problems.is_empty() { Ok(edits) } else { Err(InvalidSettings(problems)) }
}

/// `openai`, `anthropic` or `gemini`, any case.
fn provider(p: &str) -> Option<ProviderKind> {
    let p = p.trim().to_ascii_lowercase();
    [ProviderKind::OpenAi, ProviderKind::Anthropic, ProviderKind::Gemini]
        .into_iter()
        .find(|k| k.name() == p)
}

use crate::config::validate::{base_url, shown, sites};

// ---- Connection ----

/// The doctor's model check on `settings`, as the panel shows it.
pub async fn test_connection(settings: &Settings) -> Body {
    let checks = crate::setup::doctor::model_checks(settings).await;
    Body::Connection { ok: !crate::setup::doctor::has_problems(&checks), checks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use errand_protocol::{Action, Outcome};

    use crate::config::{CONFIG_FILE, Overrides};
    use crate::memory::store::Store;

    const KEY: &str = "sk-live-0123456789abcdef";

    fn host_in(dir: &Path, env: &dyn Fn(&str) -> Option<String>, flags: &Overrides) -> Host {
        let settings =
            Settings::load_from(env, flags, dir.join("config"), dir.join("data")).unwrap();
        let store = Store::open_in(&dir.join("data")).unwrap();
        Host::new(settings, store)
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn saved(
        host: &Host,
        update: SettingsUpdate,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> SettingsView {
        match save_settings(host, &update, env).unwrap() {
            Body::Settings { settings } => settings,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_view_never_holds_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        std::fs::write(
            dir.path().join("config").join(CONFIG_FILE),
            format!("[model]\napi_key = \"{KEY}\"\n[sites]\ndeny = [\"ads.example\"]\n"),
        )
        .unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        let v = view(&host.settings());
        assert!(v.api_key_set);
        assert_eq!(v.api_key_hint.as_deref(), Some("sk-…cdef"));
        assert_eq!(v.deny_sites, ["ads.example"]);
        assert_eq!((v.provider.as_str(), v.max_steps), ("openai", 25));
        let wire =
            serde_json::to_string(&handle_blocking(&host, Body::GetSettings {}).unwrap()).unwrap();
        assert!(!wire.contains("0123456789"), "{wire}");
    }

    #[test]
    fn a_save_is_written_kept_and_used_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config").join(CONFIG_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            "# mine\n[model]\nmodel = \"old\"  # the old one\ntimeout_secs = 7\n",
        )
        .unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        let v = saved(
            &host,
            SettingsUpdate {
                provider: Some("Anthropic".into()),
                model: Some("  claude-x ".into()),
                base_url: Some("http://127.0.0.1:5/v1/".into()),
                api_key: Some(KEY.into()),
                vision: Some(true),
                max_steps: Some(40),
                max_tokens: Some(9000),
                max_cost_usd: Some(0.5),
                allow_sites: Some(vec!["Shop.example".into(), " ".into(), "shop.example/".into()]),
                ask_first_sites: Some(vec!["HTTPS://Bank.example/".into()]),
                planner: Some(true),
                ..Default::default()
            },
            &no_env,
        );
        assert_eq!(
            (v.provider.as_str(), v.model.as_str(), v.base_url.as_str(), v.max_steps),
            ("anthropic", "claude-x", "http://127.0.0.1:5/v1", 40)
        );
        assert!(v.vision && v.marks, "marks follow vision unless set");
        assert_eq!((v.max_tokens, v.max_cost_usd), (Some(9000), Some(0.5)));
        assert_eq!(v.allow_sites, ["shop.example"]);
        assert_eq!(v.ask_first_sites, ["https://bank.example"]);
        assert!(v.api_key_set && v.planner && v.locked.is_empty());
        // The host uses them now.
        let live = host.settings();
        assert_eq!((live.model.as_str(), live.api_key.as_deref()), ("claude-x", Some(KEY)));
        assert_eq!(live.timeout, std::time::Duration::from_secs(7));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.starts_with("# mine\n[model]\nmodel = \"claude-x\"  # the old one\n"),
            "{text}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // 0 removes a limit; an empty key or server goes back to none / the default.
        let v = saved(
            &host,
            SettingsUpdate {
                max_tokens: Some(0),
                max_cost_usd: Some(0.0),
                api_key: Some(String::new()),
                base_url: Some(" ".into()),
                ..Default::default()
            },
            &no_env,
        );
        assert_eq!((v.max_tokens, v.max_cost_usd, v.api_key_set), (None, None, false));
        assert_eq!(v.base_url, "https://api.anthropic.com/v1");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("max_tokens") && !text.contains(KEY), "{text}");
    }

    #[test]
    fn locked_settings_are_saved_but_do_not_take_effect() {
        let dir = tempfile::tempdir().unwrap();
        let env = |name: &str| match name {
            "ERRAND_MODEL" => Some("env-model".to_owned()),
            "ERRAND_API_KEY" => Some(KEY.to_owned()),
            _ => None,
        };
        let flags = Overrides { max_steps: Some(3), ..Default::default() };
        let host = host_in(dir.path(), &env, &flags);
        let v = saved(
            &host,
            SettingsUpdate {
                model: Some("file-model".into()),
                max_steps: Some(12),
                validate: Some(true),
                ..Default::default()
            },
            &env,
        );
        assert_eq!((v.model.as_str(), v.max_steps, v.validate), ("env-model", 3, true));
        assert_eq!(v.locked, ["model", "api_key", "max_steps"]);
        let text = std::fs::read_to_string(dir.path().join("config").join(CONFIG_FILE)).unwrap();
        assert!(text.contains("model = \"file-model\"") && text.contains("max_steps = 12"));
        // The flags were remembered: a later save keeps them.
        let v = saved(&host, SettingsUpdate::default(), &no_env);
        assert_eq!((v.model.as_str(), v.max_steps), ("file-model", 3));
        assert_eq!(v.locked, ["max_steps"]);
    }

    #[test]
    fn a_bad_update_names_every_bad_field_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        let err = save_settings(
            &host,
            &SettingsUpdate {
                provider: Some("openrouter".into()),
                model: Some("  ".into()),
                base_url: Some("ftp://x.example".into()),
                api_key: Some("sk one".into()),
                max_steps: Some(0),
                max_cost_usd: Some(-1.0),
                deny_sites: Some(vec!["good.example".into(), "exa mple".into(), "*.*".into()]),
                ..Default::default()
            },
            &no_env,
        )
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadMessage);
        let text = err.to_string();
        for part in [
            "provider: `openrouter` is not a provider",
            "model: give the model's name",
            "base_url: `ftp://x.example` must start with http",
            "api_key: the key holds spaces",
            "max_steps: must be between 1 and 500, not 0",
            "max_cost_usd: must be 0 (no limit) or more, not -1",
            "deny_sites: `exa mple`: it is not a host name",
            "`*.*`: `*` may only begin",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert!(!text.contains("good.example") && !text.contains("sk one"), "{text}");
        assert!(!dir.path().join("config").join(CONFIG_FILE).exists());
        assert_eq!(host.settings().max_steps, 25);
        for (update, field) in [
            (SettingsUpdate { max_steps: Some(501), ..Default::default() }, "max_steps"),
            (SettingsUpdate { base_url: Some("http://".into()), ..Default::default() }, "base_url"),
            (
                SettingsUpdate {
                    base_url: Some("https://x.example/v1?k=1".into()),
                    ..Default::default()
                },
                "base_url",
            ),
            (SettingsUpdate { max_tokens: Some(u64::MAX), ..Default::default() }, "max_tokens"),
        ] {
            let e = edits_for(&update).unwrap_err();
            assert_eq!(e.0[0].field, field, "{e}");
        }
    }

    #[test]
    fn history_lists_finds_and_opens_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        let store = host.store();
        store.create_task("t1", "Order a blue mug", Some("https://shop.example/"), None).unwrap();
        let click = ActionRecord {
            action: Action::Click {
                index: 3,
                button: Default::default(),
                modifiers: vec![],
                dialog: Default::default(),
            },
            ok: true,
            detail: "clicked".into(),
            ms: None,
            effect: None,
            verdict: None,
        };
        for (n, cost) in [(1, Some(0.25)), (2, None)] {
            store
                .record_step(&StepRow {
                    task_id: "t1".into(),
                    step: n,
                    next_goal: format!("goal {n}"),
                    actions_json: serde_json::to_string(std::slice::from_ref(&click)).unwrap(),
                    build: Some("js".into()),
                    elements: Some(4),
                    tokens_in: Some(100),
                    tokens_out: Some(10),
                    cost_usd: cost,
                    ..Default::default()
                })
                .unwrap();
        }
        store
            .finish_task("t1", &Outcome::Done { answer: "Ordered #7".into(), success: true })
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        store.create_task("t2", "Check the weather", None, None).unwrap();
        store.finish_task("t2", &Outcome::Failed { error: "no page".into() }).unwrap();

        let Body::TaskList { tasks } =
            handle_blocking(&host, Body::ListTasks { query: None, limit: None }).unwrap()
        else {
            panic!()
        };
        let ids: Vec<&str> = tasks.iter().map(|t| t.task_id.as_str()).collect();
        assert_eq!(ids, ["t2", "t1"]);
        let t1 = &tasks[1];
        assert_eq!((t1.status.as_str(), t1.steps, t1.tokens), ("done", 2, 220));
        assert_eq!(t1.answer.as_deref(), Some("Ordered #7"));
        assert!((t1.cost_usd - 0.25).abs() < 1e-9 && t1.ended_at.is_some());
        assert_eq!(tasks[0].error.as_deref(), Some("no page"));
        let list = |q: &str, limit| match handle_blocking(
            &host,
            Body::ListTasks { query: Some(q.into()), limit },
        )
        .unwrap()
        {
            Body::TaskList { tasks } => tasks.into_iter().map(|t| t.task_id).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(list("#7", None), ["t1"]);
        assert_eq!(list("  ", Some(1)), ["t2"]);
        assert_eq!(list("", Some(0)), ["t2"], "a limit of 0 means at least one");
        assert!(list("mug NEAR(\"x", None).is_empty());

        let Body::TaskDetail(detail) =
            handle_blocking(&host, Body::GetTask { task_id: "t1".into() }).unwrap()
        else {
            panic!()
        };
        assert_eq!(detail.task.task, "Order a blue mug");
        assert_eq!(detail.steps.len(), 2);
        let (a, b) = (&detail.steps[0], &detail.steps[1]);
        assert_eq!(a.actions, [click]);
        assert_eq!((a.tokens, a.total_tokens, b.total_tokens), (110, 110, 220));
        assert_eq!((a.cost_usd, b.cost_usd, b.total_cost_usd), (Some(0.25), None, Some(0.25)));
        assert_eq!((a.build, a.elements, a.next_goal.as_str()), (Some(Build::Js), 4, "goal 1"));

        let err = handle_blocking(&host, Body::GetTask { task_id: "nope".into() }).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NoTask);
        assert_eq!(err.to_string(), "there is no task `nope` in the history");
    }

    #[test]
    fn stored_actions_that_no_longer_read_are_left_out() {
        let row = |json: &str| StepRow { actions_json: json.into(), ..Default::default() };
        assert!(step_reports(&[row("not json")])[0].actions.is_empty());
        let mixed = r#"[{"action": {"warp": {}}, "ok": true, "detail": ""},
                        {"action": {"go_back": {}}, "ok": false, "detail": "no history"}]"#;
        let actions = &step_reports(&[row(mixed)])[0].actions;
        assert_eq!(actions.len(), 1);
        assert_eq!(actions[0].detail, "no history");
    }

    #[test]
    fn the_profile_replies_without_secret_values() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        let fact = Body::SetFact { name: "email".into(), value: "ada@example.com".into() };
        handle_blocking(&host, fact).unwrap();
        let secret = Body::SetSecret {
            name: "pw".into(),
            value: "hunter2-value".into(),
            origins: vec!["https://bank.example/login".into()],
            any_field: true,
        };
        let reply = handle_blocking(&host, secret).unwrap();
        let wire = serde_json::to_string(&reply).unwrap();
        assert!(
            wire.contains("\"origins\":[\"https://bank.example\"],\"any_field\":true"),
            "{wire}"
        );
        assert!(wire.contains("ada@example.com") && !wire.contains("hunter2"), "{wire}");
        let err = handle_blocking(&host, Body::Forget { name: "nobody".into() }).unwrap_err();
        assert_eq!(
            (err.code(), err.to_string()),
            (ErrorCode::BadMessage, "nothing named `nobody` in the profile".into())
        );
        let err = handle_blocking(
            &host,
            Body::SetSecret {
                name: "x".into(),
                value: "hunter2-value".into(),
                origins: vec![],
                any_field: false,
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadMessage);
        assert!(!err.to_string().contains("hunter2"));
        let Body::Profile(p) = handle_blocking(&host, Body::Forget { name: "pw".into() }).unwrap()
        else {
            panic!()
        };
        assert!(p.secrets.is_empty() && p.facts.len() == 1);
    }

    #[test]
    fn approvals_given_always_on_a_site_are_listed_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        host.store().add_grant("shop.example", "pay").unwrap();
        host.store().add_grant("shop.example", "delete").unwrap();
        host.store().add_grant("blog.example", "publish").unwrap();
        let listed = |body| match handle_blocking(&host, body).unwrap() {
            Body::Grants { grants } => {
                grants.into_iter().map(|g| format!("{} {}", g.site, g.kind)).collect::<Vec<_>>()
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(
            listed(Body::ListGrants {}),
            ["blog.example publish", "shop.example delete", "shop.example pay"]
        );
        let one =
            Body::RevokeGrant { site: " shop.example ".into(), action_kind: Some("pay".into()) };
        assert_eq!(listed(one), ["blog.example publish", "shop.example delete"]);
        let all = Body::RevokeGrant { site: "shop.example".into(), action_kind: None };
        assert_eq!(listed(all), ["blog.example publish"]);
        assert!(!host.store().has_grant("shop.example", "delete").unwrap());
    }

    #[test]
    fn other_requests_are_not_panel_requests() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_in(dir.path(), &no_env, &Overrides::default());
        let err = handle_blocking(&host, Body::GetStatus {}).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NotAllowed);
    }

    #[tokio::test]
    async fn the_connection_check_says_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let flags =
            Overrides { base_url: Some("http://127.0.0.1:9/v1".into()), ..Default::default() };
        let host = host_in(dir.path(), &no_env, &flags);
        let Body::Connection { ok, checks } = handle(&host, Body::TestConnection {}).await.unwrap()
        else {
            panic!()
        };
        assert!(!ok);
        assert_eq!(checks[0].subject, "model server");
        assert_eq!(checks[0].level, errand_protocol::CheckLevel::Problem);
    }
}

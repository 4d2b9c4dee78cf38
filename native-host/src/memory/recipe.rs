//! Recipes (issue 23): a finished task saved as a file of its steps, to
//! run again without the model (`agent::replay`).
//!
//! A recipe is a human-readable TOML file, `recipes/NAME.toml` in the data
//! folder, `version = 1`: the start URL, the task text and, per step, the
//! action (its kind and values), the intent (the model's `next_goal` for
//! that step), the element's locators (taken by the content script when it
//! acted: see `errand_protocol::locator`) and the check (the verified
//! effect: the value read back, the address after a navigation, what
//! appeared).
//!
//! Values the user gave in the task text become named parameters: a value
//! of a fill, a type or a select that appears verbatim in the task text is
//! written `{name}` in the action, the check and the task text, `name`
//! made from the field's label. Secrets stay placeholders
//! (`{{secret:NAME}}`): the record holds only those, never a value.

use std::path::{Path, PathBuf};

use errand_protocol::{Action, ActionRecord, Locator};
use serde::{Deserialize, Serialize};

use crate::memory::store::{Store, StoreError};

/// Words left out of a recipe's default name.
const SMALL_WORDS: &[&str] =
    &["a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "the", "to", "with"];

/// The recipe format this Errand reads and writes.
pub const VERSION: u32 = 1;

/// How the browser words an action whose page went away before it
/// answered (a form sent at once): a click or key doing that did its part.
pub const NAVIGATED: &str = "navigated or reloaded";

/// Whether `record` is a click or key whose page went away under it.
pub fn navigated_away(record: &ActionRecord) -> bool {
    !record.ok
        && record.detail.contains(NAVIGATED)
        && matches!(
            record.action,
            Action::Click { .. } | Action::DblClick { .. } | Action::Press { .. }
        )
}

/// Why a recipe could not be made, read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("there is no task {0}")]
    NoTask(String),
    #[error("task {0} has no action that worked to save")]
    Empty(String),
    #[error("there is no recipe named `{0}` (see `errand recipe list`)")]
    NotFound(String),
    #[error("`{0}` is not a recipe name: use letters, digits, `-` and `_`")]
    BadName(String),
    #[error(
        "{path}: recipe version {found} is not one this Errand reads (it reads version {VERSION}); \
         save the task again with this version"
    )]
    Version { path: String, found: u32 },
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("the recipe needs the parameter `{0}`: add --param {0}=VALUE")]
    MissingParam(String),
    #[error("the recipe has no parameter `{0}` (it has: {1})")]
    UnknownParam(String, String),
}

/// A saved task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    pub version: u32,
    pub name: String,
    /// The task, with the parameters' values written `{name}`.
    pub task: String,
    /// Where the recipe starts.
    pub start_url: String,
    /// The task it was saved from.
    #[serde(default)]
    pub from_task: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<Param>,
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// A named value of the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    /// The value the task was recorded with (the default).
    pub recorded: String,
}

/// One action of a recipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// What the step is for, in words (the model's `next_goal`).
    #[serde(default)]
    pub intent: String,
    /// The action; its element number is found again by `locator`.
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locator: Option<Locator>,
    #[serde(default)]
    pub check: Check,
}

/// What a step must produce.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The field's value read back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The page's address after the step (origin and path), when the step
    /// moved to another page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// What appeared (informative: pages word their messages with the
    /// values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub appeared: Vec<String>,
}

impl Check {
    /// Why `effect` does not pass this check, if it does not (`params`
    /// already put into `self`).
    /// With no effect (a page that went away before answering) only the
    /// address cannot be checked: a value to read back fails.
    pub fn failure(&self, effect: Option<&errand_protocol::Effect>) -> Option<String> {
        let Some(effect) = effect else {
            return self
                .value
                .as_ref()
                .map(|want| format!("nothing was read back, not \"{want}\""));
        };
        if let Some(want) = &self.value {
            let got = effect.value.as_deref().unwrap_or_default();
            if got != want {
                return Some(format!("the field holds \"{got}\", not \"{want}\""));
            }
        }
        if let Some(want) = &self.url {
            let got = page_of(&effect.url);
            if got != *want {
                return Some(format!("the step led to {got}, not to {want}"));
            }
        }
        None
    }
}

/// An address without its query and fragment.
pub fn page_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_owned(),
    }
}

/// The folder recipes live in.
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("recipes")
}

/// Where the repaired recipe offered for `name` is kept.
pub fn proposed_path(data_dir: &Path, name: &str) -> PathBuf {
    dir(data_dir).join(format!("{name}.proposed.toml"))
}

/// Checks a recipe name (it becomes a file name).
pub fn check_name(name: &str) -> Result<(), RecipeError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok { Ok(()) } else { Err(RecipeError::BadName(name.to_owned())) }
}

/// A name made of text: its first words, lowercase, joined by `-`.
pub fn slug(text: &str, words: usize, sep: char) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() { c.to_ascii_lowercase() } else { ' ' })
        .filter(|c| c.is_ascii())
        .collect();
    let s = cleaned.split_whitespace().take(words).collect::<Vec<_>>().join(&sep.to_string());
    if s.is_empty() { "recipe".to_owned() } else { s.chars().take(48).collect() }
}

impl Recipe {
    /// The recipe of a finished task's steps: every action that worked
    /// (not `done`, questions or failed ones), parameters detected.
    pub fn from_task(
        store: &Store,
        task_id: &str,
        name: Option<&str>,
    ) -> Result<Recipe, RecipeError> {
        let task = store.task(task_id)?.ok_or_else(|| RecipeError::NoTask(task_id.to_owned()))?;
        let rows = store.steps(task_id)?;
        let start_url = task
            .url
            .clone()
            .or_else(|| rows.iter().find_map(|r| r.url.clone()))
            .unwrap_or_default();
        let mut steps = Vec::new();
        for row in &rows {
            let records: Vec<ActionRecord> =
                serde_json::from_str(&row.actions_json).unwrap_or_default();
            for r in records.into_iter().filter(|r| r.ok || navigated_away(r)) {
                if matches!(
                    r.action,
                    Action::Done { .. } | Action::ReportInfeasible { .. } | Action::AskUser { .. }
                ) {
                    continue;
                }
                let effect = r.effect.as_ref();
                let check = Check {
                    value: effect.and_then(|e| e.value.clone()),
                    url: effect.filter(|e| e.url_changed).map(|e| page_of(&e.url)),
                    appeared: effect.map(|e| e.appeared.clone()).unwrap_or_default(),
                };
                steps.push(Step {
                    intent: row.next_goal.clone(),
                    locator: effect.and_then(|e| e.locator.clone()),
                    action: r.action,
                    check,
                });
            }
        }
        if steps.is_empty() {
            return Err(RecipeError::Empty(task_id.to_owned()));
        }
        let mut recipe = Recipe {
            version: VERSION,
            name: name.unwrap_or_default().to_owned(),
            task: task.task.clone(),
            start_url,
            from_task: task_id.to_owned(),
            params: Vec::new(),
            steps,
        };
        recipe.detect_params();
        if recipe.name.is_empty() {
            // Named by the task's words, not by the values it was given.
            let words: String = recipe
                .task
                .split_whitespace()
                .filter(|w| !w.contains('{'))
                .filter(|w| !SMALL_WORDS.contains(&w.to_lowercase().as_str()))
                .collect::<Vec<_>>()
                .join(" ");
            recipe.name = slug(&words, 5, '-');
        }
        check_name(&recipe.name)?;
        Ok(recipe)
    }

    /// Values of fills, types and selects that appear verbatim in the task
    /// text become parameters named from their field's label.
    pub fn detect_params(&mut self) {
        for i in 0..self.steps.len() {
            let Some(value) = value_of(&self.steps[i].action) else { continue };
            if value.trim().is_empty() || value.contains("{{secret:") {
                continue;
            }
            if let Some(p) = self.params.iter().find(|p| p.recorded == value) {
                let name = p.name.clone();
                self.steps[i].parametrize(&value, &name);
                continue;
            }
            if !replace_words(&self.task, &value, "").1 {
                continue;
            }
            let base = self.steps[i]
                .locator
                .as_ref()
                .and_then(|l| l.label.clone().or(l.field_name.clone()).or(l.name.clone()))
                .map(|l| slug(&l, 3, '_'))
                .unwrap_or_else(|| "value".to_owned());
            let mut name = base.clone();
            let mut n = 2;
            while self.params.iter().any(|p| p.name == name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            self.task = replace_words(&self.task, &value, &format!("{{{name}}}")).0;
            self.steps[i].parametrize(&value, &name);
            self.params.push(Param { name, recorded: value });
        }
    }

    /// The recipe with `values` put in for its parameters (a parameter not
    /// given keeps its recorded value).
    pub fn with_params(&self, values: &[(String, String)]) -> Result<Recipe, RecipeError> {
        for (k, _) in values {
            if !self.params.iter().any(|p| &p.name == k) {
                let have: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
                let have = if have.is_empty() { "none".to_owned() } else { have.join(", ") };
                return Err(RecipeError::UnknownParam(k.clone(), have));
            }
        }
        let mut out = self.clone();
        for p in &self.params {
            let value = values
                .iter()
                .rev()
                .find(|(k, _)| *k == p.name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| p.recorded.clone());
            let key = format!("{{{}}}", p.name);
            out.task = out.task.replace(&key, &value);
            for s in &mut out.steps {
                s.action = replace_in(&s.action, &key, &value);
                if let Some(v) = &mut s.check.value {
                    *v = v.replace(&key, &value);
                }
            }
        }
        Ok(out)
    }

    /// The file's text.
    pub fn to_toml(&self) -> Result<String, RecipeError> {
        let body = toml::to_string_pretty(self).map_err(|e| RecipeError::Unreadable {
            path: self.name.clone(),
            message: e.to_string(),
        })?;
        Ok(format!(
            "# An Errand recipe: `errand recipe run {}` replays it without the model.\n\
             # Edit freely; parameters are written {{name}}, secrets {{{{secret:NAME}}}}.\n{body}",
            self.name
        ))
    }

    /// Reads a recipe's text, checking its version first.
    pub fn parse(text: &str, path: &str) -> Result<Recipe, RecipeError> {
        let unreadable =
            |message: String| RecipeError::Unreadable { path: path.to_owned(), message };
        let value: toml::Value = toml::from_str(text).map_err(|e| unreadable(e.to_string()))?;
        let version = value.get("version").and_then(toml::Value::as_integer);
        match version {
            Some(v) if v == i64::from(VERSION) => {}
            Some(v) => {
                return Err(RecipeError::Version {
                    path: path.to_owned(),
                    found: u32::try_from(v).unwrap_or(u32::MAX),
                });
            }
            None => return Err(unreadable("it has no `version`".to_owned())),
        }
        toml::from_str(text).map_err(|e| unreadable(e.to_string()))
    }

    /// Writes the recipe into `recipes/` (replacing one of the same name).
    pub fn save(&self, data_dir: &Path) -> Result<PathBuf, RecipeError> {
        check_name(&self.name)?;
        let dir = dir(data_dir);
        let path = dir.join(format!("{}.toml", self.name));
        let write = |source| RecipeError::Write { path: path.display().to_string(), source };
        std::fs::create_dir_all(&dir).map_err(write)?;
        std::fs::write(&path, self.to_toml()?).map_err(write)?;
        Ok(path)
    }

    /// Reads the recipe named `name`.
    pub fn load(data_dir: &Path, name: &str) -> Result<Recipe, RecipeError> {
        check_name(name)?;
        let path = dir(data_dir).join(format!("{name}.toml"));
        let text =
            std::fs::read_to_string(&path).map_err(|_| RecipeError::NotFound(name.to_owned()))?;
        Recipe::parse(&text, &path.display().to_string())
    }

    /// Offers a repaired recipe: `recipes/NAME.proposed.toml`, which
    /// [`Recipe::accept_proposed`] (the panel's "Accept", `--accept-repairs`)
    /// makes the recipe.
    pub fn save_proposed(&self, data_dir: &Path) -> Result<PathBuf, RecipeError> {
        check_name(&self.name)?;
        let path = proposed_path(data_dir, &self.name);
        let write = |source| RecipeError::Write { path: path.display().to_string(), source };
        std::fs::create_dir_all(dir(data_dir)).map_err(write)?;
        std::fs::write(&path, self.to_toml()?).map_err(write)?;
        Ok(path)
    }

    /// The repaired recipe offered for `name`, if there is one.
    pub fn proposed(data_dir: &Path, name: &str) -> Option<Result<Recipe, RecipeError>> {
        check_name(name).ok()?;
        let path = proposed_path(data_dir, name);
        let text = std::fs::read_to_string(&path).ok()?;
        Some(Recipe::parse(&text, &path.display().to_string()))
    }

    /// Makes the offered repair the recipe `name`.
    pub fn accept_proposed(data_dir: &Path, name: &str) -> Result<Recipe, RecipeError> {
        let recipe = Recipe::proposed(data_dir, name)
            .ok_or_else(|| RecipeError::NotFound(format!("{name} (repaired)")))??;
        recipe.save(data_dir)?;
        let _ = std::fs::remove_file(proposed_path(data_dir, name));
        Ok(recipe)
    }

    /// Every recipe, by name; unreadable ones as errors.
    pub fn list(data_dir: &Path) -> Vec<Result<Recipe, RecipeError>> {
        let Ok(entries) = std::fs::read_dir(dir(data_dir)) else { return Vec::new() };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            // Not the repairs offered (`NAME.proposed.toml`).
            .filter(|p| p.file_stem().and_then(|s| s.to_str()).is_some_and(|s| !s.contains('.')))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(&p).map_err(|e| RecipeError::Unreadable {
                    path: p.display().to_string(),
                    message: e.to_string(),
                })?;
                Recipe::parse(&text, &p.display().to_string())
            })
            .collect()
    }
}

impl Step {
    fn parametrize(&mut self, value: &str, name: &str) {
        let key = format!("{{{name}}}");
        self.action = replace_in(&self.action, value, &key);
        if let Some(v) = &mut self.check.value {
            if v == value {
                *v = key;
            }
        }
    }
}

/// `text` with `value` made `to` where it stands as a whole (not inside a
/// longer word: `ada` in "Canada" stays); and whether it was found.
fn replace_words(text: &str, value: &str, to: &str) -> (String, bool) {
    let mut out = String::new();
    let mut rest = text;
    let mut found = false;
    while let Some(at) = rest.find(value) {
        let before = rest[..at].chars().next_back().or_else(|| out.chars().next_back());
        let after = rest[at + value.len()..].chars().next();
        let alone = |c: Option<char>| !c.is_some_and(char::is_alphanumeric);
        out.push_str(&rest[..at]);
        if alone(before) && alone(after) {
            out.push_str(to);
            found = true;
        } else {
            out.push_str(value);
        }
        rest = &rest[at + value.len()..];
    }
    out.push_str(rest);
    (out, found)
}

/// The value a fill, type or select puts in.
fn value_of(action: &Action) -> Option<String> {
    match action {
        Action::Fill { text, .. } | Action::Type { text, .. } => Some(text.clone()),
        Action::SelectOption { options, .. } if options.len() == 1 => {
            serde_json::to_value(&options[0]).ok().and_then(|v| v.as_str().map(str::to_owned))
        }
        _ => None,
    }
}

/// `action` with every string value equal to `from` (fills, types, selects:
/// the whole value) made `to`; in other strings `from` is replaced inside.
fn replace_in(action: &Action, from: &str, to: &str) -> Action {
    let Ok(mut json) = serde_json::to_value(action) else { return action.clone() };
    fn walk(v: &mut serde_json::Value, from: &str, to: &str) {
        match v {
            serde_json::Value::String(s) if s.contains(from) => *s = s.replace(from, to),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, from, to)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| walk(x, from, to)),
            _ => {}
        }
    }
    walk(&mut json, from, to);
    serde_json::from_value(json).unwrap_or_else(|_| action.clone())
}

/// `action` acting on element `index` instead of the recorded one.
pub fn on_element(action: &Action, index: u32) -> Action {
    let Ok(mut json) = serde_json::to_value(action) else { return action.clone() };
    if let Some(inner) = json.as_object_mut().and_then(|o| o.values_mut().next()) {
        if let Some(slot) = inner.get_mut("index").filter(|v| v.is_number()) {
            *slot = index.into();
        }
    }
    serde_json::from_value(json).unwrap_or_else(|_| action.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use errand_protocol::Effect;

    fn fill(index: u32, text: &str, label: &str) -> Step {
        Step {
            intent: format!("Fill {label}"),
            action: Action::Fill { index, text: text.into() },
            locator: Some(Locator {
                tag: "input".into(),
                label: Some(label.into()),
                ..Default::default()
            }),
            check: Check { value: Some(text.into()), ..Default::default() },
        }
    }

    fn recipe() -> Recipe {
        Recipe {
            version: VERSION,
            name: "sign-up".into(),
            task: "Sign up as ada@example.com, name Ada Lovelace, password {{secret:pw}}".into(),
            start_url: "http://127.0.0.1:1/form.html".into(),
            from_task: "t1".into(),
            params: Vec::new(),
            steps: vec![
                fill(3, "Ada Lovelace", "Full name"),
                fill(4, "ada@example.com", "E-mail"),
                fill(5, "{{secret:pw}}", "Password"),
                fill(6, "Mr", "Title"),
                Step {
                    intent: "Submit".into(),
                    action: Action::Click {
                        index: 7,
                        button: Default::default(),
                        modifiers: vec![],
                        dialog: Default::default(),
                    },
                    locator: Some(Locator {
                        tag: "button".into(),
                        role: Some("button".into()),
                        name: Some("Register".into()),
                        rect: Some([10.0, 20.0, 80.0, 30.0]),
                        ..Default::default()
                    }),
                    check: Check {
                        url: Some("http://127.0.0.1:1/done.html".into()),
                        ..Default::default()
                    },
                },
            ],
        }
    }

    #[test]
    fn values_from_the_task_text_become_named_parameters_and_secrets_stay_placeholders() {
        let mut r = recipe();
        r.detect_params();
        let names: Vec<(&str, &str)> =
            r.params.iter().map(|p| (p.name.as_str(), p.recorded.as_str())).collect();
        assert_eq!(names, [("full_name", "Ada Lovelace"), ("e_mail", "ada@example.com")]);
        assert_eq!(r.task, "Sign up as {e_mail}, name {full_name}, password {{secret:pw}}");
        assert_eq!(r.steps[0].action, Action::Fill { index: 3, text: "{full_name}".into() });
        assert_eq!(r.steps[0].check.value.as_deref(), Some("{full_name}"));
        // Not in the task text: a constant of the recipe.
        assert_eq!(r.steps[3].action, Action::Fill { index: 6, text: "Mr".into() });
        assert_eq!(r.steps[2].action, Action::Fill { index: 5, text: "{{secret:pw}}".into() });

        let run = r.with_params(&[("e_mail".into(), "grace@example.org".into())]).unwrap();
        assert_eq!(
            run.steps[1].action,
            Action::Fill { index: 4, text: "grace@example.org".into() }
        );
        assert_eq!(run.steps[1].check.value.as_deref(), Some("grace@example.org"));
        // Not given: the recorded value.
        assert_eq!(run.steps[0].action, Action::Fill { index: 3, text: "Ada Lovelace".into() });
        assert_eq!(run.steps[2].action, Action::Fill { index: 5, text: "{{secret:pw}}".into() });
        let mut canada = recipe();
        canada.task = "Sign up in Canada, password {{secret:pw}}".into();
        canada.steps[0].action = Action::Fill { index: 3, text: "ada".into() };
        canada.detect_params();
        assert!(canada.params.is_empty(), "{:?}", canada.params);
        assert_eq!(replace_words("ada, Ada; ada", "ada", "{n}").0, "{n}, Ada; {n}");
        assert!(matches!(
            r.with_params(&[("email".into(), "x".into())]),
            Err(RecipeError::UnknownParam(..))
        ));
    }

    #[test]
    fn the_file_round_trips_and_says_its_version() {
        let mut r = recipe();
        r.detect_params();
        let text = r.to_toml().unwrap();
        assert!(text.contains("version = 1"), "{text}");
        assert!(text.contains("{e_mail}"), "{text}");
        assert_eq!(Recipe::parse(&text, "x.toml").unwrap(), r);

        let dir = tempfile::tempdir().unwrap();
        let path = r.save(dir.path()).unwrap();
        assert!(path.ends_with("recipes/sign-up.toml"));
        assert_eq!(Recipe::load(dir.path(), "sign-up").unwrap(), r);
        assert_eq!(Recipe::list(dir.path()).len(), 1);
        let mut fixed = r.clone();
        fixed.steps[4].locator.as_mut().unwrap().name = Some("Create profile".into());
        fixed.save_proposed(dir.path()).unwrap();
        assert_eq!(Recipe::list(dir.path()).len(), 1, "an offered repair is no recipe of its own");
        assert_eq!(Recipe::accept_proposed(dir.path(), "sign-up").unwrap(), fixed);
        assert_eq!(Recipe::load(dir.path(), "sign-up").unwrap(), fixed);
        assert!(Recipe::proposed(dir.path(), "sign-up").is_none());
    }

    #[test]
    fn another_version_is_refused_with_a_clear_error() {
        let text = recipe().to_toml().unwrap().replace("version = 1", "version = 2");
        let err = Recipe::parse(&text, "x.toml").unwrap_err().to_string();
        assert!(err.contains("version 2") && err.contains("reads version 1"), "{err}");
        let err = Recipe::parse("name = 'x'", "x.toml").unwrap_err().to_string();
        assert!(err.contains("no `version`"), "{err}");
        assert!(matches!(check_name("../x"), Err(RecipeError::BadName(_))));
    }

    #[test]
    fn a_check_compares_the_value_and_the_page() {
        let r = recipe();
        let effect = Effect {
            value: Some("Ada Lovelace".into()),
            url: "http://a/".into(),
            ..Default::default()
        };
        assert_eq!(r.steps[0].check.failure(Some(&effect)), None);
        let other = Effect { value: Some("Ada".into()), ..effect.clone() };
        assert!(r.steps[0].check.failure(Some(&other)).is_some());
        let moved = Effect { url: "http://127.0.0.1:1/done.html?x=1".into(), ..Default::default() };
        assert_eq!(r.steps[4].check.failure(Some(&moved)), None);
        let elsewhere =
            Effect { url: "http://127.0.0.1:1/other.html".into(), ..Default::default() };
        assert!(r.steps[4].check.failure(Some(&elsewhere)).is_some());
        // No effect (the page went away before answering): the address
        // cannot be checked, a value to read back fails.
        assert_eq!(r.steps[4].check.failure(None), None);
        assert!(r.steps[0].check.failure(None).is_some());
        assert_eq!(on_element(&r.steps[4].action, 42).element(), Some(42));
    }
}

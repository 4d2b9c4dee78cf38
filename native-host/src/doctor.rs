//! `errand doctor`: is everything in place? One line per check.

use std::time::Duration;

use crate::config::{Overrides, Settings, mask_key};
use crate::install::{self, Browser, Registration};
use crate::llm::{OpenAiCompatible, Probe};
use crate::store::{SCHEMA_VERSION, Store};

/// How a check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Fine.
    Ok,
    /// For information.
    Info,
    /// Worth fixing; Errand still works.
    Warn,
    /// Errand cannot work until this is fixed.
    Problem,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub level: Level,
    pub subject: String,
    pub detail: String,
}

impl Check {
    fn new(level: Level, subject: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { level, subject: subject.into(), detail: detail.into() }
    }
}

/// The whole report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether something essential is broken (the command then exits 1).
    pub fn has_problems(&self) -> bool {
        self.checks.iter().any(|c| c.level == Level::Problem)
    }

    fn push(&mut self, level: Level, subject: impl Into<String>, detail: impl Into<String>) {
        self.checks.push(Check::new(level, subject, detail));
    }
}

/// Runs every check.
pub async fn run(flags: &Overrides) -> Report {
    let mut r = Report::default();
    match install::own_path() {
        Ok(p) => r.push(
            Level::Ok,
            "binary",
            format!("{} (version {})", p.display(), env!("CARGO_PKG_VERSION")),
        ),
        Err(e) => r.push(Level::Problem, "binary", e.to_string()),
    }
    browsers(&mut r);

    let settings = match Settings::load(flags) {
        Ok(s) => s,
        Err(e) => {
            r.push(Level::Problem, "config", e.to_string());
            return r;
        }
    };
    config(&mut r, &settings);
    database(&mut r, &settings);
    model(&mut r, &settings).await;
    r
}

fn browsers(r: &mut Report) {
    let mut registered = 0;
    for browser in Browser::ALL {
        let subject = format!("{browser} registration");
        match install::check(browser) {
            Err(e) => r.push(Level::Warn, subject, e.to_string()),
            Ok((path, Registration::Missing)) => r.push(
                Level::Info,
                subject,
                format!("none ({} does not exist); run `errand install`", path.display()),
            ),
            Ok((path, Registration::Broken(why))) => r.push(
                Level::Problem,
                subject,
                format!("{}: {why}; run `errand install`", path.display()),
            ),
            Ok((path, Registration::Ok { exe, current })) => {
                registered += 1;
                if current {
                    r.push(Level::Ok, subject, path.display().to_string());
                } else {
                    r.push(
                        Level::Warn,
                        subject,
                        format!(
                            "{} points at another errand binary, {}; run `errand install` to use this one",
                            path.display(),
                            exe.display()
                        ),
                    );
                }
            }
        }
    }
    if registered == 0 {
        r.push(
            Level::Problem,
            "browsers",
            "Errand is registered with no browser: run `errand install` (the side panel cannot reach the host)",
        );
    }
}

fn config(r: &mut Report, s: &Settings) {
    let file = s.config_file();
    if s.config_file_found {
        r.push(Level::Ok, "config file", file.display().to_string());
    } else {
        r.push(Level::Info, "config file", format!("{} (absent: defaults apply)", file.display()));
    }
    r.push(Level::Info, "model server", format!("{} ({})", s.base_url, s.base_url_source));
    r.push(Level::Info, "model", format!("{} ({})", s.model, s.model_source));
    let key = match &s.api_key {
        Some(k) => format!("{} ({})", mask_key(k), s.api_key_source),
        None => "none".to_owned(),
    };
    r.push(Level::Info, "api key", key);
    r.push(
        Level::Info,
        "limits",
        format!("{} steps, {} s per model call", s.max_steps, s.timeout.as_secs()),
    );
}

fn database(r: &mut Report, s: &Settings) {
    r.push(Level::Info, "data dir", s.data_dir.display().to_string());
    match Store::open_in(&s.data_dir) {
        Ok(store) => r.push(
            Level::Ok,
            "database",
            format!("{} opens (schema version {SCHEMA_VERSION})", store.path().display()),
        ),
        Err(e) => r.push(Level::Problem, "database", e.to_string()),
    }
}

async fn model(r: &mut Report, s: &Settings) {
    if s.provider != crate::config::ProviderKind::OpenAi {
        // Anthropic and Gemini: the smallest real call.
        let provider = crate::llm::build(s);
        let cancel = tokio_util::sync::CancellationToken::new();
        let msgs = [crate::llm::ChatMessage::user("Say OK.")];
        match provider.complete(&msgs, &cancel).await {
            Ok(_) => r.push(
                Level::Ok,
                "model answers",
                format!("{} ({}) answered a test call", s.model, s.provider.name()),
            ),
            Err(e) => r.push(Level::Problem, "model answers", e.to_string()),
        }
        return;
    }
    let provider = OpenAiCompatible::new(s);
    match provider.probe(Duration::from_secs(5)).await {
        Ok(Probe::Listed) => {
            r.push(Level::Ok, "model answers", format!("{} lists {}", s.base_url, s.model))
        }
        Ok(Probe::Answered) => {
            r.push(Level::Ok, "model answers", format!("{} answered a test call", s.model))
        }
        Ok(Probe::NotListed(ids)) => r.push(
            Level::Problem,
            "model answers",
            format!(
                "the server answers but does not list `{}`; it has: {}. To use another model: {}",
                s.model,
                ids.join(", "),
                s.how_to_configure()
            ),
        ),
        Err(e) => r.push(Level::Problem, "model answers", e.to_string()),
    }
}

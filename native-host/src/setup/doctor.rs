//! `errand doctor`: is everything in place? One line per check.
//!
//! The model check ([`model_checks`]) runs on any [`Settings`]: the side
//! panel's connection check (`test_connection`) uses it with the live
//! settings.

use std::time::Duration;

pub use errand_protocol::{CheckLevel as Level, CheckLine as Check};

use crate::config::{ProviderKind, Settings, mask_key};
use crate::llm::{self, ChatMessage, LlmError, OpenAiCompatible, Probe};
use crate::memory::store::{SCHEMA_VERSION, Store};
use crate::setup::install::{self, Browser, Registration};

/// The longest the `GET /models` part of the check waits.
const LIST_MODELS_TIMEOUT: Duration = Duration::from_secs(5);

fn check(level: Level, subject: impl Into<String>, detail: impl Into<String>) -> Check {
    Check { level, subject: subject.into(), detail: detail.into() }
}

/// The whole report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether something essential is broken (the command then exits 1).
    pub fn has_problems(&self) -> bool {
        has_problems(&self.checks)
    }

    fn push(&mut self, level: Level, subject: impl Into<String>, detail: impl Into<String>) {
        self.checks.push(check(level, subject, detail));
    }
}

/// Whether any line is a problem.
pub fn has_problems(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.level == Level::Problem)
}

/// Runs every check.
pub async fn run(flags: &crate::config::Overrides) -> Report {
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
    let keychain = crate::memory::keychain::os();
    r.checks.push(secrets_check(
        &settings,
        keychain.as_ref(),
        crate::memory::keychain::probe(keychain.as_ref()),
    ));
    r.checks.extend(model_checks(&settings).await);
    r
}

/// Where secrets live and whether the OS keychain answers: a problem only
/// when `secrets_store = "keychain"` and there is none.
pub fn secrets_check(
    s: &Settings,
    keychain: &dyn crate::memory::keychain::Keychain,
    probe: Result<(), crate::memory::keychain::KeychainError>,
) -> Check {
    use crate::config::SecretsStore;
    let (level, state) = match (&probe, s.secrets_store) {
        (Ok(()), _) => (Level::Ok, format!("the OS keychain ({}) answers", keychain.describe())),
        (Err(e), SecretsStore::Keychain) => (
            Level::Problem,
            format!("{e}; set secrets_store = \"auto\" to use the owner-only file"),
        ),
        (Err(e), SecretsStore::Auto) => {
            (Level::Info, format!("{e}, so secrets are kept in the owner-only file"))
        }
        (Err(_), SecretsStore::File) => (Level::Info, "the owner-only file is used".to_owned()),
    };
    let kept = match crate::memory::secrets::Secrets::index(&s.data_dir) {
        Ok(secrets) => secrets.location().to_string(),
        Err(e) => e.to_string(),
    };
    check(level, "secrets", format!("{state}; {kept} (secrets_store = {})", s.secrets_store.name()))
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
    if !s.locked.is_empty() {
        r.push(
            Level::Info,
            "fixed settings",
            format!(
                "{} (set by the environment or the command line: the side panel cannot change them)",
                s.locked.join(", ")
            ),
        );
    }
    r.push(
        Level::Info,
        "limits",
        format!(
            "{} steps, {} s per model call, tokens: {}, cost: {}",
            s.max_steps,
            s.timeout.as_secs(),
            s.max_tokens.map_or("no limit".to_owned(), |n| n.to_string()),
            s.max_cost_usd.map_or("no limit".to_owned(), |c| format!("${c:.2}")),
        ),
    );
    let on = |b: bool| if b { "on" } else { "off" };
    r.push(
        Level::Info,
        "agent",
        format!(
            "vision {}, marks {}, planner {}, validate {}",
            on(s.vision),
            on(s.marks),
            on(s.planner),
            on(s.validate)
        ),
    );
    let structured = match s.structured {
        crate::config::Switch::Auto => format!(
            "auto ({} for this provider and model)",
            on(crate::llm::structured_known(s.provider, &s.base_url, &s.model))
        ),
        other => other.name().to_owned(),
    };
    let stream = match s.provider {
        crate::config::ProviderKind::OpenAi => on(s.stream),
        _ => "off (OpenAI-compatible servers only)",
    };
    r.push(Level::Info, "answers", format!("structured output {structured}, streaming {stream}"));
    let list = |l: &[String]| if l.is_empty() { "—".to_owned() } else { l.join(", ") };
    r.push(
        Level::Info,
        "sites",
        format!(
            "allow: {}; deny: {}; ask first: {}",
            list(&s.sites.allow),
            list(&s.sites.deny),
            list(&s.sites.ask_first)
        ),
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

/// Checks the model with `s`: does the server answer, is the key accepted,
/// does the model exist. Three lines, `model server`, `api key` and
/// `model`, each saying where its setting came from. Never takes longer
/// than the settings' timeout (`timeout_secs`): a server that does not
/// answer by then is a problem line. No retries.
pub async fn model_checks(s: &Settings) -> Vec<Check> {
    let probed = match tokio::time::timeout(s.timeout, probe(s)).await {
        Ok(result) => result,
        Err(_) => {
            Err(LlmError::Timeout { base_url: s.base_url.clone(), secs: s.timeout.as_secs() })
        }
    };
    verdict(s, probed)
}

/// Asks the server: OpenAI-compatible servers are asked for their model
/// list (else a one-token call); Anthropic and Gemini get the smallest
/// real call.
async fn probe(s: &Settings) -> Result<Probe, LlmError> {
    if s.provider == ProviderKind::OpenAi {
        return OpenAiCompatible::new(s).probe(LIST_MODELS_TIMEOUT.min(s.timeout)).await;
    }
    let mut once = s.clone();
    once.max_retries = 0;
    let cancel = tokio_util::sync::CancellationToken::new();
    llm::build(&once).complete(&[ChatMessage::user("Say OK.")], &cancel).await?;
    Ok(Probe::Answered)
}

/// What the server's answer says about the server, the key and the model.
fn verdict(s: &Settings, probed: Result<Probe, LlmError>) -> Vec<Check> {
    let server = format!("{} ({}, {})", s.base_url, s.provider.name(), s.base_url_source);
    let model = format!("{} ({})", s.model, s.model_source);
    let key = match &s.api_key {
        Some(k) => format!("{} ({})", mask_key(k), s.api_key_source),
        None => "none".to_owned(),
    };
    let key_fine = || match s.api_key {
        Some(_) => check(Level::Ok, "api key", format!("{key}: accepted")),
        None => check(Level::Info, "api key", "none (the server asked for none)"),
    };
    let answers = || check(Level::Ok, "model server", format!("{server}: answers"));
    let unchecked = |subject: &str, what: &str| {
        check(Level::Info, subject, format!("{what}: not checked (see the line above)"))
    };
    match probed {
        Ok(Probe::Listed) => {
            vec![answers(), key_fine(), check(Level::Ok, "model", format!("{model}: listed"))]
        }
        Ok(Probe::Answered) => vec![
            answers(),
            key_fine(),
            check(Level::Ok, "model", format!("{model}: answered a test call")),
        ],
        Ok(Probe::NotListed(ids)) => vec![
            answers(),
            key_fine(),
            check(
                Level::Problem,
                "model",
                format!(
                    "the server does not list `{}`; it has: {}. To use another model: {}",
                    s.model,
                    ids.join(", "),
                    s.how_to_configure()
                ),
            ),
        ],
        Err(LlmError::GaveUp { last, .. }) => verdict(s, Err(*last)),
        Err(e @ (LlmError::Unreachable { .. } | LlmError::Timeout { .. })) => vec![
            check(Level::Problem, "model server", e.to_string()),
            unchecked("api key", &key),
            unchecked("model", &model),
        ],
        Err(e @ LlmError::BadKey { .. }) => vec![
            answers(),
            check(Level::Problem, "api key", format!("{key}: {e}")),
            unchecked("model", &model),
        ],
        Err(e @ LlmError::NotFound { .. }) => {
            vec![answers(), key_fine(), check(Level::Problem, "model", e.to_string())]
        }
        Err(e @ LlmError::RateLimited { .. }) => vec![
            answers(),
            key_fine(),
            check(Level::Warn, "model", format!("{model}: {e}; try again in a while")),
        ],
        Err(e) => vec![
            check(Level::Problem, "model server", format!("{server}: {e}")),
            unchecked("api key", &key),
            unchecked("model", &model),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    fn settings(base_url: &str, timeout_secs: u64) -> Settings {
        let flags = Overrides {
            base_url: Some(base_url.into()),
            api_key: Some("sk-test-0123456789abcd".into()),
            timeout_secs: Some(timeout_secs),
            ..Default::default()
        };
        Settings::resolve(Default::default(), &|_| None, &flags, "/c".into(), "/d".into()).unwrap()
    }

    fn levels(checks: &[Check]) -> Vec<(&str, Level)> {
        checks.iter().map(|c| (c.subject.as_str(), c.level)).collect()
    }

    #[tokio::test]
    async fn a_dead_server_is_a_problem_at_once() {
        let checks = model_checks(&settings("http://127.0.0.1:9/v1", 30)).await;
        assert_eq!(levels(&checks)[0], ("model server", Level::Problem), "{checks:?}");
        assert!(has_problems(&checks));
        assert!(!format!("{checks:?}").contains("0123456789"), "the key is masked");
    }

    #[tokio::test]
    async fn a_silent_server_is_a_problem_within_the_timeout() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Accepts connections and never answers.
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                open.push(sock);
            }
        });
        let started = std::time::Instant::now();
        let checks = model_checks(&settings(&format!("http://{addr}/v1"), 1)).await;
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert_eq!(levels(&checks)[0], ("model server", Level::Problem), "{checks:?}");
        assert!(checks[0].detail.contains("did not answer within 1 s"), "{checks:?}");
        held.abort();
    }

    #[test]
    fn the_secrets_line_says_where_secrets_live_and_if_the_keychain_is_missing() {
        use crate::memory::keychain::{KeychainError, fake};
        let dir = tempfile::tempdir().unwrap();
        let mut s = settings("http://x.test/v1", 5);
        s.data_dir = dir.path().to_owned();
        let missing = Err(KeychainError::Unavailable("no D-Bus session".into()));
        let c = secrets_check(&s, &fake::Missing, missing.clone());
        assert_eq!(c.level, Level::Info, "{c:?}");
        assert!(
            c.detail.contains("no D-Bus session, so secrets are kept in the owner-only file"),
            "{c:?}"
        );
        assert!(c.detail.contains("no secrets yet (secrets_store = auto)"), "{c:?}");
        s.secrets_store = crate::config::SecretsStore::Keychain;
        let c = secrets_check(&s, &fake::Missing, missing);
        assert_eq!(c.level, Level::Problem, "{c:?}");
        let c = secrets_check(&s, &fake::Memory::default(), Ok(()));
        assert_eq!(c.level, Level::Ok, "{c:?}");
        assert!(c.detail.contains("the OS keychain (a test keychain) answers"), "{c:?}");
    }

    #[test]
    fn each_answer_names_what_is_wrong() {
        let s = settings("http://x.test/v1", 5);
        let bad_key = verdict(&s, Err(LlmError::BadKey { status: 401, excerpt: "no".into() }));
        assert_eq!(
            levels(&bad_key),
            [("model server", Level::Ok), ("api key", Level::Problem), ("model", Level::Info)]
        );
        let unlisted = verdict(&s, Ok(Probe::NotListed(vec!["a".into(), "b".into()])));
        assert_eq!(unlisted[2].level, Level::Problem);
        assert!(unlisted[2].detail.contains("it has: a, b"), "{unlisted:?}");
        let fine = verdict(&s, Ok(Probe::Listed));
        assert!(!has_problems(&fine), "{fine:?}");
        assert!(fine[0].detail.contains("http://x.test/v1 (openai, command line)"), "{fine:?}");
        let gave_up = verdict(
            &s,
            Err(LlmError::GaveUp {
                attempts: 2,
                last: Box::new(LlmError::RateLimited { excerpt: "slow".into(), retry_after: None }),
            }),
        );
        assert_eq!(gave_up[2].level, Level::Warn);
    }
}

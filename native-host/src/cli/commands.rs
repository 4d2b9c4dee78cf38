//! `errand run` and `errand observe`: a browser of their own, the same host
//! core the side panel uses, output on the terminal.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use base64::Engine;
use errand_protocol::{Observation, Outcome, TaskEvent};
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

use crate::agent::BrowserError;
use crate::cli::session::{BrowserSession, SessionError};
use crate::cli::term;
use crate::config::{ConfigError, Overrides, Settings};
use crate::host::{Host, HostError};
use crate::memory::store::{Store, StoreError};

/// Why a terminal command could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{0}")]
    Request(#[from] BrowserError),
    #[error(transparent)]
    Recipe(#[from] crate::memory::recipe::RecipeError),
    #[error("cannot set up the connection: {0}")]
    Io(#[from] std::io::Error),
    #[error("the screenshot is not a base64 data URL")]
    BadScreenshot,
    #[error("cannot write the screenshot to {path}: {source}")]
    WriteScreenshot { path: PathBuf, source: std::io::Error },
}

/// `errand run`.
#[derive(Debug, Clone)]
pub struct RunArgs {
    pub task: String,
    pub url: String,
    pub overrides: Overrides,
    pub json: bool,
    pub headed: bool,
    /// Approve every action Errand asks about, without asking.
    pub approve: bool,
}

/// `errand observe`.
#[derive(Debug, Clone)]
pub struct ObserveArgs {
    pub url: String,
    pub screenshot: Option<PathBuf>,
    pub json: bool,
    pub headed: bool,
}

/// A browser, connected, with a host serving it.
pub(crate) struct Connected {
    pub(crate) host: Host,
    session: BrowserSession,
    served: tokio::task::JoinHandle<()>,
}

#[cfg(unix)]
pub(crate) async fn connect(settings: Settings, headed: bool) -> Result<Connected, CommandError> {
    let store = Store::open_in(&settings.data_dir)?;
    let (session, stream) = BrowserSession::launch(headed).await?;
    let host = Host::new(settings, store);
    let reader = stream.try_clone()?;
    let serving = host.clone();
    let served = tokio::spawn(async move {
        if let Err(e) = serving.serve(reader, stream).await {
            tracing::error!("{e}");
        }
    });
    Ok(Connected { host, session, served })
}

#[cfg(not(unix))]
pub(crate) async fn connect(_settings: Settings, _headed: bool) -> Result<Connected, CommandError> {
    Err(CommandError::Io(std::io::Error::other("errand run and observe need a Unix system")))
}

impl Connected {
    pub(crate) fn close(mut self) {
        self.session.close();
        self.served.abort();
    }
}

/// Runs a task; exit status 0 when it was done successfully.
pub async fn run(args: RunArgs) -> Result<ExitCode, CommandError> {
    let settings = Settings::load(&args.overrides)?;
    let (task, url) = (args.task.clone(), args.url.clone());
    let ended = drive(settings, args.headed, args.json, args.approve, move |host| {
        host.start_task(&task, None, Some(&url))
    })
    .await?;
    Ok(match ended {
        Some((outcome, interrupted)) => exit_code(outcome.as_ref(), interrupted),
        None => interrupted_exit(),
    })
}

/// Starts a headless browser session, a task in it (`start`), prints its
/// events until it ends (answering approvals) and closes the browser;
/// `None` when Ctrl-C came while the browser was starting.
async fn drive<E: Into<CommandError>>(
    settings: Settings,
    headed: bool,
    json: bool,
    approve: bool,
    start: impl FnOnce(&Host) -> Result<String, E>,
) -> Result<Option<(Option<Outcome>, bool)>, CommandError> {
    // Dropping a half-started session (Ctrl-C while it starts) kills the browser.
    let c = tokio::select! {
        c = connect(settings, headed) => c?,
        _ = tokio::signal::ctrl_c() => return Ok(None),
    };
    let events = c.host.subscribe();
    let task_id = match start(&c.host) {
        Ok(id) => id,
        Err(e) => {
            c.close();
            return Err(e.into());
        }
    };
    let ended = follow(&c, events, &task_id, json, approve).await;
    c.close();
    Ok(Some(ended))
}

fn exit_code(outcome: Option<&Outcome>, interrupted: bool) -> ExitCode {
    match outcome {
        Some(Outcome::Done { success: true, .. }) => ExitCode::SUCCESS,
        _ if interrupted => ExitCode::from(130),
        _ => ExitCode::FAILURE,
    }
}

/// `errand recipe run`.
#[derive(Debug, Clone)]
pub struct RecipeRunArgs {
    pub name: String,
    pub params: Vec<(String, String)>,
    pub overrides: Overrides,
    pub json: bool,
    pub headed: bool,
    pub approve: bool,
    /// Write the repairs the model made into the recipe.
    pub accept_repairs: bool,
}

/// Replays a recipe as a task; exit status 0 when it was done.
pub async fn run_recipe(args: RecipeRunArgs) -> Result<ExitCode, CommandError> {
    use crate::memory::recipe::Recipe;
    let settings = Settings::load(&args.overrides)?;
    let data_dir = settings.data_dir.clone();
    let saved = Recipe::load(&data_dir, &args.name)?;
    let applied = saved.with_params(&args.params)?;
    let replay = crate::agent::replay::Replay { saved, applied };
    let ended = drive(settings, args.headed, args.json, args.approve, move |host| {
        host.start_recipe(replay, None)
    })
    .await?;
    let Some((outcome, interrupted)) = ended else { return Ok(interrupted_exit()) };
    if let Some(Ok(_)) = Recipe::proposed(&data_dir, &args.name) {
        if args.accept_repairs {
            Recipe::accept_proposed(&data_dir, &args.name)?;
            eprintln!("the repaired steps were written into the recipe `{}`", args.name);
        } else {
            eprintln!(
                "the model repaired steps of `{}`: `errand recipe accept {}` (or --accept-repairs) writes them into the recipe",
                args.name, args.name
            );
        }
    }
    Ok(exit_code(outcome.as_ref(), interrupted))
}

/// Prints the task's events until it ends (answering approvals); returns
/// its outcome and whether Ctrl-C stopped it.
async fn follow(
    c: &Connected,
    mut events: tokio::sync::broadcast::Receiver<crate::host::LocalEvent>,
    task_id: &str,
    json: bool,
    approve: bool,
) -> (Option<Outcome>, bool) {
    let task_id = task_id.to_owned();
    let args_json = json;
    let mut outcome = None;
    let mut interrupted = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    while outcome.is_none() {
        tokio::select! {
            ev = events.recv() => match ev {
                Ok(ev) if ev.task_id == task_id => {
                    term::event(&ev, args_json);
                    match ev.event {
                        TaskEvent::Finished { outcome: o } => outcome = Some(o),
                        TaskEvent::Approval { kind, site, .. } => {
                            let host = c.host.clone();
                            let id = task_id.clone();
                            tokio::spawn(async move {
                                let decision = if approve {
                                    crate::agent::Decision::Approved
                                } else {
                                    ask_approval(&kind, &site).await
                                };
                                if let Err(e) = host.decide(Some(&id), decision) {
                                    tracing::warn!("{e}");
                                }
                            });
                        }
                        _ => {}
                    }
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            },
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                eprintln!("stopping… (Ctrl-C again to quit at once)");
                let _ = c.host.stop_task(Some(&task_id));
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                });
            }
        }
    }
    (outcome, interrupted)
}

/// Asks on the terminal whether to approve an action (the event's lines
/// were printed): once, for this task (its kind on its site), always on
/// its site, or not; with no terminal nobody can be asked, which is no
/// rejection but not done either.
async fn ask_approval(kind: &str, site: &str) -> crate::agent::Decision {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "not done: nobody could be asked (no terminal; run with --approve to approve such actions)"
        );
        return crate::agent::Decision::Unasked;
    }
    let (kind, site) = (crate::text::printable(kind), crate::text::printable(site));
    let question = format!(
        "Approve? [y] once, [t] every {kind} on {site} in this task, [a] always {kind} on {site}, [N] no: "
    );
    let answer = tokio::task::spawn_blocking(move || {
        eprint!("{question}");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await;
    match answer {
        Ok(Ok(line)) => terminal_decision(&line),
        _ => crate::agent::Decision::Rejected,
    }
}

/// What a line typed at the approval question decides.
fn terminal_decision(line: &str) -> crate::agent::Decision {
    use crate::agent::Decision;
    match line.trim().to_lowercase().as_str() {
        "y" | "yes" | "once" => Decision::Approved,
        "t" | "task" => Decision::ApprovedForTask,
        "a" | "always" => Decision::ApprovedOnSite,
        _ => Decision::Rejected,
    }
}

#[cfg(test)]
mod approval_tests {
    use super::terminal_decision;
    use crate::agent::Decision;

    #[test]
    fn the_terminal_answers_approve_once_for_the_task_or_always() {
        assert_eq!(terminal_decision("y\n"), Decision::Approved);
        assert_eq!(terminal_decision(" YES "), Decision::Approved);
        assert_eq!(terminal_decision("t\n"), Decision::ApprovedForTask);
        assert_eq!(terminal_decision("always"), Decision::ApprovedOnSite);
        assert_eq!(terminal_decision("\n"), Decision::Rejected);
        assert_eq!(terminal_decision("sure"), Decision::Rejected);
    }
}

#[derive(Serialize)]
struct ObserveOutput<'a> {
    tab_id: i64,
    observation: &'a Observation,
    timings_ms: Timings,
    #[serde(skip_serializing_if = "Option::is_none")]
    screenshot: Option<&'a PathBuf>,
}

#[derive(Serialize)]
struct Timings {
    /// Opening the tab until it loaded.
    open: f64,
    /// The observation inside the page, as the content script measured it.
    observe_in_page: f64,
    /// Host → page → host for the observation.
    round_trip: f64,
}

/// Opens a page, prints the element list, optionally saves a screenshot.
pub async fn observe(args: ObserveArgs) -> Result<ExitCode, CommandError> {
    let settings = Settings::load(&Overrides::default())?;
    let work = async {
        let c = connect(settings, args.headed).await?;
        let result = observe_in(&c.host, &args).await;
        c.close();
        result
    };
    // On Ctrl-C the work is dropped, and with it the browser session.
    tokio::select! {
        r = work => r.map(|()| ExitCode::SUCCESS),
        _ = tokio::signal::ctrl_c() => Ok(interrupted_exit()),
    }
}

async fn observe_in(host: &Host, args: &ObserveArgs) -> Result<(), CommandError> {
    let t = Instant::now();
    let tab = host.open_tab(&args.url).await?;
    let open = ms(t);
    let t = Instant::now();
    let obs = host.observe(tab.tab_id, args.screenshot.is_some()).await?;
    let round_trip = ms(t);
    if let Some(path) = &args.screenshot {
        let data_url = host.capture(tab.tab_id).await?;
        let (_, b64) = data_url.split_once(";base64,").ok_or(CommandError::BadScreenshot)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|_| CommandError::BadScreenshot)?;
        std::fs::write(path, bytes)
            .map_err(|source| CommandError::WriteScreenshot { path: path.clone(), source })?;
    }
    if args.json {
        term::json(&ObserveOutput {
            tab_id: tab.tab_id,
            observation: &obs,
            timings_ms: Timings { open, observe_in_page: obs.elapsed_ms, round_trip },
            screenshot: args.screenshot.as_ref(),
        });
    } else {
        term::line(obs.text.trim_end());
        if let Some(path) = &args.screenshot {
            eprintln!("screenshot: {}", path.display());
        }
    }
    Ok(())
}

fn interrupted_exit() -> ExitCode {
    eprintln!("interrupted");
    ExitCode::from(130)
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

//! The command line (when the browser did not start us).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub mod commands;
#[cfg(unix)]
pub mod mcp;
pub mod memory;
pub mod recipe;
pub mod session;
pub mod term;

use crate::config::{self, Overrides};
use crate::setup::install::{self, Browser};
use crate::setup::{doctor, logging};
use commands::{ObserveArgs, RunArgs};

/// Errand: an AI agent that does errands in your own browser.
///
/// Chrome starts this program itself (native messaging) once `errand install`
/// registered it; the commands below are for the terminal.
#[derive(Debug, Parser)]
#[command(name = "errand", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Do a task in a fresh headless Chromium with the extension loaded.
    Run {
        /// What to do, in plain words.
        task: String,
        /// The page to start on.
        #[arg(long)]
        url: String,
        #[command(flatten)]
        model: ModelArgs,
        /// The most steps the agent may take.
        #[arg(long)]
        max_steps: Option<u32>,
        #[command(flatten)]
        follow: FollowArgs,
    },
    /// Open a page and print the numbered element list the model would see.
    Observe {
        url: String,
        /// Also save a JPEG of the visible part, with the marks drawn.
        #[arg(long, value_name = "FILE")]
        screenshot: Option<PathBuf>,
        /// Print the whole observation and timings as JSON.
        #[arg(long)]
        json: bool,
        /// Show the browser window.
        #[arg(long)]
        headed: bool,
    },
    /// Register the host with your browsers (Chrome, Chromium, Edge, Brave).
    Install {
        /// Only these browsers (repeat, or separate with commas).
        #[arg(long = "browser", value_enum, value_delimiter = ',')]
        browsers: Vec<Browser>,
    },
    /// Remove the registrations `install` wrote.
    Uninstall {
        #[arg(long = "browser", value_enum, value_delimiter = ',')]
        browsers: Vec<Browser>,
    },
    /// Check the installation, the settings, the database and the model.
    Doctor {
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Serve Errand's browser tools to an AI assistant over the Model
    /// Context Protocol (stdio; `--http` for streamable HTTP on 127.0.0.1).
    /// It drives your own browser through Errand's extension, or with
    /// `--launch` a headless Chromium of its own.
    #[cfg(unix)]
    Mcp {
        #[command(subcommand)]
        command: Option<mcp::McpCommand>,
        #[command(flatten)]
        args: mcp::McpArgs,
    },
    /// The profile for form filling: facts the agent may use, and secrets
    /// it fills without ever seeing them.
    Memory {
        #[command(subcommand)]
        command: memory::MemoryCommand,
    },
    /// Recipes: a finished task saved as steps, replayed without the model
    /// (`save`, `list`, `run NAME --param k=v`, `accept`).
    Recipe {
        #[command(subcommand)]
        command: recipe::RecipeCommand,
    },
}

/// How a task run from the terminal is shown and its approvals answered
/// (`errand run`, `errand recipe run`).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct FollowArgs {
    /// One JSON object per event; the last one is the outcome.
    #[arg(long)]
    pub json: bool,
    /// Show the browser window.
    #[arg(long)]
    pub headed: bool,
    /// Approve every action Errand would ask about (payments, orders,
    /// messages, deletions…) without asking. Without it, Errand asks on
    /// the terminal, or rejects them when there is none.
    #[arg(long)]
    pub approve: bool,
}

/// Model settings that override the config file and the environment.
#[derive(Debug, Clone, Default, Args)]
pub struct ModelArgs {
    /// The OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1.
    #[arg(long)]
    pub base_url: Option<String>,
    /// The model's name.
    #[arg(long)]
    pub model: Option<String>,
    /// The API key (prefer ERRAND_API_KEY or the config file: flags show in `ps`).
    #[arg(long)]
    pub api_key: Option<String>,
    /// The wire format: openai (default), anthropic or gemini.
    #[arg(long)]
    pub provider: Option<String>,
}

impl ModelArgs {
    pub(crate) fn overrides(&self, max_steps: Option<u32>) -> Overrides {
        Overrides {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            api_key: self.api_key.clone(),
            max_steps,
            timeout_secs: None,
            provider: self.provider.clone(),
        }
    }
}

/// Parses the command line and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = |name: &str| std::env::var(name).ok();
    let data_dir = config::dirs(&env).ok().map(|(_, d)| d);
    logging::init(data_dir.as_deref(), "warn");

    match cli.command {
        Command::Install { browsers } => match install::install(or_all(&browsers)) {
            Ok(written) => {
                for (browser, path) in written {
                    term::line(format!("{browser}: {}", path.display()));
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Uninstall { browsers } => match install::uninstall(or_all(&browsers)) {
            Ok(removed) => {
                for (browser, path, existed) in removed {
                    let what = if existed { "removed" } else { "was not there" };
                    term::line(format!("{browser}: {} {what}", path.display()));
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Doctor { model } => block_on(async move {
            #[allow(unused_mut)]
            let mut report = doctor::run(&model.overrides(None)).await;
            #[cfg(unix)]
            report.checks.extend(mcp::doctor_checks(data_dir.as_deref()));
            term::report(&report);
            Ok::<_, std::convert::Infallible>(if report.has_problems() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }),
        Command::Run {
            task,
            url,
            model,
            max_steps,
            follow: FollowArgs { json, headed, approve },
        } => {
            let args =
                RunArgs { task, url, overrides: model.overrides(max_steps), json, headed, approve };
            block_on(commands::run(args))
        }
        Command::Memory { command } => memory::main(command),
        Command::Recipe { command } => recipe::main(command),
        #[cfg(unix)]
        Command::Mcp { command, args } => block_on(mcp::main(args, command)),
        Command::Observe { url, screenshot, json, headed } => {
            block_on(commands::observe(ObserveArgs { url, screenshot, json, headed }))
        }
    }
}

fn or_all(browsers: &[Browser]) -> &[Browser] {
    if browsers.is_empty() { &Browser::ALL } else { browsers }
}

pub(crate) fn block_on<E: std::fmt::Display>(
    work: impl std::future::Future<Output = Result<ExitCode, E>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let result = runtime.block_on(work);
    runtime.shutdown_background();
    result.unwrap_or_else(fail)
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    term::note(format!("error: {e}"));
    ExitCode::FAILURE
}

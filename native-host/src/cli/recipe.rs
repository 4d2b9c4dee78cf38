//! `errand recipe`: save a finished task as a recipe, list recipes, replay
//! one without the model (`commands::run_recipe`), accept the repairs a
//! replay offered. The recipe file is [`crate::memory::recipe`]'s.

use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::ModelArgs;
use crate::cli::commands::{self, RecipeRunArgs};
use crate::cli::term;
use crate::config::{Overrides, Settings};
use crate::memory::recipe::Recipe;
use crate::memory::store::Store;

/// `errand recipe …`.
#[derive(Debug, Subcommand)]
pub enum RecipeCommand {
    /// Save a finished task's steps as a recipe (see `errand memory recall`
    /// or the side panel's History for task ids).
    Save {
        task_id: String,
        /// The recipe's name (letters, digits, `-`, `_`); by default made
        /// of the task's first words.
        #[arg(long)]
        name: Option<String>,
    },
    /// List the recipes with their parameters.
    List,
    /// Replay a recipe with no model (the model is asked only to repair a
    /// step the page changed under).
    Run {
        name: String,
        /// A parameter's value, `name=value` (repeat for more).
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Write the steps the model repaired into the recipe.
        #[arg(long)]
        accept_repairs: bool,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        follow: super::FollowArgs,
    },
    /// Write the repairs a replay offered into the recipe.
    Accept { name: String },
}

/// Runs `errand recipe`.
pub fn main(cmd: RecipeCommand) -> ExitCode {
    let result = match cmd {
        RecipeCommand::Run {
            name,
            params,
            accept_repairs,
            model,
            follow: super::FollowArgs { json, headed, approve },
        } => {
            let params = match parse_params(&params) {
                Ok(p) => p,
                Err(e) => return fail(e),
            };
            let args = RecipeRunArgs {
                name,
                params,
                overrides: model.overrides(None),
                json,
                headed,
                approve,
                accept_repairs,
            };
            return super::block_on(commands::run_recipe(args));
        }
        other => run(other),
    };
    match result {
        Ok(lines) => {
            for l in lines {
                term::line(l);
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    term::note(format!("errand: {e}"));
    ExitCode::FAILURE
}

/// `name=value` pairs.
pub fn parse_params(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => Err(format!("--param {p}: write it NAME=VALUE")),
        })
        .collect()
}

/// Runs a command other than `run`; returns the lines to print.
pub fn run(cmd: RecipeCommand) -> Result<Vec<String>, anyhow::Error> {
    let settings = Settings::load(&Overrides::default())?;
    let data_dir = &settings.data_dir;
    Ok(match cmd {
        RecipeCommand::Save { task_id, name } => {
            let store = Store::open_in(data_dir)?;
            let recipe = Recipe::from_task(&store, &task_id, name.as_deref())?;
            let path = recipe.save(data_dir)?;
            let mut lines = vec![format!(
                "saved the recipe `{}` ({} steps) to {}",
                recipe.name,
                recipe.steps.len(),
                path.display()
            )];
            lines.extend(param_lines(&recipe));
            lines.push(format!(
                "run it: errand recipe run {}{}",
                recipe.name,
                param_flags(&recipe)
            ));
            lines
        }
        RecipeCommand::List => {
            let all = Recipe::list(data_dir);
            if all.is_empty() {
                return Ok(vec!["no recipes yet: `errand recipe save TASK_ID`".to_owned()]);
            }
            let mut lines = Vec::new();
            for r in all {
                match r {
                    Ok(r) => {
                        let offered = match Recipe::proposed(data_dir, &r.name) {
                            Some(Ok(_)) => " (a repair is offered: `errand recipe accept`)",
                            _ => "",
                        };
                        lines.push(format!(
                            "{}: {} steps from {}{offered}",
                            r.name,
                            r.steps.len(),
                            r.start_url
                        ));
                        lines.push(format!("  {}", r.task));
                    }
                    Err(e) => lines.push(format!("(unreadable) {e}")),
                }
            }
            lines
        }
        RecipeCommand::Accept { name } => {
            let r = Recipe::accept_proposed(data_dir, &name)?;
            vec![format!("the repaired steps are now the recipe `{}`", r.name)]
        }
        RecipeCommand::Run { .. } => unreachable!("run is async: see main"),
    })
}

fn param_lines(r: &Recipe) -> Vec<String> {
    r.params
        .iter()
        .map(|p| format!("  parameter {{{}}} (recorded: {})", p.name, p.recorded))
        .collect()
}

fn param_flags(r: &Recipe) -> String {
    r.params.iter().map(|p| format!(" --param {}=…", p.name)).collect()
}

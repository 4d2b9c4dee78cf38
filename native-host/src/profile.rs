//! The user's profile for assisted form filling, and `errand memory`:
//! named facts (name, e-mail, phone, address…) in SQLite, given to the
//! model; secrets (passwords, card numbers) in [`crate::secrets`], never
//! given to the model.

use std::io::BufRead;
use std::process::ExitCode;

use clap::Subcommand;

use crate::config::{Overrides, Settings};
use crate::secrets::Secrets;
use crate::store::Store;
use crate::term;

/// `errand memory …`.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// List profile facts (with values) and secrets (names and sites only).
    List,
    /// Remember a fact the agent may use, e.g. `errand memory fact email ada@example.com`.
    Fact { name: String, value: String },
    /// Remember a secret, read from standard input (never from the command
    /// line), allowed only on the given sites.
    Secret {
        name: String,
        /// A site it may be filled on, like https://bank.example (repeat for more).
        #[arg(long = "origin", required = true)]
        origins: Vec<String>,
    },
    /// Forget a fact or a secret.
    Forget { name: String },
    /// Search past tasks and their answers.
    Recall { query: String },
}

/// Runs `errand memory`.
pub fn main(cmd: MemoryCommand) -> ExitCode {
    match run(cmd, &mut std::io::stdin().lock()) {
        Ok(lines) => {
            for l in lines {
                term::line(l);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("errand: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command; returns the lines to print.
pub fn run(cmd: MemoryCommand, stdin: &mut dyn BufRead) -> Result<Vec<String>, anyhow::Error> {
    let settings = Settings::load(&Overrides::default())?;
    let store = Store::open_in(&settings.data_dir)?;
    let mut secrets = Secrets::load(&settings.data_dir)?;
    let mut out = Vec::new();
    match cmd {
        MemoryCommand::List => {
            let facts = store.facts()?;
            let list = secrets.list();
            if facts.is_empty() && list.is_empty() {
                out.push(
                    "The profile is empty. Add facts with `errand memory fact NAME VALUE`.".into(),
                );
            }
            for (name, value) in facts {
                out.push(format!("fact   {name} = {value}"));
            }
            for (name, origins) in list {
                out.push(format!("secret {name} (only on {})", origins.join(", ")));
            }
        }
        MemoryCommand::Fact { name, value } => {
            store.set_fact(name.trim(), value.trim())?;
            out.push(format!("remembered the fact `{}`", name.trim()));
        }
        MemoryCommand::Secret { name, origins } => {
            let mut value = String::new();
            stdin.read_line(&mut value)?;
            let value = value.trim_end_matches(['\n', '\r']);
            if value.is_empty() {
                anyhow::bail!(
                    "no value on standard input: `echo VALUE | errand memory secret NAME --origin URL`"
                );
            }
            secrets.set(name.trim(), value, &origins)?;
            secrets.save()?;
            out.push(format!("remembered the secret `{}`", name.trim()));
        }
        MemoryCommand::Recall { query } => {
            let hits = store.recall(&query, None, 20)?;
            if hits.is_empty() {
                out.push(format!("no past task matches `{query}`"));
            }
            for (id, task, answer) in hits {
                out.push(format!("{id}  {task}  →  {answer}"));
            }
        }
        MemoryCommand::Forget { name } => {
            let fact = store.forget_fact(&name)?;
            let secret = secrets.forget(&name);
            if secret {
                secrets.save()?;
            }
            if !fact && !secret {
                anyhow::bail!("nothing named `{name}` in the profile");
            }
            out.push(format!("forgot `{name}`"));
        }
    }
    Ok(out)
}

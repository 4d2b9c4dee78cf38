//! `errand memory`: the profile and the past tasks from the terminal,
//! through the same functions as the side panel's profile requests
//! ([`crate::memory::profile`]).

use std::io::BufRead;
use std::process::ExitCode;

use clap::Subcommand;

use crate::cli::term;
use crate::config::{Overrides, Settings};
use crate::memory::profile::{forget, secrets_line, set_fact, set_secret, view};
use crate::memory::secrets::Secrets;
use crate::memory::store::Store;

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
        /// Let it go into any field of those sites (a user name, an IBAN),
        /// not only into password, one-time-code and card fields.
        #[arg(long)]
        any_field: bool,
    },
    /// Forget a fact or a secret.
    Forget { name: String },
    /// Search past tasks and their answers.
    Recall { query: String },
    /// List the approvals given "always on this site" (per kind of action:
    /// pay, delete, publish…).
    Approvals,
    /// Revoke the approvals given always on a site (all its kinds, or one).
    Revoke {
        site: String,
        #[arg(long)]
        kind: Option<String>,
    },
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
            term::note(format!("errand: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// Runs a command; returns the lines to print.
pub fn run(cmd: MemoryCommand, stdin: &mut dyn BufRead) -> Result<Vec<String>, anyhow::Error> {
    let settings = Settings::load(&Overrides::default())?;
    let store = Store::open_in(&settings.data_dir)?;
    let data_dir = settings.data_dir.as_path();
    let mut out = Vec::new();
    match cmd {
        MemoryCommand::List => {
            let profile = view(&store, data_dir)?;
            if profile.facts.is_empty() && profile.secrets.is_empty() {
                out.push(
                    "The profile is empty. Add facts with `errand memory fact NAME VALUE`.".into(),
                );
            }
            for f in profile.facts {
                out.push(format!("fact   {} = {}", f.name, f.value));
            }
            for s in profile.secrets {
                let fields = if s.any_field { "any field" } else { "secret fields only" };
                out.push(format!("secret {} (only on {}; {fields})", s.name, s.origins.join(", ")));
            }
            out.push(secrets_line(&Secrets::index(data_dir)?, settings.secrets_store));
        }
        MemoryCommand::Fact { name, value } => {
            let name = set_fact(&store, data_dir, &name, &value)?;
            out.push(format!("remembered the fact `{name}`"));
        }
        MemoryCommand::Secret { name, origins, any_field } => {
            let mut value = String::new();
            stdin.read_line(&mut value)?;
            let value = value.trim_end_matches(['\n', '\r']);
            if value.is_empty() {
                anyhow::bail!(
                    "no value on standard input: `echo VALUE | errand memory secret NAME --origin URL`"
                );
            }
            let name = set_secret(
                &store,
                data_dir,
                settings.secrets_store,
                &name,
                value,
                &origins,
                any_field,
            )?;
            let fields = if any_field { "any field" } else { "secret fields only" };
            out.push(format!("remembered the secret `{name}` ({fields})"));
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
        MemoryCommand::Approvals => {
            let grants = store.grants()?;
            if grants.is_empty() {
                out.push("No approvals given always on a site.".into());
            }
            for (site, kind, when) in grants {
                out.push(format!("always  {kind:<10} on {site}  (since {when})"));
            }
        }
        MemoryCommand::Revoke { site, kind } => {
            let site = crate::memory::store::site_of(site.trim());
            let n = store.revoke_grant(&site, kind.as_deref())?;
            out.push(match n {
                0 => format!("no approval was given always on {site}"),
                n => format!("revoked {n} approval(s) on {site}"),
            });
        }
        MemoryCommand::Forget { name } => {
            forget(&store, data_dir, &name)?;
            out.push(format!("forgot `{}`", name.trim()));
        }
    }
    Ok(out)
}

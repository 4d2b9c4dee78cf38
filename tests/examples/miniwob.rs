//! The MiniWoB++ evaluation: every task with a solver (or `--tasks`), five
//! seeds each (or `--seeds N`), through Errand's whole pipeline; prints a
//! markdown table (reward, steps, tokens, seconds, approvals) and writes it
//! with the raw figures to `target/bench/miniwob.{md,json}`. Actions the
//! host asks approval for (Send…) are approved in the side panel, as a user
//! would, and counted.
//!
//! With the scripted solvers (default; tokens counted with o200k):
//!   cargo run --release -p errand-e2e --example miniwob
//! With a real model (tokens as the provider reported them):
//!   cargo run --release -p errand-e2e --example miniwob -- \
//!       --provider openai --model gpt-4o-mini [--api-key K] [--base-url URL]
//! `--provider` is openai, anthropic, gemini or ollama (a local
//! OpenAI-compatible server at 127.0.0.1:11434/v1 unless `--base-url`); the
//! key is `--api-key`, else `ERRAND_API_KEY`, else `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY` or `GEMINI_API_KEY`. `--base-url` alone is an
//! OpenAI-compatible server.

use std::path::Path;

use anyhow::{Context, Result, bail};
use errand_e2e::miniwob::{Miniwob, ModelChoice, RealModel, report, solver};
use serde_json::json;

fn main() -> Result<()> {
    let mut tasks: Vec<String> = solver::TASKS.iter().map(|t| t.to_string()).collect();
    let mut seeds = 5u64;
    let (mut provider, mut base_url, mut model, mut api_key) = (None, None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--tasks" => tasks = value()?.split(',').map(str::to_owned).collect(),
            "--seeds" => seeds = value()?.parse().context("--seeds takes a number")?,
            "--provider" => provider = Some(value()?),
            "--base-url" => base_url = Some(value()?),
            "--model" => model = Some(value()?),
            "--api-key" => api_key = Some(value()?),
            other => bail!("unknown argument {other}; see the file's header for usage"),
        }
    }
    let choice = if provider.is_some() || base_url.is_some() || model.is_some() {
        ModelChoice::Real(RealModel {
            provider,
            base_url,
            model: model.context("--model is needed with a real provider")?,
            api_key,
        })
    } else {
        ModelChoice::Scripted
    };
    let rig = Miniwob::start(choice)?;
    let mut episodes = Vec::new();
    for task in &tasks {
        for seed in 1..=seeds {
            match rig.episode(task, seed) {
                Ok(e) => {
                    eprintln!(
                        "{task} seed {seed}: reward {:.2} ({}, {} steps, {} tokens, {:.1} s, {} approvals){}",
                        e.reward,
                        e.status,
                        e.steps,
                        e.tokens,
                        e.seconds,
                        e.approvals,
                        if e.success() {
                            String::new()
                        } else {
                            format!(" — Errand said {:?}", e.answer)
                        }
                    );
                    episodes.push(e);
                }
                Err(e) => eprintln!("{task} seed {seed}: the episode broke: {e:#}"),
            }
        }
    }
    let table = report(&episodes);
    #[allow(clippy::print_stdout)] // the report is this program's output
    {
        println!("{table}");
    }
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("miniwob.md"), &table)?;
    let raw: Vec<_> = episodes
        .iter()
        .map(|e| json!({"task": e.task, "seed": e.seed, "reward": e.reward, "raw_reward": e.raw_reward,
                        "reason": e.reason, "status": e.status, "steps": e.steps, "tokens": e.tokens,
                        "seconds": e.seconds, "approvals": e.approvals}))
        .collect();
    std::fs::write(out.join("miniwob.json"), serde_json::to_vec_pretty(&raw)?)?;
    Ok(())
}

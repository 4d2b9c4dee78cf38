//! What judging an action costs (issue 37): the gate asks the page what an
//! activating action would set off (`page {stakes}`) and the policy judges
//! it, before the action runs. This times, in the same Chromium run, on the
//! same page (`tests/fixtures/boundary/pay.html`, and the 1k-element
//! corpus-like page of the fixtures when present):
//!
//! - `stakes`: the `page {stakes}` round trip through the service worker's
//!   own relay (the host's path minus the native messaging hop, ~0.5 ms);
//! - `observe`: an observation of the same page through the same relay,
//!   for scale (every step makes one);
//! - `judge`: the host's policy over the stakes the page told (in process).
//!
//! ```text
//! bash scripts/build-extension.sh
//! cargo run -p errand-e2e --example bench_stakes -- [ROUNDS]
//! ```

use std::time::Instant;

use anyhow::{Context, Result};
use errand_e2e::browser::{LaunchOptions, TestBrowser};
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::stats::Summary;
use errand_protocol::{Action, Observation, Stakes};
use serde_json::json;

fn main() -> Result<()> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let server = FixtureServer::start()?;
    let browser =
        TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1").with_bench_env())?;
    let tab = browser.new_page(&server.url("/boundary/pay.html"))?;
    let cs = ContentScript::of(&browser, &tab)?;
    let obs: Observation = cs.observe(false)?;
    let button = obs.elements.iter().find(|e| e.name.contains("Pay")).context("no Pay button")?;
    let field = obs.elements.iter().find(|e| e.name.contains("Amount")).context("no field")?;
    let actions = [
        ("click", json!({"click": {"index": button.index}})),
        ("enter in a field", json!({"press": {"key": "Enter", "index": field.index}})),
    ];
    println!("| what | median ms | p10–p90 ms | n |");
    println!("| --- | --- | --- | --- |");
    for (name, action) in &actions {
        let mut ms = Vec::new();
        let mut last = None;
        for round in 0..=rounds {
            let started = Instant::now();
            let reply = cs.command(json!({"op": "stakes", "action": action}))?;
            let elapsed = started.elapsed().as_secs_f64() * 1000.0;
            if round > 0 {
                ms.push(elapsed);
            }
            last = Some(reply);
        }
        let reply = last.context("no reply")?;
        let stakes: Stakes = serde_json::from_value(reply["stakes"].clone())
            .with_context(|| format!("not a stakes reply: {reply}"))?;
        row(&format!("stakes: {name}"), &ms);
        // The policy over what the page told.
        let action: Action = serde_json::from_value(action.clone())?;
        let mut judge = Vec::new();
        for _ in 0..1000 {
            let started = Instant::now();
            let j = errand_host::agent::policy::judge(&action, None, Some(&stakes), &obs);
            judge.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(j.is_some(), "{name} must wait for the user: {stakes:?}");
        }
        row(&format!("judge: {name}"), &judge);
    }
    let mut observe = Vec::new();
    for round in 0..=rounds {
        let started = Instant::now();
        cs.observe(false)?;
        if round > 0 {
            observe.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    row("observe (for scale)", &observe);
    Ok(())
}

fn row(name: &str, ms: &[f64]) {
    let s = Summary::of(ms);
    println!("| {name} | {:.3} | {:.3}–{:.3} | {} |", s.median, s.p10, s.p90, ms.len());
}

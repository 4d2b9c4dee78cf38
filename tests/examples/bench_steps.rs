//! Non-model time per step: from the scripted model's answer to the next
//! request it gets — the host carrying out the answer's action through the
//! service worker and the content script (which waits for the page to
//! settle), then observing the page again (which waits until it has
//! settled, `extension/src/ready.rs`) and building the prompt. The model
//! answers at once, so the gap between two requests is what Errand spends.
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run -p errand-e2e --example bench_steps
//! ```
//!
//! Each page gets a task of 13 steps, each scrolling down or up one
//! screen (a still page: every step's observation walks again); the first
//! gap (the first page's observation) is left out. Pages: fixture pages
//! and three corpus pages (`../shared/corpus/`). Prints a markdown table.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use errand_e2e::browser::repo_root;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::rig::{Rig, answer};
use serde_json::json;

const STEPS: usize = 13;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() -> Result<()> {
    let root = repo_root();
    let corpus = FixtureServer::start_in(root.join("../shared/corpus"))?;
    let manifest = std::fs::read_to_string(root.join("../shared/corpus/MANIFEST.tsv"))?;
    let mut pages: Vec<(String, Option<String>)> = vec![
        ("fixture: actions/form.html".into(), None),
        ("fixture: observe/listeners.html".into(), None),
        ("fixture: observe/jqueryui.html".into(), None),
    ];
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() >= 5 && ["feedly-login", "kayak-pt", "ars-article"].contains(&cols[0]) {
            pages.push((cols[0].to_owned(), Some(cols[4].to_owned())));
        }
    }
    // (A stdout lock: `print_stdout` is denied workspace-wide.)
    let mut out = std::io::stdout().lock();
    writeln!(out, "| page | steps | non-model ms per step p50 | p90 |")?;
    writeln!(out, "|---|---:|---:|---:|")?;
    for (name, corpus_path) in pages {
        let times: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let sink = times.clone();
        let rig = Rig::start(move |_, call| {
            sink.lock().unwrap().push(Instant::now());
            if call + 1 < STEPS {
                let direction = if call % 2 == 0 { "down" } else { "up" };
                answer(json!([{"scroll": {"direction": direction}}]))
            } else {
                answer(json!([{"done": {"text": "done", "success": true}}]))
            }
        });
        let url = match &corpus_path {
            Some(p) => corpus.url(p),
            None => rig.fixtures.url(name.trim_start_matches("fixture: ")),
        };
        let tab = rig.browser.new_page(&url)?;
        if let Err(e) = rig.run_in(&tab, "scroll around") {
            eprintln!("{name}: {e:#}");
        }
        let t = times.lock().unwrap().clone();
        let mut gaps: Vec<f64> =
            t.windows(2).skip(1).map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0).collect();
        gaps.sort_by(f64::total_cmp);
        if gaps.is_empty() {
            writeln!(out, "| {name} | 0 | — | — |")?;
            continue;
        }
        writeln!(
            out,
            "| {name} | {} | {:.0} | {:.0} |",
            gaps.len(),
            percentile(&gaps, 0.5),
            percentile(&gaps, 0.9)
        )?;
    }
    Ok(())
}

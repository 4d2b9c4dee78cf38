//! How long the secret scrubber takes on the largest corpus page's
//! observation (`cargo run --release -p errand-e2e --example bench_scrub`).
//!
//! Observes the largest page of `../shared/corpus/` (by file size, from its
//! MANIFEST.tsv) with the real extension in real Chromium, builds the
//! scrubber the agent builds each step for 50 secrets (every encoded form
//! of each), one of them a value the page really shows, and times
//! `Scrubber::observation` (the text, the title, the URL and every
//! element's strings) and, for scale, one pass over the page's whole HTML.
//! Prints the median and the 90th percentile of 200 runs. The budget is
//! 5 ms per observation.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::content::ContentScript;
use errand_e2e::fixtures::FixtureServer;
use errand_host::scrub::Scrubber;

const RUNS: usize = 200;
const SECRETS: usize = 50;

fn main() -> Result<()> {
    let corpus_dir = repo_root().join("../shared/corpus");
    let manifest = std::fs::read_to_string(corpus_dir.join("MANIFEST.tsv"))
        .context("reading ../shared/corpus/MANIFEST.tsv")?;
    let (id, file, bytes) = manifest
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let file = (*cols.get(4)?).to_owned();
            let bytes = std::fs::metadata(corpus_dir.join(&file)).ok()?.len();
            Some((cols[0].to_owned(), file, bytes))
        })
        .max_by_key(|(_, _, bytes)| *bytes)
        .context("no page in the manifest")?;
    let html = String::from_utf8_lossy(&std::fs::read(corpus_dir.join(&file))?).into_owned();
    eprintln!("largest corpus page: {id} ({file}, {bytes} bytes)");

    let corpus = FixtureServer::start_in(corpus_dir)?;
    let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))?;
    let tab = browser.cdp().new_page(&corpus.url(&file))?;
    tab.wait_for(
        "document.readyState !== 'loading' && location.href !== 'about:blank'",
        Duration::from_secs(60),
    )?;
    let cs = ContentScript::of(&browser, &tab)?;
    let obs = cs.observe(false)?;
    let strings: usize = obs
        .elements
        .iter()
        .map(|e| {
            e.name.len()
                + e.value.as_ref().map_or(0, String::len)
                + e.target.as_ref().map_or(0, String::len)
        })
        .sum();
    eprintln!(
        "observation: {} bytes of text, {} elements ({strings} bytes of element strings)",
        obs.text.len(),
        obs.elements.len()
    );

    // 50 secrets with characters every encoding writes differently; the
    // last is a word the page shows, so replacing is timed too.
    let shown = obs
        .text
        .split_whitespace()
        .find(|w| w.len() >= 6 && w.chars().all(char::is_alphanumeric))
        .unwrap_or("Password")
        .to_owned();
    let mut secrets: Vec<(String, String)> = (0..SECRETS - 1)
        .map(|i| (format!("s{i}"), format!("pw {i}&\"x<{}>ü{}", i * 7919, "k".repeat(i % 13))))
        .collect();
    secrets.push(("shown".to_owned(), shown.clone()));
    let t = Instant::now();
    let scrubber = Scrubber::new(secrets.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let build_ms = t.elapsed().as_secs_f64() * 1000.0;
    let patterns: usize = secrets.iter().map(|(_, v)| errand_host::scrub::forms(v).len()).sum();

    eprintln!("'…' in the text: {}", obs.text.matches('…').count());
    let mut text_only = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let out = scrubber.text(&obs.text);
        text_only.push(t.elapsed().as_secs_f64() * 1000.0);
        drop(out);
    }
    let mut observation = Vec::with_capacity(RUNS);
    let mut whole_html = Vec::with_capacity(RUNS);
    let mut replaced = 0;
    for _ in 0..RUNS {
        let mut copy = obs.clone();
        let t = Instant::now();
        scrubber.observation(&mut copy);
        observation.push(t.elapsed().as_secs_f64() * 1000.0);
        replaced = copy.text.matches("{{secret:shown}}").count();
        let t = Instant::now();
        let out = scrubber.text(&html);
        whole_html.push(t.elapsed().as_secs_f64() * 1000.0);
        drop(out);
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() * 9 / 10])
    };
    let (obs_median, obs_max) = stats(&mut observation);
    let (html_median, html_max) = stats(&mut whole_html);
    let (text_median, text_max) = stats(&mut text_only);
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "page\t{id}\t{bytes} bytes\t{} elements", obs.elements.len())?;
    writeln!(
        out,
        "secrets\t{SECRETS}\t{patterns} patterns (every form of each)\tautomaton built in {build_ms:.2} ms"
    )?;
    writeln!(
        out,
        "observation\tmedian {obs_median:.3} ms\tp90 {obs_max:.3} ms\t({replaced} occurrences of {shown:?} replaced)"
    )?;
    writeln!(out, "text only\tmedian {text_median:.3} ms\tp90 {text_max:.3} ms")?;
    writeln!(out, "whole HTML\tmedian {html_median:.3} ms\tp90 {html_max:.3} ms")?;
    Ok(())
}

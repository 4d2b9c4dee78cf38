//! Where a cold first walk's time goes: V8's sampling profiler on a fresh
//! tab of the generated 1k-element page (not driven, observed once still),
//! then the same tab observed again with a full walk (the code warm), then
//! navigated to another page of the same site and observed at `complete`
//! (a task's next page: a new instance in the same renderer process).
//! Prints self time by function for each, and writes each profile to
//! `target/bench/load-pages/profile-ROUND-LABEL.cpuprofile`. `PROFILE_PAGE`
//! names another page (`csp/gen-1k.html`: the JS build, its import included
//! in the cold observation).
//!
//! ```text
//! cargo run -p errand-e2e --example profile_first [-- ROUNDS]
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::cdp::Page;
use errand_e2e::fixtures::FixtureServer;
use serde_json::{Value, json};

fn page_1k() -> String {
    errand_e2e::fixtures::generated_page(100)
}

fn self_times(profile: &Value) -> Vec<(String, f64)> {
    let nodes = profile["nodes"].as_array().cloned().unwrap_or_default();
    let mut by_id: HashMap<u64, String> = HashMap::new();
    for n in &nodes {
        let f = &n["callFrame"];
        let url = f["url"].as_str().unwrap_or("");
        let file = url.rsplit('/').next().unwrap_or("");
        let name = f["functionName"].as_str().unwrap_or("");
        by_id.insert(n["id"].as_u64().unwrap_or(0), format!("{name} [{file}]"));
    }
    let samples = profile["samples"].as_array().cloned().unwrap_or_default();
    let deltas = profile["timeDeltas"].as_array().cloned().unwrap_or_default();
    let mut acc: HashMap<String, f64> = HashMap::new();
    // Each sample's time is the next delta.
    for (i, s) in samples.iter().enumerate() {
        let dt = deltas.get(i + 1).and_then(Value::as_f64).unwrap_or(0.0) / 1000.0;
        let name = by_id.get(&s.as_u64().unwrap_or(0)).cloned().unwrap_or_default();
        *acc.entry(name).or_default() += dt;
    }
    let mut v: Vec<_> = acc.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// One observation of the tab under V8's sampling profiler: prints the
/// answer's times and the self time by function, and writes the profile
/// (`profile-ROUND-LABEL.cpuprofile`: Chromium DevTools' Performance panel
/// opens it, as does any `.cpuprofile` reader).
fn profiled(
    tab: &Page,
    sw: &Page,
    tab_id: &Value,
    full: bool,
    pages: &Path,
    round: usize,
    label: &str,
) -> Result<()> {
    tab.call("Profiler.enable", json!({}))?;
    tab.call("Profiler.setSamplingInterval", json!({"interval": 100}))?;
    tab.call("Profiler.start", json!({}))?;
    let answer = sw.eval(&format!(
        "(async () => {{
           const msg = await globalThis.errandToTab({{ v: 1, id: 1, kind: 'page', tab_id: {tab_id}, command: {{ op: 'observe', marks: false, full: {full} }} }});
           const t = performance.now();
           const a = await chrome.tabs.sendMessage({tab_id}, msg, {{ frameId: 0 }});
           return {{ total: performance.now() - t, walk: a.ok?.elapsed_ms, build: a.ok?.build }};
         }})()"
    ))?;
    let profile = tab.call("Profiler.stop", json!({}))?;
    let name = format!("profile-{round}-{}.cpuprofile", label.replace(' ', "-"));
    std::fs::write(pages.join(name), profile["profile"].to_string())?;
    println!("\n== round {round} {label}: {answer}");
    let times = self_times(&profile["profile"]);
    let total: f64 = times.iter().map(|t| t.1).sum();
    println!("   sampled {total:.1} ms");
    for (name, t) in times.iter().take(45) {
        println!("   {t:7.2}  {name}");
    }
    Ok(())
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let root = repo_root();
    let pages = root.join("target/bench/load-pages");
    std::fs::create_dir_all(&pages)?;
    std::fs::write(pages.join("gen-1k.html"), page_1k())?;
    std::fs::write(pages.join("gen-1k-next.html"), errand_e2e::fixtures::generated_page_next(100))?;
    let server = FixtureServer::start_in(pages.clone())?;
    let browser =
        TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1").with_bench_env())?;
    let path = std::env::var("PROFILE_PAGE").unwrap_or_else(|_| "gen-1k.html".into());
    for round in 0..rounds {
        let url = server.url(&format!("/{path}?round={round}"));
        let tab = browser.cdp().new_page(&url)?;
        tab.wait_for("document.readyState === 'complete'", Duration::from_secs(30))?;
        std::thread::sleep(Duration::from_millis(800));
        let sw = browser.service_worker()?;
        let tab_id = sw.eval(&format!(
            "chrome.tabs.query({{}}).then(ts => ts.find(t => t.url === {u}).id)",
            u = json!(url)
        ))?;
        for (label, full) in [("cold", false), ("warm full", true), ("warm full again", true)] {
            profiled(&tab, &sw, &tab_id, full, &pages, round, label)?;
        }
        // The tab navigated to the next page, observed at `complete`.
        let next = server.url(&format!("/gen-1k-next.html?round={round}"));
        tab.eval(&format!("location.href = {}; 0", json!(next)))?;
        tab.wait_for(
            &format!("location.href === {} && document.readyState === 'complete'", json!(next)),
            Duration::from_secs(30),
        )?;
        profiled(&tab, &sw, &tab_id, false, &pages, round, "navigated")?;
        let _ = browser.cdp().call("Target.closeTarget", json!({"targetId": tab.target_id}), None);
    }
    Ok(())
}

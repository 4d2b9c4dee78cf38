//! The messaging benchmark: round trips between the side panel and the
//! native host — panel port → service worker → native messaging → the real
//! `errand` host → native messaging (in `chunk`s over 1 MiB) → service worker
//! → panel — against the Chrome DevTools Protocol round trip that
//! browser-use and Playwright drive the browser with (`Runtime.evaluate`
//! over the DevTools pipe), both in the same Chromium run.
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run -p errand-e2e --example bench_messaging
//! ```
//!
//! Each size: a few warm-up round trips, then `reps` timed ones. Errand's
//! times are taken in the panel page (`performance.now()` around each
//! `ping`/`pong`), the reference's by the driver around each CDP call.
//! Writes `target/bench/messaging.{json,md}` and prints the markdown table.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::cdp::Page;
use errand_e2e::side_panel::panel_url;
use errand_e2e::stats::{Summary, show_json};
use serde_json::{Value, json};

/// (name, bytes sent, bytes answered, repetitions).
const CASES: &[(&str, usize, usize, usize)] = &[
    ("empty", 0, 0, 100),
    ("10 KB up", 10_000, 0, 50),
    ("100 KB up", 100_000, 0, 30),
    ("1 MB up", 1_000_000, 0, 15),
    ("10 KB down", 0, 10_000, 50),
    ("100 KB down", 0, 100_000, 30),
    ("900 KB down", 0, 900_000, 15),
    ("4 MiB down (chunked)", 0, 4 * 1_048_576, 10),
    ("16 MiB down (chunked)", 0, 16 * 1_048_576, 5),
];
const WARM_UP: usize = 3;

fn main() -> Result<()> {
    let out_dir = repo_root().join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))?;
    let panel = browser.cdp().new_page(&panel_url())?;
    panel.wait_for(
        "document.querySelector('#host')?.dataset.state === 'connected'",
        std::time::Duration::from_secs(20),
    )?;
    // The reference's page: an ordinary tab.
    let tab = browser.new_page("about:blank")?;

    let mut rows = Vec::new();
    for &(name, up, down, reps) in CASES {
        eprintln!("== {name}");
        let errand = errand_round_trips(&panel, up, down, reps)?;
        let cdp = cdp_round_trips(&tab, up, down, reps)?;
        rows.push(json!({
            "case": name, "bytes_up": up, "bytes_down": down,
            "errand": errand.to_json(), "cdp": cdp.to_json(),
            "ratio": errand.median / cdp.median,
        }));
    }

    let report = json!({
        "machine": machine(),
        "chromium": browser.cdp().call("Browser.getVersion", json!({}), None)?["product"],
        "cases": rows,
    });
    std::fs::write(out_dir.join("messaging.json"), serde_json::to_string_pretty(&report)?)?;
    let table = table(&report["cases"]);
    std::fs::write(out_dir.join("messaging.md"), &table)?;
    // The table is the command's output (stdout), for BENCHMARKS.md.
    {
        use std::io::Write;
        writeln!(std::io::stdout().lock(), "{table}")?;
    }
    eprintln!("wrote target/bench/messaging.{{json,md}}");
    Ok(())
}

/// Times `reps` ping/pong round trips from the panel page over a port of
/// its own, as the side panel talks to the host. One evaluation per round
/// trip (each timed inside the page), so a slow one never outlasts a CDP
/// call's timeout.
fn errand_round_trips(panel: &Page, up: usize, down: usize, reps: usize) -> Result<Summary> {
    panel.eval(
        "globalThis.benchPing ??= (() => {
           const port = chrome.runtime.connect({ name: 'panel' });
           // Ids far from the panel's own, whose port sees these replies too.
           let id = 1e9;
           return (up, down) => new Promise((done, fail) => {
             const my = ++id;
             const pad = 'p'.repeat(up);
             const timer = setTimeout(() => fail(new Error('no pong in 25 s')), 25000);
             const on = (m) => {
               if (m?.re !== my) return;
               port.onMessage.removeListener(on);
               clearTimeout(timer);
               if (m.kind !== 'pong') fail(new Error(JSON.stringify(m).slice(0, 300)));
               else if (m.data.length !== down) fail(new Error('pong of ' + m.data.length + ' bytes'));
               else done(performance.now() - t);
             };
             port.onMessage.addListener(on);
             const t = performance.now();
             port.postMessage({ v: 1, id: my, kind: 'ping', pad, reply_bytes: down });
           });
         })(), true",
    )?;
    let mut times = Vec::new();
    for i in 0..WARM_UP + reps {
        let ms = panel.eval(&format!("benchPing({up}, {down})"))?;
        let ms = ms.as_f64().context("the panel's round trip is not a number")?;
        if i >= WARM_UP {
            times.push(ms);
        }
    }
    Ok(Summary::of(&times))
}

/// Times `reps` DevTools round trips carrying the same payloads: an
/// expression with `up` bytes in it, answered with `down` bytes by value.
fn cdp_round_trips(
    tab: &errand_e2e::cdp::Page,
    up: usize,
    down: usize,
    reps: usize,
) -> Result<Summary> {
    let expr = format!("('{}', 'x'.repeat({down}))", "p".repeat(up));
    let mut times = Vec::new();
    for i in 0..WARM_UP + reps {
        let t = Instant::now();
        let v = tab.eval(&expr)?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if v.as_str().map(str::len) != Some(down) {
            bail!("the DevTools answer is not {down} bytes");
        }
        if i >= WARM_UP {
            times.push(ms);
        }
    }
    Ok(Summary::of(&times))
}

/// What the figures were measured on.
fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    json!({"cpu": cpu, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)})
}

fn table(cases: &Value) -> String {
    let mut t = String::from(
        "| payload | Errand panel ↔ host, ms: median (p10–p90) | CDP Runtime.evaluate, ms | Errand / CDP | n |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
    );
    for c in cases.as_array().into_iter().flatten() {
        let s = |k: &str| show_json(&c[k]);
        t.push_str(&format!(
            "| {} | {} | {} | {:.2} | {} |\n",
            c["case"].as_str().unwrap_or(""),
            s("errand"),
            s("cdp"),
            c["ratio"].as_f64().unwrap_or(f64::NAN),
            c["errand"]["n"]
        ));
    }
    t
}

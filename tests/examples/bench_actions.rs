//! The action benchmark: how long an action takes from being sent to
//! having its (verified) effect — click, fill, select_option and a ten-field
//! form from one model answer — for Errand and for the reference, in the
//! same Chromium run, on the same page (`tests/fixtures/actions/bench.html`).
//!
//! ```text
//! bash scripts/build-extension.sh && cargo build -p errand-host
//! cargo run -p errand-e2e --example bench_actions
//! ```
//!
//! - *Errand*: a real task from the side panel, the scripted model answering
//!   ten actions at a time; each action timed by the host
//!   (the stored step records' `ms`, `native-host/src/agent/actions.rs`: from sending
//!   `page {act}` through the service worker to the content script, which
//!   acts, waits for the page to settle and reports the effect, until the
//!   host has it).
//! - *Reference*: browser-use 0.5.11's way of doing the same actions —
//!   Playwright attached over the DevTools protocol, with browser-use's
//!   sequence per action (`tests/bench/reference_actions.mjs`);
//!   playwright-core is installed from npm into `.tools/playwright`, never
//!   committed. It runs twice, once before Errand's task and once after
//!   it, and its times are the two runs' together: on a shared machine the
//!   load changes from minute to minute, and both sides are then timed
//!   across the same minutes (the ten-field form: the mean of its two sums).
//!
//! Writes `target/bench/actions.{json,md}` and prints the markdown table.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::model::{Reply, ScriptedModel};
use errand_e2e::rig::{Rig, action_times, answer, element_by_label as el};
use errand_e2e::stats::{Summary, short, show_json};
use serde_json::{Value, json};

const PLAYWRIGHT: &str = "playwright-core@1.65.1";

fn main() -> Result<()> {
    let root = repo_root();
    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    let playwright = playwright(&root)?;

    let model = ScriptedModel::start(bench_script)?;
    let fixtures = FixtureServer::start()?;
    let mut opts = LaunchOptions::new(model.base_url());
    // A DevTools port besides the test driver's pipe, for Playwright.
    opts.args.push("--remote-debugging-port=0".into());
    let browser = TestBrowser::launch(opts)?;
    let rig = Rig { browser, model, fixtures };

    // The reference runs in the same browser once before Errand's task and
    // once after it: the machine's load drifts from minute to minute (other
    // builds on the shared machine), and both sides are then timed across
    // the same minutes. Its times are the two runs' together.
    let before = reference_run(&rig, &root, &playwright)?;

    // Errand.
    let (tab, _records) = rig.run("/actions/bench.html", "Benchmark")?;
    let taps = tab.eval("document.getElementById('tap').dataset.n")?;
    ensure!(taps == "50", "Errand tapped {taps} times instead of 50");
    let times = action_times(&rig);
    ensure!(times.len() == 160 && times.iter().all(|t| t.1), "Errand's actions: {times:?}");
    let of = |name: &str, range: std::ops::Range<usize>| -> Vec<f64> {
        times[range].iter().filter(|t| t.0 == name).map(|t| t.2).collect()
    };
    let errand = json!({
        "click": of("click", 0..50),
        "fill": of("fill", 50..100),
        "select_option": of("select_option", 100..150),
        "form": of("fill", 150..160),
    });

    let after = reference_run(&rig, &root, &playwright)?;
    let mut reference = json!({});
    for key in ["click", "fill", "select_option"] {
        let both: Vec<f64> = [&before, &after]
            .iter()
            .map(|r| numbers(&r[key]))
            .collect::<Result<Vec<_>>>()?
            .concat();
        reference[key] = json!(both);
    }
    reference["form_before"] = before["form"].clone();
    reference["form_after"] = after["form"].clone();
    let reference = &reference;

    let mut rows = Vec::new();
    for (key, name) in [
        ("click", "click (a button whose handler changes the page)"),
        ("fill", "fill (text, textarea, email, number)"),
        ("select_option", "select_option (a `<select>`)"),
    ] {
        let e = Summary::of(&numbers(&errand[key])?);
        let r = Summary::of(&numbers(&reference[key])?);
        rows.push(json!({"action": name, "errand": e.to_json(), "reference": r.to_json(),
                         "ratio": e.median / r.median}));
    }
    let sum = |v: &Value| -> Result<f64> { Ok(numbers(v)?.iter().sum()) };
    // The form: the mean of the reference's two runs.
    let rf = (sum(&reference["form_before"])? + sum(&reference["form_after"])?) / 2.0;
    let ef = sum(&errand["form"])?;
    let report = json!({
        "actions": rows,
        "form": {"errand_ms": ef, "reference_ms": rf, "ratio": ef / rf},
        "raw": {"errand": errand, "reference": reference},
        "playwright": PLAYWRIGHT,
    });
    std::fs::write(out_dir.join("actions.json"), serde_json::to_string_pretty(&report)?)?;
    let table = table(&report);
    std::fs::write(out_dir.join("actions.md"), &table)?;
    {
        use std::io::Write;
        writeln!(std::io::stdout().lock(), "{table}")?;
    }
    eprintln!("wrote target/bench/actions.{{json,md}}");
    Ok(())
}

/// One run of the reference (`tests/bench/reference_actions.mjs`) on a
/// new tab of the rig's browser: its times (ms) by action.
fn reference_run(rig: &Rig, root: &Path, playwright: &Path) -> Result<Value> {
    let port = std::fs::read_to_string(rig.browser.dir().join("profile/DevToolsActivePort"))
        .context("reading the browser's DevToolsActivePort")?;
    let port = port.lines().next().unwrap_or("").trim().to_owned();
    let out = Command::new("node")
        .arg(root.join("tests/bench/reference_actions.mjs"))
        .arg(playwright)
        .arg(format!("http://127.0.0.1:{port}"))
        .arg(rig.fixtures.url("/actions/bench.html"))
        .output()
        .context("running node")?;
    if !out.status.success() {
        bail!("the reference run failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let reference: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!("the reference's output: {}", String::from_utf8_lossy(&out.stdout))
    })?;
    ensure!(
        reference["taps"] == 51,
        "the reference tapped {} times instead of 51",
        reference["taps"]
    );
    Ok(reference["times"].clone())
}

/// playwright-core's folder, installed from npm into `.tools/playwright`
/// when missing.
fn playwright(root: &Path) -> Result<std::path::PathBuf> {
    let prefix = root.join(".tools/playwright");
    let dir = prefix.join("node_modules/playwright-core");
    if !dir.join("index.mjs").is_file() {
        eprintln!("installing {PLAYWRIGHT} from npm into .tools/playwright");
        std::fs::create_dir_all(&prefix)?;
        if !prefix.join("package.json").is_file() {
            std::fs::write(prefix.join("package.json"), "{\"private\": true}\n")?;
        }
        let ok = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
            .arg(&prefix)
            .arg(PLAYWRIGHT)
            .status()?
            .success();
        ensure!(ok, "npm could not install {PLAYWRIGHT}");
    }
    Ok(dir)
}

fn numbers(v: &Value) -> Result<Vec<f64>> {
    v.as_array()
        .context("expected a list of times")?
        .iter()
        .map(|x| x.as_f64().context("a time that is not a number"))
        .collect()
}

fn table(report: &Value) -> String {
    let s = show_json;
    let mut t = String::from(
        "| action | Errand, ms: median (p10–p90) | reference (browser-use's Playwright calls), ms | Errand / reference | n (Errand / reference) |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
    );
    for r in report["actions"].as_array().into_iter().flatten() {
        t.push_str(&format!(
            "| {} | {} | {} | {:.2} | {} / {} |\n",
            r["action"].as_str().unwrap_or(""),
            s(&r["errand"]),
            s(&r["reference"]),
            r["ratio"].as_f64().unwrap_or(f64::NAN),
            r["errand"]["n"],
            r["reference"]["n"],
        ));
    }
    let f = &report["form"];
    t.push_str(&format!(
        "| a ten-field form from one answer (sum of its ten fills) | {} | {} | {:.2} | 1 / 2 |\n",
        short(f["errand_ms"].as_f64().unwrap_or(f64::NAN)),
        short(f["reference_ms"].as_f64().unwrap_or(f64::NAN)),
        f["ratio"].as_f64().unwrap_or(f64::NAN),
    ));
    t
}

/// The scripted model: 50 clicks, 50 fills, 50 selects (ten per answer),
/// then a ten-field form from one answer.
fn bench_script(req: &Value, call: usize) -> Reply {
    let fields = |value: &str| -> Vec<Value> {
        (1..=10)
            .map(|i| {
                let v = if i == 9 {
                    format!("{value}@example.com")
                } else if i == 10 {
                    "42".to_owned()
                } else {
                    value.to_owned()
                };
                json!({"fill": {"index": el(req, &format!("Field{i:02}")), "text": v}})
            })
            .collect()
    };
    match call {
        // 50 clicks, 50 fills, 50 selects, ten per answer.
        0..=4 => answer(json!(vec![json!({"click": {"index": el(req, "Tapper")}}); 10])),
        5..=9 => answer(json!(fields(&format!("v{call}")))),
        10..=14 => answer(json!(
            (0..10)
                .map(|i| {
                    // Each answer differs (the loop detector stops a task
                    // that repeats itself on an unchanged page).
                    let pick = ["One", "Two", "Three"][(i + call) % 3];
                    json!({"select_option": {"index": el(req, "Picker"), "options": [pick]}})
                })
                .collect::<Vec<_>>()
        )),
        // The ten-field form, from one answer.
        15 => answer(json!(fields("form"))),
        16 => answer(json!([{"done": {"text": "benchmarked", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

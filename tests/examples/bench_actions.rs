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
//!   the actions; each action timed by the host
//!   (the stored step records' `ms`, `native-host/src/agent/actions.rs`: from sending
//!   `page {act}` through the service worker to the content script, which
//!   acts, waits for the page to settle and reports the effect, until the
//!   host has it).
//! - *Reference*: browser-use 0.5.11's way of doing the same actions —
//!   Playwright attached over the DevTools protocol, with browser-use's
//!   sequence per action (`tests/bench/reference_actions.mjs`);
//!   playwright-core is installed from npm into `.tools/playwright`, never
//!   committed.
//!
//! The two are interleaved action by action: the scripted model answers
//! one action per step, and before answering it has the reference do its
//! action of the same number on its own page (a window of its own), so
//! that Errand's select *i* and the reference's select *i* run next to
//! each other — the reference first for even *i*, Errand first for odd *i*
//! (its action then runs at the next model call) — and a change in the
//! shared machine's load falls on both. Each kind is reported as the ratio of the medians and as the
//! median (p10–p90) of the pairs' ratios. Every action of either side
//! starts after [`QUIET`] in which neither side does anything (a real
//! model's answer takes longer). The ten-field form is one answer;
//! the reference fills its form once before it and once after it (the
//! mean of the two sums).
//!
//! `--batched`: the method before (issue 24's third pass), for comparison:
//! Errand's task answering ten actions per step, the reference's whole
//! sequence run once before it and once after it, their times together.
//!
//! Writes `target/bench/actions.{json,md}` and prints the markdown table.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use errand_e2e::browser::{LaunchOptions, TestBrowser, repo_root};
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::model::{Reply, ScriptedModel};
use errand_e2e::rig::{Rig, action_times, answer, element_by_label as el};
use errand_e2e::stats::{Summary, short, show_json};
use serde_json::{Value, json};

const PLAYWRIGHT: &str = "playwright-core@1.65.1";

/// The actions, numbered as both sides do them: 50 clicks, 50 fills (the
/// ten fields five times over), 50 selects, then the ten-field form.
const CLICKS: usize = 50;
const PAIRS: usize = 150;
/// The quiet before every action of either side: the scripted model answers
/// at once, where a real model takes longer than this, so without it an
/// action ran while the other side's last action, or Errand's own
/// background work of the step (the side panel drawing it, the step
/// stored), was still going. Without it the reference's action just after
/// Errand's step took 1.2–3.5× its time in the other pairs (select 17–86 ms
/// against 12–24), and Errand's action just after its own observation
/// 0.8–1.8× (mostly 1.1–1.5×) its time in the pairs where it came after
/// a quiet.
const QUIET: Duration = Duration::from_millis(150);

fn main() -> Result<()> {
    let batched = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--batched") => true,
        Some(other) => bail!("unknown argument {other:?} (expected nothing or --batched)"),
    };
    let root = repo_root();
    let out_dir = root.join("target/bench");
    std::fs::create_dir_all(&out_dir)?;
    let playwright = playwright(&root)?;

    let pairing = Arc::new(Mutex::new(Pairing::default()));
    let model = if batched {
        ScriptedModel::start(batched_script)?
    } else {
        let pairing = Arc::clone(&pairing);
        ScriptedModel::start(move |req, call| interleaved_script(&pairing, req, call))?
    };
    let fixtures = FixtureServer::start()?;
    let mut opts = LaunchOptions::new(model.base_url());
    // A DevTools port besides the test driver's pipe, for Playwright.
    opts.args.push("--remote-debugging-port=0".into());
    // One action per step: 152 steps, and their model calls' tokens.
    for (k, v) in [
        ("ERRAND_MAX_STEPS", "200"),
        ("ERRAND_MAX_TOKENS", "100000000"),
        ("ERRAND_MAX_COST_USD", "1000"),
    ] {
        opts.env.push((k.into(), v.into()));
    }
    let browser = TestBrowser::launch(opts)?;
    let rig = Rig { browser, model, fixtures };

    let (errand, reference) = if batched {
        batched_run(&rig, &root, &playwright)?
    } else {
        interleaved_run(&rig, &root, &playwright, &pairing)?
    };
    let reference = &reference;

    let mut rows = Vec::new();
    for (key, name) in [
        ("click", "click (a button whose handler changes the page)"),
        ("fill", "fill (text, textarea, email, number)"),
        ("select_option", "select_option (a `<select>`)"),
    ] {
        let (ev, rv) = (numbers(&errand[key])?, numbers(&reference[key])?);
        let (e, r) = (Summary::of(&ev), Summary::of(&rv));
        let mut row = json!({"action": name, "errand": e.to_json(), "reference": r.to_json(),
                             "ratio": e.median / r.median});
        if !batched {
            let ratios: Vec<f64> = ev.iter().zip(&rv).map(|(e, r)| e / r).collect();
            row["pair_ratio"] = Summary::of(&ratios).to_json();
        }
        rows.push(row);
    }
    let sum = |v: &Value| -> Result<f64> { Ok(numbers(v)?.iter().sum()) };
    // The form: the mean of the reference's two.
    let rf = (sum(&reference["form_before"])? + sum(&reference["form_after"])?) / 2.0;
    let ef = sum(&errand["form"])?;
    let report = json!({
        "method": if batched { "batched" } else { "interleaved" },
        "actions": rows,
        "form": {"errand_ms": ef, "reference_ms": rf, "ratio": ef / rf},
        "raw": {"errand": errand, "reference": reference},
        "playwright": PLAYWRIGHT,
    });
    std::fs::write(out_dir.join("actions.json"), serde_json::to_string_pretty(&report)?)?;
    let table = table(&report);
    std::fs::write(out_dir.join("actions.md"), &table)?;
    writeln!(std::io::stdout().lock(), "{table}")?;
    eprintln!("wrote target/bench/actions.{{json,md}}");
    Ok(())
}

/// Errand's times by kind from the task's stored records (160 actions:
/// the clicks, fills, selects, then the form's ten fills).
fn errand_times(rig: &Rig) -> Result<Value> {
    let times = action_times(rig);
    ensure!(times.len() == 160 && times.iter().all(|t| t.1), "Errand's actions: {times:?}");
    let of = |name: &str, range: std::ops::Range<usize>| -> Vec<f64> {
        times[range].iter().filter(|t| t.0 == name).map(|t| t.2).collect()
    };
    Ok(json!({
        "click": of("click", 0..50),
        "fill": of("fill", 50..100),
        "select_option": of("select_option", 100..150),
        "form": of("fill", 150..160),
    }))
}

/// The method before: the reference's whole sequence once before Errand's
/// task (ten actions per answer) and once after it, its times the two
/// runs' together.
fn batched_run(rig: &Rig, root: &Path, playwright: &Path) -> Result<(Value, Value)> {
    let before = reference_run(rig, root, playwright)?;
    let (tab, _records) = rig.run("/actions/bench.html", "Benchmark")?;
    let taps = tab.eval("document.getElementById('tap').dataset.n")?;
    ensure!(taps == "50", "Errand tapped {taps} times instead of 50");
    let errand = errand_times(rig)?;
    let after = reference_run(rig, root, playwright)?;
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
    Ok((errand, reference))
}

/// Errand's task, one action per answer, with the reference's action of
/// the same number done by the scripted model next to each of Errand's.
fn interleaved_run(
    rig: &Rig,
    root: &Path,
    playwright: &Path,
    pairing: &Mutex<Pairing>,
) -> Result<(Value, Value)> {
    let (tab, panel) = rig.open("/actions/bench.html")?;
    // The reference's page opens in a window of its own after Errand's tab
    // (a tab opened later would go into the last window opened and hide
    // it): both pages visible, both drawing frames.
    let reference = Reference::start(rig, root, playwright)?;
    lock(pairing).reference = Some(reference);
    panel.start_task("Benchmark")?;
    let view = panel.wait_finished(Duration::from_secs(600))?;
    let mut p = lock(pairing);
    if let Some(e) = p.error.take() {
        bail!("the reference: {e}");
    }
    rig.model.check()?;
    ensure!(view["status"] == "done", "the task ended as {}: {view:#}", view["status"]);
    rig.stored_task("done")?;
    let taps = tab.eval("document.getElementById('tap').dataset.n")?;
    ensure!(taps == "50", "Errand tapped {taps} times instead of 50");
    let shown = tab.eval("document.visibilityState")?;
    ensure!(shown == "visible", "Errand's page was {shown}");
    let errand = errand_times(rig)?;
    let mut reference = p.reference.take().context("the reference went away")?;
    let taps = reference.call(&json!({"do": "taps"}))?;
    ensure!(taps["taps"] == 51, "the reference tapped {} times instead of 51", taps["taps"]);
    ensure!(taps["visible"] == true, "the reference's page was hidden");
    ensure!(
        p.times.len() == PAIRS && p.times.iter().all(Option::is_some) && p.forms.len() == 2,
        "the reference missed actions: {:?} {:?}",
        p.times,
        p.forms
    );
    let t: Vec<f64> = p.times.iter().flatten().copied().collect();
    let reference = json!({
        "click": t[..CLICKS],
        "fill": t[CLICKS..100],
        "select_option": t[100..PAIRS],
        "form_before": [p.forms[0]],
        "form_after": [p.forms[1]],
    });
    Ok((errand, reference))
}

/// The reference's side of the interleaved run, shared with the scripted
/// model.
#[derive(Default)]
struct Pairing {
    reference: Option<Reference>,
    /// The reference's time for each numbered action.
    times: Vec<Option<f64>>,
    /// Its form's sums, before and after Errand's.
    forms: Vec<f64>,
    error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The reference in `--serve` mode: one action per line.
struct Reference {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Reference {
    fn start(rig: &Rig, root: &Path, playwright: &Path) -> Result<Reference> {
        let mut child = reference_command(rig, root, playwright)?
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("running node")?;
        let stdin = child.stdin.take().context("the reference's stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("the reference's stdout")?);
        let mut r = Reference { child, stdin, stdout };
        let ready = r.read()?;
        ensure!(ready["ready"] == true, "the reference said {ready}");
        Ok(r)
    }

    fn read(&mut self) -> Result<Value> {
        let mut line = String::new();
        ensure!(self.stdout.read_line(&mut line)? > 0, "the reference exited");
        serde_json::from_str(&line).with_context(|| format!("the reference said {line:?}"))
    }

    fn call(&mut self, command: &Value) -> Result<Value> {
        writeln!(self.stdin, "{command}")?;
        self.stdin.flush()?;
        self.read()
    }

    /// The time (ms) of one action.
    fn time(&mut self, command: &Value) -> Result<f64> {
        let reply = self.call(command)?;
        reply["ms"].as_f64().with_context(|| format!("the reference said {reply}"))
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Action `j` (0..150) of the sequence: the field and text of a fill, the
/// label of a select.
fn fill_of(j: usize) -> (usize, String) {
    let (round, i) = ((j - CLICKS) / 10, (j - CLICKS) % 10 + 1);
    (i, field_value(&format!("v{}", round + 5), i))
}
fn pick_of(j: usize) -> &'static str {
    let (round, i) = ((j - 100) / 10, (j - 100) % 10);
    ["One", "Two", "Three"][(i + round + 10) % 3]
}
fn field_value(value: &str, i: usize) -> String {
    match i {
        9 => format!("{value}@example.com"),
        10 => "42".to_owned(),
        _ => value.to_owned(),
    }
}

/// The reference's action `j`.
fn reference_command_of(j: usize) -> Value {
    match j {
        0..CLICKS => json!({"do": "click"}),
        CLICKS..100 => {
            let (field, text) = fill_of(j);
            json!({"do": "fill", "field": field, "text": text})
        }
        _ => json!({"do": "select", "label": pick_of(j)}),
    }
}

/// The interleaved run's model: call `k` (0..150) answers Errand's action
/// `k` alone, then the form, then `done`. Before answering call `k` (even),
/// the reference does its action `k - 1` (Errand did it first) and its
/// action `k` (the reference goes first); its form before call 150's
/// answer and after it.
fn interleaved_script(pairing: &Mutex<Pairing>, req: &Value, call: usize) -> Reply {
    let mut jobs: Vec<(Option<usize>, Value)> = Vec::new();
    let even = call.is_multiple_of(2);
    if even && (1..=PAIRS).contains(&call) {
        jobs.push((Some(call - 1), reference_command_of(call - 1)));
    }
    if even && call < PAIRS {
        jobs.push((Some(call), reference_command_of(call)));
    }
    if call == PAIRS || call == PAIRS + 1 {
        jobs.push((None, json!({"do": "form", "value": "form"})));
    }
    {
        let mut p = lock(pairing);
        for (j, command) in jobs {
            std::thread::sleep(QUIET);
            if p.error.is_some() {
                break;
            }
            let Some(r) = p.reference.as_mut() else {
                p.error = Some("not started".into());
                break;
            };
            match (r.time(&command), j) {
                (Ok(ms), Some(j)) => {
                    p.times.resize(PAIRS, None);
                    p.times[j] = Some(ms);
                }
                (Ok(ms), None) => p.forms.push(ms),
                (Err(e), _) => p.error = Some(format!("{command}: {e:#}")),
            }
        }
    }
    // Errand's action comes right after the answer.
    std::thread::sleep(QUIET);
    match call {
        0..CLICKS => answer(json!([{"click": {"index": el(req, "Tapper")}}])),
        CLICKS..100 => {
            let (i, text) = fill_of(call);
            answer(json!([{"fill": {"index": el(req, &format!("Field{i:02}")), "text": text}}]))
        }
        100..PAIRS => answer(json!([
            {"select_option": {"index": el(req, "Picker"), "options": [pick_of(call)]}}
        ])),
        PAIRS => answer(json!(form_fields(req, "form"))),
        151 => answer(json!([{"done": {"text": "benchmarked", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

/// The ten fills of the form with `value`.
fn form_fields(req: &Value, value: &str) -> Vec<Value> {
    (1..=10)
        .map(|i| {
            json!({"fill": {"index": el(req, &format!("Field{i:02}")), "text": field_value(value, i)}})
        })
        .collect()
}

fn reference_command(rig: &Rig, root: &Path, playwright: &Path) -> Result<Command> {
    let port = std::fs::read_to_string(rig.browser.dir().join("profile/DevToolsActivePort"))
        .context("reading the browser's DevToolsActivePort")?;
    let port = port.lines().next().unwrap_or("").trim().to_owned();
    let mut cmd = Command::new("node");
    cmd.arg(root.join("tests/bench/reference_actions.mjs"))
        .arg(playwright)
        .arg(format!("http://127.0.0.1:{port}"))
        .arg(rig.fixtures.url("/actions/bench.html"));
    Ok(cmd)
}

/// One run of the reference (`tests/bench/reference_actions.mjs`) on a
/// new tab of the rig's browser: its times (ms) by action.
fn reference_run(rig: &Rig, root: &Path, playwright: &Path) -> Result<Value> {
    let out = reference_command(rig, root, playwright)?.output().context("running node")?;
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
        "| action | Errand, ms: median (p10–p90) | reference (browser-use's Playwright calls), ms | Errand / reference: the medians | the pairs' ratios: median (p10–p90) | n (Errand / reference) |\n\
         | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    for r in report["actions"].as_array().into_iter().flatten() {
        let pairs = &r["pair_ratio"];
        let pairs = if pairs.is_null() {
            "— (batched)".to_owned()
        } else {
            format!("{:.2} ({:.2}–{:.2})", f(&pairs["median"]), f(&pairs["p10"]), f(&pairs["p90"]))
        };
        t.push_str(&format!(
            "| {} | {} | {} | {:.2} | {pairs} | {} / {} |\n",
            r["action"].as_str().unwrap_or(""),
            s(&r["errand"]),
            s(&r["reference"]),
            f(&r["ratio"]),
            r["errand"]["n"],
            r["reference"]["n"],
        ));
    }
    let form = &report["form"];
    t.push_str(&format!(
        "| a ten-field form from one answer (sum of its ten fills) | {} | {} | {:.2} | | 1 / 2 |\n",
        short(f(&form["errand_ms"])),
        short(f(&form["reference_ms"])),
        f(&form["ratio"]),
    ));
    t
}

/// The batched run's model: 50 clicks, 50 fills, 50 selects (ten per
/// answer), then a ten-field form from one answer.
fn batched_script(req: &Value, call: usize) -> Reply {
    match call {
        // 50 clicks, 50 fills, 50 selects, ten per answer.
        0..=4 => answer(json!(vec![json!({"click": {"index": el(req, "Tapper")}}); 10])),
        5..=9 => answer(json!(form_fields(req, &format!("v{call}")))),
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
        15 => answer(json!(form_fields(req, "form"))),
        16 => answer(json!([{"done": {"text": "benchmarked", "success": true}}])),
        n => panic!("unexpected model call {n}"),
    }
}

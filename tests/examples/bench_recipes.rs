//! A recipe's replay against the agent's run of the same task
//! (`cargo run -p errand-e2e --example bench_recipes [RUNS]`, after
//! `scripts/build-extension.sh` and `cargo build -p errand-host`).
//!
//! Each run: the agent does the sign-up task of `tests/fixtures/recipes/`
//! from the side panel (a scripted model, answering at once), the task is
//! saved as a recipe (`errand recipe save`), replayed from the panel on the
//! same page with other values, then on the redesigned copy
//! (`changed.html`) and the copy with another button (`button.html`).
//! Times are the host's own (the task's stored start and end), split into
//! the model's time (the stored steps' `model_ms`) and the rest; the
//! rungs that found each element are read from the replayed steps.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use errand_e2e::model::{Reply, all_text, last_user_message};
use errand_e2e::rig::{Rig, element_by_label as el};
use errand_e2e::side_panel::{self, Panel};
use serde_json::{Value, json};

const TASK: &str = "Sign up as Ada Lovelace, ada@example.com, on the Pro plan";

fn reply(goal: &str, actions: Value) -> Reply {
    Reply::json(&json!({
        "evaluation_previous_goal": "ok", "memory": "", "next_goal": goal, "actions": actions,
    }))
}

/// The recording's answers, then the repair of the changed button.
fn script(req: &Value, _call: usize) -> Reply {
    let last = last_user_message(req).unwrap_or_default();
    if last.contains("Signed up") {
        return reply("Finish", json!([{"done": {"text": "signed up", "success": true}}]));
    }
    if all_text(req).contains("You are repairing one step") {
        return reply("Submit", json!([{"click": {"index": el(req, "Create my account")}}]));
    }
    if last.contains("# Step 1 ") {
        return reply(
            "Enter the name and the e-mail",
            json!([
                {"fill": {"index": el(req, "Full name"), "text": "Ada Lovelace"}},
                {"fill": {"index": el(req, "Work e-mail"), "text": "ada@example.com"}},
            ]),
        );
    }
    if last.contains("# Step 2 ") {
        return reply(
            "Choose the plan",
            json!([{"select_option": {"index": el(req, "Plan"), "options": ["Pro"]}}]),
        );
    }
    reply("Submit the form", json!([{"click": {"index": el(req, "Register")}}]))
}

/// Seconds of the day of a stored `…THH:MM:SS.mmmZ`.
fn secs(t: &str) -> f64 {
    let time = t.split('T').nth(1).unwrap_or_default().trim_end_matches('Z');
    let parts: Vec<f64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
    parts.first().unwrap_or(&0.0) * 3600.0
        + parts.get(1).unwrap_or(&0.0) * 60.0
        + parts.get(2).unwrap_or(&0.0)
}

/// The newest task: (task, total ms, model ms, rungs).
fn last_task(rig: &Rig) -> Result<(String, f64, f64, Vec<String>)> {
    let conn = errand_e2e::store::open(&rig.browser.db_path())?;
    let (id, task, start, end): (String, String, String, String) = conn.query_row(
        "SELECT id, task, started_at, ended_at FROM tasks ORDER BY rowid DESC LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    let mut total = (secs(&end) - secs(&start)) * 1000.0;
    if total < 0.0 {
        total += 86_400_000.0;
    }
    let mut stmt =
        conn.prepare("SELECT evaluation, model_ms FROM steps WHERE task_id = ?1 ORDER BY step")?;
    let mut model = 0.0;
    let mut rungs = Vec::new();
    for row in stmt.query_map([&id], |r| {
        Ok((r.get::<_, Option<String>>(0)?.unwrap_or_default(), r.get::<_, Option<i64>>(1)?))
    })? {
        let (evaluation, ms) = row?;
        model += ms.unwrap_or(0) as f64;
        if let Some(r) = evaluation.split("found by `").nth(1).and_then(|s| s.split('`').next()) {
            rungs.push(r.to_owned());
        } else if evaluation.starts_with("Step failed") && evaluation.contains("not found") {
            rungs.push("none".to_owned());
        }
    }
    Ok((task, total, model, rungs))
}

fn replay(rig: &Rig, panel: &Panel, name: &str, params: &[(&str, &str)]) -> Result<()> {
    panel.open_tab("history")?;
    let _ = panel.click("#history-back");
    std::thread::sleep(Duration::from_millis(1000));
    let item = format!(".recipe[data-recipe=\"{name}\"]");
    panel.wait_visible(&format!("{item} .run-recipe"), Duration::from_secs(10))?;
    for (k, v) in params {
        panel.fill(&format!("{item} input[data-param=\"{k}\"]"), v)?;
    }
    panel.click(&format!("{item} .run-recipe"))?;
    panel.wait_status("running", Duration::from_secs(10)).ok();
    let view = panel.wait_finished(Duration::from_secs(90))?;
    if view["status"] != "done" {
        bail!("the replay ended as {view:#}\n{}", rig.browser.logs());
    }
    Ok(())
}

fn one_run(
    results: &mut BTreeMap<&'static str, Vec<(f64, f64)>>,
    rungs: &mut BTreeMap<String, BTreeMap<String, u32>>,
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let folder = dir.path().join("recipes");
    std::fs::create_dir_all(&folder)?;
    for entry in std::fs::read_dir(errand_e2e::fixtures::fixtures_dir().join("recipes"))? {
        let p = entry?.path();
        std::fs::copy(&p, folder.join(p.file_name().context("a file")?))?;
    }
    let rig = Rig::builder().script(script).fixtures_dir(dir.path()).build();
    let (tab, _) = rig.run("/recipes/form.html", TASK)?;
    let (_, total, model, _) = last_task(&rig)?;
    results.entry("agent").or_default().push((total, model));
    let recorded = errand_e2e::store::tasks(&rig.browser.db_path())?.remove(0);
    let rusqlite::types::Value::Text(task_id) = recorded.id else { bail!("{recorded:?}") };
    save(&rig, &task_id)?;
    let panel = side_panel::open(&rig.browser, &tab)?;
    panel.wait_connected()?;
    let grace = [("full_name", "Grace Hopper"), ("work_e_mail", "grace@example.org")];
    for (label, page) in [
        ("replay, same page", None),
        ("replay, redesigned copy", Some("changed.html")),
        ("replay, changed button (one repair)", Some("button.html")),
    ] {
        if let Some(page) = page {
            std::fs::copy(folder.join(page), folder.join("form.html"))?;
        }
        replay(&rig, &panel, "bench", &grace)?;
        let (_, total, model, found) = last_task(&rig)?;
        results.entry(label).or_default().push((total, model));
        let by = rungs.entry(page.unwrap_or("form.html").to_owned()).or_default();
        for r in found {
            *by.entry(r).or_default() += 1;
        }
    }
    Ok(())
}

fn save(rig: &Rig, task_id: &str) -> Result<()> {
    let data = rig.browser.data_dir();
    let out = std::process::Command::new(errand_e2e::browser::host_exe()?)
        .args(["recipe", "save", task_id, "--name", "bench"])
        .env("ERRAND_DATA_DIR", &data)
        .env("ERRAND_CONFIG_DIR", data.parent().unwrap_or(Path::new(".")).join("config"))
        .output()?;
    if !out.status.success() {
        bail!("errand recipe save: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    use std::io::Write;
    let mut results = BTreeMap::new();
    let mut rungs = BTreeMap::new();
    for i in 0..runs {
        eprintln!("run {}/{runs}", i + 1);
        one_run(&mut results, &mut rungs)?;
    }
    // (A stdout lock: `print_stdout` is denied workspace-wide.)
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "| run ({runs} runs, medians) | whole task, ms | model, ms | without the model, ms |"
    )?;
    writeln!(out, "| --- | ---: | ---: | ---: |")?;
    for (label, v) in &results {
        let total = median(v.iter().map(|x| x.0).collect());
        let model = median(v.iter().map(|x| x.1).collect());
        let rest = median(v.iter().map(|x| x.0 - x.1).collect());
        writeln!(out, "| {label} | {total:.0} | {model:.0} | {rest:.0} |")?;
    }
    writeln!(out)?;
    writeln!(out, "| page | steps found by each rung |")?;
    writeln!(out, "| --- | --- |")?;
    for (page, by) in &rungs {
        let all: u32 = by.values().sum();
        let shares: Vec<String> = by
            .iter()
            .map(|(r, n)| {
                format!("`{r}` {n}/{all} ({:.0} %)", f64::from(*n) * 100.0 / f64::from(all))
            })
            .collect();
        writeln!(out, "| {page} | {} |", shares.join(", "))?;
    }
    Ok(())
}

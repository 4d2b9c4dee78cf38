//! End to end: the real side panel drives the real host over real native
//! messaging; the host observes and acts in a fixture page through the
//! real content script, asks the scripted model, and stores the task in a
//! real SQLite file.
//!
//! Needs Chromium, the built extension (`scripts/build-extension.sh`) and
//! the built host (`cargo build -p errand-host`); a missing piece fails the
//! test with the command that fixes it.

use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use errand_e2e::model::{Reply, all_text, find_element};
use errand_e2e::rig::{Provider, Rig};
use errand_e2e::store;
use serde_json::{Value, json};

const TASK: &str = "Press the Submit button";
const ANSWER: &str = "Submitted the form.";
const THANKS: &str = "Thanks, submitted!";

/// The model's side of "press Submit": click the element it finds named
/// Submit, then finish.
fn submit_script(req: &Value, call: usize) -> Reply {
    match call {
        0 => {
            let n = find_element(req, "Submit").unwrap_or_else(|e| panic!("{e:#}"));
            Reply::json(&json!({
                "evaluation_previous_goal": "Start",
                "memory": "",
                "next_goal": "Submit the form",
                "actions": [{"click": {"index": n}}],
            }))
        }
        1 => {
            // The observation carries the text a person reads: the model
            // sees what its click changed.
            assert!(
                all_text(req).contains(THANKS),
                "the second request does not show the page's {THANKS:?}"
            );
            Reply::json(&json!({
                "evaluation_previous_goal": "Success",
                "memory": "",
                "next_goal": "finish",
                "actions": [{"done": {"text": ANSWER, "success": true}}],
            }))
        }
        n => panic!("unexpected model call {n}: the task should have finished after call 1"),
    }
}

/// Runs the Submit task on `path` and checks page, panel and store;
/// returns the builds stored for its steps.
fn submit_task_on(rig: &Rig, path: &str) -> Result<Vec<Option<String>>> {
    let (tab, panel) = rig.open(path)?;
    panel.start_task(TASK)?;
    let view = panel.wait_finished(Duration::from_secs(60))?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the task ended as {}, not done: {view:#}", view["status"]);

    let result = tab.eval("document.querySelector('#result').textContent")?;
    ensure!(result == THANKS, "the page's #result says {result}, not {THANKS:?}");

    ensure!(view["steps"].as_u64() >= Some(1), "the panel shows no step: {view:#}");
    let steps_text = view["steps_text"].as_str().unwrap_or_default();
    ensure!(
        steps_text.contains("click"),
        "the panel's steps do not mention the click: {steps_text:?}"
    );
    ensure!(
        view["answer"].as_str().unwrap_or_default().contains(ANSWER),
        "the panel's #answer is {}, not {ANSWER:?}",
        view["answer"]
    );
    ensure!(
        rig.model.request_count() == 2,
        "the model got {} requests, expected 2",
        rig.model.request_count()
    );

    let task = rig.stored_task("done")?;
    ensure!(task.task == TASK, "stored task text {:?}", task.task);
    ensure!(task.answer.as_deref() == Some(ANSWER), "stored answer {:?}", task.answer);
    let steps = store::steps(&rig.browser.db_path(), &task.id)?;
    ensure!(
        steps.len() >= 2,
        "the store has {} step(s) for the task, expected at least 2: {steps:#?}",
        steps.len()
    );
    ensure!(
        steps.iter().any(|s| s.actions_json.contains("click")),
        "no stored step has the click: {steps:#?}"
    );
    Ok(steps.into_iter().map(|s| s.build).collect())
}

#[test]
fn task_from_side_panel_clicks_submit() {
    let rig = Rig::start(submit_script);
    let builds = submit_task_on(&rig, "/submit.html").unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        builds.iter().all(|b| b.as_deref() == Some("wasm")),
        "every step should have run the WASM build; stored builds: {builds:?}"
    );
    rig.done("task_from_side_panel_clicks_submit");
}

#[test]
fn the_same_task_over_anthropics_wire_format() {
    let rig = Rig::builder().provider(Provider::Anthropic).script(submit_script).build();
    submit_task_on(&rig, "/submit.html").unwrap_or_else(|e| panic!("{e:#}"));
    let seen = rig.model.seen();
    assert!(seen.iter().all(|s| s.path == "/v1/messages"), "{:?}", seen.iter().map(|s| &s.path));
    rig.done("the_same_task_over_anthropics_wire_format");
}

#[test]
fn csp_page_runs_the_js_build() {
    let rig = Rig::start(submit_script);
    let builds = submit_task_on(&rig, "/csp/submit.html").unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        builds.iter().all(|b| b.as_deref() == Some("js")),
        "on a page whose CSP refuses WebAssembly every step should have run the JS build; \
         stored builds: {builds:?}"
    );
    rig.done("csp_page_runs_the_js_build");
}

/// Starts the task, waits for the (slow) model call, clicks Stop and
/// times, inside the panel, until `#status` says `stopped`.
fn stop_during_model_call(rig: &Rig) -> Result<()> {
    let (_tab, panel) = rig.open("/submit.html")?;
    panel.start_task(TASK)?;
    rig.model.wait_for_requests(1, Duration::from_secs(30))?;
    let t = Instant::now();
    let r = panel.page.eval(
        "new Promise((resolve) => {
           const status = document.querySelector('#status');
           const stop = document.querySelector('#stop');
           const t0 = performance.now();
           const done = (ms, why) => { obs.disconnect(); clearTimeout(timer);
             resolve({ms, why, state: status.dataset.state, text: status.textContent}); };
           const obs = new MutationObserver(() => {
             if (status.dataset.state === 'stopped') done(performance.now() - t0, null); });
           obs.observe(status, {attributes: true, attributeFilter: ['data-state']});
           const timer = setTimeout(() => done(null, 'not stopped 5 s after clicking Stop'), 5000);
           if (stop.disabled) { done(null, '#stop is disabled while the task runs'); return; }
           stop.click();
         })",
    )?;
    let outside = t.elapsed();
    let Some(ms) = r["ms"].as_f64() else {
        bail!("{}: {r}\npanel: {:#}", r["why"].as_str().unwrap_or("?"), panel.view()?);
    };
    eprintln!("stop → stopped: {ms:.0} ms in the panel ({outside:?} seen from the test)");
    ensure!(ms < 1000.0, "stopping took {ms:.0} ms, expected under 1 s");
    rig.stored_task("stopped")?;
    std::thread::sleep(Duration::from_millis(300));
    ensure!(
        rig.model.request_count() == 1,
        "the model got {} requests; none should follow Stop",
        rig.model.request_count()
    );
    rig.model.check()
}

#[test]
fn stop_during_slow_model_ends_within_a_second() {
    let rig = Rig::start(|_req, call| match call {
        0 => Reply::delayed(
            Duration::from_secs(30),
            json!({"actions": [{"done": {"text": "too late", "success": true}}]}).to_string(),
        ),
        n => panic!("unexpected model call {n} after Stop"),
    });
    stop_during_model_call(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("stop_during_slow_model_ends_within_a_second");
}

//! The side panel as a user meets it, end to end: the real panel in real
//! headless Chromium, the real host over native messaging, the scripted
//! model. Approvals, questions, pause / take over / stop, settings used by
//! the next task, the profile filling a form, the history, and the states a
//! new user meets (no host, no model, a page Errand cannot work on).
//!
//! Each test writes PNG screenshots of the panel (light and dark) into
//! `target/panel-shots/`, so that how it looks stays visible.
//!
//! Needs Chromium, the built extension (`scripts/build-extension.sh`) and
//! the built host (`cargo build -p errand-host`).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use errand_e2e::browser::{LaunchOptions, ModelSetup, TestBrowser};
use errand_e2e::cdp::Page;
use errand_e2e::fixtures::FixtureServer;
use errand_e2e::model::{Reply, ScriptedModel, all_text, find_element, last_user_message};
use errand_e2e::rig::Rig;
use errand_e2e::side_panel::{self, Panel};
use errand_e2e::store;
use serde_json::{Value, json};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_secs(10);
/// The panel's width in the screenshots; some states also at 320 px.
const WIDTH: u32 = 360;

/// What the host tells the model after the user took over the page.
const TOOK_OVER_NOTE: &str = "acted in the page themselves";

/// The model, the fixtures and the browser of one test. The browser is
/// declared first so that it is dropped first (its logs print while the
/// servers still run).
struct PanelRig {
    browser: TestBrowser,
    model: ScriptedModel,
    fixtures: FixtureServer,
}

impl PanelRig {
    fn start(
        setup: impl FnOnce(&mut LaunchOptions) + 'static,
        script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static,
    ) -> PanelRig {
        let Rig { browser, model, fixtures } = Rig::builder().script(script).options(setup).build();
        PanelRig { browser, model, fixtures }
    }

    /// Opens `path` in a tab and the side panel for it.
    fn open(&self, path: &str) -> Result<(Page, Panel)> {
        let tab = self.browser.new_page(&self.fixtures.url(path))?;
        let panel = side_panel::open(&self.browser, &tab)?;
        eprintln!("side panel opened as {:?}", panel.how);
        Ok((tab, panel))
    }

    fn done(&self, name: &str) {
        eprintln!("{name}: passed in {:.1} s", self.browser.running_for().as_secs_f64());
    }

    /// The stored tasks, once there are `n`, none running.
    fn stored_tasks(&self, n: usize) -> Result<Vec<store::TaskRow>> {
        let db = self.browser.db_path();
        let mut last = Vec::new();
        self.browser
            .wait_until(&format!("{n} stored tasks, none running"), SHORT, || {
                last = store::tasks(&db)?;
                Ok(last.len() == n && last.iter().all(|t| t.status != "running"))
            })
            .with_context(|| format!("stored tasks: {last:#?}"))?;
        Ok(last)
    }
}

// ---- reading the model's requests ----

/// The headings of the step prompt (`native-host/prompts/step.md`); the
/// page's own headings also start with `# `.
const PROMPT_HEADINGS: &[&str] = &["# Task\n", "# Step ", "# Earlier steps\n", "# Current page\n"];

/// The part of `text` under the prompt's heading `# {name}`, up to the next
/// prompt heading.
fn section(text: &str, name: &str) -> String {
    let head = format!("# {name}\n");
    let Some(start) = text.find(&head) else {
        return String::new();
    };
    let rest = &text[start + head.len()..];
    let end = PROMPT_HEADINGS
        .iter()
        .filter_map(|h| rest.find(&format!("\n{h}")))
        .min()
        .unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// The task as the user wrote it: the first line of the prompt's Task
/// section ("" for a request that is not a step, e.g. a connection check).
fn task_line(req: &Value) -> String {
    let msg = last_user_message(req).unwrap_or_default();
    section(&msg, "Task")
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Whether the request is for the task's first step.
fn first_step(req: &Value) -> bool {
    earlier(req).contains("(none")
}

fn earlier(req: &Value) -> String {
    section(&last_user_message(req).unwrap_or_default(), "Earlier steps")
}

fn current_page(req: &Value) -> String {
    section(&last_user_message(req).unwrap_or_default(), "Current page")
}

/// A model answer (Errand's JSON dialect).
fn act(goal: &str, actions: Value) -> Reply {
    Reply::json(&json!({
        "evaluation_previous_goal": "As planned", "memory": "", "next_goal": goal, "actions": actions,
    }))
}

fn done(text: &str) -> Reply {
    act("Tell the user", json!([{"done": {"text": text, "success": true}}]))
}

fn element(req: &Value, label: &str) -> u32 {
    find_element(req, label).unwrap_or_else(|e| panic!("{e:#}"))
}

fn eval_str(page: &Page, js: &str) -> Result<String> {
    Ok(page.eval(js)?.as_str().unwrap_or_default().to_owned())
}

// ---- approvals ----

const REJECT_TASK: &str = "Order the blue teapot (first try)";
const APPROVE_TASK: &str = "Order the blue teapot (second try)";
const ORDERED: &str = "Ordered the blue teapot: order 4711.";
const NOT_ORDERED: &str = "You rejected the order, so nothing was ordered.";

fn checkout_script(req: &Value, _call: usize) -> Reply {
    if current_page(req).contains("Order placed") {
        return done(ORDERED);
    }
    if earlier(req).contains("rejected") {
        return done(NOT_ORDERED);
    }
    act("Place the order", json!([{"click": {"index": element(req, "Place order")}}]))
}

#[test]
fn approvals_rejected_and_approved() {
    let rig = PanelRig::start(|_| {}, checkout_script);
    approvals(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("approvals_rejected_and_approved");
}

fn approvals(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/checkout.html")?;
    panel.wait_connected()?;
    panel.screenshots("task-empty", WIDTH)?;

    // Rejected: the model is told, the page is unchanged.
    panel.start_task(REJECT_TASK)?;
    panel.wait_status("waiting", LONG)?;
    panel.wait_visible(".approval .reject", SHORT)?;
    let card = panel.text(".approval")?;
    ensure!(card.contains("Place order"), "the approval does not name the button: {card:?}");
    panel.screenshots("approval", WIDTH)?;
    panel.screenshots("approval-320", 320)?;
    panel.click(".approval .reject")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the rejected task ended as {view:#}");
    ensure!(view["answer"] == NOT_ORDERED, "the panel's answer: {view:#}");
    let decision = panel.text(".approval .decision")?;
    ensure!(decision.contains("rejected"), "the approval card says {decision:?}");
    let last = rig.model.requests().pop().context("no model request")?;
    ensure!(
        earlier(&last).contains("rejected"),
        "the model was not told of the rejection:\n{}",
        earlier(&last)
    );
    let result = eval_str(&tab, "document.querySelector('#result').textContent")?;
    ensure!(result == "Not ordered yet.", "the page changed after a rejection: {result:?}");

    // Approved: a new task (not a follow-up); the page shows the order.
    ensure!(view["followup"] == true, "after a task the box should offer to continue it: {view:#}");
    panel.click("#new-task")?;
    panel.start_task(APPROVE_TASK)?;
    panel.wait_visible(".approval .approve", LONG)?;
    panel.click(".approval .approve")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the approved task ended as {view:#}");
    ensure!(view["answer"] == ORDERED, "the panel's answer: {view:#}");
    let result = eval_str(&tab, "document.querySelector('#result').textContent")?;
    ensure!(result.contains("Order placed"), "the page does not show the order: {result:?}");
    let steps = view["steps_text"].as_str().unwrap_or_default();
    ensure!(steps.contains("click") && steps.contains("Place order"), "the steps: {steps:?}");
    let meter = view["meter"].as_str().unwrap_or_default();
    ensure!(meter.contains("tokens"), "no token count shown: {view:#}");
    ensure!(panel.text(".turn .answer .copy")? == "Copy", "the answer has no Copy button");
    panel.screenshots("answer", WIDTH)?;
    rig.stored_tasks(2)?;
    Ok(())
}

// ---- a question, answered; then a follow-up ----

const ASK_TASK: &str = "Put my name into the club form";
const FOLLOW_TASK: &str = "Which name did you use?";

fn question_script(req: &Value, _call: usize) -> Reply {
    let task = task_line(req);
    let before = earlier(req);
    if task == FOLLOW_TASK {
        assert!(
            all_text(req).contains(ASK_TASK),
            "the follow-up's request does not mention the earlier task"
        );
        return done("I used Grace Hopper.");
    }
    assert_eq!(task, ASK_TASK, "unexpected task");
    if !before.contains("Grace Hopper") {
        return act(
            "Ask for the name",
            json!([{"ask_user": {"question": "Which name should I put in the form?"}}]),
        );
    }
    if !before.contains("fill") {
        return act(
            "Fill the name",
            json!([{"fill": {"index": element(req, "Full name"), "text": "Grace Hopper"}}]),
        );
    }
    done("Put Grace Hopper into the form.")
}

#[test]
fn question_answered_and_follow_up() {
    let rig = PanelRig::start(|_| {}, question_script);
    question(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("question_answered_and_follow_up");
}

fn question(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/form.html")?;
    panel.start_task(ASK_TASK)?;
    panel.wait_visible(".question input", LONG)?;
    panel.wait_status("waiting", SHORT)?;
    let q = panel.text(".question")?;
    ensure!(q.contains("Which name"), "the question shown: {q:?}");
    panel.fill(".question input", "Grace Hopper")?;
    panel.screenshots("question", WIDTH)?;
    panel.click(".question button[type=submit]")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "ended as {view:#}");
    let name = eval_str(&tab, "document.querySelector('#name').value")?;
    ensure!(name == "Grace Hopper", "the name field holds {name:?}");

    // The box now continues the task.
    ensure!(view["followup"] == true, "no follow-up offered: {view:#}");
    panel.screenshots("follow-up-offered", WIDTH)?;
    panel.start_task(FOLLOW_TASK)?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["answer"] == "I used Grace Hopper.", "the follow-up's answer: {view:#}");
    let turns = panel.page.eval("document.querySelectorAll('#thread .turn').length")?;
    ensure!(turns == 2, "the conversation should show both tasks, shows {turns}");
    rig.stored_tasks(2)?;

    // The model comes from ERRAND_* variables here: read-only in Settings.
    panel.open_tab("settings")?;
    panel.page.wait_for("document.querySelector('#s-model').value === 'scripted'", SHORT)?;
    for name in ["model", "base_url", "api_key"] {
        let locked = panel.page.eval(&format!(
            "(() => {{ const f = document.querySelector('[data-setting={name}]');
                return f.classList.contains('locked') && f.querySelector('input').disabled
                  && f.innerText.includes('set by the environment'); }})()"
        ))?;
        ensure!(locked == true, "the {name} setting is not shown as set by the environment");
    }
    panel.screenshots("settings-locked", WIDTH)?;
    Ok(())
}

// ---- pause, resume, take over, stop ----

const PAUSE_TASK: &str = "Press Next (pause test)";
const TAKE_OVER_TASK: &str = "Fill in my name (take-over test)";
const STOP_TASK: &str = "Sign me up (stop test)";

fn control_script(req: &Value, _call: usize) -> Reply {
    let task = task_line(req);
    match task.as_str() {
        PAUSE_TASK if first_step(req) => Reply::delayed(
            Duration::from_millis(1500),
            json!({"next_goal": "Press Next", "actions": [{"click": {"index": element(req, "Next")}}]})
                .to_string(),
        ),
        PAUSE_TASK => {
            assert!(!all_text(req).contains(TOOK_OVER_NOTE), "a plain pause is not a take-over");
            done("Pressed Next.")
        }
        TAKE_OVER_TASK if first_step(req) => Reply::delayed(
            Duration::from_millis(1500),
            json!({"next_goal": "Fill the name", "actions": [
                {"fill": {"index": element(req, "Full name"), "text": "Ada Lovelace"}}]})
            .to_string(),
        ),
        TAKE_OVER_TASK => done("Filled in your name."),
        STOP_TASK => Reply::delayed(
            Duration::from_secs(30),
            json!({"actions": [{"done": {"text": "too late", "success": true}}]}).to_string(),
        ),
        other => panic!("unexpected task {other:?}"),
    }
}

#[test]
fn pause_holds_the_next_action_until_resume() {
    let rig = PanelRig::start(|_| {}, control_script);
    pause(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("pause_holds_the_next_action_until_resume");
}

/// Pause during the model call: the protocol says the task pauses after
/// its current model call, so the click the model answers with waits for
/// Resume.
fn pause(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/form.html")?;
    let result = || eval_str(&tab, "document.querySelector('#result').textContent");
    panel.start_task(PAUSE_TASK)?;
    rig.model.wait_for_requests(1, LONG)?;
    panel.click("#pause")?;
    let view = panel.wait_status("paused", SHORT)?;
    ensure!(
        view["resume_hidden"] == false && view["pause_hidden"] == true,
        "controls while paused: {view:#}"
    );
    panel.screenshots("paused", WIDTH)?;
    std::thread::sleep(Duration::from_millis(2500)); // the model answered meanwhile
    ensure!(rig.model.request_count() == 1, "the model was asked again while paused");
    ensure!(
        result()? == "Not signed up yet.",
        "the model's click ran while the task was paused (pause_task during a model call must \
         hold the action that follows it): the page says {:?}",
        result()?
    );
    panel.click("#resume")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the paused task ended as {view:#}");
    ensure!(result()? == "Next pressed.", "after Resume the click did not happen: {:?}", result()?);
    Ok(())
}

#[test]
fn take_over_then_resume_tells_the_model() {
    let rig = PanelRig::start(|_| {}, control_script);
    take_over(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("take_over_then_resume_tells_the_model");
}

/// Take over: the user acts in the page; after Resume the model hears of it.
fn take_over(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/form.html")?;
    panel.start_task(TAKE_OVER_TASK)?;
    rig.model.wait_for_requests(1, LONG)?;
    panel.click("#takeover")?;
    let view = panel.wait_status("paused", SHORT)?;
    let text = view["status_text"].as_str().unwrap_or_default();
    ensure!(text.contains("Resume"), "the take-over status does not say what to do: {text:?}");
    tab.eval(
        "(() => { const e = document.querySelector('#email'); e.value = 'me@example.org';
                  e.dispatchEvent(new Event('input', {bubbles: true})); return true; })()",
    )?;
    panel.screenshots("take-over", WIDTH)?;
    std::thread::sleep(Duration::from_millis(1700)); // the model answered meanwhile
    ensure!(
        rig.model.request_count() == 1,
        "the model was asked again while the user had the page"
    );
    panel.click("#resume")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the taken-over task ended as {view:#}");
    let requests = rig.model.requests();
    let next = requests.get(1).context("no model request after Resume")?;
    ensure!(
        all_text(next).contains(TOOK_OVER_NOTE) || all_text(next).contains("took over"),
        "the request after the take-over does not tell the model the user took over:\n{}",
        last_user_message(next).unwrap_or_default()
    );
    let email = eval_str(&tab, "document.querySelector('#email').value")?;
    ensure!(email == "me@example.org", "the user's own input was lost: {email:?}");
    Ok(())
}

#[test]
fn stop_ends_the_task_at_once() {
    let rig = PanelRig::start(|_| {}, control_script);
    stop(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("stop_ends_the_task_at_once");
}

/// Stop during a slow model call: stopped at once, the model not asked again.
fn stop(rig: &PanelRig) -> Result<()> {
    let (_tab, panel) = rig.open("/panel/form.html")?;
    panel.start_task(STOP_TASK)?;
    rig.model.wait_for_requests(1, LONG)?;
    panel.wait_status("running", SHORT)?;
    let t = Instant::now();
    panel.click("#stop")?;
    let view = panel.wait_status("stopped", SHORT)?;
    let took = t.elapsed();
    ensure!(took < Duration::from_secs(2), "stopping took {took:?}");
    ensure!(view["stop_disabled"] == true, "Stop stays enabled after the task stopped: {view:#}");
    panel.screenshots("stopped", WIDTH)?;
    let tasks = rig.stored_tasks(1)?;
    ensure!(tasks[0].status == "stopped", "the stored task: {tasks:#?}");
    std::thread::sleep(Duration::from_millis(300));
    ensure!(rig.model.request_count() == 1, "the model was asked again after Stop");
    Ok(())
}

// ---- settings ----

const NEXT_TASK: &str = "Press Next on the club form";
const NEW_MODEL: &str = "scripted-next";

fn settings_script(req: &Value, _call: usize) -> Reply {
    let task = task_line(req);
    if task.is_empty() {
        // The connection check.
        return Reply::content("OK");
    }
    assert_eq!(req["model"], NEW_MODEL, "the task's request names the model saved in the panel");
    if current_page(req).contains("Next pressed") {
        return done("Pressed Next.");
    }
    act("Press Next", json!([{"click": {"index": element(req, "Next")}}]))
}

#[test]
fn settings_saved_in_the_panel_drive_the_next_task() {
    let rig = PanelRig::start(|o| o.model_setup = ModelSetup::ConfigFile, settings_script);
    settings(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("settings_saved_in_the_panel_drive_the_next_task");
}

fn settings(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/form.html")?;
    panel.wait_connected()?;
    panel.open_tab("settings")?;
    panel
        .page
        .wait_for("document.querySelector('#s-model').value === 'scripted'", SHORT)
        .with_context(|| {
            format!(
                "the settings never showed the model: {}",
                panel.text("#settings-status").unwrap_or_default()
            )
        })?;
    let locked = panel.page.eval("document.querySelectorAll('#settings-form .locked').length")?;
    ensure!(locked == 0, "settings from config.toml should not be locked ({locked} are)");
    let hint = panel.text("#s-api_key-hint")?;
    ensure!(hint.contains("key is set"), "the API key hint: {hint:?}");
    let key_field = eval_str(&panel.page, "document.querySelector('#s-api_key').value")?;
    ensure!(key_field.is_empty(), "the key field shows the key");
    panel.screenshots("settings", WIDTH)?;

    // The connection check, with the settings as they are: the model answers.
    panel.click("#test-connection")?;
    panel.page.wait_for("!!document.querySelector('#connection .verdict')", LONG)?;
    let verdict = panel.text("#connection")?;
    ensure!(verdict.contains("The model answers"), "the connection check says {verdict:?}");
    panel.screenshots("settings-connection-ok", WIDTH)?;

    panel.fill("#s-model", NEW_MODEL)?;
    panel.click("#s-vision")?;
    panel.fill("#s-ask_first_sites", "bank.example\nshop.example")?;
    panel.click("#save-settings")?;
    panel.wait_text("#settings-status", "Saved", SHORT)?;
    let config = std::fs::read_to_string(rig.browser.dir().join("config/config.toml"))?;
    ensure!(config.contains(NEW_MODEL), "config.toml does not hold the new model:\n{config}");
    ensure!(
        config.contains("shop.example"),
        "config.toml does not hold the ask-first site:\n{config}"
    );

    // Checked again: the scripted server does not list the new model, and
    // the panel shows the host's finding in plain words.
    panel.click("#test-connection")?;
    panel.page.wait_for(
        "document.querySelector('#connection .verdict')?.textContent.includes('cannot')",
        LONG,
    )?;
    let verdict = panel.text("#connection")?;
    ensure!(verdict.contains(NEW_MODEL), "the connection check says {verdict:?}");
    panel.screenshots("settings-connection-problem", WIDTH)?;

    // The marks switch on the Task tab saves the setting too.
    panel.open_tab("task")?;
    let marks = panel.page.eval("document.querySelector('#marks-toggle').checked")?;
    panel.page.eval("document.querySelector('#marks-toggle').click()")?;
    panel
        .page
        .wait_for(
            &format!("document.querySelector('#s-marks').checked === {}", marks != true),
            SHORT,
        )
        .context("the marks switch was not saved")?;

    panel.start_task(NEXT_TASK)?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "ended as {view:#}");
    let result = eval_str(&tab, "document.querySelector('#result').textContent")?;
    ensure!(result == "Next pressed.", "the page says {result:?}");
    let thumbs = panel.page.eval("document.querySelectorAll('.turn .step img.thumb').length")?;
    ensure!(thumbs.as_u64() >= Some(1), "vision is on but no step shows its screenshot");
    panel.screenshots("steps-with-screenshot", WIDTH)?;
    Ok(())
}

// ---- the profile ----

const EMAIL: &str = "ada@example.com";
const SECRET: &str = "hunter2-club-secret";

fn profile_script(req: &Value, _call: usize) -> Reply {
    let task = task_line(req);
    assert!(task.starts_with("Fill in the form on this page"), "unexpected task {task:?}");
    let text = all_text(req);
    assert!(text.contains(EMAIL), "the profile's e-mail is not in the request");
    assert!(text.contains("Ada Lovelace"), "the profile's name is not in the request");
    assert!(!text.contains(SECRET), "a secret's value reached the model");
    assert!(!text.contains("shoe size"), "a forgotten fact reached the model");
    if earlier(req).contains("fill") {
        return done("Filled in your name and e-mail; not submitted.");
    }
    act(
        "Fill the form",
        json!([
            {"fill": {"index": element(req, "Full name"), "text": "Ada Lovelace"}},
            {"fill": {"index": element(req, "E-mail address"), "text": EMAIL}},
        ]),
    )
}

#[test]
fn profile_facts_fill_the_form() {
    let rig = PanelRig::start(|_| {}, profile_script);
    profile(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("profile_facts_fill_the_form");
}

fn add_fact(panel: &Panel, name: &str, value: &str) -> Result<()> {
    panel.fill("#fact-name", name)?;
    panel.fill("#fact-value", value)?;
    panel.click("#add-fact-button")?;
    panel
        .page
        .wait_for(
            &format!(
                "document.querySelector('#facts [data-name={n}] input')?.value === {v}",
                n = json!(name),
                v = json!(value)
            ),
            SHORT,
        )
        .with_context(|| {
            format!(
                "the fact {name} is not listed: {}",
                panel.text("#profile-status").unwrap_or_default()
            )
        })?;
    Ok(())
}

fn profile(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/form.html")?;
    panel.wait_connected()?;
    panel.open_tab("profile")?;
    panel.wait_text("#facts", "No details yet", SHORT)?;
    add_fact(&panel, "email", EMAIL)?;
    add_fact(&panel, "full name", "Ada Lovelace")?;
    add_fact(&panel, "shoe size", "38")?;
    panel.click("#facts [data-name='shoe size'] .forget")?;
    panel
        .page
        .wait_for("!document.querySelector(\"#facts [data-name='shoe size']\")", SHORT)
        .context("the forgotten fact is still listed")?;

    panel.fill("#secret-name", "club_password")?;
    panel.fill("#secret-value", SECRET)?;
    panel.fill("#secret-origins", &rig.fixtures.url("/"))?;
    panel.click("#add-secret-button")?;
    panel.wait_text("#secrets", "club_password", SHORT)?;
    let html = eval_str(
        &panel.page,
        "document.documentElement.outerHTML + document.querySelector('#secret-value').value",
    )?;
    ensure!(!html.contains(SECRET), "the panel still shows the secret's value");
    ensure!(panel.text("#secrets")?.contains("••••"), "the secret is not shown masked");
    ensure!(
        panel
            .text("#secrets [data-name='club_password']")?
            .contains("password, code and card fields only"),
        "the secret does not say it goes only into secret fields: {}",
        panel.text("#secrets")?
    );
    // "Any field": for a member number the club's form asks in a text field.
    panel.fill("#secret-name", "club_member")?;
    panel.fill("#secret-value", "member-4471")?;
    panel.fill("#secret-origins", &rig.fixtures.url("/"))?;
    panel.click("#secret-any-field")?;
    panel.click("#add-secret-button")?;
    panel.wait_text("#secrets", "club_member", SHORT)?;
    let row = panel.text("#secrets [data-name='club_member']")?;
    ensure!(row.contains("any field"), "the any-field choice is not shown: {row}");
    ensure!(
        panel.page.eval("document.querySelector('#secret-any-field').checked")? == json!(false),
        "the checkbox stays checked for the next secret"
    );
    panel.click("#secrets [data-name='club_member'] .forget")?;
    panel
        .page
        .wait_for("!document.querySelector(\"#secrets [data-name='club_member']\")", SHORT)
        .context("the forgotten secret is still listed")?;
    panel.page.eval("document.querySelector('main').scrollTop = 0")?;
    panel.screenshots("profile", WIDTH)?;

    panel.open_tab("task")?;
    panel.click("#fill")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the fill task ended as {view:#}");
    let values = tab.eval("[document.querySelector('#name').value, document.querySelector('#email').value, document.querySelector('#result').textContent]")?;
    ensure!(
        values == json!(["Ada Lovelace", EMAIL, "Not signed up yet."]),
        "the form holds {values} (filled, not submitted, expected)"
    );

    // The right-click menu's way: a pending task for this tab in
    // chrome.storage.session, which the open panel starts.
    tab.eval("document.querySelector('#name').value = ''; document.querySelector('#email').value = ''; true")?;
    let tab_id = side_panel::chrome_tab_id(&rig.browser, &tab)?;
    let sw = rig.browser.service_worker()?;
    sw.eval(&format!(
        "chrome.storage.session.set({{
            'errand.pendingTask': {{tabId: {tab_id}, task: {task}, at: Date.now()}} }}).then(() => true)",
        task = json!("Fill in the form on this page with my details from my profile; do not submit it.")
    ))?;
    panel.wait_status("running", SHORT).context("the pending task from the menu did not start")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done", "the menu's fill task ended as {view:#}");
    let email = eval_str(&tab, "document.querySelector('#email').value")?;
    ensure!(email == EMAIL, "after the menu's task the e-mail field holds {email:?}");
    rig.stored_tasks(2)?;
    Ok(())
}

// ---- history ----

const HISTORY_CLICK: &str = "Press Next on the tea club form";
const HISTORY_READ: &str = "What is this page about?";

fn history_script(req: &Value, _call: usize) -> Reply {
    match task_line(req).as_str() {
        HISTORY_CLICK if current_page(req).contains("Next pressed") => done("Pressed Next."),
        HISTORY_CLICK => act("Press Next", json!([{"click": {"index": element(req, "Next")}}])),
        HISTORY_READ => done("It is the tea club's sign-up form."),
        other => panic!("unexpected task {other:?}"),
    }
}

#[test]
fn history_lists_searches_opens_and_reruns() {
    let rig = PanelRig::start(|_| {}, history_script);
    history(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("history_lists_searches_opens_and_reruns");
}

fn history(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/panel/form.html")?;
    panel.wait_connected()?;
    for task in [HISTORY_CLICK, HISTORY_READ] {
        if panel.view()?["followup"] == true {
            panel.click("#new-task")?;
        }
        panel.start_task(task)?;
        let view = panel.wait_finished(LONG)?;
        rig.model.check()?;
        ensure!(view["status"] == "done", "{task:?} ended as {view:#}");
    }
    rig.stored_tasks(2)?;

    panel.open_tab("history")?;
    let count = "document.querySelectorAll('#history-list li.past').length";
    panel.page.wait_for(&format!("{count} === 2"), SHORT).with_context(|| {
        format!(
            "the history does not list both tasks: {:?}",
            panel.text("#view-history").unwrap_or_default()
        )
    })?;
    let first = panel.text("#history-list li.past")?;
    ensure!(first.contains(HISTORY_READ), "the newest task is not first: {first:?}");
    panel.screenshots("history", WIDTH)?;

    panel.fill("#history-q", "Press Next")?;
    panel.page.wait_for(&format!("{count} === 1"), SHORT).with_context(|| {
        format!(
            "the search did not narrow the list: {:?}",
            panel.text("#history-list").unwrap_or_default()
        )
    })?;
    ensure!(
        panel.text("#history-list")?.contains(HISTORY_CLICK),
        "the search found the wrong task"
    );

    panel.click("#history-list li.past button.open")?;
    panel.wait_visible("#history-detail", SHORT)?;
    panel.page.wait_for("document.querySelectorAll('#detail-steps li.step').length >= 1", SHORT)?;
    let steps = panel.text("#detail-steps")?;
    ensure!(steps.contains("click"), "the opened task's steps: {steps:?}");
    ensure!(panel.text("#detail-outcome")?.contains("Pressed Next."), "the opened task's answer");
    panel.screenshots("history-detail", WIDTH)?;

    // Run it again in the current tab.
    tab.eval("document.querySelector('#result').textContent = 'Not signed up yet.'; true")?;
    panel.click("#rerun")?;
    panel.wait_status("running", SHORT).context("Rerun did not start a task")?;
    let view = panel.wait_finished(LONG)?;
    rig.model.check()?;
    ensure!(view["status"] == "done" && view["tab"] == "task", "the rerun: {view:#}");
    let tasks = rig.stored_tasks(3)?;
    ensure!(
        tasks.iter().filter(|t| t.task == HISTORY_CLICK).count() == 2,
        "the rerun is not stored as a second run: {tasks:#?}"
    );
    Ok(())
}

// ---- the states a new user meets ----

#[test]
fn host_not_installed() {
    let rig = PanelRig::start(
        |o| o.register_host = false,
        |_req, call| panic!("the model was called ({call}) without a host"),
    );
    no_host(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("host_not_installed");
}

fn no_host(rig: &PanelRig) -> Result<()> {
    let (_tab, panel) = rig.open("/submit.html")?;
    panel.wait_visible("#notice-host", SHORT)?;
    let notice = panel.text("#notice-host")?;
    ensure!(
        notice.contains("scripts/install.sh"),
        "the notice does not say what to run: {notice:?}"
    );
    ensure!(
        notice.contains("errand install"),
        "the notice does not name errand install: {notice:?}"
    );
    let view = panel.view()?;
    ensure!(view["host"] == "unavailable", "the host state: {view:#}");
    ensure!(view["run_disabled"] == true, "Do it is enabled without a host: {view:#}");
    panel.screenshots("host-missing", WIDTH)?;
    panel.screenshots("host-missing-320", 320)?;
    // Try again keeps saying so (and does not break the panel).
    panel.click("#retry-host")?;
    panel.wait_visible("#notice-host", SHORT)?;
    Ok(())
}

#[test]
fn first_run_no_model_and_pages_errand_cannot_use() {
    let rig = PanelRig::start(
        |o| o.model_setup = ModelSetup::Unconfigured,
        |_req, call| panic!("the scripted model was called ({call}) though none is configured"),
    );
    first_run(&rig).unwrap_or_else(|e| panic!("{e:#}"));
    rig.done("first_run_no_model_and_pages_errand_cannot_use");
}

fn first_run(rig: &PanelRig) -> Result<()> {
    let (tab, panel) = rig.open("/submit.html")?;
    panel.wait_connected()?;
    panel.wait_visible("#notice-model", SHORT)?;
    let notice = panel.text("#notice-model")?;
    ensure!(
        notice.contains("Ollama") && notice.contains("11434"),
        "the no-model notice: {notice:?}"
    );
    panel.screenshots("no-model", WIDTH)?;
    panel.click("#open-settings")?;
    ensure!(panel.view()?["tab"] == "settings", "Open Settings did not open the settings");
    // Nothing listens where the local Ollama would: the check says so.
    panel.click("#test-connection")?;
    panel.page.wait_for(
        "document.querySelector('#connection .verdict')?.textContent.includes('cannot')",
        LONG,
    )?;
    let verdict = panel.text("#connection")?;
    ensure!(
        verdict.contains("11434"),
        "the connection check does not name the server: {verdict:?}"
    );
    panel.screenshots("no-model-connection", WIDTH)?;

    // A task fails in plain words and points to the settings.
    panel.open_tab("task")?;
    panel.start_task("Press the Submit button")?;
    let view = panel.wait_finished(LONG)?;
    ensure!(view["status"] == "failed", "a task without a model ended as {view:#}");
    ensure!(
        panel.text(".turn .problem")?.contains("Open Settings"),
        "the failure does not offer the settings: {view:#}"
    );
    panel.screenshots("model-unreachable", WIDTH)?;
    panel.click("#new-task")?;

    for (url, what) in [
        ("chrome://version/", "a browser page"),
        ("https://chromewebstore.google.com/", "the Web Store"),
    ] {
        tab.call("Page.navigate", json!({"url": url}))?;
        if let Err(e) = panel.wait_visible("#page-note", SHORT) {
            bail!("no note on {what} ({url}): {e:#}; panel: {}", panel.view()?);
        }
        let view = panel.view()?;
        ensure!(view["run_disabled"] == true, "Do it is enabled on {what}: {view:#}");
        if url.starts_with("chrome:") {
            panel.screenshots("restricted-page", WIDTH)?;
        }
    }
    tab.call("Page.navigate", json!({"url": rig.fixtures.url("/submit.html")}))?;
    panel
        .page
        .wait_for("document.querySelector('#page-note').hidden && !document.querySelector('#run').disabled", SHORT)
        .context("the note stays after going back to a web page")?;
    Ok(())
}

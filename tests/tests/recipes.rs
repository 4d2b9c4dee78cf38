//! Recipes (issue 23), end to end: a task recorded on a fixture form
//! (`tests/fixtures/recipes/`) is saved from the side panel's History as
//! a recipe, then replayed from the panel — with other values and no model
//! call; on a redesigned copy of the form found again by its locators; on
//! a copy whose button changed, repaired by one model call and the repair
//! accepted; on a copy whose flow changed, handed to the agent; a secret
//! kept a placeholder in the file and filled at replay; the same in the
//! plain-JS build (`/csp/` pages); and `errand recipe` from the terminal.
//!
//! The changed copies are swapped in under the recorded address (the site
//! changed, the recipe did not), in a copy of the fixture folder the
//! test's server serves. The page's own state (`done.html` reads what the
//! form sent) judges each run.

use std::path::{Path, PathBuf};
use std::time::Duration;

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

fn done(text: &str) -> Reply {
    reply("Finish", json!([{"done": {"text": text, "success": true}}]))
}

/// The model: records the task step by step (intents differ per step),
/// repairs one step when asked to, and finishes a task handed over.
fn script(req: &Value, call: usize) -> Reply {
    let last = last_user_message(req).unwrap_or_default();
    let all = all_text(req);
    if last.contains("Signed up") {
        return done("signed up");
    }
    if all.contains("You are repairing one step") {
        // Whatever moves the sign-up on, on the page as it is now.
        let next =
            if last.contains("Create my account") { "Create my account" } else { "Continue" };
        return reply("Submit the form", json!([{"click": {"index": el(req, next)}}]));
    }
    if all.contains("could not go on") {
        if last.contains("your plan") {
            return reply(
                "Choose the plan and register",
                json!([
                    {"select_option": {"index": el(req, "Plan"), "options": ["Basic"]}},
                    {"click": {"index": el(req, "Register")}},
                ]),
            );
        }
        panic!("the handed-over agent is on an unexpected page:\n{last}");
    }
    // Recording, on form.html (the first calls): one intent per step.
    match call {
        0 => reply(
            "Enter the name and the e-mail",
            json!([
                {"fill": {"index": el(req, "Full name"), "text": "Ada Lovelace"}},
                {"fill": {"index": el(req, "Work e-mail"), "text": "ada@example.com"}},
            ]),
        ),
        1 => reply(
            "Choose the plan",
            json!([{"select_option": {"index": el(req, "Plan"), "options": ["Pro"]}}]),
        ),
        2 => reply("Submit the form", json!([{"click": {"index": el(req, "Register")}}])),
        n => panic!("unexpected model call {n}:\n{last}"),
    }
}

/// A copy of `tests/fixtures/recipes/` to serve (pages are swapped in it).
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("recipes");
    std::fs::create_dir_all(&to).unwrap();
    let from = errand_e2e::fixtures::fixtures_dir().join("recipes");
    for entry in std::fs::read_dir(&from).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    (dir, to)
}

/// The site changed: `page` is served at the recorded address.
fn swap_in(folder: &Path, page: &str) {
    std::fs::copy(folder.join(page), folder.join("form.html")).unwrap();
}

/// What `done.html` received.
fn received(tab: &errand_e2e::cdp::Page) -> Value {
    let ok = tab.wait_for("!!window.received", Duration::from_secs(10));
    let url = tab.url().unwrap_or_default();
    ok.unwrap_or_else(|e| panic!("not on done.html ({url}): {e:#}"));
    tab.eval("window.received").unwrap()
}

/// Records the task from the side panel, saves it as a recipe from the
/// History tab; returns the tab, the panel and the recipe's name.
fn record_and_save(rig: &Rig) -> (errand_e2e::cdp::Page, Panel, String) {
    record_and_save_at(rig, "/recipes/form.html")
}

fn record_and_save_at(rig: &Rig, path: &str) -> (errand_e2e::cdp::Page, Panel, String) {
    let (tab, _) = rig.run(path, TASK).unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    assert_eq!(
        received(&tab),
        json!({"fullname": "Ada Lovelace", "email": "ada@example.com", "plan": "Pro"})
    );
    let panel = side_panel::open(&rig.browser, &tab).unwrap();
    panel.wait_connected().unwrap();
    panel.open_tab("history").unwrap();
    panel.wait_visible("#history-list .past button.open", Duration::from_secs(10)).unwrap();
    panel.click("#history-list .past button.open").unwrap();
    panel.wait_visible("#save-recipe", Duration::from_secs(10)).unwrap();
    panel.click("#save-recipe").unwrap();
    let said = panel
        .wait_text("#save-recipe-status", "Saved as the recipe", Duration::from_secs(10))
        .unwrap();
    let name = said.split('“').nth(1).and_then(|s| s.split('”').next()).unwrap().to_owned();
    (tab, panel, name)
}

/// Runs the recipe from the History tab with `params`; returns the panel's
/// view at the end and how many model calls the run made.
fn run_recipe(rig: &Rig, panel: &Panel, name: &str, params: &[(&str, &str)]) -> (Value, usize) {
    panel.open_tab("history").unwrap();
    // Back from a task's detail, if one is open.
    let _ = panel.click("#history-back");
    // The tab lists the recipes again as it opens: fill in after that.
    std::thread::sleep(Duration::from_millis(1000));
    let item = format!(".recipe[data-recipe=\"{name}\"]");
    panel.wait_visible(&format!("{item} .run-recipe"), Duration::from_secs(10)).unwrap();
    for (k, v) in params {
        panel.fill(&format!("{item} input[data-param=\"{k}\"]"), v).unwrap();
    }
    let before = rig.model.requests().len();
    panel.click(&format!("{item} .run-recipe")).unwrap();
    panel.wait_status("running", Duration::from_secs(10)).ok();
    let view = panel.wait_finished(Duration::from_secs(90)).unwrap();
    rig.model.check().unwrap();
    (view, rig.model.requests().len() - before)
}

/// The newest task's steps: (evaluation, actions JSON).
fn last_task_steps(rig: &Rig) -> (String, String, Vec<(String, String)>) {
    let db = rig.browser.db_path();
    let conn = errand_e2e::store::open(&db).unwrap();
    let (id, task, status): (String, String, String) = conn
        .query_row("SELECT id, task, status FROM tasks ORDER BY rowid DESC LIMIT 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    let mut stmt = conn
        .prepare("SELECT evaluation, actions_json FROM steps WHERE task_id = ?1 ORDER BY step")
        .unwrap();
    let steps = stmt
        .query_map([&id], |r| Ok((r.get::<_, Option<String>>(0)?.unwrap_or_default(), r.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (task, status, steps)
}

/// The rungs that found each replayed step's element (`found by `x``).
fn rungs(steps: &[(String, String)]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|(e, _)| e.split("found by `").nth(1)?.split('`').next().map(str::to_owned))
        .collect()
}

#[test]
fn a_recipe_replays_other_values_without_the_model_and_survives_a_redesign() {
    let (_dir, folder) = fixture_copy();
    let rig = Rig::builder().script(script).fixtures_dir(folder.parent().unwrap()).build();
    let (tab, panel, name) = record_and_save(&rig);

    // The file: parameters from the task's values, intents, locators, checks.
    let file = rig.browser.data_dir().join("recipes").join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    for needle in [
        "version = 1",
        "{full_name}",
        "{work_e_mail}",
        "{plan}",
        "Choose the plan",
        "role = \"button\"",
    ] {
        assert!(text.contains(needle), "{needle} missing from the recipe:\n{text}");
    }

    // Other values, no model.
    let grace =
        [("full_name", "Grace Hopper"), ("work_e_mail", "grace@example.org"), ("plan", "Team")];
    let (view, calls) = run_recipe(&rig, &panel, &name, &grace);
    assert_eq!(view["status"], "done", "{view:#}\n{}", rig.browser.logs());
    assert_eq!(calls, 0, "the replay asked the model");
    assert_eq!(
        received(&tab),
        json!({"fullname": "Grace Hopper", "email": "grace@example.org", "plan": "Team"})
    );
    let (task, _, steps) = last_task_steps(&rig);
    assert!(task.starts_with("Replay of the recipe"), "{task}");
    assert_eq!(rungs(&steps).len(), 4, "{steps:#?}");

    // The site was redesigned: ids and classes renamed, fields reordered,
    // the name field in an open shadow root. Found by the locators.
    swap_in(&folder, "changed.html");
    let linus =
        [("full_name", "Linus Torvalds"), ("work_e_mail", "linus@example.net"), ("plan", "Pro")];
    let (view, calls) = run_recipe(&rig, &panel, &name, &linus);
    assert_eq!(view["status"], "done", "{view:#}\n{}", rig.browser.logs());
    assert_eq!(calls, 0, "the replay on the changed copy asked the model");
    assert_eq!(
        received(&tab),
        json!({"fullname": "Linus Torvalds", "email": "linus@example.net", "plan": "Pro"})
    );
    let (_, _, steps) = last_task_steps(&rig);
    let found = rungs(&steps);
    eprintln!("rungs on the changed copy: {found:?}");
    assert_eq!(found.len(), 4, "{steps:#?}");

    // From the terminal, as an OS scheduler would: save the recorded task
    // again under a name, list, replay in a browser of its own.
    let recorded = errand_e2e::store::tasks(&rig.browser.db_path()).unwrap().remove(0);
    let rusqlite::types::Value::Text(task_id) = recorded.id else { panic!("{recorded:?}") };
    let out = errand(&rig, &["recipe", "save", &task_id, "--name", "cli-signup"]);
    assert!(out.contains("saved the recipe `cli-signup` (4 steps)"), "{out}");
    assert!(out.contains("--param work_e_mail="), "{out}");
    let out = errand(&rig, &["recipe", "list"]);
    assert!(out.contains("cli-signup: 4 steps") && out.contains(&name), "{out}");
    let before = rig.model.requests().len();
    let out = errand(
        &rig,
        &[
            "recipe",
            "run",
            "cli-signup",
            "--json",
            "--param",
            "full_name=Ken Thompson",
            "--param",
            "work_e_mail=ken@example.com",
        ],
    );
    assert_eq!(rig.model.requests().len(), before, "the terminal's replay asked the model");
    assert!(out.contains("Replayed the recipe `cli-signup`"), "{out}");
    let (task, status, steps) = last_task_steps(&rig);
    assert_eq!(
        (task.starts_with("Replay of the recipe `cli-signup`"), status.as_str()),
        (true, "done")
    );
    let filled: String = steps.iter().map(|(_, a)| a.as_str()).collect();
    assert!(filled.contains("\"value\":\"Ken Thompson\""), "{filled}");
    rig.done("a_recipe_replays_other_values_without_the_model_and_survives_a_redesign");
}

/// Runs `errand ARGS` on the rig's data folder and model; returns its
/// output (it must succeed).
fn errand(rig: &Rig, args: &[&str]) -> String {
    errand_with_input(rig, args, "")
}

fn errand_with_input(rig: &Rig, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let data = rig.browser.data_dir();
    let mut child = std::process::Command::new(errand_e2e::browser::host_exe().unwrap())
        .args(args)
        .env("ERRAND_DATA_DIR", &data)
        .env("ERRAND_CONFIG_DIR", data.parent().unwrap().join("config"))
        .env("ERRAND_PLANNER", "0")
        .env("ERRAND_BASE_URL", rig.model.base_url())
        .env("ERRAND_MODEL", "scripted")
        .env("ERRAND_API_KEY", "test-key")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "errand {args:?} failed:\n{text}");
    text
}

#[test]
fn a_changed_button_is_repaired_by_one_model_call_and_the_repair_accepted() {
    let (_dir, folder) = fixture_copy();
    let rig = Rig::builder().script(script).fixtures_dir(folder.parent().unwrap()).build();
    let (tab, panel, name) = record_and_save(&rig);
    swap_in(&folder, "button.html");

    let grace =
        [("full_name", "Grace Hopper"), ("work_e_mail", "grace@example.org"), ("plan", "Team")];
    let (view, calls) = run_recipe(&rig, &panel, &name, &grace);
    assert_eq!(view["status"], "done", "{view:#}\n{}", rig.browser.logs());
    assert_eq!(calls, 1, "one model call repairs the one step");
    assert_eq!(
        received(&tab),
        json!({"fullname": "Grace Hopper", "email": "grace@example.org", "plan": "Team"})
    );
    let (_, _, steps) = last_task_steps(&rig);
    assert!(steps.iter().any(|(e, _)| e.starts_with("Repaired by the model")), "{steps:#?}");

    // Offered in the History tab; accepted, the next replay needs no model.
    let item = format!(".recipe[data-recipe=\"{name}\"]");
    panel.open_tab("history").unwrap();
    panel.wait_visible(&format!("{item} .accept-repairs"), Duration::from_secs(10)).unwrap();
    panel.screenshots("recipes", 360).unwrap();
    panel.click(&format!("{item} .accept-repairs")).unwrap();
    let file = rig.browser.data_dir().join("recipes").join(format!("{name}.toml"));
    rig.browser
        .wait_until("the repair written", Duration::from_secs(10), || {
            Ok(std::fs::read_to_string(&file)?.contains("Create my account"))
        })
        .unwrap();
    let (view, calls) = run_recipe(&rig, &panel, &name, &[]);
    assert_eq!(view["status"], "done", "{view:#}");
    assert_eq!(calls, 0, "the accepted repair still asked the model");
    assert_eq!(
        received(&tab),
        json!({"fullname": "Ada Lovelace", "email": "ada@example.com", "plan": "Pro"})
    );

    // From the terminal: `--accept-repairs` writes the repair at once.
    let recorded = errand_e2e::store::tasks(&rig.browser.db_path()).unwrap().remove(0);
    let rusqlite::types::Value::Text(task_id) = recorded.id else { panic!("{recorded:?}") };
    errand(&rig, &["recipe", "save", &task_id, "--name", "cli-button"]);
    let before = rig.model.requests().len();
    let out = errand(&rig, &["recipe", "run", "cli-button", "--accept-repairs"]);
    assert_eq!(rig.model.requests().len(), before + 1, "one repair call: {out}");
    assert!(out.contains("written into the recipe `cli-button`"), "{out}");
    let file = rig.browser.data_dir().join("recipes").join("cli-button.toml");
    assert!(std::fs::read_to_string(&file).unwrap().contains("Create my account"));
    let out = errand(&rig, &["recipe", "run", "cli-button"]);
    assert_eq!(rig.model.requests().len(), before + 1, "the written repair asked again: {out}");
    rig.done("a_changed_button_is_repaired_by_one_model_call_and_the_repair_accepted");
}

#[test]
fn a_changed_flow_is_handed_to_the_agent() {
    let (_dir, folder) = fixture_copy();
    let rig = Rig::builder().script(script).fixtures_dir(folder.parent().unwrap()).build();
    let (tab, panel, name) = record_and_save(&rig);
    swap_in(&folder, "flow.html");

    let grace =
        [("full_name", "Grace Hopper"), ("work_e_mail", "grace@example.org"), ("plan", "Basic")];
    let (view, calls) = run_recipe(&rig, &panel, &name, &grace);
    assert_eq!(view["status"], "done", "{view:#}\n{}", rig.browser.logs());
    let requests = rig.model.requests();
    let replay = &requests[requests.len() - calls..];
    assert!(all_text(&replay[0]).contains("You are repairing one step"), "first: the repair");
    let asked: Vec<String> =
        replay.iter().map(|r| last_user_message(r).unwrap_or_default()).collect();
    assert!(
        calls >= 2 && all_text(&replay[1]).contains("could not go on"),
        "then the agent; the replay's {calls} model calls asked:\n{}\n{}",
        asked.join("\n-----\n"),
        rig.browser.logs()
    );
    assert_eq!(
        received(&tab),
        json!({"fullname": "Grace Hopper", "email": "grace@example.org", "plan": "Basic"})
    );
    rig.done("a_changed_flow_is_handed_to_the_agent");
}

const SECRET: &str = "hunter2-xyzzy";

fn login_script(req: &Value, call: usize) -> Reply {
    let last = last_user_message(req).unwrap_or_default();
    if last.contains("Logged in as") {
        return done("logged in");
    }
    match call {
        0 => reply(
            "Enter the user name and the password",
            json!([
                {"fill": {"index": el(req, "User name"), "text": "ada"}},
                {"fill": {"index": el(req, "Password"), "text": "{{secret:pw}}"}},
            ]),
        ),
        1 => reply("Log in", json!([{"click": {"index": el(req, "Log in")}}])),
        n => panic!("unexpected model call {n}:\n{last}"),
    }
}

/// A secret stays a placeholder in the recipe file; the replay fills the
/// value (only on its origin, into the password field, as in a task).
#[test]
fn a_secret_stays_a_placeholder_in_the_recipe_and_the_replay_fills_it() {
    let (_dir, folder) = fixture_copy();
    let rig = Rig::builder().script(login_script).fixtures_dir(folder.parent().unwrap()).build();
    let origin = rig.fixtures.url("/").trim_end_matches('/').to_owned();
    let out = errand_with_input(&rig, &["memory", "secret", "pw", "--origin", &origin], SECRET);
    assert!(!out.contains(SECRET), "{out}");
    let (tab, _) = rig
        .run("/recipes/login.html", "Log in as ada with the password {{secret:pw}}")
        .unwrap_or_else(|e| panic!("{e:#}\n{}", rig.browser.logs()));
    tab.wait_for("!!window.got", Duration::from_secs(10)).unwrap();
    assert_eq!(tab.eval("window.got").unwrap(), json!({"user": "ada", "pw": SECRET}));

    let recorded = errand_e2e::store::tasks(&rig.browser.db_path()).unwrap().remove(0);
    let rusqlite::types::Value::Text(task_id) = recorded.id else { panic!("{recorded:?}") };
    errand(&rig, &["recipe", "save", &task_id, "--name", "login"]);
    let file = rig.browser.data_dir().join("recipes").join("login.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(SECRET), "the secret's value is in the recipe:\n{text}");
    assert!(text.contains("{{secret:pw}}") && text.contains("{user_name}"), "{text}");

    let panel = side_panel::open(&rig.browser, &tab).unwrap();
    panel.wait_connected().unwrap();
    let (view, calls) = run_recipe(&rig, &panel, "login", &[("user_name", "grace")]);
    assert_eq!(view["status"], "done", "{view:#}\n{}", rig.browser.logs());
    assert_eq!(calls, 0);
    tab.wait_for("window.got && window.got.user === 'grace'", Duration::from_secs(10)).unwrap();
    assert_eq!(tab.eval("window.got").unwrap(), json!({"user": "grace", "pw": SECRET}));
    for req in rig.model.requests() {
        assert!(!req.to_string().contains(SECRET), "the model was sent the secret");
    }
    rig.done("a_secret_stays_a_placeholder_in_the_recipe_and_the_replay_fills_it");
}

/// The builds the newest task's steps observed with.
fn last_task_builds(rig: &Rig) -> Vec<String> {
    let conn = errand_e2e::store::open(&rig.browser.db_path()).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT build FROM steps WHERE task_id = (SELECT id FROM tasks ORDER BY rowid DESC LIMIT 1)
             AND build IS NOT NULL",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<Vec<String>, _>>().unwrap()
}

/// The same on pages whose CSP refuses WebAssembly: the locators are
/// taken and the locate command answered by the plain-JS build.
#[test]
fn the_js_build_takes_locators_and_locates_too() {
    let (_dir, folder) = fixture_copy();
    let rig = Rig::builder().script(script).fixtures_dir(folder.parent().unwrap()).build();
    let (tab, panel, name) = record_and_save_at(&rig, "/csp/recipes/form.html");
    let text = std::fs::read_to_string(
        rig.browser.data_dir().join("recipes").join(format!("{name}.toml")),
    )
    .unwrap();
    assert!(
        text.contains("/csp/recipes/form.html") && text.contains("role = \"button\""),
        "{text}"
    );
    swap_in(&folder, "changed.html");
    let grace =
        [("full_name", "Grace Hopper"), ("work_e_mail", "grace@example.org"), ("plan", "Team")];
    let (view, calls) = run_recipe(&rig, &panel, &name, &grace);
    assert_eq!(view["status"], "done", "{view:#}\n{}", rig.browser.logs());
    assert_eq!(calls, 0);
    assert_eq!(
        received(&tab),
        json!({"fullname": "Grace Hopper", "email": "grace@example.org", "plan": "Team"})
    );
    let (_, _, steps) = last_task_steps(&rig);
    assert_eq!(rungs(&steps).len(), 4, "{steps:#?}");
    let builds = last_task_builds(&rig);
    assert!(!builds.is_empty() && builds.iter().all(|b| b == "js"), "{builds:?}");
    rig.done("the_js_build_takes_locators_and_locates_too");
}

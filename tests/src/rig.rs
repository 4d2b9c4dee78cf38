//! One end-to-end test's parts: the scripted model, the fixture server and
//! the browser with Errand — and running a task from the real side panel.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::browser::{LaunchOptions, TestBrowser};
use crate::cdp::Page;
use crate::fixtures::FixtureServer;
use crate::model::{Reply, ScriptedModel, elements, find_element, last_user_message};
use crate::side_panel::{self, Panel};
use crate::store;

/// The servers and the browser of one test. The browser is declared first
/// so that it is dropped first: on a panic it prints Chromium's and the
/// host's logs while the servers still run.
pub struct Rig {
    pub browser: TestBrowser,
    pub model: ScriptedModel,
    pub fixtures: FixtureServer,
}

/// The scripted model's wire format the host is set up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Provider {
    /// OpenAI-compatible chat completions (the default).
    #[default]
    OpenAi,
    /// Anthropic Messages (`ERRAND_PROVIDER=anthropic`).
    Anthropic,
    /// Gemini generateContent (`ERRAND_PROVIDER=gemini`).
    Gemini,
}

type Script = Box<dyn Fn(&Value, usize) -> Reply + Send + Sync + 'static>;
type Setup = Box<dyn FnOnce(&mut LaunchOptions)>;

/// How a test's [`Rig`] is made: `Rig::builder().script(f).build()`, with
/// what the test needs besides (`.planner(true)`, `.env(k, v)`,
/// `.provider(Provider::Anthropic)`, `.options(|o| …)` for anything else of
/// [`LaunchOptions`]). [`Rig::start`] is the shortcut for a script alone.
#[must_use]
pub struct RigBuilder {
    script: Option<Script>,
    provider: Provider,
    fixtures_dir: Option<std::path::PathBuf>,
    setup: Vec<Setup>,
}

impl RigBuilder {
    /// The model's script: `script(request_body, call_index)` (without one,
    /// every model call is a test failure).
    pub fn script(
        mut self,
        script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.script = Some(Box::new(script));
        self
    }

    /// The wire format the host speaks to the scripted model.
    pub fn provider(mut self, provider: Provider) -> Self {
        self.provider = provider;
        self
    }

    /// Lets the host's planner run (off by default: scripts answer every call).
    pub fn planner(self, on: bool) -> Self {
        self.options(move |o| o.planner = on)
    }

    /// One more environment variable for Chromium and the host.
    pub fn env(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let (key, value) = (key.into(), value.into());
        self.options(move |o| o.env.push((key, value)))
    }

    /// One more Chromium flag.
    pub fn arg(self, arg: impl Into<String>) -> Self {
        let arg = arg.into();
        self.options(move |o| o.args.push(arg))
    }

    /// Serves the fixtures from `dir` instead of `tests/fixtures/`.
    pub fn fixtures_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.fixtures_dir = Some(dir.into());
        self
    }

    /// Any other launch option (applied in order, after the model's).
    pub fn options(mut self, setup: impl FnOnce(&mut LaunchOptions) + 'static) -> Self {
        self.setup.push(Box::new(setup));
        self
    }

    /// Starts the model, the fixture server and the browser.
    pub fn build(self) -> Rig {
        let script = self.script.unwrap_or_else(|| {
            Box::new(|_: &Value, call: usize| {
                panic!("model call {call}, and the test has no script")
            })
        });
        let model = ScriptedModel::start(script).expect("starting the scripted model");
        let fixtures = match &self.fixtures_dir {
            Some(dir) => FixtureServer::start_in(dir.clone()),
            None => FixtureServer::start(),
        }
        .expect("starting the fixture server");
        let mut opts = match self.provider {
            Provider::OpenAi => LaunchOptions::new(model.base_url()),
            Provider::Anthropic => {
                let mut o = LaunchOptions::new(format!("{}/v1", model.url()));
                o.env.push(("ERRAND_PROVIDER".into(), "anthropic".into()));
                o
            }
            Provider::Gemini => {
                let mut o = LaunchOptions::new(format!("{}/v1beta", model.url()));
                o.env.push(("ERRAND_PROVIDER".into(), "gemini".into()));
                o
            }
        };
        for setup in self.setup {
            setup(&mut opts);
        }
        let browser =
            TestBrowser::launch(opts).unwrap_or_else(|e| panic!("launching the browser: {e:#}"));
        Rig { browser, model, fixtures }
    }
}

impl Rig {
    /// A builder for a rig with more than a script.
    pub fn builder() -> RigBuilder {
        RigBuilder {
            script: None,
            provider: Provider::default(),
            fixtures_dir: None,
            setup: Vec::new(),
        }
    }

    /// Starts the model with `script`, the fixture server and the browser
    /// (`Rig::builder().script(script).build()`).
    pub fn start(script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> Rig {
        Rig::builder().script(script).build()
    }

    /// Reports the test's own time (the browser's turn, launch included).
    pub fn done(&self, name: &str) {
        eprintln!("{name}: passed in {:.1} s", self.browser.running_for().as_secs_f64());
    }

    /// Opens `path` in a tab and the side panel for it.
    pub fn open(&self, path: &str) -> Result<(Page, Panel)> {
        let tab = self.browser.new_page(&self.fixtures.url(path))?;
        let panel = side_panel::open(&self.browser, &tab)?;
        eprintln!("side panel opened as {:?}", panel.how);
        Ok((tab, panel))
    }

    /// The one stored task, once its status is `status` (the host may store
    /// it just after telling the panel).
    pub fn stored_task(&self, status: &str) -> Result<store::TaskRow> {
        let db = self.browser.db_path();
        let mut last = None;
        self.browser
            .wait_until(
                &format!("a task stored with status {status:?}"),
                Duration::from_secs(5),
                || {
                    let tasks = store::tasks(&db)?;
                    let ok = tasks.len() == 1 && tasks[0].status == status;
                    last = Some(tasks);
                    Ok(ok)
                },
            )
            .with_context(|| format!("stored tasks: {last:#?}"))?;
        Ok(last.unwrap_or_default().remove(0))
    }

    /// Opens `path`, runs `task` from the side panel until it is done, and
    /// returns the page and the stored steps' action records.
    pub fn run(&self, path: &str, task: &str) -> Result<(Page, Vec<Value>)> {
        let tab = self.browser.new_page(&self.fixtures.url(path))?;
        let records = self.run_in(&tab, task)?;
        Ok((tab, records))
    }

    /// Runs `task` from the side panel of `tab` until it is done; returns
    /// the stored steps' action records.
    pub fn run_in(&self, tab: &Page, task: &str) -> Result<Vec<Value>> {
        let panel = side_panel::open(&self.browser, tab)?;
        panel.start_task(task)?;
        let view = panel.wait_finished(Duration::from_secs(90))?;
        self.model.check()?;
        ensure!(view["status"] == "done", "the task ended as {}: {view:#}", view["status"]);
        let db = self.browser.db_path();
        let mut tasks = Vec::new();
        self.browser.wait_until("the task stored as done", Duration::from_secs(5), || {
            tasks = store::tasks(&db)?;
            Ok(tasks.len() == 1 && tasks[0].status == "done")
        })?;
        let steps = store::steps(&db, &tasks[0].id)?;
        let records = steps
            .iter()
            .map(|s| serde_json::from_str::<Value>(&s.actions_json))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(records)
    }
}

/// Every action the page carried out in the rig's tasks, in order, from the
/// stored steps (each record's `ms`): name, whether it worked, and
/// milliseconds from sending it to having its verified effect.
pub fn action_times(rig: &Rig) -> Vec<(String, bool, f64)> {
    let db = rig.browser.db_path();
    let mut times = Vec::new();
    for task in store::tasks(&db).unwrap() {
        for step in store::steps(&db, &task.id).unwrap() {
            let records: Vec<Value> = serde_json::from_str(&step.actions_json).unwrap();
            for r in records {
                let Some(ms) = r["ms"].as_f64() else { continue };
                let action = &r["action"];
                let name = action
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| action.as_object().and_then(|o| o.keys().next().cloned()));
                times.push((name.unwrap_or_default(), r["ok"] == true, ms));
            }
        }
    }
    times
}

/// A model answer (Errand's JSON dialect) with these actions.
pub fn answer(actions: Value) -> Reply {
    Reply::json(&json!({
        "evaluation_previous_goal": "ok", "memory": "", "next_goal": "act",
        "actions": actions,
    }))
}

/// The number of the element named `label` in the request's element list:
/// a field whose tag names it first (`5<email="E-mail">`, the older
/// `[5]<email "E-mail">`; not a `<label>`), else by its text.
pub fn element_by_label(req: &Value, label: &str) -> u32 {
    let text = last_user_message(req).unwrap_or_default();
    let field = format!(" \"{label}");
    let named = |d: &str| {
        crate::model::tag_name(d).is_some_and(|n| n.starts_with(label)) || d.contains(&field)
    };
    if let Some((n, _)) =
        elements(&text).into_iter().find(|(_, d)| !d.starts_with("<label") && named(d))
    {
        return n;
    }
    find_element(req, label).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The record of the first stored action named `name` (e.g. `"fill"`) whose
/// JSON mentions `needle`.
pub fn record<'a>(records: &'a [Value], name: &str, needle: &str) -> Result<&'a Value> {
    records
        .iter()
        .flat_map(|step| step.as_array().into_iter().flatten())
        .find(|r| r["action"].get(name).is_some() && r["action"].to_string().contains(needle))
        .with_context(|| format!("no stored `{name}` action mentioning {needle:?}: {records:#?}"))
}

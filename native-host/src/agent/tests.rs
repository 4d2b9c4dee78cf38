//! The agent loop against its ports in memory: a fake browser, a fake
//! operator and a scripted model; no host, no socket, no extension.

use std::collections::VecDeque;
use std::sync::Mutex;

use errand_protocol::{Effect, ElementInfo, FilePayload, TabSummary};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::Overrides;
use crate::llm::{BoxFuture, Usage};

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

const CLICK_1: &str = r#"{"evaluation_previous_goal": "Start", "memory": "", "next_goal": "Submit", "actions": [{"click": {"index": 1}}]}"#;
const DONE: &str = r#"{"evaluation_previous_goal": "Submitted", "memory": "", "next_goal": "Finish", "actions": [{"done": {"text": "Form sent", "success": true}}]}"#;

/// A model answering from a script, noting what it was sent.
struct Scripted {
    name: &'static str,
    answers: Mutex<VecDeque<String>>,
    seen: Mutex<Vec<Vec<ChatMessage>>>,
}

impl Scripted {
    fn new(name: &'static str, answers: &[&str]) -> Arc<Scripted> {
        Arc::new(Scripted {
            name,
            answers: Mutex::new(answers.iter().map(|a| (*a).to_owned()).collect()),
            seen: Mutex::new(Vec::new()),
        })
    }
}

impl Provider for Scripted {
    fn model(&self) -> &str {
        self.name
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [ChatMessage],
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            lock(&self.seen).push(messages.to_vec());
            let next = lock(&self.answers).pop_front();
            match next {
                Some(text) => Ok(Completion {
                    text,
                    usage: Some(Usage { prompt_tokens: 100, completion_tokens: 10 }),
                }),
                None => {
                    cancel.cancelled().await;
                    Err(LlmError::Cancelled)
                }
            }
        })
    }
}

/// One tab with one page: a form whose button is `button`.
#[derive(Clone)]
struct FakeBrowser(Arc<BrowserState>);

struct BrowserState {
    page: Observation,
    acts: Mutex<Vec<Action>>,
    cleaned: Mutex<Vec<i64>>,
}

impl FakeBrowser {
    fn new(button: &str) -> FakeBrowser {
        let page = Observation {
            url: "https://form.test/".into(),
            title: "Form".into(),
            build: Some(Build::Wasm),
            elements: vec![ElementInfo {
                index: 1,
                tag: "button".into(),
                name: button.into(),
                ..Default::default()
            }],
            text: format!("[1]<button>{button}"),
            ..Default::default()
        };
        FakeBrowser(Arc::new(BrowserState {
            page,
            acts: Mutex::new(Vec::new()),
            cleaned: Mutex::new(Vec::new()),
        }))
    }

    fn tab(&self) -> TabInfo {
        TabInfo { tab_id: 7, url: self.0.page.url.clone(), title: self.0.page.title.clone() }
    }
}

impl Browser for FakeBrowser {
    async fn observe(&self, _tab_id: i64, _marks: bool) -> Result<Observation, BrowserError> {
        Ok(self.0.page.clone())
    }

    async fn act(
        &self,
        _tab_id: i64,
        action: Action,
        _guard: Guard,
    ) -> Result<Effect, BrowserError> {
        let summary = format!("did {}", action.name());
        // What the content script reads of the element (recipes).
        let locator = action.element().map(|_| errand_protocol::Locator {
            tag: "button".into(),
            role: Some("button".into()),
            name: Some(self.0.page.elements[0].name.clone()),
            ..Default::default()
        });
        lock(&self.0.acts).push(action);
        Ok(Effect { summary, url: self.0.page.url.clone(), locator, ..Default::default() })
    }

    async fn locate(
        &self,
        _tab_id: i64,
        locator: errand_protocol::Locator,
    ) -> Result<errand_protocol::Located, BrowserError> {
        let el = &self.0.page.elements[0];
        if locator.name.as_deref() == Some(el.name.as_str()) {
            Ok(errand_protocol::Located { index: el.index, rung: "role_name".into() })
        } else {
            Err(BrowserError::Refused {
                code: ErrorCode::NoSuchElement,
                message: "no locator found exactly one element".into(),
            })
        }
    }

    async fn set_files(
        &self,
        _tab_id: i64,
        _index: u32,
        _files: Vec<FilePayload>,
        _: &Permit,
    ) -> Result<Effect, BrowserError> {
        Ok(Effect::default())
    }

    async fn navigate(
        &self,
        _tab_id: i64,
        _url: &str,
        _: &Permit,
    ) -> Result<TabInfo, BrowserError> {
        Ok(self.tab())
    }

    async fn open_tab(&self, _url: &str, _: &Permit) -> Result<TabInfo, BrowserError> {
        Ok(self.tab())
    }

    async fn active_tab(&self) -> Result<TabInfo, BrowserError> {
        Ok(self.tab())
    }

    async fn activate_tab(&self, _tab_id: i64) -> Result<TabInfo, BrowserError> {
        Ok(self.tab())
    }

    async fn close_tab(&self, _tab_id: i64) -> Result<(), BrowserError> {
        Ok(())
    }

    async fn list_tabs(&self) -> Result<Vec<TabSummary>, BrowserError> {
        let t = self.tab();
        Ok(vec![TabSummary { tab_id: t.tab_id, url: t.url, title: t.title, active: true }])
    }

    async fn capture(&self, _tab_id: i64) -> Result<String, BrowserError> {
        Err(BrowserError::Disconnected)
    }

    async fn cleanup(&self, tab_id: i64) -> Result<(), BrowserError> {
        lock(&self.0.cleaned).push(tab_id);
        Ok(())
    }
}

/// The user: decides every approval with `decision`; may save new settings
/// when a step is reported.
#[derive(Clone)]
struct FakeOperator(Arc<OperatorState>);

struct OperatorState {
    decision: Decision,
    events: Mutex<Vec<TaskEvent>>,
    ended: Mutex<Vec<String>>,
    /// Sent once, after the first step's report: a settings save mid-task.
    after_step_1: Mutex<Option<(watch::Sender<Setup>, Setup)>>,
}

impl FakeOperator {
    fn new(decision: Decision) -> FakeOperator {
        FakeOperator(Arc::new(OperatorState {
            decision,
            events: Mutex::new(Vec::new()),
            ended: Mutex::new(Vec::new()),
            after_step_1: Mutex::new(None),
        }))
    }

    fn events(&self) -> Vec<TaskEvent> {
        lock(&self.0.events).clone()
    }

    fn steps(&self) -> Vec<StepReport> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                TaskEvent::Step(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    fn outcome(&self) -> Outcome {
        match self.events().last() {
            Some(TaskEvent::Finished { outcome }) => outcome.clone(),
            other => panic!("the task did not finish: {other:?}"),
        }
    }
}

impl Operator for FakeOperator {
    async fn emit(&self, _task_id: &str, event: TaskEvent, _labels: Vec<String>) {
        let first_step = matches!(&event, TaskEvent::Step(r) if r.step == 1);
        lock(&self.0.events).push(event);
        if first_step {
            if let Some((tx, setup)) = lock(&self.0.after_step_1).take() {
                tx.send_replace(setup);
            }
        }
    }

    fn await_answer(&self, _task_id: &str) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send("yes".to_owned());
        rx
    }

    fn await_approval(&self, _task_id: &str) -> oneshot::Receiver<Decision> {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(self.0.decision);
        rx
    }

    fn ended(&self, task_id: &str) {
        lock(&self.0.ended).push(task_id.to_owned());
    }
}

fn settings(dir: &std::path::Path) -> Settings {
    let flags = Overrides { max_steps: Some(5), ..Default::default() };
    let mut s = Settings::resolve(
        Default::default(),
        &|_| None,
        &flags,
        dir.join("config"),
        dir.join("data"),
    )
    .unwrap();
    // Each model call is scripted: no planner or validator calls.
    s.planner = false;
    s.validate = false;
    s
}

struct Run {
    browser: FakeBrowser,
    operator: FakeOperator,
    store: Store,
    id: String,
}

/// Runs one task to its end in memory.
async fn run_task(
    dir: &std::path::Path,
    model: Arc<Scripted>,
    browser: FakeBrowser,
    operator: FakeOperator,
    setup_tx: Option<watch::Sender<Setup>>,
) -> Run {
    let settings = Arc::new(settings(dir));
    let store = Store::open_in(&settings.data_dir).unwrap();
    let id = "task-1".to_owned();
    store.create_task(&id, "Send the form", Some("https://form.test/"), None).unwrap();
    let setup_tx =
        setup_tx.unwrap_or_else(|| watch::Sender::new(Setup { settings, model: model.clone() }));
    let cx = Context {
        browser: browser.clone(),
        operator: operator.clone(),
        setup: setup_tx.subscribe(),
        store: store.clone(),
    };
    let spec = TaskSpec {
        id: id.clone(),
        task: "Send the form".into(),
        tab_id: None,
        url: Some("https://form.test/".into()),
        max_steps: 5,
        context: None,
        allow_sites: Vec::new(),
    };
    let (_pause_tx, pause) = watch::channel(None);
    tokio::time::timeout(Duration::from_secs(10), run(cx, spec, Stopper::default(), pause))
        .await
        .expect("the task ends");
    Run { browser, operator, store, id }
}

#[tokio::test]
async fn observes_clicks_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new("scripted", &[CLICK_1, DONE]);
    let r = run_task(
        dir.path(),
        model.clone(),
        FakeBrowser::new("Submit"),
        FakeOperator::new(Decision::Approved),
        None,
    )
    .await;
    assert_eq!(r.operator.outcome(), Outcome::Done { answer: "Form sent".into(), success: true });
    assert!(matches!(&r.operator.events()[0], TaskEvent::Started { tab_id: 7, .. }));
    let steps = r.operator.steps();
    assert_eq!(steps.len(), 2);
    assert!(steps[0].actions[0].ok);
    assert_eq!(steps[0].actions[0].detail, "did click");
    let acts = lock(&r.browser.0.acts).clone();
    assert!(matches!(acts.as_slice(), [Action::Click { index: 1, .. }]), "{acts:?}");
    // The page is cleaned up and the operator told, before `finished`.
    assert_eq!(*lock(&r.browser.0.cleaned), vec![7]);
    assert_eq!(*lock(&r.operator.0.ended), vec![r.id.clone()]);
    let t = r.store.task(&r.id).unwrap().unwrap();
    assert_eq!((t.status.as_str(), t.steps, t.tokens_in), ("done", 2, 200));
    // The second prompt recalls the first step.
    assert!(lock(&model.seen)[1][1].content.contains("click [1] <button> Submit → ok: did click"));
}

#[tokio::test]
async fn a_rejected_approval_is_not_done_and_the_model_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new("scripted", &[CLICK_1, DONE]);
    let r = run_task(
        dir.path(),
        model.clone(),
        FakeBrowser::new("Buy now"),
        FakeOperator::new(Decision::Rejected),
        None,
    )
    .await;
    assert!(lock(&r.browser.0.acts).is_empty(), "the click was not carried out");
    let approval = r.operator.events().into_iter().find_map(|e| match e {
        TaskEvent::Approval { element, .. } => Some(element),
        _ => None,
    });
    assert_eq!(approval.as_deref(), Some("<button> Buy now"));
    let steps = r.operator.steps();
    assert!(!steps[0].actions[0].ok);
    assert_eq!(steps[0].actions[0].detail, prompt::REJECTED_BY_USER);
    assert!(lock(&model.seen)[1][1].content.contains(prompt::REJECTED_BY_USER));
    assert!(matches!(r.operator.outcome(), Outcome::Done { .. }));
}

#[tokio::test]
async fn a_broken_answer_is_asked_for_again_with_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = Scripted::new("scripted", &["I would click the button.", CLICK_1, DONE]);
    let r = run_task(
        dir.path(),
        model.clone(),
        FakeBrowser::new("Submit"),
        FakeOperator::new(Decision::Approved),
        None,
    )
    .await;
    let seen = lock(&model.seen);
    assert_eq!(seen.len(), 3);
    // The re-ask: the prompt, the broken answer, the parse error.
    assert_eq!(seen[1].len(), seen[0].len() + 2);
    assert!(seen[1].last().unwrap().content.contains("no JSON object"), "{:?}", seen[1].last());
    let steps = r.operator.steps();
    assert!(steps[0].actions[0].ok, "the step ran the second answer");
    assert_eq!(steps[0].tokens, 220, "both calls are charged");
    assert!(matches!(r.operator.outcome(), Outcome::Done { success: true, .. }));
}

#[tokio::test]
async fn a_settings_change_mid_task_switches_the_model_and_its_price() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join(crate::agent::budget::PRICES_FILE),
        "[models.model-a]\ninput = 1000\noutput = 1000\n[models.model-b]\ninput = 10\noutput = 10\n",
    )
    .unwrap();
    let a = Scripted::new("model-a", &[CLICK_1]);
    let b = Scripted::new("model-b", &[DONE]);
    let first = Setup { settings: Arc::new(settings(dir.path())), model: a.clone() };
    let tx = watch::Sender::new(first.clone());
    let operator = FakeOperator::new(Decision::Approved);
    let second = Setup { settings: first.settings.clone(), model: b.clone() };
    *lock(&operator.0.after_step_1) = Some((tx.clone(), second));
    let r = run_task(dir.path(), a.clone(), FakeBrowser::new("Submit"), operator, Some(tx)).await;

    assert_eq!((lock(&a.seen).len(), lock(&b.seen).len()), (1, 1), "step 2 asked the new model");
    let steps = r.operator.steps();
    // 100 tokens in and 10 out: at model-a's price, then at model-b's.
    let costs: Vec<f64> = steps.iter().map(|s| s.cost_usd.unwrap()).collect();
    assert!((costs[0] - 0.11).abs() < 1e-9, "{costs:?}");
    assert!((costs[1] - 0.0011).abs() < 1e-9, "{costs:?}");
    assert!((steps[1].total_cost_usd.unwrap() - 0.1111).abs() < 1e-9);
    assert!(matches!(r.operator.outcome(), Outcome::Done { .. }));
}

/// Replays the recipe of task `from` (in `dir`'s store) as a task.
async fn replay_task(
    dir: &std::path::Path,
    from: &str,
    model: Arc<Scripted>,
    browser: FakeBrowser,
    operator: FakeOperator,
) -> Run {
    let settings = Arc::new(settings(dir));
    let store = Store::open_in(&settings.data_dir).unwrap();
    let saved = crate::memory::recipe::Recipe::from_task(&store, from, Some("form")).unwrap();
    let applied = saved.with_params(&[]).unwrap();
    let id = "replay-1".to_owned();
    store
        .create_task(&id, "Replay of the recipe `form`", Some("https://form.test/"), None)
        .unwrap();
    let setup_tx = watch::Sender::new(Setup { settings, model: model.clone() });
    let cx = Context {
        browser: browser.clone(),
        operator: operator.clone(),
        setup: setup_tx.subscribe(),
        store: store.clone(),
    };
    let spec = TaskSpec {
        id: id.clone(),
        task: applied.task.clone(),
        tab_id: None,
        url: Some(applied.start_url.clone()),
        max_steps: 5,
        context: None,
        allow_sites: Vec::new(),
    };
    let (_pause_tx, pause) = watch::channel(None);
    let replay = super::replay::Replay { saved, applied };
    let ran = super::replay::run(cx, spec, replay, Stopper::default(), pause);
    tokio::time::timeout(Duration::from_secs(10), ran).await.expect("the replay ends");
    Run { browser, operator, store, id }
}

#[tokio::test]
async fn a_recorded_task_replays_without_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let browser = FakeBrowser::new("Submit");
    let model = Scripted::new("scripted", &[CLICK_1, DONE]);
    run_task(dir.path(), model, browser.clone(), FakeOperator::new(Decision::Approved), None).await;

    let model = Scripted::new("scripted", &[]);
    let operator = FakeOperator::new(Decision::Approved);
    let r = replay_task(dir.path(), "task-1", model.clone(), browser, operator).await;
    assert!(matches!(r.operator.outcome(), Outcome::Done { success: true, .. }));
    assert!(lock(&model.seen).is_empty(), "the replay asked the model");
    assert_eq!(lock(&r.browser.0.acts).len(), 2, "clicked when recorded and when replayed");
    let steps = r.store.steps(&r.id).unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].evaluation, "Replayed with no model (found by `role_name`)");
    assert_eq!(steps[0].next_goal, "Submit");
}

#[tokio::test]
async fn approvals_apply_at_replay_and_a_rejected_step_goes_to_the_model_then_the_agent() {
    const INFEASIBLE: &str = r#"{"evaluation_previous_goal": "", "memory": "", "next_goal": "Stop", "actions": [{"report_infeasible": {"reason": "the user said no"}}]}"#;
    let dir = tempfile::tempdir().unwrap();
    let browser = FakeBrowser::new("Delete my account");
    let model = Scripted::new("scripted", &[CLICK_1, DONE]);
    run_task(dir.path(), model, browser.clone(), FakeOperator::new(Decision::Approved), None).await;
    assert_eq!(lock(&browser.0.acts).len(), 1);

    // The user says no at replay: nothing is clicked; one repair call (its
    // click is asked about and refused too), then the agent.
    let model = Scripted::new("scripted", &[CLICK_1, INFEASIBLE]);
    let operator = FakeOperator::new(Decision::Rejected);
    let r = replay_task(dir.path(), "task-1", model.clone(), browser, operator).await;
    assert_eq!(lock(&r.browser.0.acts).len(), 1, "a rejected action was carried out");
    let approvals =
        r.operator.events().iter().filter(|e| matches!(e, TaskEvent::Approval { .. })).count();
    assert_eq!(approvals, 2);
    let seen = lock(&model.seen);
    assert_eq!(seen.len(), 2);
    assert!(seen[0][1].content.contains("You are repairing one step"));
    // The step's intent and its failure (a model's and a page's words) are
    // fenced data in the repair's task, not part of its instructions.
    let repair = seen[0][1].content.split("You are repairing one step").nth(1).unwrap();
    let (before, fenced) = repair.split_once(super::fence::BEGIN).expect("a fence");
    assert!(!before.contains("The step:") && !before.contains("failed:"), "{repair}");
    let fenced = fenced.split(super::fence::END).next().unwrap();
    assert!(fenced.contains("The step: "), "{fenced}");
    assert!(fenced.contains("replaying it failed"), "{fenced}");
    assert!(seen[1][1].content.contains("could not go on"));
    assert!(matches!(r.operator.outcome(), Outcome::Done { success: false, .. }));
}

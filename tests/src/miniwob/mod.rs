//! MiniWoB++ (`miniwob==1.1.0` from PyPI) through Errand's whole pipeline.
//!
//! The task pages are served on 127.0.0.1 and opened in the test browser
//! with the extension; an episode starts with a fixed seed in the page's own
//! world (`Math.seedrandom(seed); core.startEpisodeReal()`), MiniWoB's own
//! instruction (`core.getUtterance()`) is typed into the real side panel as
//! the user's task, the real host runs its loop — prompts, parser, content
//! script, actions — and the reward is read from MiniWoB's globals
//! (`WOB_REWARD_GLOBAL`, > 0 is success). The model is either the scripted
//! [`solver`] or any real provider.

pub mod listing;
pub mod more;
pub mod solver;
pub mod steps;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::browser::{TestBrowser, repo_root};
use crate::cdp::Page;
use crate::fixtures::FixtureServer;
use crate::model::{ScriptedModel, all_text};
use crate::rig::Rig;
use crate::side_panel::{self, Panel};
use errand_host::config::ProviderKind;
use solver::Solver;
use std::sync::atomic::{AtomicI64, Ordering};

/// The MiniWoB++ release whose pages are used.
pub const VERSION: &str = "1.1.0";

/// MiniWoB's `html/` folder, fetched from PyPI into `.tools/` when missing.
pub fn html_dir() -> Result<PathBuf> {
    let root = repo_root().join(".tools").join(format!("miniwob-{VERSION}"));
    let html = root.join("miniwob").join("html");
    if html.join("miniwob").join("click-button.html").is_file() {
        return Ok(html);
    }
    let download = tempfile::tempdir()?;
    let status = Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir"])
        .arg(format!("miniwob=={VERSION}"))
        .arg("-d")
        .arg(download.path())
        .status()
        .context("running python3 -m pip (is Python 3 with pip installed?)")?;
    ensure!(status.success(), "pip could not download miniwob=={VERSION} from PyPI");
    let wheel = std::fs::read_dir(download.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("pip downloaded no wheel")?;
    // Unpack next to the final folder, then move it in place: concurrent
    // tests never see half a folder.
    std::fs::create_dir_all(root.parent().unwrap_or(&root))?;
    let staging = tempfile::tempdir_in(root.parent().unwrap_or(&root))?;
    let status = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1])\n\
             z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith('miniwob/html/')])",
        ])
        .arg(&wheel)
        .arg(staging.path())
        .status()?;
    ensure!(status.success(), "could not unpack {}", wheel.display());
    if !html.is_dir() {
        let staged = staging.keep();
        if std::fs::rename(&staged, &root).is_err() && !html.is_dir() {
            bail!("could not move MiniWoB into {}", root.display());
        }
    }
    Ok(html)
}

/// Which model answers.
#[derive(Debug, Clone)]
pub enum ModelChoice {
    /// The scripted solvers of [`solver`].
    Scripted,
    /// A real provider, configured as a user configures the host
    /// (`ERRAND_PROVIDER`, `ERRAND_BASE_URL`, `ERRAND_MODEL`, `ERRAND_API_KEY`).
    Real(RealModel),
}

/// A real provider's settings.
#[derive(Debug, Clone)]
pub struct RealModel {
    /// `openai`, `anthropic`, `gemini` or `ollama` (an OpenAI-compatible
    /// local server); OpenAI-compatible when `None`.
    pub provider: Option<String>,
    /// The server; the provider's own when `None` (`ollama`: 127.0.0.1:11434).
    pub base_url: Option<String>,
    pub model: String,
    /// The key; else `ERRAND_API_KEY`, else the vendor's variable
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`).
    pub api_key: Option<String>,
}

impl RealModel {
    /// The host's settings for this model, as environment variables.
    pub fn env(&self) -> Result<Vec<(String, String)>> {
        let name = self.provider.as_deref().unwrap_or("openai").to_ascii_lowercase();
        let kind = ProviderKind::parse(&name).with_context(|| {
            format!("unknown provider {name:?}: use openai, anthropic, gemini or ollama")
        })?;
        let base_url = match (&self.base_url, name.as_str()) {
            (Some(url), _) => url.clone(),
            (None, "openai") => "https://api.openai.com/v1".to_owned(),
            (None, _) => kind.default_base_url().to_owned(),
        };
        let vendor = match kind {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY").filter(|_| name == "openai"),
            other => other.vendor_key_var(),
        };
        let key = self
            .api_key
            .clone()
            .or_else(|| std::env::var("ERRAND_API_KEY").ok())
            .or_else(|| vendor.and_then(|v| std::env::var(v).ok()))
            .filter(|k| !k.is_empty());
        let key = match key {
            Some(k) => k,
            // A local OpenAI-compatible server (Ollama) wants no key.
            None if vendor.is_none() => "none".to_owned(),
            None => bail!(
                "no API key: pass --api-key, or set ERRAND_API_KEY or {}",
                vendor.unwrap_or_default()
            ),
        };
        Ok(vec![
            ("ERRAND_PROVIDER".into(), kind.name().into()),
            ("ERRAND_BASE_URL".into(), base_url),
            ("ERRAND_MODEL".into(), self.model.clone()),
            ("ERRAND_API_KEY".into(), key),
        ])
    }
}

/// What one episode gave.
#[derive(Debug, Clone)]
pub struct Episode {
    pub task: String,
    pub seed: u64,
    /// MiniWoB's reward (> 0 is success), time-discounted as MiniWoB does.
    pub reward: f64,
    pub raw_reward: f64,
    pub reason: String,
    /// How Errand's task ended (`done`, `failed`, …).
    pub status: String,
    pub answer: String,
    pub steps: i64,
    /// Scripted: the requests' and answers' text counted with the o200k
    /// tokenizer; real providers: the usage they reported to the host.
    pub tokens: i64,
    pub seconds: f64,
    /// Actions the host asked the user to approve (the harness approved them).
    pub approvals: u32,
}

impl Episode {
    pub fn success(&self) -> bool {
        self.reward > 0.0
    }
}

/// A browser with Errand, MiniWoB's pages and the side panel, reused across
/// episodes.
pub struct Miniwob {
    // Dropped first, so that its logs print while the servers still run.
    browser: TestBrowser,
    tab: Page,
    panel: Panel,
    pages: FixtureServer,
    _model: ScriptedModel,
    solver: Arc<Solver>,
    /// The scripted episode's o200k token count (`None` for real providers).
    counted: Option<Arc<AtomicI64>>,
}

impl Miniwob {
    pub fn start(choice: ModelChoice) -> Result<Miniwob> {
        let html = html_dir()?;
        let solver = Arc::new(Solver::default());
        let rig = Rig::builder().fixtures_dir(html);
        let (rig, counted) = match choice {
            ModelChoice::Scripted => {
                let s = Arc::clone(&solver);
                let counted = Arc::new(AtomicI64::new(0));
                let count = Arc::clone(&counted);
                let bpe = tiktoken_rs::o200k_base().map_err(|e| anyhow::anyhow!("{e}"))?;
                let rig = rig.script(move |req, _| {
                    let reply = s.answer(req);
                    let answer = reply.text().unwrap_or_default();
                    let n = bpe.encode_ordinary(&all_text(req)).len()
                        + bpe.encode_ordinary(&answer).len();
                    count.fetch_add(n as i64, Ordering::Relaxed);
                    reply
                });
                (rig, Some(counted))
            }
            ModelChoice::Real(real) => {
                // The scripted model runs unused: the host talks to the real one.
                let env = real.env()?;
                let base_url =
                    env.iter().find(|(k, _)| k == "ERRAND_BASE_URL").map(|(_, v)| v.clone());
                let rig = rig.options(move |opts| {
                    opts.model_base_url = base_url.unwrap_or_default();
                    opts.model = real.model.clone();
                    opts.env.extend(env);
                });
                (rig, None)
            }
        };
        let Rig { browser, model, fixtures: pages } = rig.build();
        let tab = browser.new_page(&pages.url("/miniwob/click-test.html"))?;
        let panel = side_panel::open(&browser, &tab)?;
        Ok(Miniwob { browser, tab, panel, pages, _model: model, solver, counted })
    }

    /// Runs one episode of `task` with `seed`.
    pub fn episode(&self, task: &str, seed: u64) -> Result<Episode> {
        self.solver.new_episode();
        if let Some(c) = &self.counted {
            c.store(0, Ordering::Relaxed);
        }
        let utterance = self.start_episode(task, seed)?;
        let started = Instant::now();
        self.panel.start_task(&utterance)?;
        let (view, approvals) = self.panel.finish_approving(Duration::from_secs(180))?;
        let seconds = started.elapsed().as_secs_f64();
        let result = self.tab.eval(
            "({done: WOB_DONE_GLOBAL, reward: WOB_REWARD_GLOBAL, raw: WOB_RAW_REWARD_GLOBAL,
               reason: String(WOB_REWARD_REASON)})",
        )?;
        let (steps, reported) = self.last_task_usage()?;
        let tokens = self.counted.as_ref().map_or(reported, |c| c.load(Ordering::Relaxed));
        Ok(Episode {
            task: task.to_owned(),
            seed,
            reward: result["reward"].as_f64().unwrap_or(0.0),
            raw_reward: result["raw"].as_f64().unwrap_or(0.0),
            reason: result["reason"].as_str().unwrap_or_default().to_owned(),
            status: view["status"].as_str().unwrap_or_default().to_owned(),
            answer: view["answer"].as_str().unwrap_or_default().to_owned(),
            steps,
            tokens,
            seconds,
            approvals,
        })
    }

    /// Opens the task page and starts a seeded episode; returns MiniWoB's
    /// instruction.
    fn start_episode(&self, task: &str, seed: u64) -> Result<String> {
        let url = self.pages.url(&format!("/miniwob/{task}.html"));
        self.tab.call("Page.navigate", json!({"url": url}))?;
        self.tab
            .wait_for(
                &format!(
                    "location.href === {u} && document.readyState === 'complete'
                     && typeof core !== 'undefined' && core.cover_div != null
                     && typeof Math.seedrandom === 'function'",
                    u = json!(url)
                ),
                Duration::from_secs(20),
            )
            .with_context(|| format!("MiniWoB's {task} page did not load"))?;
        self.tab.eval(&format!(
            "Math.seedrandom({seed}); core.EPISODE_MAX_TIME = 600000; core.startEpisodeReal(); true"
        ))?;
        self.tab.wait_for("WOB_TASK_READY === true", Duration::from_secs(10))?;
        let utterance = self.tab.eval("core.getUtterance()")?;
        match utterance {
            Value::String(s) if !s.is_empty() => Ok(s),
            other => bail!("{task} gave no instruction: {other}"),
        }
    }

    /// Steps and tokens of the newest stored task.
    fn last_task_usage(&self) -> Result<(i64, i64)> {
        let conn = crate::store::open(&self.browser.db_path())?;
        let row = conn.query_row(
            "SELECT steps, tokens_in + tokens_out FROM tasks ORDER BY rowid DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(row)
    }
}

/// A markdown table, one row per task (episodes, reward > 0, mean reward,
/// mean steps and tokens, median seconds, approvals given), and the overall
/// count.
pub fn report(episodes: &[Episode]) -> String {
    let mut out = String::from(
        "| task | episodes | reward > 0 | mean reward | mean steps | mean tokens | median s | approvals |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let mut tasks: Vec<&str> = episodes.iter().map(|e| e.task.as_str()).collect();
    tasks.dedup();
    for task in tasks {
        let of: Vec<&Episode> = episodes.iter().filter(|e| e.task == task).collect();
        let n = of.len() as f64;
        let mut secs: Vec<f64> = of.iter().map(|e| e.seconds).collect();
        secs.sort_by(f64::total_cmp);
        out.push_str(&format!(
            "| {task} | {} | {} | {:.2} | {:.1} | {:.0} | {:.2} | {} |\n",
            of.len(),
            of.iter().filter(|e| e.success()).count(),
            of.iter().map(|e| e.reward).sum::<f64>() / n,
            of.iter().map(|e| e.steps as f64).sum::<f64>() / n,
            of.iter().map(|e| e.tokens as f64).sum::<f64>() / n,
            secs[secs.len() / 2],
            of.iter().map(|e| e.approvals).sum::<u32>(),
        ));
    }
    let won = episodes.iter().filter(|e| e.success()).count();
    out.push_str(&format!("\n{won} of {} episodes with reward > 0\n", episodes.len()));
    out
}

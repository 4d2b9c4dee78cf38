//! Opening Errand's side panel for a tab, the way a user does.
//!
//! The real side panel: `Extensions.triggerAction` clicks the extension's
//! toolbar action for a tab (the service worker has called
//! `chrome.sidePanel.setPanelBehavior({openPanelOnActionClick: true})`), and
//! the panel appears as a target of its own, which we attach to.
//!
//! If that does not work (or `ERRAND_E2E_PANEL_IN_TAB=1`), [`open`] falls back to the panel page in an
//! ordinary tab with `?tab=<chrome tab id>`, which the panel honours. The
//! returned [`Panel::how`] says which one it got.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use errand_protocol::EXTENSION_ID;
use serde_json::json;

use crate::browser::TestBrowser;
use crate::cdp::Page;

/// How the panel was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PanelKind {
    /// The browser's real side panel, through the extension's action.
    SidePanel,
    /// The panel page in a tab of its own, `?tab=` naming the task's tab.
    Tab,
}

/// An open side panel.
pub struct Panel {
    pub page: Page,
    pub how: PanelKind,
}

/// `chrome-extension://<id>/extension/panel/panel.html`.
pub fn panel_url() -> String {
    format!("chrome-extension://{EXTENSION_ID}/extension/panel/panel.html")
}

/// Set to `1` to skip the real side panel and open the panel page in a tab.
pub const PANEL_IN_TAB_ENV: &str = "ERRAND_E2E_PANEL_IN_TAB";

/// Opens the side panel for `tab`: the real one if the browser lets us,
/// else the panel page in a tab (with the reason printed to stderr).
///
/// Fails without falling back when the service worker has not asked for
/// the panel to open on an action click: that is the extension's bug, and a
/// user clicking the toolbar button would see no panel either.
pub fn open(browser: &TestBrowser, tab: &Page) -> Result<Panel> {
    if std::env::var(PANEL_IN_TAB_ENV).is_ok_and(|v| v == "1") {
        let page = open_in_tab(browser, tab)?;
        return Ok(Panel { page, how: PanelKind::Tab });
    }
    wait_for_panel_behavior(browser)?;
    match open_real(browser, tab) {
        Ok(page) => Ok(Panel { page, how: PanelKind::SidePanel }),
        Err(e) => {
            eprintln!(
                "side panel: the real side panel did not open ({e:#}); opening the panel page in a tab"
            );
            let page = open_in_tab(browser, tab)?;
            Ok(Panel { page, how: PanelKind::Tab })
        }
    }
}

/// The real side panel, via `Extensions.triggerAction` on the tab's target.
pub fn open_real(browser: &TestBrowser, tab: &Page) -> Result<Page> {
    let cdp = browser.cdp();
    let url = panel_url();
    let before: Vec<String> = cdp
        .targets()?
        .into_iter()
        .filter(|t| t.url.starts_with(&url))
        .map(|t| t.target_id)
        .collect();
    wait_for_panel_behavior(browser)?;
    // The panel needs the tab in front; a new tab already is, but be sure.
    cdp.call("Target.activateTarget", json!({"targetId": tab.target_id}), None)?;
    // triggerAction wants the tab target, not the page target inside it.
    let tab_target = cdp.tab_of(&tab.target_id)?;
    let mut attempt = 0;
    let target = loop {
        attempt += 1;
        cdp.call(
            "Extensions.triggerAction",
            json!({"id": EXTENSION_ID, "targetId": tab_target}),
            None,
        )
        .context("Extensions.triggerAction")?;
        match cdp.wait_for_target(
            |t| t.url.starts_with(&url) && !before.contains(&t.target_id),
            Duration::from_secs(3),
        ) {
            Ok(t) => break t,
            Err(e) if attempt >= 2 => return Err(e.context("no side panel target appeared")),
            Err(_) => {}
        }
    };
    let page = cdp.attach(&target.target_id)?;
    page.wait_for_load(Duration::from_secs(10))?;
    Ok(page)
}

/// Waits until the service worker has called
/// `sidePanel.setPanelBehavior({openPanelOnActionClick: true})` — it does so
/// on startup; an action click before that opens nothing.
pub fn wait_for_panel_behavior(browser: &TestBrowser) -> Result<()> {
    browser
        .service_worker()?
        .wait_for(
            "chrome.sidePanel.getPanelBehavior().then(b => b.openPanelOnActionClick === true)",
            Duration::from_secs(5),
        )
        .context(
            "the service worker never called \
             chrome.sidePanel.setPanelBehavior({openPanelOnActionClick: true})",
        )?;
    Ok(())
}

/// The panel page in a new tab, told which tab to work on with `?tab=`.
pub fn open_in_tab(browser: &TestBrowser, tab: &Page) -> Result<Page> {
    let tab_id = chrome_tab_id(browser, tab)?;
    let page = browser.cdp().new_page(&format!("{}?tab={tab_id}", panel_url()))?;
    page.wait_for_load(Duration::from_secs(10))?;
    Ok(page)
}

/// The `chrome.tabs` id of `tab`, asked of the extension's service worker.
pub fn chrome_tab_id(browser: &TestBrowser, tab: &Page) -> Result<i64> {
    let url = tab.url()?;
    let sw = browser.service_worker()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ids = sw.eval(&format!(
            "chrome.tabs.query({{}}).then(ts => ts.filter(t => t.url === {u} || t.pendingUrl === {u}).map(t => t.id))",
            u = json!(url)
        ))?;
        if let Some(id) = ids.as_array().and_then(|a| a.first()).and_then(|v| v.as_i64()) {
            return Ok(id);
        }
        if Instant::now() >= deadline {
            bail!("the service worker sees no tab at {url}: {ids}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Panel {
    /// What the panel shows: host and task state, steps, answer.
    pub fn view(&self) -> Result<serde_json::Value> {
        self.page.eval(
            "(() => { const q = (s) => document.querySelector(s); return {
                host: q('#host')?.dataset.state, host_text: q('#host')?.textContent,
                status: q('#status')?.dataset.state, status_text: q('#status')?.textContent,
                steps: document.querySelectorAll('#steps li.step').length,
                steps_text: q('#steps')?.innerText ?? '',
                answer: q('#answer')?.textContent ?? '',
                run_disabled: q('#run')?.disabled, stop_disabled: q('#stop')?.disabled,
            }; })()",
        )
    }

    /// Waits until the panel is connected to the host, types `task` into
    /// `#task` and clicks `#run`, as a user does.
    pub fn start_task(&self, task: &str) -> Result<()> {
        if let Err(e) = self.page.wait_for(
            "document.querySelector('#host')?.dataset.state === 'connected'",
            Duration::from_secs(15),
        ) {
            bail!("the panel never connected to the host: {e:#}\npanel: {}", self.view()?);
        }
        self.page.eval(&format!(
            "(() => {{ const t = document.querySelector('#task'); t.value = {task};
               t.dispatchEvent(new Event('input', {{bubbles: true}}));
               document.querySelector('#run').click(); return true; }})()",
            task = json!(task)
        ))?;
        Ok(())
    }

    /// Waits until `#status` leaves `idle`/`running`; returns [`Panel::view`].
    pub fn wait_finished(&self, timeout: Duration) -> Result<serde_json::Value> {
        let settled = self.page.wait_for(
            "(() => { const s = document.querySelector('#status')?.dataset.state;
                      return s && s !== 'idle' && s !== 'running'; })()",
            timeout,
        );
        let view = self.view()?;
        settled.with_context(|| format!("the task did not finish; panel: {view:#}"))?;
        Ok(view)
    }
}

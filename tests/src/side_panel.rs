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

use std::path::PathBuf;
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
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // Right after a start, an evaluation in the service worker can land
        // in a context without extension APIs (`chrome is not defined`):
        // attach again and retry until the deadline.
        let ids = browser.service_worker().and_then(|sw| {
            sw.eval(&format!(
                "chrome.tabs.query({{}}).then(ts => ts.filter(t => t.url === {u} || t.pendingUrl === {u}).map(t => t.id))",
                u = json!(url)
            ))
        });
        // The newest tab at that URL (a test may open one page twice).
        let found = ids
            .as_ref()
            .ok()
            .and_then(|ids| ids.as_array()?.iter().filter_map(serde_json::Value::as_i64).max());
        if let Some(id) = found {
            return Ok(id);
        }
        if Instant::now() >= deadline {
            bail!("the service worker sees no tab at {url}: {ids:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The states of `#status` in which a task has ended.
pub const ENDED: &[&str] = &["done", "stopped", "failed", "step_limit", "interrupted", "error"];

impl Panel {
    /// What the panel shows: host and task state, the current turn's steps
    /// and answer, which controls are enabled.
    pub fn view(&self) -> Result<serde_json::Value> {
        self.page.eval(
            "(() => { const q = (s) => document.querySelector(s);
                const turn = [...document.querySelectorAll('#thread .turn')].pop();
                return {
                host: q('#host')?.dataset.state, host_text: q('#host')?.textContent,
                status: q('#status')?.dataset.state, status_text: q('#status')?.textContent,
                steps: turn ? turn.querySelectorAll('li.step').length : 0,
                steps_text: turn?.querySelector('.steps')?.innerText ?? '',
                answer: turn?.querySelector('.answer-text')?.textContent ?? '',
                problem: turn?.querySelector('.problem')?.innerText ?? '',
                meter: q('#meter')?.textContent ?? '',
                run_disabled: q('#run')?.disabled, stop_disabled: q('#stop')?.disabled,
                pause_hidden: q('#pause')?.hidden, resume_hidden: q('#resume')?.hidden,
                followup: !q('#followup')?.hidden,
                tab: document.body?.dataset.tab,
            }; })()",
        )
    }

    /// Waits until the panel is connected to the host.
    pub fn wait_connected(&self) -> Result<()> {
        if let Err(e) = self.page.wait_for(
            "document.querySelector('#host')?.dataset.state === 'connected'",
            Duration::from_secs(15),
        ) {
            bail!("the panel never connected to the host: {e:#}\npanel: {}", self.view()?);
        }
        Ok(())
    }

    /// Waits until the panel is connected to the host, types `task` into
    /// `#task` and clicks `#run`, as a user does.
    pub fn start_task(&self, task: &str) -> Result<()> {
        self.wait_connected()?;
        self.page
            .wait_for("!document.querySelector('#run').disabled", Duration::from_secs(5))
            .with_context(|| {
                format!("#run stays disabled; panel: {}", self.view().unwrap_or_default())
            })?;
        self.fill("#task", task)?;
        self.click("#run")
    }

    /// Waits until `#status` says the task ended (one of [`ENDED`]);
    /// returns [`Panel::view`].
    pub fn wait_finished(&self, timeout: Duration) -> Result<serde_json::Value> {
        let settled = self.page.wait_for(
            &format!("{}.includes(document.querySelector('#status')?.dataset.state)", json!(ENDED)),
            timeout,
        );
        let view = self.view()?;
        settled.with_context(|| format!("the task did not finish; panel: {view:#}"))?;
        Ok(view)
    }

    /// Waits until the task ended, approving every action it asks approval
    /// for (the `.approval` box's Approve button, clicked as a user does);
    /// returns [`Panel::view`] and how many approvals were given.
    pub fn finish_approving(&self, timeout: Duration) -> Result<(serde_json::Value, u32)> {
        let (view, asked) = self.finish_deciding(timeout, |_| "approve")?;
        Ok((view, u32::try_from(asked.len()).unwrap_or(u32::MAX)))
    }

    /// Waits until the task ended, answering every approval box with the
    /// button `decide` names for its text (`approve`, `approve-task`,
    /// `approve-site` or `reject`), clicked as a user does; returns
    /// [`Panel::view`] and the text of each box answered, in order.
    pub fn finish_deciding(
        &self,
        timeout: Duration,
        decide: impl Fn(&str) -> &'static str,
    ) -> Result<(serde_json::Value, Vec<String>)> {
        const PENDING: &str = ".approval:not(.answered)";
        let deadline = std::time::Instant::now() + timeout;
        let mut asked = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let settled = self.page.wait_for(
                &format!(
                    "(() => {{ const s = document.querySelector('#status')?.dataset.state;
                        return {ended}.includes(s) ? 'ended'
                            : s === 'waiting' && document.querySelector({p} + ' button.approve:not(:disabled)') ? 'approval' : false;
                    }})()",
                    ended = json!(ENDED),
                    p = json!(PENDING)
                ),
                left,
            );
            let view = self.view()?;
            match settled.with_context(|| format!("the task did not finish; panel: {view:#}"))? {
                v if v == "ended" => return Ok((view, asked)),
                _ => {
                    let text = self.text(PENDING)?;
                    let button = decide(&text);
                    self.click(&format!("{PENDING} button.{button}"))?;
                    asked.push(text);
                    // The box is answered once the host took the decision.
                    self.page.wait_for(
                        &format!(
                            "!document.querySelector({})",
                            json!(format!("{PENDING} button.approve:not(:disabled)"))
                        ),
                        Duration::from_secs(10),
                    )?;
                }
            }
        }
    }

    /// Waits until `#status` is in `state` (`running`, `waiting`, `paused`…).
    pub fn wait_status(&self, state: &str, timeout: Duration) -> Result<serde_json::Value> {
        let reached = self.page.wait_for(
            &format!("document.querySelector('#status')?.dataset.state === {}", json!(state)),
            timeout,
        );
        let view = self.view()?;
        reached.with_context(|| {
            format!("the panel's status never became {state:?}; panel: {view:#}")
        })?;
        Ok(view)
    }

    /// Waits until the element `selector` exists and is visible.
    pub fn wait_visible(&self, selector: &str, timeout: Duration) -> Result<()> {
        let shown = self.page.wait_for(
            &format!(
                "(() => {{ const e = document.querySelector({s}); return !!e && !e.closest('[hidden]') && e.getClientRects().length > 0; }})()",
                s = json!(selector)
            ),
            timeout,
        );
        shown.with_context(|| {
            format!("{selector} never showed; panel: {}", self.view().unwrap_or_default())
        })?;
        Ok(())
    }

    /// The `innerText` of `selector` ("" when absent).
    pub fn text(&self, selector: &str) -> Result<String> {
        let v = self
            .page
            .eval(&format!("document.querySelector({s})?.innerText ?? ''", s = json!(selector)))?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// Waits until the `innerText` of `selector` contains `needle`.
    pub fn wait_text(&self, selector: &str, needle: &str, timeout: Duration) -> Result<String> {
        let found = self.page.wait_for(
            &format!(
                "(document.querySelector({s})?.innerText ?? '').includes({n})",
                s = json!(selector),
                n = json!(needle)
            ),
            timeout,
        );
        let text = self.text(selector)?;
        found.with_context(|| format!("{selector} never said {needle:?}; it says {text:?}"))?;
        Ok(text)
    }

    /// Clicks the element `selector`, as a user does (it must exist, be
    /// visible and enabled).
    pub fn click(&self, selector: &str) -> Result<()> {
        let r = self.page.eval(&format!(
            "(() => {{ const e = document.querySelector({s});
                if (!e) return 'missing';
                if (e.disabled) return 'disabled';
                if (e.closest('[hidden]') || !e.getClientRects().length) return 'hidden';
                e.click(); return 'ok'; }})()",
            s = json!(selector)
        ))?;
        if r != "ok" {
            bail!("cannot click {selector}: it is {r}; panel: {}", self.view()?);
        }
        Ok(())
    }

    /// Types `value` into the field `selector` (sets it and fires `input`
    /// and `change`, as typing does).
    pub fn fill(&self, selector: &str, value: &str) -> Result<()> {
        let r = self.page.eval(&format!(
            "(() => {{ const e = document.querySelector({s});
                if (!e) return 'missing';
                if (e.disabled) return 'disabled';
                e.focus(); e.value = {v};
                e.dispatchEvent(new Event('input', {{bubbles: true}}));
                e.dispatchEvent(new Event('change', {{bubbles: true}}));
                return 'ok'; }})()",
            s = json!(selector),
            v = json!(value)
        ))?;
        if r != "ok" {
            bail!("cannot fill {selector}: it is {r}");
        }
        Ok(())
    }

    /// Switches to the tab `name` (`task`, `history`, `settings`, `profile`).
    pub fn open_tab(&self, name: &str) -> Result<()> {
        self.click(&format!("#tab-{name}"))?;
        self.page.wait_for(
            &format!("!document.querySelector('#view-{name}').hidden"),
            Duration::from_secs(2),
        )?;
        Ok(())
    }

    /// Takes PNG screenshots of the panel in light and dark mode, `width`
    /// CSS pixels wide, into `target/panel-shots/<name>-light.png` and
    /// `<name>-dark.png`; returns their paths.
    pub fn screenshots(&self, name: &str, width: u32) -> Result<Vec<PathBuf>> {
        let dir = shots_dir();
        std::fs::create_dir_all(&dir)?;
        self.page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 720, "deviceScaleFactor": 1, "mobile": false}),
        )?;
        let mut paths = Vec::new();
        for scheme in ["light", "dark"] {
            self.page.call(
                "Emulation.setEmulatedMedia",
                json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
            )?;
            // Let the page lay out and paint in the new scheme.
            self.page.eval(
                "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))",
            )?;
            let shot = self.page.call("Page.captureScreenshot", json!({"format": "png"}))?;
            let data = shot["data"].as_str().context("Page.captureScreenshot returned no data")?;
            let path = dir.join(format!("{name}-{scheme}.png"));
            std::fs::write(&path, base64_decode(data)?)?;
            paths.push(path);
        }
        self.page.call("Emulation.setEmulatedMedia", json!({"features": []}))?;
        self.page.call("Emulation.clearDeviceMetricsOverride", json!({}))?;
        eprintln!(
            "screenshots: {}",
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        Ok(paths)
    }
}

/// Where the panel screenshots go: `<target dir>/panel-shots/`.
pub fn shots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::browser::repo_root().join("target"));
    target.join("panel-shots")
}

/// Standard base64 (what DevTools sends) to bytes.
fn base64_decode(text: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' => continue,
            _ => bail!("not base64: {:?}", c as char),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

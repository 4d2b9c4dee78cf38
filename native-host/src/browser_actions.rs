//! The browser-side actions: `new_tab`, `switch_tab`, `close_tab`. They
//! run through the service worker (`open_tab`, `activate_tab`, `close_tab`,
//! `list_tabs`), and tell the agent which tab it works in afterwards.

use errand_protocol::{Action, Body, TabSummary};

use crate::host::{Host, RequestError, tab_info, unexpected};

/// What a browser action did.
#[derive(Debug, Clone, PartialEq)]
pub struct TabOutcome {
    pub ok: bool,
    pub detail: String,
    /// The tab the agent works in from now on.
    pub tab_id: i64,
}

/// The open tabs.
pub async fn list_tabs(host: &Host) -> Result<Vec<TabSummary>, RequestError> {
    match host.request(Body::ListTabs {}).await? {
        Body::Tabs { tabs } => Ok(tabs),
        other => Err(unexpected("list_tabs", &other)),
    }
}

/// `tab 12 "Title" https://…` lines for the model.
fn describe(tabs: &[TabSummary], current: i64) -> String {
    tabs.iter()
        .map(|t| {
            let mark = if t.tab_id == current { " (current)" } else { "" };
            format!("tab {}{mark}: \"{}\" {}", t.tab_id, t.title, t.url)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs a tab action from tab `current`. Other actions are not browser
/// actions: `None`.
pub async fn run(host: &Host, current: i64, action: &Action) -> Option<TabOutcome> {
    let fail = |detail: String| TabOutcome { ok: false, detail, tab_id: current };
    Some(match action {
        Action::NewTab { url } => {
            let url = url.clone().unwrap_or_else(|| "about:blank".to_owned());
            match host.open_tab(&url).await {
                Ok(tab) => TabOutcome {
                    ok: true,
                    detail: format!("opened tab {} at {}; working there now", tab.tab_id, tab.url),
                    tab_id: tab.tab_id,
                },
                Err(e) => fail(format!("could not open a tab at {url}: {e}")),
            }
        }
        Action::SwitchTab { tab_id } => {
            match host.request(Body::ActivateTab { tab_id: *tab_id }).await.and_then(|b| tab_info("activate_tab", b)) {
                Ok(tab) => TabOutcome {
                    ok: true,
                    detail: format!("switched to tab {} ({})", tab.tab_id, tab.url),
                    tab_id: tab.tab_id,
                },
                Err(e) => {
                    let open = list_tabs(host).await.map(|t| describe(&t, current)).unwrap_or_default();
                    fail(format!("could not switch to tab {tab_id}: {e}; open tabs: {open}"))
                }
            }
        }
        Action::CloseTab { tab_id } => {
            let closing = tab_id.unwrap_or(current);
            if let Err(e) = host.request(Body::CloseTab { tab_id: closing }).await {
                return Some(fail(format!("could not close tab {closing}: {e}")));
            }
            if closing != current {
                return Some(TabOutcome {
                    ok: true,
                    detail: format!("closed tab {closing}"),
                    tab_id: current,
                });
            }
            // The current tab closed: go on in the active tab.
            match host.active_tab().await {
                Ok(tab) => TabOutcome {
                    ok: true,
                    detail: format!("closed tab {closing}; working in tab {} ({}) now", tab.tab_id, tab.url),
                    tab_id: tab.tab_id,
                },
                Err(e) => fail(format!("closed tab {closing}, and no tab is left to work in: {e}")),
            }
        }
        _ => return None,
    })
}

/// Runs a page action, and for those that may open a tab (clicks, key
/// presses) reports a tab that appeared meanwhile in the effect.
pub async fn act(
    host: &Host,
    tab_id: i64,
    action: &Action,
) -> Result<errand_protocol::Effect, RequestError> {
    let may_open = matches!(action, Action::Click { .. } | Action::DblClick { .. } | Action::Press { .. });
    let before = if may_open { list_tabs(host).await.ok() } else { None };
    let mut effect = host.act(tab_id, action.clone()).await?;
    if let Some(before) = before {
        // A tab opened by the page may still be starting: look twice.
        for _ in 0..2 {
            let after = list_tabs(host).await.unwrap_or_default();
            if let Some(new) = after.iter().find(|t| !before.iter().any(|b| b.tab_id == t.tab_id)) {
                effect.new_tab = Some(new.tab_id);
                effect.page_changed = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        }
    }
    Ok(effect)
}

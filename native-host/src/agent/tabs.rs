//! The browser-side actions: `new_tab`, `switch_tab`, `close_tab`. They
//! run through the service worker (`open_tab`, `activate_tab`, `close_tab`,
//! `list_tabs`), and tell the agent which tab it works in afterwards.

use std::path::{Component, Path, PathBuf};

use base64::Engine;
use errand_protocol::{Action, ErrorCode, FilePayload, TabSummary};

use super::ports::{Browser, BrowserError, Guard, Permit};

/// What a browser action did.
#[derive(Debug, Clone, PartialEq)]
pub struct TabOutcome {
    pub ok: bool,
    pub detail: String,
    /// The tab the agent works in from now on.
    pub tab_id: i64,
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
pub async fn run<B: Browser>(
    browser: &B,
    current: i64,
    action: &Action,
    permit: &Permit,
) -> Option<TabOutcome> {
    let fail = |detail: String| TabOutcome { ok: false, detail, tab_id: current };
    Some(match action {
        Action::NewTab { url } => {
            let url = url.clone().unwrap_or_else(|| "about:blank".to_owned());
            match browser.open_tab(&url, permit).await {
                Ok(tab) => TabOutcome {
                    ok: true,
                    detail: format!("opened tab {} at {}; working there now", tab.tab_id, tab.url),
                    tab_id: tab.tab_id,
                },
                Err(e) => fail(format!("could not open a tab at {url}: {e}")),
            }
        }
        Action::SwitchTab { tab_id } => match browser.activate_tab(*tab_id).await {
            Ok(tab) => TabOutcome {
                ok: true,
                detail: format!("switched to tab {} ({})", tab.tab_id, tab.url),
                tab_id: tab.tab_id,
            },
            Err(e) => {
                let open =
                    browser.list_tabs().await.map(|t| describe(&t, current)).unwrap_or_default();
                fail(format!("could not switch to tab {tab_id}: {e}; open tabs: {open}"))
            }
        },
        Action::CloseTab { tab_id } => {
            let closing = tab_id.unwrap_or(current);
            if let Err(e) = browser.close_tab(closing).await {
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
            match browser.active_tab().await {
                Ok(tab) => TabOutcome {
                    ok: true,
                    detail: format!(
                        "closed tab {closing}; working in tab {} ({}) now",
                        tab.tab_id, tab.url
                    ),
                    tab_id: tab.tab_id,
                },
                Err(e) => fail(format!("closed tab {closing}, and no tab is left to work in: {e}")),
            }
        }
        _ => return None,
    })
}

/// Runs a page action, and for those that may open a tab (clicks, key
/// presses) reports a tab that appeared meanwhile in the effect. Logs how
/// long it took, from sending the action to having its effect.
pub async fn act<B: Browser>(
    browser: &B,
    uploads: &Path,
    tab_id: i64,
    action: &Action,
    guard: Guard,
) -> Result<errand_protocol::Effect, BrowserError> {
    let started = std::time::Instant::now();
    let effect = act_inner(browser, uploads, tab_id, action, guard).await;
    tracing::info!(
        action = action.name(),
        ok = effect.is_ok(),
        action_ms = format!("{:.1}", started.elapsed().as_secs_f64() * 1000.0),
        "action carried out"
    );
    effect
}

async fn act_inner<B: Browser>(
    browser: &B,
    uploads: &Path,
    tab_id: i64,
    action: &Action,
    guard: Guard,
) -> Result<errand_protocol::Effect, BrowserError> {
    if let Action::UploadFile { index, files } = action {
        return upload(browser, uploads, tab_id, *index, files, &guard.permit).await;
    }
    let may_open =
        matches!(action, Action::Click { .. } | Action::DblClick { .. } | Action::Press { .. });
    let before = if may_open { browser.list_tabs().await.ok() } else { None };
    let mut effect = browser.act(tab_id, action.clone(), guard).await?;
    if let Some(before) = before {
        // One look after: the browser lists a tab the click opened (the
        // page asks for it in the click's own task) by the time the page's
        // reply, which leaves a task later at the soonest, comes back.
        let after = browser.list_tabs().await.unwrap_or_default();
        if let Some(new) = after.iter().find(|t| !before.iter().any(|b| b.tab_id == t.tab_id)) {
            effect.new_tab = Some(new.tab_id);
            effect.page_changed = true;
        }
    }
    Ok(effect)
}

/// The folder whose files `upload_file` may put into a page: `uploads/` in
/// Errand's data folder. The user puts there (or the side panel copies
/// there) the files they allow; the model names them by file name only.
pub fn uploads_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("uploads")
}

/// The most bytes uploaded by one action: base64 of it stays under the
/// browser's 1 MiB host → extension message limit.
pub const MAX_UPLOAD_BYTES: u64 = 700 * 1024;

fn refused(message: String) -> BrowserError {
    BrowserError::Refused { code: ErrorCode::ActionFailed, message }
}

/// Reads one allowed file: a plain name inside the uploads folder (no
/// paths, no `..`, no symlink leading out).
fn read_allowed(dir: &Path, name: &str) -> Result<FilePayload, String> {
    let plain = Path::new(name);
    let mut parts = plain.components();
    if !matches!((parts.next(), parts.next()), (Some(Component::Normal(_)), None)) {
        return Err(format!("`{name}` is not a plain file name: name a file the user allowed"));
    }
    let listed = || {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let path = dir.join(plain);
    let real = path
        .canonicalize()
        .map_err(|_| format!("the user has not allowed a file `{name}`; allowed: {}", listed()))?;
    let root = dir.canonicalize().map_err(|e| format!("no uploads folder: {e}"))?;
    if !real.starts_with(&root) || !real.is_file() {
        return Err(format!("`{name}` is not a file the user allowed"));
    }
    let bytes = std::fs::read(&real).map_err(|e| format!("cannot read `{name}`: {e}"))?;
    let mime =
        match real.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase().as_str()
        {
            "txt" => "text/plain",
            "pdf" => "application/pdf",
            "png" => "image/png",
            "jpg" | "jpeg" => "image/jpeg",
            "csv" => "text/csv",
            "json" => "application/json",
            "doc" => "application/msword",
            "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            _ => "application/octet-stream",
        }
        .to_owned();
    Ok(FilePayload {
        name: name.to_owned(),
        mime,
        base64: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// `upload_file`: the host reads the named files from the uploads folder
/// and the content script puts them into the file input. The page never
/// chooses a path, and the model only names files the user put there.
async fn upload<B: Browser>(
    browser: &B,
    dir: &Path,
    tab_id: i64,
    index: u32,
    names: &[String],
    permit: &Permit,
) -> Result<errand_protocol::Effect, BrowserError> {
    if names.is_empty() {
        return Err(refused("upload_file needs at least one file name".to_owned()));
    }
    let mut files = Vec::new();
    let mut total = 0u64;
    for name in names {
        let f = read_allowed(dir, name).map_err(refused)?;
        total += (f.base64.len() as u64) * 3 / 4;
        if total > MAX_UPLOAD_BYTES {
            return Err(refused(format!(
                "the files are larger than {} KB, the most one upload carries",
                MAX_UPLOAD_BYTES / 1024
            )));
        }
        files.push(f);
    }
    browser.set_files(tab_id, index, files, permit).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_plain_names_inside_the_uploads_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cv.txt"), "hello").unwrap();
        let f = read_allowed(dir.path(), "cv.txt").unwrap();
        assert_eq!(f.mime, "text/plain");
        assert_eq!(f.base64, "aGVsbG8=");
        assert!(
            read_allowed(dir.path(), "../errand-secret.txt")
                .unwrap_err()
                .contains("plain file name")
        );
        assert!(read_allowed(dir.path(), "/etc/passwd").unwrap_err().contains("plain file name"));
        assert!(read_allowed(dir.path(), "missing.txt").unwrap_err().contains("cv.txt"));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link.txt")).unwrap();
            assert!(read_allowed(dir.path(), "link.txt").is_err());
        }
    }
}

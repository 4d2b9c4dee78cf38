//! Registering the host with the user's browsers (`errand install`,
//! `errand uninstall`) and checking the registrations (`errand doctor`).

use std::path::{Path, PathBuf};

use errand_protocol::{HOST_NAME, extension_origin};
use native_messaging::Scope;

/// The browsers Errand registers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Browser {
    Chrome,
    Chromium,
    Edge,
    Brave,
}

impl Browser {
    /// Every supported browser, the default for install and uninstall.
    pub const ALL: [Browser; 4] =
        [Browser::Chrome, Browser::Chromium, Browser::Edge, Browser::Brave];

    /// The `native_messaging` crate's key.
    pub fn key(self) -> &'static str {
        match self {
            Browser::Chrome => "chrome",
            Browser::Chromium => "chromium",
            Browser::Edge => "edge",
            Browser::Brave => "brave",
        }
    }

    /// Where this browser reads the user-level manifest.
    pub fn manifest_path(self) -> Result<PathBuf, InstallError> {
        native_messaging::manifest_path(self.key(), Scope::User, HOST_NAME)
            .map_err(|source| InstallError::Path { browser: self, source })
    }
}

impl std::fmt::Display for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// What went wrong while (un)registering.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("cannot find this program's own path: {0}")]
    OwnPath(std::io::Error),
    #[error("cannot tell where {browser} keeps native messaging hosts: {source}")]
    Path { browser: Browser, source: std::io::Error },
    #[error("cannot register with {browser} ({path}): {source}")]
    Write { browser: Browser, path: PathBuf, source: std::io::Error },
    #[error("cannot remove {path}: {source}")]
    Remove { path: PathBuf, source: std::io::Error },
}

/// The running binary's canonical path, which the manifests name.
pub fn own_path() -> Result<PathBuf, InstallError> {
    let exe = std::env::current_exe().map_err(InstallError::OwnPath)?;
    exe.canonicalize().map_err(InstallError::OwnPath)
}

/// Writes the user-level manifest for each browser; returns the files written.
pub fn install(browsers: &[Browser]) -> Result<Vec<(Browser, PathBuf)>, InstallError> {
    let exe = own_path()?;
    install_exe(&exe, browsers)
}

/// Like [`install`], for the binary at `exe`.
pub fn install_exe(
    exe: &Path,
    browsers: &[Browser],
) -> Result<Vec<(Browser, PathBuf)>, InstallError> {
    let mut written = Vec::new();
    for &browser in browsers {
        let path = browser.manifest_path()?;
        native_messaging::install(
            HOST_NAME,
            "Errand native host",
            exe,
            &[extension_origin()],
            &[],
            &[browser.key()],
            Scope::User,
        )
        .map_err(|source| InstallError::Write { browser, path: path.clone(), source })?;
        tracing::info!(%browser, path = %path.display(), "registered");
        written.push((browser, path));
    }
    Ok(written)
}

/// Removes the user-level manifests; returns each file and whether it existed.
pub fn uninstall(browsers: &[Browser]) -> Result<Vec<(Browser, PathBuf, bool)>, InstallError> {
    let mut removed = Vec::new();
    for &browser in browsers {
        let path = browser.manifest_path()?;
        let existed = path.exists();
        if existed {
            std::fs::remove_file(&path)
                .map_err(|source| InstallError::Remove { path: path.clone(), source })?;
        }
        removed.push((browser, path, existed));
    }
    Ok(removed)
}

/// What a browser's registration looks like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    /// No manifest.
    Missing,
    /// A manifest that works; `current` when it names this very binary.
    Ok { exe: PathBuf, current: bool },
    /// A manifest that does not work, and why.
    Broken(String),
}

/// Reads and checks a browser's manifest.
pub fn check(browser: Browser) -> Result<(PathBuf, Registration), InstallError> {
    let path = browser.manifest_path()?;
    let own = own_path().ok();
    let reg = check_file(&path, own.as_deref());
    Ok((path, reg))
}

/// Checks a manifest file: it must name Errand's host, be `stdio`, point at
/// an existing executable and allow exactly Errand's extension.
pub fn check_file(path: &Path, own: Option<&Path>) -> Registration {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Registration::Missing,
        Err(e) => return Registration::Broken(format!("cannot read it: {e}")),
    };
    let m: serde_json::Value = match serde_json::from_slice(&text) {
        Ok(v) => v,
        Err(e) => return Registration::Broken(format!("not valid JSON: {e}")),
    };
    if m["name"] != HOST_NAME {
        return Registration::Broken(format!("its name is {}, not {HOST_NAME}", m["name"]));
    }
    if m["type"] != "stdio" {
        return Registration::Broken(format!("its type is {}, not \"stdio\"", m["type"]));
    }
    let expected = serde_json::json!([extension_origin()]);
    if m["allowed_origins"] != expected {
        return Registration::Broken(format!(
            "allowed_origins is {}, expected exactly {expected}",
            m["allowed_origins"]
        ));
    }
    let Some(exe) = m["path"].as_str().map(PathBuf::from) else {
        return Registration::Broken("it has no \"path\"".to_owned());
    };
    if !exe.is_absolute() {
        return Registration::Broken(format!("its path {} is not absolute", exe.display()));
    }
    if !is_executable(&exe) {
        return Registration::Broken(format!(
            "its path {} is not an executable file",
            exe.display()
        ));
    }
    let current = own.is_some_and(|own| exe.canonicalize().is_ok_and(|e| e == own));
    Registration::Ok { exe, current }
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let own = own_path().unwrap();
        let good = crate::setup::browser::register_in_profile(dir.path(), &own).unwrap();
        assert_eq!(
            check_file(&good, Some(&own)),
            Registration::Ok { exe: own.clone(), current: true }
        );
        assert_eq!(check_file(&dir.path().join("nope.json"), None), Registration::Missing);

        let mut m = crate::setup::browser::host_manifest(&own);
        m["allowed_origins"] = serde_json::json!([extension_origin(), "chrome-extension://evil/"]);
        std::fs::write(&good, m.to_string()).unwrap();
        assert!(
            matches!(check_file(&good, Some(&own)), Registration::Broken(why) if why.contains("allowed_origins"))
        );

        let m = crate::setup::browser::host_manifest(Path::new("/nonexistent/errand"));
        std::fs::write(&good, m.to_string()).unwrap();
        assert!(
            matches!(check_file(&good, Some(&own)), Registration::Broken(why) if why.contains("not an executable"))
        );
    }

    #[test]
    fn knows_where_each_browser_looks() {
        if std::env::var_os("HOME").is_none() {
            return;
        }
        for b in Browser::ALL {
            let p = b.manifest_path().unwrap();
            assert!(
                p.ends_with(format!("NativeMessagingHosts/{HOST_NAME}.json")),
                "{}",
                p.display()
            );
        }
    }
}

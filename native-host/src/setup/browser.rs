//! Launching Chromium with Errand's extension loaded and the host registered
//! in a profile of its own — used by `errand run`, `errand observe` and the
//! end-to-end suite.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use errand_protocol::{HOST_NAME, extension_origin};

/// The environment variable naming the browser binary to use.
pub const CHROMIUM_ENV: &str = "ERRAND_CHROMIUM";

/// Finds a Chromium-family browser: `$ERRAND_CHROMIUM`, then the usual
/// names on `PATH`.
pub fn find_chromium() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(CHROMIUM_ENV) {
        return Ok(PathBuf::from(p));
    }
    let names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in names {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    #[cfg(target_os = "macos")]
    for app in [
        "/Applications/Chromium.app/Contents/MacOS/Chromium",
        "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    ] {
        if Path::new(app).is_file() {
            return Ok(PathBuf::from(app));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "no Chromium found: install it (Debian: `apt-get install chromium`) or set ERRAND_CHROMIUM",
    ))
}

/// The native messaging host manifest for `host_exe`, allowing Errand's
/// extension only.
pub fn host_manifest(host_exe: &Path) -> serde_json::Value {
    serde_json::json!({
        "name": HOST_NAME,
        "description": "Errand native host",
        "path": host_exe,
        "type": "stdio",
        "allowed_origins": [extension_origin()],
    })
}

/// Writes `NativeMessagingHosts/errand.host.json` into a browser profile
/// folder, where a browser started with `--user-data-dir=<profile>` looks.
pub fn register_in_profile(profile: &Path, host_exe: &Path) -> io::Result<PathBuf> {
    let dir = profile.join("NativeMessagingHosts");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(format!("{HOST_NAME}.json"));
    let text = serde_json::to_vec_pretty(&host_manifest(host_exe)).map_err(io::Error::other)?;
    std::fs::write(&file, text)?;
    Ok(file)
}

/// The folder holding `manifest.json`: the unpacked extension. Taken from
/// `$ERRAND_EXTENSION_DIR`, else `dist/extension/` of the source tree this
/// binary was built from (what `scripts/build-extension.sh` assembles; never
/// the repository root, whose `target/` and sources the browser must not see).
pub fn extension_dir() -> io::Result<PathBuf> {
    let dir = match std::env::var_os("ERRAND_EXTENSION_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/extension"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if dir.join("manifest.json").is_file() && dir.join("extension/pkg/wasm").is_dir() {
        Ok(dir)
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "the built extension is not at {}: run scripts/build-extension.sh (or the \
                 install command from the README), or set ERRAND_EXTENSION_DIR to a built \
                 dist/extension folder",
                dir.display()
            ),
        ))
    }
}

/// A Chromium command line with the extension loaded into `profile`.
/// Flags that work headless, as root, and with no network.
pub fn chromium_command(
    chromium: &Path,
    profile: &Path,
    extension: &Path,
    headless: bool,
) -> Command {
    let mut cmd = Command::new(chromium);
    let ext = extension.display();
    cmd.arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--disable-extensions-except={ext}"))
        .arg(format!("--load-extension={ext}"))
        .args([
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--password-store=basic",
            "--window-size=1280,900",
        ]);
    if headless {
        cmd.arg("--headless=new");
    }
    if running_as_root() {
        cmd.arg("--no-sandbox");
    }
    cmd
}

fn running_as_root() -> bool {
    #[cfg(unix)]
    {
        // The owner of /proc/self is the effective user.
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_manifest_allows_only_errand() {
        let dir = tempfile::tempdir().unwrap();
        let file = register_in_profile(dir.path(), Path::new("/opt/errand")).unwrap();
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        assert_eq!(m["name"], HOST_NAME);
        assert_eq!(m["allowed_origins"], serde_json::json!([extension_origin()]));
        assert_eq!(m["path"], "/opt/errand");
    }
}

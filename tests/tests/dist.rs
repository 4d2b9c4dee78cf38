//! The extension the browser loads is `dist/extension/` (what
//! `scripts/build-extension.sh` assembles and a user loads unpacked), never
//! the repository root: the browser must not see `target/`, `node_modules/`
//! or the Rust sources.

use std::path::Path;

use errand_e2e::browser::{LaunchOptions, TestBrowser, dist_dir};
use serde_json::json;

/// Every path under `dir`, relative to it.
fn files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        out.push(path.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        if path.is_dir() {
            files(&path, base, out);
        }
    }
}

#[test]
fn the_loaded_extension_folder_holds_only_what_ships() {
    let browser = TestBrowser::launch(LaunchOptions::new("http://127.0.0.1:9/v1"))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let loaded = browser.extension_dir().to_owned();
    assert_eq!(loaded, dist_dir(), "the tests load dist/extension/");

    let mut all = Vec::new();
    files(&loaded, &loaded, &mut all);
    for f in &all {
        let name = Path::new(f).file_name().unwrap().to_string_lossy();
        assert!(
            !matches!(&*name, "target" | "node_modules" | "src" | "Cargo.toml" | "Cargo.lock")
                && !name.ends_with(".rs")
                && !f.starts_with('.'),
            "{f} is in the extension the browser loads"
        );
    }
    for needed in [
        "manifest.json",
        "extension/loader.js",
        "extension/changes.js",
        "extension/sw.js",
        "extension/panel/panel.html",
        "extension/generated/rules.js",
        "extension/pkg/wasm/errand_page_bg.wasm",
        "extension/pkg/wasm/errand_page.classic.js",
        "extension/pkg/js/errand_page_bg.wasm.js",
        "extension/pkg/worker/errand_page_bg.wasm",
    ] {
        assert!(all.iter().any(|f| f == needed), "{needed} is missing from {all:?}");
    }

    // The JS build's modules ask V8 to compile every function when they are
    // imported, not at its first call in the first walk (`compile_eagerly` in
    // scripts/build-extension.sh; a comment esbuild would drop).
    for js in ["extension/pkg/js/errand_page_bg.wasm.js", "extension/pkg/js/errand_page_bg.js"] {
        let text = std::fs::read_to_string(loaded.join(js)).unwrap();
        assert!(text.starts_with("//# allFunctionsCalledOnLoad\n"), "{js}: no compile hint");
    }

    // As the browser sees it: the extension's own origin serves what ships
    // and nothing of the source tree.
    // Right after launch an evaluation can land in a context of the worker
    // without extension APIs: attach again until `chrome.runtime` is there.
    let sw = (0..40)
        .find_map(|_| {
            let sw = browser.service_worker().ok()?;
            if sw.eval("typeof chrome !== 'undefined' && !!chrome.runtime").ok()
                == Some(json!(true))
            {
                return Some(sw);
            }
            std::thread::sleep(std::time::Duration::from_millis(150));
            None
        })
        .expect("the service worker never offered chrome.runtime");
    let status = |path: &str| {
        sw.eval(&format!(
            "fetch(chrome.runtime.getURL({})).then(r => r.status, () => 'failed')",
            json!(path)
        ))
        .unwrap()
    };
    assert_eq!(status("extension/loader.js"), json!(200));
    // What the service worker injects into a document without the content
    // script: the manifest's files (the glue as a classic script, then the
    // loader), each served.
    let files = sw.eval("globalThis.errandLoaderFiles").unwrap();
    assert_eq!(
        files,
        json!(["extension/pkg/wasm/errand_page.classic.js", "extension/loader.js"]),
        "{files}"
    );
    for f in files.as_array().unwrap() {
        assert_eq!(status(f.as_str().unwrap()), json!(200), "{f}");
    }
    for absent in
        ["Cargo.toml", "extension/src/lib.rs", "extension/Cargo.toml", "target/", "README.md"]
    {
        assert_ne!(status(absent), json!(200), "the extension's origin serves {absent}");
    }
    // The fixed key is kept: the same id the host's registration allows.
    assert_eq!(sw.eval("chrome.runtime.id").unwrap(), json!(browser.extension_id()));
}

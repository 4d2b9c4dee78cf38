//! The rules the extension's JavaScript needs, written from Rust into
//! `extension/generated/rules.js` so there is one copy of each: the kinds a
//! side panel may send ([`PANEL_KINDS`]), the extension stores Errand never
//! touches ([`STORE_PAGES`]; the host's `sites.rs` uses the same list), and
//! how long the service worker keeps an incomplete set of chunks
//! ([`CHUNK_TIMEOUT_MS`]; the joiner itself, with its limits, is the
//! crate's [`crate::chunk::Reassembler`], called from the service worker).
//!
//! `cargo run -p errand-protocol --example export-js` writes the file; this
//! crate's test `rules_js_is_current` fails when the committed file is
//! stale.

use crate::PANEL_KINDS;

/// The extension stores, as (host, path prefix): browsers do not let
/// extensions script them, and Errand never acts there (the host refuses
/// them; the side panel says so before asking).
pub const STORE_PAGES: &[(&str, &str)] = &[
    ("chromewebstore.google.com", ""),
    ("chrome.google.com", "/webstore"),
    ("microsoftedge.microsoft.com", "/addons"),
];

/// How long the service worker keeps an incomplete set of chunks.
pub const CHUNK_TIMEOUT_MS: u64 = 30_000;

/// Where the generated file lives, from the repository's root.
pub const RULES_JS_PATH: &str = "extension/generated/rules.js";

/// The text of `extension/generated/rules.js`.
pub fn rules_js() -> String {
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let mut out = String::from(
        "// Generated from Rust (errand-protocol, shared/src/rules_js.rs): do not edit.\n\
         // Regenerate with `cargo run -p errand-protocol --example export-js`;\n\
         // `cargo test -p errand-protocol rules_js` fails when this file is stale.\n\n",
    );
    out.push_str("/** The kinds a side panel may send; the service worker drops any other. */\n");
    out.push_str("export const PANEL_KINDS = new Set([\n");
    for kind in PANEL_KINDS {
        out.push_str(&format!("  {},\n", quoted(kind)));
    }
    out.push_str("]);\n\n");
    out.push_str(
        "/** The extension stores Errand never touches: host, and path prefix (lower case). */\n",
    );
    out.push_str("export const STORE_PAGES = [\n");
    for (host, path) in STORE_PAGES {
        out.push_str(&format!("  {{ host: {}, path: {} }},\n", quoted(host), quoted(path)));
    }
    out.push_str("];\n\n");
    out.push_str(&format!(
        "/** How long an incomplete set of chunks is kept. */\n\
         export const CHUNK_TIMEOUT_MS = {CHUNK_TIMEOUT_MS};\n"
    ));
    out
}

/// Whether `host` and `path` (lower case) are an extension store's.
pub fn is_store_page(host: &str, path: &str) -> bool {
    STORE_PAGES.iter().any(|(h, p)| host == *h && path.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_js_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(RULES_JS_PATH);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == rules_js(),
            "{RULES_JS_PATH} is stale: run `cargo run -p errand-protocol --example export-js`"
        );
    }

    #[test]
    fn the_stores_are_known() {
        assert!(is_store_page("chromewebstore.google.com", "/detail/x"));
        assert!(is_store_page("chrome.google.com", "/webstore/category"));
        assert!(is_store_page("microsoftedge.microsoft.com", "/addons/detail/x"));
        assert!(!is_store_page("chrome.google.com", "/intl/en/"));
        assert!(!is_store_page("microsoftedge.microsoft.com", "/"));
    }
}

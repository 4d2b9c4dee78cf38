//! The fixture server: `tests/fixtures/` over HTTP on 127.0.0.1.
//!
//! `/<file>` serves the file; `/csp/<file>` serves the same file with
//! `Content-Security-Policy: script-src 'self'`, a policy that refuses
//! WebAssembly in content scripts too (so the extension must fall back to
//! its JavaScript build). `/slow?ms=N` answers `slept N ms` after N
//! milliseconds (at most a minute): a slow server for the settle wait;
//! `/slow/<file>?ms=N` serves the fixture file after N milliseconds (an
//! image that comes late).

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::server::Server;

/// The policy served under `/csp/`.
pub const CSP: &str = "script-src 'self'";

/// The folder served.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A running fixture server; stopped on drop.
pub struct FixtureServer {
    server: Server,
}

impl FixtureServer {
    /// Starts serving [`fixtures_dir`] on a free port.
    pub fn start() -> Result<FixtureServer> {
        Self::start_in(fixtures_dir())
    }

    /// Starts serving `dir` (and its sub-folders) on a free port. A missing
    /// file under a `resources/` folder is served as an empty page (the
    /// corpus's saved iframes were not kept).
    pub fn start_in(dir: PathBuf) -> Result<FixtureServer> {
        let router = axum::Router::new().fallback(move |uri: Uri| {
            let dir = dir.clone();
            async move {
                if uri.path() == "/slow" {
                    return slow(&uri).await;
                }
                if let Some(rest) = uri.path().strip_prefix("/slow/") {
                    tokio::time::sleep(std::time::Duration::from_millis(delay(&uri))).await;
                    let Ok(file) = format!("/{rest}").parse::<Uri>() else {
                        return (StatusCode::NOT_FOUND, "not found").into_response();
                    };
                    return serve(&dir, file);
                }
                serve(&dir, uri)
            }
        });
        Ok(FixtureServer { server: Server::start(router)? })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr
    }

    /// The full URL of `path` (`"/submit.html"`, `"/csp/submit.html"`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{}", self.server.addr, path.trim_start_matches('/'))
    }
}

/// `/slow?ms=N`: a plain-text answer after N ms.
async fn slow(uri: &Uri) -> Response {
    let ms = delay(uri);
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        format!("slept {ms} ms"),
    )
        .into_response()
}

/// The `ms=N` of a slow request's query: 400 unless said, at most a minute.
fn delay(uri: &Uri) -> u64 {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("ms="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(400)
        .min(60_000)
}

fn serve(dir: &Path, uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    let (csp, rel) = match path.strip_prefix("csp/") {
        Some(rest) => (true, rest),
        None => (false, path),
    };
    let rel = Path::new(rel);
    // Plain names only: no `..`, no absolute paths.
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    }
    let file = dir.join(rel);
    let Ok(body) = std::fs::read(&file) else {
        if rel.components().any(|c| c.as_os_str() == "resources") {
            return ([(header::CONTENT_TYPE, "text/html")], "<!doctype html><title></title>")
                .into_response();
        }
        return (StatusCode::NOT_FOUND, format!("no fixture {}", rel.display())).into_response();
    };
    let mut resp = (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type(&file))),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        body,
    )
        .into_response();
    if csp {
        resp.headers_mut().insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    }
    resp
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or_default() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        _ => "text/plain; charset=utf-8",
    }
}

/// A generated page of `rows` rows of ten elements (the benchmarks'
/// `generated-*` pages): per row a button, a link and an input a person
/// would use (labelled `w{row}b`, `w{row}a`, `w{row}i`), a hidden button,
/// and six plain elements with text.
pub fn generated_page(rows: usize) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><meta charset=utf-8><title>generated</title>\
         <style>.r{display:flex;gap:6px;padding:2px;font:13px sans-serif}</style></head><body>\n",
    );
    for i in 0..rows {
        html.push_str(&format!(
            "<div class=r><span>Item {i}</span><b>note</b>\
             <button aria-label=\"w{i}b\">Buy</button>\
             <a href=\"#r{i}\" aria-label=\"w{i}a\">Details</a>\
             <input aria-label=\"w{i}i\">\
             <button style=\"display:none\">Hidden</button>\
             <i>decoy</i><span>more text</span><em>x</em></div>\n"
        ));
    }
    html.push_str("</body></html>\n");
    html
}

/// Another page of the same size as [`generated_page`], other names: where
/// a task's tab goes next (`bench_load`, `profile_first`).
pub fn generated_page_next(rows: usize) -> String {
    generated_page(rows)
        .replace("Item ", "Entry ")
        .replace(">Buy<", ">Order<")
        .replace("note", "remark")
}

//! Errand's end-to-end harness: real headless Chromium with the real
//! extension, the real `errand` host over real native messaging, fixture
//! pages from a local HTTP server, and a scripted model server speaking the
//! OpenAI chat-completions wire format.
//!
//! | module | what |
//! | --- | --- |
//! | [`cdp`] | a small DevTools Protocol client over `--remote-debugging-pipe` |
//! | [`content`] | a tab's content script, reached from the service worker as its relay does |
//! | [`browser`] | [`browser::TestBrowser`]: Chromium + extension + host in a fresh profile |
//! | [`side_panel`] | opening the real side panel for a tab |
//! | [`fixtures`] | the HTTP server for `tests/fixtures/` (and `/csp/…`) |
//! | [`model`] | the scripted model server |
//! | [`rig`] | one test's model, fixtures and browser; running a task from the side panel |
//! | [`store`] | reading the host's SQLite file |
//! | [`miniwob`] | MiniWoB++ episodes through the whole pipeline, with scripted solvers |
//!
//! Build first: `bash scripts/build-extension.sh` and
//! `cargo build -p errand-host`; then `cargo test -p errand-e2e`.

pub mod browser;
pub mod cdp;
pub mod content;
pub mod fixtures;
pub mod model;
pub mod rig;
pub mod side_panel;
pub mod stats;
pub mod store;

pub mod miniwob;
mod server;

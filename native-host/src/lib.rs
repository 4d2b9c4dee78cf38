//! Errand's native host: everything that runs outside the browser.
//!
//! See `ARCHITECTURE.md` for the map. The binary (`src/main.rs`) is a thin
//! front over [`host::nm::main`] (when the browser starts it) and
//! [`cli::main`].
//!
//! The modules are layers, each using only those below it (checked by
//! `tests/layers.rs`):
//! [`cli`] → [`host`] → [`agent`] → [`setup`] → [`memory`] → [`llm`] →
//! [`sites`] → [`config`] → [`answer`] → [`origin`] → [`text`].

pub mod agent;
pub mod answer;
pub mod cli;
pub mod config;
pub mod host;
pub mod llm;
pub mod memory;
pub mod origin;
pub mod setup;
pub mod sites;
pub mod text;
pub mod tools;

// The paths other crates (the e2e suite, the benchmarks, the fuzz targets)
// use; code inside this crate names the layers instead.
pub use answer::{dialect, parse};
pub use host::transport;
pub use memory::{scrub, store};
pub use setup::browser;

//! Errand's native host: everything that runs outside the browser.
//!
//! See `ARCHITECTURE.md` for the map. The binary (`src/main.rs`) is a thin
//! front over [`nm::main`] (when the browser starts it) and [`cli::main`].

pub mod agent;
pub mod approval;
pub mod browser;
pub mod budget;
pub mod cli;
pub mod commands;
pub mod config;
pub mod dialect;
pub mod doctor;
pub mod facts;
pub mod host;
pub mod install;
pub mod keychain;
pub mod llm;
pub mod logging;
pub mod loop_detect;
pub mod nm;
pub mod panel_api;
pub mod parse;
pub mod planner;
pub mod profile;
pub mod prompt;
pub mod scrub;
pub mod secrets;
pub mod session;
pub mod sites;
pub mod store;
pub mod term;
pub mod transport;

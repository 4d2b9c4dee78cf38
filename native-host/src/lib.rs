//! Errand's native host: everything that runs outside the browser.
//!
//! See `ARCHITECTURE.md` for the map. The binary (`src/main.rs`) is a thin
//! command-line front over these modules.

pub mod browser;

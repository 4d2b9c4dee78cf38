//! Setting Errand up on this machine and starting it: `errand install`
//! (the native messaging registration), `errand doctor`, finding and
//! launching Chromium with the extension, the log.
//!
//! Knows the config, the memory (to check it) and the model providers (to
//! probe them); knows nothing of the agent, the host's connection or the
//! command line.

pub mod browser;
pub mod doctor;
pub mod install;
pub mod logging;

//! What Errand keeps: the SQLite store of tasks, steps and profile facts
//! ([`store`]), the profile behind the side panel and `errand memory`
//! ([`profile`], [`facts`]), the secrets and where their values live
//! ([`secrets`], [`keychain`]), and the scrubber that keeps their values out
//! of everything leaving the host ([`scrub`]).
//!
//! Knows the config and the model's message type (to scrub prompts); knows
//! nothing of the agent, the host or the command line.

pub mod facts;
pub mod keychain;
pub mod profile;
pub mod recipe;
pub mod scrub;
pub mod secrets;
pub mod store;

//! The scripted model: the `errand-scripted-model` crate (tests/model), the
//! one server both suites use, re-exported here so tests write
//! `errand_e2e::model::{Reply, ScriptedModel, find_element}`.

pub use errand_scripted_model::*;

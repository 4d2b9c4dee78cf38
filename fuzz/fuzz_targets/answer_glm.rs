//! The GLM-4.5V text protocol (`dialect::glm::parse`) on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::caught_panics_are_not_crashes();
    let Ok(text) = std::str::from_utf8(data) else { return };
    common::answer(errand_host::dialect::glm::parse(text));
});

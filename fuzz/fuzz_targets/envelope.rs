//! `Envelope::decode` (and the host's `transport::decode`, which also digs
//! out the id of a refused message) on arbitrary text. Nothing may panic; a
//! message read must encode to text that reads back the same. The same text
//! is also cut into chunks, which must join back to it, and read as
//! envelopes one a line fed to the chunk joiner the service worker runs
//! (`errand_protocol::chunk::Reassembler`): refusals, never a panic.
#![no_main]

use errand_host::transport;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::caught_panics_are_not_crashes();
    let Ok(text) = std::str::from_utf8(data) else { return };
    match transport::decode(text) {
        Ok(env) => common::round_trips(&env),
        Err(e) => {
            let _ = (e.code(), e.request_id(), e.to_string());
        }
    }
    common::splits(text);
    let mut joiner = errand_protocol::chunk::Reassembler::new();
    for line in text.lines() {
        let Ok(env) = errand_protocol::Envelope::decode(line) else { continue };
        if let Err(e) = joiner.accept(env) {
            let _ = (e.of(), e.to_string());
        }
        let _ = joiner.take_superseded();
    }
    let _ = joiner.abandon();
});

//! The native messaging frame reader, fed arbitrary bytes as the browser's
//! stream: length prefixes of any size, truncated frames, invalid UTF-8,
//! bad JSON, chunk runs in any order. The first byte picks the size limit.
//! Nothing may panic; every envelope read must also be writable and read
//! back the same.
#![no_main]

use std::io::Cursor;

use errand_host::transport::{self, MAX_INBOUND, Reassembler};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::caught_panics_are_not_crashes();
    let Some((&pick, stream)) = data.split_first() else { return };
    let max = match pick % 4 {
        0 => MAX_INBOUND,
        1 => errand_protocol::MAX_TO_EXTENSION,
        2 => 64,
        _ => 0,
    };
    let mut reader = Cursor::new(stream);
    let mut joiner = Reassembler::new();
    transport::read_stream(&mut reader, max, |item| {
        match item {
            Ok(env) => {
                common::round_trips(&env);
                if let Ok(Some(joined)) = joiner.accept(env) {
                    common::round_trips(&joined);
                }
            }
            Err(e) => {
                let _ = (e.code(), e.request_id(), e.to_string());
            }
        }
        true
    });
});

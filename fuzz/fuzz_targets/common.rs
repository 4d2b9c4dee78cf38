//! Checks shared by the fuzz targets.
#![allow(dead_code)]

use errand_host::parse::{AgentAnswer, ParseError};
use errand_host::transport::{self, Reassembler};
use errand_protocol::{Action, Body, Envelope, MAX_TO_EXTENSION};

/// A message read must be writable, as frames within the browser's limit,
/// and read back as the same text.
pub fn round_trips(env: &Envelope) {
    let text = env.encode();
    let back = Envelope::decode(&text)
        .unwrap_or_else(|e| panic!("a message read cannot be read back: {e}\n{text}"));
    assert_eq!(back.encode(), text, "the message changed on its way back");

    let mut out = Vec::new();
    transport::write_envelope(&mut out, env).expect("writing to a Vec");
    let mut reader = std::io::Cursor::new(out);
    let mut frames = Vec::new();
    transport::read_stream(&mut reader, MAX_TO_EXTENSION, |item| {
        frames.push(item.unwrap_or_else(|e| panic!("the host's own frame is bad: {e}")));
        true
    });
    if matches!(env.body, Body::Chunk { .. }) {
        // A chunk itself (read from the input) goes as it is.
        assert_eq!(frames.len(), 1, "one chunk written, {} frames read", frames.len());
        assert_eq!(frames[0].encode(), text);
        return;
    }
    let mut joiner = Reassembler::new();
    let mut got = Vec::new();
    for frame in frames {
        got.extend(joiner.accept(frame).expect("the host's own chunks"));
    }
    assert_eq!(got.len(), 1, "one message written, {} read", got.len());
    assert_eq!(got[0].encode(), text);
}

/// `text` cut into chunks with a small budget joins back to it, each piece
/// within the budget once escaped.
pub fn splits(text: &str) {
    let budget = 6 + text.len() % 61;
    let chunks = transport::split(7, text, budget);
    let mut joined = String::with_capacity(text.len());
    for (i, c) in chunks.iter().enumerate() {
        let Body::Chunk { of, index, count, data } = &c.body else { panic!("not a chunk") };
        assert_eq!((*of, *index as usize, *count as usize), (7, i, chunks.len()));
        let escaped = serde_json::to_string(data).expect("a string").len() - 2;
        assert!(escaped <= budget, "{escaped} bytes over a budget of {budget}");
        assert!(!data.is_empty() || text.is_empty());
        joined.push_str(data);
    }
    assert_eq!(joined, text);
}

/// A parsed answer's actions must survive the trip to the content script
/// and the store: written as JSON and read back the same.
pub fn answer(parsed: Result<AgentAnswer, ParseError>) {
    match parsed {
        Ok(answer) => {
            for action in &answer.actions {
                let json = serde_json::to_string(action).expect("an action serialises");
                let back: Action = serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("a parsed action cannot be read back: {e}\n{json}"));
                assert_eq!(
                    serde_json::to_string(&back).expect("an action serialises"),
                    json,
                    "the action changed on its way back"
                );
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// libfuzzer-sys aborts on every panic, even one the code under test
/// catches — and the host catches jsonrepair's (`parse::repair_json`). So
/// the hook goes back to the standard one: an uncaught panic still fails
/// the run (libfuzzer-sys aborts when the target unwinds), a caught one does
/// not; jsonrepair's are not printed.
pub fn caught_panics_are_not_crashes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        drop(std::panic::take_hook()); // libfuzzer-sys's: print, then abort
        let standard = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.location().is_some_and(|l| l.file().contains("jsonrepair")) {
                standard(info);
            }
        }));
    });
}

//! `ChunkJoiner`: the service worker joins the host's `chunk` envelopes
//! (messages over 1 MiB, see `Body::Chunk`) with the protocol crate's
//! [`Reassembler`], the one copy of the joiner's rules (order, `count`, the
//! size limit, the announced id, a set started before the last one
//! completed), fuzzed with the host. The timeout stays a JavaScript timer
//! (no clock here: `std::time::Instant` panics on wasm32): the service
//! worker calls [`ChunkJoiner::expire`] when it fires.
//!
//! Every refusal is one sentence, "dropped the chunked message N from the
//! host: why", which the service worker logs; nothing here panics on a bad
//! chunk.

use errand_protocol::Envelope;
use errand_protocol::chunk::{ChunkError, Reassembler};
use wasm_bindgen::prelude::*;

/// The sentence the service worker logs for a dropped set.
fn dropped(e: &ChunkError) -> String {
    format!("dropped the chunked message {} from the host: {e}", e.of())
}

/// Joins the host's `chunk` envelopes, one message at a time.
#[wasm_bindgen]
#[derive(Debug, Default)]
pub struct ChunkJoiner {
    inner: Reassembler,
}

impl ChunkJoiner {
    /// [`ChunkJoiner::accept`], with the error as a sentence.
    pub fn take(&mut self, chunk: &str) -> Result<Option<String>, String> {
        let env = match Envelope::decode(chunk) {
            Ok(env) => env,
            Err(e) => {
                // Like any bad set: the unfinished message goes too.
                let of = self.inner.abandon().map(|e| format!(" {}", e.of())).unwrap_or_default();
                return Err(format!(
                    "dropped the chunked message{of} from the host: a malformed chunk ({e})"
                ));
            }
        };
        match self.inner.accept(env) {
            Ok(joined) => Ok(joined.map(|env| env.encode())),
            Err(e) => Err(dropped(&e)),
        }
    }
}

#[wasm_bindgen]
impl ChunkJoiner {
    #[wasm_bindgen(constructor)]
    pub fn new() -> ChunkJoiner {
        ChunkJoiner::default()
    }

    /// Takes one `chunk` envelope's JSON text. Returns the joined message's
    /// JSON after the set's last chunk (to be checked like any message),
    /// `undefined` while the set is incomplete; throws the sentence saying
    /// why the set was dropped.
    pub fn accept(&mut self, chunk: &str) -> Result<Option<String>, JsError> {
        self.take(chunk).map_err(|e| JsError::new(&e))
    }

    /// The sentence for an unfinished set the last `accept` dropped because
    /// a new message started, once; `undefined` if none.
    pub fn superseded(&mut self) -> Option<String> {
        self.inner.take_superseded().map(|e| dropped(&e))
    }

    /// Whether a message is partly received (the service worker's timer runs).
    pub fn pending(&self) -> bool {
        self.inner.pending()
    }

    /// The timeout fired: drops the incomplete set and returns the sentence
    /// saying so; `undefined` if none was pending.
    pub fn expire(&mut self) -> Option<String> {
        self.inner.abandon().map(|e| dropped(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use errand_protocol::Body;
    use errand_protocol::chunk::split;

    #[test]
    fn joins_and_refuses_with_sentences() {
        let whole = Envelope::new(7, Body::GetStatus {});
        let chunks: Vec<String> =
            split(7, &whole.encode(), 8).iter().map(Envelope::encode).collect();
        assert!(chunks.len() > 2);
        let mut j = ChunkJoiner::new();
        for c in &chunks[..chunks.len() - 1] {
            assert_eq!(j.take(c), Ok(None));
        }
        assert!(j.pending());
        assert_eq!(j.take(chunks.last().unwrap()), Ok(Some(whole.encode())));
        assert!(!j.pending());

        // Out of order.
        assert_eq!(
            j.take(&chunks[1]),
            Err(format!(
                "dropped the chunked message 7 from the host: chunk 1/{} is out of order",
                chunks.len()
            ))
        );
        // Malformed: the unfinished set goes too.
        j.take(&chunks[0]).unwrap();
        let bad = j.take(r#"{"v":1,"id":7,"kind":"chunk","of":7}"#).unwrap_err();
        assert!(bad.starts_with("dropped the chunked message 7 from the host: a malformed chunk"));
        assert!(!j.pending());
        // A new set before the last completed.
        j.take(&chunks[0]).unwrap();
        let next = split(8, "{}", 8).remove(0).encode();
        assert!(j.take(&next).is_err()); // "{}" is no message
        assert_eq!(
            j.superseded().as_deref(),
            Some(
                "dropped the chunked message 7 from the host: message 8 started before it was complete"
            )
        );
        // The timer.
        j.take(&chunks[0]).unwrap();
        assert_eq!(
            j.expire().as_deref(),
            Some("dropped the chunked message 7 from the host: it did not arrive in time")
        );
        assert_eq!(j.expire(), None);
    }
}

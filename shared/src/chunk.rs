//! Host → extension messages over 1 MiB, in `chunk` envelopes
//! ([`Body::Chunk`]): [`split`] cuts a message's JSON text (the host),
//! [`Reassembler`] joins it again (the service worker, through the
//! content-script crate's `ChunkJoiner`; tests and tools that read the
//! host's output). One copy of the rules, fuzzed (`fuzz/`, `frames`).
//!
//! The joiner's rules: chunks arrive in order, back to back (`index` 0
//! starts a set and drops an unfinished one, reported by
//! [`Reassembler::take_superseded`]); every chunk of a set has its `of` and
//! `count`; the set's `data` adds up to at most [`MAX_CHUNKED`] bytes; the
//! joined text must be a message, not a chunk, whose `id` is the set's
//! `of`. It keeps no clock (`std::time::Instant` panics on
//! wasm32-unknown-unknown): the caller drops an incomplete set after its
//! own timeout with [`Reassembler::abandon`].

use crate::{Body, DecodeError, Envelope, MAX_CHUNKED};

/// How many bytes `c` takes inside a JSON string as `serde_json` writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '\0'..='\u{1f}' => 6, // \u00XX
        c => c.len_utf8(),
    }
}

/// Cuts the JSON text `text` of message `of` into `chunk` envelopes whose
/// `data`, once escaped, takes at most `budget` bytes each (`budget` of at
/// least 6, the longest escape of one character). Cuts fall on character
/// boundaries only, so every slice is valid UTF-8 text.
pub fn split(of: u64, text: &str, budget: usize) -> Vec<Envelope> {
    let budget = budget.max(6);
    let mut slices = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, c) in text.char_indices() {
        let n = escaped_len(c);
        if size + n > budget && i > start {
            slices.push(&text[start..i]);
            (start, size) = (i, 0);
        }
        size += n;
    }
    if start < text.len() || slices.is_empty() {
        slices.push(&text[start..]);
    }
    let count = u32::try_from(slices.len()).unwrap_or(u32::MAX);
    slices
        .into_iter()
        .enumerate()
        .map(|(index, data)| {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            Envelope::new(of, Body::Chunk { of, index, count, data: data.to_owned() })
        })
        .collect()
}

/// Why a set of chunks was dropped; [`ChunkError::of`] is the message's
/// id. The text is the reason alone ("chunk 1/2 is out of order").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk {index}/{count} is out of order")]
    OutOfOrder { of: u64, index: u32, count: u32 },
    #[error("it is over {} MiB", max / 1_048_576)]
    TooLarge { of: u64, max: usize },
    #[error("the joined text is not a message: {error}")]
    Joined { of: u64, error: DecodeError },
    #[error("the joined text is message {id:?}, not the announced message")]
    WrongId { of: u64, id: Option<u64> },
    #[error("the joined text is a chunk itself, not the announced message")]
    Nested { of: u64 },
    #[error("message {next} started before it was complete")]
    Superseded { of: u64, next: u64 },
    #[error("it did not arrive in time")]
    Expired { of: u64 },
}

impl ChunkError {
    /// The id of the message whose chunks were dropped.
    pub fn of(&self) -> u64 {
        match *self {
            ChunkError::OutOfOrder { of, .. }
            | ChunkError::TooLarge { of, .. }
            | ChunkError::Joined { of, .. }
            | ChunkError::WrongId { of, .. }
            | ChunkError::Nested { of }
            | ChunkError::Superseded { of, .. }
            | ChunkError::Expired { of } => of,
        }
    }
}

/// The chunks of one message received so far.
#[derive(Debug)]
struct Partial {
    of: u64,
    count: u32,
    parts: Vec<String>,
    bytes: usize,
}

/// Joins `chunk` envelopes back into the message they carry; any other
/// envelope passes through. See the module's documentation for the rules.
#[derive(Debug, Default)]
pub struct Reassembler {
    partial: Option<Partial>,
    superseded: Option<ChunkError>,
}

impl Reassembler {
    pub fn new() -> Reassembler {
        Reassembler::default()
    }

    /// Whether a message is partly received.
    pub fn pending(&self) -> bool {
        self.partial.is_some()
    }

    /// Drops the message partly received, if any (the caller's timeout):
    /// returns why, as [`ChunkError::Expired`].
    pub fn abandon(&mut self) -> Option<ChunkError> {
        self.partial.take().map(|p| ChunkError::Expired { of: p.of })
    }

    /// The unfinished set the last [`accept`](Self::accept) dropped because
    /// a new one started, once.
    pub fn take_superseded(&mut self) -> Option<ChunkError> {
        self.superseded.take()
    }

    /// Takes one envelope. Returns it unchanged when it is not a chunk,
    /// `Ok(None)` while a message is incomplete, the joined message once
    /// its last chunk came, or why the set was dropped.
    pub fn accept(&mut self, env: Envelope) -> Result<Option<Envelope>, ChunkError> {
        let Body::Chunk { of, index, count, data } = env.body else {
            return Ok(Some(env));
        };
        if index == 0 {
            // A new message starts; an unfinished one before it will never end.
            if let Some(old) = self.partial.take() {
                self.superseded = Some(ChunkError::Superseded { of: old.of, next: of });
            }
            if count == 0 {
                return Err(ChunkError::OutOfOrder { of, index, count });
            }
            self.partial = Some(Partial { of, count, parts: Vec::new(), bytes: 0 });
        }
        let Some(partial) = self.partial.as_mut() else {
            return Err(ChunkError::OutOfOrder { of, index, count });
        };
        if partial.of != of || partial.count != count || partial.parts.len() != index as usize {
            self.partial = None;
            return Err(ChunkError::OutOfOrder { of, index, count });
        }
        partial.bytes = partial.bytes.saturating_add(data.len());
        if partial.bytes > MAX_CHUNKED {
            self.partial = None;
            return Err(ChunkError::TooLarge { of, max: MAX_CHUNKED });
        }
        partial.parts.push(data);
        if partial.parts.len() < count as usize {
            return Ok(None);
        }
        let Some(partial) = self.partial.take() else { return Ok(None) };
        let text = partial.parts.concat();
        let joined = Envelope::decode(&text).map_err(|error| ChunkError::Joined { of, error })?;
        if matches!(joined.body, Body::Chunk { .. }) {
            return Err(ChunkError::Nested { of });
        }
        if joined.id != of {
            return Err(ChunkError::WrongId { of, id: Some(joined.id) });
        }
        Ok(Some(joined))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CHUNK_DATA_MAX;

    #[test]
    fn the_reassembler_refuses_bad_sets() {
        let chunk = |of, index, count, data: &str| {
            Envelope::new(of, Body::Chunk { of, index, count, data: data.into() })
        };
        let whole = Envelope::new(7, Body::GetStatus {}).encode();
        let (a, b) = whole.split_at(10);

        // Other messages pass through; a set in order is joined.
        let mut r = Reassembler::new();
        let other = Envelope::new(1, Body::Ack {});
        assert_eq!(r.accept(other.clone()), Ok(Some(other)));
        assert_eq!(r.accept(chunk(7, 0, 2, a)), Ok(None));
        assert!(r.pending());
        assert_eq!(r.accept(chunk(7, 1, 2, b)).unwrap().unwrap().id, 7);

        // Out of order, a changed count, another message's chunk, a
        // missing start, no parts at all.
        assert!(matches!(r.accept(chunk(7, 1, 2, b)), Err(ChunkError::OutOfOrder { .. })));
        r.accept(chunk(7, 0, 2, a)).unwrap();
        assert!(matches!(r.accept(chunk(7, 1, 3, b)), Err(ChunkError::OutOfOrder { .. })));
        r.accept(chunk(7, 0, 2, a)).unwrap();
        assert!(matches!(r.accept(chunk(8, 1, 2, b)), Err(ChunkError::OutOfOrder { .. })));
        assert!(!r.pending());
        assert!(matches!(r.accept(chunk(7, 0, 0, "")), Err(ChunkError::OutOfOrder { .. })));

        // A new set drops an unfinished one, and says so once.
        r.accept(chunk(6, 0, 2, "{")).unwrap();
        assert_eq!(r.take_superseded(), None);
        r.accept(chunk(7, 0, 2, a)).unwrap();
        let superseded = r.take_superseded().unwrap();
        assert_eq!(superseded.of(), 6);
        assert_eq!(superseded.to_string(), "message 7 started before it was complete");
        assert_eq!(r.take_superseded(), None);
        assert_eq!(r.accept(chunk(7, 1, 2, b)).unwrap().unwrap().id, 7);

        // The caller's timeout abandons an incomplete set.
        assert_eq!(r.abandon(), None);
        r.accept(chunk(7, 0, 2, a)).unwrap();
        assert_eq!(r.abandon(), Some(ChunkError::Expired { of: 7 }));
        assert!(!r.pending());
        assert!(matches!(r.accept(chunk(7, 1, 2, b)), Err(ChunkError::OutOfOrder { .. })));

        // The joined text must be a message, with the set's id, not a chunk.
        assert!(matches!(r.accept(chunk(7, 0, 1, "{nope")), Err(ChunkError::Joined { .. })));
        assert!(matches!(r.accept(chunk(8, 0, 1, &whole)), Err(ChunkError::WrongId { .. })));
        let nested = chunk(7, 0, 1, "{}").encode();
        assert!(matches!(r.accept(chunk(7, 0, 1, &nested)), Err(ChunkError::Nested { .. })));

        // The total is capped.
        let big = "x".repeat(CHUNK_DATA_MAX);
        let count = (MAX_CHUNKED / CHUNK_DATA_MAX + 2) as u32;
        let mut last = Ok(None);
        for i in 0..count {
            last = r.accept(chunk(9, i, count, &big));
            if last.is_err() {
                break;
            }
        }
        assert!(matches!(last, Err(ChunkError::TooLarge { .. })), "{last:?}");
        assert_eq!(last.unwrap_err().to_string(), "it is over 64 MiB");
        assert!(!r.pending());
    }
}

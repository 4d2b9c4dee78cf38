//! Native messaging framing over any `Read` / `Write`: a 4-byte native-endian
//! length, then that many bytes of UTF-8 JSON.
//!
//! A reader thread turns frames into [`Envelope`]s (or [`FrameError`]s the
//! dispatcher answers with an `error` envelope, then goes on); a writer
//! thread writes the envelopes it is given. Nothing else touches the streams,
//! so no stray byte reaches stdout.
//!
//! # Messages over 1 MiB
//! The browser drops the port (and kills the host) for a host → extension
//! message over [`MAX_TO_EXTENSION`] bytes. [`write_envelope`] therefore
//! sends a message whose JSON is longer as a run of `chunk` envelopes
//! ([`Body::Chunk`]): [`split`] cuts the JSON text on character boundaries
//! into slices of at most [`CHUNK_DATA_MAX`] bytes *as escaped inside the
//! chunk*, and every chunk's encoding is checked to stay under the limit.
//! The chunks of one message are written back to back (the writer thread
//! writes one message at a time). Up to [`MAX_CHUNKED`] bytes go this way;
//! a larger message is replaced by an `error` reply, as before.
//!
//! The service worker joins them with [`Reassembler`] (errand-protocol's
//! `chunk` module, the one copy of the joiner's rules, through the
//! content-script crate's `ChunkJoiner`); tests and tools that read the
//! host's output use it too.

use std::io::{self, Read, Write};
use std::thread;

pub use errand_protocol::chunk::{ChunkError, Reassembler, split};
use errand_protocol::{
    CHUNK_DATA_MAX, DecodeError, Envelope, ErrorCode, MAX_CHUNKED, MAX_FROM_EXTENSION,
    MAX_TO_EXTENSION,
};
use native_messaging::host::{NmError, decode_message_opt, send_frame};
use tokio::sync::{mpsc, oneshot};

// The crate enforces the same outgoing limit as the protocol.
const _: () = assert!(native_messaging::host::MAX_TO_BROWSER == MAX_TO_EXTENSION);

/// How many decoded messages may wait for the dispatcher.
const INBOUND_QUEUE: usize = 64;

/// A frame that could not be turned into an envelope. The connection goes on.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The payload is not UTF-8.
    #[error("the frame is not valid UTF-8: {0}")]
    NotUtf8(String),
    /// The length prefix claims more than the limit; the payload is skipped.
    #[error("a frame of {len} bytes is over the {max}-byte limit and was skipped")]
    TooLarge { len: usize, max: usize },
    /// UTF-8 text that is not a valid envelope; `id` is the message's `id`
    /// when it could be read.
    #[error("{error}")]
    Decode { error: DecodeError, id: Option<u64> },
}

impl FrameError {
    /// The error code to answer with.
    pub fn code(&self) -> ErrorCode {
        match self {
            FrameError::NotUtf8(_) | FrameError::TooLarge { .. } => ErrorCode::BadFrame,
            FrameError::Decode { error, .. } => error.code(),
        }
    }

    /// The offending message's id, when it could be read.
    pub fn request_id(&self) -> Option<u64> {
        match self {
            FrameError::Decode { id, .. } => *id,
            _ => None,
        }
    }
}

/// One item from the reader thread.
pub type Incoming = Result<Envelope, FrameError>;

/// Reads one frame. `Ok(None)` at a clean end of stream. A frame over `max`
/// is reported, then its payload is read and discarded in bounded chunks.
pub fn read_frame<R: Read>(reader: &mut R, max: usize) -> io::Result<Option<Incoming>> {
    match decode_message_opt(reader, max) {
        Ok(None) => Ok(None),
        Ok(Some(text)) => Ok(Some(decode(&text))),
        Err(NmError::IncomingNotUtf8(e)) => Ok(Some(Err(FrameError::NotUtf8(e.to_string())))),
        Err(NmError::IncomingTooLarge { len, max }) => {
            Ok(Some(Err(FrameError::TooLarge { len, max })))
        }
        Err(NmError::Io(e)) => Err(e),
        Err(other) => Err(io::Error::other(other.to_string())),
    }
}

/// Decodes a frame's text. When the envelope is refused (another version,
/// bad fields), its `id` is still looked for, so the error can name it.
pub fn decode(text: &str) -> Incoming {
    Envelope::decode(text).map_err(|error| {
        let id = error
            .request_id()
            .or_else(|| serde_json::from_str::<serde_json::Value>(text).ok()?.get("id")?.as_u64());
        FrameError::Decode { error, id }
    })
}

/// Reads and drops `len` bytes. Returns false when the stream ended first.
pub fn discard<R: Read>(reader: &mut R, len: usize) -> io::Result<bool> {
    let copied = io::copy(&mut reader.take(len as u64), &mut io::sink())?;
    Ok(copied == len as u64)
}

/// Reads frames until the stream ends or fails, handing each item to
/// `deliver` (which returns false to stop). A frame over `max` is reported,
/// then skipped. This is the reader thread's loop.
pub fn read_stream<R: Read>(reader: &mut R, max: usize, mut deliver: impl FnMut(Incoming) -> bool) {
    loop {
        let item = match read_frame(reader, max) {
            Ok(Some(item)) => item,
            Ok(None) => {
                tracing::debug!("the other side closed the stream");
                return;
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                tracing::warn!("the stream ended inside a frame");
                return;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                ) =>
            {
                tracing::info!("the other side went away: {e}");
                return;
            }
            Err(e) => {
                tracing::error!("reading a frame failed: {e}");
                return;
            }
        };
        let skip = match &item {
            Err(FrameError::TooLarge { len, .. }) => Some(*len),
            _ => None,
        };
        if let Err(e) = &item {
            tracing::warn!("bad frame: {e}");
        }
        if !deliver(item) {
            return; // nobody listens any more
        }
        if let Some(len) = skip {
            match discard(reader, len) {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!("the stream ended while skipping an oversized frame");
                    return;
                }
                Err(e) => {
                    tracing::error!("skipping an oversized frame failed: {e}");
                    return;
                }
            }
        }
    }
}

/// Starts the reader thread. The channel closes when the stream ends (the
/// browser disconnected) or fails.
pub fn spawn_reader<R: Read + Send + 'static>(reader: R, max: usize) -> mpsc::Receiver<Incoming> {
    spawn_reader_with(reader, max, Some)
}

/// Starts the reader thread, which offers each item to `take` first: what
/// `take` keeps (it returns `None`: a reply it handed to the request waiting
/// for it) does not go through the channel, so it reaches its receiver
/// without waiting for the dispatcher's turn.
pub fn spawn_reader_with<R, F>(reader: R, max: usize, mut take: F) -> mpsc::Receiver<Incoming>
where
    R: Read + Send + 'static,
    F: FnMut(Incoming) -> Option<Incoming> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(INBOUND_QUEUE);
    let spawned = thread::Builder::new().name("nm-reader".into()).spawn(move || {
        let mut reader = reader;
        read_stream(&mut reader, max, |item| match take(item) {
            Some(item) => tx.blocking_send(item).is_ok(),
            None => !tx.is_closed(),
        });
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the reader thread: {e}");
    }
    rx
}

/// What the writer thread is asked to do.
#[derive(Debug)]
pub enum Outgoing {
    /// Write this message (boxed: envelopes are large, the queue is not).
    Message(Box<Envelope>),
    /// Answer once everything before it is written, then stop.
    Close(oneshot::Sender<()>),
}

/// A message too large to send even in chunks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the host's message was {len} bytes, over the {max}-byte limit, and was not sent")]
pub struct Oversize {
    pub len: usize,
    pub max: usize,
}

/// The JSON texts that carry `env` to the extension, in order, each at most
/// [`MAX_TO_EXTENSION`] bytes: the message itself when it fits in one
/// frame, else its `chunk` envelopes (see the module's documentation).
pub fn to_extension(env: &Envelope) -> Result<Vec<String>, Oversize> {
    let text = env.encode();
    if text.len() <= MAX_TO_EXTENSION {
        return Ok(vec![text]);
    }
    if text.len() > MAX_CHUNKED {
        return Err(Oversize { len: text.len(), max: MAX_CHUNKED });
    }
    let chunks: Vec<String> =
        split(env.id, &text, CHUNK_DATA_MAX).iter().map(Envelope::encode).collect();
    // `split` keeps every escaped slice within the budget; the chunk's
    // own fields add about 100 bytes. Checked all the same: a frame over
    // the limit would cost the connection.
    match chunks.iter().map(String::len).max() {
        Some(longest) if longest > MAX_TO_EXTENSION => {
            Err(Oversize { len: longest, max: MAX_TO_EXTENSION })
        }
        _ => Ok(chunks),
    }
}

/// Writes one envelope: as one frame when it fits, else as its chunks. A
/// message over [`MAX_CHUNKED`] is not sent: an `error` envelope replying
/// to the same request goes instead, so the other side is not left waiting.
pub fn write_envelope<W: Write>(writer: &mut W, env: &Envelope) -> io::Result<()> {
    let texts = match to_extension(env) {
        Ok(texts) => texts,
        Err(e) => {
            tracing::error!(id = env.id, "an outgoing message is too large: {e}");
            vec![Envelope::error(env.id, env.re, ErrorCode::Internal, e.to_string()).encode()]
        }
    };
    if texts.len() > 1 {
        tracing::info!(id = env.id, chunks = texts.len(), "sending a large message in chunks");
    }
    for text in &texts {
        write_text(writer, text)?;
    }
    Ok(())
}

/// Writes one JSON text as a frame; refuses one over the browser's limit.
fn write_text<W: Write>(writer: &mut W, text: &str) -> io::Result<()> {
    if text.len() > MAX_TO_EXTENSION {
        return Err(io::Error::other(format!(
            "a frame of {} bytes is over the browser's {MAX_TO_EXTENSION}-byte limit",
            text.len()
        )));
    }
    let mut frame = Vec::with_capacity(4 + text.len());
    frame.extend_from_slice(&(text.len() as u32).to_ne_bytes());
    frame.extend_from_slice(text.as_bytes());
    send_frame(writer, &frame).map_err(|e| match e {
        NmError::Io(e) => e,
        other => io::Error::other(other.to_string()),
    })
}

/// Starts the writer thread; it runs until [`Outgoing::Close`], until every
/// sender is gone, or until a write fails (the browser went away).
pub fn spawn_writer<W: Write + Send + 'static>(writer: W, mut rx: mpsc::Receiver<Outgoing>) {
    let spawned = thread::Builder::new().name("nm-writer".into()).spawn(move || {
        let mut writer = writer;
        while let Some(item) = rx.blocking_recv() {
            match item {
                Outgoing::Message(env) => {
                    if let Err(e) = write_envelope(&mut writer, &env) {
                        tracing::warn!("cannot write to the browser: {e}");
                        break;
                    }
                }
                Outgoing::Close(done) => {
                    let _ = writer.flush();
                    let _ = done.send(());
                    break;
                }
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the writer thread: {e}");
    }
}

/// One envelope as the frames it is sent in: one frame, or its chunks (for
/// tests and one-off replies).
pub fn frame(env: &Envelope) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_envelope(&mut out, env);
    out
}

/// A raw frame around arbitrary bytes, for tests of malformed input.
pub fn raw_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_ne_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

/// The largest message the browser sends us.
pub const MAX_INBOUND: usize = MAX_FROM_EXTENSION;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use errand_protocol::{Body, PROTOCOL_VERSION};
    use std::io::Cursor;

    fn get_status(id: u64) -> Vec<u8> {
        frame(&Envelope::new(id, Body::GetStatus {}))
    }

    fn read_all(bytes: Vec<u8>, max: usize) -> Vec<Incoming> {
        let mut cursor = Cursor::new(bytes);
        let mut out = Vec::new();
        while let Some(item) = read_frame(&mut cursor, max).unwrap() {
            let skip = match &item {
                Err(FrameError::TooLarge { len, .. }) => Some(*len),
                _ => None,
            };
            out.push(item);
            if let Some(len) = skip {
                if !discard(&mut cursor, len).unwrap() {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn each_bad_frame_is_reported_and_the_next_is_read() {
        let mut bytes = Vec::new();
        bytes.extend(raw_frame(b"{not json"));
        bytes.extend(get_status(1));
        bytes.extend(raw_frame(br#"{"v":1,"id":7,"kind":"make_coffee"}"#));
        bytes.extend(get_status(2));
        bytes.extend(raw_frame(br#"{"v":2,"id":8,"kind":"get_status"}"#));
        bytes.extend(get_status(3));
        bytes.extend(raw_frame(b"\"\xff\xfe\""));
        bytes.extend(get_status(4));
        // Claims 5000 bytes with a 1024-byte limit; the payload follows.
        bytes.extend(raw_frame(&vec![b' '; 5000]));
        bytes.extend(get_status(5));

        let items = read_all(bytes, 1024);
        assert_eq!(items.len(), 10, "{items:?}");
        let codes: Vec<_> = items
            .iter()
            .map(|i| match i {
                Ok(env) => Ok(env.id),
                Err(e) => Err((e.code(), e.request_id())),
            })
            .collect();
        assert_eq!(
            codes,
            vec![
                Err((ErrorCode::BadMessage, None)),
                Ok(1),
                Err((ErrorCode::UnknownKind, Some(7))),
                Ok(2),
                Err((ErrorCode::UnsupportedVersion, Some(8))),
                Ok(3),
                Err((ErrorCode::BadFrame, None)),
                Ok(4),
                Err((ErrorCode::BadFrame, None)),
                Ok(5),
            ]
        );
        let too_large = items[8].as_ref().unwrap_err().to_string();
        assert!(too_large.contains("5000") && too_large.contains("1024"), "{too_large}");
    }

    #[test]
    fn an_oversized_frame_at_the_end_ends_cleanly() {
        let mut bytes = get_status(1);
        bytes.extend(2_000_u32.to_ne_bytes());
        bytes.extend([b'x'; 10]); // the stream ends long before 2000 bytes
        let items = read_all(bytes, 1024);
        assert_eq!(items.len(), 2);
        assert!(matches!(items[1], Err(FrameError::TooLarge { len: 2000, .. })));
    }

    /// The frames in `bytes`, each checked against the browser's limit.
    fn frames_within_the_limit(bytes: &[u8]) -> Vec<Envelope> {
        let mut rest = bytes;
        let mut out = Vec::new();
        while !rest.is_empty() {
            let len = u32::from_ne_bytes(rest[..4].try_into().unwrap()) as usize;
            assert!(len <= MAX_TO_EXTENSION, "a frame of {len} bytes");
            let text = std::str::from_utf8(&rest[4..4 + len]).unwrap();
            out.push(Envelope::decode(text).unwrap());
            rest = &rest[4 + len..];
        }
        out
    }

    /// Writes `env`, checks every frame, and joins the chunks again.
    fn send_and_join(env: &Envelope) -> (Envelope, usize) {
        let mut out = Vec::new();
        write_envelope(&mut out, env).unwrap();
        let frames = frames_within_the_limit(&out);
        let n = frames.len();
        let mut joiner = Reassembler::new();
        let mut joined = Vec::new();
        for (i, f) in frames.into_iter().enumerate() {
            if n > 1 {
                assert!(
                    matches!(&f.body, Body::Chunk { of, index, count, .. }
                        if *of == env.id && f.id == env.id && *index as usize == i && *count as usize == n),
                    "frame {i}: {:?}",
                    f.body
                );
            }
            joined.extend(joiner.accept(f).unwrap());
        }
        assert!(!joiner.pending());
        assert_eq!(joined.len(), 1);
        (joined.remove(0), n)
    }

    /// About `len` bytes of text with every kind of character the escaping
    /// treats differently: ASCII, 2-, 3- and 4-byte UTF-8, quotes,
    /// backslashes, newlines, control characters.
    fn mixed_text(len: usize) -> String {
        let unit = "Plain ASCII text, é à ü, € ☃ 中文, 𝄞 😀, \"quoted\" \\back\\slash\n\ttab \u{1}\u{1f}\u{7f} </script> \u{2028}. ";
        let mut s = String::with_capacity(len + unit.len());
        while s.len() < len {
            s.push_str(unit);
        }
        s
    }

    #[test]
    fn a_message_that_fits_goes_whole() {
        let env = Envelope::new(5, Body::Captured { data_url: String::new() });
        let pad = MAX_TO_EXTENSION - env.encode().len();
        let env = Envelope::new(5, Body::Captured { data_url: "x".repeat(pad) });
        assert_eq!(env.encode().len(), MAX_TO_EXTENSION);
        let (back, frames) = send_and_join(&env);
        assert_eq!((back, frames), (env.clone(), 1));

        // One byte more: two chunks.
        let Body::Captured { data_url } = env.body else { unreachable!() };
        let env = Envelope::reply(5, 2, Body::Captured { data_url: data_url + "x" });
        let (back, frames) = send_and_join(&env);
        assert_eq!((back, frames), (env, 2));
    }

    #[test]
    fn a_three_mebibyte_task_event_goes_in_chunks() {
        let memory = mixed_text(3 * 1_048_576);
        let env = Envelope::new(
            41,
            Body::TaskEvent {
                task_id: "t-1".into(),
                event: errand_protocol::TaskEvent::Step(errand_protocol::StepReport {
                    step: 3,
                    memory,
                    next_goal: "go on".into(),
                    ..Default::default()
                }),
            },
        );
        let text = env.encode();
        let (back, frames) = send_and_join(&env);
        assert_eq!(back, env);
        assert_eq!(back.encode(), text);
        // 3 MiB of text, escaped inside the chunks, in 900 KiB pieces.
        assert!((4..=8).contains(&frames), "{frames} frames");
    }

    #[test]
    fn three_mebibytes_of_files_go_in_chunks() {
        use base64::Engine;
        let bytes: Vec<u8> = (0..2_400_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let base64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let env = Envelope::new(
            9,
            Body::Page {
                tab_id: 3,
                command: errand_protocol::PageCommand::SetFiles {
                    index: 4,
                    files: vec![errand_protocol::FilePayload {
                        name: "scan.pdf".into(),
                        mime: "application/pdf".into(),
                        base64,
                    }],
                },
            },
        );
        assert!(env.encode().len() > 3_000_000);
        let (back, frames) = send_and_join(&env);
        assert_eq!(back, env);
        assert_eq!(frames, 4);
    }

    #[test]
    fn escapes_count_against_the_budget() {
        // Every character doubles when escaped: a chunk's data holds half
        // as many characters, and its frame still fits.
        let env = Envelope::new(2, Body::Captured { data_url: "\"\\".repeat(1_000_000) });
        let (back, frames) = send_and_join(&env);
        assert_eq!(back, env);
        assert!(frames >= 4, "{frames}"); // ~4 MB of JSON, ~8 MB escaped
        // Control characters grow six-fold.
        let env = Envelope::new(3, Body::Captured { data_url: "\u{1}".repeat(400_000) });
        let (back, _) = send_and_join(&env);
        assert_eq!(back, env);
    }

    #[test]
    fn splits_only_between_characters() {
        let raw = mixed_text(600);
        let json = serde_json::to_string(&raw).unwrap();
        for (text, budget) in [&raw, &json].into_iter().flat_map(|t| (6..40).map(move |b| (t, b))) {
            let chunks = split(1, text, budget);
            let mut joined = String::new();
            for (i, c) in chunks.iter().enumerate() {
                let Body::Chunk { of, index, count, data } = &c.body else { unreachable!() };
                assert_eq!((*of, *index as usize, *count as usize), (1, i, chunks.len()));
                assert!(!data.is_empty());
                let escaped = serde_json::to_string(data).unwrap().len() - 2;
                assert!(escaped <= budget, "budget {budget}: {escaped} bytes in {data:?}");
                joined.push_str(data);
            }
            assert_eq!(&joined, text, "budget {budget}");
        }
        // A 4-byte character alone in a 6-byte budget, and an empty text.
        assert_eq!(split(1, "𝄞𝄞", 6).len(), 2);
        assert_eq!(split(1, "", 6).len(), 1);
    }

    #[test]
    fn refuses_what_cannot_be_sent_even_in_chunks() {
        let huge = Envelope::reply(9, 4, Body::Captured { data_url: "x".repeat(MAX_CHUNKED) });
        let mut out = Vec::new();
        write_envelope(&mut out, &huge).unwrap();
        assert!(out.len() < 1000);
        let back = read_all(out, MAX_INBOUND);
        let env = back[0].as_ref().unwrap();
        assert_eq!(env.re, Some(4));
        assert!(
            matches!(&env.body, Body::Error { code: ErrorCode::Internal, message } if message.contains("limit")),
            "{env:?}"
        );
        assert_eq!(env.v, PROTOCOL_VERSION);
    }

    #[tokio::test]
    async fn threads_carry_messages_both_ways() {
        let mut bytes = get_status(1);
        bytes.extend(raw_frame(b"[]"));
        let mut rx = spawn_reader(Cursor::new(bytes), MAX_INBOUND);
        assert_eq!(rx.recv().await.unwrap().unwrap().id, 1);
        assert!(matches!(
            rx.recv().await.unwrap(),
            Err(FrameError::Decode { error: DecodeError::NotAnObject, id: None })
        ));
        assert!(rx.recv().await.is_none());

        let shared = SharedBuf::default();
        let (tx, orx) = mpsc::channel(4);
        spawn_writer(shared.clone(), orx);
        tx.send(Outgoing::Message(Box::new(Envelope::new(3, Body::GetStatus {})))).await.unwrap();
        let (done, wait) = oneshot::channel();
        tx.send(Outgoing::Close(done)).await.unwrap();
        wait.await.unwrap();
        assert_eq!(shared.take(), get_status(3));
    }

    /// A `Write` whose bytes the test can read back.
    #[derive(Clone, Default)]
    pub(crate) struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl SharedBuf {
        pub(crate) fn take(&self) -> Vec<u8> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    impl Write for SharedBuf {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}

//! Native messaging framing over any `Read` / `Write`: a 4-byte native-endian
//! length, then that many bytes of UTF-8 JSON.
//!
//! A reader thread turns frames into [`Envelope`]s (or [`FrameError`]s the
//! dispatcher answers with an `error` envelope, then goes on); a writer
//! thread writes the envelopes it is given. Nothing else touches the streams,
//! so no stray byte reaches stdout.

use std::io::{self, Read, Write};
use std::thread;

use errand_protocol::{DecodeError, Envelope, ErrorCode, MAX_FROM_EXTENSION, MAX_TO_EXTENSION};
use native_messaging::host::{NmError, decode_message_opt, encode_message, send_frame};
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

/// Starts the reader thread. The channel closes when the stream ends (the
/// browser disconnected) or fails.
pub fn spawn_reader<R: Read + Send + 'static>(reader: R, max: usize) -> mpsc::Receiver<Incoming> {
    let (tx, rx) = mpsc::channel(INBOUND_QUEUE);
    let spawned = thread::Builder::new().name("nm-reader".into()).spawn(move || {
        let mut reader = reader;
        loop {
            let item = match read_frame(&mut reader, max) {
                Ok(Some(item)) => item,
                Ok(None) => {
                    tracing::debug!("the other side closed the stream");
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    tracing::warn!("the stream ended inside a frame");
                    break;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                    ) =>
                {
                    tracing::info!("the other side went away: {e}");
                    break;
                }
                Err(e) => {
                    tracing::error!("reading a frame failed: {e}");
                    break;
                }
            };
            let skip = match &item {
                Err(FrameError::TooLarge { len, .. }) => Some(*len),
                _ => None,
            };
            if let Err(e) = &item {
                tracing::warn!("bad frame: {e}");
            }
            if tx.blocking_send(item).is_err() {
                break; // nobody listens any more
            }
            if let Some(len) = skip {
                match discard(&mut reader, len) {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!("the stream ended while skipping an oversized frame");
                        break;
                    }
                    Err(e) => {
                        tracing::error!("skipping an oversized frame failed: {e}");
                        break;
                    }
                }
            }
        }
    });
    if let Err(e) = spawned {
        tracing::error!("cannot start the reader thread: {e}");
    }
    rx
}

/// What the writer thread is asked to do.
#[derive(Debug)]
pub enum Outgoing {
    /// Write this message.
    Message(Envelope),
    /// Answer once everything before it is written, then stop.
    Close(oneshot::Sender<()>),
}

/// Writes one envelope as a frame. A message over the browser's 1 MiB limit
/// is not sent: an `error` envelope replying to the same request goes
/// instead, so the other side is not left waiting.
pub fn write_envelope<W: Write>(writer: &mut W, env: &Envelope) -> io::Result<()> {
    let frame = match encode_message(env) {
        Ok(frame) => frame,
        Err(NmError::OutgoingTooLarge { len, max }) => {
            tracing::error!(
                id = env.id,
                "an outgoing message of {len} bytes is over the {max}-byte limit"
            );
            let err = Envelope::error(
                env.id,
                env.re,
                ErrorCode::Internal,
                format!(
                    "the host's message was {len} bytes, over the browser's {max}-byte limit, and was not sent"
                ),
            );
            encode_message(&err).map_err(|e| io::Error::other(e.to_string()))?
        }
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
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

/// One envelope as a complete frame (for tests and one-off replies).
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

    #[test]
    fn never_writes_more_than_a_mebibyte() {
        let huge =
            Envelope::reply(9, 4, Body::Captured { data_url: "x".repeat(MAX_TO_EXTENSION + 1) });
        let mut out = Vec::new();
        write_envelope(&mut out, &huge).unwrap();
        assert!(out.len() < 1000);
        let back = read_all(out, MAX_INBOUND);
        let env = back[0].as_ref().unwrap();
        assert_eq!(env.re, Some(4));
        assert!(
            matches!(&env.body, Body::Error { code: ErrorCode::Internal, message } if message.contains("limit"))
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
        tx.send(Outgoing::Message(Envelope::new(3, Body::GetStatus {}))).await.unwrap();
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

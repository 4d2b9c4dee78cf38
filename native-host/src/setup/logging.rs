//! Logs: `tracing` to stderr and to `<data dir>/errand.log`. Never stdout:
//! in native messaging mode stdout carries the frames.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// The log file's name inside the data dir.
pub const LOG_FILE: &str = "errand.log";
/// The variable that sets the log filter (`info`, `errand_host=debug`, …).
pub const LOG_ENV: &str = "ERRAND_LOG";
/// Past this size the log is moved to `errand.log.1` at startup.
const MAX_LOG_BYTES: u64 = 10 * 1024 * 1024;

/// Starts logging. `stderr_default` is the stderr filter when `ERRAND_LOG`
/// is not set (the terminal commands keep stderr quiet; the file gets `info`).
/// Calling it twice is harmless.
pub fn init(data_dir: Option<&Path>, stderr_default: &str) {
    let filter = |default: &str| {
        EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default))
    };
    let stderr = fmt::layer()
        .with_writer(Scrubbed(std::io::stderr))
        .with_target(false)
        .with_filter(filter(stderr_default));
    let file = data_dir.and_then(open_log).map(|f| {
        fmt::layer()
            .with_writer(Scrubbed(Mutex::new(f)))
            .with_ansi(false)
            .with_filter(filter("info"))
    });
    let _ = tracing_subscriber::registry().with(stderr).with(file).try_init();
}

fn open_log(dir: &Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(dir).ok()?;
    let path = dir.join(LOG_FILE);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(&path, dir.join(format!("{LOG_FILE}.1")));
    }
    OpenOptions::new().create(true).append(true).open(path).ok()
}

/// A log writer that replaces every secret value the process has loaded
/// ([`crate::memory::scrub::log_scrubber`]) by its placeholder before a line is
/// written: lines quote pages, effects and model answers. For the same
/// reason it removes what a terminal showing the log would obey and the
/// formatter leaves ([`crate::text::for_log`]: a carriage return, bidi
/// controls; the formatter escapes ESC and C1 in values itself).
struct Scrubbed<M>(M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Scrubbed<M> {
    type Writer = ScrubbedWriter<M::Writer>;
    fn make_writer(&'a self) -> Self::Writer {
        ScrubbedWriter(self.0.make_writer())
    }
}

struct ScrubbedWriter<W>(W);

impl<W: Write> Write for ScrubbedWriter<W> {
    /// The formatter writes each event whole, in one call.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let scrubber = crate::memory::scrub::log_scrubber();
        match std::str::from_utf8(buf) {
            Ok(text) if scrubber.finds(text) => {
                let scrubbed = scrubber.text(text);
                self.0.write_all(crate::text::for_log(&scrubbed).as_bytes())?;
            }
            Ok(text) => self.0.write_all(crate::text::for_log(text).as_bytes())?,
            Err(_) => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

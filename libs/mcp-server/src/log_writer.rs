//! [`log_writer`]: where both apps' log lines go, so that logging can never stop, crash or delay
//! the server (issue 24, item 2).
//!
//! With stderr redirected to a file on a full disk, `tracing-subscriber` met the write error and
//! reported it with `eprintln!`, which panics when stderr cannot be written: the panic took down
//! whatever task had logged (a request, a session; the next requests hung or were cut) and, in a
//! panic already unwinding, aborted the process. Now:
//!
//! - lines are handed to one writer thread through a bounded queue (`tracing-appender`'s
//!   non-blocking writer, lossy): a request never waits for the log's disk, and when the queue is
//!   full the line is dropped, not waited for;
//! - that thread writes to stderr through [`Stderr`], which never fails: a line that cannot be
//!   written is dropped and counted, and the first line written afterwards is preceded by one
//!   saying how many were lost;
//! - the apps turn off `tracing-subscriber`'s own error reports (`log_internal_errors(false)`).
//!
//! [`dropped_log_lines`] is the total of both kinds of loss.

use std::io::{self, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::non_blocking::{ErrorCounter, NonBlocking, NonBlockingBuilder};

/// Lines queued for the writer thread at most (about 300 bytes each: a few MB when a disk stalls).
pub const QUEUED_LINES: usize = 8192;

/// Lines that reached the writer thread but could not be written (disk full, a closed pipe).
static UNWRITTEN: AtomicU64 = AtomicU64::new(0);
/// Lines dropped because the queue was full, as the non-blocking writer counts them.
static QUEUE_DROPS: OnceLock<ErrorCounter> = OnceLock::new();

/// The non-blocking, lossy writer for the apps' log layer, and the guard that flushes what is
/// queued when dropped (keep it alive until the process ends).
pub fn log_writer() -> (NonBlocking, WorkerGuard) {
    log_writer_to(Stderr::new(io::stderr()))
}

fn log_writer_to<W: Write + Send + 'static>(out: Stderr<W>) -> (NonBlocking, WorkerGuard) {
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("log-writer")
        .finish(out);
    let _ = QUEUE_DROPS.set(writer.error_counter());
    (writer, guard)
}

/// Installs the global subscriber both apps use: the log lines on `writer` (stderr), filtered by
/// `RUST_LOG` (default `info,rmcp=warn`), as text (`ansi` colours) or JSON (one object per line,
/// the event's fields at the top level); and, when telemetry is on, its layer
/// ([`crate::telemetry::install`]) before them, which sees only the spans meant for it.
pub fn init_subscriber<W>(json: bool, ansi: bool, writer: W, telemetry: Option<crate::telemetry::TelemetryLayer>)
where
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let Some(telemetry) = telemetry else {
        // Telemetry off: the one global filter, as before issue 27 (per-layer filters cost every
        // event and span a little more: measured in bench/RESULTS.md).
        let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).log_internal_errors(false);
        if json {
            logs.json().flatten_event(true).with_current_span(false).with_span_list(false).init();
        } else {
            logs.with_ansi(ansi).init();
        }
        return;
    };
    let logs = tracing_subscriber::fmt::layer().with_writer(writer).log_internal_errors(false);
    let logs = if json {
        logs.json().flatten_event(true).with_current_span(false).with_span_list(false).with_filter(filter).boxed()
    } else {
        logs.with_ansi(ansi).with_filter(filter).boxed()
    };
    tracing_subscriber::registry().with(telemetry).with(logs).init();
}

/// A writer for a process that may end with `exit` (a command, not a server): each line written
/// at once, and one that cannot be is dropped and counted, never an error.
#[must_use]
pub fn direct_writer() -> impl Write {
    Stderr::new(io::stderr())
}

/// The line an app ends with when it fails: `Error: ` and the error with its causes, joined by
/// `: ` on one line (`{:#}`, anyhow's chain). Never the `Debug` form that `fn main() -> Result`
/// prints: with `RUST_BACKTRACE=1` (CI sets it) that grows a backtrace under a start-up error
/// meant to be read in one line (issue 25).
#[must_use]
pub fn failure_line(error: &dyn std::fmt::Display) -> String {
    format!("Error: {error:#}")
}

/// The exit status of an app's `main` for `result`: success, or [`failure_line`] written to stderr
/// (never an error: there is nowhere else to report it) and status 1.
pub fn exit_code<E: std::fmt::Display>(result: Result<(), E>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(io::stderr(), "{}", failure_line(&error));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Log lines lost so far: not written (the disk was full) or dropped (the queue was full).
#[must_use]
pub fn dropped_log_lines() -> u64 {
    UNWRITTEN.load(Ordering::Relaxed) + QUEUE_DROPS.get().map_or(0, |counter| counter.dropped_lines() as u64)
}

/// A writer that never fails: what it cannot write is counted in [`UNWRITTEN`] and said, once
/// writing works again, in one line of its own.
pub(crate) struct Stderr<W> {
    out: W,
    /// Lines lost since the last line written.
    lost_since_written: u64,
}

impl<W: Write> Stderr<W> {
    pub(crate) fn new(out: W) -> Self {
        Self { out, lost_since_written: 0 }
    }
}

impl<W: Write> Write for Stderr<W> {
    fn write(&mut self, line: &[u8]) -> io::Result<usize> {
        if self.lost_since_written > 0 {
            let notice = format!(
                "WARN log lines lost: {} could not be written (the log's disk was full or its pipe closed)\n",
                self.lost_since_written
            );
            if self.out.write_all(notice.as_bytes()).is_err() {
                self.lost(1);
                return Ok(line.len());
            }
            self.lost_since_written = 0;
        }
        if self.out.write_all(line).and_then(|()| self.out.flush()).is_err() {
            self.lost(1);
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = self.out.flush();
        Ok(())
    }
}

impl<W> Stderr<W> {
    fn lost(&mut self, lines: u64) {
        self.lost_since_written += lines;
        UNWRITTEN.fetch_add(lines, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shows its cause only in the alternate form, as `anyhow::Error` does.
    struct Chained;

    impl std::fmt::Display for Chained {
        fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("invalid API_KEY")?;
            if formatter.alternate() { formatter.write_str(": too short") } else { Ok(()) }
        }
    }

    #[test]
    fn a_failure_is_one_line_with_its_causes() {
        assert_eq!(failure_line(&Chained), "Error: invalid API_KEY: too short");
    }

    /// A destination that fails while `full` is set, like a file on a full disk.
    #[derive(Clone, Default)]
    struct Disk {
        written: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
        full: std::sync::Arc<std::sync::atomic::AtomicBool>,
    }

    impl Write for Disk {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.full.load(Ordering::SeqCst) {
                return Err(io::Error::from_raw_os_error(28));
            }
            self.written.lock().expect("lock").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_that_cannot_be_written_are_counted_and_said_once_writing_works_again() {
        let disk = Disk::default();
        let mut out = Stderr::new(disk.clone());
        let before = UNWRITTEN.load(Ordering::Relaxed);
        assert_eq!(out.write(b"um\n").expect("never fails"), 3);
        disk.full.store(true, Ordering::SeqCst);
        for _ in 0..3 {
            assert_eq!(out.write(b"perdida\n").expect("never fails"), 8);
        }
        assert!(UNWRITTEN.load(Ordering::Relaxed) >= before + 3);
        disk.full.store(false, Ordering::SeqCst);
        out.write_all(b"dois\n").expect("never fails");
        let written = String::from_utf8(disk.written.lock().expect("lock").clone()).expect("text");
        assert_eq!(
            written,
            "um\nWARN log lines lost: 3 could not be written (the log's disk was full or its pipe closed)\ndois\n"
        );
    }
}

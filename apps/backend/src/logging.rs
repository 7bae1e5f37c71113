//! [`install_logging`]: the backend's log lines on stderr, as text or as JSON (`LOG_FORMAT`).

use std::io::IsTerminal;

use clap::ValueEnum;
use mcp_server::log_writer::WorkerGuard;

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (`tracing`'s default format).
    Text,
    /// One JSON object per line, fields at the top level, for log collectors.
    Json,
}

/// Installs the global subscriber: stderr, `RUST_LOG` (default `info,rmcp=warn`), and `format`,
/// with the OpenTelemetry layer when `telemetry` is on (issue 27).
/// In JSON, each event is one object per line with its fields at the top level (`timestamp`,
/// `level`, `target`, `message`, and the event's own fields), for log collectors.
///
/// Serving, lines go through [`mcp_server::log_writer`] (one writer thread, a bounded lossy
/// queue): keep the returned guard until the end, it flushes what is queued. A command (export,
/// backup, ...) writes its lines at once, as they happen, since it may end with `exit`. Either
/// way a line that cannot be written is dropped and counted, never a panic (issue 24).
#[must_use]
pub fn install_logging(
    format: LogFormat,
    serving: bool,
    telemetry: Option<mcp_server::telemetry::TelemetryLayer>,
) -> Option<WorkerGuard> {
    let ansi = std::io::stderr().is_terminal();
    let json = format == LogFormat::Json;
    if serving {
        let (writer, guard) = mcp_server::log_writer::log_writer();
        mcp_server::log_writer::init_subscriber(json, ansi, writer, telemetry);
        Some(guard)
    } else {
        mcp_server::log_writer::init_subscriber(json, ansi, mcp_server::log_writer::direct_writer, telemetry);
        None
    }
}

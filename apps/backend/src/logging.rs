//! [`install_logging`]: the backend's log lines on stderr, as text or as JSON (`LOG_FORMAT`).

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines (`tracing`'s default format).
    Text,
    /// One JSON object per line, fields at the top level, for log collectors.
    Json,
}

/// Installs the global subscriber: stderr, `RUST_LOG` (default `info,rmcp=warn`), and `format`.
/// In JSON, each event is one object per line with its fields at the top level (`timestamp`,
/// `level`, `target`, `message`, and the event's own fields), for log collectors.
pub fn install_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => {
            builder.json().flatten_event(true).with_current_span(false).with_span_list(false).init();
        }
    }
}

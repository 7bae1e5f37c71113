//! The stdio transport of mcp-cursos: `CursosServer` on a byte input and output (stdin and stdout
//! in the binary), through a line gate (ADR 0024).
//!
//! ```text
//! stdin ──▶ LineGate ──well-formed lines──▶ rmcp (CursosServer) ──▶ write_output ──▶ stdout
//!              └──── -32700 answers for refused lines ─────────────────────┘
//! ```
//!
//! The gate reads lines with a bound ([`MAX_LINE_BYTES`]) and answers those rmcp would drop
//! without a word; one writer puts rmcp's messages and those answers on the output, a whole line
//! at a time. The session ends when the input ends, at any point (before `initialize`, in the
//! middle of a line, after a whole session): that is a normal end, as is an output the host closed.

mod line_gate;
mod output;
pub mod settings;

/// The database the app uses when `DATABASE_PATH` is not set: `mcp-cursos/cursos.db` in the
/// per-user data folder, wherever the process was started (an editor, `npx` or `uvx` often
/// start it in `/`). `None` when the platform gives none (no `HOME`).
#[must_use]
pub fn default_database_path() -> Option<std::path::PathBuf> {
    dirs::data_dir().map(|folder| folder.join("mcp-cursos").join("cursos.db"))
}

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use mcp_server::telemetry::{SessionTransport, Traced};
use mcp_server::{CursosServer, ServerState};
use rmcp::ServiceExt;
use rmcp::service::ServerInitializeError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

pub use line_gate::{LineGate, MAX_LINE_BYTES};
pub use output::write_output;

/// Bytes in flight between the gate and rmcp, each way; a full pipe makes the writer wait.
const PIPE_BYTES: usize = 64 * 1024;

/// Refusal answers waiting for the output; a full queue makes the gate stop reading.
const ANSWERS_QUEUE: usize = 16;

/// How the stdio session failed.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The MCP handshake failed for another reason than the input ending.
    #[error("MCP handshake failed: {0}")]
    Handshake(#[source] Box<ServerInitializeError>),
    /// The session's task failed.
    #[error("the MCP session failed: {0}")]
    Session(#[source] tokio::task::JoinError),
    /// Writing the output failed for another reason than the host closing it.
    #[error("cannot write stdout: {0}")]
    Output(#[source] std::io::Error),
}

/// Serves `server` on `input` and `output` until `input` ends.
///
/// # Errors
/// [`StdioError`]: the handshake failed, or the output could not be written, for another reason
/// than the input ending or the host closing the output.
pub async fn serve<I, O>(server: CursosServer, state: ServerState, input: I, output: O) -> Result<(), StdioError>
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(server, state, input, output, std::future::pending()).await
}

/// Serves `server` on `input` and `output` until `input` ends or `stop` completes (SIGINT or
/// SIGTERM in the binary: [`interrupted`]). A stop ends the session as the end of input does:
/// the gate stops reading, the lines it already took are answered, the listen streams end.
///
/// # Errors
/// As [`serve`].
pub async fn serve_until<I, O>(
    server: CursosServer,
    state: ServerState,
    input: I,
    output: O,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StdioError>
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (server_input, mut gate_to_server) = tokio::io::duplex(PIPE_BYTES);
    let (server_output, from_server) = tokio::io::duplex(PIPE_BYTES);
    let (answers, answers_received) = mpsc::channel(ANSWERS_QUEUE);
    let writer = tokio::spawn(write_output(from_server, answers_received, output));
    let gate = tokio::spawn(async move {
        let line_gate = LineGate::default();
        tokio::select! {
            forwarded = line_gate.forward(input, &mut gate_to_server, &answers) => {
                if let Err(error) = forwarded {
                    tracing::error!(%error, "stopped reading stdin");
                }
            }
            // Dropping the pipe's end here is, for rmcp, the end of its input.
            () = stop => {}
        }
    });

    // A span per request and the MCP histograms when telemetry is on (issue 27), the connection's
    // duration when it ends; else a pass-through.
    let server = Traced::new(server).for_session(SessionTransport::Pipe);
    let ended = match server.serve((EndOfInput::new(server_input, state), server_output)).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|reason| tracing::info!(?reason, "the MCP session ended"))
            .map_err(StdioError::Session),
        Err(ServerInitializeError::ConnectionClosed(during)) => {
            tracing::info!(%during, "stdin closed before the MCP session began");
            Ok(())
        }
        Err(error) => Err(StdioError::Handshake(Box::new(error))),
    };
    // rmcp has ended, and with it what it writes. At the end of input the gate has already ended
    // (rmcp saw the end only once the gate had forwarded everything); otherwise it stops here, and
    // the answers it queued are still written.
    gate.abort();
    match (ended, writer.await) {
        // The host closed stdout (it went away): nothing to report to, and nothing failed here.
        (_, Ok(Err(error))) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            tracing::info!("stdout closed by the host");
            Ok(())
        }
        (Err(error), _) => Err(error),
        (Ok(()), Ok(written)) => written.map_err(StdioError::Output),
        (Ok(()), Err(failed)) => Err(StdioError::Session(failed)),
    }
}

/// Completes on SIGINT or SIGTERM (on Unix; Ctrl-C elsewhere), with a log line naming it: the
/// stop of [`serve_until`] for the binary. The signals are caught from this call on (not from the
/// first poll), so call it before telling anyone the app is ready. Must run inside a Tokio runtime.
#[must_use]
pub fn interrupted() -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
            (Ok(mut interrupt), Ok(mut terminate)) => Box::pin(async move {
                tokio::select! {
                    _ = interrupt.recv() => tracing::info!("SIGINT received, shutting down"),
                    _ = terminate.recv() => tracing::info!("SIGTERM received, shutting down"),
                }
            }),
            (Err(error), _) | (_, Err(error)) => {
                tracing::warn!(%error, "cannot listen for SIGINT and SIGTERM: they stop the app abruptly");
                Box::pin(std::future::pending())
            }
        }
    }
    #[cfg(not(unix))]
    {
        Box::pin(async {
            match tokio::signal::ctrl_c().await {
                Ok(()) => tracing::info!("Ctrl-C received, shutting down"),
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for Ctrl-C");
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}

/// `mcp-cursos-stdio check`: reads `POLICY_FILE` (if set) and opens the store the settings choose
/// at `database_path`, as a start would (so pending migrations are applied), and writes one line
/// per finding to `report` (the binary's stdout: its only writes there). True when all passed.
///
/// # Errors
/// Only when `report` cannot be written.
pub fn check(
    settings: &settings::Settings,
    database_path: &std::path::Path,
    mut report: impl std::io::Write,
) -> std::io::Result<bool> {
    let mut passed = true;
    let mut write = |line: String, ok: bool| {
        passed &= ok;
        report.write_all(format!("{line}\n").as_bytes())?;
        report.flush()
    };
    match settings.policy() {
        None => {}
        Some(Ok((_, policy))) => write(format!("ok: POLICY_FILE ({})", policy.summary()), true)?,
        Some(Err(error)) => write(format!("error: {error}"), false)?,
    }
    match mcp_server::setup::open_database(settings.database_url.as_deref(), database_path) {
        Ok(opened) => write(format!("ok: database {} opened and migrated", opened.description), true)?,
        Err(error) => write(format!("error: {error}"), false)?,
    }
    Ok(passed)
}

/// Installs the log writer on stderr (stdout belongs to JSON-RPC): `RUST_LOG` honoured, else
/// `info,rmcp=warn`, in the chosen format, through [`mcp_server::log_writer`] (a full or slow log
/// disk never stops or delays the server; issue 24), with the OpenTelemetry layer when telemetry
/// is on (issue 27; it exports over HTTP, never on stdout). Keep the guard until the end: it flushes.
pub fn install_logging(
    format: settings::LogFormat,
    telemetry: Option<mcp_server::telemetry::TelemetryLayer>,
) -> mcp_server::log_writer::WorkerGuard {
    use std::io::IsTerminal;
    let (writer, guard) = mcp_server::log_writer::log_writer();
    let json = matches!(format, settings::LogFormat::Json);
    mcp_server::log_writer::init_subscriber(json, std::io::stderr().is_terminal(), writer, telemetry);
    guard
}

/// The server's input that, at its end, first ends the open listen streams (so that their final
/// results are written while the session is still running), then reports the end to rmcp.
/// Without it, rmcp would wait its drain timeout for the streams before exiting.
struct EndOfInput<R> {
    inner: R,
    state: ServerState,
    closing: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl<R> EndOfInput<R> {
    fn new(inner: R, state: ServerState) -> Self {
        Self { inner, state, closing: None }
    }
}

impl<R> std::fmt::Debug for EndOfInput<R> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("EndOfInput").field("closing", &self.closing.is_some()).finish_non_exhaustive()
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.closing.is_none() {
            let before = buffer.filled().len();
            match Pin::new(&mut self.inner).poll_read(context, buffer) {
                Poll::Ready(Ok(())) if buffer.filled().len() == before && buffer.remaining() > 0 => {
                    let state = self.state.clone();
                    self.closing = Some(Box::pin(async move {
                        // Bounded: a stream that does not end must not keep the process alive.
                        let _ = tokio::time::timeout(Duration::from_secs(2), state.shut_down_listeners()).await;
                    }));
                }
                other => return other,
            }
        }
        match self.closing.as_mut().map(|closing| closing.as_mut().poll(context)) {
            Some(Poll::Pending) => Poll::Pending,
            _ => Poll::Ready(Ok(())),
        }
    }
}

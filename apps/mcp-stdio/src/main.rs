//! `mcp-cursos-stdio`: the catalog over stdio, for an editor to start as a child process.
//!
//! stdout carries JSON-RPC only; logs go to stderr (`RUST_LOG` honoured). The process exits
//! with status 0 when its stdin closes, at any point of the session. Everything between the
//! settings and the streams is in the library (`mcp_cursos_stdio::serve`, ADR 0024); the server
//! state is built by `mcp_server::setup`.

use anyhow::Context;
use mcp_cursos_stdio::settings::{Settings, StdioCommand};
use mcp_server::{CursosServer, Setup};

/// Failures end as one line and status 1, whatever `RUST_BACKTRACE` says (issue 25).
fn main() -> std::process::ExitCode {
    let result = mcp_server::setup::runtime().map_err(anyhow::Error::from);
    mcp_server::log_writer::exit_code(result.and_then(|runtime| {
        let result = runtime.block_on(run());
        // Not a plain drop: after a signal, the thread reading stdin is still blocked in its read,
        // and a drop would wait for it (for a line the host may never send).
        runtime.shutdown_background();
        result
    }))
}

async fn run() -> anyhow::Result<()> {
    let settings = Settings::from_command_line();
    let (layer, telemetry) = mcp_server::telemetry::install("mcp-cursos-stdio");
    let _logs = mcp_cursos_stdio::install_logging(settings.log_format, layer);
    let telemetry = mcp_server::telemetry::started(telemetry).map_err(anyhow::Error::msg)?;
    let database_path = settings
        .database_path()
        .context("no per-user data folder (HOME is not set): set DATABASE_PATH to the catalog's SQLite file")?;
    if let Some(StdioCommand::Check) = settings.command {
        #[allow(clippy::disallowed_methods, reason = "`check` does not serve: its findings are its output")]
        let passed = mcp_cursos_stdio::check(&settings, &database_path, std::io::stdout())?;
        std::process::exit(i32::from(!passed));
    }
    let policy = settings.policy().transpose().map_err(anyhow::Error::msg)?;
    // Caught from here on: a signal during the start is a graceful stop too.
    let stop = mcp_cursos_stdio::interrupted();
    let database = mcp_server::setup::open_database(settings.database_url.as_deref(), &database_path)?;
    // Never the URL: it may hold a password.
    tracing::info!(database = %database.description, catalog = %settings.catalog, "mcp-cursos-stdio ready on stdin/stdout");
    let mut setup = Setup::new(settings.server_options());
    setup.local_catalog = settings.catalog;
    setup.policy = policy;
    let running = mcp_server::setup::start(database.catalog, setup)?;
    if let Some(summary) = running.policy_summary() {
        tracing::info!(policy = %summary, "operator's policy loaded (POLICY_FILE)");
    }
    let state = running.state().clone();
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    mcp_cursos_stdio::serve_until(CursosServer::new(&state), state, stdin, stdout, stop).await?;
    if let Some(telemetry) = telemetry {
        telemetry.shutdown(mcp_server::telemetry::SHUTDOWN);
    }
    tracing::info!("mcp-cursos-stdio stopped");
    Ok(())
}

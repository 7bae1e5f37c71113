//! `mcp-cursos-stdio`: the catalog over stdio, for an editor to start as a child process.
//!
//! stdout carries JSON-RPC only; logs go to stderr (`RUST_LOG` honoured). The process exits
//! cleanly when its stdin closes.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use courses_domain::{Catalog, PostgresStore, SqliteStore};
use mcp_server::{CursosServer, ServerOptions, ServerState, UnconfirmedArchive};
use rmcp::ServiceExt;
use tokio::io::{AsyncRead, ReadBuf};
use tracing_subscriber::EnvFilter;

/// mcp-cursos over stdio: JSON-RPC on stdin/stdout, logs on stderr.
#[derive(Debug, Parser)]
#[command(name = "mcp-cursos-stdio", version, about, long_about = None)]
struct Settings {
    /// SQLite database file; created with its folder and migrated at start.
    #[arg(long, env = "DATABASE_PATH", default_value = "./data/cursos.db")]
    database_path: PathBuf,

    /// PostgreSQL connection URI (`postgres://user:password@host:5432/database`, libpq syntax).
    /// When it starts with `postgres://` or `postgresql://`, the catalog is kept there (migrated at
    /// start) instead of in DATABASE_PATH.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,

    /// Also expose read-only tools mirroring the resources (listar_cursos, ler_curso), for hosts
    /// that give the model tools but not resources. Off by default: duplicates confuse models.
    #[arg(long, env = "RESOURCE_TOOLS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    resource_tools: bool,

    /// What arquivar_curso does when the client cannot ask its user to confirm (no elicitation):
    /// `refuse` (default; the model is told why) or `allow` (archive without asking).
    #[arg(long, env = "UNCONFIRMED_ARCHIVE", default_value = "refuse", value_parser = UnconfirmedArchive::parse)]
    unconfirmed_archive: UnconfirmedArchive,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let (catalog, postgres) = match settings.database_url.as_deref() {
        Some(url) if PostgresStore::handles(url) => {
            let store = PostgresStore::open(url).context("cannot open the PostgreSQL course database")?;
            // Never the URL: it may hold a password.
            tracing::info!(database = "postgresql", "mcp-cursos-stdio ready on stdin/stdout");
            (Catalog::new(store.clone()), Some(store))
        }
        other => {
            if other.is_some() {
                tracing::warn!("DATABASE_URL is not a postgres:// or postgresql:// URL: ignored, using DATABASE_PATH");
            }
            let store = SqliteStore::open(&settings.database_path).context("cannot open the course database")?;
            tracing::info!(database = %settings.database_path.display(), "mcp-cursos-stdio ready on stdin/stdout");
            (Catalog::new(store), None)
        }
    };
    let options = ServerOptions {
        resource_tools: settings.resource_tools,
        legacy_subscriptions: true,
        unconfirmed_archive: settings.unconfirmed_archive,
    };
    let state = ServerState::new(catalog, options);
    // Other processes on the same PostgreSQL database (HTTP replicas) tell this session of changes.
    let _replicas = postgres.as_ref().map(|store| state.follow_replicas(store));
    let stdin = EndOfInput::new(tokio::io::stdin(), state.clone());
    let running =
        CursosServer::new(&state).serve((stdin, tokio::io::stdout())).await.context("MCP handshake failed")?;
    let reason = running.waiting().await.context("the MCP session failed")?;
    tracing::info!(?reason, "mcp-cursos-stdio stopped");
    Ok(())
}

/// stdin that, at end of input, first ends the open listen streams (so that their final
/// results are written while the session is still running), then reports the end to rmcp.
/// Without it, rmcp would wait its drain timeout for the streams before exiting.
struct EndOfInput<R> {
    inner: R,
    state: ServerState,
    closing: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

impl<R> EndOfInput<R> {
    fn new(inner: R, state: ServerState) -> Self {
        Self { inner, state, closing: None }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.closing.is_none() {
            let before = buffer.filled().len();
            match std::pin::Pin::new(&mut self.inner).poll_read(context, buffer) {
                std::task::Poll::Ready(Ok(())) if buffer.filled().len() == before && buffer.remaining() > 0 => {
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
            Some(std::task::Poll::Pending) => std::task::Poll::Pending,
            _ => std::task::Poll::Ready(Ok(())),
        }
    }
}

//! `mcp-cursos-stdio`: the catalog over stdio, for an editor to start as a child process.
//!
//! stdout carries JSON-RPC only; logs go to stderr (`RUST_LOG` honoured). The process exits
//! with status 0 when its stdin closes, at any point of the session. Everything between the
//! settings and the streams is in the library (`mcp_cursos_stdio::serve`, ADR 0024).

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use courses_domain::{Catalog, PostgresStore, SqliteStore};
use mcp_server::{CursosServer, ServerOptions, ServerState, UnconfirmedArchive};
use tracing_subscriber::EnvFilter;

/// mcp-cursos over stdio: JSON-RPC on stdin/stdout, logs on stderr.
#[derive(Debug, Parser)]
#[command(name = "mcp-cursos-stdio", version, about, long_about = None)]
struct Settings {
    /// SQLite database file; created with its folder and migrated at start. Default: cursos.db in
    /// the per-user data folder (Linux: $XDG_DATA_HOME/mcp-cursos, else ~/.local/share/mcp-cursos;
    /// macOS: ~/Library/Application Support/mcp-cursos; Windows: %APPDATA%\mcp-cursos), whatever
    /// the working directory an editor, npx or uvx starts the app in.
    #[arg(long, env = "DATABASE_PATH")]
    database_path: Option<PathBuf>,

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

    let (catalog, _postgres) = match settings.database_url.as_deref() {
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
            let database_path = match settings.database_path {
                Some(path) => path,
                None => mcp_cursos_stdio::default_database_path().context(
                    "no per-user data folder (HOME is not set): set DATABASE_PATH to the catalog's SQLite file",
                )?,
            };
            let store = SqliteStore::open(&database_path).with_context(|| {
                format!("cannot open the course database {} (DATABASE_PATH)", database_path.display())
            })?;
            tracing::info!(database = %database_path.display(), "mcp-cursos-stdio ready on stdin/stdout");
            (Catalog::new(store), None)
        }
    };
    let options = ServerOptions {
        resource_tools: settings.resource_tools,
        legacy_subscriptions: true,
        unconfirmed_archive: settings.unconfirmed_archive,
    };
    let state = ServerState::new(catalog, options);
    // Processes sharing the database (PostgreSQL replicas, apps on one SQLite file) hear of each other's changes.
    let _followers = state.follow_other_processes();
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    mcp_cursos_stdio::serve(CursosServer::new(&state), state, stdin, stdout).await?;
    tracing::info!("mcp-cursos-stdio stopped");
    Ok(())
}

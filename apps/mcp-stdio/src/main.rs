//! `mcp-cursos-stdio`: the catalog over stdio, for an editor to start as a child process.
//!
//! stdout carries JSON-RPC only; logs go to stderr (`RUST_LOG` honoured). The process exits
//! cleanly when its stdin closes.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use courses_domain::{Catalog, SqliteStore};
use mcp_server::{CursosServer, ServerOptions, ServerState};
use rmcp::ServiceExt;
use tracing_subscriber::EnvFilter;

/// mcp-cursos over stdio: JSON-RPC on stdin/stdout, logs on stderr.
#[derive(Debug, Parser)]
#[command(name = "mcp-cursos-stdio", version, about, long_about = None)]
struct Settings {
    /// SQLite database file; created with its folder and migrated at start.
    #[arg(long, env = "DATABASE_PATH", default_value = "./data/cursos.db")]
    database_path: PathBuf,

    /// Also expose read-only tools mirroring the resources (listar_cursos, ler_curso), for hosts
    /// that give the model tools but not resources. Off by default: duplicates confuse models.
    #[arg(long, env = "RESOURCE_TOOLS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    resource_tools: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn")))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    let store = SqliteStore::open(&settings.database_path).context("cannot open the course database")?;
    tracing::info!(database = %settings.database_path.display(), "mcp-cursos-stdio ready on stdin/stdout");
    let options = ServerOptions { resource_tools: settings.resource_tools, legacy_subscriptions: true };
    let state = ServerState::new(Catalog::new(store), options);
    let running = CursosServer::new(&state).serve(rmcp::transport::stdio()).await.context("MCP handshake failed")?;
    let reason = running.waiting().await.context("the MCP session failed")?;
    tracing::info!(?reason, "mcp-cursos-stdio stopped");
    Ok(())
}

//! `mcp-cursos-stdio`: the catalog over stdio, for an editor to start as a child process.
//!
//! stdout carries JSON-RPC only; logs go to stderr (`RUST_LOG` honoured). The process exits
//! with status 0 when its stdin closes, at any point of the session. Everything between the
//! settings and the streams is in the library (`mcp_cursos_stdio::serve`, ADR 0024).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use mcp_cursos_stdio::open_database;
use mcp_server::{CursosServer, PolicyFile, ServerOptions, ServerState, UnconfirmedArchive};
use tracing_subscriber::EnvFilter;

/// mcp-cursos over stdio: JSON-RPC on stdin/stdout, logs on stderr.
#[derive(Debug, Parser)]
#[command(name = "mcp-cursos-stdio", version, about, long_about = None)]
struct Settings {
    #[command(subcommand)]
    command: Option<StdioCommand>,

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

    /// The operator's policy file (ADR 0036): lines `somente-leitura`, `desativar ferramenta
    /// <nome>`, `desativar prompt <nome>`, each optionally after `catalogo <nome>`. Reread every
    /// 500 ms: a change counts without a restart and the host is told (list_changed). Unset:
    /// everything enabled.
    #[arg(long, env = "POLICY_FILE")]
    policy_file: Option<PathBuf>,

    /// The one catalog this app serves on a database that holds several (1-64 of a-z, 0-9, '-';
    /// ADR 0035). `padrao`, the default, is where every database made before catalogs keeps its courses.
    #[arg(long, env = "CATALOG", default_value = courses_domain::CatalogName::DEFAULT, value_parser = parse_catalog)]
    catalog: courses_domain::CatalogName,

    /// `text` (default) or `json`: one JSON object per log line on stderr, for log collectors.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// How log lines are written on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, fields at the top level.
    Json,
}

/// The commands of the binary besides serving.
#[derive(Debug, Clone, clap::Subcommand)]
enum StdioCommand {
    /// Validates the configuration without serving: the database opens (and is migrated, as a
    /// start would). One line per finding on stdout; exit 0 only when none is an error.
    Check,
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(run());
    // Not a plain drop: after a signal, the thread reading stdin is still blocked in its read,
    // and a drop would wait for it (for a line the host may never send).
    runtime.shutdown_background();
    result
}

async fn run() -> anyhow::Result<()> {
    let settings = Settings::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match settings.log_format {
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => logs.json().flatten_event(true).with_current_span(false).with_span_list(false).init(),
    }

    let database_path = match settings.database_path {
        Some(path) => path,
        None => mcp_cursos_stdio::default_database_path()
            .context("no per-user data folder (HOME is not set): set DATABASE_PATH to the catalog's SQLite file")?,
    };
    let policy = settings.policy_file.as_deref().map(|path| {
        PolicyFile::load(path).map_err(|error| {
            let shown = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
            anyhow::anyhow!("{error}: invalid POLICY_FILE={}", shown.display())
        })
    });
    if let Some(StdioCommand::Check) = settings.command {
        let mut passed = true;
        if let Some(loaded) = &policy {
            let line = match loaded {
                Ok((_, policy)) => format!("ok: POLICY_FILE ({})", policy.summary()),
                Err(error) => {
                    passed = false;
                    format!("error: {error}")
                }
            };
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(format!("{line}\n").as_bytes())?;
            stdout.flush()?;
        }
        passed &= mcp_cursos_stdio::check(settings.database_url.as_deref(), &database_path, std::io::stdout())?;
        std::process::exit(i32::from(!passed));
    }
    let policy = policy.transpose()?;
    // Caught from here on: a signal during the start is a graceful stop too.
    let stop = mcp_cursos_stdio::interrupted();
    let database = open_database(settings.database_url.as_deref(), &database_path)?;
    // Never the URL: it may hold a password.
    tracing::info!(database = %database.description, catalog = %settings.catalog, "mcp-cursos-stdio ready on stdin/stdout");
    let catalog = database.catalog;
    let options = ServerOptions {
        resource_tools: settings.resource_tools,
        legacy_subscriptions: true,
        unconfirmed_archive: settings.unconfirmed_archive,
    };
    let state = ServerState::new(catalog, options).with_local_catalog(settings.catalog);
    let state = match policy {
        Some((policy_file, policy)) => {
            tracing::info!(policy = %policy.summary(), "operator's policy loaded (POLICY_FILE)");
            let state = state.with_policy(policy);
            policy_file.watch(&state, mcp_server::reloaded_file::RELOAD_INTERVAL);
            state
        }
        None => state,
    };
    // Processes sharing the database (PostgreSQL replicas, apps on one SQLite file) hear of each other's changes.
    let _followers = state.follow_other_processes();
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    mcp_cursos_stdio::serve_until(CursosServer::new(&state), state, stdin, stdout, stop).await?;
    tracing::info!("mcp-cursos-stdio stopped");
    Ok(())
}

fn parse_catalog(text: &str) -> Result<courses_domain::CatalogName, courses_domain::CatalogNameError> {
    courses_domain::CatalogName::parse(text)
}

//! `mcp-cursos-backend`: reads its settings, opens the store and serves the router of the `backend` library.

use std::io::Write;

use anyhow::Context;
use std::time::Duration;

use backend::{Access, ApiKey, Command, ConnectionLimits, KeysCommand, SessionMode, Settings};
use clap::Parser;
use mcp_server::{ServerOptions, ServerState};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::parse();
    backend::install_logging(settings.log_format);

    match &settings.command {
        Some(Command::Keys(command)) => return keys_command(command, settings.keys_file.as_deref()),
        Some(Command::Health) => {
            let address = backend::probe::probe_address(&settings.host, settings.port)?;
            backend::probe::check_health(address)?;
            return Ok(());
        }
        Some(Command::Check) => {
            let findings = backend::startup::check(&settings).await;
            let mut stdout = std::io::stdout().lock();
            for finding in &findings {
                stdout.write_all(format!("{finding}\n").as_bytes())?;
            }
            stdout.flush()?;
            std::process::exit(i32::from(findings.iter().any(backend::startup::Finding::fails)));
        }
        Some(Command::Export(arguments)) => {
            let status = backend::transfer::export(database_of(&settings), arguments.clone()).await?;
            std::process::exit(status);
        }
        Some(Command::Import(arguments)) => {
            let status = backend::transfer::import(database_of(&settings), arguments.clone()).await?;
            std::process::exit(status);
        }
        Some(Command::Migrate(arguments)) => return backend::migrate::migrate_command(arguments).await,
        Some(Command::Backup { destination, overwrite }) => {
            let url = settings.database_url.as_deref();
            return backend::migrate::backup_command(url, &settings.database_path, destination, *overwrite).await;
        }
        Some(Command::Restore { backup }) => {
            return backend::migrate::restore_command(
                settings.database_url.as_deref(),
                &settings.database_path,
                backup,
            );
        }
        None => {}
    }
    backend::startup::check_no_auth(&settings)?;
    let guard = backend::startup::request_guard(&settings)?;
    let policy = backend::startup::load_policy(settings.policy_file.as_deref())?;
    if let Some(warning) = backend::exposure_warning(&settings.host, &guard) {
        tracing::warn!("{warning}");
    }
    let configured_key = settings.api_key.as_deref().map(ApiKey::parse).transpose().context("invalid API_KEY")?;
    let open_files = backend::raise_open_files_limit().unwrap_or(u64::MAX);
    let limits = ConnectionLimits::for_open_files(
        settings.max_connections,
        open_files,
        Duration::from_secs(settings.header_read_timeout),
    )?;
    // Bound before the database is opened (or created): a port in use changes nothing on disk.
    let listener = backend::startup::bind(&settings.host, settings.port).await?;
    let address = listener.local_addr()?;
    let url = format!("http://{address}/mcp");

    let database = backend::startup::open_database(settings.database_url.as_deref(), &settings.database_path)?;
    // Never the URL: it may hold a password.
    tracing::info!(database = %database.description, "course database ready");
    let catalog = database.catalog;

    let access = if settings.no_auth {
        tracing::warn!("NO_AUTH: /mcp answers without an API key (loopback only, for local test suites)");
        Access::NoAuth
    } else {
        let api_key = match configured_key {
            None if settings.keys_file.is_none() => {
                let key = ApiKey::generate().context("cannot generate an API key")?;
                // Printed once, on stdout, for the operator; never through the log.
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(backend::generated_key_message(&key, &url).as_bytes())?;
                stdout.flush()?;
                Some(key)
            }
            key => key,
        };
        let keyring = backend::startup::load_keyring(api_key.as_ref(), settings.keys_file.as_deref())?;
        if keyring.is_empty() {
            tracing::warn!("the keys file has no key yet: /mcp refuses every request until `keys create` adds one");
        }
        tracing::info!(keys = keyring.len(), rate_limit = ?settings.rate_limit, "API keys loaded");
        Access::Keys(keyring)
    };

    let options = ServerOptions {
        resource_tools: settings.resource_tools,
        legacy_subscriptions: settings.session_mode == SessionMode::Stateful,
        unconfirmed_archive: settings.unconfirmed_archive,
    };
    let state = ServerState::new(catalog, options);
    let state = match &settings.confirmation_secret {
        Some(secret) => state
            .with_confirmation_secret(secret.as_bytes())
            .context("invalid CONFIRMATION_SECRET (generate one with `openssl rand -hex 32`)")?,
        None => state,
    };
    let state = match policy {
        Some((policy_file, policy)) => {
            tracing::info!(policy = %policy.summary(), "operator's policy loaded (POLICY_FILE)");
            let state = state.with_policy(policy);
            policy_file.watch(&state, backend::RELOAD_INTERVAL);
            state
        }
        None => state,
    };
    // Processes sharing the database (PostgreSQL replicas, apps on one SQLite file) hear of each other's changes.
    let _followers = state.follow_other_processes();
    let shutdown = state.shutdown_token();
    if let Access::Keys(keyring) = &access {
        keyring.watch(backend::RELOAD_INTERVAL, shutdown.clone());
    }
    let config = backend::startup::app_config(&settings, access, guard);
    let router = backend::app(state, config, shutdown.clone());
    tokio::spawn(stop_on_signal(shutdown.clone()));
    tracing::info!(
        max_connections = limits.max_connections,
        open_files,
        header_read_timeout = ?limits.header_read_timeout,
        max_sessions_per_key = settings.max_sessions_per_key,
        "connection limits"
    );
    tracing::info!(%url, session_mode = ?settings.session_mode, "mcp-cursos-backend listening");
    backend::serve(listener, router, shutdown, limits).await.context("the HTTP server failed")?;
    tracing::info!("mcp-cursos-backend stopped");
    Ok(())
}

/// `keys create|revoke|list`: the new key alone goes to stdout; everything else to stderr.
fn keys_command(command: &KeysCommand, keys_file: Option<&std::path::Path>) -> anyhow::Result<()> {
    let path = keys_file.context("set KEYS_FILE or --keys-file to the keys file to manage")?;
    let mut stdout = std::io::stdout().lock();
    match command {
        KeysCommand::Create { name, scope, catalog } => {
            // Shown (and flushed) before the rename that makes it take effect: a key that cannot be
            // printed is never added.
            backend::create_key_and_show(path, name, *scope, catalog, |key| {
                stdout.write_all(format!("{}\n", key.expose()).as_bytes())?;
                stdout.flush()
            })
            .context("cannot create the key")?;
            eprintln!(
                "Key {name} ({scope}, catalog {catalog}) added to {}. It is shown only now, above; a running server accepts it within a second.",
                path.display()
            );
        }
        KeysCommand::Revoke { name } => {
            backend::revoke_key(path, name).context("cannot revoke the key")?;
            eprintln!("Key {name} revoked in {}; a running server refuses it within a second.", path.display());
        }
        KeysCommand::List => {
            let keys = backend::KeysFile::read(path).context("cannot read the keys file")?;
            for entry in keys.entries() {
                stdout.write_all(format!("{} {} {}\n", entry.name, entry.scope, entry.catalog).as_bytes())?;
            }
            stdout.flush()?;
        }
    }
    Ok(())
}

/// The database of the settings, for `export` and `import`.
fn database_of(settings: &Settings) -> backend::transfer::Database {
    backend::transfer::Database { url: settings.database_url.clone(), path: settings.database_path.clone() }
}

/// Cancels `shutdown` on SIGINT or SIGTERM.
async fn stop_on_signal(shutdown: CancellationToken) {
    let signal = backend::progress::next_signal().await;
    tracing::info!("{signal} received, shutting down");
    shutdown.cancel();
}

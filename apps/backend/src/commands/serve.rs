//! `mcp-cursos-backend` without a command: binds HOST:PORT, opens the database, loads the keys and
//! the policy, builds the server state and the router, and serves until SIGINT or SIGTERM.

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use mcp_server::ServerOptions;
use mcp_server::setup::{self, Setup};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::progress::Signals;
use super::settings::Settings;
use super::startup::{
    app_config, bind, check_no_auth, load_keyring, load_policy, oauth_config, open_database, request_guard,
};
use crate::http::connections::{ConnectionLimits, raise_open_files_limit, serve};
use crate::http::guard::exposure_warning;
use crate::http::router::{Access, SessionMode, app};
use crate::keys::api_key::ApiKey;
use crate::keys::keyring::RELOAD_INTERVAL;
use crate::oauth::verifier::ResourceServer;

/// The target of this file's log events: the binary's, where this code was before (`RUST_LOG`
/// filters such as `warn,mcp_cursos_backend=info` keep working).
const LOG_TARGET: &str = "mcp_cursos_backend";

/// Serves with `settings` until SIGINT or SIGTERM, then lets in-flight requests finish.
///
/// # Errors
/// A setting that cannot be followed (the error names it), or the HTTP server failing.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    // Before anything is announced: a SIGTERM right after the first lines stops gracefully.
    let signals = Signals::install();
    let server = Server::start(settings).await?;
    tokio::spawn(stop_on_signal(signals, server.shutdown.clone()));
    server.serve().await
}

/// The backend bound, its database open and its router built, not serving yet: what [`run`]
/// serves until a signal, and what a test can start (on port 0) and stop (`shutdown`).
#[derive(Debug)]
pub struct Server {
    /// The `/mcp` URL it listens on.
    pub url: String,
    /// Cancelled, the server stops accepting and lets in-flight requests finish.
    pub shutdown: CancellationToken,
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    /// The server state in service (its followers stop when it is dropped).
    _running: setup::Running,
}

impl Server {
    /// Everything the binary does with `settings` before serving, in its order (ADR 0028).
    ///
    /// # Errors
    /// A setting that cannot be followed: the error names it and the value it saw.
    pub async fn start(settings: &Settings) -> anyhow::Result<Self> {
        check_no_auth(settings)?;
        let guard = request_guard(settings)?;
        let oauth = oauth_config(settings)?;
        let policy = load_policy(settings.policy_file.as_deref())?;
        if let Some(warning) = exposure_warning(&settings.host, &guard, mcp_server::container::Container::detect()) {
            tracing::warn!(target: LOG_TARGET, "{warning}");
        }
        let configured_key = settings.api_key.as_deref().map(ApiKey::parse).transpose().context("invalid API_KEY")?;
        let open_files = raise_open_files_limit().unwrap_or(u64::MAX);
        let limits = ConnectionLimits::for_open_files(
            settings.max_connections,
            open_files,
            Duration::from_secs(settings.header_read_timeout),
        )?
        .with_write_stall_timeout(Duration::from_secs(settings.write_stall_timeout))
        .with_shares(settings.max_connections_per_address, settings.max_connections_per_key);
        // Bound before the database is opened (or created): a port in use changes nothing on disk.
        let listener = bind(&settings.host, settings.port).await?;
        let address = listener.local_addr()?;
        let url = format!("http://{address}/mcp");

        let database = open_database(settings.database_url.as_deref(), &settings.database_path)?;
        // Never the URL: it may hold a password.
        tracing::info!(target: LOG_TARGET, database = %database.description, "course database ready");
        let catalog = database.catalog;

        let access = if settings.no_auth {
            tracing::warn!(target: LOG_TARGET, "NO_AUTH: /mcp answers without an API key (loopback only, for local test suites)");
            Access::NoAuth
        } else {
            let api_key = match configured_key {
                // With OAuth, tokens are the way in: a key only when one is configured.
                None if settings.keys_file.is_none() && oauth.is_none() => {
                    let key = ApiKey::generate().context("cannot generate an API key")?;
                    // Printed once, on stdout, for the operator; never through the log.
                    let mut stdout = super::stdout();
                    stdout.write_all(generated_key_message(&key, &url).as_bytes())?;
                    stdout.flush()?;
                    Some(key)
                }
                key => key,
            };
            let keyring = || -> anyhow::Result<_> {
                let keyring = load_keyring(api_key.as_ref(), settings.keys_file.as_deref())?;
                tracing::info!(target: LOG_TARGET, keys = keyring.len(), rate_limit = ?settings.rate_limit, "API keys loaded");
                Ok(keyring)
            };
            match oauth {
                None => {
                    let keyring = keyring()?;
                    if keyring.is_empty() {
                        tracing::warn!(target: LOG_TARGET, "the keys file has no key yet: /mcp refuses every request until `keys create` adds one");
                    }
                    Access::Keys(keyring)
                }
                Some(config) => {
                    let keys = if api_key.is_some() || settings.keys_file.is_some() { Some(keyring()?) } else { None };
                    tracing::info!(
                        target: LOG_TARGET,
                        issuer = config.issuer(),
                        resource = config.resource(),
                        introspection = config.introspection().is_some(),
                        keys_too = keys.is_some(),
                        "OAuth access tokens accepted"
                    );
                    let resource_server = ResourceServer::new(config)
                        .context("cannot build the HTTP client for the authorization server (OAUTH_ISSUER)")?;
                    Access::OAuth { resource_server: std::sync::Arc::new(resource_server), keys }
                }
            }
        };

        let options = ServerOptions {
            resource_tools: settings.resource_tools,
            legacy_subscriptions: settings.session_mode == SessionMode::Stateful,
            unconfirmed_archive: settings.unconfirmed_archive,
        };
        let confirmation_secret = settings.confirmation_secret.as_ref().map(|secret| secret.as_bytes().to_vec());
        // Effects that come after a request (a confirmed archiving, a notice on an open stream)
        // ask the keys in force now, not the ones the request was let in with.
        let authority: Option<std::sync::Arc<dyn mcp_server::Authority>> = match &access {
            Access::Keys(keyring) | Access::OAuth { keys: Some(keyring), .. } => {
                Some(std::sync::Arc::new(keyring.clone()))
            }
            // Tokens stand unchanged until their expiry, which the server state checks itself.
            Access::OAuth { keys: None, .. } | Access::NoAuth => None,
        };
        // For the warning about a policy catalog no caller can be in (a typo in POLICY_FILE).
        let callers_catalogs = match &access {
            Access::OAuth { .. } if settings.oauth_catalog_claim.is_some() => mcp_server::CallersCatalogs::Any,
            Access::Keys(keys) | Access::OAuth { keys: Some(keys), .. } => {
                let (keys, fixed) = (keys.clone(), fixed_oauth_catalog(settings));
                mcp_server::CallersCatalogs::Known(std::sync::Arc::new(move || {
                    keys.catalogs().into_iter().chain(fixed.clone()).collect()
                }))
            }
            Access::OAuth { keys: None, .. } => {
                let fixed = fixed_oauth_catalog(settings);
                mcp_server::CallersCatalogs::Known(std::sync::Arc::new(move || fixed.clone().into_iter().collect()))
            }
            Access::NoAuth => mcp_server::CallersCatalogs::default(),
        };
        let running = setup::start(
            catalog,
            Setup { confirmation_secret, policy, authority, callers_catalogs, ..Setup::new(options) },
        )?;
        if let Some(policy) = running.policy_summary() {
            tracing::info!(target: LOG_TARGET, policy = %policy, "operator's policy loaded (POLICY_FILE)");
        }
        let state = running.state().clone();
        let shutdown = state.shutdown_token();
        if let Access::Keys(keyring) | Access::OAuth { keys: Some(keyring), .. } = &access {
            // A key revoked, moved or downgraded in the file: what it has open ends at once.
            let rechecked = state.clone();
            keyring.watch(RELOAD_INTERVAL, shutdown.clone(), move || rechecked.recheck_listeners());
        }
        if let Access::OAuth { resource_server, .. } = &access {
            resource_server.keep_up(shutdown.clone());
        }
        let config = app_config(settings, access, guard);
        let router = app(state, config, shutdown.clone());
        tracing::info!(
            target: LOG_TARGET,
            max_connections = limits.max_connections,
            open_files,
            header_read_timeout = ?limits.header_read_timeout,
            write_stall_timeout = ?limits.write_stall_timeout,
            max_connections_per_address = limits.per_address,
            max_connections_per_key = limits.per_key,
            max_sessions_per_key = settings.max_sessions_per_key,
            "connection limits"
        );
        tracing::info!(target: LOG_TARGET, %url, session_mode = ?settings.session_mode, "mcp-cursos-backend listening");
        Ok(Self { url, shutdown, listener, router, limits, _running: running })
    }

    /// Serves until `shutdown` is cancelled, then lets in-flight requests finish.
    ///
    /// # Errors
    /// The HTTP server failing.
    pub async fn serve(self) -> anyhow::Result<()> {
        serve(self.listener, self.router, self.shutdown, self.limits).await.context("the HTTP server failed")?;
        tracing::info!(target: LOG_TARGET, "mcp-cursos-backend stopped");
        Ok(())
    }
}

/// Cancels `shutdown` on SIGINT or SIGTERM.
async fn stop_on_signal(mut signals: Signals, shutdown: CancellationToken) {
    let signal = signals.next().await;
    tracing::info!(target: LOG_TARGET, "{signal} received, shutting down");
    shutdown.cancel();
}

/// How a client the README covers is configured to reach this server with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfiguration {
    /// The client, and where its configuration goes.
    pub client: &'static str,
    /// A JSON document to paste, or a command line to run.
    pub text: String,
}

/// `OAUTH_CATALOG`, the one catalog of every token, when set and valid (checked at start).
fn fixed_oauth_catalog(settings: &Settings) -> Option<courses_domain::CatalogName> {
    settings.oauth_catalog.as_deref().and_then(|name| courses_domain::CatalogName::parse(name).ok())
}

/// The configuration of each client the README covers, for `url` with `api_key`: Cursor, VS Code,
/// Claude Desktop (through `mcp-remote`) and Claude Code's command line.
#[must_use]
pub fn client_configurations(api_key: &ApiKey, url: &str) -> Vec<ClientConfiguration> {
    let bearer = format!("Bearer {}", api_key.expose());
    let pretty = |value: serde_json::Value| serde_json::to_string_pretty(&value).unwrap_or_default();
    vec![
        ClientConfiguration {
            client: "Cursor (~/.cursor/mcp.json or .cursor/mcp.json)",
            text: pretty(json!({ "mcpServers": { "cursos": { "url": url, "headers": { "Authorization": bearer } } } })),
        },
        ClientConfiguration {
            client: "VS Code (.vscode/mcp.json)",
            text: pretty(json!({
                "servers": { "cursos": { "type": "http", "url": url, "headers": { "Authorization": bearer } } }
            })),
        },
        ClientConfiguration {
            client: "Claude Desktop (claude_desktop_config.json, through mcp-remote; needs Node.js)",
            text: pretty(json!({
                "mcpServers": { "cursos": {
                    "command": "npx",
                    "args": ["-y", "mcp-remote", url, "--header", "Authorization: Bearer ${CURSOS_API_KEY}"],
                    "env": { "CURSOS_API_KEY": api_key.expose() }
                } }
            })),
        },
        ClientConfiguration {
            client: "Claude Code (command line)",
            text: format!("claude mcp add --transport http cursos {url} --header \"Authorization: {bearer}\""),
        },
    ]
}

/// The message that hands a generated key to the operator, with the configuration of each client
/// the README covers ([`client_configurations`]), each block after a `# client` line and followed
/// by a blank line.
#[must_use]
pub fn generated_key_message(api_key: &ApiKey, url: &str) -> String {
    let mut message = format!(
        "No API_KEY was configured, so this one was generated. It is shown only now and changes at every start;\n\
         set API_KEY (or --api-key) to keep one.\n\n\
         API_KEY={key}\n\n",
        key = api_key.expose()
    );
    for configuration in client_configurations(api_key, url) {
        message.push_str(&format!("# {}\n{}\n\n", configuration.client, configuration.text));
    }
    message
}

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
    app_config, bind, check_no_auth, generated_key_path, load_keyring, load_policy, oauth_config, open_database,
    read_generated_key, request_guard,
};
use crate::http::connections::{ConnectionLimits, raise_open_files_limit, serve};
use crate::http::guard::exposure_warning;
use crate::http::router::{Access, SessionMode, app};
use crate::keys::api_key::ApiKey;
use crate::keys::generated_key::{self, GeneratedKey, Outcome};
use crate::keys::keyring::RELOAD_INTERVAL;
use crate::keys::keys_file::KeyHash;
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
    // The runtime's worker count: what its hooks in `main` flush (ADR 0065).
    tokio::spawn(crate::allocator::give_back_when_quiet(tokio::runtime::Handle::current().metrics().num_workers()));
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
            let generated_key_path = generated_key_path(settings);
            let (api_key, source) = match configured_key {
                // With OAuth, tokens are the way in: a key only when one is configured.
                None if settings.keys_file.is_none() && oauth.is_none() => {
                    let (hash, source) = generated_key(generated_key_path.as_deref(), &url)?;
                    (Some(hash), source)
                }
                key => {
                    say_generated_key_unused(generated_key_path.as_deref(), settings, oauth.is_some());
                    let source = match (&key, &settings.keys_file) {
                        (Some(_), Some(path)) => format!("API_KEY and KEYS_FILE={}", path.display()),
                        (Some(_), None) => "API_KEY".to_owned(),
                        (None, Some(path)) => format!("KEYS_FILE={}", path.display()),
                        (None, None) => "none (OAuth tokens only)".to_owned(),
                    };
                    (key.map(|key| KeyHash::of(key.expose().as_bytes())), source)
                }
            };
            let keyring = || -> anyhow::Result<_> {
                let keyring = load_keyring(api_key.clone(), settings.keys_file.as_deref())?;
                tracing::info!(target: LOG_TARGET, keys = keyring.len(), source = %source, rate_limit = ?settings.rate_limit, "API keys loaded");
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

/// The key of a start with no key configured (no API_KEY, KEYS_FILE or OAuth), and what to log
/// as the keys' source: the one kept at `kept_in` (its file read, nothing printed), or a new one,
/// printed once on stdout with the client configurations and, where there is a file to keep it
/// in, kept there (ADR 0048). Never through the log.
fn generated_key(kept_in: Option<&std::path::Path>, url: &str) -> anyhow::Result<(KeyHash, String)> {
    let print = |key: &ApiKey| {
        let mut stdout = super::stdout();
        stdout.write_all(generated_key_message(key, url, kept_in).as_bytes())?;
        stdout.flush()
    };
    let Some(path) = kept_in else {
        let key = ApiKey::generate().context("cannot generate an API key")?;
        print(&key)?;
        tracing::warn!(
            target: LOG_TARGET,
            "no API_KEY or KEYS_FILE with DATABASE_URL: the key printed on stdout is for this start only (there \
             is no data folder to keep it in), and clients need a new one after a restart; set API_KEY or KEYS_FILE"
        );
        return Ok((KeyHash::of(key.expose().as_bytes()), "a key generated for this start only".to_owned()));
    };
    let kept = |generated: &GeneratedKey| {
        tracing::info!(
            target: LOG_TARGET,
            file = %path.display(),
            "the API key generated on {} is in use (its SHA-256 is kept in {}; the key was printed at that start). \
             To replace it, delete that file and restart (a new key is printed), or set API_KEY or KEYS_FILE",
            generated.created_text(),
            path.display()
        );
        (generated.hash().clone(), format!("the key generated on {}", generated.created_text()))
    };
    if let Some(generated) = read_generated_key(path)? {
        return Ok(kept(&generated));
    }
    match generated_key::create_and_show(path, print)? {
        Outcome::Created(generated) => {
            tracing::info!(
                target: LOG_TARGET,
                file = %path.display(),
                "no API_KEY, KEYS_FILE or OAuth: generated an API key, printed once on stdout; its SHA-256 is kept in {}, \
                 so the same key is accepted after a restart",
                path.display()
            );
            Ok((generated.hash().clone(), format!("the key generated on {}", generated.created_text())))
        }
        Outcome::AlreadyThere(generated) => Ok(kept(&generated)),
    }
}

/// Logs that a generated key's file is there but not used, since a key or OAuth is configured.
fn say_generated_key_unused(kept_in: Option<&std::path::Path>, settings: &Settings, oauth: bool) {
    let Some(path) = kept_in.filter(|path| std::fs::symlink_metadata(path).is_ok()) else {
        return;
    };
    let instead = match (settings.api_key.is_some(), settings.keys_file.is_some()) {
        (true, true) => "API_KEY and KEYS_FILE are set",
        (true, false) => "API_KEY is set",
        (false, true) => "KEYS_FILE is set",
        (false, false) if oauth => "OAUTH_ISSUER is set",
        (false, false) => return,
    };
    tracing::info!(
        target: LOG_TARGET,
        file = %path.display(),
        "{instead}: the generated key kept in {} is not accepted (the file is left as it is; delete it if that key is done with)",
        path.display()
    );
}

/// The message that hands a generated key to the operator, with the configuration of each client
/// the README covers ([`client_configurations`]), each block after a `# client` line and followed
/// by a blank line. `kept_in`: the file that keeps its hash, or `None` when it is for this start
/// only (PostgreSQL).
#[must_use]
pub fn generated_key_message(api_key: &ApiKey, url: &str, kept_in: Option<&std::path::Path>) -> String {
    let lasts = match kept_in {
        Some(path) => format!(
            "It is shown only now: the server keeps only its SHA-256, in {},\n\
             and accepts the same key after a restart. To replace it, delete that file and restart\n\
             (a new key is printed), or set API_KEY or KEYS_FILE.",
            path.display()
        ),
        None => "It is shown only now and changes at every start: with DATABASE_URL there is no data\n\
                 folder to keep it in. Set API_KEY (or --api-key) or KEYS_FILE to keep one."
            .to_owned(),
    };
    let mut message = format!(
        "No API_KEY, KEYS_FILE or OAuth was configured, so this key was generated.\n{lasts}\n\n\
         API_KEY={key}\n\n",
        key = api_key.expose()
    );
    for configuration in client_configurations(api_key, url) {
        message.push_str(&format!("# {}\n{}\n\n", configuration.client, configuration.text));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_says_where_a_kept_key_s_hash_is_or_that_it_changes_at_every_start() {
        let key = ApiKey::parse("chave-de-teste-da-mensagem").expect("key");
        let url = "http://127.0.0.1:3000/mcp";
        let kept = generated_key_message(&key, url, Some(std::path::Path::new("/data/generated-key")));
        assert!(kept.contains("keeps only its SHA-256, in /data/generated-key"), "{kept}");
        assert!(kept.contains("accepts the same key after a restart") && kept.contains("delete that file"), "{kept}");
        assert!(!kept.contains("every start"), "{kept}");
        let per_start = generated_key_message(&key, url, None);
        assert!(per_start.contains("changes at every start") && per_start.contains("DATABASE_URL"), "{per_start}");
        for message in [kept, per_start] {
            assert!(message.contains("\n\nAPI_KEY=chave-de-teste-da-mensagem\n\n"), "{message}");
            assert_eq!(message.matches("chave-de-teste-da-mensagem").count(), 5, "once, then once per client");
        }
    }
}

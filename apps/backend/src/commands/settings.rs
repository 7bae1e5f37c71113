//! [`Settings`]: the backend's configuration, from flags with the environment as fallback.

use std::num::{NonZeroU32, NonZeroUsize};
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use courses_domain::OpenedDatabase;
use mcp_server::UnconfirmedArchive;

use super::backup::BackupArgs;
use super::export::ExportArgs;
use super::import::ImportArgs;
use super::keys::KeysCommand;
use super::migrate::MigrateArguments;
use super::restore::RestoreArgs;
use crate::http::router::SessionMode;
use crate::logging::LogFormat;

/// mcp-cursos over Streamable HTTP (`POST /mcp`, `Authorization: Bearer <key>`).
///
/// Without a command, serves. `keys create|revoke|list` manage the keys file.
#[derive(Debug, Clone, Parser)]
#[command(name = "mcp-cursos-backend", version, about, long_about = None, next_line_help = true)]
pub struct Settings {
    /// What to do instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Address to listen on.
    ///
    /// Keep the loopback default unless a proxy or a real deployment needs more.
    #[arg(long, env = "HOST", default_value = "127.0.0.1")]
    pub host: String,

    /// TCP port to listen on (0 picks a free one).
    #[arg(long, env = "PORT", default_value_t = 3000)]
    pub port: u16,

    /// SQLite database file.
    ///
    /// Created with its folder and migrated at start.
    #[arg(long, env = "DATABASE_PATH", default_value = "./data/cursos.db")]
    pub database_path: PathBuf,

    /// PostgreSQL connection URI, instead of DATABASE_PATH.
    ///
    /// `postgres://user:password@host:5432/database`, libpq syntax. When it starts with `postgres://` or `postgresql://`, the catalog is kept there (migrated at
    /// start) instead of in DATABASE_PATH. Prefer the environment variable: flags show in `ps`.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// The key clients must send as `Authorization: Bearer <key>`.
    ///
    /// At least 16 visible ASCII characters (`openssl rand -hex 32`). Without it, KEYS_FILE and
    /// OAuth, a key is generated at the first start and printed once, and its SHA-256 kept in
    /// `generated-key` beside the SQLite database, so restarts accept the same key; delete that
    /// file to replace it (with DATABASE_URL, a new key at every start). Prefer the environment
    /// variable: flags show in `ps`.
    #[arg(long, env = "API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// File of named keys with scopes (`keys create` manages it).
    ///
    /// One per line as `name scope sha256:<hex>` (only hashes of the keys). Manage it with `keys create|revoke|list`; the server rereads it every 500 ms, so
    /// a key added or revoked counts within a second, without a restart. May be combined with
    /// API_KEY (one more full-scope key named `api-key`).
    #[arg(long, env = "KEYS_FILE", global = true)]
    pub keys_file: Option<PathBuf>,

    /// The operator's policy file (ADR 0036).
    ///
    /// Lines `somente-leitura`, `desativar ferramenta
    /// <nome>`, `desativar prompt <nome>`, each optionally after `catalogo <nome>`. Reread every
    /// 500 ms: a tool switched off or on counts within a second, without a restart; clients are
    /// told (list_changed). Unset: everything enabled.
    #[arg(long, env = "POLICY_FILE", global = true)]
    pub policy_file: Option<PathBuf>,

    /// Requests per minute allowed to each key.
    ///
    /// A burst of as many, then a steady rate; beyond it, 429 with Retry-After and the request is not executed. Off when unset.
    #[arg(long, env = "RATE_LIMIT")]
    pub rate_limit: Option<NonZeroU32>,

    /// Log lines on stderr: `text` or `json`.
    ///
    /// `text` (default), for people, or `json`: one JSON object per line, for log collectors.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text, global = true, hide_possible_values = true)]
    pub log_format: LogFormat,

    /// Extra host names this server answers to, comma-separated.
    ///
    /// Such as `cursos.example.com,api.example.com:8443`. Loopback (localhost, 127.0.0.1, ::1) is always allowed; any other Host gets 403.
    #[arg(long, env = "ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Extra browser origins allowed, comma-separated.
    ///
    /// Exact origins allowed to call from a browser (`https://app.example.com`). Origins whose host is an allowed host are always accepted.
    #[arg(long, env = "ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// `stateful` or `stateless`.
    ///
    /// `stateful`: MCP sessions (needed by 2025-era clients for subscriptions); `stateless`: no
    /// sessions, for load-balanced replicas without sticky routing.
    #[arg(long, env = "SESSION_MODE", value_enum, default_value_t = SessionMode::Stateful, hide_possible_values = true)]
    pub session_mode: SessionMode,

    /// Idle seconds before a session is closed.
    ///
    /// A session with no request for this long is closed (stateful mode).
    #[arg(long, env = "SESSION_IDLE_TIMEOUT", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub session_idle_timeout: u64,

    /// Most open MCP sessions per key.
    ///
    /// In stateful mode, an `initialize` beyond it gets 429 until
    /// one of the key's sessions is closed (DELETE) or expires (SESSION_IDLE_TIMEOUT).
    #[arg(long, env = "MAX_SESSIONS_PER_KEY", default_value_t = NonZeroUsize::new(64).expect("not zero"))]
    pub max_sessions_per_key: NonZeroUsize,

    /// Most TCP connections served at once.
    ///
    /// More wait in the listen backlog until one closes. Default 4096, lowered to what the open-files limit leaves (raised to its hard limit at
    /// start, 128 descriptors kept for the rest); a value that does not fit is refused at start.
    #[arg(long, env = "MAX_CONNECTIONS")]
    pub max_connections: Option<NonZeroUsize>,

    /// Seconds allowed for a request's head.
    ///
    /// Seconds a connection may take to send a complete request head, counted from when it opens
    /// or from its previous response (so also the idle keep-alive timeout); then it is closed.
    /// Streamed responses (SSE) are not cut by it.
    #[arg(long, env = "HEADER_READ_TIMEOUT", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_read_timeout: u64,

    /// Seconds one write may wait for the client.
    ///
    /// Seconds one write may wait for the client to read (its receive window full); then the
    /// connection is closed. Bounds clients that send requests and never read the answers, and
    /// stream readers that stopped reading.
    #[arg(long, env = "WRITE_STALL_TIMEOUT", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub write_stall_timeout: u64,

    /// Most connections one remote address may hold.
    ///
    /// Beyond it a connection is answered 429 and closed at once. Default half of MAX_CONNECTIONS (rounded up). Behind a reverse proxy every
    /// connection comes from the proxy's address: set it to MAX_CONNECTIONS there.
    #[arg(long, env = "MAX_CONNECTIONS_PER_ADDRESS")]
    pub max_connections_per_address: Option<NonZeroUsize>,

    /// Most connections one key (or token subject) may hold.
    ///
    /// Counted for the caller of each connection's latest request; a request beyond it gets 429 and its connection is closed.
    /// Default half of MAX_CONNECTIONS (rounded up).
    #[arg(long, env = "MAX_CONNECTIONS_PER_KEY")]
    pub max_connections_per_key: Option<NonZeroUsize>,

    /// Read-only tools mirroring the resources.
    ///
    /// `true` also exposes listar_cursos and ler_curso, for hosts that give the model tools but
    /// not resources. Off by default: duplicates confuse models.
    #[arg(long, env = "RESOURCE_TOOLS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", hide_possible_values = true)]
    pub resource_tools: bool,

    /// Serve Prometheus metrics on `GET /metrics`.
    ///
    /// `true` serves them (no key needed; behind the Host check): requests by MCP method and
    /// status, latencies, sessions, subscriptions and the database pool.
    #[arg(long, env = "METRICS", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", hide_possible_values = true)]
    pub metrics: bool,

    /// Unconfirmed archiving: `refuse` or `allow`.
    ///
    /// What arquivar_curso does when the client cannot ask its user to confirm (no elicitation,
    /// or a stateless 2025-era connection): `refuse` (default; the model is told why) or `allow`.
    #[arg(long, env = "UNCONFIRMED_ARCHIVE", default_value = "refuse", value_parser = UnconfirmedArchive::parse)]
    pub unconfirmed_archive: UnconfirmedArchive,

    /// Secret (32 bytes or more) sealing archiving confirmations.
    ///
    /// Seals the confirmations asked of 2026-07-28 clients. Give every replica behind one address the same one, so a client's answer is accepted by
    /// whichever replica its retry reaches. Unset: a random secret per process.
    #[arg(long, env = "CONFIRMATION_SECRET", hide_env_values = true, value_parser = ConfirmationSecret::parse)]
    pub confirmation_secret: Option<ConfirmationSecret>,

    /// OAuth 2.1: the authorization server's issuer (ADR 0043).
    ///
    /// Compared exactly with each token's `iss`. Its metadata is read from `{issuer}/.well-known/oauth-authorization-server`
    /// (else `/.well-known/openid-configuration`); https, except on a loopback host. An issuer
    /// that cannot be reached at start is retried in the background, and `/ready` says so.
    /// With it, /mcp accepts access tokens (and the keys of API_KEY or KEYS_FILE, when set; no
    /// key is generated at start). Needs OAUTH_RESOURCE and one of OAUTH_CATALOG_CLAIM and
    /// OAUTH_CATALOG.
    #[arg(long, env = "OAUTH_ISSUER")]
    pub oauth_issuer: Option<String>,

    /// This server's canonical MCP URL, in every token's `aud`.
    ///
    /// Such as `https://cursos.example.com/mcp`: every token's `aud` must contain it exactly (RFC 8707); named in the protected-resource metadata.
    #[arg(long, env = "OAUTH_RESOURCE")]
    pub oauth_resource: Option<String>,

    /// The token scope that lets a caller read (default `mcp:read`).
    #[arg(long, env = "OAUTH_READ_SCOPE")]
    pub oauth_read_scope: Option<String>,

    /// The token scope to write, and read (default `mcp:write`).
    #[arg(long, env = "OAUTH_WRITE_SCOPE")]
    pub oauth_write_scope: Option<String>,

    /// The token claim naming the caller's catalog.
    ///
    /// Such as `tenant`: a token without it, or with a value that is not a catalog name, is refused.
    #[arg(long, env = "OAUTH_CATALOG_CLAIM")]
    pub oauth_catalog_claim: Option<String>,

    /// The one catalog of every token (or OAUTH_CATALOG_CLAIM).
    ///
    /// The catalog of every token of the issuer, instead of OAUTH_CATALOG_CLAIM.
    #[arg(long, env = "OAUTH_CATALOG")]
    pub oauth_catalog: Option<String>,

    /// The client id to introspect opaque tokens as.
    ///
    /// The client this server introspects opaque (non-JWT) tokens as (RFC 7662,
    /// client_secret_basic, at the metadata's `introspection_endpoint`); its secret is read from
    /// the environment variable OAUTH_INTROSPECTION_CLIENT_SECRET only. Unset: opaque tokens are
    /// refused.
    #[arg(long, env = "OAUTH_INTROSPECTION_CLIENT_ID")]
    pub oauth_introspection_client_id: Option<String>,

    /// `OAUTH_INTROSPECTION_CLIENT_SECRET`, from the environment only (a flag would show in `ps`).
    #[arg(skip = IntrospectionSecret::from_environment())]
    pub oauth_introspection_client_secret: Option<IntrospectionSecret>,

    /// Seconds of clock skew allowed on `exp` and `nbf`.
    ///
    /// On a token's `exp` and `nbf`: default 30, at most 300.
    #[arg(long, env = "OAUTH_LEEWAY_SECONDS")]
    pub oauth_leeway_seconds: Option<u64>,

    /// Most fetches of the issuer's JWKS per minute.
    ///
    /// Default 6, 1 to 60: a token with an unknown `kid` makes the server fetch the keys again, at most this often.
    #[arg(long, env = "OAUTH_JWKS_FETCHES_PER_MINUTE")]
    pub oauth_jwks_fetches_per_minute: Option<u32>,

    /// Serve `/mcp` without a key (loopback test suites only).
    ///
    /// `true` serves `/mcp` without an API key. Only for local test suites (such as the MCP
    /// conformance suite): the backend refuses to start with it unless HOST is a loopback address.
    #[arg(long, env = "NO_AUTH", default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", hide_possible_values = true)]
    pub no_auth: bool,
}

/// `CONFIRMATION_SECRET`, never shown (`Debug` is redacted; its length is checked at start,
/// without echoing it, by `ServerState::with_confirmation_secret`).
#[derive(Clone)]
pub struct ConfirmationSecret(String);

impl ConfirmationSecret {
    // Infallible: a parse error from clap would echo the value.
    fn parse(text: &str) -> Result<Self, std::convert::Infallible> {
        Ok(Self(text.to_owned()))
    }

    /// The secret's bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl std::fmt::Debug for ConfirmationSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("ConfirmationSecret(<redacted>)")
    }
}

/// `OAUTH_INTROSPECTION_CLIENT_SECRET`, never shown (`Debug` is redacted).
#[derive(Clone)]
pub struct IntrospectionSecret(String);

impl IntrospectionSecret {
    /// The environment variable's value, when set.
    #[must_use]
    pub fn from_environment() -> Option<Self> {
        // Empty counts as unset, as for every setting ([`Settings::from_command_line`]).
        std::env::var("OAUTH_INTROSPECTION_CLIENT_SECRET").ok().filter(|secret| !secret.is_empty()).map(Self)
    }

    /// A secret given in code (tests).
    #[must_use]
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for IntrospectionSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("IntrospectionSecret(<redacted>)")
    }
}

/// The commands of the binary besides serving.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Manage the keys file (KEYS_FILE or --keys-file).
    ///
    /// A running server picks up changes by itself.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Asks the backend at HOST:PORT for `GET /health`: exit 0 on 200, 1 otherwise.
    ///
    /// A wildcard HOST is reached on loopback. For container health checks (no shell needed).
    Health,
    /// Validates the whole configuration without serving.
    ///
    /// As a deploy pipeline would before a start: the database opens (and is migrated, as a start
    /// would), KEYS_FILE parses, HOST:PORT is free, ALLOWED_HOSTS is valid. One line per finding on stdout; exit 0 only when none is
    /// an error.
    Check,
    /// Writes the whole catalog as JSON Lines, from one snapshot (ADR 0040).
    ///
    /// Active and archived courses, with ids, versions and instants (with --history, each
    /// course's history), as JSON Lines in the contract's shapes, from one snapshot while the
    /// server goes on serving. To a file, written whole or not at
    /// all (Ctrl-C leaves none), or to stdout (`-`, the default). The database is the server's
    /// (DATABASE_URL, else DATABASE_PATH). Exit 0, or 130 when interrupted.
    Export(ExportArgs),
    /// Imports courses from JSON Lines or CSV, each row through the catalog's rules (ADR 0040).
    ///
    /// JSON Lines (an export) or CSV (`titulo,cargaHoraria[,id]` with a header row); a refused row
    /// is printed as `linha N: campo: motivo`. Nothing is written unless every row is valid (--partial writes
    /// the valid ones). Idempotent: a row whose course is already in the catalog (same id; a row
    /// without id gets a UUID v5 of catalog and title) is skipped, so a second import changes
    /// nothing. Written in batches of one transaction each; a running server announces every
    /// imported course to its subscribers. Ctrl-C stops between batches: the batches before stay,
    /// and running the same command again goes on where it stopped. A title taken by another
    /// writer during the import refuses that row only (exit 2). Exit 0; 1 when rows were refused
    /// and nothing was written; 2 when some rows were written and some refused; 130 when
    /// interrupted. The database is the server's (DATABASE_URL, else DATABASE_PATH).
    Import(ImportArgs),
    /// Copies a whole database between SQLite and PostgreSQL, verified (ADR 0041).
    ///
    /// Copies the whole database (every catalog, with ids, versions, positions, history and
    /// idempotency keys) from one SQLite file or PostgreSQL database to another, in one target
    /// transaction verified by counts and a checksum before it commits. The target
    /// must be empty unless --force.
    Migrate(MigrateArguments),
    /// Writes a consistent copy of the live SQLite database to a new file.
    ///
    /// Copies DATABASE_PATH, safe while the backend and stdio apps write to it. PostgreSQL: use
    /// pg_dump.
    Backup(BackupArgs),
    /// Puts a backup in place of DATABASE_PATH after verifying it.
    ///
    /// Refused while a backend or a stdio app has the database open. PostgreSQL: use pg_restore.
    Restore(RestoreArgs),
}

impl Settings {
    /// The settings of this process's command line and environment, where a variable set to the
    /// empty string counts as unset, for every setting (`DATABASE_URL=` is no `DATABASE_URL`;
    /// `PORT=` is the default port): what `env -i`, a compose file's `${NAME}` of an unset name,
    /// or `-e NAME=` leave is read as the absence it stands for. Exits with clap's message on a
    /// command line it cannot parse, as `Settings::parse` does.
    #[must_use]
    pub fn from_command_line() -> Self {
        let command =
            without_variables(Self::command(), &|name| std::env::var_os(name).is_some_and(|value| value.is_empty()));
        Self::from_arg_matches(&command.get_matches()).unwrap_or_else(|error| error.exit())
    }

    /// The database of the settings (`DATABASE_URL`, else `DATABASE_PATH`).
    #[must_use]
    pub fn database(&self) -> Database {
        Database { url: self.database_url.clone(), path: self.database_path.clone() }
    }
}

/// Where the database is: the app's own settings (DATABASE_URL, else DATABASE_PATH).
#[derive(Debug, Clone)]
pub struct Database {
    /// `DATABASE_URL`, when set.
    pub url: Option<String>,
    /// `DATABASE_PATH`.
    pub path: PathBuf,
}

impl Database {
    /// Opens (and migrates) it, as a start would.
    ///
    /// # Errors
    /// [`courses_domain::DatabaseSettingError`], naming the setting to change.
    pub fn open(&self) -> anyhow::Result<OpenedDatabase> {
        Ok(super::startup::open_database(self.url.as_deref(), &self.path)?)
    }
}

/// `command` (and its subcommands) without the environment fallback of the settings whose
/// variable `empty` says is set but empty, so that clap reads them as unset (their default, or
/// none) instead of parsing an empty value. The stdio app has the same rule.
fn without_variables(command: clap::Command, empty: &dyn Fn(&std::ffi::OsStr) -> bool) -> clap::Command {
    command
        .mut_args(|arg| match arg.get_env() {
            Some(name) if empty(name) => arg.env(None::<&'static str>),
            _ => arg,
        })
        .mut_subcommands(|subcommand| without_variables(subcommand, empty))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variable_of(command: &clap::Command, id: &str) -> Option<String> {
        let arg = command.get_arguments().find(|arg| arg.get_id() == id).expect("the argument");
        arg.get_env().map(|name| name.to_string_lossy().into_owned())
    }

    #[test]
    fn a_variable_set_but_empty_is_not_read_and_the_others_still_are() {
        let command = without_variables(Settings::command(), &|name| name == "DATABASE_URL" || name == "KEYS_FILE");
        assert_eq!(variable_of(&command, "database_url"), None);
        assert_eq!(variable_of(&command, "keys_file"), None);
        assert_eq!(variable_of(&command, "database_path").as_deref(), Some("DATABASE_PATH"));
        let settings = Settings::from_arg_matches(&command.get_matches_from(["mcp-cursos-backend"])).expect("settings");
        assert_eq!(settings.database_url, None);
    }
}

//! The mcp-cursos HTTP backend: the server library over Streamable HTTP, behind an API key.
//!
//! [`app`] builds the whole router (tests drive it directly); [`serve`] runs it on a listener
//! (HTTP/1.1, `TCP_NODELAY`, the header-read timeout and the connection cap of
//! [`ConnectionLimits`], a graceful shutdown). The binary only reads
//! its [`Settings`], opens the store and calls these.
//!
//! | route | auth | what |
//! |---|---|---|
//! | `POST /mcp` | `Authorization: Bearer <key>` | MCP over Streamable HTTP (sessions by default, or stateless) |
//! | `GET`, `DELETE /mcp` | same | the session's stream, closing a session (204; stateful mode; 405 when stateless) |
//! | `GET /health` | none, any `Host` | liveness, open sessions and live-update listeners |
//! | `GET /ready` | none, any `Host` | readiness: 200 when the database answers and can take durable writes, 503 with a `reason` otherwise |
//! | `GET /metrics` | none (only with `METRICS=true`) | Prometheus metrics: requests by method and status, latencies, sessions, subscriptions, pool |
//!
//! Every route first passes the Host/Origin check ([`RequestGuard`]): 400 for a repeated header,
//! 403 otherwise (the probes only the first, ADR 0029); then CORS answers allowed origins
//! (preflights without a key). Then every
//! `/mcp` request is authenticated by the [`Keyring`] (401 otherwise), counted against its key's
//! [`RateLimit`] when one is set (429 otherwise), has its body checked (400 with a JSON-RPC error
//! when it is not JSON-RPC) and its key's open sessions counted (429 over the cap), and reaches rmcp carrying its
//! [`Caller`](mcp_server::Caller) in the request extensions: the server reads the caller's scope
//! there on every call.
//!
//! This file is only the crate's face: each item is re-exported from its home in `http/` (the
//! router and what a request meets), `keys/` or [`commands`] (one file per subcommand).

#![deny(missing_docs)]

mod atomic_file;
pub mod commands;
mod http;
mod keys;
mod logging;

pub use commands::serve::{ClientConfiguration, client_configurations, generated_key_message};
pub use commands::settings::{Command, Settings};
pub use commands::{health as probe, progress, startup};
pub use commands::{keys::KeysCommand, migrate::MigrateArguments};
pub use http::connections::{
    ConnectionCapError, ConnectionLimits, DEFAULT_MAX_CONNECTIONS, RESERVED_DESCRIPTORS, raise_open_files_limit, serve,
};
pub use http::guard::{AllowedHostError, RequestGuard, exposure_warning, is_loopback_host};
pub use http::jsonrpc_body::BODY_READ_TIMEOUT;
pub use http::metrics::{MAX_TARGET_CHARS, MCP_METHODS, Metrics, RequestLabel, RequestTimer, method_label};
pub use http::rate_limit::{RateLimit, RetryAfter};
pub use http::router::{
    Access, AppConfig, CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, MAX_REQUEST_BODY_BYTES, SessionMode, app,
};
pub use keys::api_key::{ApiKey, ApiKeyError};
pub use keys::key_name::{KeyName, KeyNameError};
pub use keys::keyring::{Keyring, RELOAD_INTERVAL, Reload};
pub use keys::keys_file::{
    KeyCommandError, KeyEntry, KeyHash, KeysFile, KeysFileError, LineError, create_key, create_key_and_show,
    create_key_in, revoke_key,
};
pub use logging::{LogFormat, install_logging};

/// `migrate`, `backup` and `restore` (ADR 0041), at their former path.
pub mod migrate {
    pub use crate::commands::backup::run as backup_command;
    pub use crate::commands::migrate::run as migrate_command;
    pub use crate::commands::restore::run as restore_command;
}

/// `export` and `import` (ADR 0040), at their former path.
pub mod transfer {
    pub use crate::commands::export::{ExportArgs, export};
    pub use crate::commands::import::{EXIT_SOME_REFUSED, Format, ImportArgs, import};
    pub use crate::commands::progress::EXIT_INTERRUPTED;
    pub use crate::commands::settings::Database;
}

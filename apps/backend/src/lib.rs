//! The mcp-cursos HTTP backend: the server library over Streamable HTTP, behind an API key.
//!
//! [`app`] builds the whole router (tests drive it directly); [`serve`] runs it on a listener
//! (HTTP/1.1, `TCP_NODELAY`, the header-read timeout and the connection cap of
//! [`ConnectionLimits`], a graceful shutdown). The binary only reads
//! its [`Settings`], opens the store and calls these.
//!
//! | route | auth | what |
//! |---|---|---|
//! | `POST /mcp` | `Authorization: Bearer <key or access token>` | MCP over Streamable HTTP (sessions by default, or stateless) |
//! | `GET`, `DELETE /mcp` | same | the session's stream, closing a session (204; stateful mode; 405 when stateless) |
//! | `GET /health` | none, any `Host` | liveness, open sessions and live-update listeners |
//! | `GET /ready` | none, any `Host` | readiness: 200 when the database answers and can take durable writes, 503 with a `reason` otherwise |
//! | `GET /.well-known/oauth-protected-resource[/mcp]` | none (only with `OAUTH_ISSUER`) | the protected-resource metadata (RFC 9728, ADR 0043) |
//! | `GET /metrics` | none (only with `METRICS=true`) | Prometheus metrics: requests by method and status, latencies, sessions, subscriptions, pool |
//!
//! Every route first passes the Host/Origin check ([`RequestGuard`]): 400 for a repeated header,
//! 403 otherwise (the probes only the first, ADR 0029); then CORS answers allowed origins
//! (preflights without a key). Then every
//! `/mcp` request is authenticated by the [`Keyring`] or, with OAuth, by the
//! [`ResourceServer`](oauth::verifier::ResourceServer) (401 otherwise, 403 for a missing scope), counted against its key's
//! [`RateLimit`] when one is set (429 otherwise), has its body checked (400 with a JSON-RPC error
//! when it is not JSON-RPC) and its key's open sessions counted (429 over the cap), and reaches rmcp carrying its
//! [`Caller`](mcp_server::Caller) in the request extensions: the server reads the caller's scope
//! there on every call.
//!
//! The folders are the layers, each using only those after it: [`commands`] (one file per
//! subcommand; `serve` is the server's start) → [`http`] (the router and what a request meets) →
//! [`oauth`] (access tokens) → [`keys`]; [`logging`] and [`allocator`] are leaves. This file is only the crate's face.

#![deny(missing_docs)]

pub mod allocator;
mod atomic_file;
pub mod commands;
pub mod http;
pub mod keys;
pub mod logging;
pub mod oauth;

pub use commands::settings::Settings;
pub use http::connections::{ConnectionLimits, serve};
pub use http::guard::RequestGuard;
pub use http::rate_limit::RateLimit;
pub use http::router::{Access, AppConfig, SessionMode, app};
pub use keys::keyring::Keyring;
pub use logging::install_logging;

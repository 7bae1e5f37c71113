//! The HTTP front: the [router](router::app) with its `/mcp` gate, and what a request meets on its
//! way to rmcp (the Host/Origin [guard], the [body check](jsonrpc_body), the
//! [rate limit](rate_limit), the [session cap](session_cap), the [metrics]), and the accept loop
//! with its [connection limits](connections). Reads no setting: its callers hand it an
//! [`AppConfig`](router::AppConfig).

#[cfg(test)]
mod app_tests;
pub mod connections;
pub mod guard;
pub mod jsonrpc_body;
pub mod metrics;
pub mod rate_limit;
pub mod refusal;
pub mod router;
pub mod session_cap;
pub mod shares;

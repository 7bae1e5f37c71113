//! The mcp-cursos MCP server: every resource, tool and prompt of the catalog, on the `rmcp` SDK.
//!
//! [`CursosServer`] is the one registration point (see its module docs for the whole surface).
//! Both apps, stdio and Streamable HTTP, serve this same handler, so behaviour matches on both
//! transports, and both build the server state with [`setup::start`].
//!
//! **API boundary:** the library that owns the MCP surface: every primitive and every Portuguese
//! wire name is defined here, and no other library knows rmcp (the backend app uses rmcp's HTTP
//! transport and reads JSON-RPC methods for its gate and metrics, defining none). It converts
//! domain values to wire types by hand ([`wire`]) and maps each domain error to exactly one MCP
//! outcome (`outcomes`).
//!
//! **Layers** (each imports only from those before it; `options`, `reloaded_file` and `container`
//! are leaves):
//!
//! ```text
//! contract/  wire shapes, argument readers, URIs, export format, prompt text, app names (no rmcp)
//! outcomes   domain results -> MCP outcomes
//! access/    caller and scope, pure policy, confirmation, the archive use-case, evidence
//! live/      the subscription hub and its admission rules
//! state      the process-wide ServerState;  policy_file  the policy file, reread
//! app, server  the MCP App's resource and metadata; the one registration point
//! setup      options -> a running ServerState, for both apps and the tests
//! ```

#![deny(missing_docs)]

mod access;
pub mod app;
pub mod container;
mod contract;
mod live;
pub mod log_writer;
mod options;
mod outcomes;
mod policy_file;
mod reads;
pub mod reloaded_file;
mod server;
pub mod setup;
mod state;
mod surface;
pub mod telemetry;

pub use contract::{portable, uris, wire};

/// The operator's policy (ADR 0036): the pure rules ([`Policy`]) and the file a running server
/// follows ([`PolicyFile`]).
pub mod policy {
    pub use crate::access::policy::*;
    pub use crate::policy_file::{PolicyFile, PolicyFileError, PolicyReload};
}

pub use access::authority::{Authority, Lapsed, Standing};
pub use access::caller::{Caller, Principal, Scope, UnknownScope};
pub use access::confirmation::ConfirmationSecretTooShort;
pub use access::policy::{Policy, PolicyError};
pub use live::hub::{HubCounts, LiveUpdateLimits, SessionCloser};
pub use options::{CallersCatalogs, ServerOptions, UnconfirmedArchive};
pub use policy_file::{PolicyFile, PolicyFileError, PolicyReload};
pub use server::CursosServer;
pub use setup::{Running, Setup, SetupError};
pub use state::ServerState;
pub use surface::INSTRUCTIONS;

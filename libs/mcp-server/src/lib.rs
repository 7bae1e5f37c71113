//! The mcp-cursos MCP server: every resource, tool and prompt of the catalog, on the `rmcp` SDK.
//!
//! [`CursosServer`] is the one registration point (see its module docs for the whole surface).
//! Both apps, stdio and Streamable HTTP, serve this same handler, so behaviour matches on both
//! transports.
//!
//! **API boundary:** this is the only library that knows rmcp and the contract's Portuguese wire
//! names. It converts domain values to wire types by hand ([`wire`]) and maps each domain error
//! to exactly one MCP outcome (`outcomes`).

#![deny(missing_docs)]

pub mod app;
mod arguments;
mod caller;
mod confirmation;
mod course_text;
mod evidence;
mod hub;
mod outcomes;
pub mod policy;
pub mod portable;
mod prompts;
pub mod reloaded_file;
mod server;
pub mod setup;
mod state;
pub mod uris;
pub mod wire;

pub use caller::{Caller, Scope, UnknownScope};
pub use confirmation::ConfirmationSecretTooShort;
pub use hub::{HubCounts, LiveUpdateLimits, SessionCloser};
pub use policy::{Policy, PolicyError, PolicyFile, PolicyFileError, PolicyReload};
pub use server::{CursosServer, INSTRUCTIONS};
pub use setup::{Running, Setup, SetupError};
pub use state::{ServerOptions, ServerState, UnconfirmedArchive};

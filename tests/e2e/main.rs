//! End-to-end tests: the real `mcp-cursos-stdio` and `mcp-cursos-backend` binaries as child
//! processes, on real SQLite files, over stdin/stdout and loopback HTTP, driven by the rmcp client
//! and by plain HTTP requests. One test binary for all of them.

mod at_write;
mod cli_backend;
mod cli_stdio;
mod deployment;
mod durability;
mod faults;
mod generated_key;
mod http_edges;
mod live_updates;
mod migrate;
mod operations;
mod persistence;
mod policy;
mod probe;
mod scenario;
mod security;
mod soak;
mod standing;
mod stdio_lines;
mod support;
mod tenants;
mod transfer;
mod transports;

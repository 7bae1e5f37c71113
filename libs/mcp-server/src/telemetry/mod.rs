//! OpenTelemetry (issue 27, ADR 0051): one server span per MCP request and the
//! `mcp.server.operation.duration` histogram, named and attributed per the OpenTelemetry MCP semantic
//! conventions, exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or a per-signal endpoint)
//! is set, and off otherwise.
//!
//! - `conventions.rs`: the attribute names and values of the conventions (ours, not the deprecated
//!   constants of `opentelemetry-semantic-conventions`).
//! - `pipeline.rs`: [`install`] reads the standard `OTEL_*` variables and builds the exporters, the
//!   bounded batch processor, the periodic metric reader and the `tracing` layer both apps add.
//! - `traced.rs`: [`Traced`], the wrapper around a handler that makes each request's and
//!   notification's span (its parent from `_meta.traceparent`/`tracestate`, the HTTP `traceparent`
//!   linked or, failing `_meta`, the parent) and records its duration, and a session's when it ends.
//! - `refused.rs`: [`record_refused`], the span of an HTTP request rmcp answered before any
//!   handler method ([`HandlerReached`] tells which).
//! - `kept.rs`: [`McpHistograms`], the same two histograms kept in memory for the backend's
//!   Prometheus endpoint.
//!
//! **Invariant:** telemetry knows the server only through rmcp's `ServerHandler`: it imports
//! nothing of this crate but itself, and never records a key, a token, a title, an argument or an
//! error message (only method, tool or prompt names, URIs, codes).

mod conventions;
mod kept;
mod pipeline;
mod refused;
mod traced;

pub use conventions::SPAN_TARGET;
pub use kept::McpHistograms;
pub use pipeline::{SHUTDOWN, Telemetry, TelemetryLayer, install, started};
pub use refused::{HandlerReached, is_on, record_refused};
pub use traced::{SessionTransport, Traced};

//! Names from the OpenTelemetry MCP semantic conventions (status Development,
//! `open-telemetry/semantic-conventions-genai` `model/mcp/`) and the database ones the store's
//! spans use. Kept here as plain constants: the `opentelemetry-semantic-conventions` crate has them
//! only behind an experimental feature, all deprecated (moved to the GenAI repository).

/// The `tracing` target of every span meant for OpenTelemetry (the request's and the store's):
/// the OpenTelemetry layer lets only this target through (not rmcp's session-long span, not the
/// exporter's own HTTP client), and at level TRACE the log lines never show these spans.
pub const SPAN_TARGET: &str = "mcp_cursos::span";

/// The histogram of the server's operations, in seconds.
pub(crate) const OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// The histogram of the sessions that ended, in seconds.
pub(crate) const SESSION_DURATION: &str = "mcp.server.session.duration";

/// The conventions' explicit bucket boundaries (seconds) for the MCP histograms.
pub(crate) const DURATION_BOUNDARIES: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

pub(crate) const METHOD_NAME: &str = "mcp.method.name";
pub(crate) const TOOL_NAME: &str = "gen_ai.tool.name";
pub(crate) const PROMPT_NAME: &str = "gen_ai.prompt.name";
pub(crate) const OPERATION_NAME: &str = "gen_ai.operation.name";
pub(crate) const PROTOCOL_VERSION: &str = "mcp.protocol.version";
pub(crate) const NETWORK_TRANSPORT: &str = "network.transport";
pub(crate) const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
pub(crate) const ERROR_TYPE: &str = "error.type";
pub(crate) const RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";

/// `gen_ai.operation.name` of a `tools/call`.
pub(crate) const EXECUTE_TOOL: &str = "execute_tool";
/// `error.type` of a `tools/call` answered with `isError: true`.
pub(crate) const TOOL_ERROR: &str = "tool_error";
/// A tool or prompt name that is not registered, on a metric (a client could send any name).
pub(crate) const OTHER: &str = "_OTHER";

/// The JSON-RPC codes of a caller's mistake, which the conventions say SHOULD NOT count as a
/// server error (the span keeps `error.type` but not the status ERROR).
pub(crate) const CALLER_MISTAKES: [i32; 5] = [-32700, -32600, -32601, -32602, -32002];

/// The longest tool name, prompt name or URI put in a span (longer ones are cut).
pub(crate) const MAX_TARGET_CHARS: usize = 200;

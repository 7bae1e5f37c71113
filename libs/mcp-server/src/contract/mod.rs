//! The contract on the wire, with no protocol machinery: the JSON shapes and their Portuguese
//! names, the readers of tool arguments, the resource URIs, the export format, the prompt's text
//! and the app's names. **Nothing here knows the MCP SDK**: the handler (`crate::server`) and
//! the outcomes (`crate::outcomes`) turn these into MCP messages.

pub(crate) mod arguments;
pub(crate) mod course_text;
pub mod portable;
pub(crate) mod prompt;
pub(crate) mod ui;
pub mod uris;
pub mod wire;

/// A JSON object, as tool arguments and schemas are (the very type the SDK calls `JsonObject`).
pub(crate) type JsonObject = serde_json::Map<String, serde_json::Value>;

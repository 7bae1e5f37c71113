//! The catalog's MCP App (`io.modelcontextprotocol/ui`, ADR 0039): the HTML view, the resource
//! that serves it, and how a request tells whether its client renders apps.
//!
//! The view is one checked-in file, `ui/catalogo.html`, with its script and styles inline, so it
//! needs no origin but the host's bridge: its resource declares an empty CSP. It reaches the server
//! only through the host, with `tools/call` and `resources/read`; what it may call is registered
//! with everything else in [`crate::server`].
//!
//! **Only clients that declare the extension are offered any of this** (the app resource, the
//! entry tool and the app-only tools): every other client's `tools/list` and `resources/list` are
//! what they were before the app existed, and a call to an app tool from such a client is an
//! unknown tool.

use rmcp::RoleServer;
use rmcp::model::{JsonObject, MetaObject, Resource, ResourceContents};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

// The names are the contract's; re-exported so that `mcp_server::app` shows the whole app.
pub use crate::contract::ui::{
    APP_BUDGET_BYTES, APP_HTML, APP_MIME_TYPE, APP_TOOLS, APP_URI, ARCHIVE_TOOL, ENTRY_TOOL, SEARCH_TOOL, UI_EXTENSION,
    is_app_tool,
};

/// Whether this request's client renders MCP Apps: it declared the extension (in `initialize`
/// on the 2025 era, in the request's `_meta` on 2026-07-28), and, if it listed the MIME types it
/// renders, this app's among them.
pub(crate) fn declared_by(context: &RequestContext<RoleServer>) -> bool {
    let Some(capabilities) = context.client_capabilities() else {
        return false;
    };
    let Some(settings) = capabilities.extensions.as_ref().and_then(|extensions| extensions.get(UI_EXTENSION)) else {
        return false;
    };
    match settings.get("mimeTypes") {
        None => true,
        Some(Value::Array(types)) => types.iter().any(|mime| mime.as_str() == Some(APP_MIME_TYPE)),
        Some(_) => false,
    }
}

/// The app's `_meta.ui` for its resource: no origin at all (every list empty), a border asked
/// for so that the table reads as a panel of its own.
fn resource_ui_meta() -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(
        "ui".to_owned(),
        json!({
            "csp": { "connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": [] },
            "prefersBorder": true
        }),
    );
    MetaObject(meta)
}

/// The app's entry in `resources/list`.
pub(crate) fn app_resource() -> Resource {
    Resource::new(APP_URI, "catalogo-interface")
        .with_title("Catálogo de cursos (interface)")
        .with_description(
            "Interface do catálogo para clientes que exibem MCP Apps: tabela paginada, busca, detalhe com histórico, \
             cadastro, edição e arquivamento.",
        )
        .with_mime_type(APP_MIME_TYPE)
        .with_size(u64::try_from(APP_HTML.len()).unwrap_or(u64::MAX))
        .with_meta(resource_ui_meta())
}

/// What `resources/read` of [`APP_URI`] answers.
pub(crate) fn app_contents() -> ResourceContents {
    ResourceContents::text(APP_HTML, APP_URI).with_mime_type(APP_MIME_TYPE).with_meta(resource_ui_meta())
}

/// `_meta` of the entry tool: the app that shows its result, for the model and the app.
pub(crate) fn entry_tool_meta() -> MetaObject {
    tool_meta(json!({ "resourceUri": APP_URI, "visibility": ["model", "app"] }))
}

/// `_meta` of a tool only the app may call: hosts keep it from the model.
pub(crate) fn app_only_tool_meta() -> MetaObject {
    tool_meta(json!({ "resourceUri": APP_URI, "visibility": ["app"] }))
}

fn tool_meta(ui: Value) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert("ui".to_owned(), ui);
    MetaObject(meta)
}

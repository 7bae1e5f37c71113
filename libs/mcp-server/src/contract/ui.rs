//! The names of the catalog's MCP App (`io.modelcontextprotocol/ui`, ADR 0039) on the wire:
//! the extension, the MIME type, the resource URI, the view itself and the tools only a client
//! that renders apps is offered. How they are served is `crate::app`'s.

/// The extension's identifier in a client's `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an MCP App's HTML (the extension's profile of `text/html`).
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The app's resource URI.
pub const APP_URI: &str = "ui://cursos/catalogo";

/// The app itself: HTML with its script and styles inline.
pub const APP_HTML: &str = include_str!("../../ui/catalogo.html");

/// The most bytes the app may have: a host loads it into every conversation that opens the
/// catalog, so it stays small (checked by the contract tests).
pub const APP_BUDGET_BYTES: usize = 60 * 1024;

/// The entry tool: read-only, its result the first page of the catalog, shown in the app.
pub const ENTRY_TOOL: &str = "ver_catalogo";

/// App-only: the catalog's search (the same one completion uses), for the view's search box.
pub const SEARCH_TOOL: &str = "interface_buscar_cursos";

/// App-only: archiving with the question shown by the view itself (ADR 0039).
pub const ARCHIVE_TOOL: &str = "interface_arquivar_curso";

/// Every tool offered only to clients that declare the extension.
pub const APP_TOOLS: [&str; 3] = [ENTRY_TOOL, SEARCH_TOOL, ARCHIVE_TOOL];

/// Whether `tool` is one of the app's tools.
#[must_use]
pub fn is_app_tool(tool: &str) -> bool {
    APP_TOOLS.contains(&tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_fits_its_budget_and_names_no_origin() {
        assert!(APP_HTML.len() < APP_BUDGET_BYTES, "{} bytes", APP_HTML.len());
        for origin in ["http://", "https://", "//cdn", "src=\"http"] {
            assert!(!APP_HTML.contains(origin), "the app must load nothing from elsewhere: {origin}");
        }
        assert!(APP_HTML.contains("<html lang=\"pt-BR\">"), "a Portuguese interface");
    }
}

//! `peer_rmcp`: peer (b) of the HTTP benchmark, the SDK's own ceiling. The smallest rmcp 3.11
//! server that answers the same `resources/read` as mcp-cursos: one course, its JSON text built
//! once at start and kept in memory, served by rmcp's `StreamableHttpService` on axum with the
//! same transport settings as `mcp-cursos-backend` (JSON responses without sessions, or SSE with
//! sessions). No auth, no Host check, no database: whatever mcp-cursos costs beyond this is ours.
//!
//! ```text
//! peer_rmcp --port 0 --session-mode stateless   # or stateful
//! ```

use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use clap::{Parser, ValueEnum};
use rmcp::model::{
    ErrorData, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};

/// The one course, as mcp-cursos shapes `cursos://{uuid}`.
const COURSE_ID: &str = "0b5c4f8e-6a63-4c51-9d7e-2f0b8f0c1a11";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SessionMode {
    Stateful,
    Stateless,
}

/// Minimal rmcp peer of the HTTP benchmark.
#[derive(Debug, Parser)]
struct Settings {
    /// Loopback port (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// `stateless`: JSON responses, no session; `stateful`: sessions, SSE responses.
    #[arg(long, value_enum, default_value_t = SessionMode::Stateless)]
    session_mode: SessionMode,
}

/// The handler: one course in memory.
#[derive(Debug, Clone)]
struct MemoryServer {
    uri: Arc<str>,
    json: Arc<str>,
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != *self.uri {
            return Err(ErrorData::resource_not_found("recurso não encontrado", None));
        }
        let contents = ResourceContents::text(self.json.to_string(), request.uri).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let settings = Settings::parse();
    let course = serde_json::json!({
        "id": COURSE_ID,
        "titulo": "Introdução a Rust para Iniciantes 0000123",
        "cargaHoraria": 40,
        "arquivado": false,
        "versao": 1,
        "criadoEm": "2026-11-30T04:40:22.000Z",
        "atualizadoEm": "2026-11-30T04:40:22.000Z",
    });
    let handler = MemoryServer { uri: format!("cursos://{COURSE_ID}").into(), json: course.to_string().into() };
    let stateful = settings.session_mode == SessionMode::Stateful;
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(stateful)
        .with_json_response(!stateful)
        .disable_allowed_hosts();
    let factory = move || Ok(handler.clone());
    let router = if stateful {
        Router::new()
            .nest_service("/mcp", StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config))
    } else {
        Router::new()
            .nest_service("/mcp", StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config))
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", settings.port)).await.context("cannot listen")?;
    let address = listener.local_addr()?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    eprintln!("peer_rmcp ({:?}) listening on http://{address}/mcp", settings.session_mode);
    axum::serve(listener, router).await.context("the HTTP server failed")
}

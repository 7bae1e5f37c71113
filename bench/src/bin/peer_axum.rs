//! `peer_axum`: peer (a) of the HTTP benchmark, the most this machine allows. A bare axum handler
//! on `POST /mcp` that returns a fixed JSON body, the same bytes as a `resources/read` answer of
//! `cursos://{uuid}`, without reading the request. No MCP, no auth, no database: the floor of
//! what any HTTP server on hyper pays per request (accept, parse, route, write).
//!
//! ```text
//! peer_axum --port 0   # prints "listening on http://127.0.0.1:PORT/mcp" on stderr
//! ```

use anyhow::{Context, Result};
use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use clap::Parser;

/// A course as `resources/read` answers it: the JSON-RPC envelope and a course's JSON as text.
const BODY: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"cursos://0b5c4f8e-6a63-4c51-9d7e-2f0b8f0c1a11","#,
    r#""mimeType":"application/json","text":"{\"id\":\"0b5c4f8e-6a63-4c51-9d7e-2f0b8f0c1a11\","#,
    r#"\"titulo\":\"Introdução a Rust para Iniciantes 0000123\",\"cargaHoraria\":40,\"arquivado\":false,"#,
    r#"\"versao\":1,\"criadoEm\":\"2026-11-30T04:40:22.000Z\",\"atualizadoEm\":\"2026-11-30T04:40:22.000Z\"}"}]}}"#
);

/// Bare axum peer of the HTTP benchmark.
#[derive(Debug, Parser)]
struct Settings {
    /// Loopback port (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

#[tokio::main]
async fn main() -> Result<()> {
    let settings = Settings::parse();
    let router = Router::new().route("/mcp", post(|| async { ([(CONTENT_TYPE, "application/json")], BODY) }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", settings.port)).await.context("cannot listen")?;
    let address = listener.local_addr()?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |stream| {
        let _ = stream.set_nodelay(true);
    });
    eprintln!("peer_axum listening on http://{address}/mcp");
    axum::serve(listener, router).await.context("the HTTP server failed")
}

//! The whole MCP surface, compared with the committed `tests/snapshots/surface.json`, so that a
//! change to the contract shows in review: the server's introduction (protocol version,
//! capabilities, instructions, serverInfo) and the answers of `tools/list`, `resources/list`,
//! `resources/templates/list` and `prompts/list`, on both eras, for a client with and without the
//! MCP App extension, for a full-scope (`escrita`) and a read-only (`leitura`) caller, and with
//! the opt-in read-only tools. The catalog is empty, so `resources/list` holds no course: data is
//! not contract. Nothing is normalized: every field is deterministic (the only one that moves
//! with a release is `serverInfo.version`, from Cargo).
//!
//! Regenerate after an intended change: `UPDATE_SNAPSHOTS=1 cargo test -p mcp-server --test
//! contract surface::`, then review and commit the file.

use mcp_server::{Caller, Scope};
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;

use super::apps::RendersApps;
use super::*;

const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots/surface.json");

/// A server transport that hands every request to the server as the HTTP backend does after
/// authenticating a key: with the request's parts, carrying `caller`.
struct AsCaller<T> {
    inner: T,
    caller: Caller,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for AsCaller<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut message = self.inner.receive().await?;
        if let JsonRpcMessage::Request(request) = &mut message {
            let (mut parts, ()) = http::Request::new(()).into_parts();
            parts.extensions.insert(self.caller.clone());
            rmcp::model::GetExtensions::extensions_mut(&mut request.request).insert(parts);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// What one client, as one caller, is offered.
async fn surface<H: rmcp::ClientHandler>(handler: H, state: &ServerState, era: Era, scope: Scope) -> Value {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_io);
    let transport = AsCaller { inner: AsyncRwTransport::new_server(read, write), caller: Caller::new("leitor", scope) };
    let server = CursosServer::new(state);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(transport).await {
            let _ = running.waiting().await;
        }
    });
    let client = era.connect(handler, client_io).await.expect("connected");
    let surface = json!({
        "server": json(&*client.peer_info().expect("peer info")),
        "tools/list": json(&client.list_tools(None).await.expect("tools/list")),
        "resources/list": json(&client.list_resources(None).await.expect("resources/list")),
        "resources/templates/list": json(&client.list_resource_templates(None).await.expect("templates/list")),
        "prompts/list": json(&client.list_prompts(None).await.expect("prompts/list")),
    });
    client.cancel().await.expect("close");
    surface
}

fn json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("json")
}

/// Every variant, keyed `<protocol version>/<with or without apps>/<scope>[/resource-tools]`.
async fn live_surface() -> Value {
    let mut variants = serde_json::Map::new();
    for resource_tools in [false, true] {
        let (catalog, _database) = open_catalog();
        let state = ServerState::new(catalog, ServerOptions { resource_tools, ..ServerOptions::default() });
        for era in ERAS {
            let version = era.revision();
            for scope in [Scope::Write, Scope::Read] {
                for apps in [false, true] {
                    if resource_tools && (apps || scope == Scope::Read) {
                        continue;
                    }
                    let surface = if apps {
                        surface(RendersApps::HTML, &state, era, scope).await
                    } else {
                        surface(Answering::CONFIRMS, &state, era, scope).await
                    };
                    let client = if apps { "with-apps" } else { "without-apps" };
                    let options = if resource_tools { "/resource-tools" } else { "" };
                    variants.insert(format!("{version}/{client}/{scope}{options}"), surface);
                }
            }
        }
    }
    let mut surface = Value::Object(variants);
    surface.sort_all_objects();
    surface
}

/// Where `expected` and `actual` differ, one line each (`path: expected -> actual`); array items
/// are named by their `name`, `uri` or `uriTemplate` when they have one.
fn differences(path: &str, expected: Option<&Value>, actual: Option<&Value>, found: &mut Vec<String>) {
    let item_name = |item: &Value, index: usize| {
        ["name", "uri", "uriTemplate"]
            .iter()
            .find_map(|key| item[*key].as_str().map(str::to_owned))
            .unwrap_or_else(|| index.to_string())
    };
    match (expected, actual) {
        (Some(Value::Object(expected)), Some(Value::Object(actual))) => {
            let added = actual.keys().filter(|key| !expected.contains_key(*key));
            for key in expected.keys().chain(added) {
                differences(&format!("{path}.{key}"), expected.get(key), actual.get(key), found);
            }
        }
        (Some(Value::Array(expected)), Some(Value::Array(actual))) => {
            for index in 0..expected.len().max(actual.len()) {
                let name = item_name(expected.get(index).or(actual.get(index)).unwrap_or(&Value::Null), index);
                differences(&format!("{path}[{name}]"), expected.get(index), actual.get(index), found);
            }
        }
        (expected, actual) if expected != actual => {
            let texts = [expected, actual].map(|value| value.map_or_else(|| "(absent)".to_owned(), Value::to_string));
            // Long texts are shown from a little before where they part.
            let same = texts[0].chars().zip(texts[1].chars()).take_while(|(left, right)| left == right).count();
            let skip = same.saturating_sub(40);
            let [expected, actual] = texts.map(|text| {
                let shown: String = text.chars().skip(skip).take(120).collect();
                let (before, after) =
                    (if skip > 0 { "…" } else { "" }, if text.chars().count() > skip + 120 { "…" } else { "" });
                format!("{before}{shown}{after}")
            });
            found.push(format!("{path}: {expected} -> {actual}"));
        }
        _ => {}
    }
}

#[tokio::test]
async fn the_whole_mcp_surface_is_the_committed_snapshot() {
    let live = live_surface().await;
    let text = format!("{}\n", serde_json::to_string_pretty(&live).expect("json"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|value| value == "1") {
        let folder = std::path::Path::new(SNAPSHOT).parent().expect("a folder");
        std::fs::create_dir_all(folder).and_then(|()| std::fs::write(SNAPSHOT, &text)).expect("write the snapshot");
        eprintln!("UPDATE_SNAPSHOTS=1: rewrote {SNAPSHOT}; review and commit it");
        return;
    }
    let committed = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
    if committed == text {
        return;
    }
    let expected: Option<Value> = serde_json::from_str(&committed).ok();
    let mut found = Vec::new();
    differences("surface", expected.as_ref(), Some(&live), &mut found);
    if found.is_empty() {
        found.push("(the same values, written otherwise: rewrite the file)".to_owned());
    }
    let shown = found.len().min(40);
    panic!(
        "the MCP surface differs from {SNAPSHOT} ({} difference(s){}):\n{}\nIf the change is intended, run \
         `UPDATE_SNAPSHOTS=1 cargo test -p mcp-server --test contract surface::`, review the file's diff and commit it.",
        found.len(),
        if shown < found.len() { format!(", the first {shown}") } else { String::new() },
        found[..shown].join("\n"),
    );
}

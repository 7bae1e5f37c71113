//! Fuzz target: one `POST /mcp` through the backend's whole router, in process.
//!
//! Input layout: the first byte chooses the headers, the rest is the request body, sent as is
//! (invalid UTF-8, truncated JSON and all).
//!
//! - `selector % 8` picks the `MCP-Protocol-Version` header: none, one of the five known versions,
//!   or one of two invalid values (see [`PROTOCOL_VERSIONS`]).
//! - `selector & 0x40` (the letters `@`..`G` in the seeds, against the digits `0`..`7`) also sends
//!   the SEP-2243 headers a 2026-07-28 client derives from the body: `Mcp-Method`, and `Mcp-Name`
//!   when the body names a tool, prompt or resource.
//!
//! Every input must be answered, within [`DEADLINE`], with one of [`EXPECTED_STATUSES`]; when the
//! body is a JSON-RPC request with a usable id, the answer must be a JSON-RPC response (a result or
//! an error) with that id. A panic anywhere (handler tasks included: libfuzzer-sys aborts from its
//! panic hook) is a crash; so is a 500.

#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode, header};
use backend::{Access, AppConfig, RequestGuard, SessionMode};
use courses_domain::{Catalog, SqliteStore};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use mcp_server::{ServerOptions, ServerState};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long one request may take, from sending it to the end of its response body. Generous: the
/// instrumented build is slow and SQLite writes go through the blocking pool, but a handler that
/// never answers is found all the same (libFuzzer's own `-timeout` is a second net behind it).
const DEADLINE: Duration = Duration::from_secs(5);

/// `MCP-Protocol-Version` values, indexed by `selector % 8`.
const PROTOCOL_VERSIONS: [Option<&str>; 8] = [
    None,
    Some("2024-11-05"),
    Some("2025-03-26"),
    Some("2025-06-18"),
    Some("2025-11-25"),
    Some("2026-07-28"),
    Some("1999-01-01"),
    Some("2026-07-28, 2025-11-25"),
];

/// What a `POST /mcp` in stateless mode may answer, always with the request's headers complete:
/// - 200: a JSON-RPC result or error (rmcp answers most protocol errors with 200),
/// - 202: a notification, accepted,
/// - 400: a body that is not a JSON-RPC message (a JSON-RPC error -32700 or -32600, ADR 0023), a bad
///   or mismatched protocol version or SEP-2243 header,
/// - 404: a method the server does not know (rmcp maps METHOD_NOT_FOUND to 404 on the 2026 era),
/// - 413: a body over `MAX_REQUEST_BODY_BYTES` (unreachable with `-max_len` below 1 MiB).
///
/// Not expected, so findings: 401/403/429 (the fuzzer sends an allowed Host, no key is needed and
/// there is no rate limit), 405/406/415 (the method, Accept and Content-Type are always right; a
/// body rmcp cannot read no longer reaches rmcp's 415), and any 5xx.
const EXPECTED_STATUSES: [StatusCode; 5] = [
    StatusCode::OK,
    StatusCode::ACCEPTED,
    StatusCode::BAD_REQUEST,
    StatusCode::NOT_FOUND,
    StatusCode::PAYLOAD_TOO_LARGE,
];

struct Harness {
    runtime: tokio::runtime::Runtime,
    router: Router,
    /// Holds the SQLite file for the life of the process.
    _database: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let database = tempfile::tempdir().expect("temporary directory");
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio runtime");
        let router = runtime.block_on(async {
            let store = SqliteStore::open(&database.path().join("cursos.db")).expect("SQLite store");
            let state = ServerState::new(
                Catalog::new(store),
                ServerOptions { resource_tools: true, legacy_subscriptions: false, ..ServerOptions::default() },
            );
            let config = AppConfig {
                access: Access::NoAuth,
                rate_limit: None,
                guard: RequestGuard::loopback(),
                session_mode: SessionMode::Stateless,
                session_idle_timeout: Duration::from_secs(60),
                metrics: false,
                max_sessions_per_key: std::num::NonZeroUsize::new(64).expect("not zero"),
            };
            backend::app(state, config, CancellationToken::new())
        });
        Harness { runtime, router, _database: database }
    })
}

fuzz_target!(|data: &[u8]| {
    let (selector, body) = data.split_first().map_or((b'0', data), |(selector, body)| (*selector, body));
    check_one_request(selector, body);
});

fn check_one_request(selector: u8, body: &[u8]) {
    let harness = harness();
    let request = build_request(selector, body);
    let request_json: Option<Value> = serde_json::from_slice(body).ok();
    let router = harness.router.clone();
    let answer = harness.runtime.block_on(async {
        tokio::time::timeout(DEADLINE, async {
            let response = router.oneshot(request).await.expect("the router is infallible");
            let status = response.status();
            let content_type = response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let bytes = read_body(response.into_body(), &content_type, request_json.as_ref()).await;
            (status, content_type, bytes)
        })
        .await
    });
    let Ok((status, content_type, response_body)) = answer else {
        panic!("no complete answer within {DEADLINE:?} (a hang) for body {:?}", String::from_utf8_lossy(body));
    };
    if std::env::var_os("FUZZ_TRACE").is_some() {
        eprintln!(
            "selector {:?} -> {status} {content_type}: {}",
            char::from(selector),
            String::from_utf8_lossy(&response_body)
        );
    }
    assert!(
        EXPECTED_STATUSES.contains(&status),
        "unexpected status {status} ({content_type}: {}) for body {:?}",
        String::from_utf8_lossy(&response_body),
        String::from_utf8_lossy(body)
    );
    let request_id = request_json.as_ref().and_then(request_id);
    if status == StatusCode::ACCEPTED {
        assert!(request_id.is_none(), "a request with id {request_id:?} was only accepted (202), never answered");
        return;
    }
    // rmcp answers in plain text, not JSON-RPC, when it refuses a message before handling it: 400
    // for an unsupported MCP-Protocol-Version header. A body that is not a JSON-RPC message (not
    // JSON, wrong types, numbers out of range, nesting past serde_json's limit, invalid UTF-8,
    // batches) gets a JSON-RPC error from the backend. Everything else is a JSON-RPC answer.
    if !content_type.starts_with("application/json") && !content_type.starts_with("text/event-stream") {
        assert!(
            matches!(status, StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE),
            "a {status} answer that is not JSON-RPC ({content_type:?}): {:?}",
            String::from_utf8_lossy(&response_body)
        );
        return;
    }
    let messages = response_messages(&content_type, &response_body);
    let Some(answer) =
        messages.iter().rev().find(|message| message.get("result").is_some() || message.get("error").is_some())
    else {
        let listening = request_json.as_ref().and_then(|request| request.get("method"))
            == Some(&Value::from("subscriptions/listen"));
        if listening && content_type.starts_with("text/event-stream") && !messages.is_empty() {
            return; // an open listen stream: it answers only when it ends
        }
        panic!(
            "a {status} {content_type} answer with no JSON-RPC response in it: {:?}",
            String::from_utf8_lossy(&response_body)
        );
    };
    assert_eq!(answer.get("jsonrpc"), Some(&Value::from("2.0")), "not JSON-RPC 2.0: {answer}");
    assert!(
        answer.get("result").is_some() != answer.get("error").is_some(),
        "not exactly one of result and error: {answer}"
    );
    if let Some(error) = answer.get("error") {
        assert!(error.get("code").is_some_and(Value::is_i64), "an error without an integer code: {answer}");
        assert!(error.get("message").is_some_and(Value::is_string), "an error without a message: {answer}");
    } else {
        assert_eq!(status, StatusCode::OK, "a result with status {status}: {answer}");
    }
    if let Some(id) = request_id {
        assert_eq!(answer.get("id"), Some(id), "the answer does not carry the request's id: {answer}");
    }
}

fn build_request(selector: u8, body: &[u8]) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(version) = PROTOCOL_VERSIONS[usize::from(selector % 8)] {
        request = request.header("mcp-protocol-version", version);
    }
    if selector & 0x40 != 0
        && let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(body)
        && let Some(Value::String(method)) = message.get("method")
        && let Ok(method_header) = HeaderValue::from_str(method)
    {
        request = request.header("mcp-method", method_header);
        let name_key = match method.as_str() {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
            _ => None,
        };
        if let Some(Value::String(name)) = name_key.and_then(|key| message.get("params")?.get(key))
            && let Ok(name_header) = HeaderValue::from_str(name)
        {
            request = request.header("mcp-name", name_header);
        }
    }
    request.body(Body::from(body.to_vec())).expect("a request built from valid parts")
}

/// The whole body of a JSON answer; for an event stream, the events up to the first JSON-RPC
/// response (a stream may stay open after it: `subscriptions/listen` answers only when it ends).
async fn read_body(body: Body, content_type: &str, request: Option<&Value>) -> Vec<u8> {
    if !content_type.starts_with("text/event-stream") {
        return body.collect().await.expect("an in-memory body cannot fail").to_bytes().to_vec();
    }
    let is_listen =
        request.and_then(|request| request.get("method")).is_some_and(|method| method == "subscriptions/listen");
    let mut body = body;
    let mut collected = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("an in-memory body cannot fail").into_data() {
            collected.extend_from_slice(&data);
        }
        let messages = response_messages(content_type, &collected);
        // A listen stream stays open until the server stops: its first event shows it was accepted.
        let answered = messages.iter().any(|message| message.get("result").is_some() || message.get("error").is_some());
        if answered || (is_listen && !messages.is_empty()) {
            break;
        }
    }
    collected
}

/// The JSON-RPC id of a request, when it is one rmcp can echo: a string or an integer.
fn request_id(request: &Value) -> Option<&Value> {
    let request = request.as_object()?;
    request.get("method")?.as_str()?;
    let id = request.get("id")?;
    (id.is_string() || id.is_i64() || id.is_u64()).then_some(id)
}

/// The JSON messages of a response body: the body itself, or every `data:` line of an event stream.
fn response_messages(content_type: &str, body: &[u8]) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        String::from_utf8_lossy(body)
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    } else {
        serde_json::from_slice(body).ok().into_iter().collect()
    }
}

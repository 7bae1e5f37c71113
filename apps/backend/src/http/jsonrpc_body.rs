//! The `POST /mcp` body check: a body that is not a JSON-RPC message gets a JSON-RPC error, not
//! rmcp's plain-text 415 (ADR 0023).
//!
//! A `POST /mcp` declared `application/json` is read (at most [`MAX_REQUEST_BODY_BYTES`], within
//! [`BODY_READ_TIMEOUT`]) and parsed as the message rmcp will read. Bytes that are not JSON
//! (invalid UTF-8, a lone surrogate escape such as `"\ud800"`, a syntax error) get HTTP 400 with
//! a JSON-RPC parse error (-32700, `id` null); JSON that is not a JSON-RPC message (a batch, a
//! request without a method) gets HTTP 400 with an invalid-request error (-32600). Nothing is
//! executed. Other content types are left to rmcp (415), which is what they are.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{Value, json};

use super::metrics::RequestLabel;
use super::router::MAX_REQUEST_BODY_BYTES;

/// How long a client may take to send a request body once its head has arrived (408 after it).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A `/mcp` request's body, read once for every check of the gate (ADR 0038).
#[derive(Debug)]
pub(crate) struct CheckedBody {
    /// The whole body (at most [`MAX_REQUEST_BODY_BYTES`]).
    pub(crate) bytes: Bytes,
    /// A 2025-era `initialize` sent without `Mcp-Session-Id`: it opens an MCP session.
    pub(crate) opens_session: bool,
    /// The request's label, when the check already read it (a plain `resources/read`).
    pub(crate) label: Option<RequestLabel>,
}

/// Reads a `/mcp` request's body once (ADR 0038). A `POST` declared `application/json` is read
/// within [`BODY_READ_TIMEOUT`] (408 after it) and refused with a JSON-RPC error when it is not a
/// JSON-RPC message; any other body is read as it comes and left to rmcp. 413 over
/// [`MAX_REQUEST_BODY_BYTES`].
pub(crate) async fn read_and_check(parts: &Parts, body: Body) -> Result<CheckedBody, Response> {
    if parts.method != Method::POST || !declares_json(&parts.headers) {
        return match axum::body::to_bytes(body, MAX_REQUEST_BODY_BYTES).await {
            Ok(bytes) => Ok(CheckedBody { bytes, opens_session: false, label: None }),
            Err(_) => Err(payload_too_large()),
        };
    }
    let bytes = match tokio::time::timeout(BODY_READ_TIMEOUT, axum::body::to_bytes(body, MAX_REQUEST_BODY_BYTES)).await
    {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return Err(payload_too_large()),
        Err(_) => return Err(body_timeout()),
    };
    if let Some(uri) = plain_resource_read(&bytes) {
        let label = RequestLabel::resource_read(&uri);
        return Ok(CheckedBody { bytes, opens_session: false, label: Some(label) });
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) {
        Ok(message) => {
            let initialize = matches!(
                &message,
                ClientJsonRpcMessage::Request(request) if matches!(request.request, ClientRequest::InitializeRequest(_))
            );
            let opens_session = initialize && !parts.headers.contains_key("mcp-session-id");
            Ok(CheckedBody { bytes, opens_session, label: None })
        }
        Err(error) => Err(refuse(&error, &bytes)),
    }
}

/// The request clients send most, `resources/read` with nothing but a `uri`, recognised without
/// building rmcp's message (which costs as much again as rmcp's own parse of the same body; about
/// 4% of the backend's CPU when it serves reads, bench/RESULTS.md). Every field is read with the
/// type rmcp reads it with (`jsonrpc`, `id`) or a stricter one (`params` has only a string `uri`,
/// no other field anywhere), so a body accepted here is one rmcp accepts: the refusal and the
/// `initialize` mark are skipped only for bodies that would get neither. Returns its `uri`, from
/// which the request's label is made without reading the body a third time.
fn plain_resource_read(bytes: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainRead<'a> {
        #[serde(rename = "jsonrpc")]
        _jsonrpc: rmcp::model::JsonRpcVersion2_0,
        #[serde(rename = "id")]
        _id: rmcp::model::RequestId,
        #[serde(borrow)]
        method: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        params: PlainReadParams<'a>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct PlainReadParams<'a> {
        #[serde(borrow)]
        uri: std::borrow::Cow<'a, str>,
    }
    serde_json::from_slice::<PlainRead<'_>>(bytes)
        .ok()
        .filter(|read| read.method == "resources/read")
        .map(|read| read.params.uri)
}

/// `Content-Type: application/json` (with or without parameters), as rmcp requires.
fn declares_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// 400 with the JSON-RPC error the body deserves: -32700 when it is not JSON, -32600 when it is
/// JSON but not a JSON-RPC message (echoing its `id` when that is a string or a number).
fn refuse(error: &serde_json::Error, bytes: &[u8]) -> Response {
    // Whatever rmcp's parse stopped at (a shape error may come before a syntax error further on,
    // a number out of range is a syntax error to it), only a full parse tells JSON from not JSON.
    let (code, id, message) = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => (
            -32600,
            match value.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                _ => Value::Null,
            },
            "Requisição inválida: o corpo é JSON, mas não é uma mensagem JSON-RPC 2.0 que este servidor aceite \
             (um objeto com \"jsonrpc\": \"2.0\" e \"method\"; lotes não são aceitos)."
                .to_owned(),
        ),
        Err(not_json) => (
            -32700,
            Value::Null,
            format!(
                "Erro de análise: o corpo não é JSON válido em UTF-8 (linha {}, coluna {}).",
                not_json.line(),
                not_json.column()
            ),
        ),
    };
    tracing::warn!(target: "backend::jsonrpc_body", code, %error, "request body refused: not a JSON-RPC message");
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })),
    )
        .into_response()
}

/// The 413 every route of the gate answers for a body over the limit.
pub(crate) fn payload_too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        axum::Json(json!({ "error": "payload_too_large", "message": "the request body is over 1 MiB" })),
    )
        .into_response()
}

fn body_timeout() -> Response {
    tracing::warn!(target: "backend::jsonrpc_body", timeout = ?BODY_READ_TIMEOUT, "request refused: the body did not arrive in time");
    (
        StatusCode::REQUEST_TIMEOUT,
        axum::Json(json!({ "error": "request_timeout", "message": "the request body did not arrive within 30 s" })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &[u8]) -> Option<Value> {
        let error = serde_json::from_slice::<ClientJsonRpcMessage>(body).err()?;
        let response = refuse(&error, body);
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let body = futures_util::FutureExt::now_or_never(axum::body::to_bytes(response.into_body(), usize::MAX))
            .expect("a ready body")
            .expect("bytes");
        let message: Value = serde_json::from_slice(&body).expect("a JSON body");
        assert_eq!(message["jsonrpc"], "2.0");
        Some(json!({ "code": message["error"]["code"], "id": message["id"] }))
    }

    #[test]
    fn only_a_resources_read_with_just_a_string_uri_takes_the_short_path_and_rmcp_reads_each_such_body() {
        let plain = [
            &br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}"#[..],
            br#" {"params":{"uri":"cursos://x\u00e9"},"method":"resources\/read","id":"a","jsonrpc":"2.0"} "#,
            br#"{"jsonrpc":"2.0","id":1.0,"method":"resources/read","params":{"uri":""}}"#,
        ];
        for body in plain {
            let uri = plain_resource_read(body).expect("a plain read");
            assert_eq!(RequestLabel::resource_read(&uri), RequestLabel::of(&Method::POST, body));
            let message = serde_json::from_slice::<ClientJsonRpcMessage>(body).expect("rmcp reads it");
            assert!(
                matches!(&message, ClientJsonRpcMessage::Request(request)
                    if matches!(request.request, ClientRequest::ReadResourceRequest(_))),
                "{message:?}"
            );
        }
        let not_plain = [
            &br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":5}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","_meta":{}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"},"extra":1}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"resources/read","params":{"uri":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1.5,"method":"resources/read","params":{"uri":"x"}}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"resources/read","params":{"uri":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"uri":"x"}}"#,
            br#"{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"resources/read","params":{"uri":"x"}}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"\ud800"}}"#,
        ];
        for body in not_plain {
            assert!(plain_resource_read(body).is_none(), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn bytes_that_are_not_json_are_a_parse_error() {
        for body in [
            &b"{not json"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ud800"}}"#,
            b"",
            b"{\"jsonrpc\":\"2.0\"} x",
        ] {
            let refusal = refusal(body).expect("refused");
            assert_eq!(refusal["code"], -32700, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn json_that_is_not_a_jsonrpc_message_is_an_invalid_request() {
        for (body, id) in [
            ("[]", Value::Null),
            ("\"texto\"", Value::Null),
            (r#"{"jsonrpc":"2.0","id":1}"#, json!(1)),
            (r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#, json!("a")),
        ] {
            let refusal = refusal(body.as_bytes()).expect("refused");
            assert_eq!(refusal, json!({ "code": -32600, "id": id }), "{body}");
        }
    }

    #[test]
    fn jsonrpc_messages_pass_even_with_parameters_the_method_will_refuse() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"criar_curso","arguments":[1]}}"#,
        ] {
            assert!(refusal(body.as_bytes()).is_none(), "{body}");
        }
    }
}

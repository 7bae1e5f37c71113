//! The body of a 401 or 403: a JSON-RPC error (issue 25, item 5).
//!
//! SDK clients show a refused request's reason only when the body is a JSON-RPC error (the
//! official Python SDK otherwise says `Server returned an error response`), so a refusal by
//! authentication (401), by scope or by the Host/Origin check (403) is one, with `id: null` (the
//! request's id is not read before the refusal) and the same HTTP status and `WWW-Authenticate`.
//! `error.message` is the sentence for the person in front of the client; `error.data` keeps what
//! an operator's script reads: `error` (`unauthorized`, `insufficient_scope`, `forbidden`) and the
//! refusal's own fields.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The JSON-RPC error code of a 401: the request carries no credential this server accepts.
pub const UNAUTHORIZED: i64 = -32001;
/// The JSON-RPC error code of a 403: the credential, the host or the origin may not do this.
pub const FORBIDDEN: i64 = -32003;

/// `status` with a JSON-RPC error body: `code` for it, `message`, and `data` = `{"error": error}`
/// plus `fields`.
#[must_use]
pub fn jsonrpc_refusal(status: StatusCode, error: &str, message: &str, fields: Map<String, Value>) -> Response {
    let code = if status == StatusCode::UNAUTHORIZED { UNAUTHORIZED } else { FORBIDDEN };
    let mut data = Map::new();
    data.insert("error".to_owned(), Value::from(error));
    data.extend(fields);
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message, "data": data },
    });
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_is_a_jsonrpc_error_with_the_operators_code_in_its_data() {
        let mut fields = Map::new();
        fields.insert("scope".to_owned(), Value::from("mcp:write"));
        let response = jsonrpc_refusal(StatusCode::FORBIDDEN, "insufficient_scope", "needs mcp:write", fields);
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.expect("body");
        let body: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], FORBIDDEN);
        assert_eq!(body["error"]["message"], "needs mcp:write");
        assert_eq!(body["error"]["data"], json!({"error": "insufficient_scope", "scope": "mcp:write"}));
    }
}

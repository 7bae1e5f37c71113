//! The `/mcp` gate: one middleware around rmcp's service that checks every request in order
//! ([`mcp_gate`], ADR 0038): the key, the body, the key's sessions, then observes the request.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use mcp_server::{Caller, Scope};
use serde_json::json;

use super::jsonrpc_body;
use super::metrics::{Metrics, RequestLabel, RequestTimer};
use super::rate_limit::{RateLimit, RetryAfter};
use super::router::Access;
use super::session_cap::SessionCap;
use crate::keys::key_name::KeyName;

/// What the `/mcp` gate needs: who may call, how often, how many sessions each key may hold
/// (stateful mode), and where requests are counted.
#[derive(Debug)]
pub(crate) struct Gate {
    pub(crate) access: Access,
    pub(crate) rate_limit: Option<RateLimit>,
    pub(crate) session_cap: Option<Arc<SessionCap>>,
    pub(crate) metrics: Option<Arc<Metrics>>,
}

/// `DELETE /mcp` that closed a session: rmcp answers 202, clients expect 200 or 204 (the Python
/// SDKs log "Session termination failed: 202" otherwise; ADR 0029). Answered 204 No Content.
fn session_end_without_content(is_delete: bool, response: Response) -> Response {
    if is_delete && response.status() == StatusCode::ACCEPTED {
        let (mut parts, _body) = response.into_parts();
        parts.status = StatusCode::NO_CONTENT;
        parts.headers.remove(header::CONTENT_TYPE);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, axum::body::Body::empty());
    }
    response
}

/// The `/mcp` gate, one middleware (ADR 0038), in this order:
/// 1. the key ([`Gate::authenticate`]: 400, 401, 429);
/// 2. the body, read once ([`jsonrpc_body::read_and_check`]: 400 with a JSON-RPC error when it is
///    not JSON-RPC, 408, 413);
/// 3. the key's open sessions, for an `initialize` that opens one (429 over the cap);
/// 4. the observer: the request is labelled by its JSON-RPC method (and tool, prompt or resource)
///    and observed until its response body has been sent (for SSE, until the stream ends): one
///    `mcp request` log event per request, and the metrics when they are on;
/// 5. a `DELETE` that closed a session is answered 204 ([`session_end_without_content`]).
///
/// The request reaches rmcp carrying its [`Caller`] in its extensions.
pub(crate) async fn mcp_gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let caller = match gate.authenticate(&request) {
        Ok(caller) => caller,
        Err(refusal) => return *refusal,
    };
    let (mut parts, body) = request.into_parts();
    let checked = match jsonrpc_body::read_and_check(&parts, body).await {
        Ok(checked) => checked,
        Err(refusal) => return refusal,
    };
    let reservation = match &gate.session_cap {
        Some(cap) if checked.opens_session => match cap.admit(&caller).await {
            Ok(reservation) => Some(reservation),
            Err(refusal) => return refusal,
        },
        _ => None,
    };
    let label = checked.label.unwrap_or_else(|| RequestLabel::of(&parts.method, &checked.bytes));
    let mut timer = RequestTimer::start(gate.metrics.clone(), label, Some(caller.name().to_owned()));
    let is_delete = parts.method == axum::http::Method::DELETE;
    parts.extensions.insert(caller);
    let response = next.run(Request::from_parts(parts, axum::body::Body::from(checked.bytes))).await;
    let response = session_end_without_content(is_delete, response);
    timer.set_status(response.status().as_u16());
    if let Some(reservation) = reservation {
        reservation.settle_with(&response);
    }
    let (parts, body) = response.into_parts();
    // Frame by frame with `inspect_frame`, which keeps the body's size hint: a JSON answer keeps
    // its Content-Length instead of going out chunked (a stream wrapper, or `map_frame`, loses it). The timer lives as long as
    // the body: dropping it records the request.
    let body = http_body_util::BodyExt::inspect_frame(body, move |frame| {
        if let Some(bytes) = frame.data_ref() {
            timer.saw_response_bytes(bytes);
        }
    });
    Response::from_parts(parts, axum::body::Body::new(body))
}

impl Gate {
    /// 400 for more than one `Authorization` header, 401 with `WWW-Authenticate: Bearer` unless
    /// the request carries an accepted key, then 429 with `Retry-After` when that key is over its
    /// rate limit; otherwise the request's [`Caller`]. Keys are never logged; names are.
    fn authenticate(&self, request: &Request) -> Result<Caller, Box<Response>> {
        if request.headers().get_all(header::AUTHORIZATION).iter().nth(1).is_some() {
            // Which one would count is up to each hop of a proxy chain: none does.
            tracing::warn!(target: "backend", "request refused: more than one Authorization header");
            return Err(Box::new(
                (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({ "error": "bad_request", "message": "more than one Authorization header" })),
                )
                    .into_response(),
            ));
        }
        let caller = match &self.access {
            Access::NoAuth => Caller::new(KeyName::NO_AUTH, Scope::Write),
            Access::Keys(keyring) => {
                let presented =
                    request.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes).and_then(|value| {
                        value.get(..7).filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer ")).map(|_| &value[7..])
                    });
                match presented.map(|token| keyring.authenticate(token)) {
                    Some(Some(caller)) => caller,
                    Some(None) => return Err(Box::new(unauthorized("invalid_token", "the API key is not valid"))),
                    None => {
                        return Err(Box::new(unauthorized(
                            "invalid_request",
                            "missing Authorization: Bearer <API_KEY>",
                        )));
                    }
                }
            }
        };
        if let Some(rate_limit) = &self.rate_limit
            && let Err(retry_after) = rate_limit.check(caller.name(), Instant::now())
        {
            return Err(Box::new(too_many_requests(&caller, retry_after)));
        }
        Ok(caller)
    }
}

fn too_many_requests(caller: &Caller, retry_after: RetryAfter) -> Response {
    let seconds = retry_after.seconds();
    tracing::warn!(target: "backend", key = caller.name(), retry_after = seconds, "request refused by the rate limit");
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(json!({
            "error": "rate_limited",
            "message": format!("too many requests for this key; retry after {seconds} s"),
            "retryAfter": seconds,
        })),
    )
        .into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

fn unauthorized(code: &'static str, description: &'static str) -> Response {
    tracing::warn!(target: "backend", reason = description, "request refused by the API key check");
    let challenge = format!("Bearer realm=\"mcp-cursos\", error=\"{code}\"");
    let mut response =
        (StatusCode::UNAUTHORIZED, axum::Json(json!({ "error": "unauthorized", "message": description })))
            .into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

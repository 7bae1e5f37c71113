//! The router: [`app`] puts `/mcp` (rmcp's Streamable HTTP service behind the gate, [`mcp_gate`]:
//! every check of a request, in order), `/health`, `/ready` and `/metrics` behind the Host/Origin
//! check and CORS, once around the whole.

use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clap::ValueEnum;
use mcp_server::telemetry::{SessionTransport, Traced};
use mcp_server::{Caller, CursosServer, Scope, ServerState};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, json};
use tokio_util::sync::CancellationToken;

use super::guard::{self, RequestGuard};
use super::jsonrpc_body;
use super::metrics::{Metrics, RequestLabel, RequestTimer};
use super::rate_limit::{RateLimit, RetryAfter};
use super::refusal::jsonrpc_refusal;
use super::session_cap;
use super::shares::{ConnectionSlot, OverShare};
use crate::keys::key_name::KeyName;
use crate::keys::keyring::Keyring;
use crate::oauth::config::OAuthConfig;
use crate::oauth::verifier::{ResourceServer, TokenRefusal};

/// The largest request body accepted on `/mcp` (413 beyond it).
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;

/// What the router needs besides the server state.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Who may call `/mcp`.
    pub access: Access,
    /// Requests per minute allowed to each key; `None` for no limit.
    pub rate_limit: Option<NonZeroU32>,
    /// The Host/Origin allow-list.
    pub guard: RequestGuard,
    /// Sessions or stateless (ADR 0010).
    pub session_mode: SessionMode,
    /// Idle time after which a session is closed (stateful mode).
    pub session_idle_timeout: Duration,
    /// Serve Prometheus metrics on `GET /metrics` (and count requests for them).
    pub metrics: bool,
    /// Most open sessions per key (stateful mode); an `initialize` beyond it gets 429.
    pub max_sessions_per_key: NonZeroUsize,
}

/// Who may call `/mcp`.
#[derive(Debug, Clone)]
pub enum Access {
    /// Callers present one of the keyring's keys and get its name and scope.
    Keys(Keyring),
    /// Callers present an OAuth access token of the issuer (ADR 0043), or, when `keys` is set,
    /// one of its keys: a Bearer value that matches a key is that key, any other is a token.
    OAuth {
        /// Checks the tokens.
        resource_server: Arc<ResourceServer>,
        /// The keys also accepted, if any.
        keys: Option<Keyring>,
    },
    /// No authentication: every request is the full-scope caller `sem-autenticacao`. Loopback
    /// test suites only (the binary refuses it on any other address).
    NoAuth,
}

/// How the HTTP transport keeps track of clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SessionMode {
    /// `Mcp-Session-Id` sessions with a GET stream: what 2025-era clients need for
    /// `resources/subscribe`. Replicas need sticky routing.
    Stateful,
    /// No sessions, JSON responses: any replica answers any request. 2025-era subscriptions are
    /// refused; 2026-07-28 clients still get `subscriptions/listen`.
    Stateless,
}

/// What `/health`, `/ready` and `/metrics` report.
#[derive(Clone)]
struct Health {
    state: ServerState,
    sessions: Option<Arc<LocalSessionManager>>,
    metrics: Option<Arc<Metrics>>,
    /// The resource server, and whether tokens are the only way in (no keys).
    oauth: Option<(Arc<ResourceServer>, bool)>,
}

impl Health {
    async fn open_sessions(&self) -> Option<usize> {
        match &self.sessions {
            Some(manager) => Some(manager.sessions.read().await.len()),
            None => None,
        }
    }
}

/// How long `/ready` waits for the database before answering 503.
const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The backend's router: `/mcp` (authenticated) and `/health`, behind the Host/Origin check.
///
/// `shutdown` ends open response streams when the server stops.
pub fn app(state: ServerState, config: AppConfig, shutdown: CancellationToken) -> Router {
    let stateful = config.session_mode == SessionMode::Stateful;
    let mcp_config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(stateful)
        // JSON responses where possible; SSE where a stream is needed (sessions, listen).
        .with_json_response(!stateful)
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        // Host and Origin are checked by our own middleware for every route, before auth.
        .disable_allowed_hosts()
        .with_cancellation_token(shutdown);
    let factory_state = state.clone();
    let metrics = config.metrics.then(|| Arc::new(Metrics::default()));
    // A span per request and the MCP histograms when telemetry is on or kept for `/metrics`
    // (issue 27); else a pass-through. In stateful mode a handler that answers `initialize`
    // serves that session to its end, and records its duration then.
    let histograms = metrics.as_ref().map(|metrics| metrics.mcp_histograms());
    let factory = move || {
        let mut traced = Traced::new(CursosServer::new(&factory_state));
        if let Some(histograms) = &histograms {
            traced = traced.with_histograms(Arc::clone(histograms));
        }
        Ok(if stateful { traced.for_session(SessionTransport::Http) } else { traced })
    };
    let oauth = match &config.access {
        Access::OAuth { resource_server, keys } => Some((Arc::clone(resource_server), keys.is_none())),
        Access::Keys(_) | Access::NoAuth => None,
    };
    let (access, rate_limit, gate_metrics) =
        (config.access, config.rate_limit.map(RateLimit::per_minute), metrics.clone());
    // One middleware for every check of `/mcp`, in order (ADR 0038), wrapped around rmcp's
    // service itself.
    let gate = move |session_cap, closer| {
        let gate = Gate { access, rate_limit, session_cap, closer, metrics: gate_metrics };
        middleware::from_fn_with_state(Arc::new(gate), mcp_gate)
    };
    let (mcp_routes, sessions) = if stateful {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(config.session_idle_timeout);
        let manager = Arc::new(manager);
        state.close_sessions_with(session_closer(&manager));
        let cap = Arc::new(session_cap::SessionCap::new(Arc::clone(&manager), config.max_sessions_per_key));
        let service = StreamableHttpService::new(factory, Arc::clone(&manager), mcp_config);
        let service =
            tower::ServiceBuilder::new().layer(gate(Some(cap), Some(session_closer(&manager)))).service(service);
        (Router::new().nest_service("/mcp", service), Some(manager))
    } else {
        let service = StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), mcp_config);
        let service = tower::ServiceBuilder::new().layer(gate(None, None)).service(service);
        (Router::new().nest_service("/mcp", service), None)
    };
    let mut routes = Router::new().route("/health", get(liveness)).route("/ready", get(readiness));
    if metrics.is_some() {
        routes = routes.route("/metrics", get(prometheus));
    }
    if let Some((resource_server, _)) = &oauth {
        routes = protected_resource_metadata_routes(routes, resource_server.config());
    }
    let health = Health { state, sessions, metrics: metrics.clone(), oauth };
    let routes = routes.with_state(health).merge(mcp_routes);
    // Around the whole router, once: `Router::layer` would wrap each route, and a route's
    // service (each layer's included) is cloned for every request it serves (bench/RESULTS.md).
    // Outermost first: Host/Origin, then CORS (a refused origin never gets this far; an allowed
    // one gets its preflight answered here, before the key is asked for, ADR 0029), both in
    // [`Front`], then the response counter.
    let guard = Arc::new(config.guard);
    let routes = tower::ServiceBuilder::new()
        .option_layer(metrics.map(|metrics| middleware::from_fn_with_state(metrics, count_response)))
        .service(routes);
    let cors = tower::Layer::layer(&cors(Arc::clone(&guard)), routes.clone());
    Router::new().fallback_service(Front { guard, cors, direct: routes })
}

/// What every request goes through first, once (not per route): the Host/Origin check
/// ([`guard::refusal_of`]), then CORS for the requests a browser makes, the ones with an `Origin`
/// header. The others (every SDK, every editor) skip computing headers that only a browser reads,
/// a measurable share of a read's cost (bench/RESULTS.md); their responses carry no
/// `Vary: Origin`, and none of them is a response a shared cache could hand to a browser
/// (authenticated POSTs, `/health`); a cached one without CORS headers would fail closed.
/// A plain `Service`, not a `from_fn` middleware, which would box its future and a clone of
/// everything behind it on every request (ADR 0038).
#[derive(Clone)]
struct Front<Routes> {
    guard: Arc<guard::RequestGuard>,
    cors: tower_http::cors::Cors<Routes>,
    direct: Routes,
}

impl<Routes> tower::Service<Request> for Front<Routes>
where
    Routes: tower::Service<Request, Response = Response, Error = std::convert::Infallible> + Clone,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures_util::future::Either<
        std::future::Ready<Result<Response, std::convert::Infallible>>,
        futures_util::future::Either<tower_http::cors::ResponseFuture<Routes::Future>, Routes::Future>,
    >;

    fn poll_ready(&mut self, context: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        // `direct` is the service `cors` wraps (a clone): ready together.
        self.cors.poll_ready(context)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        use futures_util::future::Either;
        if let Some(refusal) = guard::refusal_of(&self.guard, &request) {
            return Either::Left(std::future::ready(Ok(refusal)));
        }
        Either::Right(if request.headers().contains_key(header::ORIGIN) {
            Either::Left(self.cors.call(request))
        } else {
            Either::Right(self.direct.call(request))
        })
    }
}

/// The headers a browser client may send to `/mcp`.
pub const CORS_ALLOWED_HEADERS: [&str; 8] = [
    "authorization",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
    "accept",
];

/// The response headers a browser client may read.
pub const CORS_EXPOSED_HEADERS: [&str; 3] = ["mcp-session-id", "mcp-protocol-version", "www-authenticate"];

/// CORS for the origins the guard allows: preflights answered without a key, the MCP headers
/// allowed and exposed, no credentials (the key travels in `Authorization`, never in a cookie).
fn cors(guard: Arc<guard::RequestGuard>) -> tower_http::cors::CorsLayer {
    use axum::http::{HeaderName, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, _request| guard.allows_origin(origin)))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers(CORS_ALLOWED_HEADERS.map(HeaderName::from_static))
        .expose_headers(CORS_EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(Duration::from_secs(3600))
}

/// Closes a session whose client stopped reading its stream (ADR 0022): rmcp's idle timeout
/// cannot fire while the session waits on that stream, so the live-update hub asks for it.
fn session_closer(manager: &Arc<LocalSessionManager>) -> mcp_server::SessionCloser {
    let manager = Arc::clone(manager);
    Arc::new(move |id: &str| {
        let manager = Arc::clone(&manager);
        let id: rmcp::transport::streamable_http_server::SessionId = id.into();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                use rmcp::transport::streamable_http_server::SessionManager as _;
                if let Err(error) = manager.close_session(&id).await {
                    tracing::debug!(target: "backend", %error, "closing a session that stopped reading");
                }
            });
        }
    })
}

async fn liveness(State(health): State<Health>) -> impl IntoResponse {
    let sessions = health.open_sessions().await;
    let listeners = health.state.listener_counts();
    axum::Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "sessions": sessions,
        "subscriptions": { "sessions": listeners.sessions, "resources": listeners.subscriptions, "listenStreams": listeners.listen_streams },
    }))
}

/// 200 when the database answers a query within [`READINESS_TIMEOUT`], 503 otherwise (the cause
/// is logged, not sent): a load balancer stops routing to a replica that lost its database.
async fn readiness(State(health): State<Health>) -> Response {
    let unavailable = |reason: &str| {
        (StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({ "status": "unavailable", "reason": reason })))
            .into_response()
    };
    match tokio::time::timeout(READINESS_TIMEOUT, health.state.catalog().readiness()).await {
        Ok(Ok(())) => match &health.oauth {
            None => axum::Json(json!({ "status": "ready" })).into_response(),
            Some((resource_server, only_access)) => {
                let status = resource_server.status();
                let oauth = status.reachability.as_str();
                if *only_access && !status.usable {
                    // No key to fall back on, and no token can be checked yet.
                    let body = json!({ "status": "unavailable", "reason": "authorization_server_unreachable", "oauth": oauth });
                    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
                } else {
                    axum::Json(json!({ "status": "ready", "oauth": oauth })).into_response()
                }
            }
        },
        Ok(Err(courses_domain::NotReady::Unwritable(reason))) => {
            tracing::warn!(target: "backend", %reason, "readiness check failed: writes cannot be made durable");
            unavailable(reason.as_str())
        }
        Ok(Err(courses_domain::NotReady::Store(error))) => {
            tracing::warn!(target: "backend", error = %error, "readiness check failed: the database did not answer");
            unavailable("database_unavailable")
        }
        Err(_) => {
            tracing::warn!(target: "backend", timeout = ?READINESS_TIMEOUT, "readiness check failed: the database is too slow");
            unavailable("database_too_slow")
        }
    }
}

async fn prometheus(State(health): State<Health>) -> Response {
    let Some(metrics) = &health.metrics else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let sessions = health.open_sessions().await;
    let text = metrics.render(sessions, health.state.listener_counts(), health.state.catalog().pool_status());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

/// Counts every response by status (refusals before authentication included).
async fn count_response(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    metrics.response(response.status().as_u16());
    response
}

/// What the `/mcp` gate needs: who may call, how often, how many sessions each key may hold and
/// how to close one (stateful mode), and where requests are counted.
struct Gate {
    access: Access,
    rate_limit: Option<RateLimit>,
    session_cap: Option<Arc<session_cap::SessionCap>>,
    closer: Option<mcp_server::SessionCloser>,
    metrics: Option<Arc<Metrics>>,
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
/// 1. the key ([`Gate::authenticate`]: 400, 401, 429), then, in stateful mode, the session it
///    names, which must be one its caller opened ([`session_cap::refuse_unless_owner`]: 404, as
///    for an unknown session);
/// 2. the body, read once ([`jsonrpc_body::read_and_check`]: 400 with a JSON-RPC error when it is
///    not JSON-RPC, 408, 413);
/// 3. the key's open sessions, for an `initialize` that opens one (429 over the cap);
/// 4. the observer: the request is labelled by its JSON-RPC method (and tool, prompt or resource)
///    and observed until its response body has been sent (for SSE, until the stream ends): one
///    `mcp request` log event per request, and the metrics when they are on;
/// 5. a `DELETE` that closed a session is answered 204 ([`session_end_without_content`]).
///
/// The request reaches rmcp carrying its [`Caller`] in its extensions.
async fn mcp_gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let (caller, by_token) = match gate.authenticate(request.headers(), request.uri().query()).await {
        Ok(authenticated) => authenticated,
        Err(refusal) => {
            // Refused before its body was read: hyper closes the connection after this answer,
            // so say so, or a client may send its next request (the PRM GET after a 401) on a
            // connection that is already gone.
            let mut refusal = *refusal;
            refusal.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return refusal;
        }
    };
    // One caller holds at most its share of the connections (ADR 0045): this one now counts for it.
    if let Some(slot) = request.extensions().get::<Arc<ConnectionSlot>>()
        && let Err(over) = slot.attribute(caller.principal().as_str())
    {
        return too_many_connections(&caller, over);
    }
    // A session belongs to the caller that opened it: to anyone else it does not exist (404).
    if let Some(refusal) =
        session_cap::refuse_unless_owner(gate.session_cap.as_deref(), &caller, request.method(), request.headers())
            .await
    {
        return refusal;
    }
    let (mut parts, body) = request.into_parts();
    let checked = match jsonrpc_body::read_and_check(&parts, body).await {
        Ok(checked) => checked,
        Err(refusal) => return refusal,
    };
    let label = checked.label.clone().unwrap_or_else(|| RequestLabel::of(&parts.method, &checked.bytes));
    // A read-only token calling a tool that writes: 403 with the scope it lacks (RFC 6750 §3.1),
    // so the client can ask for it; the server would refuse the call anyway.
    if by_token
        && caller.scope() == Scope::Read
        && label.method == "tools/call"
        && label.target.as_deref().is_some_and(|tool| mcp_server::policy::WRITING_TOOLS.contains(&tool))
        && let Access::OAuth { resource_server, .. } = &gate.access
    {
        let config = resource_server.config();
        return insufficient_scope(config, config.write_scope(), "this tool writes: the token needs the write scope");
    }
    let reservation = match &gate.session_cap {
        Some(cap) if checked.opens_session => match cap.admit(&caller).await {
            Ok(reservation) => Some(reservation),
            Err(refusal) => return refusal,
        },
        _ => None,
    };
    let mut timer = RequestTimer::start(gate.metrics.clone(), label, Some(caller.name().to_owned()));
    // With telemetry on, a request rmcp answers without a handler still gets its span (issue 27).
    if let Some(reached) =
        timer.watch_for_refusal(parts.headers.get("traceparent").and_then(|value| value.to_str().ok()))
    {
        parts.extensions.insert(reached);
    }
    let is_delete = parts.method == axum::http::Method::DELETE;
    // A session's GET stream on a connection that later stalls (its client stopped reading):
    // the session is closed with it, as the hub closes one it can no longer feed (ADR 0045).
    if parts.method == axum::http::Method::GET
        && let (Some(closer), Some(slot), Some(session)) = (
            &gate.closer,
            parts.extensions.get::<Arc<ConnectionSlot>>(),
            parts.headers.get("mcp-session-id").and_then(|value| value.to_str().ok()),
        )
    {
        let (closer, session) = (Arc::clone(closer), session.to_owned());
        slot.on_write_stall(move || {
            tracing::info!(target: "backend", "closing a session whose client stopped reading its GET stream (a write stalled)");
            closer(&session);
        });
    }
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
    /// the request carries an accepted key or token (403 for a token with neither scope; 400 for
    /// a token in the query string; 503 when an opaque token cannot be introspected now), then
    /// 429 with `Retry-After` when the caller is over its rate limit; otherwise the request's
    /// [`Caller`], and whether it came from a token. Keys and tokens are never logged; names are.
    async fn authenticate(&self, headers: &HeaderMap, query: Option<&str>) -> Result<(Caller, bool), Box<Response>> {
        if headers.get_all(header::AUTHORIZATION).iter().nth(1).is_some() {
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
        let presented = headers.get(header::AUTHORIZATION).map(HeaderValue::as_bytes).and_then(|value| {
            value.get(..7).filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer ")).map(|_| &value[7..])
        });
        let (caller, by_token) = match &self.access {
            Access::NoAuth => (Caller::new(KeyName::NO_AUTH, Scope::Write), false),
            Access::Keys(keyring) => match presented.map(|token| keyring.authenticate(token)) {
                Some(Some(caller)) => (caller, false),
                Some(None) => return Err(Box::new(unauthorized("invalid_token", "the API key is not valid"))),
                None => {
                    return Err(Box::new(unauthorized("invalid_request", "missing Authorization: Bearer <API_KEY>")));
                }
            },
            Access::OAuth { resource_server, keys } => {
                let config = resource_server.config();
                if has_query_token(query) {
                    return Err(Box::new(token_in_query(config)));
                }
                let Some(presented) = presented else {
                    return Err(Box::new(token_challenge(config, None)));
                };
                match keys.as_ref().and_then(|keyring| keyring.authenticate(presented)) {
                    Some(caller) => (caller, false),
                    None => match resource_server.verify(presented).await {
                        Ok(caller) => (caller, true),
                        Err(TokenRefusal::Invalid(description)) => {
                            return Err(Box::new(token_challenge(config, Some(&description))));
                        }
                        Err(TokenRefusal::InsufficientScope) => {
                            return Err(Box::new(insufficient_scope(
                                config,
                                &format!("{} {}", config.read_scope(), config.write_scope()),
                                "the token has neither the read nor the write scope",
                            )));
                        }
                        Err(TokenRefusal::Unavailable(description)) => {
                            return Err(Box::new(authorization_server_unavailable(&description)));
                        }
                    },
                }
            }
        };
        if let Some(rate_limit) = &self.rate_limit
            && let Err(retry_after) = rate_limit.check(caller.name(), Instant::now())
        {
            return Err(Box::new(too_many_requests(&caller, retry_after)));
        }
        Ok((caller, by_token))
    }
}

/// Whether the query string carries an `access_token` (RFC 6750 §2.3, which this server does
/// not accept: URLs end up in logs and histories).
fn has_query_token(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair.split('=').next().is_some_and(|name| name.eq_ignore_ascii_case("access_token")))
    })
}

/// A description fit for a quoted header parameter: printable ASCII, no quote or backslash.
fn quotable(text: &str) -> String {
    text.chars()
        .map(
            |character| {
                if character.is_ascii_graphic() && character != '"' && character != '\\' { character } else { ' ' }
            },
        )
        .collect()
}

/// 401 with the challenge of RFC 9728 §5.1: where this resource's metadata is, the scopes it
/// knows, and, when a token was refused, `invalid_token` with why.
fn token_challenge(config: &OAuthConfig, refused: Option<&str>) -> Response {
    let mut challenge = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{} {}\"",
        config.resource_metadata_url(),
        config.read_scope(),
        config.write_scope()
    );
    let message = match refused {
        Some(description) => {
            tracing::warn!(target: "backend", reason = description, "request refused by the token check");
            challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{}\"", quotable(description)));
            description.to_owned()
        }
        None => {
            tracing::warn!(target: "backend", "request refused: no Authorization: Bearer <token>");
            "missing Authorization: Bearer <access token>".to_owned()
        }
    };
    with_challenge(jsonrpc_refusal(StatusCode::UNAUTHORIZED, "unauthorized", &message, Map::new()), &challenge)
}

/// 403 `insufficient_scope` naming the scopes `needed` (RFC 6750 §3.1).
fn insufficient_scope(config: &OAuthConfig, needed: &str, description: &str) -> Response {
    tracing::warn!(target: "backend", reason = description, needed, "request refused: insufficient scope");
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{needed}\", resource_metadata=\"{}\", error_description=\"{}\"",
        config.resource_metadata_url(),
        quotable(description)
    );
    let mut fields = Map::new();
    fields.insert("scope".to_owned(), serde_json::Value::from(needed));
    with_challenge(jsonrpc_refusal(StatusCode::FORBIDDEN, "insufficient_scope", description, fields), &challenge)
}

/// 400 `invalid_request` for a token in the query string.
fn token_in_query(config: &OAuthConfig) -> Response {
    const DESCRIPTION: &str = "access tokens are accepted only in the Authorization header, not in the URL";
    tracing::warn!(target: "backend", "request refused: an access_token in the query string");
    let challenge = format!(
        "Bearer error=\"invalid_request\", error_description=\"{DESCRIPTION}\", resource_metadata=\"{}\"",
        config.resource_metadata_url()
    );
    let body = (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": "invalid_request", "message": DESCRIPTION })));
    with_challenge(body.into_response(), &challenge)
}

/// 503 when a token cannot be checked now (its introspection does not answer).
fn authorization_server_unavailable(description: &str) -> Response {
    tracing::warn!(target: "backend", reason = description, "request refused: the token cannot be checked now");
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(json!({ "error": "authorization_server_unavailable", "message": description })),
    )
        .into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(5));
    response
}

fn with_challenge(mut response: Response, challenge: &str) -> Response {
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `GET /.well-known/oauth-protected-resource` (RFC 9728), also with the `/mcp` suffix and with
/// the path of `OAUTH_RESOURCE` when it is another: no key, no token needed.
fn protected_resource_metadata_routes<S: Clone + Send + Sync + 'static>(
    routes: Router<S>,
    config: &OAuthConfig,
) -> Router<S> {
    let document = Arc::new(config.protected_resource_metadata());
    let mut paths = vec![
        "/.well-known/oauth-protected-resource".to_owned(),
        "/.well-known/oauth-protected-resource/mcp".to_owned(),
    ];
    let own = config.resource_metadata_path();
    if !paths.contains(&own) && !own.contains(['{', '}', '*']) && own.starts_with('/') {
        paths.push(own);
    }
    paths.into_iter().fold(routes, |routes, path| {
        let document = Arc::clone(&document);
        routes.route(&path, get(move || std::future::ready(axum::Json(document.as_ref().clone()))))
    })
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

fn too_many_connections(caller: &Caller, over: OverShare) -> Response {
    let per_key = over.per_key;
    tracing::warn!(target: "backend", key = caller.name(), per_key, "request refused: its caller already holds its share of the connections");
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(json!({
            "error": "too_many_connections",
            "message": format!(
                "too many connections for this key (at most {per_key}, MAX_CONNECTIONS_PER_KEY); close one and retry"
            ),
        })),
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(1));
    // This connection is not counted for the caller: it is closed after this answer.
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn unauthorized(code: &'static str, description: &'static str) -> Response {
    tracing::warn!(target: "backend", reason = description, "request refused by the API key check");
    let challenge = format!("Bearer realm=\"mcp-cursos\", error=\"{code}\"");
    let mut response = jsonrpc_refusal(StatusCode::UNAUTHORIZED, "unauthorized", description, Map::new());
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

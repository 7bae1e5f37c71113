//! The OAuth resource server end to end in process (ADR 0043): the backend as the binary starts
//! it ([`Server::start`] from parsed [`Settings`]) on a real loopback port, against a small
//! authorization server stand-in served by axum in the test (metadata, JWKS and introspection,
//! counting what it is asked), with access tokens signed by P-256 and RSA keys made in the test.
//!
//! The real authorization server (oidc-provider) and the SDKs' OAuth clients are in the
//! end-to-end suite (`scripts/oauth-e2e.sh`); these tests hold each rule at its edge.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use clap::Parser as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::serve::Server;
use super::settings::{IntrospectionSecret, Settings};

const RESOURCE: &str = "https://cursos.example.com/mcp";
const METADATA_URL: &str = "https://cursos.example.com/.well-known/oauth-protected-resource/mcp";
const MODERN: &str = "2026-07-28";
const INTROSPECTION_CLIENT: &str = "mcp-rs";
const INTROSPECTION_SECRET: &str = "segredo-da-introspeccao";
const API_KEY: &str = "chave-de-teste-ao-lado-dos-tokens";
/// Settings read from the environment that would change what these tests test.
const VARIABLES: [&str; 15] = [
    "API_KEY",
    "KEYS_FILE",
    "NO_AUTH",
    "SESSION_MODE",
    "RATE_LIMIT",
    "POLICY_FILE",
    "OAUTH_ISSUER",
    "OAUTH_RESOURCE",
    "OAUTH_READ_SCOPE",
    "OAUTH_WRITE_SCOPE",
    "OAUTH_CATALOG_CLAIM",
    "OAUTH_CATALOG",
    "OAUTH_INTROSPECTION_CLIENT_ID",
    "OAUTH_LEEWAY_SECONDS",
    "OAUTH_JWKS_FETCHES_PER_MINUTE",
];
/// Bounds every wait of these tests (polls included).
const PATIENCE: Duration = Duration::from_secs(30);

// ---- Signing keys ----

/// A signing key of the stand-in: the private half signs, the public half is in its JWKS.
#[derive(Clone)]
struct TestKey {
    kid: String,
    algorithm: Algorithm,
    encoding: EncodingKey,
    jwk: Value,
}

impl TestKey {
    fn es256(kid: &str) -> Self {
        use p256::elliptic_curve::Generate as _;
        use p256::pkcs8::EncodePrivateKey as _;
        let secret = p256::SecretKey::generate();
        let der = secret.to_pkcs8_der().expect("PKCS#8");
        Self::from_encoding(kid, Algorithm::ES256, EncodingKey::from_ec_der(der.as_bytes()))
    }

    /// One RSA key per test binary: generating one takes a while in a debug build.
    fn rs256(kid: &str) -> Self {
        static DER: OnceLock<Vec<u8>> = OnceLock::new();
        let der = DER.get_or_init(|| {
            use rsa::Generate as _;
            use rsa::pkcs1::EncodeRsaPrivateKey as _;
            let key = rsa::PrivateKey::generate();
            key.to_pkcs1_der().expect("PKCS#1").as_bytes().to_vec()
        });
        Self::from_encoding(kid, Algorithm::RS256, EncodingKey::from_rsa_der(der))
    }

    fn from_encoding(kid: &str, algorithm: Algorithm, encoding: EncodingKey) -> Self {
        let mut jwk = serde_json::to_value(Jwk::from_encoding_key(&encoding, algorithm).expect("JWK")).expect("JSON");
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        Self { kid: kid.to_owned(), algorithm, encoding, jwk }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signed")
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

// ---- The authorization server stand-in ----

#[derive(Default)]
struct AuthorizationServerState {
    issuer: Mutex<String>,
    keys: Mutex<Vec<Value>>,
    /// Opaque tokens and what introspection answers for them.
    opaque: Mutex<HashMap<String, Value>>,
    jwks_fetches: AtomicUsize,
    introspections: AtomicUsize,
    /// Serves `/.well-known/oauth-authorization-server` (RFC 8414); else only OpenID discovery.
    rfc8414: bool,
    down: AtomicBool,
}

/// The stand-in, served until dropped.
struct AuthorizationServer {
    issuer: String,
    state: Arc<AuthorizationServerState>,
    stop: CancellationToken,
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl AuthorizationServer {
    async fn start(keys: &[&TestKey]) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Self::serve(listener, keys, true)
    }

    fn serve(listener: tokio::net::TcpListener, keys: &[&TestKey], rfc8414: bool) -> Self {
        let issuer = format!("http://{}", listener.local_addr().expect("address"));
        let state = Arc::new(AuthorizationServerState {
            issuer: Mutex::new(issuer.clone()),
            keys: Mutex::new(keys.iter().map(|key| key.jwk.clone()).collect()),
            rfc8414,
            ..AuthorizationServerState::default()
        });
        let router = axum::Router::new()
            .route("/.well-known/oauth-authorization-server", get(rfc8414_metadata))
            .route("/.well-known/openid-configuration", get(metadata))
            .route("/jwks", get(jwks))
            .route("/introspect", post(introspect))
            .with_state(Arc::clone(&state));
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).with_graceful_shutdown(stopped.cancelled_owned()).await;
        });
        Self { issuer, state, stop }
    }

    fn jwks_fetches(&self) -> usize {
        self.state.jwks_fetches.load(Ordering::SeqCst)
    }

    fn introspections(&self) -> usize {
        self.state.introspections.load(Ordering::SeqCst)
    }

    fn add_key(&self, key: &TestKey) {
        self.state.keys.lock().unwrap_or_else(PoisonError::into_inner).push(key.jwk.clone());
    }

    fn remove_key(&self, kid: &str) {
        self.state.keys.lock().unwrap_or_else(PoisonError::into_inner).retain(|jwk| jwk["kid"] != kid);
    }

    fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    fn add_opaque(&self, token: &str, answer: Value) {
        self.state.opaque.lock().unwrap_or_else(PoisonError::into_inner).insert(token.to_owned(), answer);
    }

    /// The claims of a valid token of this issuer for `RESOURCE`, changed by `changes` (a
    /// `null` removes a claim).
    fn claims(&self, changes: &Value) -> Value {
        let mut claims = json!({
            "iss": self.issuer, "aud": RESOURCE, "sub": "ana", "client_id": "mcp-public",
            "scope": "openid mcp:read mcp:write", "tenant": "acme",
            "iat": now(), "exp": now() + 600, "jti": "t1",
        });
        for (name, value) in changes.as_object().expect("object") {
            if value.is_null() {
                claims.as_object_mut().expect("object").remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        claims
    }
}

fn unavailable() -> Response {
    StatusCode::SERVICE_UNAVAILABLE.into_response()
}

async fn rfc8414_metadata(State(state): State<Arc<AuthorizationServerState>>) -> Response {
    if !state.rfc8414 {
        return StatusCode::NOT_FOUND.into_response();
    }
    metadata(State(state)).await
}

async fn metadata(State(state): State<Arc<AuthorizationServerState>>) -> Response {
    if state.down.load(Ordering::SeqCst) {
        return unavailable();
    }
    let issuer = state.issuer.lock().unwrap_or_else(PoisonError::into_inner).clone();
    axum::Json(json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}/jwks"),
        "introspection_endpoint": format!("{issuer}/introspect"),
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
        "scopes_supported": ["openid", "mcp:read", "mcp:write"],
    }))
    .into_response()
}

async fn jwks(State(state): State<Arc<AuthorizationServerState>>) -> Response {
    state.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    if state.down.load(Ordering::SeqCst) {
        return unavailable();
    }
    let keys = state.keys.lock().unwrap_or_else(PoisonError::into_inner).clone();
    axum::Json(json!({ "keys": keys })).into_response()
}

async fn introspect(State(state): State<Arc<AuthorizationServerState>>, headers: HeaderMap, body: String) -> Response {
    state.introspections.fetch_add(1, Ordering::SeqCst);
    if state.down.load(Ordering::SeqCst) {
        return unavailable();
    }
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{INTROSPECTION_CLIENT}:{INTROSPECTION_SECRET}"))
    );
    if headers.get("authorization").and_then(|value| value.to_str().ok()) != Some(expected.as_str()) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({ "error": "invalid_client" }))).into_response();
    }
    let token = body.split('&').find_map(|pair| pair.strip_prefix("token=")).unwrap_or_default().to_owned();
    let answer = state.opaque.lock().unwrap_or_else(PoisonError::into_inner).get(&token).cloned();
    axum::Json(answer.unwrap_or_else(|| json!({ "active": false }))).into_response()
}

// ---- The backend ----

/// The backend served on a free loopback port until dropped.
struct Backend {
    base: String,
    url: String,
    stop: CancellationToken,
    client: reqwest::Client,
    _folder: tempfile::TempDir,
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// An answer: status, `WWW-Authenticate`, body.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    challenge: String,
    /// The `Connection` header.
    connection: String,
    body: Value,
}

impl Backend {
    /// Starts the backend with `flags` (stateless, so every answer is one JSON body), as the
    /// binary would, and `secret` as OAUTH_INTROSPECTION_CLIENT_SECRET.
    async fn start(flags: &[&str], secret: Option<&str>) -> Self {
        for variable in VARIABLES {
            assert!(std::env::var_os(variable).is_none(), "unset {variable} to run the OAuth tests");
        }
        let folder = tempfile::tempdir().expect("temp dir");
        let database = folder.path().join("cursos.db");
        let mut arguments = vec![
            "mcp-cursos-backend",
            "--port",
            "0",
            "--session-mode",
            "stateless",
            "--database-path",
            database.to_str().expect("UTF-8 path"),
        ];
        arguments.extend_from_slice(flags);
        let mut settings = Settings::try_parse_from(arguments).expect("settings");
        settings.oauth_introspection_client_secret = secret.map(IntrospectionSecret::new);
        let server = Server::start(&settings).await.expect("the server starts");
        let url = server.url.clone();
        let base = url.trim_end_matches("/mcp").to_owned();
        let stop = server.shutdown.clone();
        tokio::spawn(server.serve());
        Self { base, url, stop, client: reqwest::Client::new(), _folder: folder }
    }

    /// The OAuth flags for `issuer`, with the catalog from the `tenant` claim.
    fn oauth_flags(issuer: &str) -> Vec<String> {
        ["--oauth-issuer", issuer, "--oauth-resource", RESOURCE, "--oauth-catalog-claim", "tenant"]
            .map(str::to_owned)
            .to_vec()
    }

    async fn start_for(issuer: &str, extra: &[&str]) -> Self {
        let mut flags = Self::oauth_flags(issuer);
        flags.extend(extra.iter().map(|flag| (*flag).to_owned()));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let secret = extra.contains(&"--oauth-introspection-client-id").then_some(INTROSPECTION_SECRET);
        Self::start(&flags, secret).await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = tokio::time::timeout(PATIENCE, request.send()).await.expect("in time").expect("answered");
        let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let connection =
            response.headers().get("connection").and_then(|value| value.to_str().ok()).unwrap_or_default().to_owned();
        let text = response.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Answer { status, challenge, connection, body }
    }

    /// A 2026-07-28 request of `method`, with `authorization` (the whole header value) if any.
    async fn mcp(&self, authorization: Option<&str>, method: &str, name: Option<&str>, mut params: Value) -> Answer {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                                 "io.modelcontextprotocol/clientInfo": {"name": "oauth-tests", "version": "1"},
                                 "io.modelcontextprotocol/clientCapabilities": {}});
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method)
            .body(body.to_string());
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        self.send(request).await
    }

    async fn create(&self, token: &str, titulo: &str) -> Answer {
        let params = json!({"name": "criar_curso", "arguments": {"titulo": titulo, "cargaHoraria": 10}});
        self.mcp(Some(&format!("Bearer {token}")), "tools/call", Some("criar_curso"), params).await
    }

    async fn read(&self, token: &str, uri: &str) -> Answer {
        self.mcp(Some(&format!("Bearer {token}")), "resources/read", Some(uri), json!({"uri": uri})).await
    }

    /// The number of courses `token` sees in its catalog.
    async fn total(&self, token: &str) -> u64 {
        let answer = self.read(token, "cursos://catalogo").await;
        assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
        let text =
            answer.body["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("a catalog: {answer:?}"));
        serde_json::from_str::<Value>(text).expect("JSON")["total"].as_u64().expect("total")
    }

    async fn ready(&self) -> (StatusCode, Value) {
        let answer = self.send(self.client.get(format!("{}/ready", self.base))).await;
        (answer.status, answer.body)
    }

    /// Polls `/ready` until its `oauth` field is `expected`.
    async fn ready_when(&self, expected: &str) -> (StatusCode, Value) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let (status, body) = self.ready().await;
            if body["oauth"] == expected {
                return (status, body);
            }
            assert!(tokio::time::Instant::now() < deadline, "/ready never said oauth={expected}: {body}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Asserts a 401 with the RFC 9728 challenge, `invalid_token`, and `reason` in its description.
fn assert_invalid_token(answer: &Answer, reason: &str) {
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{answer:?}");
    assert!(answer.challenge.starts_with(&format!("Bearer resource_metadata=\"{METADATA_URL}\", scope=\"mcp:read mcp:write\", error=\"invalid_token\", error_description=\"")), "{answer:?}");
    assert!(answer.challenge.contains(reason), "{reason:?} in {answer:?}");
    assert!(answer.body["error"]["message"].as_str().is_some_and(|message| message.contains(reason)), "{answer:?}");
}

fn created_id(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    let result = &answer.body["result"];
    assert_ne!(result["isError"], true, "{answer:?}");
    result["structuredContent"]["id"].as_str().unwrap_or_else(|| panic!("an id: {answer:?}")).to_owned()
}

// ---- Valid tokens ----

#[tokio::test]
async fn a_token_with_the_write_scope_writes_and_its_subject_at_the_issuer_is_the_author_in_the_history() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;

    let writer = key.sign(&issuer.claims(&json!({})));
    let id = created_id(&backend.create(&writer, "Cálculo I").await);
    let reader = key.sign(&issuer.claims(&json!({"scope": "mcp:read", "sub": "bia"})));
    assert_eq!(backend.total(&reader).await, 1, "a read-only token reads the same catalog");

    let history = backend.read(&reader, &format!("cursos://{id}/historico")).await;
    let text = history.body["result"]["contents"][0]["text"].as_str().expect("history").to_owned();
    let history: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(history["entradas"][0]["autor"], format!("ana@{}", issuer.issuer));
}

#[tokio::test]
async fn an_rs256_token_is_accepted_like_an_es256_one() {
    let key = TestKey::rs256("rsa-1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    let token = key.sign(&issuer.claims(&json!({})));
    created_id(&backend.create(&token, "Álgebra").await);
    assert_eq!(backend.total(&token).await, 1);
}

#[tokio::test]
async fn the_protected_resource_metadata_and_the_401_challenge_tell_a_client_where_to_sign_in() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let answer = backend.send(backend.client.get(format!("{}{path}", backend.base))).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(
            answer.body,
            json!({"resource": RESOURCE, "authorization_servers": [issuer.issuer], "scopes_supported": ["mcp:read", "mcp:write"],
                   "bearer_methods_supported": ["header"], "resource_name": "mcp-cursos"})
        );
    }
    let answer = backend.mcp(None, "tools/list", None, json!({})).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer.challenge, format!("Bearer resource_metadata=\"{METADATA_URL}\", scope=\"mcp:read mcp:write\""));
    assert_eq!(answer.connection, "close", "refused before its body was read: the connection is not reused");
    let (status, ready) = backend.ready_when("ok").await;
    assert_eq!((status, ready), (StatusCode::OK, json!({"status": "ready", "oauth": "ok"})));
}

// ---- Refused tokens ----

#[tokio::test]
async fn tokens_of_another_audience_or_issuer_or_without_a_true_signature_are_refused_and_nothing_is_written() {
    let key = TestKey::es256("k1");
    let stranger = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    let valid = key.sign(&issuer.claims(&json!({})));
    let (head, rest) = valid.split_once('.').expect("a JWS");
    let (payload, _signature) = rest.split_once('.').expect("a JWS");
    let header_of = |header: Value| base64url(header.to_string().as_bytes());
    let claims_of = |changes: Value| base64url(issuer.claims(&changes).to_string().as_bytes());
    // HS256 with the JWK's public material as the HMAC secret: the classic key confusion.
    let public_as_secret = key.jwk.to_string();
    let hs256 = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".to_owned());
        jsonwebtoken::encode(
            &header,
            &issuer.claims(&json!({})),
            &EncodingKey::from_secret(public_as_secret.as_bytes()).expect("HMAC key"),
        )
        .expect("signed")
    };
    let cases: Vec<(String, &str)> = vec![
        (key.sign(&issuer.claims(&json!({"aud": "https://outro.example.com/mcp"}))), "aud does not name this resource"),
        (
            key.sign(&issuer.claims(&json!({"aud": ["https://outro.example.com/mcp", format!("{RESOURCE}/")]}))),
            "aud does not name this resource",
        ),
        (key.sign(&issuer.claims(&json!({"iss": format!("{}/", issuer.issuer)}))), "iss is not"),
        (key.sign(&issuer.claims(&json!({"iss": "https://idp.example.com"}))), "iss is not"),
        (stranger.sign(&issuer.claims(&json!({}))), "signature does not verify"),
        (format!("{head}.{payload}."), "signature does not verify"),
        (
            format!("{head}.{}.{}", claims_of(json!({"sub": "admin"})), rest.split_once('.').expect("signature").1),
            "signature does not verify",
        ),
        (format!("{}.{payload}.", header_of(json!({"alg": "none", "kid": "k1"}))), "alg none, which is not accepted"),
        (format!("{}.{payload}.", header_of(json!({"alg": "None"}))), "alg None, which is not accepted"),
        (hs256, "alg HS256, which is not accepted"),
        (key.sign(&issuer.claims(&json!({"sub": null}))), "no sub claim"),
        (key.sign(&issuer.claims(&json!({"exp": null}))), "no exp claim"),
        (key.sign(&issuer.claims(&json!({"sub": "ana\u{7}"}))), "control character"),
        (key.sign(&issuer.claims(&json!({"sub": "a".repeat(256)}))), "1 to 255 characters"),
        ("nao-e-um-jwt".to_owned(), "not a JWT"),
    ];
    for (token, reason) in &cases {
        assert_invalid_token(&backend.create(token, "Invasor").await, reason);
    }
    let answer = backend.mcp(Some("Basic YW5hOng="), "tools/list", None, json!({})).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "another scheme is no token");
    assert_eq!(backend.total(&valid).await, 0, "nothing was written");
}

#[tokio::test]
async fn an_unknown_kid_in_a_loop_never_makes_the_server_fetch_the_jwks_more_than_the_bound() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &["--oauth-jwks-fetches-per-minute", "3"]).await;
    backend.ready_when("ok").await;
    assert_eq!(issuer.jwks_fetches(), 1, "fetched once at start");

    let mut reasons = Vec::new();
    for attempt in 0..30 {
        let forged = TestKey::es256(&format!("desconhecida-{attempt}"));
        let answer = backend.create(&forged.sign(&issuer.claims(&json!({}))), "Invasor").await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{answer:?}");
        reasons.push(answer.body["error"]["message"].as_str().expect("message").to_owned());
    }
    assert_eq!(issuer.jwks_fetches(), 3, "the start's fetch and two refetches: the bound of 3 per minute");
    assert!(
        reasons[..2].iter().all(|reason| reason.contains("is not among the authorization server's keys")),
        "{reasons:?}"
    );
    assert!(
        reasons[2..].iter().all(|reason| reason.contains("fetched as often as allowed this minute")),
        "{reasons:?}"
    );

    // The known key still works.
    let valid = key.sign(&issuer.claims(&json!({})));
    assert_eq!(backend.total(&valid).await, 0);
}

#[tokio::test]
async fn a_new_key_in_the_jwks_is_found_by_one_refetch() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    backend.ready_when("ok").await;
    let rotated = TestKey::es256("k2");
    issuer.add_key(&rotated);
    let token = rotated.sign(&issuer.claims(&json!({})));
    assert_eq!(backend.total(&token).await, 0);
    assert_eq!(backend.total(&token).await, 0);
    assert_eq!(issuer.jwks_fetches(), 2, "once at start, once for the new kid");
}

#[tokio::test]
async fn a_key_withdrawn_from_the_jwks_stops_its_tokens_once_the_keys_are_fetched_again() {
    let (old, new) = (TestKey::es256("k1"), TestKey::es256("k2"));
    let issuer = AuthorizationServer::start(&[&old]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    let token = old.sign(&issuer.claims(&json!({})));
    assert_eq!(backend.total(&token).await, 0);
    assert_eq!(backend.total(&token).await, 0, "verified once, then remembered");

    // Rotated: k1 withdrawn, k2 published; a k2 token makes the server fetch the keys again.
    issuer.remove_key("k1");
    issuer.add_key(&new);
    assert_eq!(backend.total(&new.sign(&issuer.claims(&json!({})))).await, 0);
    assert_invalid_token(
        &backend.read(&token, "cursos://catalogo").await,
        "is not among the authorization server's keys",
    );
}

#[tokio::test]
async fn expired_and_not_yet_valid_tokens_are_refused_beyond_the_leeway_only() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &["--oauth-leeway-seconds", "30"]).await;
    let at = |changes: Value| key.sign(&issuer.claims(&changes));
    assert_invalid_token(&backend.create(&at(json!({"exp": now() - 120})), "Vencido").await, "has expired (exp)");
    assert_invalid_token(&backend.create(&at(json!({"nbf": now() + 120})), "Futuro").await, "not valid yet (nbf)");
    assert_eq!(backend.total(&at(json!({"exp": now() - 10}))).await, 0, "expired 10 s ago: within the leeway");
    assert_eq!(backend.total(&at(json!({"nbf": now() + 10}))).await, 0, "valid in 10 s: within the leeway");
}

// ---- Scopes and catalogs ----

#[tokio::test]
async fn a_token_without_the_needed_scope_gets_403_insufficient_scope_naming_it_and_nothing_is_written() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;

    let neither = key.sign(&issuer.claims(&json!({"scope": "openid profile"})));
    let answer = backend.mcp(Some(&bearer(&neither)), "tools/list", None, json!({})).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{answer:?}");
    assert!(
        answer.challenge.starts_with(&format!(
            "Bearer error=\"insufficient_scope\", scope=\"mcp:read mcp:write\", resource_metadata=\"{METADATA_URL}\""
        )),
        "{answer:?}"
    );

    let reader = key.sign(&issuer.claims(&json!({"scope": "mcp:read"})));
    for tool in ["criar_curso", "atualizar_curso", "arquivar_curso"] {
        let params = json!({"name": tool, "arguments": {"titulo": "Lido", "cargaHoraria": 10}});
        let answer = backend.mcp(Some(&bearer(&reader)), "tools/call", Some(tool), params).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{tool}: {answer:?}");
        assert!(answer.challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:write\""), "{answer:?}");
    }
    let answer = backend.mcp(Some(&bearer(&reader)), "tools/list", None, json!({})).await;
    assert_eq!(answer.status, StatusCode::OK, "a read-only token lists the tools");
    assert_eq!(backend.total(&reader).await, 0, "nothing was written");

    let scp = key.sign(&issuer.claims(&json!({"scope": null, "scp": ["mcp:write"]})));
    created_id(&backend.create(&scp, "Pelo scp").await);
}

#[tokio::test]
async fn each_token_sees_only_the_catalog_of_its_claim_and_a_token_without_one_is_refused() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    let acme = key.sign(&issuer.claims(&json!({"tenant": "acme"})));
    let azul = key.sign(&issuer.claims(&json!({"tenant": "azul", "sub": "caio"})));
    created_id(&backend.create(&azul, "Só do azul").await);
    assert_eq!(backend.total(&azul).await, 1);
    assert_eq!(backend.total(&acme).await, 0, "another catalog's course is not seen");

    let without = key.sign(&issuer.claims(&json!({"tenant": null})));
    assert_invalid_token(&backend.create(&without, "Sem catálogo").await, "has no tenant claim");
    let invalid = key.sign(&issuer.claims(&json!({"tenant": "Não É Nome"})));
    assert_invalid_token(&backend.create(&invalid, "Inválido").await, "tenant claim is not a valid catalog name");
    let number = key.sign(&issuer.claims(&json!({"tenant": 7})));
    assert_invalid_token(&backend.create(&number, "Número").await, "tenant claim is not a string");
    assert_eq!(backend.total(&acme).await, 0);
}

#[tokio::test]
async fn with_oauth_catalog_every_token_of_the_issuer_is_in_that_one_catalog() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let flags = ["--oauth-issuer", &issuer.issuer, "--oauth-resource", RESOURCE, "--oauth-catalog", "azul"];
    let backend = Backend::start(&flags, None).await;
    let token = key.sign(&issuer.claims(&json!({"tenant": null})));
    created_id(&backend.create(&token, "Fixo").await);
    let other = key.sign(&issuer.claims(&json!({"tenant": "acme", "sub": "caio"})));
    assert_eq!(backend.total(&other).await, 1, "the claim is not read: the catalog is OAUTH_CATALOG's");
}

// ---- Transport rules, keys beside tokens, logs ----

#[tokio::test]
async fn a_token_in_the_query_string_is_refused_with_400_invalid_request() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    let token = key.sign(&issuer.claims(&json!({})));
    let request = backend
        .client
        .post(format!("{}?access_token={token}", backend.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", bearer(&token))
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string());
    let answer = backend.send(request).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{answer:?}");
    assert!(answer.challenge.starts_with("Bearer error=\"invalid_request\""), "{answer:?}");
    assert!(!answer.challenge.contains(&token) && !answer.body.to_string().contains(&token));
}

#[tokio::test]
async fn with_a_key_and_oauth_each_works_and_no_key_or_token_reaches_the_log() {
    let logs = Logs::capture();
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &["--api-key", API_KEY]).await;
    let token = key.sign(&issuer.claims(&json!({})));
    created_id(&backend.create(&token, "Pelo token").await);
    created_id(&backend.create(API_KEY, "Pela chave").await);
    assert_eq!(backend.total(API_KEY).await, 1, "the key is in the default catalog");
    assert_eq!(backend.total(&token).await, 1, "the token is in acme's");
    let wrong_key = "chave-de-teste-ao-lado-dos-tokenz";
    // Tests on other threads set and drop their own subscribers, which may leave a callsite's
    // cached interest stale for this thread's: recompute it before the events looked for.
    tracing::callsite::rebuild_interest_cache();
    assert_invalid_token(&backend.create(wrong_key, "Errada").await, "not a JWT");
    let expired = key.sign(&issuer.claims(&json!({"exp": now() - 600})));
    assert_invalid_token(&backend.create(&expired, "Vencido").await, "expired");
    let (head, _) = token.split_once('.').expect("JWS");
    let text = logs.text();
    assert!(text.contains("request refused by the token check"), "{text}");
    for secret in [token.as_str(), expired.as_str(), API_KEY, wrong_key, head] {
        assert!(!text.contains(secret), "{secret:?} reached the log:\n{text}");
    }
}

// ---- Introspection ----

#[tokio::test]
async fn an_opaque_token_is_introspected_once_then_cached_and_an_inactive_one_is_refused() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let flags = ["--oauth-introspection-client-id", INTROSPECTION_CLIENT];
    let backend = Backend::start_for(&issuer.issuer, &flags).await;
    let claims =
        issuer.claims(&json!({"active": true, "token_type": "Bearer", "sub": null, "client_id": "mcp-machine"}));
    issuer.add_opaque("opaco-ativo", claims.clone());
    issuer.add_opaque("opaco-de-outro-recurso", json!({"active": true, "aud": "https://outro.example.com/mcp", "scope": "mcp:write", "tenant": "acme", "sub": "x"}));
    issuer.add_opaque("opaco-vencido", issuer.claims(&json!({"active": true, "exp": now() - 600})));
    backend.ready_when("ok").await;

    created_id(&backend.create("opaco-ativo", "Pela introspecção").await);
    assert_eq!(backend.total("opaco-ativo").await, 1);
    assert_eq!(issuer.introspections(), 1, "the answer is reused");

    assert_invalid_token(&backend.create("opaco-inativo", "Inativo").await, "not active");
    assert_invalid_token(&backend.create("opaco-inativo", "Inativo").await, "not active");
    assert_invalid_token(&backend.create("opaco-de-outro-recurso", "Outro").await, "aud does not name this resource");
    assert_invalid_token(&backend.create("opaco-vencido", "Vencido").await, "has expired");
    assert_eq!(issuer.introspections(), 4, "each token asked once");

    // The client-credentials token has no sub: its client is the caller.
    let answer = backend.read("opaco-ativo", "cursos://catalogo").await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn without_an_introspection_client_an_opaque_token_is_refused_unasked() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    issuer.add_opaque("opaco", issuer.claims(&json!({"active": true})));
    assert_invalid_token(&backend.create("opaco", "Opaco").await, "not a JWT");
    assert_eq!(issuer.introspections(), 0);
}

// ---- The authorization server down ----

#[tokio::test]
async fn an_issuer_down_at_start_is_retried_and_ready_says_so_until_it_answers() {
    let key = TestKey::es256("k1");
    let reserved = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = reserved.local_addr().expect("address");
    drop(reserved);
    let issuer_url = format!("http://{address}");
    let backend = Backend::start_for(&issuer_url, &[]).await;

    let (status, ready) = backend.ready_when("unreachable").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}");
    assert_eq!(ready["reason"], "authorization_server_unreachable");
    let token_claims = json!({"iss": issuer_url, "aud": RESOURCE, "sub": "ana", "scope": "mcp:write", "tenant": "acme", "exp": now() + 600});
    let token = key.sign(&token_claims);
    assert_invalid_token(&backend.create(&token, "Cedo").await, "cannot be reached");

    // The issuer comes up, with only OpenID discovery (RFC 8414's location answers 404).
    let listener = tokio::net::TcpListener::bind(address).await.expect("the same port again");
    let issuer = AuthorizationServer::serve(listener, &[&key], false);
    assert_eq!(issuer.issuer, issuer_url);
    let (status, ready) = backend.ready_when("ok").await;
    assert_eq!((status, ready), (StatusCode::OK, json!({"status": "ready", "oauth": "ok"})));
    created_id(&backend.create(&token, "Depois").await);
}

#[tokio::test]
async fn an_issuer_down_later_leaves_cached_keys_working_and_refuses_a_new_kid_clearly() {
    let key = TestKey::es256("k1");
    let issuer = AuthorizationServer::start(&[&key]).await;
    let backend = Backend::start_for(&issuer.issuer, &[]).await;
    let token = key.sign(&issuer.claims(&json!({})));
    created_id(&backend.create(&token, "Antes").await);

    issuer.set_down(true);
    let later = key.sign(&issuer.claims(&json!({"sub": "bia"})));
    created_id(&backend.create(&later, "Com a chave em cache").await);
    let rotated = TestKey::es256("k2");
    issuer.add_key(&rotated);
    let answer = backend.create(&rotated.sign(&issuer.claims(&json!({}))), "Chave nova").await;
    assert_invalid_token(&answer, "cannot be reached to fetch its keys");
    let (status, ready) = backend.ready_when("unreachable").await;
    assert_eq!(
        (status, ready),
        (StatusCode::OK, json!({"status": "ready", "oauth": "unreachable"})),
        "cached keys still work"
    );
    assert_eq!(backend.total(&token).await, 2);
}

/// The log events of the test's thread (the server's tasks run on it: a current-thread runtime).
struct Logs {
    written: Arc<Mutex<Vec<u8>>>,
    _guard: tracing::subscriber::DefaultGuard,
}

#[derive(Clone)]
struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn capture() -> Self {
        let written = Arc::new(Mutex::new(Vec::new()));
        let writer = LogWriter(Arc::clone(&written));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        Self { written, _guard: tracing::subscriber::set_default(subscriber) }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.written.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

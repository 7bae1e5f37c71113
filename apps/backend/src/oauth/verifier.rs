//! [`ResourceServer`]: an access token in, a [`Caller`] or a [`TokenRefusal`] out.
//!
//! A token with the shape of a JWS (three base64url parts, a JSON header) is a JWT: its `alg`
//! must be one of [`ACCEPTED_ALGORITHMS`], its key is the JWKS key of its `kid` (whose own `alg`,
//! when it names one, must agree), its signature must verify, `iss` must equal `OAUTH_ISSUER`,
//! `aud` must contain `OAUTH_RESOURCE` (RFC 8707), `exp` must be present and `exp`/`nbf` hold
//! within `OAUTH_LEEWAY_SECONDS`, and `sub` must be present. Any other token is opaque: it is
//! introspected (RFC 7662) when `OAUTH_INTROSPECTION_CLIENT_ID` is set, refused otherwise.
//! Introspection answers are cached by the token's SHA-256 (never the token), for at most
//! [`INTROSPECTION_CACHE_TTL`] and never past the token's `exp`.
//!
//! Then, for both: the scopes (`scope`, space-separated, or `scp`) give the caller's
//! [`Scope`] (the write scope writes and reads; the read scope reads; neither is
//! [`TokenRefusal::InsufficientScope`]); the catalog is the named claim's (a valid catalog name,
//! never the default catalog for want of one) or `OAUTH_CATALOG`; the subject must be non-empty,
//! at most [`MAX_SUBJECT_CHARS`] characters, without control characters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use courses_domain::CatalogName;
use jsonwebtoken::{Algorithm, Validation};
use mcp_server::{Caller, Principal, Scope};
use serde_json::{Map, Value};
use sha2::Digest as _;
use tokio_util::sync::CancellationToken;

use super::authorization_server::{
    ACCEPTED_ALGORITHMS, AuthorizationServer, KeyLookup, Status, http_client, read_json,
};
use super::config::{CatalogSource, MAX_SUBJECT_CHARS, OAuthConfig};

/// The longest an introspection answer is reused (also bounded by the token's `exp`).
pub const INTROSPECTION_CACHE_TTL: Duration = Duration::from_secs(60);
/// The most introspection answers kept.
pub const INTROSPECTION_CACHE_ENTRIES: usize = 4096;
/// The longest token looked at (longer ones are refused unread).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token was not accepted. The descriptions name the rule, never the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRefusal {
    /// 401 `invalid_token`: the token is not valid here.
    Invalid(String),
    /// 403 `insufficient_scope`: valid, but it has neither the read nor the write scope.
    InsufficientScope,
    /// 503: the token could not be checked now (introspection unreachable).
    Unavailable(String),
}

impl TokenRefusal {
    fn invalid(description: impl Into<String>) -> Self {
        Self::Invalid(description.into())
    }
}

/// A cached introspection answer.
#[derive(Debug, Clone)]
struct Introspected {
    until: Instant,
    outcome: Result<Caller, TokenRefusal>,
}

/// The OAuth resource server: checks access tokens against the authorization server.
#[derive(Debug)]
pub struct ResourceServer {
    issuer: Arc<AuthorizationServer>,
    introspected: Mutex<HashMap<[u8; 32], Introspected>>,
}

/// The JWT header fields looked at.
#[derive(Debug, serde::Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

impl ResourceServer {
    /// The resource server of `config`; call [`ResourceServer::keep_up`] to discover the issuer.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn new(config: OAuthConfig) -> Result<Self, reqwest::Error> {
        let issuer = Arc::new(AuthorizationServer::new(config, http_client()?));
        Ok(Self { issuer, introspected: Mutex::default() })
    }

    /// Discovers the issuer in the background and keeps its keys up to date until `shutdown`.
    pub fn keep_up(&self, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        self.issuer.keep_up(shutdown)
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &OAuthConfig {
        self.issuer.config()
    }

    /// The authorization server's state, for `/ready`.
    #[must_use]
    pub fn status(&self) -> Status {
        self.issuer.status()
    }

    /// The caller `token` (the bytes after `Bearer `) authenticates as.
    ///
    /// # Errors
    /// [`TokenRefusal`], with the reason (never the token).
    pub async fn verify(&self, token: &[u8]) -> Result<Caller, TokenRefusal> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenRefusal::invalid("the token is too long"));
        }
        let Ok(token) = std::str::from_utf8(token) else {
            return Err(TokenRefusal::invalid("the token is not text"));
        };
        match jws_header(token) {
            Some(header) => self.verify_jwt(token, &header).await,
            None if self.config().introspection().is_some() => self.introspect(token).await,
            None => {
                Err(TokenRefusal::invalid("the token is not a JWT (and this server does not introspect opaque tokens)"))
            }
        }
    }

    async fn verify_jwt(&self, token: &str, header: &Header) -> Result<Caller, TokenRefusal> {
        let Some(algorithm) =
            header.alg.parse::<Algorithm>().ok().filter(|algorithm| ACCEPTED_ALGORITHMS.contains(algorithm))
        else {
            return Err(TokenRefusal::invalid(format!(
                "the token is signed with alg {}, which is not accepted (only RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)",
                printable(&header.alg)
            )));
        };
        let key = self.issuer.signing_key(header.kid.as_deref(), algorithm).await.map_err(|lookup| {
            TokenRefusal::invalid(match lookup {
                KeyLookup::NotInJwks => "the token's signing key (kid) is not among the authorization server's keys",
                KeyLookup::FetchBoundReached => {
                    "the token's signing key (kid) is unknown, and the authorization server's keys were fetched as often as allowed this minute"
                }
                KeyLookup::Unreachable => {
                    "the token's signing key (kid) is unknown, and the authorization server cannot be reached to fetch its keys"
                }
            })
        })?;
        if key.algorithm.is_some_and(|named| named != algorithm) {
            return Err(TokenRefusal::invalid("the token's alg differs from the alg of its key in the JWKS"));
        }
        if key.key.family() != algorithm.family() {
            return Err(TokenRefusal::invalid("the token's alg does not fit the type of its key in the JWKS"));
        }
        let config = self.config();
        let mut validation = Validation::new(algorithm);
        validation.algorithms = vec![algorithm];
        validation.leeway = config.leeway().as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[config.issuer()]);
        validation.set_audience(&[config.resource()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation).map_err(|error| {
            use jsonwebtoken::errors::ErrorKind;
            TokenRefusal::invalid(match error.kind() {
                ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
                ErrorKind::ExpiredSignature => "the token has expired (exp)".to_owned(),
                ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
                ErrorKind::InvalidAudience => {
                    format!("the token's aud does not name this resource ({})", config.resource())
                }
                ErrorKind::InvalidIssuer => format!("the token's iss is not {}", config.issuer()),
                ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
                ErrorKind::InvalidClaimFormat(claim) => format!("the token's {claim} claim is malformed"),
                _ => "the token is not a valid JWT".to_owned(),
            })
        })?;
        let claims = data.claims;
        // `iss` must be the one string (jsonwebtoken also takes an array holding it).
        if claims.get("iss").and_then(Value::as_str) != Some(config.issuer()) {
            return Err(TokenRefusal::invalid(format!("the token's iss is not {}", config.issuer())));
        }
        let Some(exp) = claims.get("exp").and_then(Value::as_u64) else {
            return Err(TokenRefusal::invalid("the token's exp claim is malformed"));
        };
        let subject = claims.get("sub").and_then(Value::as_str);
        self.caller(&claims, subject, Some(exp))
    }

    /// The caller of checked claims: subject, scope, catalog, expiry (`exp` plus the leeway, the
    /// last instant the token is accepted).
    fn caller(
        &self,
        claims: &Map<String, Value>,
        subject: Option<&str>,
        exp: Option<u64>,
    ) -> Result<Caller, TokenRefusal> {
        let config = self.config();
        let subject = subject.ok_or_else(|| TokenRefusal::invalid("the token names no subject (sub)"))?;
        if subject.is_empty() || subject.chars().count() > MAX_SUBJECT_CHARS || subject.chars().any(char::is_control) {
            return Err(TokenRefusal::invalid(format!(
                "the token's sub must be 1 to {MAX_SUBJECT_CHARS} characters, none of them a control character"
            )));
        }
        let scopes = scopes_of(claims);
        let scope = if scopes.iter().any(|scope| *scope == config.write_scope()) {
            Scope::Write
        } else if scopes.iter().any(|scope| *scope == config.read_scope()) {
            Scope::Read
        } else {
            return Err(TokenRefusal::InsufficientScope);
        };
        let catalog = match config.catalog() {
            CatalogSource::Fixed(catalog) => catalog.clone(),
            CatalogSource::Claim(claim) => match claims.get(claim) {
                None | Some(Value::Null) => {
                    return Err(TokenRefusal::invalid(format!(
                        "the token has no {claim} claim, which names its catalog (OAUTH_CATALOG_CLAIM): no catalog is assumed"
                    )));
                }
                Some(Value::String(name)) => CatalogName::parse(name).map_err(|_| {
                    TokenRefusal::invalid(format!("the token's {claim} claim is not a valid catalog name"))
                })?,
                Some(_) => {
                    return Err(TokenRefusal::invalid(format!("the token's {claim} claim is not a string")));
                }
            },
        };
        let issuer = config.issuer();
        let mut caller = Caller::new(format!("{subject}@{issuer}"), scope)
            .in_catalog(catalog)
            .with_principal(Principal::new(format!("oauth:{issuer}#{subject}")));
        if let Some(exp) = exp {
            caller = caller.expiring_at(UNIX_EPOCH + Duration::from_secs(exp) + config.leeway());
        }
        Ok(caller)
    }

    /// RFC 7662 for an opaque token, cached.
    async fn introspect(&self, token: &str) -> Result<Caller, TokenRefusal> {
        let hash: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        if let Some(cached) = self.introspected.lock().unwrap_or_else(PoisonError::into_inner).get(&hash)
            && cached.until > now
        {
            return cached.outcome.clone();
        }
        let (outcome, ttl) = self.ask_introspection(token).await?;
        let mut cache = self.introspected.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= INTROSPECTION_CACHE_ENTRIES {
            cache.retain(|_, cached| cached.until > now);
            if cache.len() >= INTROSPECTION_CACHE_ENTRIES {
                cache.clear();
            }
        }
        if !ttl.is_zero() {
            cache.insert(hash, Introspected { until: now + ttl, outcome: outcome.clone() });
        }
        outcome
    }

    /// Asks the introspection endpoint: the outcome, and how long it may be reused. An error
    /// here (not cached) is the endpoint failing, not the token.
    async fn ask_introspection(&self, token: &str) -> Result<(Result<Caller, TokenRefusal>, Duration), TokenRefusal> {
        let config = self.config();
        let unavailable = || {
            TokenRefusal::Unavailable(
                "the token cannot be checked now: the authorization server's introspection does not answer".to_owned(),
            )
        };
        let (Some(client), Some(endpoint)) = (
            config.introspection(),
            self.issuer.metadata().and_then(|metadata| metadata.introspection_endpoint.clone()),
        ) else {
            tracing::warn!(target: "backend::oauth", "an opaque token cannot be introspected: the authorization server's metadata is not loaded or has no introspection_endpoint");
            return Err(unavailable());
        };
        let request = self
            .issuer
            .client()
            .post(&endpoint)
            .basic_auth(form_encoded(&client.client_id), Some(form_encoded(client.secret())))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        let answer: Map<String, Value> = read_json(request.send().await, "introspection").await.map_err(|error| {
            tracing::warn!(target: "backend::oauth", %error, "token introspection failed");
            unavailable()
        })?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let leeway = config.leeway().as_secs();
        let inactive = |description: &str| (Err(TokenRefusal::invalid(description)), INTROSPECTION_CACHE_TTL);
        if answer.get("active").and_then(Value::as_bool) != Some(true) {
            return Ok(inactive("the token is not active (introspection)"));
        }
        if let Some(iss) = answer.get("iss")
            && iss.as_str() != Some(config.issuer())
        {
            return Ok(inactive(&format!("the token's iss is not {}", config.issuer())));
        }
        if let Some(aud) = answer.get("aud")
            && !audience_contains(aud, config.resource())
        {
            return Ok(inactive(&format!("the token's aud does not name this resource ({})", config.resource())));
        }
        let exp = answer.get("exp").and_then(Value::as_u64);
        if exp.is_some_and(|exp| exp.saturating_add(leeway) <= now) {
            return Ok(inactive("the token has expired (exp)"));
        }
        if answer.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now.saturating_add(leeway)) {
            return Ok(inactive("the token is not valid yet (nbf)"));
        }
        let subject =
            answer.get("sub").and_then(Value::as_str).or_else(|| answer.get("client_id").and_then(Value::as_str));
        let ttl = exp.map_or(INTROSPECTION_CACHE_TTL, |exp| {
            Duration::from_secs(exp.saturating_add(leeway).saturating_sub(now)).min(INTROSPECTION_CACHE_TTL)
        });
        Ok((self.caller(&answer, subject, exp), ttl))
    }
}

/// The header of `token` when it has the shape of a JWS in compact form.
fn jws_header(token: &str) -> Option<Header> {
    let mut parts = token.split('.');
    let (header, _payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// At most 20 printable characters of a header value, for a refusal's text.
fn printable(text: &str) -> String {
    text.chars().filter(|character| character.is_ascii_graphic()).take(20).filter(|c| *c != '"' && *c != '\\').collect()
}

/// The scopes of `claims`: `scope` (RFC 8693/9068, space-separated) or `scp` (a string or an
/// array of strings, as some providers write it).
fn scopes_of(claims: &Map<String, Value>) -> Vec<&str> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_ascii_whitespace().collect(),
        (_, Some(Value::String(scope))) => scope.split_ascii_whitespace().collect(),
        (_, Some(Value::Array(scopes))) => scopes.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn audience_contains(aud: &Value, resource: &str) -> bool {
    match aud {
        Value::String(aud) => aud == resource,
        Value::Array(auds) => auds.iter().any(|aud| aud.as_str() == Some(resource)),
        _ => false,
    }
}

/// RFC 6749 §2.3.1: client credentials are form-encoded before they go into Basic auth.
fn form_encoded(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => encoded.push(char::from(byte)),
            b' ' => encoded.push('+'),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_three_part_token_with_a_json_header_is_a_jwt() {
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        assert_eq!(jws_header(&format!("{header}.e30.")).map(|header| header.alg), Some("none".to_owned()));
        assert!(jws_header("opaque-token").is_none());
        assert!(jws_header("a.b.c").is_none(), "not base64 JSON");
        assert!(jws_header(&format!("{header}.e30..x")).is_none(), "five parts is a JWE, not a JWS");
    }

    #[test]
    fn scopes_are_read_from_scope_or_scp() {
        let claims = |value: Value| value.as_object().cloned().expect("object");
        assert_eq!(scopes_of(&claims(serde_json::json!({"scope": "a  b"}))), ["a", "b"]);
        assert_eq!(scopes_of(&claims(serde_json::json!({"scp": ["a", 1, "c"]}))), ["a", "c"]);
        assert!(scopes_of(&claims(serde_json::json!({}))).is_empty());
    }

    #[test]
    fn credentials_are_form_encoded_for_basic_auth() {
        assert_eq!(form_encoded("mcp rs:é/"), "mcp+rs%3A%C3%A9%2F");
    }
}

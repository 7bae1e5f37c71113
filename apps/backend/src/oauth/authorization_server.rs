//! [`AuthorizationServer`]: the issuer as this server knows it: its metadata, its signing keys
//! (the JWKS, cached by `kid`), and whether it answered the last time it was asked.
//!
//! **Discovery.** The metadata is read from `{issuer}/.well-known/oauth-authorization-server`
//! (RFC 8414; also the form with the well-known part inserted before the issuer's path), else
//! `{issuer}/.well-known/openid-configuration`; its `issuer` must equal `OAUTH_ISSUER` exactly,
//! and its `jwks_uri` and `introspection_endpoint` follow the issuer's https rule. An issuer that
//! cannot be reached at start is retried in the background ([`AuthorizationServer::keep_up`]):
//! the server serves meanwhile (keys still work) and `/ready` says so.
//!
//! **The JWKS fetch bound.** Every JWKS fetch (the background refresh, and the refetch asked for
//! by a token whose `kid` is unknown) takes a slot of a sliding window of one minute holding at
//! most `OAUTH_JWKS_FETCHES_PER_MINUTE`: a stream of tokens with made-up `kid`s cannot make this
//! server fetch more than that, whatever their number. Fetches are one at a time; a request that
//! waited for another's fetch looks at its result before asking for its own.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use reqwest::Url;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::config::{OAuthConfig, is_allowed_url};

/// How long a connection to the authorization server may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a whole request to the authorization server may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest metadata, JWKS or introspection answer read.
pub const MAX_RESPONSE_BYTES: usize = 512 * 1024;
/// How often the JWKS is fetched again while the issuer answers (keys rotated or withdrawn).
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(15 * 60);
/// The first wait before asking an unreachable issuer again; doubled up to [`MAX_RETRY`].
pub const FIRST_RETRY: Duration = Duration::from_millis(250);
/// The longest wait between two attempts to reach an unreachable issuer.
pub const MAX_RETRY: Duration = Duration::from_secs(30);
/// The window of the JWKS fetch bound.
const FETCH_WINDOW: Duration = Duration::from_secs(60);

/// The algorithms a token may be signed with: asymmetric only. Never `none`, never an HMAC
/// (whose "key" a public JWKS would hand to anyone).
pub const ACCEPTED_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What the issuer's metadata says that this server uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    /// Must equal `OAUTH_ISSUER`.
    pub issuer: String,
    /// Where its signing keys are.
    pub jwks_uri: Option<String>,
    /// Where opaque tokens are introspected (RFC 7662).
    pub introspection_endpoint: Option<String>,
}

/// One signing key of the JWKS.
#[derive(Clone)]
pub struct SigningKey {
    /// The key.
    pub key: DecodingKey,
    /// The algorithm the JWK names (`alg`), which a token's header must then name too.
    pub algorithm: Option<Algorithm>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SigningKey").field("algorithm", &self.algorithm).finish_non_exhaustive()
    }
}

/// The JWKS as last fetched.
#[derive(Debug, Default)]
struct KeySet {
    by_kid: HashMap<String, SigningKey>,
    /// Keys without a `kid` (a token without `kid` may use one when it is the only one).
    without_kid: Vec<SigningKey>,
}

/// What `/ready` says of the authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reachability {
    /// Not asked yet (the first attempt is under way).
    Starting,
    /// The last fetch succeeded.
    Ok,
    /// The last attempt failed (unreachable, an error status, a document that is not valid).
    Unreachable,
}

impl Reachability {
    /// The value of `/ready`'s `oauth` field.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ok => "ok",
            Self::Unreachable => "unreachable",
        }
    }
}

/// The state `/ready` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Whether the issuer answered last time.
    pub reachability: Reachability,
    /// Whether tokens can be checked at all: keys (or, for opaque tokens only, the metadata)
    /// were loaded at least once.
    pub usable: bool,
}

/// Why a token's signing key could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLookup {
    /// The JWKS was fetched (now or lately) and has no such key.
    NotInJwks,
    /// The key is unknown, and the JWKS was fetched as often as allowed this minute.
    FetchBoundReached,
    /// The key is unknown, and the authorization server cannot be reached to fetch its keys.
    Unreachable,
}

/// Why a fetch failed: logged, never sent.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The request failed (connection, timeout, status).
    #[error("{0}")]
    Http(String),
    /// The answer is not the document expected.
    #[error("{0}")]
    Document(String),
}

/// The authorization server, as discovered and cached.
#[derive(Debug)]
pub struct AuthorizationServer {
    config: OAuthConfig,
    client: reqwest::Client,
    metadata: RwLock<Option<Arc<Metadata>>>,
    keys: RwLock<Arc<KeySet>>,
    status: Mutex<Status>,
    /// When the JWKS was fetched in the last minute; held while fetching (one at a time).
    fetches: tokio::sync::Mutex<VecDeque<Instant>>,
}

/// The HTTP client for the authorization server: rustls with `ring`, no redirects, timeouts.
///
/// # Errors
/// The client cannot be built (no TLS roots).
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    // Once per process; a second call finds it installed, which is what it wants.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("mcp-cursos-backend/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Reads `response`'s body, at most [`MAX_RESPONSE_BYTES`], after checking its status.
pub(crate) async fn read_json<T: serde::de::DeserializeOwned>(
    response: reqwest::Result<reqwest::Response>,
    what: &str,
) -> Result<T, FetchError> {
    let mut response = response.map_err(|error| FetchError::Http(format!("{what}: {}", without_url(&error))))?;
    if !response.status().is_success() {
        return Err(FetchError::Http(format!("{what}: HTTP {}", response.status().as_u16())));
    }
    let mut body = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|error| FetchError::Http(format!("{what}: {}", without_url(&error))))?
    {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(FetchError::Document(format!("{what}: over {MAX_RESPONSE_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body)
        .map_err(|error| FetchError::Document(format!("{what}: not the JSON expected ({error})")))
}

/// A reqwest error's text without its URL (the URLs are the operator's, but kept short).
fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut cause = std::error::Error::source(error);
    let mut innermost = None;
    while let Some(next) = cause {
        innermost = Some(next.to_string());
        cause = next.source();
    }
    innermost.map_or_else(|| kind.to_owned(), |innermost| format!("{kind} ({innermost})"))
}

impl AuthorizationServer {
    /// The issuer of `config`, not asked yet.
    #[must_use]
    pub fn new(config: OAuthConfig, client: reqwest::Client) -> Self {
        Self {
            config,
            client,
            metadata: RwLock::default(),
            keys: RwLock::default(),
            status: Mutex::new(Status { reachability: Reachability::Starting, usable: false }),
            fetches: tokio::sync::Mutex::default(),
        }
    }

    /// The settings.
    #[must_use]
    pub const fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The HTTP client (introspection uses it too).
    #[must_use]
    pub const fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// What `/ready` reports.
    #[must_use]
    pub fn status(&self) -> Status {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The metadata, once discovered.
    #[must_use]
    pub fn metadata(&self) -> Option<Arc<Metadata>> {
        self.metadata.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set_reachability(&self, reachability: Reachability) {
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        let was = status.reachability;
        status.reachability = reachability;
        if reachability == Reachability::Ok {
            status.usable = true;
        }
        drop(status);
        if was != reachability && reachability == Reachability::Ok && was == Reachability::Unreachable {
            tracing::info!(target: "backend::oauth", issuer = self.config.issuer(), "the authorization server answers again");
        }
    }

    /// Discovers the metadata (when not known yet), then fetches the JWKS, within the fetch
    /// bound: `Ok(false)` when the bound left no slot (nothing asked, the status unchanged).
    /// Updates the status; logs a failure.
    async fn refresh(&self) -> Result<bool, FetchError> {
        let mut fetches = self.fetches.lock().await;
        // The background's discovery is bounded by its own backoff; the JWKS fetch by the bound.
        let result = match self.discovered().await {
            Ok(_) if !take_slot(&mut fetches, self.config.jwks_fetches_per_minute().get(), Instant::now()) => {
                return Ok(false);
            }
            Ok(metadata) => self.fetch_jwks(&metadata).await,
            Err(error) => Err(error),
        };
        drop(fetches);
        match &result {
            Ok(()) => self.set_reachability(Reachability::Ok),
            Err(error) => {
                tracing::warn!(target: "backend::oauth", issuer = self.config.issuer(), %error, "the authorization server cannot be used now; tokens whose keys are not cached are refused");
                self.set_reachability(Reachability::Unreachable);
            }
        }
        result.map(|()| true)
    }

    /// The metadata (discovered when not known yet), then the JWKS. Called with the fetch
    /// slot taken and the fetch lock held.
    async fn load(&self) -> Result<(), FetchError> {
        let metadata = self.discovered().await?;
        self.fetch_jwks(&metadata).await
    }

    /// The metadata, discovered now when not known yet.
    async fn discovered(&self) -> Result<Arc<Metadata>, FetchError> {
        if let Some(metadata) = self.metadata() {
            return Ok(metadata);
        }
        let metadata = Arc::new(self.discover().await?);
        tracing::info!(
            target: "backend::oauth",
            issuer = %metadata.issuer,
            jwks_uri = metadata.jwks_uri.as_deref().unwrap_or("-"),
            introspection = metadata.introspection_endpoint.is_some(),
            "authorization server metadata loaded"
        );
        *self.metadata.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&metadata));
        Ok(metadata)
    }

    /// The metadata document, from the RFC 8414 locations, then OpenID discovery.
    async fn discover(&self) -> Result<Metadata, FetchError> {
        let issuer = self.config.issuer_url();
        let path = issuer.path().trim_end_matches('/');
        let origin = issuer.origin().ascii_serialization();
        let trimmed = self.config.issuer().trim_end_matches('/');
        let mut candidates = vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{trimmed}/.well-known/oauth-authorization-server"),
            format!("{trimmed}/.well-known/openid-configuration"),
        ];
        candidates.dedup();
        let mut last_error = None;
        for url in candidates {
            match read_json::<Metadata>(self.client.get(&url).send().await, &url).await {
                Ok(metadata) => return self.checked(metadata),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| FetchError::Document("no metadata location".to_owned())))
    }

    fn checked(&self, metadata: Metadata) -> Result<Metadata, FetchError> {
        if metadata.issuer != self.config.issuer() {
            return Err(FetchError::Document(format!(
                "the metadata names the issuer {:?}, not OAUTH_ISSUER={} (RFC 8414 §3.3: they must be equal)",
                metadata.issuer,
                self.config.issuer()
            )));
        }
        for (name, url) in
            [("jwks_uri", &metadata.jwks_uri), ("introspection_endpoint", &metadata.introspection_endpoint)]
        {
            if let Some(url) = url
                && !Url::parse(url).is_ok_and(|url| is_allowed_url(&url))
            {
                return Err(FetchError::Document(format!("the metadata's {name} {url:?} is not an https URL")));
            }
        }
        if metadata.jwks_uri.is_none() && self.config.introspection().is_none() {
            return Err(FetchError::Document(
                "the metadata has no jwks_uri, so JWTs cannot be checked (and OAUTH_INTROSPECTION_CLIENT_ID is not set)".to_owned(),
            ));
        }
        Ok(metadata)
    }

    async fn fetch_jwks(&self, metadata: &Metadata) -> Result<(), FetchError> {
        let Some(jwks_uri) = &metadata.jwks_uri else {
            return Ok(());
        };
        let set: JwkSet = read_json(self.client.get(jwks_uri).send().await, jwks_uri).await?;
        let keys = key_set(&set);
        tracing::info!(target: "backend::oauth", keys = keys.by_kid.len() + keys.without_kid.len(), "authorization server keys (JWKS) loaded");
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
        Ok(())
    }

    fn cached(&self, kid: Option<&str>, algorithm: Algorithm) -> Option<SigningKey> {
        let keys = Arc::clone(&self.keys.read().unwrap_or_else(PoisonError::into_inner));
        match kid {
            Some(kid) => keys.by_kid.get(kid).cloned(),
            None => {
                let mut fitting = keys
                    .without_kid
                    .iter()
                    .chain(keys.by_kid.values())
                    .filter(|key| key.algorithm.is_none_or(|named| named == algorithm))
                    .filter(|key| key.key.family() == algorithm.family());
                let only = fitting.next()?;
                fitting.next().is_none().then(|| only.clone())
            }
        }
    }

    /// The key a token with `kid` signed with `algorithm` is checked with: from the cache, or,
    /// when unknown, after one refetch of the JWKS if the fetch bound allows it.
    ///
    /// # Errors
    /// [`KeyLookup`]: why there is no key.
    pub async fn signing_key(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<SigningKey, KeyLookup> {
        if let Some(key) = self.cached(kid, algorithm) {
            return Ok(key);
        }
        let mut fetches = self.fetches.lock().await;
        // Another request's fetch may have brought it while this one waited.
        if let Some(key) = self.cached(kid, algorithm) {
            return Ok(key);
        }
        if !take_slot(&mut fetches, self.config.jwks_fetches_per_minute().get(), Instant::now()) {
            return Err(if self.status().reachability == Reachability::Ok {
                KeyLookup::FetchBoundReached
            } else {
                KeyLookup::Unreachable
            });
        }
        match self.load().await {
            Ok(()) => self.set_reachability(Reachability::Ok),
            Err(error) => {
                tracing::warn!(target: "backend::oauth", issuer = self.config.issuer(), %error, "cannot fetch the authorization server's keys for a token with an unknown kid");
                self.set_reachability(Reachability::Unreachable);
                return Err(KeyLookup::Unreachable);
            }
        }
        drop(fetches);
        self.cached(kid, algorithm).ok_or(KeyLookup::NotInJwks)
    }

    /// Keeps the metadata and keys up to date until `shutdown`: while the issuer cannot be
    /// reached, asks again after [`FIRST_RETRY`], doubling up to [`MAX_RETRY`]; once it answers,
    /// refetches the JWKS every [`REFRESH_INTERVAL`].
    pub fn keep_up(self: &Arc<Self>, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        let server = Arc::clone(self);
        tokio::spawn(async move {
            let mut retry = FIRST_RETRY;
            loop {
                let wait = match server.refresh().await {
                    Ok(true) => {
                        retry = FIRST_RETRY;
                        REFRESH_INTERVAL
                    }
                    // No slot this minute (tokens with unknown kids took them): try again soon,
                    // unless the keys are loaded and the issuer answers.
                    Ok(false) if server.status().reachability == Reachability::Ok => REFRESH_INTERVAL,
                    Ok(false) => retry,
                    Err(_) => {
                        let wait = retry;
                        retry = (retry * 2).min(MAX_RETRY);
                        wait
                    }
                };
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        })
    }
}

/// Takes one fetch slot at `now` if fewer than `per_minute` were taken in the last minute.
fn take_slot(fetches: &mut VecDeque<Instant>, per_minute: u32, now: Instant) -> bool {
    while fetches.front().is_some_and(|taken| now.duration_since(*taken) >= FETCH_WINDOW) {
        fetches.pop_front();
    }
    if fetches.len() >= usize::try_from(per_minute).unwrap_or(usize::MAX) {
        return false;
    }
    fetches.push_back(now);
    true
}

/// The signing keys of `set`: keys for encryption, symmetric keys (`oct`) and keys that do not
/// parse are left out.
fn key_set(set: &JwkSet) -> KeySet {
    let mut keys = KeySet::default();
    for jwk in &set.keys {
        let Some(key) = signing_key(jwk) else {
            continue;
        };
        match &jwk.common.key_id {
            Some(kid) => {
                keys.by_kid.insert(kid.clone(), key);
            }
            None => keys.without_kid.push(key),
        }
    }
    keys
}

fn signing_key(jwk: &Jwk) -> Option<SigningKey> {
    use jsonwebtoken::jwk::AlgorithmParameters;
    if matches!(jwk.common.public_key_use, Some(ref usage) if *usage != PublicKeyUse::Signature) {
        return None;
    }
    if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
        return None;
    }
    let algorithm = match jwk.common.key_algorithm {
        Some(named) => {
            Some(Algorithm::try_from(named).ok().filter(|algorithm| ACCEPTED_ALGORITHMS.contains(algorithm))?)
        }
        None => None,
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(SigningKey { key, algorithm })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fetch_bound_allows_so_many_fetches_in_any_minute() {
        let mut fetches = VecDeque::new();
        let start = Instant::now();
        for second in 0..3 {
            assert!(take_slot(&mut fetches, 3, start + Duration::from_secs(second)));
        }
        assert!(!take_slot(&mut fetches, 3, start + Duration::from_secs(59)), "a fourth within the minute");
        assert!(take_slot(&mut fetches, 3, start + Duration::from_secs(60)), "the first slot is free again");
        assert!(!take_slot(&mut fetches, 3, start + Duration::from_secs(60)));
    }

    #[test]
    fn no_accepted_algorithm_is_symmetric_or_none() {
        for algorithm in ACCEPTED_ALGORITHMS {
            assert_ne!(algorithm.family(), jsonwebtoken::AlgorithmFamily::Hmac, "{algorithm:?}");
        }
    }
}

//! [`OAuthConfig`]: the OAuth settings of `serve`, checked once at start. Every error names the
//! setting to change and the value it saw (never the introspection secret).

use std::num::NonZeroU32;
use std::time::Duration;

use courses_domain::CatalogName;
use reqwest::Url;

/// The read scope when `OAUTH_READ_SCOPE` is not set.
pub const DEFAULT_READ_SCOPE: &str = "mcp:read";
/// The write scope when `OAUTH_WRITE_SCOPE` is not set.
pub const DEFAULT_WRITE_SCOPE: &str = "mcp:write";
/// `OAUTH_LEEWAY_SECONDS` when not set: the clock skew allowed on `exp` and `nbf`.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 30;
/// The largest `OAUTH_LEEWAY_SECONDS` accepted.
pub const MAX_LEEWAY_SECONDS: u64 = 300;
/// `OAUTH_JWKS_FETCHES_PER_MINUTE` when not set.
pub const DEFAULT_JWKS_FETCHES_PER_MINUTE: u32 = 6;
/// The largest `OAUTH_JWKS_FETCHES_PER_MINUTE` accepted.
pub const MAX_JWKS_FETCHES_PER_MINUTE: u32 = 60;
/// The longest subject (`sub`) accepted, in characters.
pub const MAX_SUBJECT_CHARS: usize = 255;

/// The settings as given (flags or environment), before they are checked.
#[derive(Debug, Clone, Default)]
pub struct OAuthInputs<'a> {
    /// `OAUTH_ISSUER`.
    pub issuer: Option<&'a str>,
    /// `OAUTH_RESOURCE`.
    pub resource: Option<&'a str>,
    /// `OAUTH_READ_SCOPE`.
    pub read_scope: Option<&'a str>,
    /// `OAUTH_WRITE_SCOPE`.
    pub write_scope: Option<&'a str>,
    /// `OAUTH_CATALOG_CLAIM`.
    pub catalog_claim: Option<&'a str>,
    /// `OAUTH_CATALOG`.
    pub catalog: Option<&'a str>,
    /// `OAUTH_INTROSPECTION_CLIENT_ID`.
    pub introspection_client_id: Option<&'a str>,
    /// `OAUTH_INTROSPECTION_CLIENT_SECRET` (environment only).
    pub introspection_client_secret: Option<&'a str>,
    /// `OAUTH_LEEWAY_SECONDS`.
    pub leeway_seconds: Option<u64>,
    /// `OAUTH_JWKS_FETCHES_PER_MINUTE`.
    pub jwks_fetches_per_minute: Option<u32>,
}

/// Where a token's catalog comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogSource {
    /// The claim of this name (`OAUTH_CATALOG_CLAIM`): a token without it is refused.
    Claim(String),
    /// One catalog for every token of the issuer (`OAUTH_CATALOG`).
    Fixed(CatalogName),
}

/// The client this server introspects opaque tokens as (client_secret_basic).
#[derive(Clone)]
pub struct IntrospectionClient {
    /// `OAUTH_INTROSPECTION_CLIENT_ID`.
    pub client_id: String,
    secret: String,
}

impl IntrospectionClient {
    /// The secret, for the `Authorization: Basic` header only.
    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }
}

impl std::fmt::Debug for IntrospectionClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("IntrospectionClient")
            .field("client_id", &self.client_id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The checked OAuth settings.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    issuer: String,
    issuer_url: Url,
    resource: String,
    resource_metadata_url: String,
    read_scope: String,
    write_scope: String,
    catalog: CatalogSource,
    introspection: Option<IntrospectionClient>,
    leeway: Duration,
    jwks_fetches_per_minute: NonZeroU32,
}

/// An OAuth setting that cannot be followed; the message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OAuthConfigError(String);

fn error(message: impl Into<String>) -> OAuthConfigError {
    OAuthConfigError(message.into())
}

/// Whether `url`'s host is this machine (http is allowed there only).
fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// `https`, or `http` on a loopback host: the rule for the issuer and every URL of its metadata.
pub(crate) fn is_allowed_url(url: &Url) -> bool {
    url.scheme() == "https" || (url.scheme() == "http" && is_loopback(url))
}

/// A scope token of RFC 6749 §3.3: printable ASCII but space, `"` and `\`.
fn is_scope_token(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|byte| byte == 0x21 || (0x23..=0x5B).contains(&byte) || (0x5D..=0x7E).contains(&byte))
}

impl OAuthConfig {
    /// Checks `inputs`: `None` when OAuth is not configured (no setting given).
    ///
    /// # Errors
    /// [`OAuthConfigError`] naming the setting: an OAuth setting without `OAUTH_ISSUER`, an
    /// issuer or resource that is not an absolute `https` URL (`http` only on loopback), a
    /// missing `OAUTH_RESOURCE`, not exactly one of `OAUTH_CATALOG_CLAIM` and `OAUTH_CATALOG`, an
    /// invalid catalog or scope, a client id without its secret or the reverse, a leeway or a
    /// fetch rate out of range.
    pub fn from_inputs(inputs: &OAuthInputs<'_>) -> Result<Option<Self>, OAuthConfigError> {
        let Some(issuer) = inputs.issuer else {
            let given = [
                ("OAUTH_RESOURCE", inputs.resource.is_some()),
                ("OAUTH_READ_SCOPE", inputs.read_scope.is_some()),
                ("OAUTH_WRITE_SCOPE", inputs.write_scope.is_some()),
                ("OAUTH_CATALOG_CLAIM", inputs.catalog_claim.is_some()),
                ("OAUTH_CATALOG", inputs.catalog.is_some()),
                ("OAUTH_INTROSPECTION_CLIENT_ID", inputs.introspection_client_id.is_some()),
                ("OAUTH_INTROSPECTION_CLIENT_SECRET", inputs.introspection_client_secret.is_some()),
                ("OAUTH_LEEWAY_SECONDS", inputs.leeway_seconds.is_some()),
                ("OAUTH_JWKS_FETCHES_PER_MINUTE", inputs.jwks_fetches_per_minute.is_some()),
            ];
            if let Some((name, _)) = given.iter().find(|(_, given)| *given) {
                return Err(error(format!(
                    "{name} is set but OAUTH_ISSUER is not: set OAUTH_ISSUER to use OAuth, or unset {name}"
                )));
            }
            return Ok(None);
        };
        let issuer_url = Url::parse(issuer)
            .map_err(|cause| error(format!("OAUTH_ISSUER={issuer} is not an absolute URL ({cause})")))?;
        if !is_allowed_url(&issuer_url) || issuer_url.query().is_some() || issuer_url.fragment().is_some() {
            return Err(error(format!(
                "OAUTH_ISSUER={issuer} must be an https URL without query or fragment (http only for a loopback host)"
            )));
        }
        let Some(resource) = inputs.resource else {
            return Err(error(
                "OAUTH_RESOURCE is required with OAUTH_ISSUER: this server's canonical MCP URL, as tokens name it in `aud` (e.g. https://cursos.example.com/mcp)",
            ));
        };
        let resource_url = Url::parse(resource)
            .map_err(|cause| error(format!("OAUTH_RESOURCE={resource} is not an absolute URL ({cause})")))?;
        if !matches!(resource_url.scheme(), "https" | "http")
            || resource_url.fragment().is_some()
            || resource_url.query().is_some()
        {
            return Err(error(format!("OAUTH_RESOURCE={resource} must be an http(s) URL without query or fragment")));
        }
        let read_scope = inputs.read_scope.unwrap_or(DEFAULT_READ_SCOPE);
        let write_scope = inputs.write_scope.unwrap_or(DEFAULT_WRITE_SCOPE);
        for (name, scope) in [("OAUTH_READ_SCOPE", read_scope), ("OAUTH_WRITE_SCOPE", write_scope)] {
            if !is_scope_token(scope) {
                return Err(error(format!("{name}={scope:?} is not one scope (printable ASCII, no spaces or quotes)")));
            }
        }
        if read_scope == write_scope {
            return Err(error(format!(
                "OAUTH_READ_SCOPE and OAUTH_WRITE_SCOPE are both {read_scope}: a read-only token would write; give them different scopes"
            )));
        }
        let catalog = match (inputs.catalog_claim, inputs.catalog) {
            (Some(claim), None) if !claim.trim().is_empty() => CatalogSource::Claim(claim.to_owned()),
            (Some(_), None) => {
                return Err(error("OAUTH_CATALOG_CLAIM is empty: name the claim that carries the catalog"));
            }
            (None, Some(catalog)) => CatalogSource::Fixed(
                CatalogName::parse(catalog)
                    .map_err(|cause| error(format!("{cause}: invalid OAUTH_CATALOG={catalog}")))?,
            ),
            (Some(_), Some(_)) => {
                return Err(error("OAUTH_CATALOG_CLAIM and OAUTH_CATALOG are both set: give only one"));
            }
            (None, None) => {
                return Err(error(
                    "OAUTH_ISSUER needs OAUTH_CATALOG_CLAIM (the claim that names each token's catalog, e.g. tenant) or OAUTH_CATALOG (one catalog for every token)",
                ));
            }
        };
        let client_id = inputs.introspection_client_id.filter(|id| !id.is_empty());
        let secret = inputs.introspection_client_secret.filter(|secret| !secret.is_empty());
        let introspection = match (client_id, secret) {
            (Some(client_id), Some(secret)) => {
                Some(IntrospectionClient { client_id: client_id.to_owned(), secret: secret.to_owned() })
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(error(
                    "OAUTH_INTROSPECTION_CLIENT_ID needs OAUTH_INTROSPECTION_CLIENT_SECRET (environment only) to introspect opaque tokens",
                ));
            }
            (None, Some(_)) => {
                return Err(error(
                    "OAUTH_INTROSPECTION_CLIENT_SECRET needs OAUTH_INTROSPECTION_CLIENT_ID (the client this server introspects as)",
                ));
            }
        };
        let leeway_seconds = inputs.leeway_seconds.unwrap_or(DEFAULT_LEEWAY_SECONDS);
        if leeway_seconds > MAX_LEEWAY_SECONDS {
            return Err(error(format!("OAUTH_LEEWAY_SECONDS={leeway_seconds} is over {MAX_LEEWAY_SECONDS}")));
        }
        let fetches = inputs.jwks_fetches_per_minute.unwrap_or(DEFAULT_JWKS_FETCHES_PER_MINUTE);
        let jwks_fetches_per_minute = NonZeroU32::new(fetches)
            .filter(|fetches| fetches.get() <= MAX_JWKS_FETCHES_PER_MINUTE)
            .ok_or_else(|| {
                error(format!(
                    "OAUTH_JWKS_FETCHES_PER_MINUTE={fetches} must be between 1 and {MAX_JWKS_FETCHES_PER_MINUTE}"
                ))
            })?;
        let resource_metadata_url = resource_metadata_url(&resource_url);
        Ok(Some(Self {
            issuer: issuer.to_owned(),
            issuer_url,
            resource: resource.to_owned(),
            resource_metadata_url,
            read_scope: read_scope.to_owned(),
            write_scope: write_scope.to_owned(),
            catalog,
            introspection,
            leeway: Duration::from_secs(leeway_seconds),
            jwks_fetches_per_minute,
        }))
    }

    /// `OAUTH_ISSUER`, exactly as given: what `iss` must equal.
    #[must_use]
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The issuer as a URL.
    #[must_use]
    pub const fn issuer_url(&self) -> &Url {
        &self.issuer_url
    }

    /// `OAUTH_RESOURCE`, exactly as given: what `aud` must contain.
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where this server's protected-resource metadata is (RFC 9728 §3.1): the resource's
    /// origin, `/.well-known/oauth-protected-resource`, then the resource's path.
    #[must_use]
    pub fn resource_metadata_url(&self) -> &str {
        &self.resource_metadata_url
    }

    /// The path of [`OAuthConfig::resource_metadata_url`].
    #[must_use]
    pub fn resource_metadata_path(&self) -> String {
        Url::parse(&self.resource_metadata_url).map(|url| url.path().to_owned()).unwrap_or_default()
    }

    /// The scope that lets a token read.
    #[must_use]
    pub fn read_scope(&self) -> &str {
        &self.read_scope
    }

    /// The scope that lets a token write (and read).
    #[must_use]
    pub fn write_scope(&self) -> &str {
        &self.write_scope
    }

    /// Where a token's catalog comes from.
    #[must_use]
    pub const fn catalog(&self) -> &CatalogSource {
        &self.catalog
    }

    /// The introspection client, when opaque tokens are introspected.
    #[must_use]
    pub const fn introspection(&self) -> Option<&IntrospectionClient> {
        self.introspection.as_ref()
    }

    /// The clock skew allowed on `exp` and `nbf`.
    #[must_use]
    pub const fn leeway(&self) -> Duration {
        self.leeway
    }

    /// The most JWKS fetches in any minute.
    #[must_use]
    pub const fn jwks_fetches_per_minute(&self) -> NonZeroU32 {
        self.jwks_fetches_per_minute
    }

    /// The protected-resource metadata document (RFC 9728) this server serves.
    #[must_use]
    pub fn protected_resource_metadata(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": [self.read_scope, self.write_scope],
            "bearer_methods_supported": ["header"],
            "resource_name": "mcp-cursos",
        })
    }
}

fn resource_metadata_url(resource: &Url) -> String {
    let path = resource.path().trim_end_matches('/');
    format!("{}/.well-known/oauth-protected-resource{path}", resource.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>() -> OAuthInputs<'a> {
        OAuthInputs {
            issuer: Some("https://idp.example.com"),
            resource: Some("https://cursos.example.com/mcp"),
            catalog_claim: Some("tenant"),
            ..OAuthInputs::default()
        }
    }

    fn refusal(inputs: &OAuthInputs<'_>) -> String {
        OAuthConfig::from_inputs(inputs).expect_err("refused").to_string()
    }

    #[test]
    fn without_an_issuer_oauth_is_off_unless_another_oauth_setting_is_given() {
        assert!(OAuthConfig::from_inputs(&OAuthInputs::default()).expect("valid").is_none());
        let message = refusal(&OAuthInputs { resource: Some("https://x/mcp"), ..OAuthInputs::default() });
        assert!(message.starts_with("OAUTH_RESOURCE is set but OAUTH_ISSUER is not"), "{message}");
    }

    #[test]
    fn the_defaults_and_the_metadata_url_follow_the_resource() {
        let config = OAuthConfig::from_inputs(&inputs()).expect("valid").expect("on");
        assert_eq!((config.read_scope(), config.write_scope()), ("mcp:read", "mcp:write"));
        assert_eq!(config.leeway(), Duration::from_secs(30));
        assert_eq!(config.jwks_fetches_per_minute().get(), 6);
        assert_eq!(
            config.resource_metadata_url(),
            "https://cursos.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(config.resource_metadata_path(), "/.well-known/oauth-protected-resource/mcp");
        assert_eq!(config.catalog(), &CatalogSource::Claim("tenant".to_owned()));
    }

    #[test]
    fn each_bad_setting_is_refused_by_its_name() {
        let cases: [(OAuthInputs<'_>, &str); 9] = [
            (
                OAuthInputs { issuer: Some("http://idp.example.com"), ..inputs() },
                "OAUTH_ISSUER=http://idp.example.com must be an https URL",
            ),
            (OAuthInputs { issuer: Some("idp"), ..inputs() }, "OAUTH_ISSUER=idp is not an absolute URL"),
            (OAuthInputs { resource: None, ..inputs() }, "OAUTH_RESOURCE is required"),
            (OAuthInputs { catalog_claim: None, ..inputs() }, "OAUTH_ISSUER needs OAUTH_CATALOG_CLAIM"),
            (OAuthInputs { catalog: Some("azul"), ..inputs() }, "OAUTH_CATALOG_CLAIM and OAUTH_CATALOG are both set"),
            (
                OAuthInputs { catalog_claim: None, catalog: Some("Não Vale"), ..inputs() },
                "invalid OAUTH_CATALOG=Não Vale",
            ),
            (
                OAuthInputs { write_scope: Some("mcp:read"), ..inputs() },
                "OAUTH_READ_SCOPE and OAUTH_WRITE_SCOPE are both",
            ),
            (OAuthInputs { introspection_client_id: Some("rs"), ..inputs() }, "OAUTH_INTROSPECTION_CLIENT_ID needs"),
            (OAuthInputs { jwks_fetches_per_minute: Some(0), ..inputs() }, "OAUTH_JWKS_FETCHES_PER_MINUTE=0 must be"),
        ];
        for (inputs, expected) in cases {
            let message = refusal(&inputs);
            assert!(message.contains(expected), "{message} should contain {expected}");
        }
        let message = refusal(&OAuthInputs { introspection_client_secret: Some("s3cr3t-value"), ..inputs() });
        assert!(message.contains("OAUTH_INTROSPECTION_CLIENT_SECRET needs"), "{message}");
        assert!(!message.contains("s3cr3t-value"), "the secret is never echoed");
    }

    #[test]
    fn http_is_allowed_for_a_loopback_issuer_only() {
        let config = OAuthConfig::from_inputs(&OAuthInputs {
            issuer: Some("http://127.0.0.1:9000"),
            resource: Some("http://127.0.0.1:3000/mcp"),
            ..inputs()
        })
        .expect("valid")
        .expect("on");
        assert_eq!(config.issuer(), "http://127.0.0.1:9000");
        assert_eq!(config.resource_metadata_url(), "http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp");
    }
}

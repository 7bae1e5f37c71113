//! [`Caller`]: who sends a request and what they may do, as the transport established it.
//!
//! The server never trusts a label such as "model-controlled" for authorization: every tool call
//! checks the caller's [`Scope`] (ADR 0017). The HTTP backend authenticates a key and puts its
//! [`Caller`] into the request's extensions; stdio has one local user, [`Caller::stdio`].

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use courses_domain::CatalogName;

/// What a caller may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `leitura`: resources, prompts, completions, subscriptions and read-only tools. Never sees
    /// nor calls a tool that writes.
    Read,
    /// `escrita`: everything.
    Write,
}

impl Scope {
    /// The scope's name in keys files, settings and messages: `leitura` or `escrita`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "leitura",
            Self::Write => "escrita",
        }
    }

    /// Parses `leitura` or `escrita` (exactly, lower case).
    ///
    /// # Errors
    /// [`UnknownScope`] for anything else.
    pub fn parse(text: &str) -> Result<Self, UnknownScope> {
        match text {
            "leitura" => Ok(Self::Read),
            "escrita" => Ok(Self::Write),
            _ => Err(UnknownScope),
        }
    }

    /// Whether this scope may call tools that change state.
    #[must_use]
    pub const fn can_write(self) -> bool {
        matches!(self, Self::Write)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = UnknownScope;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// A scope name other than `leitura` or `escrita`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("escopo desconhecido: use leitura ou escrita")]
pub struct UnknownScope;

/// Who holds the credential behind a [`Caller`]: what a session, a question and a listen stream
/// belong to, and what the [`Authority`](crate::Authority) looks a caller up by. Two callers with
/// the same name are not the same principal when their credentials differ (a key re-issued under
/// the same name, a token of another issuer). Opaque: its text is never logged (`Debug` is
/// redacted), as it may be derived from a credential.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The principal identified by `id` (for example `oauth:{iss}#{sub}`, or a key's hash).
    #[must_use]
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The principal's identifying text, to compare or to look up; never to log.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Principal(<redacted>)")
    }
}

/// An authenticated caller: the name recorded in a course's history, the scope checked on
/// every call, the one catalog everything it does is in (ADR 0035), who holds the credential
/// ([`Principal`]) and, for a token, when it stops being valid. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    name: Arc<str>,
    scope: Scope,
    catalog: CatalogName,
    principal: Principal,
    expires_at: Option<SystemTime>,
}

impl Caller {
    /// The name the stdio app's single local user is recorded under.
    pub const STDIO_NAME: &'static str = "stdio";

    /// A caller named `name` (a key's name) with `scope`, in the default catalog
    /// ([`CatalogName::default_catalog`]), whose principal is its name (`name:{name}`), with no
    /// expiry; [`Caller::in_catalog`], [`Caller::with_principal`] and [`Caller::expiring_at`]
    /// change those.
    #[must_use]
    pub fn new(name: impl Into<Arc<str>>, scope: Scope) -> Self {
        let name: Arc<str> = name.into();
        let principal = Principal::new(format!("name:{name}"));
        Self { name, scope, catalog: CatalogName::default_catalog(), principal, expires_at: None }
    }

    /// The same caller, in `catalog`.
    #[must_use]
    pub fn in_catalog(self, catalog: CatalogName) -> Self {
        Self { catalog, ..self }
    }

    /// The same caller, held by `principal`.
    #[must_use]
    pub fn with_principal(self, principal: Principal) -> Self {
        Self { principal, ..self }
    }

    /// The same caller, valid until `instant` (a token's `exp`): past it, the caller has
    /// [`Lapsed::Expired`](crate::Lapsed::Expired) wherever its standing is checked.
    #[must_use]
    pub fn expiring_at(self, instant: SystemTime) -> Self {
        Self { expires_at: Some(instant), ..self }
    }

    /// The stdio app's user: whoever started the process owns the database file, so full scope,
    /// in the catalog the app was started for (`--catalog`).
    #[must_use]
    pub fn stdio(catalog: CatalogName) -> Self {
        Self::new(Self::STDIO_NAME, Scope::Write).in_catalog(catalog)
    }

    /// The name recorded as "who" in the history.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What this caller may do.
    #[must_use]
    pub const fn scope(&self) -> Scope {
        self.scope
    }

    /// The catalog this caller reads and changes, and hears of: the only one (ADR 0035).
    #[must_use]
    pub fn catalog(&self) -> &CatalogName {
        &self.catalog
    }

    /// Who holds this caller's credential.
    #[must_use]
    pub const fn principal(&self) -> &Principal {
        &self.principal
    }

    /// When this caller's credential stops being valid, if it does (tokens).
    #[must_use]
    pub const fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// Whether the credential has expired at `now`.
    #[must_use]
    pub fn has_expired_at(&self, now: SystemTime) -> bool {
        self.expires_at.is_some_and(|expiry| expiry <= now)
    }
}

/// The name an HTTP request without an authenticated caller is treated under (read-only).
const UNAUTHENTICATED: &str = "sem-identidade";

/// Who sends this request. Over HTTP the backend puts the authenticated [`Caller`] into the
/// request's extensions; a request without one is read-only (fail closed) and in the default
/// catalog. Without HTTP (stdio, in-process) the one local user has full scope, in the
/// process's `local` catalog (the stdio app's `--catalog`).
pub(crate) fn caller_in(extensions: &rmcp::model::Extensions, local: &courses_domain::CatalogName) -> Caller {
    match extensions.get::<http::request::Parts>() {
        Some(parts) => {
            parts.extensions.get::<Caller>().cloned().unwrap_or_else(|| Caller::new(UNAUTHENTICATED, Scope::Read))
        }
        None => Caller::stdio(local.clone()),
    }
}

/// The HTTP session (`Mcp-Session-Id`) a request or notification came through, if any.
pub(crate) fn http_session_in(extensions: &rmcp::model::Extensions) -> Option<String> {
    let parts = extensions.get::<http::request::Parts>()?;
    parts.headers.get("mcp-session-id")?.to_str().ok().map(str::to_owned)
}

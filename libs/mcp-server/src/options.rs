//! [`ServerOptions`]: the behaviour the apps choose from their settings. A leaf: it imports
//! nothing of this crate, so every layer may read the options.

/// Behaviour the apps choose (from their settings) when building the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerOptions {
    /// Also expose read-only tools mirroring the two resources (`listar_cursos`, `ler_curso`),
    /// for hosts that offer the model tools but not resources. Off by default: duplicates confuse
    /// models that do read resources.
    pub resource_tools: bool,
    /// Accept 2025-era `resources/subscribe`. True when the transport keeps a connection per
    /// client (stdio, HTTP sessions); false for stateless HTTP, where a legacy subscription could
    /// never be delivered and is refused with a clear message (2026-07-28 `subscriptions/listen`
    /// works in both).
    /// Also: the transport can carry a server-to-client request on 2025-era connections
    /// (elicitation), since both need a connection per client.
    pub legacy_subscriptions: bool,
    /// What `arquivar_curso` does when the client cannot ask its user to confirm.
    pub unconfirmed_archive: UnconfirmedArchive,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self { resource_tools: false, legacy_subscriptions: true, unconfirmed_archive: UnconfirmedArchive::Refuse }
    }
}

/// The policy for archiving (irreversible) when the client cannot confirm with its user: no
/// elicitation capability, or a transport that cannot carry the question (ADR 0017).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnconfirmedArchive {
    /// Refuse with a message that says why and what to do (the default).
    #[default]
    Refuse,
    /// Archive without confirmation (for clients known to confirm on their own side, or scripts).
    Allow,
}

impl UnconfirmedArchive {
    /// Parses `refuse` or `allow` (the setting's values).
    ///
    /// # Errors
    /// A message naming the accepted values.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "refuse" => Ok(Self::Refuse),
            "allow" => Ok(Self::Allow),
            other => Err(format!("{other:?} is not refuse or allow")),
        }
    }
}

/// Which catalogs the app's credentials can put a caller in, for the warning about a policy rule
/// for a catalog no one uses (a typo in `catalogo time-azull` would otherwise apply to no one).
#[derive(Clone)]
pub enum CallersCatalogs {
    /// Any catalog may come (tokens whose catalog is a claim): nothing to warn about.
    Any,
    /// The catalogs named now (a keys file changes while running); the local catalog is added.
    Known(std::sync::Arc<dyn Fn() -> Vec<courses_domain::CatalogName> + Send + Sync>),
}

impl Default for CallersCatalogs {
    /// Only the local catalog (the stdio app's `--catalog`).
    fn default() -> Self {
        Self::Known(std::sync::Arc::new(Vec::new))
    }
}

impl std::fmt::Debug for CallersCatalogs {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Any => formatter.write_str("CallersCatalogs::Any"),
            Self::Known(_) => formatter.write_str("CallersCatalogs::Known(..)"),
        }
    }
}

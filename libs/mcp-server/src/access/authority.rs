//! [`Authority`]: what a caller may do *now*, asked at the moment an effect happens.
//!
//! A request's [`Caller`] is what its credential allowed when the request arrived. Effects that
//! come later (an archiving written after the user's answer, a notice sent on a stream opened
//! long ago) ask again: the label is not the authority. The HTTP backend's authority looks a key
//! up in the keyring in force (a revoked key is [`Lapsed::Revoked`]; a key moved to another
//! catalog or given another scope comes back changed); a token stands unchanged until it
//! expires. Without HTTP (stdio, in-process) every caller stands unchanged.

use std::time::SystemTime;

use crate::access::caller::Caller;

/// Answers what a caller's credential allows now.
pub trait Authority: Send + Sync + std::fmt::Debug {
    /// The caller as its credential stands now (its scope and catalog may differ from
    /// `caller`'s), or why it no longer stands.
    ///
    /// # Errors
    /// [`Lapsed`] when the credential no longer authenticates anyone.
    fn current(&self, caller: &Caller) -> Result<Caller, Lapsed>;
}

/// Why a caller's credential no longer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lapsed {
    /// The key was removed from the keys file (or replaced under the same name).
    Revoked,
    /// The token's `exp` has passed.
    Expired,
}

impl Lapsed {
    /// What changed, in Portuguese, for refusals.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Revoked => "a chave foi revogada",
            Self::Expired => "o token expirou",
        }
    }

    /// What changed, in English, for the operator's log.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Revoked => "revoked",
            Self::Expired => "expired",
        }
    }
}

/// How a caller stands now compared with when it was authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Same scope, same catalog, still valid.
    Unchanged,
    /// Still valid, but its scope or catalog changed: this is the caller now.
    Changed(Caller),
    /// No longer valid.
    Lapsed(Lapsed),
}

/// The authority of a process without HTTP credentials: every caller stands unchanged (until
/// its expiry, which [`standing`] checks first).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Unchanging;

impl Authority for Unchanging {
    fn current(&self, caller: &Caller) -> Result<Caller, Lapsed> {
        Ok(caller.clone())
    }
}

/// How `caller` stands now under `authority`: an expired caller has lapsed whatever the
/// authority says; otherwise the authority's answer, compared with `caller`.
pub(crate) fn standing(authority: &dyn Authority, caller: &Caller, now: SystemTime) -> Standing {
    if caller.has_expired_at(now) {
        return Standing::Lapsed(Lapsed::Expired);
    }
    match authority.current(caller) {
        Err(lapsed) => Standing::Lapsed(lapsed),
        Ok(current) if current.scope() == caller.scope() && current.catalog() == caller.catalog() => {
            Standing::Unchanged
        }
        Ok(current) => Standing::Changed(current),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::access::caller::Scope;

    #[derive(Debug)]
    struct Fixed(Result<Caller, Lapsed>);

    impl Authority for Fixed {
        fn current(&self, _caller: &Caller) -> Result<Caller, Lapsed> {
            self.0.clone()
        }
    }

    #[test]
    fn an_expired_caller_has_lapsed_whatever_the_authority_says() {
        let now = SystemTime::now();
        let caller = Caller::new("ana", Scope::Write).expiring_at(now - Duration::from_secs(1));
        assert_eq!(standing(&Unchanging, &caller, now), Standing::Lapsed(Lapsed::Expired));
        let fresh = Caller::new("ana", Scope::Write).expiring_at(now + Duration::from_secs(60));
        assert_eq!(standing(&Unchanging, &fresh, now), Standing::Unchanged);
    }

    #[test]
    fn a_changed_scope_or_catalog_is_reported_with_the_caller_as_it_is_now() {
        let now = SystemTime::now();
        let caller = Caller::new("ana", Scope::Write);
        let downgraded = Caller::new("ana", Scope::Read);
        assert_eq!(standing(&Fixed(Ok(downgraded.clone())), &caller, now), Standing::Changed(downgraded));
        let moved = Caller::new("ana", Scope::Write)
            .in_catalog(courses_domain::CatalogName::parse("outro").expect("a catalog name"));
        assert_eq!(standing(&Fixed(Ok(moved.clone())), &caller, now), Standing::Changed(moved));
        assert_eq!(standing(&Fixed(Err(Lapsed::Revoked)), &caller, now), Standing::Lapsed(Lapsed::Revoked));
    }
}

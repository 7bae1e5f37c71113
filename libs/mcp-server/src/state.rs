//! [`ServerState`]: what every connection of one process shares.

use std::sync::{Arc, RwLock};

use courses_domain::{Catalog, CatalogName};
use tokio_util::sync::CancellationToken;

use crate::access::authority::{self, Authority, Standing, Unchanging};
use crate::access::caller::Caller;
use crate::access::confirmation::{ConfirmationSeal, ConfirmationSecretTooShort};
use crate::access::policy::{ListsChanged, Policy};
use crate::contract::course_text::CourseTexts;
use crate::live::hub::{HubCounts, HubObserver, LiveUpdateLimits, SessionCloser, SubscriptionHub};
use crate::options::ServerOptions;

/// The catalog, the subscription hub and the options: built once per process, shared by every
/// connection (cheap to clone).
#[derive(Debug, Clone)]
pub struct ServerState {
    /// Every catalog of the store, observed by the hub. Private on purpose: the server reaches a
    /// catalog only through [`ServerState::catalog_of`], scoped to the caller (ADR 0035).
    catalogs: Catalog,
    /// The catalog of a caller without HTTP (the stdio app's `--catalog`).
    pub(crate) local_catalog: CatalogName,
    pub(crate) hub: Arc<SubscriptionHub>,
    pub(crate) options: ServerOptions,
    pub(crate) shutdown: CancellationToken,
    /// Seals the archiving confirmations asked of 2026-07-28 clients (ADR 0027).
    pub(crate) confirmations: ConfirmationSeal,
    /// The operator's policy (ADR 0036), swapped whole when the policy file changes.
    policy: Arc<RwLock<Arc<Policy>>>,
    /// The JSON text of the courses read lately, reused while the course read is the same value.
    pub(crate) course_texts: Arc<CourseTexts>,
    /// What a caller may do now, asked at the moment of an effect ([`ServerState::standing`]).
    authority: Arc<dyn Authority>,
    /// Which catalogs callers can be in (for the policy's unused-catalog warning).
    callers_catalogs: crate::options::CallersCatalogs,
}

impl ServerState {
    /// Wires `catalog` to a fresh subscription hub with the default [`LiveUpdateLimits`].
    #[must_use]
    pub fn new(catalog: Catalog, options: ServerOptions) -> Self {
        Self::with_live_update_limits(catalog, options, LiveUpdateLimits::default())
    }

    /// [`Self::new`] with other bounds on live updates (tests use small ones).
    #[must_use]
    pub fn with_live_update_limits(catalog: Catalog, options: ServerOptions, limits: LiveUpdateLimits) -> Self {
        let hub = Arc::new(SubscriptionHub::new(limits));
        let catalog = catalog.with_observer(Arc::new(HubObserver(Arc::clone(&hub))));
        Self {
            catalogs: catalog,
            local_catalog: CatalogName::default_catalog(),
            hub,
            options,
            shutdown: CancellationToken::new(),
            confirmations: ConfirmationSeal::random(),
            policy: Arc::default(),
            course_texts: Arc::default(),
            authority: Arc::new(Unchanging),
            callers_catalogs: crate::options::CallersCatalogs::default(),
        }
    }

    /// Asks `authority` what a caller may do now, wherever an effect happens after the request
    /// that asked for it was authenticated (a confirmed archiving, a notice on an open stream).
    /// Default: every caller stands unchanged until its expiry.
    #[must_use]
    pub fn with_authority(mut self, authority: Arc<dyn Authority>) -> Self {
        self.hub.set_authority(Arc::clone(&authority));
        self.authority = authority;
        self
    }

    /// Ends every live-update listener whose caller no longer stands unchanged
    /// ([`ServerState::standing`]): a 2026-07-28 `subscriptions/listen` stream ends, a 2025-era
    /// session is closed through the transport's [`SessionCloser`] (its GET stream ends, however
    /// long it has been idle). Each end is logged with the caller's name and why (`revoked`,
    /// `expired`, `moved to another catalog`, `scope changed`), never a key. The backend calls it
    /// after every keys-file reload that changed something; [`ServerState::recheck_listeners_every`]
    /// calls it on a timer, for expiring callers. Never waits on a client.
    ///
    /// Between a change and this sweep no notice reaches such a listener either: each listener's
    /// drainer asks for its caller's standing before every batch it sends.
    pub fn recheck_listeners(&self) {
        self.hub.recheck();
    }

    /// Calls [`ServerState::recheck_listeners`] every `interval` until the state shuts down, so a
    /// caller that expires ([`Caller::expiring_at`]) loses its streams within `interval` even
    /// when nothing else happens. Must be called from the Tokio runtime.
    pub fn recheck_listeners_every(&self, interval: std::time::Duration) -> tokio::task::JoinHandle<()> {
        let state = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => state.recheck_listeners(),
                    () = state.shutdown.cancelled() => return,
                }
            }
        })
    }

    /// How `caller` stands now: [`Standing::Lapsed`] once its credential expired or was revoked,
    /// [`Standing::Changed`] when its scope or catalog is no longer what it was.
    #[must_use]
    pub fn standing(&self, caller: &Caller) -> Standing {
        authority::standing(self.authority.as_ref(), caller, std::time::SystemTime::now())
    }

    /// Starts with `policy` in force instead of the default (everything enabled).
    #[must_use]
    pub fn with_policy(self, policy: Policy) -> Self {
        *self.policy.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(policy);
        self
    }

    /// The operator's policy in force now.
    #[must_use]
    pub fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.policy.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Puts `policy` in force for every request from now on, and tells the clients listening for
    /// list changes (2025-era sessions; 2026-07-28 streams that asked) when the tools or the
    /// prompts some caller sees changed. Never waits on a client. Returns what changed.
    pub fn set_policy(&self, policy: Policy) -> ListsChanged {
        let mut current = self.policy.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = current.lists_changed(&policy);
        let previous = std::mem::replace(&mut *current, Arc::new(policy));
        let next = Arc::clone(&current);
        drop(current);
        if changed != ListsChanged::default() {
            self.hub.announce_lists(|catalog| previous.lists_changed_for(&next, catalog.as_str()));
        }
        changed
    }

    /// Callers without HTTP (the stdio app's single user, in-process clients) are in `catalog`
    /// instead of the default one.
    #[must_use]
    pub fn with_local_catalog(mut self, catalog: CatalogName) -> Self {
        self.local_catalog = catalog;
        self
    }

    /// The catalogs the app's credentials can put callers in (default: the local one only).
    #[must_use]
    pub fn with_callers_catalogs(mut self, catalogs: crate::options::CallersCatalogs) -> Self {
        self.callers_catalogs = catalogs;
        self
    }

    pub(crate) fn callers_catalogs(&self) -> &crate::options::CallersCatalogs {
        &self.callers_catalogs
    }

    /// Seals archiving confirmations with `secret` instead of this process's random one, so a
    /// 2026-07-28 client's answer is accepted by any replica given the same secret (a retry may
    /// reach another replica behind a load balancer).
    ///
    /// # Errors
    /// [`ConfirmationSecretTooShort`] below 32 bytes.
    pub fn with_confirmation_secret(mut self, secret: &[u8]) -> Result<Self, ConfirmationSecretTooShort> {
        self.confirmations = ConfirmationSeal::with_secret(secret)?;
        Ok(self)
    }

    /// How a transport with sessions (HTTP) closes one, by its `Mcp-Session-Id`, when its client
    /// stopped reading live updates (ADR 0022). Without it such a session only stops getting
    /// them. Only the first call counts.
    pub fn close_sessions_with(&self, closer: SessionCloser) {
        self.hub.close_sessions_with(closer);
    }

    /// Cancelled by the app when the process is shutting down (stdin closed, SIGTERM): long-lived
    /// handlers such as `subscriptions/listen` streams end then, instead of holding the exit.
    #[must_use]
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Shuts the long-lived handlers down: cancels [`Self::shutdown_token`] and resolves once every
    /// listen stream has ended.
    pub async fn shut_down_listeners(&self) {
        self.shutdown.cancel();
        self.hub.streams_closed().await;
    }

    /// How many live-update listeners are open (for tests and operators).
    #[must_use]
    pub fn listener_counts(&self) -> HubCounts {
        self.hub.counts()
    }

    /// Tells this process's subscribers that course `id` changed in another process sharing the
    /// database (a replica), as if the change had been made here; `list_changed` when the set of
    /// active courses or a title changed. Call it from the runtime (it spawns the deliveries).
    /// Only the listeners of `catalog` hear of it (ADR 0035).
    pub fn announce_remote_change(&self, catalog: &CatalogName, id: courses_domain::CourseId, list_changed: bool) {
        self.hub.announce(catalog, id, list_changed);
    }

    /// Follows the changes other processes commit to the same database (replicas on PostgreSQL,
    /// LISTEN/NOTIFY, ADR 0019; other processes on the same SQLite file, ADR 0030) and tells this
    /// process's subscribers, on both protocol eras. Must be called from the Tokio runtime; keep
    /// the returned follower alive as long as the server runs (`None`: the store cannot be shared).
    #[must_use]
    pub fn follow_other_processes(&self) -> Option<courses_domain::ChangeFollower> {
        let state = self.clone();
        let runtime = tokio::runtime::Handle::current();
        self.catalogs.follow_changes(move |change| {
            let _entered = runtime.enter();
            state.announce_remote_change(&change.catalog, change.course_id, change.changes_listing);
        })
    }

    /// The default catalog ([`CatalogName::default_catalog`]), observed by the hub: writes made
    /// through it notify its subscribers. For the apps' probes, metrics and tests; requests use
    /// [`ServerState::catalog_of`].
    #[must_use]
    pub fn catalog(&self) -> &Catalog {
        &self.catalogs
    }

    /// The catalog `caller` is in, observed by the hub: the only catalog a request reaches.
    #[must_use]
    pub fn catalog_of(&self, caller: &Caller) -> Catalog {
        self.catalogs.scoped(caller.catalog())
    }
}

impl crate::access::archive::AtWrite for ServerState {
    fn standing(&self, caller: &Caller) -> Standing {
        Self::standing(self, caller)
    }

    fn policy(&self, caller: &Caller) -> crate::access::policy::CatalogPolicy {
        Self::policy(self).for_catalog(caller.catalog().as_str())
    }
}

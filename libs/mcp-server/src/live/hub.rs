//! Live updates: who listens to what, and telling them when the catalog changes.
//!
//! One [`SubscriptionHub`] per process, shared by every connection (stdio, each HTTP session,
//! each 2026-07-28 listen stream). It observes the [`Catalog`](courses_domain::Catalog), so a
//! change made by any client reaches the listeners of every other client of the process:
//!
//! - 2025-era sessions (`initialize`): `notifications/resources/updated` for the URIs they
//!   subscribed to with `resources/subscribe`, and `notifications/resources/list_changed` to every
//!   session when the listing changes;
//! - 2026-07-28 `subscriptions/listen` streams: the same notifications, for what their accepted
//!   filter asked.
//!
//! A change to a course updates `cursos://<id>` and every catalog page (`cursos://catalogo...`),
//! since the catalog shows active courses.
//!
//! **Fan-out never waits on a client** (ADR 0022). Each listener has a [`Mailbox`]: the set of
//! URIs it has yet to be told of (a URI already waiting is not queued twice) and whether the
//! listing changed. A change only fills mailboxes, under the hub's lock, without awaiting
//! anything; each listener's own drainer (a task per 2025-era session, the `listen` handler for
//! a stream) sends what its mailbox holds. A listener is dropped when it falls behind: one notice
//! not accepted within [`LiveUpdateLimits::send_timeout`], or more than
//! [`LiveUpdateLimits::max_changes_behind`] distinct notices waiting in its mailbox while its
//! drainer has not taken it. A dropped stream ends; a dropped HTTP session is closed through the
//! [`SessionCloser`] the transport registered, so the client reconnects and reads again.
//!
//! What clients may hold is capped ([`LiveUpdateLimits`]): URIs per listener, listen streams and
//! subscriptions per caller (key) and per process. So one change costs at most
//! `subscriptions` notices plus one list-changed notice per listener, whatever clients asked.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use courses_domain::{CatalogName, CatalogObserver, CourseChange, CourseId};
use rmcp::{Peer, RoleServer};

use crate::access::authority::{self, Authority, Standing, Unchanging};
use crate::access::caller::Caller;
use crate::access::policy::ListsChanged;
use crate::contract::uris;
use crate::live::mailbox::{DrainEnd, Mailbox, Receiver, drain};

/// The bounds on live updates (ADR 0022). The defaults are the contract's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveUpdateLimits {
    /// URIs one 2025-era session or one listen stream may subscribe to.
    pub subscriptions_per_listener: usize,
    /// Listen streams open at once for one caller (API key, or the stdio user).
    pub streams_per_caller: usize,
    /// Listen streams open at once in the process.
    pub streams: usize,
    /// URIs subscribed at once by one caller, over its sessions and streams.
    pub subscriptions_per_caller: usize,
    /// URIs subscribed at once in the process, over every session and stream.
    pub subscriptions: usize,
    /// A listener that has not accepted one notice within this time is dropped.
    pub send_timeout: Duration,
    /// A listener is dropped when more than this many notices (distinct URIs, and the list
    /// change) wait in its mailbox for its drainer: what it must be told, not how many changes
    /// made it (a bulk import is one `cursos://catalogo` notice; issue 24).
    pub max_changes_behind: usize,
}

impl Default for LiveUpdateLimits {
    fn default() -> Self {
        Self {
            subscriptions_per_listener: 1000,
            streams_per_caller: 16,
            streams: 256,
            subscriptions_per_caller: 2000,
            subscriptions: 10_000,
            send_timeout: Duration::from_secs(10),
            // One more than a listener may subscribe to: a listener that reads is never dropped
            // for a burst (its pending notices are at most its URIs and the list change); one that
            // does not take its notices is, by `send_timeout`.
            max_changes_behind: 1001,
        }
    }
}

/// Closes one HTTP session (by its `Mcp-Session-Id`) whose client stopped reading its stream:
/// registered by the transport that owns the sessions (ADR 0022).
pub type SessionCloser = Arc<dyn Fn(&str) + Send + Sync>;

/// Every listener of one process.
pub(crate) struct SubscriptionHub {
    limits: LiveUpdateLimits,
    listeners: Mutex<Listeners>,
    /// How many listen streams are admitted, for whoever waits for them to end.
    open_streams: tokio::sync::watch::Sender<usize>,
    session_closer: OnceLock<SessionCloser>,
    /// Asked before every batch of notices and by [`Self::recheck`]: a listener whose caller no
    /// longer stands unchanged hears nothing more and is ended.
    authority: RwLock<Arc<dyn Authority>>,
}

impl std::fmt::Debug for SubscriptionHub {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SubscriptionHub").field("limits", &self.limits).finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Listeners {
    sessions: HashMap<u64, Session>,
    streams: HashMap<u64, Stream>,
    /// Listen requests acknowledged but not yet admitted or refused (rmcp acknowledges first).
    pending_streams: usize,
    next_stream: u64,
    slow_dropped: u64,
}

impl Listeners {
    fn live_streams(&self) -> usize {
        self.streams.len() + self.pending_streams
    }
}

/// The hub's lock: on release, a map left at a quarter of its capacity or less gives the rest
/// back (issue 24, item 7): a burst of 2,000 sessions grew `sessions` to 4,096 slots of about
/// 300 bytes, 1.25 MiB kept after every session had closed.
struct ListenersGuard<'hub>(std::sync::MutexGuard<'hub, Listeners>);

impl std::ops::Deref for ListenersGuard<'_> {
    type Target = Listeners;
    fn deref(&self) -> &Listeners {
        &self.0
    }
}

impl std::ops::DerefMut for ListenersGuard<'_> {
    fn deref_mut(&mut self) -> &mut Listeners {
        &mut self.0
    }
}

impl Drop for ListenersGuard<'_> {
    fn drop(&mut self) {
        release_spare_capacity(&mut self.0.sessions);
        release_spare_capacity(&mut self.0.streams);
    }
}

/// Shrinks `map` to twice its entries once they fill a quarter of its capacity or less (and it
/// has grown past a few dozen): amortized O(1), as the growth that doubles it.
fn release_spare_capacity<V>(map: &mut HashMap<u64, V>) {
    if map.capacity() > 64 && map.len() <= map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

#[derive(Debug)]
struct Session {
    peer: Peer<RoleServer>,
    /// Who opened the session, as authenticated then: rechecked against the authority.
    caller: Caller,
    /// The caller's catalog: the session hears only of its changes (ADR 0035).
    catalog: CatalogName,
    /// The HTTP session's `Mcp-Session-Id`, when the session is an HTTP one.
    http_session: Option<String>,
    resources: HashSet<Arc<str>>,
    mailbox: Arc<Mailbox>,
}

#[derive(Debug)]
struct Stream {
    /// Who opened the stream, as authenticated then: rechecked against the authority.
    caller: Caller,
    /// The caller's catalog: the stream hears only of its changes (ADR 0035).
    catalog: CatalogName,
    resources: Vec<Arc<str>>,
    list_changed: bool,
    mailbox: Arc<Mailbox>,
}

/// How many listeners the hub holds (after dropping closed ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HubCounts {
    /// Open 2025-era sessions (each gets list-changed notices).
    pub sessions: usize,
    /// Resource subscriptions held by those sessions.
    pub subscriptions: usize,
    /// Open 2026-07-28 `subscriptions/listen` streams.
    pub listen_streams: usize,
    /// Listeners dropped since the start because they stopped reading (ADR 0022).
    pub slow_listeners_dropped: u64,
}

/// Why a subscription or a listen stream was refused: each names the bound it hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// More URIs than [`LiveUpdateLimits::subscriptions_per_listener`] on one session or stream.
    PerListener(usize),
    /// More streams than [`LiveUpdateLimits::streams_per_caller`] for this caller.
    StreamsPerCaller(usize),
    /// More streams than [`LiveUpdateLimits::streams`] in the process.
    Streams(usize),
    /// More subscriptions than [`LiveUpdateLimits::subscriptions_per_caller`] for this caller.
    SubscriptionsPerCaller(usize),
    /// More subscriptions than [`LiveUpdateLimits::subscriptions`] in the process.
    Subscriptions(usize),
}

/// Every change of a course touches its resource, its history (each accepted write adds an
/// entry) and the catalog's pages.
fn is_affected(subscribed: &str, course_uri: &str) -> bool {
    subscribed == course_uri
        || subscribed.starts_with(uris::CATALOG)
        || subscribed.strip_prefix(course_uri).is_some_and(|rest| rest.starts_with("/historico"))
}

/// A listen stream admitted by [`SubscriptionHub::admit_stream`]: it holds its place in the
/// counts until dropped (when the `subscriptions/listen` request ends).
#[derive(Debug)]
pub(crate) struct StreamTicket {
    hub: Arc<SubscriptionHub>,
    id: u64,
    mailbox: Arc<Mailbox>,
}

impl StreamTicket {
    /// What the `listen` handler drains.
    pub(crate) fn mailbox(&self) -> &Arc<Mailbox> {
        &self.mailbox
    }

    /// The hub's bound on one notice.
    pub(crate) fn send_timeout(&self) -> Duration {
        self.hub.limits.send_timeout
    }

    /// The stream's client stopped reading: drop it from the hub (the handler then ends it).
    pub(crate) fn drop_slow(&self) {
        let mut listeners = self.hub.lock();
        if listeners.streams.remove(&self.id).is_some() {
            listeners.slow_dropped += 1;
            tracing::warn!("a subscriptions/listen stream was closed: its client stopped reading");
        }
        self.hub.open_streams.send_replace(listeners.live_streams());
        self.mailbox.dropped.cancel();
    }
}

impl Drop for StreamTicket {
    fn drop(&mut self) {
        let mut listeners = self.hub.lock();
        listeners.streams.remove(&self.id);
        self.hub.open_streams.send_replace(listeners.live_streams());
        self.mailbox.dropped.cancel();
    }
}

impl SubscriptionHub {
    pub(crate) fn new(limits: LiveUpdateLimits) -> Self {
        Self {
            limits,
            listeners: Mutex::default(),
            open_streams: tokio::sync::watch::Sender::new(0),
            session_closer: OnceLock::new(),
            authority: RwLock::new(Arc::new(Unchanging)),
        }
    }

    /// Judges listeners' callers by `authority` from now on.
    pub(crate) fn set_authority(&self, authority: Arc<dyn Authority>) {
        *self.authority.write().unwrap_or_else(std::sync::PoisonError::into_inner) = authority;
    }

    /// How `caller` stands now (expiry first, then the authority).
    fn standing(&self, caller: &Caller) -> Standing {
        let authority = Arc::clone(&self.authority.read().unwrap_or_else(std::sync::PoisonError::into_inner));
        authority::standing(authority.as_ref(), caller, std::time::SystemTime::now())
    }

    pub(crate) fn limits(&self) -> &LiveUpdateLimits {
        &self.limits
    }

    /// Registers how HTTP sessions are closed; only the first call counts.
    pub(crate) fn close_sessions_with(&self, closer: SessionCloser) {
        let _ = self.session_closer.set(closer);
    }

    /// A 2025-era session finished its handshake: it will get list-changed notices.
    pub(crate) fn session_opened(
        self: &Arc<Self>,
        session: u64,
        peer: Peer<RoleServer>,
        caller: &Caller,
        http_session: Option<String>,
    ) {
        let mut listeners = self.lock();
        prune_closed_sessions(&mut listeners);
        self.ensure_session(&mut listeners, session, peer, caller, http_session);
    }

    fn ensure_session<'a>(
        self: &Arc<Self>,
        listeners: &'a mut Listeners,
        session: u64,
        peer: Peer<RoleServer>,
        caller: &Caller,
        http_session: Option<String>,
    ) -> &'a mut Session {
        listeners.sessions.entry(session).or_insert_with(|| {
            let mailbox = Arc::new(Mailbox::default());
            spawn_session_drainer(self, session, peer.clone(), caller.clone(), Arc::clone(&mailbox));
            Session {
                peer,
                caller: caller.clone(),
                catalog: caller.catalog().clone(),
                http_session,
                resources: HashSet::new(),
                mailbox,
            }
        })
    }

    /// `resources/subscribe` from a 2025-era session of `caller`.
    ///
    /// # Errors
    /// The [`Refusal`] naming the bound the subscription would pass.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        session: u64,
        peer: Peer<RoleServer>,
        caller: &Caller,
        http_session: Option<String>,
        uri: &str,
    ) -> Result<(), Refusal> {
        let mut listeners = self.lock();
        prune_closed_sessions(&mut listeners);
        let (caller_total, process_total) = subscription_totals(&listeners, caller.name());
        let limits = self.limits;
        let entry = self.ensure_session(&mut listeners, session, peer, caller, http_session);
        if entry.resources.contains(uri) {
            return Ok(());
        }
        if entry.resources.len() >= limits.subscriptions_per_listener {
            return Err(Refusal::PerListener(limits.subscriptions_per_listener));
        }
        if caller_total >= limits.subscriptions_per_caller {
            return Err(Refusal::SubscriptionsPerCaller(limits.subscriptions_per_caller));
        }
        if process_total >= limits.subscriptions {
            return Err(Refusal::Subscriptions(limits.subscriptions));
        }
        entry.resources.insert(uri.into());
        Ok(())
    }

    /// `resources/unsubscribe` from a 2025-era session.
    pub(crate) fn unsubscribe(&self, session: u64, uri: &str) {
        if let Some(session) = self.lock().sessions.get_mut(&session) {
            session.resources.remove(uri);
        }
    }

    /// A 2026-07-28 listen request is about to be acknowledged; [`Self::admit_stream`] or
    /// [`Self::stream_refused`] follows once its handler runs.
    pub(crate) fn stream_accepted(&self) {
        let mut listeners = self.lock();
        listeners.pending_streams += 1;
        self.open_streams.send_replace(listeners.live_streams());
    }

    /// An acknowledged listen request was refused before admission.
    pub(crate) fn stream_refused(&self) {
        let mut listeners = self.lock();
        listeners.pending_streams = listeners.pending_streams.saturating_sub(1);
        self.open_streams.send_replace(listeners.live_streams());
    }

    /// Admits a 2026-07-28 listen stream (acknowledged after [`Self::stream_accepted`]) of
    /// `caller` for `resources` (already known to be this server's URIs) and, with
    /// `list_changed`, the listing's changes. The stream counts until the returned ticket drops.
    ///
    /// # Errors
    /// The [`Refusal`] naming the bound the stream would pass.
    pub(crate) fn admit_stream(
        self: &Arc<Self>,
        caller: &Caller,
        resources: &[String],
        list_changed: bool,
    ) -> Result<StreamTicket, Refusal> {
        let limits = self.limits;
        let distinct: HashSet<&str> = resources.iter().map(String::as_str).collect();
        let mut listeners = self.lock();
        listeners.pending_streams = listeners.pending_streams.saturating_sub(1);
        self.open_streams.send_replace(listeners.live_streams());
        if distinct.len() > limits.subscriptions_per_listener {
            return Err(Refusal::PerListener(limits.subscriptions_per_listener));
        }
        prune_closed_sessions(&mut listeners);
        let caller_streams = listeners.streams.values().filter(|stream| stream.caller.name() == caller.name()).count();
        if caller_streams >= limits.streams_per_caller {
            return Err(Refusal::StreamsPerCaller(limits.streams_per_caller));
        }
        if listeners.streams.len() >= limits.streams {
            return Err(Refusal::Streams(limits.streams));
        }
        let (caller_total, process_total) = subscription_totals(&listeners, caller.name());
        if caller_total + distinct.len() > limits.subscriptions_per_caller {
            return Err(Refusal::SubscriptionsPerCaller(limits.subscriptions_per_caller));
        }
        if process_total + distinct.len() > limits.subscriptions {
            return Err(Refusal::Subscriptions(limits.subscriptions));
        }
        listeners.next_stream += 1;
        let id = listeners.next_stream;
        let mailbox = Arc::new(Mailbox::default());
        listeners.streams.insert(
            id,
            Stream {
                caller: caller.clone(),
                catalog: caller.catalog().clone(),
                resources: distinct.into_iter().map(Arc::from).collect(),
                list_changed,
                mailbox: Arc::clone(&mailbox),
            },
        );
        self.open_streams.send_replace(listeners.live_streams());
        Ok(StreamTicket { hub: Arc::clone(self), id, mailbox })
    }

    /// Resolves once no listen stream is open or about to open.
    pub(crate) async fn streams_closed(&self) {
        let mut open = self.open_streams.subscribe();
        // The sender lives as long as the hub, which outlives this borrow.
        let _ = open.wait_for(|count| *count == 0).await;
    }

    /// How many listeners are open, after dropping the closed ones.
    pub(crate) fn counts(&self) -> HubCounts {
        let mut listeners = self.lock();
        prune_closed_sessions(&mut listeners);
        HubCounts {
            sessions: listeners.sessions.len(),
            subscriptions: listeners.sessions.values().map(|session| session.resources.len()).sum(),
            listen_streams: listeners.streams.len(),
            slow_listeners_dropped: listeners.slow_dropped,
        }
    }

    fn lock(&self) -> ListenersGuard<'_> {
        // A panic while holding the lock cannot leave the maps half-updated in a harmful way.
        ListenersGuard(self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Fills the mailbox of every listener of `catalog` with what a change of course `id` means
    /// to it (`list_changed`: the listing changed too); listeners of other catalogs hear nothing
    /// of it (ADR 0035). Never awaits a client; drops the listeners that fell too far behind.
    pub(crate) fn announce(&self, catalog: &CatalogName, id: CourseId, list_changed: bool) {
        let course_uri = uris::course(id);
        let max_behind = self.limits.max_changes_behind;
        let mut listeners = self.lock();
        prune_closed_sessions(&mut listeners);
        let mut slow_sessions = Vec::new();
        for (key, session) in listeners.sessions.iter().filter(|(_, session)| session.catalog == *catalog) {
            let updated = session.resources.iter().filter(|uri| is_affected(uri, &course_uri)).cloned();
            if !session.mailbox.post(updated, list_changed, max_behind) {
                slow_sessions.push(*key);
            }
        }
        let mut slow_streams = Vec::new();
        for (key, stream) in listeners.streams.iter().filter(|(_, stream)| stream.catalog == *catalog) {
            let updated = stream.resources.iter().filter(|uri| is_affected(uri, &course_uri)).cloned();
            if !stream.mailbox.post(updated, list_changed && stream.list_changed, max_behind) {
                slow_streams.push(*key);
            }
        }
        for key in slow_streams {
            if let Some(stream) = listeners.streams.remove(&key) {
                listeners.slow_dropped += 1;
                stream.mailbox.dropped.cancel();
                tracing::warn!(
                    caller = stream.caller.name(),
                    "a subscriptions/listen stream was closed: its client fell behind"
                );
            }
        }
        self.open_streams.send_replace(listeners.live_streams());
        let closed: Vec<Session> = slow_sessions.iter().filter_map(|key| listeners.sessions.remove(key)).collect();
        listeners.slow_dropped += closed.len() as u64;
        drop(listeners);
        for session in closed {
            self.end_slow_session(&session);
        }
    }

    /// Tells each 2025-era session and listen stream whose catalog's tools or prompts changed
    /// (`changed_for` its catalog; the operator's policy, ADR 0036), and no other: a policy change
    /// of one catalog is not news to another (ADR 0035). A stream whose filter did not ask for
    /// them skips the notice. Never awaits a client: it only sets two flags in each mailbox.
    pub(crate) fn announce_lists(&self, changed_for: impl Fn(&CatalogName) -> ListsChanged) {
        let mut listeners = self.lock();
        prune_closed_sessions(&mut listeners);
        let post = |catalog: &CatalogName, mailbox: &Mailbox| {
            let lists = changed_for(catalog);
            if lists != ListsChanged::default() {
                mailbox.post_lists(lists);
            }
        };
        for session in listeners.sessions.values() {
            post(&session.catalog, &session.mailbox);
        }
        for stream in listeners.streams.values() {
            post(&stream.catalog, &stream.mailbox);
        }
    }

    /// Ends every listener whose caller no longer stands unchanged (revoked, expired, moved to
    /// another catalog, another scope): a listen stream ends (its handler returns), a 2025-era
    /// session is dropped and, over HTTP, closed through the [`SessionCloser`], which ends its GET
    /// stream whatever its idle time. Each end is logged with the caller's name and the reason.
    /// Never awaits a client.
    pub(crate) fn recheck(&self) {
        // The standings are asked without the hub's lock (an authority may take its own locks
        // and look through many keys): fan-out is never held up by a recheck.
        let callers: Vec<(Listener, Caller)> = {
            let mut listeners = self.lock();
            prune_closed_sessions(&mut listeners);
            let sessions = listeners.sessions.iter().map(|(key, session)| (Listener::Session(*key), &session.caller));
            let streams = listeners.streams.iter().map(|(key, stream)| (Listener::Stream(*key), &stream.caller));
            sessions.chain(streams).map(|(listener, caller)| (listener, caller.clone())).collect()
        };
        let lapsed: Vec<(Listener, Standing)> = callers
            .into_iter()
            .filter_map(|(listener, caller)| {
                let standing = self.standing(&caller);
                (standing != Standing::Unchanged).then_some((listener, standing))
            })
            .collect();
        if lapsed.is_empty() {
            return;
        }
        let mut listeners = self.lock();
        let mut ended = Vec::new();
        for (listener, standing) in lapsed {
            match listener {
                Listener::Stream(key) => {
                    if let Some(stream) = listeners.streams.remove(&key) {
                        stream.mailbox.dropped.cancel();
                        let reason = reason(&standing, &stream.caller);
                        tracing::info!(
                            caller = stream.caller.name(),
                            reason,
                            "a subscriptions/listen stream was ended: its caller no longer stands as it was"
                        );
                    }
                }
                Listener::Session(key) => {
                    ended.extend(listeners.sessions.remove(&key).map(|session| (session, standing)));
                }
            }
        }
        self.open_streams.send_replace(listeners.live_streams());
        drop(listeners);
        for (session, standing) in ended {
            session.mailbox.dropped.cancel();
            let reason = reason(&standing, &session.caller);
            tracing::info!(
                caller = session.caller.name(),
                reason,
                "a session was closed: its caller no longer stands as it was"
            );
            if let (Some(id), Some(closer)) = (&session.http_session, self.session_closer.get()) {
                closer(id);
            }
        }
    }

    /// Whether `caller`'s listener may still be told anything (asked before each batch).
    pub(crate) fn stands(&self, caller: &Caller) -> bool {
        self.standing(caller) == Standing::Unchanged
    }

    fn drop_slow_session(&self, key: u64, mailbox: &Arc<Mailbox>) {
        let mut listeners = self.lock();
        let is_this_one = listeners.sessions.get(&key).is_some_and(|session| Arc::ptr_eq(&session.mailbox, mailbox));
        let session = if is_this_one { listeners.sessions.remove(&key) } else { None };
        if session.is_some() {
            listeners.slow_dropped += 1;
        }
        drop(listeners);
        if let Some(session) = session {
            self.end_slow_session(&session);
        }
    }

    fn remove_session(&self, key: u64, mailbox: &Arc<Mailbox>) {
        let mut listeners = self.lock();
        if listeners.sessions.get(&key).is_some_and(|session| Arc::ptr_eq(&session.mailbox, mailbox)) {
            listeners.sessions.remove(&key);
        }
    }

    /// Stops telling a session that stopped reading, and closes it when it is an HTTP session.
    fn end_slow_session(&self, session: &Session) {
        session.mailbox.dropped.cancel();
        tracing::warn!(
            caller = session.caller.name(),
            "a session stopped reading its stream: no more live updates to it"
        );
        if let (Some(id), Some(closer)) = (&session.http_session, self.session_closer.get()) {
            closer(id);
        }
    }
}

/// Subscriptions held by `caller` and by the whole process, over sessions and streams.
fn subscription_totals(listeners: &Listeners, caller: &str) -> (usize, usize) {
    let mut of_caller = 0;
    let mut total = 0;
    let sessions = listeners.sessions.values().map(|session| (&session.caller, session.resources.len()));
    let streams = listeners.streams.values().map(|stream| (&stream.caller, stream.resources.len()));
    for (owner, held) in sessions.chain(streams) {
        total += held;
        if owner.name() == caller {
            of_caller += held;
        }
    }
    (of_caller, total)
}

fn prune_closed_sessions(listeners: &mut Listeners) {
    listeners.sessions.retain(|_, session| {
        let open = !session.peer.is_transport_closed();
        if !open {
            session.mailbox.dropped.cancel();
        }
        open
    });
}

fn spawn_session_drainer(
    hub: &Arc<SubscriptionHub>,
    key: u64,
    peer: Peer<RoleServer>,
    caller: Caller,
    mailbox: Arc<Mailbox>,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("a session opened outside a Tokio runtime gets no live updates");
        return;
    };
    let hub = Arc::clone(hub);
    let send_timeout = hub.limits.send_timeout;
    runtime.spawn(async move {
        let stands = || hub.stands(&caller);
        let end = tokio::select! {
            end = drain(&mailbox, Receiver::Session(&peer), send_timeout, &stands) => end,
            () = mailbox.dropped() => return,
        };
        match end {
            DrainEnd::Slow => hub.drop_slow_session(key, &mailbox),
            DrainEnd::Closed => hub.remove_session(key, &mailbox),
            DrainEnd::Lapsed => hub.recheck(),
        }
    });
}

/// One listener of the hub, by its key.
#[derive(Debug, Clone, Copy)]
enum Listener {
    Session(u64),
    Stream(u64),
}

/// Why a listener's caller no longer stands, for the operator's log (names only).
fn reason(standing: &Standing, caller: &Caller) -> &'static str {
    match standing {
        Standing::Unchanged => "unchanged",
        Standing::Lapsed(lapsed) => lapsed.as_str(),
        Standing::Changed(now) if now.catalog() != caller.catalog() => "moved to another catalog",
        Standing::Changed(_) => "scope changed",
    }
}

/// The hub as the catalog's observer: each change only fills mailboxes, so no listener delays
/// the write that caused it.
#[derive(Debug, Clone)]
pub(crate) struct HubObserver(pub(crate) Arc<SubscriptionHub>);

impl CatalogObserver for HubObserver {
    fn course_changed(&self, catalog: &CatalogName, change: &CourseChange) {
        self.0.announce(catalog, change.course().id(), change.changes_listing());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_a_burst_grew_gives_its_spare_capacity_back_once_a_quarter_full_or_less() {
        let mut sessions: HashMap<u64, [u8; 300]> = (0..2_000).map(|key| (key, [0; 300])).collect();
        let grown = sessions.capacity();
        sessions.retain(|key, _| *key < 1_000);
        release_spare_capacity(&mut sessions);
        assert!(
            sessions.capacity() > grown / 2,
            "kept while more than a quarter full: {} of {grown}",
            sessions.capacity()
        );
        sessions.retain(|key, _| *key < 10);
        release_spare_capacity(&mut sessions);
        assert!(sessions.capacity() < 64, "{} slots left for 10 sessions", sessions.capacity());
        assert_eq!(sessions.len(), 10);
    }

    #[test]
    fn a_change_reaches_only_the_listeners_of_its_catalog() {
        let hub = Arc::new(SubscriptionHub::new(LiveUpdateLimits::default()));
        let azul = CatalogName::parse("azul").expect("name");
        let verde = CatalogName::parse("verde").expect("name");
        let id = CourseId::generate();
        let watched = [uris::course(id), uris::CATALOG.to_owned()];
        let listen = |name: &str, catalog: &CatalogName| {
            hub.stream_accepted();
            let caller = Caller::new(name, crate::access::caller::Scope::Read).in_catalog(catalog.clone());
            hub.admit_stream(&caller, &watched, true).expect("admitted")
        };
        let (of_azul, of_verde) = (listen("chave-azul", &azul), listen("chave-verde", &verde));
        hub.announce(&azul, id, true);
        let batch = of_azul.mailbox().take().expect("azul hears of azul's change");
        assert!(batch.list_changed);
        assert_eq!(batch.uris.len(), 2);
        assert!(of_verde.mailbox().take().is_none(), "verde hears nothing of azul's change, not even list_changed");
        hub.announce(&verde, id, false);
        assert!(of_azul.mailbox().take().is_none(), "nor azul of verde's");
        assert!(of_verde.mailbox().take().is_some());
    }

    /// A token-like caller ([`Caller::expiring_at`]): its listen stream stands until its expiry,
    /// and the first recheck after it ends the stream; a caller without expiry is left alone.
    #[tokio::test]
    async fn a_listen_stream_of_an_expiring_caller_ends_at_its_expiry() {
        let hub = Arc::new(SubscriptionHub::new(LiveUpdateLimits::default()));
        let expiry = std::time::SystemTime::now() + Duration::from_millis(300);
        let token = Caller::new("ana@http://idp", crate::access::caller::Scope::Read).expiring_at(expiry);
        let key = Caller::new("chave", crate::access::caller::Scope::Read);
        let watched = [uris::CATALOG.to_owned()];
        hub.stream_accepted();
        let of_token = hub.admit_stream(&token, &watched, true).expect("admitted");
        hub.stream_accepted();
        let of_key = hub.admit_stream(&key, &watched, true).expect("admitted");
        hub.recheck();
        assert!(!of_token.mailbox().dropped.is_cancelled(), "stands before its expiry");
        assert!(hub.stands(&token));

        let bound = Duration::from_secs(1);
        let started = tokio::time::Instant::now();
        let ended = async {
            loop {
                hub.recheck();
                if of_token.mailbox().dropped.is_cancelled() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_millis(300) + bound, ended).await.expect("ended within the bound");
        assert!(std::time::SystemTime::now() >= expiry, "not before its expiry");
        assert!(started.elapsed() >= Duration::from_millis(250), "the stream stood until then");
        assert!(!hub.stands(&token), "an expired caller is told nothing more");
        assert_eq!(hub.counts().listen_streams, 1, "only the key's stream is left");
        assert!(!of_key.mailbox().dropped.is_cancelled());
        hub.announce(&CatalogName::default_catalog(), CourseId::generate(), true);
        assert!(of_token.mailbox().take().is_none(), "nothing is posted to an ended stream");
        assert!(of_key.mailbox().take().is_some());
    }

    #[test]
    fn a_policy_change_of_one_catalog_reaches_only_its_listeners() {
        let hub = Arc::new(SubscriptionHub::new(LiveUpdateLimits::default()));
        let azul = CatalogName::parse("azul").expect("name");
        let verde = CatalogName::parse("verde").expect("name");
        let listen = |name: &str, catalog: &CatalogName| {
            hub.stream_accepted();
            let caller = Caller::new(name, crate::access::caller::Scope::Read).in_catalog(catalog.clone());
            hub.admit_stream(&caller, &[], false).expect("admitted")
        };
        let (of_azul, of_verde) = (listen("chave-azul", &azul), listen("chave-verde", &verde));
        let before = crate::access::policy::Policy::default();
        let after =
            crate::access::policy::Policy::parse("catalogo azul desativar ferramenta criar_curso").expect("valid");
        hub.announce_lists(|catalog| before.lists_changed_for(&after, catalog.as_str()));
        let batch = of_azul.mailbox().take().expect("azul's tools changed");
        assert_eq!(batch.lists, ListsChanged { tools: true, prompts: false });
        assert!(of_verde.mailbox().take().is_none(), "verde's lists did not change: no notice");
        let global = crate::access::policy::Policy::parse("desativar prompt criar-curso").expect("valid");
        hub.announce_lists(|catalog| after.lists_changed_for(&global, catalog.as_str()));
        assert_eq!(of_azul.mailbox().take().expect("azul").lists, ListsChanged { tools: true, prompts: true });
        assert_eq!(of_verde.mailbox().take().expect("verde").lists, ListsChanged { tools: false, prompts: true });
    }
}

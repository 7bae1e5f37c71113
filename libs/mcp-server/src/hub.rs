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
//! since the catalog shows active courses. Closed sessions and streams are dropped on the next
//! change or count, so churn does not grow the hub.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use courses_domain::{CatalogObserver, CourseChange, CourseId};
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};

use crate::uris;

/// Every listener of one process.
#[derive(Debug)]
pub(crate) struct SubscriptionHub {
    listeners: Mutex<Listeners>,
    /// How many listen streams are open, for whoever waits for them to end.
    open_streams: tokio::sync::watch::Sender<usize>,
}

impl Default for SubscriptionHub {
    fn default() -> Self {
        Self { listeners: Mutex::default(), open_streams: tokio::sync::watch::Sender::new(0) }
    }
}

#[derive(Debug, Default)]
struct Listeners {
    sessions: HashMap<u64, Session>,
    streams: HashMap<u64, SubscriptionSink>,
    /// Listen requests accepted but not yet running (rmcp acknowledges them first).
    pending_streams: usize,
    next_stream: u64,
}

impl Listeners {
    fn live_streams(&self) -> usize {
        self.streams.len() + self.pending_streams
    }
}

#[derive(Debug)]
struct Session {
    peer: Peer<RoleServer>,
    resources: HashSet<String>,
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
}

/// The most resources one 2025-era session may subscribe to: memory per client stays bounded.
pub(crate) const MAX_SUBSCRIPTIONS_PER_SESSION: usize = 1000;

/// A session asked for more than [`MAX_SUBSCRIPTIONS_PER_SESSION`] subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManySubscriptions;

/// What one listener must be told about one change.
#[derive(Debug)]
enum Delivery {
    Session { peer: Peer<RoleServer>, updated: Vec<String>, list_changed: bool },
    Stream { id: u64, sink: SubscriptionSink, updated: Vec<String>, list_changed: bool },
}

/// Every change of a course touches its resource, its history (each accepted write adds an
/// entry) and the catalog's pages.
fn is_affected(subscribed: &str, course_uri: &str) -> bool {
    subscribed == course_uri
        || subscribed.starts_with(uris::CATALOG)
        || subscribed.strip_prefix(course_uri).is_some_and(|rest| rest.starts_with("/historico"))
}

impl SubscriptionHub {
    /// A 2025-era session finished its handshake: it will get list-changed notices.
    pub(crate) fn session_opened(&self, session: u64, peer: Peer<RoleServer>) {
        let mut listeners = self.lock();
        listeners.sessions.entry(session).or_insert_with(|| Session { peer, resources: HashSet::new() });
    }

    /// `resources/subscribe` from a 2025-era session.
    ///
    /// # Errors
    /// [`TooManySubscriptions`] when the session already holds [`MAX_SUBSCRIPTIONS_PER_SESSION`]
    /// other resources.
    pub(crate) fn subscribe(
        &self,
        session: u64,
        peer: Peer<RoleServer>,
        uri: String,
    ) -> Result<(), TooManySubscriptions> {
        let mut listeners = self.lock();
        let resources = &mut listeners
            .sessions
            .entry(session)
            .or_insert_with(|| Session { peer, resources: HashSet::new() })
            .resources;
        if resources.len() >= MAX_SUBSCRIPTIONS_PER_SESSION && !resources.contains(&uri) {
            return Err(TooManySubscriptions);
        }
        resources.insert(uri);
        Ok(())
    }

    /// `resources/unsubscribe` from a 2025-era session.
    pub(crate) fn unsubscribe(&self, session: u64, uri: &str) {
        if let Some(session) = self.lock().sessions.get_mut(&session) {
            session.resources.remove(uri);
        }
    }

    /// A 2026-07-28 listen request was accepted; [`Self::stream_opened`] follows once it runs.
    pub(crate) fn stream_accepted(&self) {
        let mut listeners = self.lock();
        listeners.pending_streams += 1;
        self.open_streams.send_replace(listeners.live_streams());
    }

    /// A 2026-07-28 listen stream opened; returns its key for [`Self::stream_closed`].
    pub(crate) fn stream_opened(&self, sink: SubscriptionSink) -> u64 {
        let mut listeners = self.lock();
        listeners.pending_streams = listeners.pending_streams.saturating_sub(1);
        listeners.next_stream += 1;
        let id = listeners.next_stream;
        listeners.streams.insert(id, sink);
        self.open_streams.send_replace(listeners.live_streams());
        id
    }

    /// A 2026-07-28 listen stream ended.
    pub(crate) fn stream_closed(&self, id: u64) {
        let mut listeners = self.lock();
        listeners.streams.remove(&id);
        self.open_streams.send_replace(listeners.live_streams());
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
        listeners.sessions.retain(|_, session| !session.peer.is_transport_closed());
        HubCounts {
            sessions: listeners.sessions.len(),
            subscriptions: listeners.sessions.values().map(|session| session.resources.len()).sum(),
            listen_streams: listeners.streams.len(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Listeners> {
        // A panic while holding the lock cannot leave the maps half-updated in a harmful way.
        self.listeners.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn deliveries(&self, change: &CourseChange) -> Vec<Delivery> {
        self.deliveries_for(change.course().id(), change.changes_listing())
    }

    /// What every listener must be told about a change of course `id` (`list_changed`: the
    /// listing changed too).
    fn deliveries_for(&self, id: CourseId, list_changed: bool) -> Vec<Delivery> {
        let course_uri = uris::course(id);
        let mut listeners = self.lock();
        listeners.sessions.retain(|_, session| !session.peer.is_transport_closed());
        let mut deliveries: Vec<Delivery> = listeners
            .sessions
            .values()
            .map(|session| Delivery::Session {
                peer: session.peer.clone(),
                updated: session.resources.iter().filter(|uri| is_affected(uri, &course_uri)).cloned().collect(),
                list_changed,
            })
            .collect();
        deliveries.extend(listeners.streams.iter().map(|(id, sink)| {
            let accepted = sink.accepted();
            Delivery::Stream {
                id: *id,
                sink: sink.clone(),
                updated: accepted
                    .resource_subscriptions
                    .iter()
                    .flatten()
                    .filter(|uri| is_affected(uri, &course_uri))
                    .cloned()
                    .collect(),
                list_changed: list_changed && accepted.resources_list_changed == Some(true),
            }
        }));
        deliveries
    }

    async fn deliver(&self, deliveries: Vec<Delivery>) {
        for delivery in deliveries {
            match delivery {
                Delivery::Session { peer, updated, list_changed } => {
                    for uri in updated {
                        if let Err(error) =
                            peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)).await
                        {
                            tracing::debug!(%error, "a session left before its update notice");
                        }
                    }
                    if list_changed && let Err(error) = peer.notify_resource_list_changed().await {
                        tracing::debug!(%error, "a session left before its list-changed notice");
                    }
                }
                Delivery::Stream { id, sink, updated, list_changed } => {
                    let mut closed = false;
                    for uri in updated {
                        closed |= sink.notify_resource_updated(uri).await.is_err();
                    }
                    if list_changed {
                        closed |= sink.notify_resource_list_changed().await.is_err();
                    }
                    if closed {
                        self.stream_closed(id);
                    }
                }
            }
        }
    }
}

/// The hub as the catalog's observer: each change is delivered on its own task, so a slow
/// listener never delays the write that caused it.
#[derive(Debug, Clone)]
pub(crate) struct HubObserver(pub(crate) std::sync::Arc<SubscriptionHub>);

impl CatalogObserver for HubObserver {
    fn course_changed(&self, change: &CourseChange) {
        let deliveries = self.0.deliveries(change);
        spawn_deliveries(&self.0, deliveries);
    }
}

/// Tells this process's listeners of a change made elsewhere (another replica on the same
/// database), known only by the course's id and whether the listing changed.
pub(crate) fn announce_remote(hub: &std::sync::Arc<SubscriptionHub>, id: CourseId, list_changed: bool) {
    let deliveries = hub.deliveries_for(id, list_changed);
    spawn_deliveries(hub, deliveries);
}

fn spawn_deliveries(hub: &std::sync::Arc<SubscriptionHub>, deliveries: Vec<Delivery>) {
    if deliveries.is_empty() {
        return;
    }
    let hub = std::sync::Arc::clone(hub);
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move { hub.deliver(deliveries).await });
        }
        Err(_) => tracing::warn!("a catalog change outside a Tokio runtime was not announced"),
    }
}

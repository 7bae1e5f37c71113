//! The MCP sessions of stateful mode (ADR 0023): who opened each one, and the cap per credential.
//!
//! rmcp's [`LocalSessionManager`] holds the sessions but not who opened them, so this registry
//! keeps, for each session id an `initialize`'s answer carried (its `Mcp-Session-Id` header),
//! the [`Principal`] of the caller that sent it, and forgets an id once the manager no longer
//! holds it (closed by DELETE, expired when idle, closed because its caller changed, or ended at
//! shutdown).
//!
//! **A session belongs to the caller that opened it.** A request that names a session its
//! caller's principal did not open (another key, another token's subject, a key re-issued under
//! the same name) is answered exactly as rmcp answers an unknown session: `404` with the text
//! `Not Found: Session not found`, on every method (requests, notifications, the answers to the
//! server's own questions, the GET stream, DELETE). A DELETE of a session nobody holds gets that
//! same 404 (rmcp alone would answer 202 for an id it does not know), so a caller cannot tell
//! another's session from one that does not exist. 2026-07-28 requests (an
//! `MCP-Protocol-Version` of that revision or later) have no sessions: rmcp ignores the header
//! there, and so does this check.
//!
//! **The cap counts per principal**, not per key name: it bounds what one credential can make
//! the server hold, and a principal is exactly one credential (a key's hash, a token's issuer and
//! subject), so a key re-issued under an old name starts with its own count, and the sessions of
//! the old one (closed once it lapses, [`mcp_server::ServerState::recheck_listeners`]) are not
//! held against it. The refusal still names the key by its name. An `initialize` is counted from
//! when it is let through until its answer: concurrent ones cannot overshoot the cap together.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, Method, StatusCode, header::HeaderName};
use axum::response::{IntoResponse, Response};
use mcp_server::{Caller, Principal};
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// The first revision without sessions (its requests carry their own `_meta`).
const FIRST_SESSIONLESS_REVISION: &str = "2026-07-28";
/// What rmcp answers for a session id it does not hold (`tower.rs`, "MCP spec: server MUST
/// respond with 404 Not Found for terminated/unknown sessions").
const UNKNOWN_SESSION_TEXT: &str = "Not Found: Session not found";

/// Who opened which of the manager's sessions, and how many more each principal may open.
#[derive(Debug)]
pub(crate) struct SessionCap {
    manager: Arc<LocalSessionManager>,
    limit: NonZeroUsize,
    registry: Mutex<Registry>,
}

#[derive(Debug, Default)]
struct Registry {
    /// The principal that opened each session.
    owners: HashMap<SessionId, Principal>,
    /// The sessions each principal holds or is opening.
    by_principal: HashMap<Principal, Held>,
}

#[derive(Debug, Default)]
struct Held {
    open: Vec<SessionId>,
    /// `initialize` requests let through and not answered yet.
    opening: usize,
}

impl SessionCap {
    pub(crate) fn new(manager: Arc<LocalSessionManager>, limit: NonZeroUsize) -> Self {
        Self { manager, limit, registry: Mutex::default() }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts an `initialize` of `principal` against its cap: `Err(open)` when it is full.
    async fn reserve(self: &Arc<Self>, principal: &Principal) -> Result<Reservation, usize> {
        let live = self.manager.sessions.read().await;
        let mut registry = self.registry();
        // Sessions the manager let go of (DELETE, idle expiry, a lapsed caller) no longer count,
        // for any principal, nor belong to anyone.
        registry.owners.retain(|id, _| live.contains_key(id));
        registry.by_principal.retain(|_, held| {
            held.open.retain(|id| live.contains_key(id));
            release_spare_capacity(&mut held.open, Vec::capacity, Vec::len, Vec::shrink_to);
            !held.open.is_empty() || held.opening > 0
        });
        release_spare_capacity(&mut registry.owners, HashMap::capacity, HashMap::len, HashMap::shrink_to);
        drop(live);
        let held = registry.by_principal.entry(principal.clone()).or_default();
        let count = held.open.len() + held.opening;
        if count >= self.limit.get() {
            return Err(count);
        }
        held.opening += 1;
        Ok(Reservation { cap: Arc::clone(self), principal: principal.clone() })
    }

    /// Lets an `initialize` that opens a session through (after authentication and the body
    /// check), counted against its caller's principal until [`Reservation::settle_with`]; 429
    /// when it would open one session more than one credential may hold.
    pub(crate) async fn admit(self: &Arc<Self>, caller: &Caller) -> Result<Reservation, Response> {
        self.reserve(caller.principal()).await.map_err(|open| too_many_sessions(caller, open, self.limit))
    }

    /// `None` when `request` names no session, is of a revision without sessions, or names a
    /// session `caller`'s principal opened (and, for a DELETE, the manager still holds);
    /// otherwise the 404 rmcp gives an unknown session.
    async fn refusal_for(&self, caller: &Caller, method: &Method, headers: &HeaderMap) -> Option<Response> {
        let id = headers.get(SESSION_ID)?.to_str().ok()?;
        if is_sessionless(headers) {
            return None;
        }
        let owned = self.registry().owners.get(id).is_some_and(|owner| owner == caller.principal());
        if !owned {
            // Never the session id: it is as good as a credential to whoever holds the key too.
            tracing::warn!(target: "backend::session_cap", key = caller.name(), %method, "a request named a session its caller did not open: answered as an unknown session");
            return Some(unknown_session());
        }
        if method == Method::DELETE && !self.manager.sessions.read().await.contains_key(id) {
            return Some(unknown_session());
        }
        None
    }
}

/// The `/mcp` gate's ownership hook (stateful mode; `cap` is `None` in stateless mode): the
/// response for a request that names a session `caller` does not hold, or `None` to go on.
/// Takes the request's method and headers, not the request: its body is not `Sync`.
pub(crate) async fn refuse_unless_owner(
    cap: Option<&SessionCap>,
    caller: &Caller,
    method: &Method,
    headers: &HeaderMap,
) -> Option<Response> {
    cap?.refusal_for(caller, method, headers).await
}

/// Whether the request speaks a revision without sessions (`MCP-Protocol-Version` names
/// 2026-07-28 or later; revisions are dates, so they compare as text).
fn is_sessionless(headers: &HeaderMap) -> bool {
    headers
        .get(PROTOCOL_VERSION)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|version| version.trim() >= FIRST_SESSIONLESS_REVISION)
}

/// Exactly rmcp's answer for a session id it does not hold: status, body, and no header of its
/// own (not even a `Content-Type`; hyper adds the length and the date, as to rmcp's).
fn unknown_session() -> Response {
    let mut response = Response::new(axum::body::Body::from(UNKNOWN_SESSION_TEXT));
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// One `initialize` counted against its principal until its answer; dropped unanswered, it is
/// released.
pub(crate) struct Reservation {
    cap: Arc<SessionCap>,
    principal: Principal,
}

impl Reservation {
    /// Counts the session the `initialize`'s answer opened, if any, as its principal's.
    pub(crate) fn settle_with(self, response: &Response) {
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(|value| SessionId::from(value.to_owned()));
        let Some(session) = session else {
            return;
        };
        let mut registry = self.cap.registry();
        registry.owners.insert(Arc::clone(&session), self.principal.clone());
        if let Some(held) = registry.by_principal.get_mut(&self.principal) {
            held.open.push(session);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut registry = self.cap.registry();
        if let Some(held) = registry.by_principal.get_mut(&self.principal) {
            held.opening = held.opening.saturating_sub(1);
        }
    }
}

/// Shrinks a collection to twice its entries once they fill a quarter of its capacity or less
/// (and it has grown past a few dozen; amortized O(1), as the growth that doubles it): a burst of
/// 2,000 sessions left `owners` and a key's `open` at 4,096 and 2,048 slots after they closed
/// (issue 24, item 7).
fn release_spare_capacity<C>(
    collection: &mut C,
    capacity: fn(&C) -> usize,
    len: fn(&C) -> usize,
    shrink_to: fn(&mut C, usize),
) {
    let (capacity, len) = (capacity(collection), len(collection));
    if capacity > 64 && len <= capacity / 4 {
        shrink_to(collection, len * 2);
    }
}

fn too_many_sessions(caller: &Caller, open: usize, limit: NonZeroUsize) -> Response {
    tracing::warn!(target: "backend::session_cap", key = caller.name(), open, limit, "initialize refused: the key holds its most open sessions");
    (
        StatusCode::TOO_MANY_REQUESTS,
        axum::Json(json!({
            "error": "too_many_sessions",
            "message": format!(
                "this key already holds {open} open MCP sessions, its most (MAX_SESSIONS_PER_KEY={limit}); \
                 close one (DELETE /mcp with its Mcp-Session-Id) or let an idle one expire"
            ),
        })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_server::Scope;

    #[test]
    fn what_a_burst_of_sessions_grew_is_given_back_once_they_closed() {
        let mut owners: HashMap<u64, u64> = (0..2_000).map(|key| (key, key)).collect();
        let mut open: Vec<u64> = (0..2_000).collect();
        owners.retain(|key, _| *key < 10);
        open.truncate(10);
        release_spare_capacity(&mut owners, HashMap::capacity, HashMap::len, HashMap::shrink_to);
        release_spare_capacity(&mut open, Vec::capacity, Vec::len, Vec::shrink_to);
        assert!(owners.capacity() < 64 && open.capacity() < 64, "{} and {}", owners.capacity(), open.capacity());
        assert_eq!((owners.len(), open.len()), (10, 10));
    }

    fn naming(session: &str, revision: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(SESSION_ID, session.parse().expect("header value"));
        headers.insert(PROTOCOL_VERSION, revision.parse().expect("header value"));
        headers
    }

    fn caller(name: &str, principal: &str) -> Caller {
        Caller::new(name, Scope::Write).with_principal(Principal::new(principal))
    }

    async fn opened(cap: &Arc<SessionCap>, caller: &Caller, session: &str) {
        let reservation = cap.admit(caller).await.expect("within the cap");
        let mut answer = Response::new(axum::body::Body::empty());
        answer.headers_mut().insert(SESSION_ID, session.parse().expect("header value"));
        reservation.settle_with(&answer);
    }

    #[tokio::test]
    async fn a_session_answers_only_to_the_principal_that_opened_it_as_if_unknown_to_anyone_else() {
        let cap = Arc::new(SessionCap::new(Arc::default(), NonZeroUsize::new(4).expect("not zero")));
        let owner = caller("ci", "key:sha256:aa");
        opened(&cap, &owner, "s-1").await;
        assert!(cap.refusal_for(&owner, &Method::POST, &naming("s-1", "2025-11-25")).await.is_none());
        assert!(cap.refusal_for(&owner, &Method::GET, &naming("s-1", "2025-11-25")).await.is_none());

        // The same name re-issued (another hash), a token's subject, an id nobody opened.
        let reissued = caller("ci", "key:sha256:bb");
        let token = caller("ana@http://idp", "oauth:http://idp#ana");
        for (who, session) in [(&reissued, "s-1"), (&token, "s-1"), (&owner, "s-2")] {
            for method in [Method::POST, Method::GET, Method::DELETE] {
                let refusal = cap.refusal_for(who, &method, &naming(session, "2025-11-25")).await.expect("refused");
                assert_eq!(refusal.status(), StatusCode::NOT_FOUND);
                assert!(refusal.headers().is_empty(), "no header of its own, as rmcp's: {:?}", refusal.headers());
                let body = axum::body::to_bytes(refusal.into_body(), 1024).await.expect("body");
                assert_eq!(body, UNKNOWN_SESSION_TEXT);
            }
        }
        // 2026-07-28 requests have no sessions: rmcp ignores the header, and so does the check.
        assert!(cap.refusal_for(&token, &Method::POST, &naming("s-1", "2026-07-28")).await.is_none());
        // The owner's DELETE of a session the manager no longer holds: unknown too.
        assert!(cap.refusal_for(&owner, &Method::DELETE, &naming("s-1", "2025-11-25")).await.is_some());
    }

    /// Through `reserve`, which logs nothing: a log event with no subscriber here would leave
    /// its callsite uninterested for the router's tests that capture the log.
    #[tokio::test]
    async fn the_cap_counts_per_principal_so_a_key_reissued_under_its_name_has_its_own() {
        let cap = Arc::new(SessionCap::new(Arc::default(), NonZeroUsize::new(1).expect("not zero")));
        let (old, reissued) = (Principal::new("key:sha256:aa"), Principal::new("key:sha256:bb"));
        let first = cap.reserve(&old).await.expect("the first");
        assert_eq!(cap.reserve(&old).await.err(), Some(1), "its cap is full");
        assert!(cap.reserve(&reissued).await.is_ok(), "another credential, its own count");
        drop(first);
        assert!(cap.reserve(&old).await.is_ok(), "an unanswered initialize is released");
    }
}

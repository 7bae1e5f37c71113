//! The cap on open MCP sessions per key (stateful mode, ADR 0023).
//!
//! rmcp's [`LocalSessionManager`] holds the sessions but not who opened them, so the cap keeps,
//! per key name, the ids of the sessions its `initialize` requests created, and forgets an id once
//! the manager no longer holds it (closed by DELETE, expired when idle, or ended at shutdown). An
//! `initialize` is counted from when it is let through until its answer: concurrent ones cannot
//! overshoot the cap together.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{StatusCode, header::HeaderName};
use axum::response::{IntoResponse, Response};
use mcp_server::Caller;
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Who opened which of the manager's sessions, and how many more each key may open.
#[derive(Debug)]
pub(crate) struct SessionCap {
    manager: Arc<LocalSessionManager>,
    limit: NonZeroUsize,
    by_key: Mutex<HashMap<Arc<str>, KeySessions>>,
}

#[derive(Debug, Default)]
struct KeySessions {
    open: Vec<SessionId>,
    /// `initialize` requests let through and not answered yet.
    opening: usize,
}

impl SessionCap {
    pub(crate) fn new(manager: Arc<LocalSessionManager>, limit: NonZeroUsize) -> Self {
        Self { manager, limit, by_key: Mutex::new(HashMap::new()) }
    }

    /// Counts an `initialize` of `key` against its cap: `Err(open)` when it is full.
    async fn reserve(self: &Arc<Self>, key: &str) -> Result<Reservation, usize> {
        let live = self.manager.sessions.read().await;
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        // Sessions the manager let go of (DELETE, idle expiry) no longer count, for any key.
        by_key.retain(|_, sessions| {
            sessions.open.retain(|id| live.contains_key(id));
            !sessions.open.is_empty() || sessions.opening > 0
        });
        drop(live);
        let sessions = by_key.entry(Arc::from(key)).or_default();
        let held = sessions.open.len() + sessions.opening;
        if held >= self.limit.get() {
            return Err(held);
        }
        sessions.opening += 1;
        Ok(Reservation { cap: Arc::clone(self), key: Arc::from(key) })
    }
}

/// One `initialize` counted against its key until its answer; dropped unanswered, it is released.
pub(crate) struct Reservation {
    cap: Arc<SessionCap>,
    key: Arc<str>,
}

impl Reservation {
    fn settle(self, session: Option<SessionId>) {
        let mut by_key = self.cap.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(sessions), Some(session)) = (by_key.get_mut(&self.key), session) {
            sessions.open.push(session);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut by_key = self.cap.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sessions) = by_key.get_mut(&self.key) {
            sessions.opening = sessions.opening.saturating_sub(1);
        }
    }
}

impl SessionCap {
    /// Lets an `initialize` that opens a session through (after authentication and the body
    /// check), counted against its key until [`Reservation::settle`]; 429 when it would open one
    /// session more than its key may hold.
    pub(crate) async fn admit(self: &Arc<Self>, caller: &Caller) -> Result<Reservation, Response> {
        self.reserve(caller.name()).await.map_err(|open| too_many_sessions(caller, open, self.limit))
    }
}

impl Reservation {
    /// Counts the session the `initialize`'s answer opened, if any.
    pub(crate) fn settle_with(self, response: &Response) {
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(|value| SessionId::from(value.to_owned()));
        self.settle(session);
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

//! How many of the served connections one address, and one key, may hold (ADR 0045).
//!
//! [`Shares`] counts the connections of each remote address (from accept to close) and of each
//! caller (a connection belongs to the principal of its latest request, until it closes or a
//! request of another caller arrives on it, as through a reverse proxy's pool). The accept loop
//! refuses a connection beyond its address's share at once ([`refusal_at_accept`], no permit
//! held); the `/mcp` gate refuses a request that would give its caller more than its share
//! ([`ConnectionSlot::attribute`]: 429, and the connection is closed). So clients that open
//! connections and never read their answers, with one key or from one address, cannot take every
//! connection: the rest stay for the others.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// The connection counts of one process, by address and by caller.
#[derive(Debug)]
pub struct Shares {
    per_address: usize,
    per_key: usize,
    addresses: Mutex<HashMap<IpAddr, usize>>,
    keys: Mutex<HashMap<Arc<str>, usize>>,
}

impl Shares {
    /// At most `per_address` connections of one address and `per_key` of one caller (each at
    /// least 1).
    #[must_use]
    pub fn new(per_address: usize, per_key: usize) -> Arc<Self> {
        Arc::new(Self {
            per_address: per_address.max(1),
            per_key: per_key.max(1),
            addresses: Mutex::default(),
            keys: Mutex::default(),
        })
    }

    /// A hold on one of `address`'s connections, released when dropped; `None` when the address
    /// already holds its share.
    #[must_use]
    pub fn hold_address(self: &Arc<Self>, address: IpAddr) -> Option<AddressHold> {
        let mut addresses = self.addresses.lock().unwrap_or_else(PoisonError::into_inner);
        let count = addresses.entry(address).or_insert(0);
        if *count >= self.per_address {
            return None;
        }
        *count += 1;
        Some(AddressHold { shares: Arc::clone(self), address })
    }

    /// A new connection's slot, owned by no caller until its first request is attributed.
    #[must_use]
    pub fn slot(self: &Arc<Self>) -> ConnectionSlot {
        ConnectionSlot { shares: Arc::clone(self), owner: Mutex::new(None), on_stall: Mutex::default() }
    }

    /// The share of one address.
    #[must_use]
    pub const fn per_address(&self) -> usize {
        self.per_address
    }

    /// The share of one caller.
    #[must_use]
    pub const fn per_key(&self) -> usize {
        self.per_key
    }

    fn release_key(&self, owner: &Arc<str>) {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = keys.get_mut(owner) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                keys.remove(owner);
            }
        }
    }
}

/// One connection of an address, counted until dropped.
#[derive(Debug)]
pub struct AddressHold {
    shares: Arc<Shares>,
    address: IpAddr,
}

impl Drop for AddressHold {
    fn drop(&mut self) {
        let mut addresses = self.shares.addresses.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = addresses.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                addresses.remove(&self.address);
            }
        }
    }
}

/// What to do when a connection is closed for a stalled write (its client stopped reading).
type OnStall = Box<dyn FnOnce() + Send>;

/// The caller a connection is counted for, and what to undo if it stalls; put in each request's
/// extensions by the accept loop.
pub struct ConnectionSlot {
    shares: Arc<Shares>,
    owner: Mutex<Option<Arc<str>>>,
    on_stall: Mutex<Vec<OnStall>>,
}

impl std::fmt::Debug for ConnectionSlot {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("ConnectionSlot").field("owner", &self.owner).finish_non_exhaustive()
    }
}

/// A request refused because its caller already holds its share of the connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverShare {
    /// The share of one caller.
    pub per_key: usize,
}

impl ConnectionSlot {
    /// Counts this connection for `principal` (a key's hash or a token's issuer and subject):
    /// already its own, or moved to it from its previous caller when `principal` holds less than
    /// its share.
    ///
    /// # Errors
    /// [`OverShare`] when `principal` already holds its share of connections (this one stays
    /// counted for its previous caller, if any).
    pub fn attribute(&self, principal: &str) -> Result<(), OverShare> {
        let mut owner = self.owner.lock().unwrap_or_else(PoisonError::into_inner);
        if owner.as_deref() == Some(principal) {
            return Ok(());
        }
        {
            let mut keys = self.shares.keys.lock().unwrap_or_else(PoisonError::into_inner);
            let count = keys.entry(Arc::from(principal)).or_insert(0);
            if *count >= self.shares.per_key {
                if *count == 0 {
                    keys.remove(principal);
                }
                return Err(OverShare { per_key: self.shares.per_key });
            }
            *count += 1;
        }
        if let Some(previous) = owner.replace(Arc::from(principal)) {
            self.shares.release_key(&previous);
        }
        Ok(())
    }
}

impl ConnectionSlot {
    /// Runs `action` if this connection is closed because a write stalled: a 2025-era session
    /// whose GET stream it carried is closed then (its client stopped reading; ADR 0045), as the
    /// live-update hub closes one whose stream it can no longer feed (ADR 0022).
    pub fn on_write_stall(&self, action: impl FnOnce() + Send + 'static) {
        self.on_stall.lock().unwrap_or_else(PoisonError::into_inner).push(Box::new(action));
    }

    /// The connection was closed for a stalled write: runs what [`Self::on_write_stall`] asked.
    pub fn stalled(&self) {
        let actions = std::mem::take(&mut *self.on_stall.lock().unwrap_or_else(PoisonError::into_inner));
        for action in actions {
            action();
        }
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.get_mut().unwrap_or_else(PoisonError::into_inner).take() {
            self.shares.release_key(&owner);
        }
    }
}

/// What a connection beyond its address's share is sent before it is closed: a complete HTTP/1.1
/// 429 that needs no request read (written at once, best effort, so no permit is held for it).
#[must_use]
pub fn refusal_at_accept(per_address: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "error": "too_many_connections",
        "message": format!(
            "too many connections from this address (at most {per_address}, MAX_CONNECTIONS_PER_ADDRESS); close one and retry"
        ),
    })
    .to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_its_share_and_gets_it_back_when_a_connection_closes() {
        let shares = Shares::new(2, 8);
        let here: IpAddr = [127, 0, 0, 2].into();
        let first = shares.hold_address(here).expect("first");
        let _second = shares.hold_address(here).expect("second");
        assert!(shares.hold_address(here).is_none(), "a third is over the share");
        assert!(shares.hold_address([127, 0, 0, 3].into()).is_some(), "another address has its own share");
        drop(first);
        assert!(shares.hold_address(here).is_some(), "a closed connection frees its place");
    }

    #[test]
    fn a_caller_holds_at_most_its_share_and_a_connection_moves_to_its_latest_caller() {
        let shares = Shares::new(8, 2);
        let (a, b, c) = (shares.slot(), shares.slot(), shares.slot());
        a.attribute("key:a").expect("a");
        a.attribute("key:a").expect("the same caller again is no new connection");
        b.attribute("key:a").expect("b");
        assert_eq!(c.attribute("key:a"), Err(OverShare { per_key: 2 }));
        c.attribute("key:z").expect("another caller has its own share");
        // b is reused by another caller (a proxy's pool): it no longer counts for key:a.
        b.attribute("key:z").expect("moved");
        c.attribute("key:a").expect("key:a has room again");
        assert_eq!(shares.slot().attribute("key:a"), Err(OverShare { per_key: 2 }), "a and c");
        drop(a);
        let d = shares.slot();
        d.attribute("key:a").expect("a closed connection frees its caller's place");
        assert_eq!(shares.slot().attribute("key:a"), Err(OverShare { per_key: 2 }), "c and d");
    }

    #[test]
    fn the_refusal_at_accept_is_a_complete_http_response() {
        let bytes = refusal_at_accept(4);
        let text = String::from_utf8(bytes).expect("utf-8");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(body["error"], "too_many_connections");
        assert!(body["message"].as_str().is_some_and(|m| m.contains("at most 4")), "{body}");
    }
}

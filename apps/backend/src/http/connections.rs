//! The accept loop, [`serve`], and what one process lets TCP clients hold: open connections, and the
//! time a connection may take to send a request head (ADR 0023).
//!
//! [`serve`] accepts a connection only while it holds one of
//! [`ConnectionLimits::max_connections`] permits (beyond it, new connections wait in the kernel's
//! listen backlog, holding no descriptor of ours), and hyper closes a connection that has not sent
//! a complete request head within [`ConnectionLimits::header_read_timeout`] of opening or of its
//! previous response: a slowloris or an idle keep-alive connection is reclaimed. A write that the
//! client does not take within [`ConnectionLimits::write_stall_timeout`] closes the connection (a
//! client that sends requests and never reads its answers), and one address, and one caller, hold
//! at most their [share](super::shares) of the connections (ADR 0045). The cap is kept
//! below the process's open-files limit, which [`raise_open_files_limit`] raises to the hard limit
//! at start, so that the database, the keys file and the log always have descriptors left.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio_util::sync::CancellationToken;

use super::shares::{Shares, refusal_at_accept};

/// Descriptors kept out of the connection cap for everything else the process opens: SQLite's
/// file, WAL and shared memory per pooled connection, PostgreSQL sockets, the keys file and its
/// lock, the listener, epoll and the standard streams.
pub const RESERVED_DESCRIPTORS: u64 = 128;

/// The connection cap when `MAX_CONNECTIONS` is not set (lowered when the open-files limit
/// leaves less room).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// The soft open-files limit asked for at start: Linux's default `fs.nr_open`, above which
/// `setrlimit` fails even under a higher hard limit.
const OPEN_FILES_WANTED: u64 = 1 << 20;

/// `WRITE_STALL_TIMEOUT` when not set: how long one write to a client may wait for it to read.
pub const DEFAULT_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How the accept loop bounds what connections hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Most connections served at once.
    pub max_connections: usize,
    /// Time allowed to send a complete request head, from when the connection opens or its
    /// previous response ends (so also the keep-alive idle timeout).
    pub header_read_timeout: Duration,
    /// Time one write may wait for the client to take bytes (its receive window full): then the
    /// connection is closed.
    pub write_stall_timeout: Duration,
    /// Most connections of one remote address.
    pub per_address: usize,
    /// Most connections of one caller (a key, or a token's issuer and subject).
    pub per_key: usize,
}

impl ConnectionLimits {
    /// The cap for `open_files` descriptors: `requested`, or [`DEFAULT_MAX_CONNECTIONS`] lowered
    /// to what the limit leaves after [`RESERVED_DESCRIPTORS`].
    ///
    /// # Errors
    /// [`ConnectionCapError`] when `requested` does not fit under the limit, or no connection does.
    pub fn for_open_files(
        requested: Option<NonZeroUsize>,
        open_files: u64,
        header_read_timeout: Duration,
    ) -> Result<Self, ConnectionCapError> {
        let room = usize::try_from(open_files.saturating_sub(RESERVED_DESCRIPTORS)).unwrap_or(usize::MAX);
        let max_connections = match requested {
            Some(requested) if requested.get() > room => {
                return Err(ConnectionCapError::OverOpenFiles { requested: requested.get(), open_files });
            }
            Some(requested) => requested.get(),
            None if room == 0 => return Err(ConnectionCapError::NoRoom { open_files }),
            None => DEFAULT_MAX_CONNECTIONS.min(room),
        };
        let half = max_connections.div_ceil(2);
        Ok(Self {
            max_connections,
            header_read_timeout,
            write_stall_timeout: DEFAULT_WRITE_STALL_TIMEOUT,
            per_address: half,
            per_key: half,
        })
    }

    /// With `timeout` as the write-stall bound.
    #[must_use]
    pub const fn with_write_stall_timeout(mut self, timeout: Duration) -> Self {
        self.write_stall_timeout = timeout;
        self
    }

    /// With the shares asked for: each defaults to half the cap (rounded up) and is at most the cap.
    #[must_use]
    pub fn with_shares(mut self, per_address: Option<NonZeroUsize>, per_key: Option<NonZeroUsize>) -> Self {
        let half = self.max_connections.div_ceil(2);
        self.per_address = per_address.map_or(half, NonZeroUsize::get).min(self.max_connections);
        self.per_key = per_key.map_or(half, NonZeroUsize::get).min(self.max_connections);
        self
    }
}

/// Why no connection cap fits the open-files limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionCapError {
    /// `MAX_CONNECTIONS` asks for more than the descriptors left.
    #[error(
        "MAX_CONNECTIONS={requested} needs {needed} open files ({RESERVED_DESCRIPTORS} kept for the database and the rest), \
         but the open-files limit is {open_files}: lower MAX_CONNECTIONS or raise the limit (ulimit -n, LimitNOFILE)",
        needed = *requested as u64 + RESERVED_DESCRIPTORS
    )]
    OverOpenFiles {
        /// The setting's value.
        requested: usize,
        /// The soft limit after raising it.
        open_files: u64,
    },
    /// The limit leaves nothing for connections.
    #[error(
        "the open-files limit is {open_files}, not more than the {RESERVED_DESCRIPTORS} kept for the database and the rest: \
         raise it (ulimit -n, LimitNOFILE)"
    )]
    NoRoom {
        /// The soft limit after raising it.
        open_files: u64,
    },
}

/// Raises the soft open-files limit to the hard limit (at most 2^20) where the system allows it,
/// and returns the soft limit in force; `None` when it cannot be read (the platform has none).
#[must_use]
pub fn raise_open_files_limit() -> Option<u64> {
    match rlimit::increase_nofile_limit(OPEN_FILES_WANTED) {
        Ok(limit) => Some(limit),
        Err(error) => {
            tracing::warn!(target: "backend::connections", %error, "cannot raise the open-files limit");
            rlimit::Resource::NOFILE.get().ok().map(|(soft, _hard)| soft)
        }
    }
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then lets in-flight requests finish.
///
/// HTTP/1.1 only, with `TCP_NODELAY` on every accepted socket. At most
/// [`ConnectionLimits::max_connections`] connections are served at once: beyond it the loop stops
/// accepting, and new connections wait in the kernel's listen backlog until one closes. A
/// connection that does not send a complete request head within
/// [`ConnectionLimits::header_read_timeout`] of opening, or of its previous response, is closed
/// (slowloris and idle keep-alive connections alike); a response being streamed (SSE) is never
/// cut by it. A write the client does not take within [`ConnectionLimits::write_stall_timeout`]
/// closes the connection. A connection beyond its address's share is answered 429 and closed at
/// once; each connection carries its [`ConnectionSlot`](super::shares::ConnectionSlot) in its
/// requests' extensions, for the `/mcp` gate to count it for its caller.
///
/// # Errors
/// Only if the connection permits were closed, which nothing does: accept errors are logged and
/// retried.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: CancellationToken,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    let permits = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let shares = Shares::new(limits.per_address, limits.per_key);
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => permit.map_err(std::io::Error::other)?,
            () = shutdown.cancelled() => break,
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(&error).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let Some(address_hold) = shares.hold_address(remote.ip()) else {
            // Best effort and at once: the permit goes back at the end of this turn.
            let _ = stream.try_write(&refusal_at_accept(shares.per_address()));
            tracing::warn!(
                target: "backend",
                address = %remote.ip(),
                per_address = shares.per_address(),
                "connection refused: its address already holds its share of the connections"
            );
            continue;
        };
        // Without it, small SSE frames wait ~40 ms behind Nagle's algorithm.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(target: "backend", %error, "cannot set TCP_NODELAY on an accepted socket");
        }
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_stall_timeout));
        let slot = Arc::new(shares.slot());
        let service = hyper_util::service::TowerToHyperService::new(tower::Layer::layer(
            &axum::Extension(Arc::clone(&slot)),
            router.clone(),
        ));
        let io = hyper_util::rt::TokioIo::new(Box::pin(stream));
        let connection = connections.watch(http.serve_connection(io, service));
        let write_stall_timeout = limits.write_stall_timeout;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                if is_write_stall(&error) {
                    slot.stalled();
                    tracing::info!(
                        target: "backend",
                        address = %remote.ip(),
                        ?write_stall_timeout,
                        "connection closed: its client did not take its response within WRITE_STALL_TIMEOUT"
                    );
                } else {
                    tracing::debug!(target: "backend", %error, "connection ended with an error");
                }
            }
            drop(address_hold);
            drop(permit);
        });
    }
    drop(listener);
    connections.shutdown().await;
    Ok(())
}

/// Whether a connection ended because a write waited longer than the write-stall bound.
fn is_write_stall(error: &hyper::Error) -> bool {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut) {
            return true;
        }
        source = cause.source();
    }
    false
}

/// An accept error: a connection reset before it was accepted is skipped; anything else (such as
/// running out of descriptors) is logged and retried after a pause, as hyper and axum do.
async fn accept_failed(error: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(error.kind(), ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset)
    {
        return;
    }
    tracing::error!(target: "backend", %error, "cannot accept a connection; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(10);

    #[test]
    fn the_default_cap_is_lowered_to_what_the_open_files_limit_leaves() {
        let roomy = ConnectionLimits::for_open_files(None, 1 << 20, TIMEOUT).expect("fits");
        assert_eq!(roomy.max_connections, DEFAULT_MAX_CONNECTIONS);
        let tight = ConnectionLimits::for_open_files(None, 1024, TIMEOUT).expect("fits");
        assert_eq!(tight.max_connections, 1024 - 128);
    }

    #[test]
    fn a_requested_cap_is_followed_or_refused_never_lowered() {
        let requested = NonZeroUsize::new(896);
        let exact = ConnectionLimits::for_open_files(requested, 1024, TIMEOUT).expect("fits");
        assert_eq!(exact.max_connections, 896);
        let over = ConnectionLimits::for_open_files(NonZeroUsize::new(897), 1024, TIMEOUT);
        assert_eq!(over, Err(ConnectionCapError::OverOpenFiles { requested: 897, open_files: 1024 }));
        let message = over.expect_err("refused").to_string();
        assert!(message.starts_with("MAX_CONNECTIONS=897 needs 1025 open files"), "{message}");
    }

    #[test]
    fn a_limit_that_leaves_no_room_is_refused() {
        assert_eq!(
            ConnectionLimits::for_open_files(None, 100, TIMEOUT),
            Err(ConnectionCapError::NoRoom { open_files: 100 })
        );
    }
}

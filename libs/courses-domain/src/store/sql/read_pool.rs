//! [`ReadPool`]: the pool of read connections, which never makes a read wait on r2d2's reconnect
//! backoff (issue 24, item 12).
//!
//! r2d2 opens connections in the background. When an open fails (no descriptor left under the
//! open-files limit, a PostgreSQL server restarting), it tries again after a delay that doubles
//! from 0.4 s up to half the pool's connection timeout (15 s here), and a checkout that finds no
//! idle connection waits for that next try, even once the cause is gone: the first read after
//! the open-files limit was reached waited 6 s in one probe. A [`ReadPool`] notices the pool's
//! failed opens (its error handler) and, while the last one failed, gives a read that finds no
//! idle connection a connection of its own: opened now, so it either serves the read at once or
//! fails at once with the real cause, and closed after the read. The pool's own retries refill
//! it as before; their first success ends this (its acquire event). No more of these connections
//! are open at once than the pool's size: a read beyond that waits, as it would for the pool, until
//! one of them closes or the pool serves it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use diesel::r2d2::event::AcquireEvent;
use diesel::r2d2::{
    Builder, ConnectionManager, CustomizeConnection, Error as ConnectionManagerError, HandleError, HandleEvent,
    ManageConnection, Pool, PooledConnection, R2D2Connection,
};

/// How long one wait on the pool lasts before [`ReadPool::get`] looks again whether the pool's
/// opens are failing: a read that arrives while the pool opens its first failing connection
/// notices it this soon, not after the pool's whole connection timeout.
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// A read's connection: the pool's, or one opened for this read while the pool cannot open any
/// (closed when dropped).
pub(crate) enum Checkout<C: R2D2Connection + 'static> {
    /// From the pool, back to it when dropped.
    Pooled(PooledConnection<ConnectionManager<C>>),
    /// Opened for this read because the pool's last open failed, with its place among the
    /// [`ReadPool`]'s own connections (given back when dropped).
    Own { connection: C, _place: OwnPlace },
}

impl<C: R2D2Connection + 'static> std::ops::Deref for Checkout<C> {
    type Target = C;

    fn deref(&self) -> &C {
        match self {
            Self::Pooled(connection) => connection,
            Self::Own { connection, .. } => connection,
        }
    }
}

impl<C: R2D2Connection + 'static> std::ops::DerefMut for Checkout<C> {
    fn deref_mut(&mut self) -> &mut C {
        match self {
            Self::Pooled(connection) => connection,
            Self::Own { connection, .. } => connection,
        }
    }
}

/// The pool of read connections of a SQL store (see the module's documentation).
pub(crate) struct ReadPool<C: R2D2Connection + 'static> {
    pool: Pool<ConnectionManager<C>>,
    opens: OpenFailures,
    manager: Arc<ConnectionManager<C>>,
    customizer: SharedCustomizer<C>,
    /// How many connections of the reads' own are open now (at most the pool's size).
    own: Arc<AtomicU32>,
}

impl<C: R2D2Connection + 'static> Clone for ReadPool<C> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            opens: self.opens.clone(),
            manager: Arc::clone(&self.manager),
            customizer: self.customizer.clone(),
            own: Arc::clone(&self.own),
        }
    }
}

impl<C: R2D2Connection + 'static> std::fmt::Debug for ReadPool<C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ReadPool")
            .field("pool", &self.pool)
            .field("opens_failing", &self.opens.failing())
            .finish_non_exhaustive()
    }
}

impl<C: R2D2Connection + 'static> ReadPool<C> {
    /// Builds the pool `builder` describes (size, idle connections, timeouts) of connections to
    /// `database_url`, with `customizer` run on each new connection, the pool's and the reads'
    /// own alike.
    ///
    /// # Errors
    /// r2d2's, when the pool's first connections cannot be opened within its timeout.
    pub(crate) fn build(
        builder: Builder<ConnectionManager<C>>,
        database_url: &str,
        customizer: impl CustomizeConnection<C, ConnectionManagerError>,
    ) -> Result<Self, diesel::r2d2::PoolError> {
        let customizer = SharedCustomizer(Arc::new(customizer));
        let opens = OpenFailures::default();
        let pool = builder
            .connection_customizer(Box::new(customizer.clone()))
            .error_handler(Box::new(opens.clone()))
            .event_handler(Box::new(opens.clone()))
            .build(ConnectionManager::new(database_url))?;
        Ok(Self {
            pool,
            opens,
            manager: Arc::new(ConnectionManager::new(database_url)),
            customizer,
            own: Arc::default(),
        })
    }

    /// The pool itself (its status, its size).
    pub(crate) fn pool(&self) -> &Pool<ConnectionManager<C>> {
        &self.pool
    }

    /// An idle connection of the pool, if one is free now; never waits, never opens one.
    pub(crate) fn try_get(&self) -> Option<Checkout<C>> {
        self.pool.try_get().map(Checkout::Pooled)
    }

    /// A connection for a read: an idle one of the pool; else, while the pool's last open failed,
    /// one opened now for this read, unless as many as the pool's size are open already; else one
    /// the pool frees or opens (or a place for one of its own), waited for up to the pool's
    /// connection timeout.
    ///
    /// # Errors
    /// The cause a connection of the read's own could not be opened with; or r2d2's timeout.
    pub(crate) fn get(&self) -> Result<Checkout<C>, Box<dyn std::error::Error + Send + Sync>> {
        let deadline = Instant::now() + self.pool.connection_timeout();
        loop {
            if self.opens.failing() {
                if let Some(connection) = self.try_get() {
                    return Ok(connection);
                }
                if let Some(place) = self.own_place() {
                    return self.open_own().map(|connection| Checkout::Own { connection, _place: place });
                }
            }
            let wait = LOOK_AGAIN.min(deadline.saturating_duration_since(Instant::now()));
            match self.pool.get_timeout(wait) {
                Ok(connection) => return Ok(Checkout::Pooled(connection)),
                Err(error) if Instant::now() >= deadline => return Err(error.into()),
                Err(_) => {}
            }
        }
    }

    /// A place for one more connection of the reads' own, if fewer than the pool's size are open.
    fn own_place(&self) -> Option<OwnPlace> {
        let bound = self.pool.max_size();
        self.own
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| (open < bound).then_some(open + 1))
            .ok()
            .map(|_| OwnPlace(Arc::clone(&self.own)))
    }

    /// Opens and sets up one connection, as the pool would, for one read.
    fn open_own(&self) -> Result<C, Box<dyn std::error::Error + Send + Sync>> {
        let mut connection = self.manager.connect()?;
        self.customizer.on_acquire(&mut connection)?;
        Ok(connection)
    }
}

/// One of the [`ReadPool`]'s places for a connection of a read's own, given back when dropped.
#[derive(Debug)]
pub(crate) struct OwnPlace(Arc<AtomicU32>);

impl Drop for OwnPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether the pool's last attempt to open a connection failed: set by its error handler, cleared
/// by its next connection opened.
#[derive(Debug, Clone, Default)]
struct OpenFailures(Arc<AtomicBool>);

impl OpenFailures {
    fn failing(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl HandleError<ConnectionManagerError> for OpenFailures {
    fn handle_error(&self, error: ConnectionManagerError) {
        self.0.store(true, Ordering::Release);
        tracing::warn!(
            %error,
            "the read pool cannot open a database connection; it retries with a growing delay, and meanwhile a read \
             that finds no idle connection opens one of its own"
        );
    }
}

impl HandleEvent for OpenFailures {
    fn handle_acquire(&self, _event: AcquireEvent) {
        if self.0.swap(false, Ordering::AcqRel) {
            tracing::info!("the read pool opens database connections again");
        }
    }
}

/// One connection customizer for the pool and for the reads' own connections.
struct SharedCustomizer<C>(Arc<dyn CustomizeConnection<C, ConnectionManagerError>>);

impl<C> Clone for SharedCustomizer<C> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<C> std::fmt::Debug for SharedCustomizer<C> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(formatter)
    }
}

impl<C: Send + 'static> CustomizeConnection<C, ConnectionManagerError> for SharedCustomizer<C> {
    fn on_acquire(&self, connection: &mut C) -> Result<(), ConnectionManagerError> {
        self.0.on_acquire(connection)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::mpsc;

    use diesel::r2d2::NopConnectionCustomizer;
    use diesel::sqlite::SqliteConnection;

    use super::*;

    /// Longer than any honest answer here, far shorter than the pool's 30 s timeout that the
    /// reads used to wait out: a liveness bound, not a measure of speed.
    const ANSWER_WITHIN: Duration = Duration::from_secs(10);

    fn read_pool(path: &Path) -> Arc<ReadPool<SqliteConnection>> {
        let builder = Pool::builder().max_size(4).min_idle(Some(1)).connection_timeout(Duration::from_secs(30));
        Arc::new(ReadPool::build(builder, &path.to_string_lossy(), NopConnectionCustomizer).expect("the pool opens"))
    }

    /// `pool.get()` on another thread, answered within [`ANSWER_WITHIN`] or the test fails.
    fn get_answered(pool: &Arc<ReadPool<SqliteConnection>>) -> Result<Checkout<SqliteConnection>, String> {
        let (sender, receiver) = mpsc::channel();
        let pool = Arc::clone(pool);
        std::thread::spawn(move || {
            let _ = sender.send(pool.get().map_err(|error| error.to_string()));
        });
        receiver.recv_timeout(ANSWER_WITHIN).expect("the checkout answered instead of waiting for the pool's retry")
    }

    /// The database path made unopenable for new connections (a folder stands where the file
    /// was; connections already open keep the file), and given back.
    struct Unopenable<'a> {
        path: &'a Path,
        away: std::path::PathBuf,
    }

    impl<'a> Unopenable<'a> {
        fn make(path: &'a Path) -> Self {
            let away = path.with_extension("away");
            std::fs::rename(path, &away).expect("move the file away");
            std::fs::create_dir(path).expect("a folder in its place");
            Self { path, away }
        }

        fn give_back(self) {
            std::fs::remove_dir(self.path).expect("remove the folder");
            std::fs::rename(&self.away, self.path).expect("the file back");
        }
    }

    fn poll_until(what: &str, condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !condition() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_read_while_the_pool_cannot_open_connections_fails_at_once_with_the_cause_then_is_served_as_soon_as_it_can() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("cursos.db");
        let pool = read_pool(&path);
        let unopenable = Unopenable::make(&path);
        // The pool's one idle connection: taking it makes the pool open another, which fails.
        let held = pool.get().expect("the idle connection");
        poll_until("a failed open of the pool", || pool.opens.failing());

        let refused = get_answered(&pool).err().expect("no connection can be opened");
        assert!(!refused.contains("timed out"), "the cause, not the pool's timeout: {refused}");

        unopenable.give_back();
        let served = get_answered(&pool).expect("the file can be opened again");
        assert!(
            matches!(served, Checkout::Own { .. }),
            "served by a connection of its own while the pool waits for its next retry"
        );
        drop((held, served));
    }

    /// A pool whose last open failed (its idle connection `held`, the next open refused), the
    /// cause then gone: until its next retry, it has no idle connection and believes it cannot open one.
    fn failed_then_openable(path: &Path) -> (Arc<ReadPool<SqliteConnection>>, Checkout<SqliteConnection>) {
        let pool = read_pool(path);
        let unopenable = Unopenable::make(path);
        let held = pool.get().expect("the idle connection");
        poll_until("a failed open of the pool", || pool.opens.failing());
        unopenable.give_back();
        (pool, held)
    }

    #[test]
    fn once_the_pool_opens_connections_again_reads_come_from_it() {
        let folder = tempfile::tempdir().expect("temp dir");
        let (pool, held) = failed_then_openable(&folder.path().join("cursos.db"));

        poll_until("the pool's retry succeeding", || !pool.opens.failing() && pool.pool().state().connections == 2);
        let served = get_answered(&pool).expect("a connection");
        assert!(matches!(served, Checkout::Pooled(_)), "from the pool again");
        drop((held, served));
    }

    #[test]
    fn no_more_reads_have_connections_of_their_own_at_once_than_the_pool_has_places() {
        let folder = tempfile::tempdir().expect("temp dir");
        let (pool, held) = failed_then_openable(&folder.path().join("cursos.db"));

        // While the pool waits for its next retry, reads open their own, up to the pool's size.
        let own: Vec<_> = (0..pool.pool().max_size()).map(|_| get_answered(&pool).expect("a connection")).collect();
        assert!(own.iter().all(|checkout| matches!(checkout, Checkout::Own { .. })), "each read opened its own");
        assert_eq!(pool.own.load(Ordering::Acquire), pool.pool().max_size());

        // One more read is served by the pool once its retry succeeds, never by a fifth of its own.
        let served = get_answered(&pool).expect("served once the pool opens connections again");
        assert!(matches!(served, Checkout::Pooled(_)), "the pool's connection, not one more of its own");
        drop(own);
        assert_eq!(pool.own.load(Ordering::Acquire), 0, "each own connection gave its place back");
        drop((held, served));
    }
}

//! Group commit for [`SqliteStore`](super::SqliteStore): every write of a process goes through one
//! writer thread, which commits the writes queued at that moment in one transaction, so one
//! fsync (`synchronous = FULL`) makes a whole batch durable (ADR 0020).
//!
//! - Each write runs in a savepoint of the batch's transaction: a write that fails with a
//!   constraint violation (a duplicate title, say) rolls back only itself, and the others of its
//!   batch still commit.
//! - Any other error of a write (SQLite's `SQLITE_FULL`, `SQLITE_IOERR`, `SQLITE_NOMEM`, a
//!   trigger's `RAISE(ROLLBACK)`: errors after which SQLite may have rolled back the whole
//!   transaction, and diesel's savepoint rollback fails) stops the batch: the writes after it do
//!   not run, the transaction is rolled back, and every write of the batch fails with nothing
//!   written. (Before issue 14 the writes after it ran outside any transaction, each committed on
//!   its own, while every caller was told the batch failed.)
//! - A write's outcome is delivered only after the batch's `COMMIT` returned: an acknowledged
//!   write survives a power cut. If `BEGIN IMMEDIATE` fails (another process held the lock past
//!   the busy timeout), nothing of the batch is written. If the `COMMIT` itself fails (an fsync
//!   error, say), SQLite cannot say whether the batch will be found after a restart: every write
//!   of the batch is told its outcome is unknown ([`BatchFailure::OutcomeUnknown`]).
//! - A panic in a batch (in a write, or in the writer while writing it) is caught: its writes are
//!   told the writer panicked, its transaction is rolled back (the connection is closed), and the
//!   writer carries on with a fresh connection. A panic that ends the writer thread itself (a
//!   bug in its loop) is not restarted: [`Writer::is_running`] turns false, `/ready` says so and
//!   writes are refused until the process restarts (ADR 0020, amended by issue 14).
//! - There is no waiting for a batch to fill: the writer takes whatever is queued when it is
//!   ready, so a lone write commits at once, and writes arriving during one fsync share the next.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use diesel::connection::{AnsiTransactionManager, Connection, SimpleConnection, TransactionManager};
use diesel::r2d2::{CustomizeConnection, R2D2Connection};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sqlite::SqliteConnection;

use crate::store::port::Unwritable;
use crate::store::sqlite::file::DatabaseFile;
use crate::store::sqlite::follow::{OwnWrites, last_seq};

/// The most writes committed by one transaction.
const MAX_BATCH: usize = 256;

/// Why a write sent to the writer did not happen, or may not have.
#[derive(Debug)]
pub(crate) enum WriteFailure {
    /// The write's own statements failed in a way that concerns it alone (a constraint
    /// violation: a unique violation is a duplicate title); its savepoint was rolled back and the
    /// rest of its batch committed.
    Statement(DieselError),
    /// Its batch failed as a whole.
    Batch(BatchFailure),
}

/// Why a whole batch failed: what every write of it is told.
#[derive(Debug, Clone)]
pub(crate) enum BatchFailure {
    /// The transaction failed before its `COMMIT` (`BEGIN IMMEDIATE` timed out, or a write of the
    /// batch failed with an error that may have ended the transaction): nothing of the batch was
    /// written.
    NotWritten(Arc<DieselError>),
    /// The `COMMIT` failed (or the writer panicked during it): the batch may or may not be durable.
    OutcomeUnknown(Arc<dyn std::error::Error + Send + Sync>),
    /// A write of the batch, or the writer while writing it, panicked: the transaction was rolled
    /// back, nothing of the batch was written.
    Panicked(Arc<WriterFault>),
    /// The writer could not open its connection: nothing was written.
    Connection(Arc<diesel::ConnectionError>),
    /// The writer thread had stopped before the write was sent: nothing was written.
    WriterStopped,
    /// The database file cannot take durable writes (deleted, replaced, read-only, disk full):
    /// nothing of the batch was acknowledged (ADR 0026).
    Unwritable(Unwritable),
}

/// A fault of the writer itself, as its callers are told of it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriterFault {
    /// A write of the batch, or the writer while writing it, panicked.
    #[error("the database writer panicked while writing this write's batch: {0}")]
    Panicked(String),
    /// The writer thread ended while the write was queued or being written.
    #[error("the database writer thread stopped while this write was queued or being written")]
    Stopped,
}

impl WriterFault {
    fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Self::Panicked(message)
    }
}

/// Counters of the writer, for tests and operators.
#[derive(Debug, Default)]
pub(crate) struct WriterStats {
    /// Writes sent and not yet taken into a batch.
    pub(crate) queued: AtomicUsize,
    /// Writes of the batch being written now.
    pub(crate) writing: AtomicUsize,
    /// Transactions committed.
    pub(crate) commits: AtomicU64,
    /// Set when the writer thread has ended (it panicked outside a batch, or every handle was
    /// dropped).
    pub(crate) stopped: AtomicBool,
}

/// The handle to a store's writer thread (cheap to clone). The thread stops when every handle
/// is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    jobs: mpsc::Sender<Box<dyn Job>>,
    stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread of the database at `path`. Its connection is opened lazily, on
    /// the first batch, with the same settings as the pool's.
    pub(crate) fn start(
        path: &Path,
        file: Arc<DatabaseFile>,
        own_writes: Arc<OwnWrites>,
        settings: impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> + 'static,
    ) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        let stats = Arc::new(WriterStats::default());
        let database = path.to_string_lossy().into_owned();
        let thread_stats = Arc::clone(&stats);
        std::thread::Builder::new().name("sqlite-writer".into()).spawn(move || {
            let _stopped = MarksStopped(&thread_stats);
            run(&database, &file, &own_writes, &settings, &queue, &thread_stats);
        })?;
        Ok(Self { jobs, stats })
    }

    /// Runs `work` in the next batch and waits until that batch's transaction is over.
    ///
    /// `work` must return every error of its statements (`?`): one it swallowed could leave it
    /// running outside the batch's transaction.
    pub(crate) fn write<T, F>(&self, work: F) -> Result<T, WriteFailure>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<T, DieselError> + Send + 'static,
    {
        let (reply, outcome) = mpsc::sync_channel(1);
        self.stats.queued.fetch_add(1, Ordering::SeqCst);
        if self.jobs.send(Box::new(Pending { work: Some(work), done: None, reply })).is_err() {
            self.stats.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(WriteFailure::Batch(BatchFailure::WriterStopped));
        }
        // No answer: the thread ended with this write queued or in its batch, maybe committed.
        outcome
            .recv()
            .unwrap_or_else(|_| Err(WriteFailure::Batch(BatchFailure::OutcomeUnknown(Arc::new(WriterFault::Stopped)))))
    }

    /// False once the writer thread has ended: no write can be made until the process restarts.
    pub(crate) fn is_running(&self) -> bool {
        !self.stats.stopped.load(Ordering::SeqCst)
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Ends the writer thread with a panic outside any batch, as a bug in its loop would, and
    /// waits until it has ended (tests of a dead writer).
    #[cfg(test)]
    pub(crate) fn kill_for_tests(&self) {
        self.stats.queued.fetch_add(1, Ordering::SeqCst);
        self.jobs.send(Box::new(PanicsOnFinish)).expect("the writer runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while self.is_running() {
            assert!(std::time::Instant::now() < deadline, "the writer thread did not end");
            std::thread::yield_now();
        }
    }
}

/// Marks the writer stopped when its thread ends, and says so if a panic ended it.
struct MarksStopped<'a>(&'a WriterStats);

impl Drop for MarksStopped<'_> {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::SeqCst);
        if std::thread::panicking() {
            tracing::error!(
                "the database writer thread panicked and stopped: no write can be made until the server restarts"
            );
        }
    }
}

/// A write waiting in the queue, its result type erased.
trait Job: Send {
    /// Runs the write in a savepoint of the open transaction. `Err`: the write failed with an
    /// error that may have ended the transaction (anything but a failure of the write alone): the
    /// batch must stop.
    fn run(&mut self, connection: &mut SqliteConnection) -> Result<(), DieselError>;
    /// Delivers the outcome once the transaction is over (`failure`: the batch failed).
    fn finish(self: Box<Self>, failure: Option<&BatchFailure>);
}

struct Pending<T, F> {
    work: Option<F>,
    done: Option<Result<T, DieselError>>,
    reply: mpsc::SyncSender<Result<T, WriteFailure>>,
}

impl<T, F> Job for Pending<T, F>
where
    T: Send,
    F: FnOnce(&mut SqliteConnection) -> Result<T, DieselError> + Send,
{
    fn run(&mut self, connection: &mut SqliteConnection) -> Result<(), DieselError> {
        let Some(work) = self.work.take() else { return Ok(()) };
        // Nested in the batch's transaction, diesel makes this a savepoint: a failure of this
        // write alone rolls back this write only.
        match connection.transaction(work) {
            Err(error) if !fails_alone(&error) => Err(error),
            outcome => {
                self.done = Some(outcome);
                Ok(())
            }
        }
    }

    fn finish(self: Box<Self>, failure: Option<&BatchFailure>) {
        let outcome = match (failure, self.done) {
            (Some(failure), _) => Err(WriteFailure::Batch(failure.clone())),
            (None, Some(Ok(value))) => Ok(value),
            (None, Some(Err(error))) => Err(WriteFailure::Statement(error)),
            // Every write of a committed batch ran; never reached.
            (None, None) => Err(WriteFailure::Batch(BatchFailure::OutcomeUnknown(Arc::new(WriterFault::Stopped)))),
        };
        // The caller may have stopped waiting (its thread ended): nothing to do then.
        let _ = self.reply.send(outcome);
    }
}

/// Whether a write's error concerns that write alone, its savepoint rolled back and the batch's
/// transaction intact: a constraint violation (SQLite rolls back the statement only), or an error
/// diesel made from rows a statement returned without failing. Any other error may come with
/// SQLite having rolled back the whole transaction (`SQLITE_FULL`, `SQLITE_IOERR`,
/// `SQLITE_NOMEM`, `RAISE(ROLLBACK)`; diesel then reports the failed savepoint rollback).
fn fails_alone(error: &DieselError) -> bool {
    match error {
        DieselError::DatabaseError(kind, _) => matches!(
            kind,
            DatabaseErrorKind::UniqueViolation
                | DatabaseErrorKind::ForeignKeyViolation
                | DatabaseErrorKind::NotNullViolation
                | DatabaseErrorKind::CheckViolation
        ),
        DieselError::NotFound | DieselError::DeserializationError(_) | DieselError::QueryBuilderError(_) => true,
        _ => false,
    }
}

/// Ends the writer thread when its outcome is delivered (tests of a dead writer).
#[cfg(test)]
struct PanicsOnFinish;

#[cfg(test)]
impl Job for PanicsOnFinish {
    fn run(&mut self, _connection: &mut SqliteConnection) -> Result<(), DieselError> {
        Ok(())
    }

    fn finish(self: Box<Self>, _failure: Option<&BatchFailure>) {
        panic!("the writer thread is ended by a test");
    }
}

/// The writer thread: one batch per transaction until every handle is dropped.
fn run(
    database: &str,
    file: &DatabaseFile,
    own_writes: &OwnWrites,
    settings: &dyn CustomizeConnection<SqliteConnection, diesel::r2d2::Error>,
    queue: &mpsc::Receiver<Box<dyn Job>>,
    stats: &WriterStats,
) {
    let mut slot: Option<SqliteConnection> = None;
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        stats.writing.store(batch.len(), Ordering::SeqCst);
        stats.queued.fetch_sub(batch.len(), Ordering::SeqCst);
        // Before writing: a file deleted, replaced or made read-only would swallow or refuse the
        // batch, and a disk without room (what `/ready` calls full) would fail its COMMIT, which
        // leaves the outcome unknown: refuse it now, nothing written.
        if let Err(reason) = file.has_room() {
            tracing::error!(writes = batch.len(), %reason, "a batch of writes refused: the database cannot take them");
            let failure = BatchFailure::Unwritable(reason);
            stats.writing.store(0, Ordering::SeqCst);
            batch.into_iter().for_each(|job| job.finish(Some(&failure)));
            slot = None;
            continue;
        }
        let connection = match slot.as_mut() {
            Some(connection) => connection,
            None => match open(database, settings) {
                Ok(fresh) => slot.insert(fresh),
                Err(error) => {
                    tracing::error!(%error, "the database writer cannot open its connection");
                    let failure = match file.has_room() {
                        Err(reason) => BatchFailure::Unwritable(reason),
                        Ok(()) => BatchFailure::Connection(Arc::new(error)),
                    };
                    stats.writing.store(0, Ordering::SeqCst);
                    batch.into_iter().for_each(|job| job.finish(Some(&failure)));
                    continue;
                }
            },
        };
        let mut commit_started = false;
        let written =
            catch_unwind(AssertUnwindSafe(|| write_batch(connection, &mut batch, own_writes, &mut commit_started)));
        let failure = match written {
            Ok(Ok(())) => {
                stats.commits.fetch_add(1, Ordering::Relaxed);
                // After the commit, before any acknowledgement: if the path no longer names the
                // file written to, the batch is in a file no restart will open. Not durable, so
                // not acknowledged.
                file.database_is_in_place()
                    .err()
                    .map(|reason| {
                        tracing::error!(writes = batch.len(), %reason, "a committed batch is not durable: none is acknowledged");
                        BatchFailure::Unwritable(reason)
                    })
                    // A `-wal` or `-shm` replaced during the batch: the frames are in the WAL a
                    // restart reads, unless another process's writes through its own `-shm` have
                    // overwritten them. Not acknowledged, and not called unwritten either.
                    .or_else(|| {
                        file.sidecars_are_in_place().err().map(|reason| {
                            tracing::error!(writes = batch.len(), %reason, "a committed batch may not be durable: none is acknowledged");
                            BatchFailure::OutcomeUnknown(Arc::new(reason))
                        })
                    })
            }
            Ok(Err(BatchEnd::NotWritten(error))) => {
                tracing::error!(%error, writes = batch.len(), "a batch of writes failed: none was written");
                Some(match file.has_room() {
                    Err(reason) => BatchFailure::Unwritable(reason),
                    Ok(()) => BatchFailure::NotWritten(Arc::new(error)),
                })
            }
            Ok(Err(BatchEnd::CommitFailed(error))) => {
                tracing::error!(
                    %error,
                    writes = batch.len(),
                    "the COMMIT of a batch of writes failed: whether it is durable is unknown"
                );
                if let Err(reason) = file.has_room() {
                    tracing::error!(%reason, "the database cannot take writes");
                }
                Some(BatchFailure::OutcomeUnknown(Arc::new(error)))
            }
            Err(payload) => {
                let fault = WriterFault::from_panic(payload.as_ref());
                if commit_started {
                    tracing::error!(%fault, writes = batch.len(), "the writer panicked during a COMMIT: whether the batch is durable is unknown");
                    Some(BatchFailure::OutcomeUnknown(Arc::new(fault)))
                } else {
                    tracing::error!(%fault, writes = batch.len(), "the writer panicked in a batch of writes: none was written");
                    Some(BatchFailure::Panicked(Arc::new(fault)))
                }
            }
        };
        stats.writing.store(0, Ordering::SeqCst);
        if failure.is_some() {
            // The connection's transaction state is unknown after a failed batch (a panic may have
            // left a savepoint open): roll back whatever SQLite still holds (an error here only
            // means nothing was open), then close it, which would roll back too; the next batch
            // opens a fresh one.
            if let Some(connection) = slot.as_mut() {
                let _ = connection.batch_execute("ROLLBACK");
            }
            slot = None;
        }
        batch.into_iter().for_each(|job| job.finish(failure.as_ref()));
    }
}

/// How [`write_batch`] failed.
enum BatchEnd {
    /// Before the `COMMIT`: the transaction was rolled back (or SQLite had already).
    NotWritten(DieselError),
    /// The `COMMIT` failed.
    CommitFailed(DieselError),
}

/// Runs `batch` in one immediate transaction, each write in a savepoint, and commits it; stops at
/// the first write whose error may have ended the transaction. `commit_started` is set just
/// before the `COMMIT`.
fn write_batch(
    connection: &mut SqliteConnection,
    batch: &mut [Box<dyn Job>],
    own_writes: &OwnWrites,
    commit_started: &mut bool,
) -> Result<(), BatchEnd> {
    AnsiTransactionManager::begin_transaction_sql(connection, "BEGIN IMMEDIATE").map_err(BatchEnd::NotWritten)?;
    let mut run_every_write = || -> Result<(i64, i64), DieselError> {
        // Under the file's write lock, every history row past `first` is this batch's (two
        // indexed lookups of the last row, a few microseconds).
        let first = last_seq(connection)?;
        for job in batch.iter_mut() {
            job.run(connection)?;
            // diesel's own view: a transaction must still be open (it resets its state when
            // SQLite reports it ended one).
            if !connection.is_broken() {
                return Err(DieselError::NotInTransaction);
            }
        }
        Ok((first, last_seq(connection)?))
    };
    let (first, last) = match run_every_write() {
        Ok(range) => range,
        Err(error) => {
            // Whatever SQLite still holds open, savepoints included (the caller also closes the
            // connection). Fails harmlessly when SQLite already rolled back.
            let _ = connection.batch_execute("ROLLBACK");
            return Err(BatchEnd::NotWritten(error));
        }
    };
    // Held across the COMMIT: a follower of this file (ADR 0030) never reads a row of this batch
    // before it is recorded as this process's own.
    let mut own = own_writes.lock();
    *commit_started = true;
    <AnsiTransactionManager as TransactionManager<SqliteConnection>>::commit_transaction(connection)
        .map_err(BatchEnd::CommitFailed)?;
    own.record(first, last);
    Ok(())
}

pub(crate) fn open(
    database: &str,
    settings: &dyn CustomizeConnection<SqliteConnection, diesel::r2d2::Error>,
) -> Result<SqliteConnection, diesel::ConnectionError> {
    let mut connection = SqliteConnection::establish(database)?;
    settings.on_acquire(&mut connection).map_err(|error| diesel::ConnectionError::BadConnection(error.to_string()))?;
    Ok(connection)
}

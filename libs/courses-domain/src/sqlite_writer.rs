//! Group commit for [`SqliteStore`](crate::SqliteStore): every write of a process goes through one
//! writer thread, which commits the writes queued at that moment in one transaction, so one
//! fsync (`synchronous = FULL`) makes a whole batch durable (ADR 0020).
//!
//! - Each write runs in a savepoint of the batch's transaction: a write that fails (a duplicate
//!   title, say) rolls back only itself, and the others of its batch still commit.
//! - A write's outcome is delivered only after the batch's `COMMIT` returned: an acknowledged
//!   write survives a power cut. If the transaction fails as a whole (the `COMMIT` itself, or
//!   `BEGIN IMMEDIATE` timing out behind another process), every write of the batch fails with a
//!   store error and none is written.
//! - There is no waiting for a batch to fill: the writer takes whatever is queued when it is
//!   ready, so a lone write commits at once, and writes arriving during one fsync share the next.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use diesel::connection::Connection;
use diesel::r2d2::CustomizeConnection;
use diesel::result::Error as DieselError;
use diesel::sqlite::SqliteConnection;

use crate::sqlite_file::DatabaseFile;
use crate::sqlite_follow::{OwnWrites, last_seq};
use crate::store::Unwritable;

/// The most writes committed by one transaction.
const MAX_BATCH: usize = 256;

/// Why a write sent to the writer did not happen.
#[derive(Debug)]
pub(crate) enum WriteFailure {
    /// The write's own statements failed; its savepoint was rolled back (the error says why:
    /// a unique violation is a duplicate title).
    Statement(DieselError),
    /// The batch's transaction failed as a whole: nothing of the batch was written.
    Batch(Arc<DieselError>),
    /// The writer could not open its connection.
    Connection(Arc<diesel::ConnectionError>),
    /// The writer thread is gone (it panicked): nothing was written.
    WriterGone,
    /// The database file cannot take durable writes (deleted, replaced, read-only, disk full):
    /// nothing of the batch was acknowledged (ADR 0026).
    Unwritable(Unwritable),
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
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || run(&database, &file, &own_writes, &settings, &queue, &thread_stats))?;
        Ok(Self { jobs, stats })
    }

    /// Runs `work` in the next batch and waits until that batch's transaction is over.
    pub(crate) fn write<T, F>(&self, work: F) -> Result<T, WriteFailure>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<T, DieselError> + Send + 'static,
    {
        let (reply, outcome) = mpsc::sync_channel(1);
        self.stats.queued.fetch_add(1, Ordering::SeqCst);
        if self.jobs.send(Box::new(Pending { work: Some(work), done: None, reply })).is_err() {
            self.stats.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(WriteFailure::WriterGone);
        }
        outcome.recv().unwrap_or(Err(WriteFailure::WriterGone))
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> &WriterStats {
        &self.stats
    }
}

/// A write waiting in the queue, its result type erased.
trait Job: Send {
    /// Runs the write in a savepoint of the open transaction.
    fn run(&mut self, connection: &mut SqliteConnection);
    /// Delivers the outcome once the transaction is over (`failure`: it was not committed).
    fn finish(self: Box<Self>, failure: Option<&WriteFailure>);
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
    fn run(&mut self, connection: &mut SqliteConnection) {
        if let Some(work) = self.work.take() {
            // Nested in the batch's transaction, diesel makes this a savepoint: an error rolls
            // back this write only.
            self.done = Some(connection.transaction(work));
        }
    }

    fn finish(self: Box<Self>, failure: Option<&WriteFailure>) {
        let outcome = match (failure, self.done) {
            (Some(WriteFailure::Batch(error)), _) => Err(WriteFailure::Batch(Arc::clone(error))),
            (Some(WriteFailure::Connection(error)), _) => Err(WriteFailure::Connection(Arc::clone(error))),
            (Some(WriteFailure::Unwritable(reason)), _) => Err(WriteFailure::Unwritable(*reason)),
            (Some(_), _) | (None, None) => Err(WriteFailure::WriterGone),
            (None, Some(Ok(value))) => Ok(value),
            (None, Some(Err(error))) => Err(WriteFailure::Statement(error)),
        };
        // The caller may have stopped waiting (its thread ended): nothing to do then.
        let _ = self.reply.send(outcome);
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
        // batch. (Disk space is not checked here: SQLite says when it runs out.)
        if let Err(reason) = file.is_writable() {
            tracing::error!(writes = batch.len(), %reason, "a batch of writes refused: the database cannot take them");
            let failure = WriteFailure::Unwritable(reason);
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
                        Err(reason) => WriteFailure::Unwritable(reason),
                        Ok(()) => WriteFailure::Connection(Arc::new(error)),
                    };
                    stats.writing.store(0, Ordering::SeqCst);
                    batch.into_iter().for_each(|job| job.finish(Some(&failure)));
                    continue;
                }
            },
        };
        let committed = catch_unwind(AssertUnwindSafe(|| {
            connection.immediate_transaction(|connection| {
                // Under the file's write lock, every history row past `first` is this batch's
                // (two indexed lookups of the last row, a few microseconds).
                let first = last_seq(connection).ok();
                batch.iter_mut().for_each(|job| job.run(connection));
                let range = first.zip(last_seq(connection).ok());
                // Held across the COMMIT that follows: a follower of this file (ADR 0030) never
                // reads a row of this batch before it is recorded as this process's own.
                Ok::<_, DieselError>((own_writes.lock(), range))
            })
        }));
        let committed = committed.map(|outcome| {
            outcome.map(|(mut own, range)| {
                if let Some((first, last)) = range {
                    own.record(first, last);
                }
            })
        });
        let failure = match committed {
            Ok(Ok(())) => {
                stats.commits.fetch_add(1, Ordering::Relaxed);
                // After the commit, before any acknowledgement: if the path no longer names the
                // file written to, the batch is in a file no restart will open. Not durable, so
                // not acknowledged.
                file.is_still_in_place().err().map(|reason| {
                    tracing::error!(writes = batch.len(), %reason, "a committed batch is not durable: none is acknowledged");
                    WriteFailure::Unwritable(reason)
                })
            }
            Ok(Err(error)) => {
                tracing::error!(%error, writes = batch.len(), "a batch of writes failed: none was written");
                Some(match file.has_room() {
                    Err(reason) => WriteFailure::Unwritable(reason),
                    Ok(()) => WriteFailure::Batch(Arc::new(error)),
                })
            }
            Err(_) => {
                tracing::error!(writes = batch.len(), "a batch of writes panicked: none was written");
                Some(WriteFailure::WriterGone)
            }
        };
        stats.writing.store(0, Ordering::SeqCst);
        batch.into_iter().for_each(|job| job.finish(failure.as_ref()));
        if failure.is_some() {
            // The connection's transaction state is unknown after a failed batch: the next batch
            // opens a fresh one.
            slot = None;
        }
    }
}

pub(crate) fn open(
    database: &str,
    settings: &dyn CustomizeConnection<SqliteConnection, diesel::r2d2::Error>,
) -> Result<SqliteConnection, diesel::ConnectionError> {
    let mut connection = SqliteConnection::establish(database)?;
    settings.on_acquire(&mut connection).map_err(|error| diesel::ConnectionError::BadConnection(error.to_string()))?;
    Ok(connection)
}

//! The persistence seam: [`CourseStore`], the narrow port every store implements.
//!
//! The rules never live here. A store keeps courses, enforces the one rule a database must
//! enforce to be safe under concurrency (no two active courses share a title comparison key),
//! and swaps a course for its next revision only if nobody changed it in between.

pub(crate) mod inline_read;

use std::error::Error as StdError;

use crate::rules::{
    CatalogName, Course, CourseId, CourseRevision, CreationFingerprint, HistoryEntry, IdempotencyKey, PageCursor,
    Provenance, TitleSearchKey,
};

/// A failure of the storage itself (I/O, a corrupt file, a pool timeout): never the caller's fault.
///
/// Its text is safe to log; the server never sends it to a client.
#[derive(Debug, thiserror::Error)]
#[error("course store failure: {context}")]
pub struct StoreError {
    context: &'static str,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl StoreError {
    /// A store failure while doing `context`, caused by `source`.
    pub fn new(context: &'static str, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self { context, source: Some(source.into()) }
    }

    /// A store failure with no underlying error (a row the store cannot read back, say).
    #[must_use]
    pub fn message(context: &'static str) -> Self {
        Self { context, source: None }
    }
}

/// A read of one course queued by [`CourseStore::find_later`]: its answer, awaited without holding
/// a thread.
#[derive(Debug)]
#[must_use = "a read is answered only to whoever awaits it"]
pub struct PendingRead(tokio::sync::oneshot::Receiver<Result<Option<Course>, StoreError>>);

impl PendingRead {
    pub(crate) fn new(answer: tokio::sync::oneshot::Receiver<Result<Option<Course>, StoreError>>) -> Self {
        Self(answer)
    }

    /// The course, or `None` when the catalog has no course with this id.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails, or the read's statement ended without an answer.
    pub async fn answer(self) -> Result<Option<Course>, StoreError> {
        self.0.await.unwrap_or_else(|_| Err(unanswered_read()))
    }
}

/// The error of a read whose statement ended (failed, panicked, or its reader stopped) without
/// answering it.
pub(crate) fn unanswered_read() -> StoreError {
    StoreError::message("cannot read a course: its statement ended without an answer")
}

/// Why a store cannot make a write durable now, and will not until an operator acts: retrying
/// does not help (ADR 0026). The store logs the cause (path, system error); this says only what
/// an operator must fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unwritable {
    /// The database file (or its `-wal` or `-shm`) was deleted, or another file put in its place,
    /// while the store had it open: what it would write would not be in the file a restart opens,
    /// or would corrupt it.
    #[error("the database file or its -wal or -shm was deleted or replaced while the server had it open")]
    FileReplaced,
    /// The database file, its journal or its folder cannot be written (read-only, immutable, or a
    /// read-only file system).
    #[error("the database file or its folder cannot be written")]
    ReadOnly,
    /// The file system holding the database has no room left.
    #[error("the disk holding the database is full")]
    DiskFull,
    /// The store's writer stopped after an internal failure (its thread panicked outside any
    /// batch) and is not restarted: the process must be (ADR 0020).
    #[error("the database writer stopped after an internal failure; the server must be restarted")]
    WriterStopped,
}

impl Unwritable {
    /// A short, stable name for operators' probes and metrics.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileReplaced => "database_file_replaced",
            Self::ReadOnly => "database_read_only",
            Self::DiskFull => "disk_full",
            Self::WriterStopped => "database_writer_stopped",
        }
    }
}

/// Why a store did not write a course.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Another active course already has this title's comparison key.
    #[error("an active course already has this title")]
    DuplicateTitle,
    /// The store cannot make writes durable now: nothing was written (ADR 0026).
    #[error(transparent)]
    Unwritable(Unwritable),
    /// The storage failed: nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The storage failed while making the write durable (its `COMMIT` failed: an fsync error,
    /// say): the write may or may not be stored, now or after a restart. A retry must not assume
    /// either (a creation retried with the same idempotency key is safe).
    #[error("the outcome of the write is unknown")]
    OutcomeUnknown(#[source] StoreError),
}

/// The outcome of [`CourseStore::replace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replaced {
    /// The stored course was at the expected version and now holds the new revision.
    Done,
    /// The stored course is no longer at the expected version (or is gone): nothing was written.
    Stale,
}

/// The outcome of [`CourseStore::insert_idempotent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotentInsert {
    /// The key was new: the course was stored, with the key, in one transaction.
    Inserted,
    /// The key was used before with the same fingerprint: nothing was written; this is the course
    /// it created (as it is now).
    Replayed(Course),
    /// The key was used before with another fingerprint: nothing was written.
    KeyReused,
}

/// What [`CourseStore::import_batch`] did (or, in a dry run, would do) with one course of a batch
/// (ADR 0040).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportOutcome {
    /// The course was stored, with its history entry (a dry run: it would be).
    Inserted,
    /// A course with this id is already in the catalog (imported before, or the same course):
    /// nothing was written. What makes an import idempotent.
    AlreadyPresent,
    /// Another active course of the catalog already has this title (the same comparison key),
    /// or an earlier course of the same batch took it: nothing was written.
    TitleTaken,
    /// The id belongs to a course of another catalog of this database: nothing was written.
    IdTaken,
}

/// An import into a database that holds no course at all, written as ONE transaction with the
/// indexes built once at the end ([`CourseStore::begin_bulk_import`], ADR 0057). The database's
/// write lock is held from [`begin_bulk_import`](CourseStore::begin_bulk_import) until
/// [`commit`](Self::commit); dropping it without a commit rolls everything back: nothing of the
/// import is written.
pub trait BulkImport {
    /// Stores `courses`, each with one history entry, in file order. The store looks nothing up
    /// (the database was empty): a row that repeats an earlier one's id or active title fails the
    /// whole import (the id when it is stored, the title when its index is built). An import that
    /// checked its file first never gives it one; a first try (ADR 0059) relies on this to find
    /// them.
    ///
    /// # Errors
    /// [`WriteError`]: the import can only be dropped (rolled back).
    fn add(&mut self, courses: &[Course]) -> Result<(), WriteError>;

    /// Builds the indexes left out while the rows went in and commits: every course at once, or
    /// (on an error) none.
    ///
    /// # Errors
    /// [`WriteError`]: nothing was written ([`WriteError::DuplicateTitle`]: two active courses of
    /// the import share a title), unless [`WriteError::OutcomeUnknown`].
    fn commit(self: Box<Self>) -> Result<(), WriteError>;
}

/// Where [`CourseStore::export`] sends the catalog, one course at a time, in creation order.
/// Returning [`ControlFlow::Break`](std::ops::ControlFlow::Break) stops the export (the sink keeps
/// its own reason: an output error, an interrupt).
pub trait ExportSink {
    /// How many courses (active and archived) the snapshot holds; called once, before any course.
    fn begin(&mut self, total: u64) -> std::ops::ControlFlow<()>;
    /// One course, with its history oldest first (empty unless the history was asked for).
    fn course(&mut self, course: &Course, history: &[HistoryEntry]) -> std::ops::ControlFlow<()>;
    /// A page of courses was sent: a point where the sink may stop (check an interrupt, say).
    fn page_done(&mut self) -> std::ops::ControlFlow<()> {
        std::ops::ControlFlow::Continue(())
    }
}

/// How [`CourseStore::export`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportEnd {
    /// Every course of the snapshot was sent (how many).
    Finished(u64),
    /// The sink stopped it after this many courses.
    Stopped(u64),
}

/// How busy a store's connection pool is, for operators' metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStatus {
    /// The most connections the pool opens.
    pub max_size: u32,
    /// Connections open now (idle or in use).
    pub connections: u32,
    /// Open connections waiting for work.
    pub idle: u32,
}

/// Where courses are kept. Implementations are blocking; the `Catalog` calls
/// them off the async runtime's worker threads.
///
/// **Contract (ADR 0035):** every operation takes the [`CatalogName`] it is in, and sees and
/// changes only that catalog's courses, history, idempotency keys and count: a course of another
/// catalog is as absent as one that does not exist; title uniqueness holds within one catalog.
///
/// **Contract:** every error of a write means nothing of it was written, except
/// [`WriteError::OutcomeUnknown`], which says that is unknown (SQLite: a failed `COMMIT`;
/// PostgreSQL: a `COMMIT` whose connection was lost before it was answered).
/// `insert` and `replace` fail with [`WriteError::DuplicateTitle`], writing nothing,
/// when the course is active and another active course has the same
/// [`comparison_key`](crate::rules::CourseTitle::comparison_key), also when two writers race.
/// Every write also appends one [`HistoryEntry`] with its [`Provenance`], in the same
/// transaction: a change is never stored without its history, nor history without its change.
pub trait CourseStore: Send + Sync + std::fmt::Debug + 'static {
    /// Stores a new course.
    ///
    /// # Errors
    /// [`WriteError::DuplicateTitle`], or [`WriteError::Store`].
    fn insert(&self, catalog: &CatalogName, course: &Course, provenance: &Provenance) -> Result<(), WriteError>;

    /// Stores a new course under an idempotency key, unless the key was used before with this
    /// `fingerprint` (a replay) or another (a reuse). Key and course are written in one transaction.
    ///
    /// # Errors
    /// [`WriteError::DuplicateTitle`] (the key stays unused), or [`WriteError::Store`].
    fn insert_idempotent(
        &self,
        catalog: &CatalogName,
        course: &Course,
        key: &IdempotencyKey,
        fingerprint: &CreationFingerprint,
        provenance: &Provenance,
    ) -> Result<IdempotentInsert, WriteError>;

    /// Writes `revision`'s new course, only if the stored course is still at the revision's
    /// [`expected_version`](CourseRevision::expected_version).
    ///
    /// # Errors
    /// [`WriteError::DuplicateTitle`], or [`WriteError::Store`].
    fn replace(
        &self,
        catalog: &CatalogName,
        revision: &CourseRevision,
        provenance: &Provenance,
    ) -> Result<Replaced, WriteError>;

    /// The course with this id, archived or not.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    fn find(&self, catalog: &CatalogName, id: CourseId) -> Result<Option<Course>, StoreError>;

    /// Queues a read of the course with this id, archived or not, that the store answers on a
    /// thread of its own, and returns at once: `Some` for a store whose reads of one course are
    /// answered together (PostgreSQL, ADR 0054 and 0061), whose caller awaits the answer without
    /// holding a thread; `None` (the default) for the others, read with [`find`](Self::find).
    fn find_later(&self, catalog: &CatalogName, id: CourseId) -> Option<PendingRead> {
        let _ = (catalog, id);
        None
    }

    /// Up to `limit` active courses after `after` (from the start when `None`), in creation
    /// order, each with the cursor that continues just after it.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    fn active_page(
        &self,
        catalog: &CatalogName,
        after: Option<PageCursor>,
        limit: usize,
    ) -> Result<Vec<(Course, PageCursor)>, StoreError>;

    /// Up to `limit` history entries of `course`, newest first, older than `before` (from the
    /// newest when `None`), each with the cursor that continues just after it.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    fn history_page(
        &self,
        catalog: &CatalogName,
        course: &Course,
        before: Option<PageCursor>,
        limit: usize,
    ) -> Result<Vec<(HistoryEntry, PageCursor)>, StoreError>;

    /// How many courses are active. Must not grow with the catalog's size (a maintained counter).
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    fn count_active(&self, catalog: &CatalogName) -> Result<u64, StoreError>;

    /// Up to `limit` active courses matching `key`, best matches first: id starting with `key`,
    /// then title key starting with `key`, then (for keys of three characters or more) title key
    /// containing `key`. Each kind is served by an index.
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    fn search_active(
        &self,
        catalog: &CatalogName,
        key: &TitleSearchKey,
        limit: usize,
    ) -> Result<Vec<Course>, StoreError>;

    /// Stores a batch of courses, each with one history entry carrying `provenance`, in ONE
    /// transaction (ADR 0040): the bulk write of `import`. A course whose id is already in the
    /// catalog is left as it is ([`ImportOutcome::AlreadyPresent`]); an active course whose title
    /// another active course of the catalog holds is not written ([`ImportOutcome::TitleTaken`]).
    /// With `dry_run`, reads only and tells what it would do. Announced like any write: to other
    /// processes (PostgreSQL's notices, SQLite's history), one change per course stored.
    ///
    /// # Errors
    /// [`WriteError`], nothing written; [`WriteError::DuplicateTitle`] only when a concurrent
    /// writer took a title between the batch's check and its insert (a retry of the batch sees it).
    fn import_batch(
        &self,
        catalog: &CatalogName,
        courses: &[Course],
        provenance: &Provenance,
        dry_run: bool,
    ) -> Result<Vec<ImportOutcome>, WriteError>;

    /// Starts a [`BulkImport`] into `catalog`, with `provenance` on every history entry, when this
    /// store has one and its database holds no course of any catalog (checked under the write lock,
    /// which the import then keeps); `None` otherwise (PostgreSQL; a database with courses), and an
    /// import goes batch by batch ([`import_batch`](Self::import_batch)).
    ///
    /// # Errors
    /// [`WriteError`] when the database cannot be opened, locked or read.
    fn begin_bulk_import(
        &self,
        catalog: &CatalogName,
        provenance: &Provenance,
    ) -> Result<Option<Box<dyn BulkImport + '_>>, WriteError> {
        let _ = (catalog, provenance);
        Ok(None)
    }

    /// Sends the whole catalog, active and archived courses in creation order (and each course's
    /// history when `with_history`), to `sink`, from ONE read transaction (SQLite: one WAL
    /// snapshot; PostgreSQL: `REPEATABLE READ READ ONLY`), read in keyset pages of `page_size`:
    /// consistent at one point in time while writers go on, in bounded memory (ADR 0040).
    ///
    /// # Errors
    /// [`StoreError`] when the storage fails.
    fn export(
        &self,
        catalog: &CatalogName,
        with_history: bool,
        page_size: usize,
        sink: &mut dyn ExportSink,
    ) -> Result<ExportEnd, StoreError>;

    /// Whether the `Catalog` may run this store's bounded reads (a course, a
    /// page, a history page, the count) on the async runtime's thread instead of the blocking pool.
    ///
    /// True only for a store whose reads are local and short (an indexed read of a local file: tens
    /// of microseconds, less than the two thread wake-ups of the hop to the blocking pool) and
    /// never wait for a writer. The default, false, suits any store behind a network.
    fn reads_inline(&self) -> bool {
        false
    }

    /// The database's name as OpenTelemetry's `db.system.name` spells it (`sqlite`, `postgresql`),
    /// for the store's spans (issue 27); `other_sql` by default.
    fn system_name(&self) -> &'static str {
        "other_sql"
    }

    /// Whether a write made now could be made durable: `Err` names what an operator must fix
    /// (ADR 0026). Blocking, and cheap (a few system calls, no write). The default, for a store
    /// behind a network that reports these failures itself, is always `Ok`.
    ///
    /// # Errors
    /// [`Unwritable`] naming the reason.
    fn writable(&self) -> Result<(), Unwritable> {
        Ok(())
    }

    /// How busy the connection pool is (cheap; never blocks on the database). A store without a
    /// pool reports zeros.
    fn pool_status(&self) -> PoolStatus {
        PoolStatus::default()
    }

    /// Starts telling `on_change` of the changes other processes commit to the same database
    /// (another replica on PostgreSQL, another process on the same SQLite file), in commit order,
    /// never of this store's own writes (its `Catalog`'s observers hear those).
    /// Runs until the returned [`ChangeFollower`] is dropped. The default, for a store no other
    /// process can share, follows nothing (`None`).
    fn follow_changes(&self, on_change: Box<dyn Fn(RemoteChange) + Send>) -> Option<ChangeFollower> {
        drop(on_change);
        None
    }
}

/// A change another process committed: which course, and whether the listing changed (a course
/// was created or archived, or a title changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteChange {
    /// The catalog the course is in: only its listeners hear of the change (ADR 0035).
    pub catalog: CatalogName,
    /// The course that changed.
    pub course_id: CourseId,
    /// True when the set of active courses or a title changed.
    pub changes_listing: bool,
}

/// Stops a store's [`follow_changes`](CourseStore::follow_changes) thread when dropped (within
/// one poll interval).
#[derive(Debug)]
pub struct ChangeFollower {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl ChangeFollower {
    /// A follower whose thread stops once `stop` is set.
    pub(crate) fn new(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self { stop }
    }
}

impl Drop for ChangeFollower {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The phases a long store operation (a migration, a backup) reports to its [`MigrationProgress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPhase {
    /// Rows read from the source and written to the target.
    Copy,
    /// Rows read back from the target to verify them.
    Verify,
}

/// What a migration or a backup tells its caller while it runs, and how the caller stops it.
pub trait MigrationProgress {
    /// A phase begins, with the number of rows it will go through.
    fn phase(&self, phase: MigrationPhase, total_rows: u64);
    /// `rows` more rows went through.
    fn advance(&self, rows: u64);
    /// Checked between batches: true stops the migration, leaving the target unchanged.
    fn stop_requested(&self) -> bool;
}

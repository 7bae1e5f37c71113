//! [`SqliteStore`]: the default [`CourseStore`](crate::store::port::CourseStore), one SQLite file,
//! through diesel.
//!
//! SQLite is compiled into the binary (`libsqlite3-sys/bundled`). The file is opened in WAL
//! mode with a busy timeout and `synchronous = FULL`, and the embedded migrations run on open.
//! Reads use a pool of connections (never waited for on the async runtime:
//! [`inline_read`]); writes go through one writer thread that
//! commits them in batches, one fsync per batch ([`writer`], group commit: what a failed batch
//! means is there).
//!
//! The schema, the rows and the statements are shared with PostgreSQL ([`crate::store::sql`], ADR
//! 0033); this file holds what only SQLite does: opening and migrating the file, how a read gets a
//! connection and how a write reaches the writer thread, and the trigram search.

pub(crate) mod backup;
pub(crate) mod bulk;
#[cfg(test)]
mod failure_tests;
mod file;
pub(crate) mod follow;
mod read_cache;
pub(crate) mod schema;
mod writer;

use std::path::{Path, PathBuf};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::rules::{CatalogName, Course, CourseId, Provenance};
use crate::store::port::{BulkImport, ChangeFollower, RemoteChange, StoreError, Unwritable, WriteError, inline_read};
use crate::store::sql::read_pool::{Checkout, ReadPool};
use crate::store::sql::{
    self, ChangeSummary, ContainingSearch, CourseRow, IMPORT_PAGE_CACHE, ImportBatchSetup, SharedRead, SharedWrite,
    SqlBackend, SqlConnection, WriteResult, Written, covering_trigrams, write_error,
};
use crate::store::sqlite::bulk::SqliteBulkImport;
use crate::store::sqlite::file::DatabaseFile;
use crate::store::sqlite::follow::OwnWrites;
use crate::store::sqlite::read_cache::ReadCache;
use crate::store::sqlite::writer::{BatchFailure, WriteFailure, Writer};

pub(crate) const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// How long a writer waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections kept by the pool, for reads only (writes have the writer's own connection). Reads
/// run inline on the async workers when a connection is free at once, else on the blocking pool,
/// which waits for one (ADR 0021).
const POOL_SIZE: u32 = 8;

/// Why [`SqliteStore::open`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OpenStoreError {
    /// The database file's folder could not be created.
    #[error("cannot create the database folder {path}")]
    CreateFolder {
        /// The folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The database file could not be opened or configured.
    #[error("cannot open the database {path}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The embedded migrations could not be applied.
    #[error("cannot migrate the database {path}")]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The file's schema has what could change writes behind the store's back (an extra trigger),
    /// or lacks or alters an object of this version's migrations (issue 24, item 3).
    #[error(
        "the database {path} does not have this version's schema: {differences}; no server starts on it \
         (restore a backup, or remove what was added: docs/operations.md)"
    )]
    Schema {
        /// The database file.
        path: PathBuf,
        /// What differs, in one line.
        differences: String,
    },
}

/// The SQLite course store: a pool of connections to one database file.
#[derive(Clone)]
pub struct SqliteStore {
    /// Reads: any pooled connection (WAL readers never wait for the writer).
    pool: ReadPool<SqliteConnection>,
    /// Writes: the one writer thread of this store, which commits them in batches.
    writer: Writer,
    /// The file opened, to tell whether it can still take durable writes (ADR 0026).
    file: std::sync::Arc<DatabaseFile>,
    /// The history rows the writer committed, for a follower to skip (ADR 0030).
    own_writes: std::sync::Arc<OwnWrites>,
    /// How the writer's and the follower's connections are set up.
    settings: ConnectionSettings,
    /// The courses `find` read last, while the file is unchanged (none: `-shm` unreadable).
    read_cache: Option<std::sync::Arc<ReadCache>>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

/// The settings of a store opened with the default busy timeout (tests opening connections).
#[cfg(test)]
pub(crate) fn test_settings() -> impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> {
    ConnectionSettings { busy_timeout: BUSY_TIMEOUT }
}

#[derive(Debug, Clone, Copy)]
struct ConnectionSettings {
    busy_timeout: Duration,
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for ConnectionSettings {
    fn on_acquire(&self, connection: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        // busy_timeout first: switching to WAL may itself wait for another process's lock.
        connection
            .batch_execute(&format!(
                "PRAGMA busy_timeout = {};
                 PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA foreign_keys = ON;",
                self.busy_timeout.as_millis()
            ))
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// Opens and configures one connection to `path`, as the pool would, but once: its error is the
/// cause SQLite gave (not a pool timeout).
fn open_first_connection(
    path: &Path,
    busy_timeout: Duration,
) -> Result<SqliteConnection, Box<dyn std::error::Error + Send + Sync>> {
    let mut connection = SqliteConnection::establish(&path.to_string_lossy())?;
    ConnectionSettings { busy_timeout }.on_acquire(&mut connection).map_err(|error| match error {
        diesel::r2d2::Error::QueryError(error) => Box::new(error) as Box<dyn std::error::Error + Send + Sync>,
        diesel::r2d2::Error::ConnectionError(error) => Box::new(error),
    })?;
    Ok(connection)
}

impl SqliteStore {
    /// Opens (creating it and its folder if needed) the database file at `path` and applies the
    /// embedded migrations. Several processes may open the same file at once.
    ///
    /// # Errors
    /// [`OpenStoreError`] when the folder, the file or the migrations fail.
    pub fn open(path: &Path) -> Result<Self, OpenStoreError> {
        Self::open_with_busy_timeout(path, BUSY_TIMEOUT)
    }

    /// [`open`](Self::open), with another wait for other processes' write locks (tests of what
    /// happens when the wait runs out).
    pub(crate) fn open_with_busy_timeout(path: &Path, busy_timeout: Duration) -> Result<Self, OpenStoreError> {
        if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|source| OpenStoreError::CreateFolder { path: folder.to_owned(), source })?;
        }
        let open_error =
            |source: Box<dyn std::error::Error + Send + Sync>| OpenStoreError::Open { path: path.to_owned(), source };
        // One connection first, directly: a file that cannot be opened (a folder, no permission)
        // fails here at once with SQLite's own cause. Through the pool, r2d2 would retry it for its
        // whole connection timeout and report only that it timed out.
        let first = open_first_connection(path, busy_timeout).map_err(open_error)?;
        let builder = Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(30))
            // A local file's connection does not go stale: skip r2d2's `SELECT 1` on every checkout
            // (a statement parse per request; see bench/RESULTS.md). A broken one still errors.
            .test_on_check_out(false)
            // Nor does it need recycling: r2d2 would otherwise close every connection idle for
            // 10 min or older than 30 min, leaving moments with none open. The store keeps one
            // open for its life: its SHARED lock keeps the `-shm` the read cache watches from
            // being deleted under it (ADR 0034).
            .idle_timeout(None)
            .max_lifetime(None);
        let pool = ReadPool::build(builder, &path.to_string_lossy(), ConnectionSettings { busy_timeout })
            .map_err(|error| open_error(error.into()))?;
        drop(first);
        let mut connection = pool.get().map_err(open_error)?;
        // One process migrates at a time: the immediate transaction takes the write lock first.
        connection
            .immediate_transaction(|connection| {
                connection.run_pending_migrations(MIGRATIONS).map(|_| ()).map_err(|error| {
                    // Carry the migration error out of diesel's transaction closure.
                    DieselError::QueryBuilderError(error)
                })?;
                sql::bring_title_keys_to_rule(&mut SqlConnection::Sqlite(connection))
            })
            .map_err(|error| OpenStoreError::Migrate { path: path.to_owned(), source: error.into() })?;
        // What the migrations do not make: a trigger (or an object of ours missing or altered)
        // refuses the start, an operator's own table, index or view is only named (ADR 0041).
        let differences = schema::schema_differences(&mut connection)
            .map_err(|error| OpenStoreError::Migrate { path: path.to_owned(), source: error.into() })?;
        let (harmful, harmless): (Vec<_>, Vec<_>) =
            differences.into_iter().partition(schema::SchemaDifference::can_change_writes);
        if !harmful.is_empty() {
            return Err(OpenStoreError::Schema { path: path.to_owned(), differences: schema::describe(&harmful) });
        }
        if !harmless.is_empty() {
            tracing::warn!(
                path = %path.display(),
                differences = %schema::describe(&harmless),
                "the database has objects this version's migrations do not make; they cannot change what is written, so the store opens"
            );
        }
        drop(connection);
        let file = std::sync::Arc::new(DatabaseFile::opened(path).map_err(|error| open_error(error.into()))?);
        let own_writes = std::sync::Arc::default();
        let settings = ConnectionSettings { busy_timeout };
        let writer = Writer::start(path, std::sync::Arc::clone(&file), std::sync::Arc::clone(&own_writes), settings)
            .map_err(|error| open_error(error.into()))?;
        // After the writer: the file is in WAL mode and this process holds its `-shm` open.
        let read_cache = match ReadCache::open(path) {
            Ok(cache) => Some(std::sync::Arc::new(cache)),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "no read cache: the WAL index cannot be read");
                None
            }
        };
        tracing::debug!(path = %path.display(), "course store opened");
        Ok(Self { pool, writer, file, own_writes, settings, read_cache, path: path.to_owned() })
    }

    /// Starts following the changes other processes commit to this file (another app, another
    /// backend): a thread with its own connection asks SQLite every [`SQLITE_FOLLOW_POLL`]
    /// whether another connection committed (`PRAGMA data_version`), and if so reads the new
    /// history rows and calls `on_change` once per course changed, in commit order. Changes made
    /// through this store are not reported (its process already announced them). After an error
    /// it reopens its connection every second, with a warning. Stops when the returned
    /// [`ChangeFollower`] is dropped (ADR 0030).
    ///
    /// [`SQLITE_FOLLOW_POLL`]: crate::store::sqlite::follow::SQLITE_FOLLOW_POLL
    #[must_use]
    pub fn follow_changes(&self, on_change: impl Fn(RemoteChange) + Send + 'static) -> ChangeFollower {
        let settings = self.settings;
        crate::store::sqlite::follow::start(
            self.path.to_string_lossy().into_owned(),
            move |database| crate::store::sqlite::writer::open(database, &settings),
            &self.own_writes,
            Box::new(on_change),
        )
    }

    /// The record of this store's own history rows (tests of the follower).
    #[cfg(test)]
    pub(crate) fn own_writes_for_tests(&self) -> std::sync::Arc<OwnWrites> {
        std::sync::Arc::clone(&self.own_writes)
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A pooled connection for a read. On the blocking pool it waits for one (up to the pool's
    /// timeout; while the pool cannot open connections, one is opened for the read: [`ReadPool`]);
    /// in a read the catalog runs on the async worker ([`inline_read`]) it never waits:
    /// with none free now, the read fails and the catalog runs it again on the
    /// blocking pool (ADR 0021).
    fn connection(&self) -> Result<Checkout<SqliteConnection>, StoreError> {
        if inline_read::may_wait() {
            return self.pool.get().map_err(|error| StoreError::new("no database connection available", error));
        }
        self.pool.try_get().ok_or_else(|| {
            inline_read::no_connection_free();
            StoreError::message("no database connection free for a read on the async runtime")
        })
    }

    /// Runs `work` (one write) in the writer's next batch; its outcome once that batch committed.
    fn write<T, F>(&self, context: &'static str, work: F) -> Result<T, WriteError>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<T, DieselError> + Send + 'static,
    {
        self.writer.write(work).map_err(|failure| match failure {
            // A statement that failed for lack of room or of write permission fails the same way
            // at every retry: say so.
            WriteFailure::Statement(error @ DieselError::DatabaseError(kind, _))
                if kind != DatabaseErrorKind::UniqueViolation =>
            {
                match self.file.has_room() {
                    Err(reason) => WriteError::Unwritable(reason),
                    Ok(()) => write_error(context, error),
                }
            }
            WriteFailure::Statement(error) => write_error(context, error),
            WriteFailure::Batch(BatchFailure::Unwritable(reason)) => WriteError::Unwritable(reason),
            WriteFailure::Batch(BatchFailure::NotWritten(error)) => WriteError::Store(StoreError::new(context, error)),
            WriteFailure::Batch(BatchFailure::OutcomeUnknown(error)) => {
                WriteError::OutcomeUnknown(StoreError::new(context, error))
            }
            WriteFailure::Batch(BatchFailure::Panicked(fault)) => WriteError::Store(StoreError::new(context, fault)),
            WriteFailure::Batch(BatchFailure::Connection(error)) => WriteError::Store(StoreError::new(context, error)),
            WriteFailure::Batch(BatchFailure::WriterStopped) => WriteError::Unwritable(Unwritable::WriterStopped),
        })
    }

    /// Runs `work` as one write through the writer, as `insert` and `replace` do (tests of what
    /// happens to the file during a batch).
    #[cfg(test)]
    pub(crate) fn write_with<T, F>(&self, work: F) -> Result<T, WriteError>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqliteConnection) -> Result<T, DieselError> + Send + 'static,
    {
        self.write("a test write", work)
    }

    /// Takes every connection of the read pool, waiting for each (tests of a saturated pool).
    #[cfg(test)]
    pub(crate) fn take_every_read_connection(&self) -> Vec<Checkout<SqliteConnection>> {
        (0..POOL_SIZE).map(|_| self.pool.get().expect("a pooled connection")).collect()
    }

    /// Ends the writer thread as a panic outside any batch would (tests of a dead writer).
    #[cfg(test)]
    pub(crate) fn kill_writer_for_tests(&self) {
        self.writer.kill_for_tests();
    }

    /// Reads `find` served from its cache so far.
    #[cfg(test)]
    pub(crate) fn read_cache_hits(&self) -> u64 {
        self.read_cache.as_ref().map_or(0, |cache| cache.hits())
    }

    /// Transactions the writer committed so far (each holds one or more writes).
    #[cfg(test)]
    pub(crate) fn commits(&self) -> u64 {
        self.writer.stats().commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes waiting for the writer, and writes of the batch it is writing.
    #[cfg(test)]
    pub(crate) fn pending_writes(&self) -> (usize, usize) {
        let stats = self.writer.stats();
        (
            stats.queued.load(std::sync::atomic::Ordering::SeqCst),
            stats.writing.load(std::sync::atomic::Ordering::SeqCst),
        )
    }
}

/// SQLite's part of the shared store ([`crate::store::sql`], ADR 0033).
impl SqlBackend for SqliteStore {
    const SYSTEM_NAME: &'static str = "sqlite";

    type Connection = SqliteConnection;

    fn pool(&self) -> &Pool<ConnectionManager<SqliteConnection>> {
        self.pool.pool()
    }

    fn run_read<T>(&self, read: impl SharedRead<T>) -> Result<T, StoreError> {
        read(&mut SqlConnection::Sqlite(&mut *self.connection()?))
    }

    /// From the read cache while the WAL index says nothing was committed since the course was
    /// read, by any process (`read_cache.rs`, ADR 0034): never a stale course.
    fn find_through(
        &self,
        catalog: &CatalogName,
        id: CourseId,
        read: impl FnOnce() -> Result<Option<Course>, StoreError>,
    ) -> Result<Option<Course>, StoreError> {
        // The file's version before the row: a commit in between makes the next read miss.
        let version = self.read_cache.as_ref().and_then(|cache| Some((cache, cache.version()?)));
        if let Some((cache, version)) = &version
            && let Some(course) = cache.get(version, catalog, id)
        {
            return Ok(Some(course));
        }
        let found = read()?;
        if let (Some((cache, version)), Some(course)) = (version, &found) {
            cache.put(version, catalog, course);
        }
        Ok(found)
    }

    /// In the writer's next batch. Its transaction is immediate: the write lock is held before
    /// anything is read, so the shared statements need no lock of their own, and other processes
    /// learn of the change from the file (ADR 0030), with no notice.
    fn run_write<T>(&self, context: &'static str, _change: ChangeSummary, write: impl SharedWrite<T>) -> WriteResult<T>
    where
        T: Written + Send + 'static,
    {
        self.write(context, move |connection| write(&mut SqlConnection::Sqlite(connection)))
    }

    /// On a connection of its own, in one transaction that keeps the write lock (ADR 0057); the
    /// writer thread waits meanwhile (only the `import` command bulk-imports, and writes nothing
    /// else). Its history rows are not among the writer's own: a follower in this process would
    /// announce them (none runs in `import`).
    fn begin_bulk_import(
        &self,
        catalog: &CatalogName,
        provenance: &Provenance,
    ) -> Result<Option<Box<dyn BulkImport + '_>>, WriteError> {
        self.file.has_room().map_err(WriteError::Unwritable)?;
        let connection = writer::open(&self.path.to_string_lossy(), &self.settings)
            .map_err(|error| WriteError::Store(StoreError::new("cannot open the database for the import", error)))?;
        let import = SqliteBulkImport::begin(connection, catalog, provenance)
            .map_err(|error| write_error("cannot start the import", error))?;
        Ok(import.map(|import| Box::new(import) as Box<dyn BulkImport + '_>))
    }

    /// A local file, indexed reads of at most one page (100 courses), and WAL: a reader never
    /// waits for a writer (the writer has its own connection, out of the pool).
    fn reads_inline(&self) -> bool {
        true
    }

    /// The writer thread runs, the file is still the one opened, it, its WAL and its folder can
    /// be written, and its disk has room (ADR 0026).
    fn writable(&self) -> Result<(), Unwritable> {
        if !self.writer.is_running() {
            return Err(Unwritable::WriterStopped);
        }
        self.file.has_room()
    }

    fn follow_changes(&self, on_change: Box<dyn Fn(RemoteChange) + Send>) -> ChangeFollower {
        SqliteStore::follow_changes(self, on_change)
    }
}

/// The connection that writes an import's batches (the import's own store: only the `import`
/// command writes batches) gets a page cache of 32 MiB instead of SQLite's 2 MiB: a batch's
/// inserts land all over the id, title and full-text indexes, and a small cache spills those pages
/// to the WAL and reads them back within the batch (half the time of an import went to those
/// reads and writes; ADR 0053).
impl ImportBatchSetup for SqliteConnection {
    fn set_up_import_batch(&mut self) -> QueryResult<()> {
        self.batch_execute(IMPORT_PAGE_CACHE)
    }
}

/// SQLite's own third step of a search: active courses whose title key contains `key`, through
/// the trigram full-text index `courses_title_search` (external content over `courses`), in
/// creation order (the index's rowid is `position`).
///
/// `CROSS JOIN` makes the index the outer loop (ADR 0052): with a plain `JOIN` the planner took
/// `courses.catalog = ?` on `courses_active_position` for the more selective side, walked the
/// whole catalog and ran the full-text match once per course (hundreds of milliseconds at a
/// million courses). `ORDER BY rowid` is what the index yields anyway (no sort), said out loud.
///
/// The index is asked for the key's [`covering_trigrams`], not for the key as a phrase of all its
/// trigrams (ADR 0055): a phrase of a 7-character key reads 5 posting lists and their positions,
/// the cover 3 lists; `instr` then keeps the courses whose title key holds the key itself, which
/// is exactly what the phrase matched (a title key is already folded, so the trigram tokenizer's
/// own case folding changes nothing in it). The cover is a filter that may let through a course
/// holding the trigrams apart, never one that drops a match.
impl ContainingSearch for SqliteConnection {
    fn title_keys_containing(&mut self, catalog: &CatalogName, key: &str, limit: i64) -> QueryResult<Vec<CourseRow>> {
        diesel::sql_query(
            "SELECT courses.catalog, courses.id, courses.title, courses.title_key, courses.workload_hours, courses.archived, \
                    courses.version, courses.created_at, courses.updated_at \
             FROM courses_title_search CROSS JOIN courses ON courses.position = courses_title_search.rowid \
             WHERE courses_title_search MATCH ? AND courses.catalog = ? AND courses.archived = 0 \
                   AND instr(courses.title_key, ?) > 0 \
             ORDER BY courses_title_search.rowid \
             LIMIT ?",
        )
        .bind::<diesel::sql_types::Text, _>(covering_trigrams_query(key))
        .bind::<diesel::sql_types::Text, _>(catalog.as_str())
        .bind::<diesel::sql_types::Text, _>(key)
        .bind::<diesel::sql_types::BigInt, _>(limit)
        .load::<CourseRow>(self)
    }
}

/// The FTS5 query that asks the trigram index for [`covering_trigrams`] of `key` (three
/// characters or more), each a quoted string (FTS5's implicit AND between them). A title key
/// holding `key` holds all of them, so every match of the key is among the index's answers.
fn covering_trigrams_query(key: &str) -> String {
    covering_trigrams(key)
        .into_iter()
        .map(|trigram| format!("\"{}\"", trigram.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::covering_trigrams_query;

    /// The terms of an FTS5 query made of quoted strings separated by spaces.
    fn terms(query: &str) -> Vec<String> {
        let mut terms = Vec::new();
        let mut chars = query.chars().peekable();
        while let Some(opening) = chars.next() {
            assert_eq!(opening, '"', "{query}");
            let mut term = String::new();
            loop {
                match chars.next().expect("a closing quote") {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        term.push('"');
                    }
                    '"' => break,
                    other => term.push(other),
                }
            }
            terms.push(term);
            assert!(matches!(chars.next(), None | Some(' ')), "{query}");
        }
        terms
    }

    #[test]
    fn the_trigrams_asked_of_the_index_hold_every_character_of_the_key() {
        assert_eq!(covering_trigrams_query("abc"), r#""abc""#);
        assert_eq!(covering_trigrams_query("abcd"), r#""abc" "bcd""#);
        assert_eq!(covering_trigrams_query("abcdef"), r#""abc" "def""#);
        assert_eq!(covering_trigrams_query("0123456"), r#""012" "345" "456""#);
        assert_eq!(covering_trigrams_query("introdução"), r#""int" "rod" "uçã" "ção""#);
        assert_eq!(covering_trigrams_query(r#"a"b"c"#), r#""a""b" "b""c""#);
        for key in ["abc", "abcd", "abcde", "abcdefghij", "ção de ação", "abcdefghijklm", r#"x "y" z"#] {
            let chars: Vec<char> = key.chars().collect();
            let mut covered = vec![false; chars.len()];
            let terms = terms(&covering_trigrams_query(key));
            assert!(terms.len() <= chars.len().div_ceil(3) + 1, "{key}: {terms:?}");
            // The terms come in the order of where they start in the key, each after the last.
            let mut from = 0;
            for term in &terms {
                let trigram: Vec<char> = term.chars().collect();
                assert_eq!(trigram.len(), 3, "{key}: {term}");
                let at = from
                    + chars[from..]
                        .windows(3)
                        .position(|window| window == trigram.as_slice())
                        .expect("a trigram of the key");
                covered[at..at + 3].iter_mut().for_each(|character| *character = true);
                from = at + 1;
            }
            assert!(covered.iter().all(|&character| character), "{key}: {covered:?}");
        }
    }
}

//! [`SqliteStore`]: the default [`CourseStore`], one SQLite file, through diesel.
//!
//! SQLite is compiled into the binary (`libsqlite3-sys/bundled`). The file is opened in WAL
//! mode with a busy timeout and `synchronous = FULL`, and the embedded migrations run on open.
//! Reads use a pool of connections; writes go through one writer thread that commits them in
//! batches, one fsync per batch ([`crate::sqlite_writer`], group commit).

use std::path::{Path, PathBuf};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool, PooledConnection};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sqlite::SqliteConnection;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

use crate::sqlite_file::DatabaseFile;
use crate::sqlite_follow::OwnWrites;
use crate::sqlite_read_cache::ReadCache;
use crate::sqlite_writer::{WriteFailure, Writer};
use crate::store::{ChangeFollower, IdempotentInsert, RemoteChange, Replaced, Unwritable, WriteError};
use crate::{
    Course, CourseId, CourseStore, CourseTitle, HistoryEntry, IdempotencyKey, PageCursor, Provenance, StoreError,
    WorkloadHours,
};

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// How long a writer waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections kept by the pool, for reads only (writes have the writer's own connection). Reads
/// run inline on the async workers, so at most one per worker thread is in use at a time.
const POOL_SIZE: u32 = 8;

/// Stored timestamps: RFC 3339, UTC, millisecond precision, fixed width (text order is time order).
const TIMESTAMP_FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

mod schema {
    diesel::table! {
        courses (position) {
            position -> BigInt,
            id -> Text,
            title -> Text,
            title_key -> Text,
            workload_hours -> Integer,
            archived -> Bool,
            version -> BigInt,
            created_at -> Text,
            updated_at -> Text,
        }
    }

    diesel::table! {
        course_creations (idempotency_key) {
            idempotency_key -> Text,
            fingerprint -> Text,
            course_id -> Text,
            created_at -> Text,
        }
    }

    diesel::table! {
        course_history (seq) {
            seq -> BigInt,
            course_id -> Text,
            author -> Text,
            tool -> Text,
            arguments -> Text,
            before_title -> Nullable<Text>,
            before_workload_hours -> Nullable<Integer>,
            before_archived -> Nullable<Bool>,
            before_version -> Nullable<BigInt>,
            before_updated_at -> Nullable<Text>,
            after_title -> Text,
            after_workload_hours -> Integer,
            after_archived -> Bool,
            after_version -> BigInt,
            after_updated_at -> Text,
        }
    }

    diesel::table! {
        title_key_rule (singleton) {
            singleton -> Integer,
            version -> BigInt,
        }
    }

    diesel::table! {
        catalog_counters (singleton) {
            singleton -> Integer,
            active_courses -> BigInt,
        }
    }
}

use schema::{catalog_counters, course_creations, course_history, courses, title_key_rule};

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
}

/// The SQLite course store: a pool of connections to one database file.
#[derive(Clone)]
pub struct SqliteStore {
    /// Reads: any pooled connection (WAL readers never wait for the writer).
    pool: Pool<ConnectionManager<SqliteConnection>>,
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
        let manager = ConnectionManager::<SqliteConnection>::new(path.to_string_lossy());
        let pool = Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(30))
            // A local file's connection does not go stale: skip r2d2's `SELECT 1` on every checkout
            // (a statement parse per request; see bench/RESULTS.md). A broken one still errors.
            .test_on_check_out(false)
            .connection_customizer(Box::new(ConnectionSettings { busy_timeout }))
            .build(manager)
            .map_err(|error| open_error(error.into()))?;
        drop(first);
        let mut connection = pool.get().map_err(|error| open_error(error.into()))?;
        // One process migrates at a time: the immediate transaction takes the write lock first.
        connection
            .immediate_transaction(|connection| {
                connection.run_pending_migrations(MIGRATIONS).map(|_| ()).map_err(|error| {
                    // Carry the migration error out of diesel's transaction closure.
                    DieselError::QueryBuilderError(error)
                })?;
                bring_title_keys_to_rule(connection)
            })
            .map_err(|error| OpenStoreError::Migrate { path: path.to_owned(), source: error.into() })?;
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
    /// [`SQLITE_FOLLOW_POLL`]: crate::SQLITE_FOLLOW_POLL
    #[must_use]
    pub fn follow_changes(&self, on_change: impl Fn(RemoteChange) + Send + 'static) -> ChangeFollower {
        let settings = self.settings;
        crate::sqlite_follow::start(
            self.path.to_string_lossy().into_owned(),
            move |database| crate::sqlite_writer::open(database, &settings),
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

    fn connection(&self) -> Result<PooledConnection<ConnectionManager<SqliteConnection>>, StoreError> {
        self.pool.get().map_err(|error| StoreError::new("no database connection available", error))
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
            WriteFailure::Unwritable(reason) => WriteError::Unwritable(reason),
            WriteFailure::Batch(error) => WriteError::Store(StoreError::new(context, error)),
            WriteFailure::Connection(error) => WriteError::Store(StoreError::new(context, error)),
            WriteFailure::WriterGone => WriteError::Store(StoreError::message("the database writer stopped")),
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

#[derive(Debug, Queryable, QueryableByName, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = courses, check_for_backend(diesel::sqlite::Sqlite))]
struct CourseRow {
    id: String,
    title: String,
    title_key: String,
    workload_hours: i32,
    archived: bool,
    version: i64,
    created_at: String,
    updated_at: String,
}

impl CourseRow {
    fn from_course(course: &Course) -> Result<Self, StoreError> {
        Ok(Self {
            id: course.id().to_string(),
            title: course.title().as_str().to_owned(),
            title_key: course.title().comparison_key(),
            workload_hours: i32::from(course.workload_hours().get()),
            archived: course.is_archived(),
            version: i64::try_from(course.version()).map_err(|error| StoreError::new("version out of range", error))?,
            created_at: format_timestamp(course.created_at())?,
            updated_at: format_timestamp(course.updated_at())?,
        })
    }

    fn into_course(self) -> Result<Course, StoreError> {
        let invalid = |_| StoreError::message("a stored course breaks the catalog's rules");
        Ok(Course::from_stored(
            CourseId::parse(&self.id).map_err(|_| StoreError::message("a stored course id is invalid"))?,
            CourseTitle::from_stored(self.title)
                .map_err(|_| StoreError::message("a stored course title is invalid"))?,
            WorkloadHours::parse(i64::from(self.workload_hours))
                .map_err(|_| StoreError::message("a stored workload is invalid"))?,
            self.archived,
            u64::try_from(self.version).map_err(invalid)?,
            parse_timestamp(&self.created_at)?,
            parse_timestamp(&self.updated_at)?,
        ))
    }
}

/// One revision of a course as the history keeps it (the fields a write can change).
#[derive(Debug)]
struct Snapshot {
    title: String,
    workload_hours: i32,
    archived: bool,
    version: i64,
    updated_at: String,
}

impl Snapshot {
    fn of(row: &CourseRow) -> Self {
        Self {
            title: row.title.clone(),
            workload_hours: row.workload_hours,
            archived: row.archived,
            version: row.version,
            updated_at: row.updated_at.clone(),
        }
    }

    /// The course at this revision (id and creation time never change).
    fn into_course(self, course: &Course) -> Result<Course, StoreError> {
        CourseRow {
            id: course.id().to_string(),
            title_key: String::new(),
            title: self.title,
            workload_hours: self.workload_hours,
            archived: self.archived,
            version: self.version,
            created_at: format_timestamp(course.created_at())?,
            updated_at: self.updated_at,
        }
        .into_course()
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = course_history, check_for_backend(diesel::sqlite::Sqlite))]
struct HistoryRow {
    seq: i64,
    author: String,
    tool: String,
    arguments: String,
    before_title: Option<String>,
    before_workload_hours: Option<i32>,
    before_archived: Option<bool>,
    before_version: Option<i64>,
    before_updated_at: Option<String>,
    after_title: String,
    after_workload_hours: i32,
    after_archived: bool,
    after_version: i64,
    after_updated_at: String,
}

impl HistoryRow {
    fn into_entry(self, course: &Course) -> Result<(HistoryEntry, PageCursor), StoreError> {
        let before = match (
            self.before_title,
            self.before_workload_hours,
            self.before_archived,
            self.before_version,
            self.before_updated_at,
        ) {
            (None, None, None, None, None) => None,
            (Some(title), Some(workload_hours), Some(archived), Some(version), Some(updated_at)) => {
                Some(Snapshot { title, workload_hours, archived, version, updated_at }.into_course(course)?)
            }
            _ => return Err(StoreError::message("a stored history entry is incomplete")),
        };
        let after = Snapshot {
            title: self.after_title,
            workload_hours: self.after_workload_hours,
            archived: self.after_archived,
            version: self.after_version,
            updated_at: self.after_updated_at,
        }
        .into_course(course)?;
        let position = u64::try_from(self.seq).map_err(|error| StoreError::new("negative history position", error))?;
        let entry = HistoryEntry {
            recorded_at: after.updated_at(),
            provenance: Provenance::new(self.author, self.tool, self.arguments),
            before,
            after,
        };
        Ok((entry, PageCursor::after_position(position)))
    }
}

/// Appends the history entry of a write from `before` (none for a creation) to `after`.
fn record_history(
    connection: &mut SqliteConnection,
    before: Option<&CourseRow>,
    after: &CourseRow,
    provenance: &Provenance,
) -> Result<(), DieselError> {
    let before = before.map(Snapshot::of);
    diesel::insert_into(course_history::table)
        .values((
            course_history::course_id.eq(&after.id),
            course_history::author.eq(provenance.author()),
            course_history::tool.eq(provenance.tool()),
            course_history::arguments.eq(provenance.arguments()),
            course_history::before_title.eq(before.as_ref().map(|snapshot| snapshot.title.as_str())),
            course_history::before_workload_hours.eq(before.as_ref().map(|snapshot| snapshot.workload_hours)),
            course_history::before_archived.eq(before.as_ref().map(|snapshot| snapshot.archived)),
            course_history::before_version.eq(before.as_ref().map(|snapshot| snapshot.version)),
            course_history::before_updated_at.eq(before.as_ref().map(|snapshot| snapshot.updated_at.as_str())),
            course_history::after_title.eq(&after.title),
            course_history::after_workload_hours.eq(after.workload_hours),
            course_history::after_archived.eq(after.archived),
            course_history::after_version.eq(after.version),
            course_history::after_updated_at.eq(&after.updated_at),
        ))
        .execute(connection)
        .map(|_| ())
}

fn format_timestamp(instant: OffsetDateTime) -> Result<String, StoreError> {
    instant
        .to_offset(time::UtcOffset::UTC)
        .format(TIMESTAMP_FORMAT)
        .map_err(|error| StoreError::new("cannot format a timestamp", error))
}

fn parse_timestamp(text: &str) -> Result<OffsetDateTime, StoreError> {
    PrimitiveDateTime::parse(text, TIMESTAMP_FORMAT)
        .map(PrimitiveDateTime::assume_utc)
        .map_err(|error| StoreError::new("a stored timestamp is invalid", error))
}

fn write_error(context: &'static str, error: DieselError) -> WriteError {
    match &error {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info)
            if info.message().contains("title_key") =>
        {
            WriteError::DuplicateTitle
        }
        _ => WriteError::Store(StoreError::new(context, error)),
    }
}

// Lookups by a unique key use `get_result`, not `first`: `first` adds `LIMIT ?`, and SQLite
// re-prepares a statement whose LIMIT is a bound parameter on every execution (the planner reads
// the bound value), which defeats diesel's statement cache: a full SQL parse per read.

/// Only active courses: a literal (not a bound parameter) so SQLite can use the partial indexes.
fn is_active() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    diesel::dsl::sql::<diesel::sql_types::Bool>("archived = 0")
}

impl CourseStore for SqliteStore {
    fn insert(&self, course: &Course, provenance: &Provenance) -> Result<(), WriteError> {
        let row = CourseRow::from_course(course)?;
        let provenance = provenance.clone();
        self.write("cannot insert a course", move |connection| {
            diesel::insert_into(courses::table).values(&row).execute(connection)?;
            record_history(connection, None, &row, &provenance)
        })
    }

    fn insert_idempotent(
        &self,
        course: &Course,
        key: &IdempotencyKey,
        fingerprint: &str,
        provenance: &Provenance,
    ) -> Result<IdempotentInsert, WriteError> {
        let row = CourseRow::from_course(course)?;
        let created_at = row.created_at.clone();
        let (key, fingerprint, provenance) = (key.clone(), fingerprint.to_owned(), provenance.clone());
        // The writer's transaction is immediate: the write lock is held before the key is read, so
        // two retries of one key cannot both find it unused.
        let outcome = self.write("cannot insert a course idempotently", move |connection| {
            let previous: Option<(String, String)> = course_creations::table
                .find(key.as_str())
                .select((course_creations::fingerprint, course_creations::course_id))
                .get_result(connection)
                .optional()?;
            if let Some((previous_fingerprint, course_id)) = previous {
                if previous_fingerprint != fingerprint {
                    return Ok(Err(IdempotentInsert::KeyReused));
                }
                let original: CourseRow = courses::table
                    .filter(courses::id.eq(course_id))
                    .select(CourseRow::as_select())
                    .get_result(connection)?;
                return Ok(Err(IdempotentInsert::Replayed(
                    original
                        .into_course()
                        .map_err(|_| DieselError::QueryBuilderError("a stored course is invalid".into()))?,
                )));
            }
            diesel::insert_into(courses::table).values(&row).execute(connection)?;
            record_history(connection, None, &row, &provenance)?;
            diesel::insert_into(course_creations::table)
                .values((
                    course_creations::idempotency_key.eq(key.as_str()),
                    course_creations::fingerprint.eq(&fingerprint),
                    course_creations::course_id.eq(&row.id),
                    course_creations::created_at.eq(&created_at),
                ))
                .execute(connection)?;
            Ok::<_, DieselError>(Ok(()))
        })?;
        Ok(match outcome {
            Ok(()) => IdempotentInsert::Inserted,
            Err(earlier) => earlier,
        })
    }

    fn replace(&self, before: &Course, after: &Course, provenance: &Provenance) -> Result<Replaced, WriteError> {
        let before = CourseRow::from_course(before)?;
        let row = CourseRow::from_course(after)?;
        let provenance = provenance.clone();
        self.write("cannot update a course", move |connection| {
            let updated = diesel::update(courses::table)
                .filter(courses::id.eq(&row.id))
                .filter(courses::version.eq(before.version))
                .set(&row)
                .execute(connection)?;
            if updated != 1 {
                return Ok(Replaced::Stale);
            }
            record_history(connection, Some(&before), &row, &provenance)?;
            Ok(Replaced::Done)
        })
    }

    fn find(&self, id: CourseId) -> Result<Option<Course>, StoreError> {
        // The file's version before the row (see sqlite_read_cache): never a stale course.
        let version = self.read_cache.as_ref().and_then(|cache| Some((cache, cache.version()?)));
        if let Some((cache, version)) = &version
            && let Some(course) = cache.get(version, id)
        {
            return Ok(Some(course));
        }
        let found = courses::table
            .filter(courses::id.eq(id.to_string()))
            .select(CourseRow::as_select())
            .get_result(&mut self.connection()?)
            .optional()
            .map_err(|error| StoreError::new("cannot read a course", error))?
            .map(CourseRow::into_course)
            .transpose()?;
        if let (Some((cache, version)), Some(course)) = (version, &found) {
            cache.put(version, course);
        }
        Ok(found)
    }

    fn active_page(&self, after: Option<PageCursor>, limit: usize) -> Result<Vec<(Course, PageCursor)>, StoreError> {
        let limit = i64::try_from(limit).map_err(|error| StoreError::new("page size out of range", error))?;
        let after = after
            .map_or(Ok(0), |cursor| i64::try_from(cursor.position()))
            .map_err(|error| StoreError::new("cursor out of range", error))?;
        let rows: Vec<(i64, CourseRow)> = courses::table
            .filter(is_active())
            .filter(courses::position.gt(after))
            .order(courses::position.asc())
            .limit(limit)
            .select((courses::position, CourseRow::as_select()))
            .load(&mut self.connection()?)
            .map_err(|error| StoreError::new("cannot read a catalog page", error))?;
        rows.into_iter()
            .map(|(position, row)| {
                let position = u64::try_from(position).map_err(|error| StoreError::new("negative position", error))?;
                Ok((row.into_course()?, PageCursor::after_position(position)))
            })
            .collect()
    }

    fn history_page(
        &self,
        course: &Course,
        before: Option<PageCursor>,
        limit: usize,
    ) -> Result<Vec<(HistoryEntry, PageCursor)>, StoreError> {
        let limit = i64::try_from(limit).map_err(|error| StoreError::new("page size out of range", error))?;
        let before = before
            .map_or(Ok(i64::MAX), |cursor| i64::try_from(cursor.position()))
            .map_err(|error| StoreError::new("cursor out of range", error))?;
        let rows: Vec<HistoryRow> = course_history::table
            .filter(course_history::course_id.eq(course.id().to_string()))
            .filter(course_history::seq.lt(before))
            .order(course_history::seq.desc())
            .limit(limit)
            .select(HistoryRow::as_select())
            .load(&mut self.connection()?)
            .map_err(|error| StoreError::new("cannot read a course's history", error))?;
        rows.into_iter().map(|row| row.into_entry(course)).collect()
    }

    /// A local file, indexed reads of at most one page (100 courses), and WAL: a reader never
    /// waits for a writer (the writer has its own connection, out of the pool).
    fn reads_inline(&self) -> bool {
        true
    }

    /// The file is still the one opened, it, its WAL and its folder can be written, and its disk
    /// has room (ADR 0026).
    fn writable(&self) -> Result<(), Unwritable> {
        self.file.has_room()
    }

    fn follow_changes(&self, on_change: Box<dyn Fn(RemoteChange) + Send>) -> Option<ChangeFollower> {
        Some(SqliteStore::follow_changes(self, on_change))
    }

    fn pool_status(&self) -> crate::PoolStatus {
        let state = self.pool.state();
        crate::PoolStatus {
            max_size: self.pool.max_size(),
            connections: state.connections,
            idle: state.idle_connections,
        }
    }

    fn count_active(&self) -> Result<u64, StoreError> {
        let count: i64 = catalog_counters::table
            .select(catalog_counters::active_courses)
            .get_result(&mut self.connection()?)
            .map_err(|error| StoreError::new("cannot count the catalog", error))?;
        u64::try_from(count).map_err(|error| StoreError::new("negative count", error))
    }

    fn search_active(&self, key: &str, limit: usize) -> Result<Vec<Course>, StoreError> {
        let sql_limit = i64::try_from(limit).map_err(|error| StoreError::new("limit out of range", error))?;
        let connection = &mut self.connection()?;
        let search_error = |error| StoreError::new("cannot search the catalog", error);
        let mut found: Vec<CourseRow> = Vec::new();
        // 1. Ids starting with the key: a range on the unique index of `id` (ids are lowercase hex and '-').
        if key.bytes().all(|byte| byte.is_ascii_hexdigit() || byte == b'-') {
            found.extend(
                courses::table
                    .filter(is_active())
                    .filter(courses::id.ge(key))
                    .filter(courses::id.lt(format!("{key}~")))
                    .order(courses::id.asc())
                    .limit(sql_limit)
                    .select(CourseRow::as_select())
                    .load(connection)
                    .map_err(search_error)?,
            );
        }
        // 2. Title keys starting with the key: a range on the partial unique index of active title keys.
        if found.len() < limit {
            found.extend(
                courses::table
                    .filter(is_active())
                    .filter(courses::title_key.ge(key))
                    .filter(courses::title_key.lt(format!("{key}\u{10FFFF}")))
                    .order(courses::title_key.asc())
                    .limit(sql_limit)
                    .select(CourseRow::as_select())
                    .load(connection)
                    .map_err(search_error)?,
            );
        }
        // 3. Title keys containing the key: the trigram index (it needs three characters).
        if found.len() < limit && key.chars().count() >= 3 {
            let phrase = format!("\"{}\"", key.replace('"', "\"\""));
            found.extend(
                diesel::sql_query(
                    "SELECT courses.id, courses.title, courses.title_key, courses.workload_hours, courses.archived, \
                            courses.version, courses.created_at, courses.updated_at \
                     FROM courses_title_search JOIN courses ON courses.position = courses_title_search.rowid \
                     WHERE courses_title_search MATCH ? AND courses.archived = 0 \
                     LIMIT ?",
                )
                .bind::<diesel::sql_types::Text, _>(phrase)
                .bind::<diesel::sql_types::BigInt, _>(sql_limit.saturating_mul(2))
                .load::<CourseRow>(connection)
                .map_err(search_error)?,
            );
        }
        let mut seen = std::collections::HashSet::new();
        found.into_iter().filter(|row| seen.insert(row.id.clone())).take(limit).map(CourseRow::into_course).collect()
    }
}

/// Brings the stored title keys to today's comparison-key rule, in the transaction that migrated
/// the database (ADR 0025): nothing to do when they are already at it.
fn bring_title_keys_to_rule(connection: &mut SqliteConnection) -> Result<(), DieselError> {
    use crate::course_title::{COMPARISON_KEY_RULE, StoredKey, plan_rekey, transient_key};

    let version: i64 = title_key_rule::table.select(title_key_rule::version).get_result(connection)?;
    if version >= COMPARISON_KEY_RULE {
        if version > COMPARISON_KEY_RULE {
            tracing::warn!(
                version,
                ours = COMPARISON_KEY_RULE,
                "the title keys were computed by a newer rule than this program's"
            );
        }
        return Ok(());
    }
    let stored: Vec<(String, String, String, bool)> = courses::table
        .order(courses::position.asc())
        .select((courses::id, courses::title, courses::title_key, courses::archived))
        .load(connection)?;
    let rekey = plan_rekey(stored.into_iter().map(|(id, title, key, archived)| StoredKey {
        id,
        title,
        key,
        active: !archived,
    }));
    // Two passes, so that no course takes a key another still holds.
    for (id, _) in &rekey.changes {
        diesel::update(courses::table.filter(courses::id.eq(id)))
            .set(courses::title_key.eq(transient_key(id)))
            .execute(connection)?;
    }
    for (id, key) in &rekey.changes {
        diesel::update(courses::table.filter(courses::id.eq(id)))
            .set(courses::title_key.eq(key))
            .execute(connection)?;
    }
    diesel::update(title_key_rule::table).set(title_key_rule::version.eq(COMPARISON_KEY_RULE)).execute(connection)?;
    for (course, earlier) in &rekey.duplicates {
        tracing::warn!(
            course,
            same_title_as = earlier,
            "two active courses have the same title under the title rule of ADR 0025: rename or archive one"
        );
    }
    tracing::info!(
        from = version,
        to = COMPARISON_KEY_RULE,
        changed = rekey.changes.len(),
        duplicates = rekey.duplicates.len(),
        "title keys recomputed"
    );
    Ok(())
}

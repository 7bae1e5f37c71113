//! [`migrate`]: copies a whole database (every catalog) from one store to another, SQLite or
//! PostgreSQL either way, as it is: the same ids, versions, positions, history (with its
//! evidence), idempotency keys and active counters (ADR 0041). (`copy.rs`: "migration" here is
//! the operator's word for this copy, not the schema migrations each store runs on open.)
//!
//! The copy is written once for both backends over [`SqlConnection`] and the shared schema of
//! [`crate::store::sql`] (ADR 0033); what differs per backend is named where it happens (how a
//! snapshot is taken, how rows are streamed, how the identity counters are set).
//!
//! What it guarantees:
//! - The source is read in ONE read transaction (a SQLite read snapshot, a PostgreSQL
//!   `REPEATABLE READ READ ONLY` transaction): the copy is the database at one instant while the
//!   source keeps serving.
//! - The target is written in ONE transaction, verified inside it before the commit: an
//!   interruption ([`MigrationProgress::stop_requested`]), an error or a verification mismatch
//!   rolls it back, and the target is exactly as it was.
//! - Verification: the count of every table and a SHA-256 over its canonical rows (fields in
//!   a fixed encoding, rows in key order) are computed from the source while it is read and from
//!   the target after it is written; any difference fails the migration.
//! - The target's position and history counters continue after the copied ones (and after the
//!   source's own high-water marks), so a course created afterwards sorts after every migrated one.

use std::path::{Path, PathBuf};

use diesel::connection::{DefaultLoadingMode, SimpleConnection};
use diesel::pg::{PgConnection, PgRowByRowLoadingMode};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::BigInt;
use diesel::sqlite::SqliteConnection;
use sha2::{Digest, Sha256};

use crate::store::port::{MigrationPhase, MigrationProgress};
use crate::store::postgres::PostgresStore;
use crate::store::sql::schema::{catalog_counters, course_creations, course_history, course_history_evidence, courses};
use crate::store::sql::{SqlConnection, Timestamp};
use crate::store::sqlite::SqliteStore;
use crate::store::sqlite::bulk::DeferredIndexes;

/// Rows written per `INSERT` (and between two checks of [`MigrationProgress::stop_requested`]):
/// 16 columns × 1000 stays under both backends' limits on bound parameters.
const BATCH_ROWS: usize = 1000;

/// One end of a migration: a SQLite file or a PostgreSQL database.
#[derive(Clone)]
pub enum Endpoint {
    /// A SQLite database file (created, as a target, if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URI (its `search_path` may name a schema). Never shown: it may hold
    /// a password.
    Postgres(String),
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.describe())
    }
}

impl Endpoint {
    /// What may be shown of it: the file's path, or `postgresql` (never the URL).
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite {}", path.display()),
            Self::Postgres(_) => "postgresql".to_owned(),
        }
    }
}

/// What [`migrate`] does with a target that already holds data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonEmptyTarget {
    /// Refuse ([`MigrateError::TargetNotEmpty`]), changing nothing.
    Refuse,
    /// Delete everything in the target, in the same transaction as the copy: the target ends up
    /// as the source, or (on any failure) as it was.
    Replace,
}

/// How many rows of each table were copied, and their checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationReport {
    /// Courses (active and archived), every catalog.
    pub courses: u64,
    /// Idempotent creations.
    pub creations: u64,
    /// History entries.
    pub history: u64,
    /// History entries' evidence rows.
    pub evidence: u64,
    /// Catalogs with an active-course counter.
    pub catalogs: u64,
    /// SHA-256 over every table's canonical rows, lowercase hex (the same on both sides).
    pub checksum: String,
}

/// Why [`migrate`] failed. In every case the target is unchanged. The text never holds a URL.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Source and target are the same database.
    #[error("the source and the target are the same database ({0})")]
    SameDatabase(String),
    /// The source SQLite file does not exist (a migration never creates its source).
    #[error("the source database {0} does not exist")]
    SourceMissing(PathBuf),
    /// A database could not be opened or migrated to this binary's schema.
    #[error("cannot open the {side} database ({what})")]
    Open {
        /// `source` or `target`.
        side: &'static str,
        /// [`Endpoint::describe`].
        what: String,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The target already holds data and [`NonEmptyTarget::Refuse`] was asked.
    #[error(
        "the target is not empty ({courses} courses, {history} history entries); nothing was changed (replace it with --force)"
    )]
    TargetNotEmpty {
        /// Courses in the target.
        courses: u64,
        /// History entries in the target.
        history: u64,
    },
    /// The two databases compute their title keys with different rules.
    #[error("the source's title keys follow rule {source_rule}, the target's rule {target_rule}")]
    TitleKeyRule {
        /// The source's `title_key_rule`.
        source_rule: i64,
        /// The target's.
        target_rule: i64,
    },
    /// What was written differs from what was read: the target was rolled back.
    #[error("verification failed: {table}: source {source_value}, target {target_value}; the target was rolled back")]
    Mismatch {
        /// The table (or `checksum`).
        table: &'static str,
        /// What the source had.
        source_value: String,
        /// What the target has.
        target_value: String,
    },
    /// A catalog's active counter disagrees with its rows.
    #[error("the catalog {catalog:?} counts {counted} active courses but has {actual}; the target was rolled back")]
    Counter {
        /// The catalog.
        catalog: String,
        /// Its counter.
        counted: i64,
        /// Its active courses.
        actual: i64,
    },
    /// Stopped by the caller ([`MigrationProgress::stop_requested`]); the target was rolled back.
    #[error("interrupted; the target was rolled back and is unchanged")]
    Interrupted,
    /// A statement failed.
    #[error("the migration failed while {step}; the target is unchanged")]
    Database {
        /// What it was doing.
        step: &'static str,
        /// The cause.
        #[source]
        source: DieselError,
    },
}

impl From<DieselError> for MigrateError {
    fn from(source: DieselError) -> Self {
        Self::Database { step: "running a transaction", source }
    }
}

fn step(step: &'static str) -> impl FnOnce(DieselError) -> MigrateError {
    move |source| MigrateError::Database { step, source }
}

/// Copies every catalog of `from` into `to` (ADR 0041): both are first migrated to this binary's
/// schema; `to` must be empty unless `non_empty` is [`NonEmptyTarget::Replace`].
///
/// # Errors
/// [`MigrateError`]; whatever it is, the target holds what it held before.
pub fn migrate(
    from: &Endpoint,
    to: &Endpoint,
    non_empty: NonEmptyTarget,
    progress: &dyn MigrationProgress,
) -> Result<MigrationReport, MigrateError> {
    if same_database(from, to) {
        return Err(MigrateError::SameDatabase(from.describe()));
    }
    if let Endpoint::Sqlite(path) = from
        && !path.is_file()
    {
        return Err(MigrateError::SourceMissing(path.clone()));
    }
    prepare(from, "source")?;
    prepare(to, "target")?;
    let mut source = Owned::connect(from, "source")?;
    let mut target = Owned::connect(to, "target")?;
    target.write_transaction(|target| {
        source.snapshot(|source| {
            let rule = (title_key_rule(source)?, title_key_rule(target)?);
            if rule.0 != rule.1 {
                return Err(MigrateError::TitleKeyRule { source_rule: rule.0, target_rule: rule.1 });
            }
            make_room(target, non_empty)?;
            let report = copy_everything(source, target, progress)?;
            verify(target, &report, progress)?;
            Ok(report.into_report())
        })
    })
}

fn same_database(from: &Endpoint, to: &Endpoint) -> bool {
    match (from, to) {
        (Endpoint::Sqlite(a), Endpoint::Sqlite(b)) => {
            let canonical = |path: &Path| {
                std::fs::canonicalize(path)
                    .unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
            };
            canonical(a) == canonical(b)
        }
        (Endpoint::Postgres(a), Endpoint::Postgres(b)) => a == b,
        _ => false,
    }
}

/// Opens the endpoint's store once, which creates (a target file) and migrates it to this
/// binary's schema (and title key rule) as a start of the apps would.
fn prepare(endpoint: &Endpoint, side: &'static str) -> Result<(), MigrateError> {
    let open_error = |source: Box<dyn std::error::Error + Send + Sync>| MigrateError::Open {
        side,
        what: endpoint.describe(),
        source,
    };
    match endpoint {
        Endpoint::Sqlite(path) => drop(SqliteStore::open(path).map_err(|error| open_error(error.into()))?),
        Endpoint::Postgres(url) => drop(PostgresStore::open(url).map_err(|error| open_error(error.into()))?),
    }
    Ok(())
}

/// An owned connection of either backend.
enum Owned {
    Sqlite(SqliteConnection),
    Postgres(PgConnection),
}

impl Owned {
    fn connect(endpoint: &Endpoint, side: &'static str) -> Result<Self, MigrateError> {
        let open_error = |source: Box<dyn std::error::Error + Send + Sync>| MigrateError::Open {
            side,
            what: endpoint.describe(),
            source,
        };
        match endpoint {
            Endpoint::Sqlite(path) => {
                let mut connection =
                    SqliteConnection::establish(&path.to_string_lossy()).map_err(|error| open_error(error.into()))?;
                // The apps may be using the file: wait for their write locks as they wait for each other's.
                connection
                    .batch_execute("PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")
                    .map_err(|error| open_error(error.into()))?;
                Ok(Self::Sqlite(connection))
            }
            Endpoint::Postgres(url) => {
                let connection = PgConnection::establish(url).map_err(|error| open_error(error.into()))?;
                Ok(Self::Postgres(connection))
            }
        }
    }

    /// Runs `body` in one read snapshot of this database.
    fn snapshot<T>(
        &mut self,
        body: impl FnOnce(&mut SqlConnection<'_>) -> Result<T, MigrateError>,
    ) -> Result<T, MigrateError> {
        match self {
            // A deferred transaction's first read fixes its WAL snapshot for the transaction's life.
            Self::Sqlite(connection) => {
                connection.transaction(|connection| body(&mut SqlConnection::Sqlite(connection)))
            }
            Self::Postgres(connection) => connection
                .build_transaction()
                .repeatable_read()
                .read_only()
                .run(|connection| body(&mut SqlConnection::Postgres(connection))),
        }
    }

    /// Runs `body` in one write transaction, committed only if it succeeds.
    fn write_transaction<T>(
        &mut self,
        body: impl FnOnce(&mut SqlConnection<'_>) -> Result<T, MigrateError>,
    ) -> Result<T, MigrateError> {
        match self {
            // IMMEDIATE: the write lock from the start, so no other writer slips in between the
            // emptiness check and the copy.
            // A page cache of 16 MiB (this connection only; SQLite's default is 2 MiB) for the one
            // index still kept while the rows go in, `courses.id`'s, over random ids. 64 MiB, when
            // every index was kept, gave the same time at 1M with the indexes set aside, and
            // 117 MB at the peak against 55 (ADR 0057).
            Self::Sqlite(connection) => {
                connection.batch_execute("PRAGMA cache_size = -16384;").map_err(step("sizing the page cache"))?;
                // The target's indexes and the trigram index's trigger are set aside while the
                // rows go in and built once after them, in this transaction (ADR 0057): no other
                // writer can slip in meanwhile, and a reader keeps the snapshot from before.
                connection.immediate_transaction(|connection| {
                    let deferred =
                        DeferredIndexes::drop_all(connection).map_err(step("setting the target's indexes aside"))?;
                    let result = body(&mut SqlConnection::Sqlite(connection))?;
                    deferred.rebuild(connection).map_err(|(_, error)| step("building the target's indexes")(error))?;
                    Ok(result)
                })
            }
            Self::Postgres(connection) => connection.transaction(|connection| {
                // Explicit positions and sequence numbers go into identity columns that are
                // `GENERATED ALWAYS`: allowed for this transaction only (DDL is transactional:
                // a rollback restores ALWAYS, and the trigger, too). The counting trigger is off
                // for the copy: a million updates of one counter row in one transaction each
                // walk that row's growing chain of versions (700 rows/s at 1M, and slowing); the
                // counters are copied from the source instead and checked against the rows.
                connection
                    .batch_execute(
                        "ALTER TABLE courses ALTER COLUMN position SET GENERATED BY DEFAULT;
                         ALTER TABLE course_history ALTER COLUMN seq SET GENERATED BY DEFAULT;
                         ALTER TABLE courses DISABLE TRIGGER courses_count_insert;",
                    )
                    .map_err(step("opening the identity columns"))?;
                let indexes = drop_secondary_indexes(connection)?;
                let result = body(&mut SqlConnection::Postgres(connection))?;
                for definition in &indexes {
                    connection.batch_execute(definition).map_err(step("building the target's indexes"))?;
                }
                connection
                    .batch_execute(
                        "ALTER TABLE courses ALTER COLUMN position SET GENERATED ALWAYS;
                         ALTER TABLE course_history ALTER COLUMN seq SET GENERATED ALWAYS;
                         ALTER TABLE courses ENABLE TRIGGER courses_count_insert;",
                    )
                    .map_err(step("closing the identity columns"))?;
                // Statistics of the copied rows, committed with them: the target's first queries
                // are planned from them, not from defaults until autovacuum comes by (about a
                // minute; never for a table of under 50 rows). About 2 s at 1M courses (`bench/RESULTS.md`).
                connection
                    .batch_execute("ANALYZE courses, course_history;")
                    .map_err(step("taking the target's statistics"))?;
                Ok(result)
            }),
        }
    }
}

/// One index of the target's schema that no constraint owns, to drop before a PostgreSQL copy.
#[derive(QueryableByName)]
struct SecondaryIndex {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    definition: String,
}

/// Drops every index of the target's tables (in its current schema) that no primary key, unique
/// or exclusion constraint owns, and returns their definitions (`pg_indexes.indexdef`) to run once
/// the rows are in: PostgreSQL builds an index over a full table by sorting, far faster than
/// keeping it row by row (above all the GIN trigram index, whose pending list is merged again and
/// again during a copy). Read from the catalog, not named here, so whatever indexes the schema
/// has (a later migration's too) are rebuilt as they were (ADR 0053). Inside the copy's
/// transaction: a failure or a rollback leaves them as they were, and a unique index that the
/// copied rows would break fails the migration. Constraint indexes stay (foreign keys need them).
fn drop_secondary_indexes(connection: &mut PgConnection) -> Result<Vec<String>, MigrateError> {
    let indexes: Vec<SecondaryIndex> = diesel::sql_query(
        "SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
         WHERE i.schemaname = current_schema()
           AND i.tablename IN ('courses', 'course_creations', 'course_history', 'course_history_evidence')
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                           WHERE c.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)
         ORDER BY i.tablename, i.indexname",
    )
    .load(connection)
    .map_err(step("reading the target's indexes"))?;
    for index in &indexes {
        diesel::sql_query(format!("DROP INDEX \"{}\"", index.name.replace('"', "\"\"")))
            .execute(connection)
            .map_err(step("dropping the target's indexes for the copy"))?;
    }
    // Index builds after the copy sort in memory up to this (this transaction only).
    connection.batch_execute("SET LOCAL maintenance_work_mem = '256MB';").map_err(step("sizing the index builds"))?;
    Ok(indexes.into_iter().map(|index| index.definition).collect())
}

/// A course row as stored, position included.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = courses, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
struct StoredCourse {
    position: i64,
    catalog: String,
    id: String,
    title: String,
    title_key: String,
    workload_hours: i32,
    archived: bool,
    version: i64,
    created_at: Timestamp,
    updated_at: Timestamp,
}

/// An idempotent creation as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = course_creations, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
struct StoredCreation {
    catalog: String,
    idempotency_key: String,
    fingerprint: String,
    course_id: String,
    created_at: Timestamp,
}

/// A history entry as stored, sequence number included.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = course_history, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
struct StoredHistory {
    seq: i64,
    catalog: String,
    course_id: String,
    author: String,
    tool: String,
    arguments: String,
    before_title: Option<String>,
    before_workload_hours: Option<i32>,
    before_archived: Option<bool>,
    before_version: Option<i64>,
    before_updated_at: Option<Timestamp>,
    after_title: String,
    after_workload_hours: i32,
    after_archived: bool,
    after_version: i64,
    after_updated_at: Timestamp,
}

/// A history entry's evidence as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = course_history_evidence, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
struct StoredEvidence {
    seq: i64,
    protocol_revision: Option<String>,
    client_name: Option<String>,
    client_version: Option<String>,
    surface_hash: String,
    approval: Option<String>,
    approval_question: Option<String>,
    approval_shown_version: Option<i64>,
    approval_answer: Option<String>,
    approval_answered_at: Option<Timestamp>,
}

/// A catalog's active counter as stored.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = catalog_counters, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
struct StoredCounter {
    catalog: String,
    active_courses: i64,
}

/// The canonical encoding of a row for the checksum: every field in declaration order, each
/// self-delimiting (a length before text, a tag before an optional value), integers and instants
/// as fixed-width little-endian (instants as nanoseconds since the epoch, UTC), so that equal
/// rows hash equally whichever backend they were read from.
trait Canonical {
    fn feed(&self, hasher: &mut Sha256);
}

fn feed_text(hasher: &mut Sha256, text: &str) {
    hasher.update((text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
}

fn feed_i64(hasher: &mut Sha256, value: i64) {
    hasher.update(value.to_le_bytes());
}

fn feed_bool(hasher: &mut Sha256, value: bool) {
    hasher.update([u8::from(value)]);
}

fn feed_instant(hasher: &mut Sha256, instant: Timestamp) {
    hasher.update(instant.instant().unix_timestamp_nanos().to_le_bytes());
}

fn feed_option<T>(hasher: &mut Sha256, value: Option<T>, feed: impl FnOnce(&mut Sha256, T)) {
    match value {
        None => hasher.update([0]),
        Some(value) => {
            hasher.update([1]);
            feed(hasher, value);
        }
    }
}

impl Canonical for StoredCourse {
    fn feed(&self, hasher: &mut Sha256) {
        feed_i64(hasher, self.position);
        feed_text(hasher, &self.catalog);
        feed_text(hasher, &self.id);
        feed_text(hasher, &self.title);
        feed_text(hasher, &self.title_key);
        feed_i64(hasher, i64::from(self.workload_hours));
        feed_bool(hasher, self.archived);
        feed_i64(hasher, self.version);
        feed_instant(hasher, self.created_at);
        feed_instant(hasher, self.updated_at);
    }
}

impl Canonical for StoredCreation {
    fn feed(&self, hasher: &mut Sha256) {
        feed_text(hasher, &self.catalog);
        feed_text(hasher, &self.idempotency_key);
        feed_text(hasher, &self.fingerprint);
        feed_text(hasher, &self.course_id);
        feed_instant(hasher, self.created_at);
    }
}

impl Canonical for StoredHistory {
    fn feed(&self, hasher: &mut Sha256) {
        feed_i64(hasher, self.seq);
        feed_text(hasher, &self.catalog);
        feed_text(hasher, &self.course_id);
        feed_text(hasher, &self.author);
        feed_text(hasher, &self.tool);
        feed_text(hasher, &self.arguments);
        feed_option(hasher, self.before_title.as_deref(), feed_text);
        feed_option(hasher, self.before_workload_hours.map(i64::from), feed_i64);
        feed_option(hasher, self.before_archived, feed_bool);
        feed_option(hasher, self.before_version, feed_i64);
        feed_option(hasher, self.before_updated_at, feed_instant);
        feed_text(hasher, &self.after_title);
        feed_i64(hasher, i64::from(self.after_workload_hours));
        feed_bool(hasher, self.after_archived);
        feed_i64(hasher, self.after_version);
        feed_instant(hasher, self.after_updated_at);
    }
}

impl Canonical for StoredEvidence {
    fn feed(&self, hasher: &mut Sha256) {
        feed_i64(hasher, self.seq);
        feed_option(hasher, self.protocol_revision.as_deref(), feed_text);
        feed_option(hasher, self.client_name.as_deref(), feed_text);
        feed_option(hasher, self.client_version.as_deref(), feed_text);
        feed_text(hasher, &self.surface_hash);
        feed_option(hasher, self.approval.as_deref(), feed_text);
        feed_option(hasher, self.approval_question.as_deref(), feed_text);
        feed_option(hasher, self.approval_shown_version, feed_i64);
        feed_option(hasher, self.approval_answer.as_deref(), feed_text);
        feed_option(hasher, self.approval_answered_at, feed_instant);
    }
}

impl Canonical for StoredCounter {
    fn feed(&self, hasher: &mut Sha256) {
        feed_text(hasher, &self.catalog);
        feed_i64(hasher, self.active_courses);
    }
}

/// One table's count and running checksum.
#[derive(Debug, Clone)]
struct TableSum {
    table: &'static str,
    rows: u64,
    hasher: Sha256,
}

impl TableSum {
    fn new(table: &'static str) -> Self {
        let mut hasher = Sha256::new();
        feed_text(&mut hasher, table);
        Self { table, rows: 0, hasher }
    }

    fn add(&mut self, row: &impl Canonical) {
        self.rows += 1;
        row.feed(&mut self.hasher);
    }

    fn digest(&self) -> [u8; 32] {
        self.hasher.clone().finalize().into()
    }
}

/// The five tables' sums, in a fixed order.
#[derive(Debug, Clone)]
struct Sums {
    courses: TableSum,
    creations: TableSum,
    history: TableSum,
    evidence: TableSum,
    counters: TableSum,
}

impl Sums {
    fn new() -> Self {
        Self {
            courses: TableSum::new("courses"),
            creations: TableSum::new("course_creations"),
            history: TableSum::new("course_history"),
            evidence: TableSum::new("course_history_evidence"),
            counters: TableSum::new("catalog_counters"),
        }
    }

    fn tables(&self) -> [&TableSum; 5] {
        [&self.courses, &self.creations, &self.history, &self.evidence, &self.counters]
    }

    fn checksum(&self) -> String {
        let mut hasher = Sha256::new();
        for table in self.tables() {
            hasher.update(table.rows.to_le_bytes());
            hasher.update(table.digest());
        }
        hex(&hasher.finalize())
    }

    fn into_report(self) -> MigrationReport {
        MigrationReport {
            checksum: self.checksum(),
            courses: self.courses.rows,
            creations: self.creations.rows,
            history: self.history.rows,
            evidence: self.evidence.rows,
            catalogs: self.counters.rows,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Streams `$query` on either connection, calling `$each` with every row in order: SQLite steps
/// its statement; PostgreSQL uses libpq's row-by-row mode, so neither holds a table in memory.
macro_rules! for_each_row {
    ($connection:expr, $query:expr, $row:ty, $failing:literal, |$item:ident| $each:expr) => {{
        // The query is built in each arm: its `as_select()` is typed by the backend.
        match $connection {
            SqlConnection::Sqlite(inner) => {
                for $item in $query.load_iter::<$row, DefaultLoadingMode>(&mut **inner).map_err(step($failing))? {
                    let $item = $item.map_err(step($failing))?;
                    $each;
                }
            }
            SqlConnection::Postgres(inner) => {
                for $item in $query.load_iter::<$row, PgRowByRowLoadingMode>(&mut **inner).map_err(step($failing))? {
                    let $item = $item.map_err(step($failing))?;
                    $each;
                }
            }
        }
    }};
}

/// Runs `$statement` (built from `$connection`'s concrete type) on either backend.
macro_rules! execute {
    ($connection:expr, $failing:literal, |$concrete:ident| $statement:expr) => {
        match $connection {
            SqlConnection::Sqlite(inner) => {
                let $concrete = &mut **inner;
                $statement.map_err(step($failing))
            }
            SqlConnection::Postgres(inner) => {
                let $concrete = &mut **inner;
                $statement.map_err(step($failing))
            }
        }
    };
}

fn title_key_rule(connection: &mut SqlConnection<'_>) -> Result<i64, MigrateError> {
    use crate::store::sql::schema::title_key_rule;
    execute!(connection, "reading the title key rule", |concrete| title_key_rule::table
        .select(title_key_rule::version)
        .first::<i64>(concrete))
}

fn count_rows(connection: &mut SqlConnection<'_>) -> Result<[u64; 5], MigrateError> {
    let counts: [i64; 5] = execute!(connection, "counting rows", |concrete| (|| -> QueryResult<[i64; 5]> {
        Ok([
            courses::table.count().get_result(&mut *concrete)?,
            course_creations::table.count().get_result(&mut *concrete)?,
            course_history::table.count().get_result(&mut *concrete)?,
            course_history_evidence::table.count().get_result(&mut *concrete)?,
            catalog_counters::table.count().get_result(&mut *concrete)?,
        ])
    })())?;
    Ok(counts.map(|count| u64::try_from(count).unwrap_or(0)))
}

/// Refuses a non-empty target, or empties it (in the copy's transaction) when asked to.
fn make_room(target: &mut SqlConnection<'_>, non_empty: NonEmptyTarget) -> Result<(), MigrateError> {
    let [courses_count, creations, history, evidence, counters] = count_rows(target)?;
    if courses_count + creations + history + evidence + counters == 0 {
        return Ok(());
    }
    if non_empty == NonEmptyTarget::Refuse {
        return Err(MigrateError::TargetNotEmpty { courses: courses_count, history });
    }
    match target {
        SqlConnection::Sqlite(connection) => connection.batch_execute(
            // The title search index is external content over `courses`, with no delete trigger
            // (courses are never deleted): it is emptied by its own command first.
            "INSERT INTO courses_title_search (courses_title_search) VALUES ('delete-all');
             DELETE FROM course_history_evidence;
             DELETE FROM course_history;
             DELETE FROM course_creations;
             DELETE FROM courses;
             DELETE FROM catalog_counters;
             DELETE FROM sqlite_sequence WHERE name IN ('courses', 'course_history');",
        ),
        SqlConnection::Postgres(connection) => connection.batch_execute(
            "TRUNCATE course_history_evidence, course_history, course_creations, courses, catalog_counters RESTART IDENTITY",
        ),
    }
    .map_err(step("emptying the target"))
}

/// Writes `batch` (then clears it): PostgreSQL with one binary `COPY ... FROM STDIN`; SQLite with
/// one multi-row `INSERT` into the table's staging copy ([`stage`]).
macro_rules! flush {
    ($target:expr, $table:expr, $batch:expr, $progress:expr) => {{
        if !$batch.is_empty() {
            if $progress.stop_requested() {
                return Err(MigrateError::Interrupted);
            }
            let rows = $batch.len() as u64;
            match $target {
                SqlConnection::Sqlite(inner) => diesel::insert_into($table).values(&$batch).execute(&mut **inner),
                SqlConnection::Postgres(inner) => {
                    diesel::copy_from($table).from_insertable(&$batch).execute(&mut **inner)
                }
            }
            .map_err(step("writing to the target"))?;
            $batch.clear();
            $progress.advance(rows);
        }
    }};
}

/// On a SQLite target, makes `table` of the statements that follow an empty TEMP table of the
/// same columns, without index or trigger: an unqualified name finds the TEMP schema first, so
/// the copy's inserts append there, cheaply. [`unstage`] then moves every row into the real table
/// with ONE `INSERT ... SELECT` in staging order (the key order it was read in), so each index,
/// trigger and full-text index is maintained by a single statement: SQLite saves a page already
/// changed in the transaction into the statement journal once per statement that changes it
/// again, and thousands of batch `INSERT`s did so for the hot index pages again and again (ADR
/// 0053). Whatever indexes and triggers the schema has are kept and maintained. PostgreSQL
/// writes to the table directly (`COPY`).
fn stage(target: &mut SqlConnection<'_>, table: &'static str) -> Result<(), MigrateError> {
    if let SqlConnection::Sqlite(connection) = target {
        connection
            .batch_execute(&format!("CREATE TEMP TABLE \"{table}\" AS SELECT * FROM main.\"{table}\" WHERE 0;"))
            .map_err(step("staging the target's rows"))?;
    }
    Ok(())
}

/// Moves what [`stage`] collected into the real table (SQLite), and drops the staging table.
fn unstage(target: &mut SqlConnection<'_>, table: &'static str) -> Result<(), MigrateError> {
    if let SqlConnection::Sqlite(connection) = target {
        connection
            .batch_execute(&format!(
                "INSERT INTO main.\"{table}\" SELECT * FROM temp.\"{table}\" ORDER BY rowid;
                 DROP TABLE temp.\"{table}\";"
            ))
            .map_err(step("writing to the target"))?;
    }
    Ok(())
}

/// Copies every table, source to target, in key order; returns the source's sums.
fn copy_everything(
    source: &mut SqlConnection<'_>,
    target: &mut SqlConnection<'_>,
    progress: &dyn MigrationProgress,
) -> Result<Sums, MigrateError> {
    let total: u64 = count_rows(source)?.iter().sum();
    progress.phase(MigrationPhase::Copy, total);
    let mut sums = Sums::new();

    // Parents before children: creations and history reference courses; evidence references history.
    stage(target, "courses")?;
    let mut batch: Vec<StoredCourse> = Vec::with_capacity(BATCH_ROWS);
    for_each_row!(
        source,
        courses::table.order(courses::position.asc()).select(StoredCourse::as_select()),
        StoredCourse,
        "reading the source's courses",
        |row| {
            sums.courses.add(&row);
            batch.push(row);
            if batch.len() == BATCH_ROWS {
                flush!(target, courses::table, batch, progress);
            }
        }
    );
    flush!(target, courses::table, batch, progress);

    unstage(target, "courses")?;
    stage(target, "course_creations")?;
    let mut batch: Vec<StoredCreation> = Vec::with_capacity(BATCH_ROWS);
    for_each_row!(
        source,
        creation_order(course_creations::table).select(StoredCreation::as_select()),
        StoredCreation,
        "reading the source's idempotent creations",
        |row| {
            sums.creations.add(&row);
            batch.push(row);
            if batch.len() == BATCH_ROWS {
                flush!(target, course_creations::table, batch, progress);
            }
        }
    );
    flush!(target, course_creations::table, batch, progress);

    unstage(target, "course_creations")?;
    stage(target, "course_history")?;
    let mut batch: Vec<StoredHistory> = Vec::with_capacity(BATCH_ROWS);
    for_each_row!(
        source,
        course_history::table.order(course_history::seq.asc()).select(StoredHistory::as_select()),
        StoredHistory,
        "reading the source's history",
        |row| {
            sums.history.add(&row);
            batch.push(row);
            if batch.len() == BATCH_ROWS {
                flush!(target, course_history::table, batch, progress);
            }
        }
    );
    flush!(target, course_history::table, batch, progress);

    unstage(target, "course_history")?;
    stage(target, "course_history_evidence")?;
    let mut batch: Vec<StoredEvidence> = Vec::with_capacity(BATCH_ROWS);
    for_each_row!(
        source,
        course_history_evidence::table.order(course_history_evidence::seq.asc()).select(StoredEvidence::as_select()),
        StoredEvidence,
        "reading the source's history evidence",
        |row| {
            sums.evidence.add(&row);
            batch.push(row);
            if batch.len() == BATCH_ROWS {
                flush!(target, course_history_evidence::table, batch, progress);
            }
        }
    );
    flush!(target, course_history_evidence::table, batch, progress);

    unstage(target, "course_history_evidence")?;
    // The copy runs without the counting trigger (PostgreSQL: see `write_transaction`; SQLite:
    // set aside with the indexes, and each counter counted once after the rows, ADR 0059); the
    // source's own counters are copied (a catalog whose courses are all archived keeps its zero
    // row), and `verify` checks each against the rows.
    let mut counters: Vec<StoredCounter> = Vec::new();
    for_each_row!(
        source,
        catalog_counters::table.order(catalog_counters::catalog.asc()).select(StoredCounter::as_select()),
        StoredCounter,
        "reading the source's counters",
        |row| {
            sums.counters.add(&row);
            counters.push(row);
        }
    );
    for counter in &counters {
        execute!(target, "writing the target's counters", |concrete| diesel::insert_into(catalog_counters::table)
            .values(counter)
            .on_conflict(catalog_counters::catalog)
            .do_update()
            .set(catalog_counters::active_courses.eq(counter.active_courses))
            .execute(concrete))?;
    }
    progress.advance(counters.len() as u64);

    let high_water =
        (counter_high_water(source, "courses", "position")?, counter_high_water(source, "course_history", "seq")?);
    continue_counters(target, "courses", "position", high_water.0)?;
    continue_counters(target, "course_history", "seq", high_water.1)?;
    Ok(sums)
}

/// `course_creations` ordered by [`creation_order`].
type CreationOrder = diesel::dsl::Order<
    course_creations::table,
    (
        diesel::dsl::Asc<course_creations::catalog>,
        diesel::dsl::Asc<course_creations::course_id>,
        diesel::dsl::Asc<course_creations::idempotency_key>,
    ),
>;

/// The idempotent creations in an order both backends give alike: byte order of the catalog and
/// the course id (both `COLLATE "C"` on PostgreSQL, BINARY on SQLite; one creation per course),
/// the key last (only a tie-breaker; PostgreSQL's default collation may order keys otherwise).
fn creation_order(table: course_creations::table) -> CreationOrder {
    table.order((
        course_creations::catalog.asc(),
        course_creations::course_id.asc(),
        course_creations::idempotency_key.asc(),
    ))
}

#[derive(QueryableByName)]
struct HighWater {
    #[diesel(sql_type = BigInt)]
    value: i64,
}

/// The highest position (or sequence number) the source ever handed out: its largest row, or its
/// counter when that went further (PostgreSQL draws values in transactions that roll back; SQLite
/// keeps `AUTOINCREMENT`'s in `sqlite_sequence`). Never reused on the target either.
fn counter_high_water(
    source: &mut SqlConnection<'_>,
    table: &'static str,
    column: &'static str,
) -> Result<i64, MigrateError> {
    let query = match source {
        SqlConnection::Sqlite(_) => format!(
            "SELECT MAX(COALESCE((SELECT MAX({column}) FROM {table}), 0), \
                        COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '{table}'), 0)) AS value"
        ),
        SqlConnection::Postgres(_) => format!(
            "SELECT GREATEST(COALESCE((SELECT MAX({column}) FROM {table}), 0), \
                   COALESCE(pg_sequence_last_value(pg_get_serial_sequence('{table}', '{column}')::regclass), 0))::BIGINT AS value"
        ),
    };
    execute!(source, "reading the source's counters", |concrete| diesel::sql_query(&query)
        .get_result::<HighWater>(concrete)
        .map(|row| row.value))
}

/// Makes the target's next position (or sequence number) follow `high_water`.
fn continue_counters(
    target: &mut SqlConnection<'_>,
    table: &'static str,
    column: &'static str,
    high_water: i64,
) -> Result<(), MigrateError> {
    if high_water <= 0 {
        return Ok(());
    }
    match target {
        SqlConnection::Sqlite(connection) => diesel::sql_query("DELETE FROM sqlite_sequence WHERE name = ?")
            .bind::<diesel::sql_types::Text, _>(table)
            .execute(&mut **connection)
            .and_then(|_| {
                diesel::sql_query("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)")
                    .bind::<diesel::sql_types::Text, _>(table)
                    .bind::<BigInt, _>(high_water)
                    .execute(&mut **connection)
            })
            .map(|_| ()),
        SqlConnection::Postgres(connection) => {
            diesel::sql_query(format!("SELECT setval(pg_get_serial_sequence('{table}', '{column}'), $1, true)"))
                .bind::<BigInt, _>(high_water)
                .execute(&mut **connection)
                .map(|_| ())
        }
    }
    .map_err(step("continuing the target's counters"))
}

/// Reads the target back (inside the copy's transaction) and compares it with what was read from
/// the source; checks every catalog's counter against its active courses.
fn verify(target: &mut SqlConnection<'_>, source: &Sums, progress: &dyn MigrationProgress) -> Result<(), MigrateError> {
    progress.phase(MigrationPhase::Verify, source.tables().iter().map(|table| table.rows).sum());
    let written = read_sums(target, progress)?;
    compare(source, &written)?;
    check_counters(target)
}

/// The sums of every table of `connection`, read in key order.
fn read_sums(connection: &mut SqlConnection<'_>, progress: &dyn MigrationProgress) -> Result<Sums, MigrateError> {
    let mut sums = Sums::new();
    let mut seen = 0_u64;
    let tick = |seen: &mut u64| -> Result<(), MigrateError> {
        *seen += 1;
        if (*seen).is_multiple_of(BATCH_ROWS as u64) {
            if progress.stop_requested() {
                return Err(MigrateError::Interrupted);
            }
            progress.advance(BATCH_ROWS as u64);
        }
        Ok(())
    };
    for_each_row!(
        connection,
        courses::table.order(courses::position.asc()).select(StoredCourse::as_select()),
        StoredCourse,
        "reading courses back",
        |row| {
            sums.courses.add(&row);
            tick(&mut seen)?;
        }
    );
    for_each_row!(
        connection,
        creation_order(course_creations::table).select(StoredCreation::as_select()),
        StoredCreation,
        "reading idempotent creations back",
        |row| {
            sums.creations.add(&row);
            tick(&mut seen)?;
        }
    );
    for_each_row!(
        connection,
        course_history::table.order(course_history::seq.asc()).select(StoredHistory::as_select()),
        StoredHistory,
        "reading the history back",
        |row| {
            sums.history.add(&row);
            tick(&mut seen)?;
        }
    );
    for_each_row!(
        connection,
        course_history_evidence::table.order(course_history_evidence::seq.asc()).select(StoredEvidence::as_select()),
        StoredEvidence,
        "reading the evidence back",
        |row| {
            sums.evidence.add(&row);
            tick(&mut seen)?;
        }
    );
    for_each_row!(
        connection,
        catalog_counters::table.order(catalog_counters::catalog.asc()).select(StoredCounter::as_select()),
        StoredCounter,
        "reading counters back",
        |row| {
            sums.counters.add(&row);
            tick(&mut seen)?;
        }
    );
    progress.advance(seen % BATCH_ROWS as u64);
    Ok(sums)
}

/// Fails on the first table whose count or digest differs, then on the overall checksum.
fn compare(source: &Sums, target: &Sums) -> Result<(), MigrateError> {
    for (read, written) in source.tables().into_iter().zip(target.tables()) {
        if read.rows != written.rows {
            return Err(MigrateError::Mismatch {
                table: read.table,
                source_value: format!("{} rows", read.rows),
                target_value: format!("{} rows", written.rows),
            });
        }
        if read.digest() != written.digest() {
            return Err(MigrateError::Mismatch {
                table: read.table,
                source_value: format!("sha256 {}", hex(&read.digest())),
                target_value: format!("sha256 {}", hex(&written.digest())),
            });
        }
    }
    let (read, written) = (source.checksum(), target.checksum());
    if read != written {
        return Err(MigrateError::Mismatch { table: "checksum", source_value: read, target_value: written });
    }
    Ok(())
}

#[derive(QueryableByName)]
struct CounterCheck {
    #[diesel(sql_type = diesel::sql_types::Text)]
    catalog: String,
    #[diesel(sql_type = BigInt)]
    counted: i64,
    #[diesel(sql_type = BigInt)]
    actual: i64,
}

/// Every catalog's counter equals its active courses (a source whose counters had drifted would
/// otherwise hand its error on).
fn check_counters(target: &mut SqlConnection<'_>) -> Result<(), MigrateError> {
    let active = match target {
        SqlConnection::Sqlite(_) => "archived = 0",
        SqlConnection::Postgres(_) => "NOT archived",
    };
    let query = format!(
        "SELECT catalog, counted, actual FROM (
             SELECT COALESCE(counters.catalog, actives.catalog) AS catalog,
                    COALESCE(counters.active_courses, 0) AS counted,
                    COALESCE(actives.active, 0) AS actual
             FROM catalog_counters AS counters
             FULL OUTER JOIN (SELECT catalog, COUNT(*) AS active FROM courses WHERE {active} GROUP BY catalog) AS actives
                 ON actives.catalog = counters.catalog
         ) AS compared WHERE counted <> actual LIMIT 1"
    );
    let wrong =
        execute!(target, "checking the counters", |concrete| diesel::sql_query(&query).load::<CounterCheck>(concrete))?;
    match wrong.into_iter().next() {
        None => Ok(()),
        Some(CounterCheck { catalog, counted, actual }) => Err(MigrateError::Counter { catalog, counted, actual }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn course(position: i64, title: &str) -> StoredCourse {
        let now = Timestamp::from_instant(time::OffsetDateTime::UNIX_EPOCH);
        StoredCourse {
            position,
            catalog: "padrao".to_owned(),
            id: format!("00000000-0000-4000-8000-{position:012}"),
            title: title.to_owned(),
            title_key: title.to_lowercase(),
            workload_hours: 8,
            archived: false,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    fn sums_of(rows: &[StoredCourse]) -> Sums {
        let mut sums = Sums::new();
        for row in rows {
            sums.courses.add(row);
        }
        sums
    }

    #[test]
    fn identical_rows_verify() {
        let rows = [course(1, "Rust"), course(2, "Go")];
        assert!(compare(&sums_of(&rows), &sums_of(&rows)).is_ok());
    }

    #[test]
    fn a_tampered_field_fails_the_verification_with_the_table_named() {
        let rows = [course(1, "Rust"), course(2, "Go")];
        let mut tampered = rows.clone();
        tampered[1].version = 2;
        match compare(&sums_of(&rows), &sums_of(&tampered)) {
            Err(MigrateError::Mismatch { table: "courses", source_value, target_value }) => {
                assert!(source_value.starts_with("sha256 ") && source_value != target_value);
            }
            other => panic!("expected a mismatch of courses, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_row_fails_the_verification_by_its_count() {
        let rows = [course(1, "Rust"), course(2, "Go")];
        match compare(&sums_of(&rows), &sums_of(&rows[..1])) {
            Err(MigrateError::Mismatch { table: "courses", source_value, target_value }) => {
                assert_eq!((source_value.as_str(), target_value.as_str()), ("2 rows", "1 rows"));
            }
            other => panic!("expected a count mismatch, got {other:?}"),
        }
    }

    #[test]
    fn rows_in_another_order_do_not_verify() {
        let rows = [course(1, "Rust"), course(2, "Go")];
        let swapped = [rows[1].clone(), rows[0].clone()];
        assert!(compare(&sums_of(&rows), &sums_of(&swapped)).is_err());
    }

    #[test]
    fn text_boundaries_are_part_of_the_checksum() {
        // "ab" + "c" and "a" + "bc" must not hash alike: every text carries its length.
        let mut first = course(1, "x");
        first.title = "ab".to_owned();
        first.title_key = "c".to_owned();
        let mut second = course(1, "x");
        second.title = "a".to_owned();
        second.title_key = "bc".to_owned();
        assert!(compare(&sums_of(&[first]), &sums_of(&[second])).is_err());
    }

    #[test]
    fn an_instant_a_millisecond_apart_does_not_verify() {
        let first = course(1, "Rust");
        let mut second = first.clone();
        second.updated_at = Timestamp::from_instant(time::OffsetDateTime::UNIX_EPOCH + time::Duration::milliseconds(1));
        assert!(compare(&sums_of(&[first]), &sums_of(&[second])).is_err());
    }
}

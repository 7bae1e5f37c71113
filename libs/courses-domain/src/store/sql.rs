//! What the two SQL stores share, once (ADR 0033): the schema, the rows and their mapping to
//! [`Course`] and [`HistoryEntry`], every query and write statement, how a write failure is
//! recognised ([`write_error`]), the title rekey of ADR 0025, and the one implementation of
//! [`CourseStore`], for any [`SqlBackend`].
//!
//! Each statement function takes a [`SqlConnection`], a borrowed connection of either backend, and
//! builds its statement once in the source; `on_backend!` compiles it for each backend (no boxed
//! queries, no SQL rebuilt per call: diesel's statement caches keep working by type).
//!
//! What differs per backend is named here and implemented in each backend's module, which this
//! one never imports: [`SqlBackend`] (how a read gets a connection, how a write runs, the
//! probes), the third step of a search ([`ContainingSearch`], on each backend's connection), the
//! active-course predicate ([`ActiveCourses`], each partial index's own text), the stored form of
//! an instant ([`StoredTimestamp`]), and how a SQLite unique violation is named
//! ([`SqlConnection::name_title_violation`]).

mod opaque;
pub(crate) mod point_reads;
pub(crate) mod read_pool;

use diesel::backend::Backend;
use diesel::connection::SimpleConnection;
use diesel::deserialize::{self, FromSql};
use diesel::expression::{Expression, ValidGrouping, is_aggregate};
use diesel::pg::{Pg, PgConnection, PgValue};
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::result::{DatabaseErrorInformation, DatabaseErrorKind, Error as DieselError};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::{Bool, Text, Timestamptz};
use diesel::sqlite::{Sqlite, SqliteConnection};
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

use self::opaque::{OpaqueLimit, OpaqueText};
use crate::rules::{
    ApprovalReceipt, CatalogName, Course, CourseId, CourseRevision, CourseTitle, CreationFingerprint, Evidence,
    HistoryEntry, IdempotencyKey, PageCursor, Provenance, Rekey, TitleSearchKey, WorkloadHours,
};
use crate::store::port::{
    BulkImport, ChangeFollower, CourseStore, ExportEnd, ExportSink, IdempotentInsert, ImportOutcome, PendingRead,
    PoolStatus, RemoteChange, Replaced, StoreError, Unwritable, WriteError,
};

/// The partial unique index on active courses' title keys, by the same name on both backends: a
/// violation of it, and only of it, is [`WriteError::DuplicateTitle`].
pub(crate) const TITLE_INDEX: &str = "courses_active_title_key";

/// A borrowed connection of either backend: what every shared statement runs on.
pub(crate) enum SqlConnection<'connection> {
    /// A SQLite file's connection (a pooled reader, or the writer thread's).
    Sqlite(&'connection mut SqliteConnection),
    /// A PostgreSQL connection from the pool.
    Postgres(&'connection mut PgConnection),
}

/// Runs `$body` with `$connection` bound to the concrete connection of either backend: one source,
/// compiled once per backend, so each statement keeps its static type (and diesel's cache by type).
macro_rules! on_backend {
    ($connection:expr, |$concrete:ident| $body:expr) => {
        match $connection {
            SqlConnection::Sqlite(inner) => {
                let $concrete = &mut **inner;
                $body
            }
            SqlConnection::Postgres(inner) => {
                let $concrete = &mut **inner;
                $body
            }
        }
    };
}

pub(crate) mod schema {
    diesel::table! {
        use diesel::sql_types::*;
        use super::super::StoredTimestamp;

        courses (position) {
            position -> BigInt,
            catalog -> Text,
            id -> Text,
            title -> Text,
            title_key -> Text,
            workload_hours -> Integer,
            archived -> Bool,
            version -> BigInt,
            created_at -> StoredTimestamp,
            updated_at -> StoredTimestamp,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use super::super::StoredTimestamp;

        course_creations (catalog, idempotency_key) {
            catalog -> Text,
            idempotency_key -> Text,
            fingerprint -> Text,
            course_id -> Text,
            created_at -> StoredTimestamp,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use super::super::StoredTimestamp;

        course_history (seq) {
            seq -> BigInt,
            catalog -> Text,
            course_id -> Text,
            author -> Text,
            tool -> Text,
            arguments -> Text,
            before_title -> Nullable<Text>,
            before_workload_hours -> Nullable<Integer>,
            before_archived -> Nullable<Bool>,
            before_version -> Nullable<BigInt>,
            before_updated_at -> Nullable<StoredTimestamp>,
            after_title -> Text,
            after_workload_hours -> Integer,
            after_archived -> Bool,
            after_version -> BigInt,
            after_updated_at -> StoredTimestamp,
        }
    }

    diesel::table! {
        use diesel::sql_types::*;
        use super::super::StoredTimestamp;

        course_history_evidence (seq) {
            seq -> BigInt,
            protocol_revision -> Nullable<Text>,
            client_name -> Nullable<Text>,
            client_version -> Nullable<Text>,
            surface_hash -> Text,
            approval -> Nullable<Text>,
            approval_question -> Nullable<Text>,
            approval_shown_version -> Nullable<BigInt>,
            approval_answer -> Nullable<Text>,
            approval_answered_at -> Nullable<StoredTimestamp>,
        }
    }

    diesel::joinable!(course_history_evidence -> course_history (seq));
    diesel::allow_tables_to_appear_in_same_query!(course_history, course_history_evidence);

    diesel::table! {
        title_key_rule (singleton) {
            singleton -> Integer,
            version -> BigInt,
        }
    }

    diesel::table! {
        catalog_counters (catalog) {
            catalog -> Text,
            active_courses -> BigInt,
        }
    }
}

use schema::{catalog_counters, course_creations, course_history, course_history_evidence, courses, title_key_rule};

/// The SQL type of a stored instant, which each backend keeps its own way (the on-disk formats of
/// existing databases are kept): SQLite as `TEXT`, RFC 3339 in UTC with milliseconds, fixed width
/// (text order is time order); PostgreSQL as `timestamptz`. (`pub` only because the `table!`
/// columns name it; this module is private to the crate.)
#[derive(Debug, Clone, Copy, Default, diesel::sql_types::SqlType, diesel::query_builder::QueryId)]
#[diesel(sqlite_type(name = "Text"))]
#[diesel(postgres_type(oid = 1184, array_oid = 1185))]
pub struct StoredTimestamp;

/// An instant as the stores read and write it ([`StoredTimestamp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, diesel::expression::AsExpression, diesel::deserialize::FromSqlRow)]
#[diesel(sql_type = StoredTimestamp)]
pub(crate) struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The instant (for the migration's checksum, ADR 0041).
    pub(crate) fn instant(self) -> OffsetDateTime {
        self.0
    }

    /// A stored instant made of `instant` (tests of the migration's verifier).
    #[cfg(test)]
    pub(crate) fn from_instant(instant: OffsetDateTime) -> Self {
        Self(instant)
    }
}

/// SQLite's stored instants: RFC 3339, UTC, millisecond precision, fixed width.
const SQLITE_TIMESTAMP_FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

impl ToSql<StoredTimestamp, Sqlite> for Timestamp {
    fn to_sql<'bytes>(&'bytes self, out: &mut Output<'bytes, '_, Sqlite>) -> serialize::Result {
        out.set_value(self.0.to_offset(time::UtcOffset::UTC).format(SQLITE_TIMESTAMP_FORMAT)?);
        Ok(IsNull::No)
    }
}

impl FromSql<StoredTimestamp, Sqlite> for Timestamp {
    fn from_sql(value: <Sqlite as Backend>::RawValue<'_>) -> deserialize::Result<Self> {
        let text = <String as FromSql<Text, Sqlite>>::from_sql(value)?;
        Ok(Self(PrimitiveDateTime::parse(&text, SQLITE_TIMESTAMP_FORMAT)?.assume_utc()))
    }
}

impl ToSql<StoredTimestamp, Pg> for Timestamp {
    fn to_sql<'bytes>(&'bytes self, out: &mut Output<'bytes, '_, Pg>) -> serialize::Result {
        <OffsetDateTime as ToSql<Timestamptz, Pg>>::to_sql(&self.0, out)
    }
}

impl FromSql<StoredTimestamp, Pg> for Timestamp {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        let instant = <OffsetDateTime as FromSql<Timestamptz, Pg>>::from_sql(value)?;
        Ok(Self(instant.to_offset(time::UtcOffset::UTC)))
    }
}

/// `WHERE` only active courses, in the very text of the partial indexes' predicate on each backend
/// (`archived = 0` on SQLite, `NOT archived` on PostgreSQL), so that both planners use them. A
/// constant of SQL with a static query id: no bound parameter, no SQL rebuilt per query.
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct ActiveCourses;

impl Expression for ActiveCourses {
    type SqlType = Bool;
}

impl<GroupBy> ValidGrouping<GroupBy> for ActiveCourses {
    type IsAggregate = is_aggregate::Never;
}

impl diesel::AppearsOnTable<courses::table> for ActiveCourses {}

impl QueryFragment<Sqlite> for ActiveCourses {
    fn walk_ast<'query>(&'query self, mut out: AstPass<'_, 'query, Sqlite>) -> QueryResult<()> {
        out.push_sql("archived = 0");
        Ok(())
    }
}

impl QueryFragment<Pg> for ActiveCourses {
    fn walk_ast<'query>(&'query self, mut out: AstPass<'_, 'query, Pg>) -> QueryResult<()> {
        out.push_sql("NOT archived");
        Ok(())
    }
}

/// `treat_none_as_default_value = false`: no field may be a DEFAULT, so diesel writes a batch of
/// rows as one multi-row `INSERT` on SQLite too; without it, diesel inserts a SQLite batch row by
/// row, and each row's statement made FTS5 flush its index (ADR 0053).
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable, Insertable, AsChangeset)]
#[diesel(
    table_name = courses,
    check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg),
    treat_none_as_default_value = false
)]
pub(crate) struct CourseRow {
    /// The catalog the course is in (ADR 0035): set on every row written, filtered on every read.
    pub(crate) catalog: String,
    pub(crate) id: String,
    pub(crate) title: String,
    pub(crate) title_key: String,
    pub(crate) workload_hours: i32,
    pub(crate) archived: bool,
    pub(crate) version: i64,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
}

impl CourseRow {
    pub(crate) fn from_course(catalog: &CatalogName, course: &Course) -> Result<Self, StoreError> {
        Ok(Self {
            catalog: catalog.as_str().to_owned(),
            id: course.id().to_string(),
            title: course.title().as_str().to_owned(),
            title_key: course.title().comparison_key(),
            workload_hours: i32::from(course.workload_hours().get()),
            archived: course.is_archived(),
            version: i64::try_from(course.version()).map_err(|error| StoreError::new("version out of range", error))?,
            created_at: Timestamp(course.created_at()),
            updated_at: Timestamp(course.updated_at()),
        })
    }

    pub(crate) fn into_course(self) -> Result<Course, StoreError> {
        let invalid = |_| StoreError::message("a stored course breaks the catalog's rules");
        Ok(Course::from_stored(
            CourseId::parse(&self.id).map_err(|_| StoreError::message("a stored course id is invalid"))?,
            CourseTitle::from_stored(self.title)
                .map_err(|_| StoreError::message("a stored course title is invalid"))?,
            WorkloadHours::parse(i64::from(self.workload_hours))
                .map_err(|_| StoreError::message("a stored workload is invalid"))?,
            self.archived,
            u64::try_from(self.version).map_err(invalid)?,
            self.created_at.0,
            self.updated_at.0,
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
    updated_at: Timestamp,
}

impl Snapshot {
    /// The course at this revision (id and creation time never change).
    fn into_course(self, course: &Course) -> Result<Course, StoreError> {
        CourseRow {
            catalog: String::new(),
            id: course.id().to_string(),
            title_key: String::new(),
            title: self.title,
            workload_hours: self.workload_hours,
            archived: self.archived,
            version: self.version,
            created_at: Timestamp(course.created_at()),
            updated_at: self.updated_at,
        }
        .into_course()
    }
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = course_history, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
struct HistoryRow {
    seq: i64,
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

/// A history entry's evidence (ADR 0037), in its own table: an entry written before evidence
/// was recorded has no row there, and reads back as "not recorded".
#[derive(Debug, Default, Queryable, Selectable, Insertable)]
#[diesel(table_name = course_history_evidence, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
struct EvidenceColumns {
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

const APPROVAL_ASKED: &str = "asked";
const APPROVAL_NOT_ASKED: &str = "not_asked";

impl EvidenceColumns {
    fn of(seq: i64, evidence: &Evidence) -> QueryResult<Self> {
        let mut columns = Self {
            seq,
            protocol_revision: evidence.protocol_revision().map(str::to_owned),
            client_name: evidence.client_name().map(str::to_owned),
            client_version: evidence.client_version().map(str::to_owned),
            surface_hash: evidence.surface_hash().to_owned(),
            ..Self::default()
        };
        match evidence.approval() {
            None => {}
            Some(ApprovalReceipt::NotAsked) => columns.approval = Some(APPROVAL_NOT_ASKED.to_owned()),
            Some(ApprovalReceipt::Asked { question, shown_version, answer, answered_at }) => {
                columns.approval = Some(APPROVAL_ASKED.to_owned());
                columns.approval_question = Some(question.clone());
                columns.approval_shown_version = Some(
                    i64::try_from(*shown_version)
                        .map_err(|error| diesel::result::Error::SerializationError(Box::new(error)))?,
                );
                columns.approval_answer = Some(answer.clone());
                columns.approval_answered_at = Some(Timestamp(*answered_at));
            }
        }
        Ok(columns)
    }

    fn into_evidence(self) -> Result<Evidence, StoreError> {
        let evidence = Evidence::new(self.protocol_revision, self.client_name, self.client_version, self.surface_hash);
        let approval = match (
            self.approval.as_deref(),
            self.approval_question,
            self.approval_shown_version,
            self.approval_answer,
            self.approval_answered_at,
        ) {
            (None, None, None, None, None) => return Ok(evidence),
            (Some(APPROVAL_NOT_ASKED), None, None, None, None) => ApprovalReceipt::NotAsked,
            (Some(APPROVAL_ASKED), Some(question), Some(shown_version), Some(answer), Some(answered_at)) => {
                let shown_version =
                    u64::try_from(shown_version).map_err(|error| StoreError::new("negative shown version", error))?;
                ApprovalReceipt::asked(question, shown_version, answer, answered_at.0)
            }
            _ => return Err(StoreError::message("a stored approval receipt is incomplete")),
        };
        Ok(evidence.with_approval(approval))
    }
}

impl HistoryRow {
    fn into_entry(
        self,
        evidence: Option<EvidenceColumns>,
        course: &Course,
    ) -> Result<(HistoryEntry, PageCursor), StoreError> {
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
            provenance: match evidence {
                Some(evidence) => {
                    Provenance::new(self.author, self.tool, self.arguments).with_evidence(evidence.into_evidence()?)
                }
                None => Provenance::new(self.author, self.tool, self.arguments),
            },
            before,
            after,
        };
        Ok((entry, PageCursor::after_position(position)))
    }
}

/// A revision, as the rows [`replace`] writes.
#[derive(Debug, Clone)]
struct RevisionRows {
    /// The stored course the write expects (its version is the compare-and-swap key).
    before: CourseRow,
    /// Its next revision.
    after: CourseRow,
}

impl RevisionRows {
    fn of(catalog: &CatalogName, revision: &CourseRevision) -> Result<Self, StoreError> {
        Ok(Self {
            before: CourseRow::from_course(catalog, revision.before())?,
            after: CourseRow::from_course(catalog, revision.after())?,
        })
    }
}

/// What a write changes, as a backend's locks and change notices need to know it.
#[derive(Debug, Clone)]
pub(crate) struct ChangeSummary {
    /// The catalog of the course written.
    pub(crate) catalog: String,
    /// The course written.
    pub(crate) course_id: String,
    /// True when the write adds to or removes from the active set (a creation, an archiving).
    pub(crate) changes_active_set: bool,
    /// True when the listing changes: the active set, or a title.
    pub(crate) changes_listing: bool,
}

impl ChangeSummary {
    fn creation(row: &CourseRow) -> Self {
        Self {
            catalog: row.catalog.clone(),
            course_id: row.id.clone(),
            changes_active_set: true,
            changes_listing: true,
        }
    }

    fn revision(rows: &RevisionRows) -> Self {
        let changes_active_set = rows.before.archived != rows.after.archived;
        Self {
            catalog: rows.after.catalog.clone(),
            course_id: rows.after.id.clone(),
            changes_active_set,
            changes_listing: changes_active_set || rows.before.title != rows.after.title,
        }
    }
}

/// The outcome of a shared write: whether it wrote anything (so that a change notice is sent).
pub(crate) trait Written {
    /// True when the write stored something.
    fn wrote(&self) -> bool;

    /// Calls `announce` with each change this write made, for a backend's notices: by default
    /// the one change the write declared, if it stored something. A bulk write announces each
    /// course it stored instead ([`ImportWrite`]).
    fn announce(
        &self,
        declared: &ChangeSummary,
        announce: &mut dyn FnMut(&ChangeSummary) -> QueryResult<()>,
    ) -> QueryResult<()> {
        if self.wrote() { announce(declared) } else { Ok(()) }
    }
}

impl Written for () {
    fn wrote(&self) -> bool {
        true
    }
}

impl Written for Replaced {
    fn wrote(&self) -> bool {
        *self == Replaced::Done
    }
}

impl Written for Result<(), IdempotentInsert> {
    fn wrote(&self) -> bool {
        self.is_ok()
    }
}

/// What [`import_batch`] did: each course's outcome, and the change of each course it stored.
#[derive(Debug)]
pub(crate) struct ImportWrite {
    outcomes: Vec<ImportOutcome>,
    stored: Vec<ChangeSummary>,
}

impl Written for ImportWrite {
    fn wrote(&self) -> bool {
        !self.stored.is_empty()
    }

    fn announce(
        &self,
        _declared: &ChangeSummary,
        announce: &mut dyn FnMut(&ChangeSummary) -> QueryResult<()>,
    ) -> QueryResult<()> {
        self.stored.iter().try_for_each(announce)
    }
}

/// The outcome of [`SqlBackend::run_write`].
pub(crate) type WriteResult<T> = Result<T, WriteError>;

/// Shared statements that read, run on a connection a backend lends ([`SqlBackend::run_read`]).
pub(crate) trait SharedRead<T>: FnOnce(&mut SqlConnection<'_>) -> Result<T, StoreError> {}

impl<T, Read: FnOnce(&mut SqlConnection<'_>) -> Result<T, StoreError>> SharedRead<T> for Read {}

/// Shared statements that write, run where a backend runs its writes ([`SqlBackend::run_write`]).
pub(crate) trait SharedWrite<T>: FnOnce(&mut SqlConnection<'_>) -> QueryResult<T> + Send + 'static {}

impl<T, Write: FnOnce(&mut SqlConnection<'_>) -> QueryResult<T> + Send + 'static> SharedWrite<T> for Write {}

/// The one read each backend writes itself, on its own connection type (its text index differs):
/// the third step of a search, up to `limit` active courses of `catalog` whose title key contains
/// `key` (three characters or more).
pub(crate) trait ContainingSearch {
    /// # Errors
    /// The database's.
    fn title_keys_containing(&mut self, catalog: &CatalogName, key: &str, limit: i64) -> QueryResult<Vec<CourseRow>>;
}

/// What each backend does on its own connection before an import batch is checked and written
/// (only on the write path: a dry run reads on a pooled reader and changes no setting).
pub(crate) trait ImportBatchSetup {
    /// SQLite: a bigger page cache on the import's writer connection (ADR 0053). PostgreSQL: fresh
    /// statistics for `courses` once the table has grown by half since they were taken (ADR 0058).
    ///
    /// # Errors
    /// The database's.
    fn set_up_import_batch(&mut self) -> QueryResult<()>;
}

/// What differs between the two SQL stores, and only that (ADR 0033): how a read gets a
/// connection, how a write is run (SQLite: the writer thread's batches; PostgreSQL: a transaction
/// with the creation lock and a change notice), and the store-level probes. Every statement is in
/// this module; [`CourseStore`] is implemented once, for both, on top of this.
pub(crate) trait SqlBackend: Send + Sync + std::fmt::Debug + 'static {
    /// The backend's connection type.
    type Connection: diesel::r2d2::R2D2Connection + ContainingSearch + ImportBatchSetup + 'static;

    /// The pool of read connections, which [`CourseStore::pool_status`] reports on.
    fn pool(&self) -> &diesel::r2d2::Pool<diesel::r2d2::ConnectionManager<Self::Connection>>;

    /// Runs `read` on a connection of the pool.
    ///
    /// # Errors
    /// [`StoreError`] when no connection is available, or `read`'s own.
    fn run_read<T>(&self, read: impl SharedRead<T>) -> Result<T, StoreError>;

    /// Finds the course `id` with `read` (the shared statement, through [`run_read`](Self::run_read)).
    /// A backend that can answer from memory while that is provably current wraps `read` (SQLite's
    /// read cache, ADR 0034); the default just reads.
    ///
    /// # Errors
    /// `read`'s.
    fn find_through(
        &self,
        catalog: &CatalogName,
        id: CourseId,
        read: impl FnOnce() -> Result<Option<Course>, StoreError>,
    ) -> Result<Option<Course>, StoreError> {
        let _ = (catalog, id);
        read()
    }

    /// [`CourseStore::find_later`]; by default none (reads of one course go through
    /// [`find_through`](Self::find_through)).
    fn find_later(&self, catalog: &CatalogName, id: CourseId) -> Option<PendingRead> {
        let _ = (catalog, id);
        None
    }

    /// Runs `write`, a write described by `change`, atomically, with the backend's own locks and
    /// notices; `context` names it in a store failure.
    ///
    /// # Errors
    /// [`WriteError`]: a duplicate title (by [`write_error`]), an unwritable store, a failure.
    fn run_write<T>(&self, context: &'static str, change: ChangeSummary, write: impl SharedWrite<T>) -> WriteResult<T>
    where
        T: Written + Send + 'static;

    /// [`CourseStore::begin_bulk_import`]; by default none (the import goes batch by batch).
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

    /// [`CourseStore::reads_inline`]; by default false, as for any store behind a network.
    fn reads_inline(&self) -> bool {
        false
    }

    /// [`CourseStore::system_name`]: OpenTelemetry's `db.system.name` of this database.
    const SYSTEM_NAME: &'static str;

    /// [`CourseStore::writable`]; by default `Ok`, for a store that reports these failures per write.
    ///
    /// # Errors
    /// [`Unwritable`] naming the reason.
    fn writable(&self) -> Result<(), Unwritable> {
        Ok(())
    }

    /// [`CourseStore::follow_changes`].
    fn follow_changes(&self, on_change: Box<dyn Fn(RemoteChange) + Send>) -> ChangeFollower;
}

impl<Store: SqlBackend> CourseStore for Store {
    fn insert(&self, catalog: &CatalogName, course: &Course, provenance: &Provenance) -> Result<(), WriteError> {
        let row = CourseRow::from_course(catalog, course)?;
        let provenance = provenance.clone();
        self.run_write("cannot insert a course", ChangeSummary::creation(&row), move |connection| {
            insert(connection, &row, &provenance)
        })
    }

    fn insert_idempotent(
        &self,
        catalog: &CatalogName,
        course: &Course,
        key: &IdempotencyKey,
        fingerprint: &CreationFingerprint,
        provenance: &Provenance,
    ) -> Result<IdempotentInsert, WriteError> {
        let row = CourseRow::from_course(catalog, course)?;
        let change = ChangeSummary::creation(&row);
        let (key, fingerprint, provenance) = (key.clone(), fingerprint.clone(), provenance.clone());
        // Each backend makes the key's lookup and the insert one step (SQLite: the writer's
        // immediate transaction; PostgreSQL: the creation lock), so two retries of one key cannot
        // both find it unused.
        let outcome = self.run_write("cannot insert a course idempotently", change, move |connection| {
            insert_idempotent(connection, &row, &key, &fingerprint, &provenance)
        })?;
        Ok(match outcome {
            Ok(()) => IdempotentInsert::Inserted,
            Err(earlier) => earlier,
        })
    }

    fn replace(
        &self,
        catalog: &CatalogName,
        revision: &CourseRevision,
        provenance: &Provenance,
    ) -> Result<Replaced, WriteError> {
        let rows = RevisionRows::of(catalog, revision)?;
        let provenance = provenance.clone();
        self.run_write("cannot update a course", ChangeSummary::revision(&rows), move |connection| {
            replace(connection, &rows, &provenance)
        })
    }

    fn import_batch(
        &self,
        catalog: &CatalogName,
        courses: &[Course],
        provenance: &Provenance,
        dry_run: bool,
    ) -> Result<Vec<ImportOutcome>, WriteError> {
        let rows =
            courses.iter().map(|course| CourseRow::from_course(catalog, course)).collect::<Result<Vec<_>, _>>()?;
        if dry_run {
            return Ok(self
                .run_read(|connection| {
                    import_batch(connection, &rows, None)
                        .map_err(|error| StoreError::new("cannot check an import batch", error))
                })?
                .outcomes);
        }
        // Declared only for the backend's lock (a batch adds to the active set); the notices are
        // the courses stored ([`ImportWrite::announce`]).
        let declared = ChangeSummary {
            catalog: catalog.as_str().to_owned(),
            course_id: String::new(),
            changes_active_set: true,
            changes_listing: true,
        };
        let provenance = provenance.clone();
        let written = self.run_write("cannot import a batch of courses", declared, move |connection| {
            import_batch(connection, &rows, Some(&provenance))
        })?;
        Ok(written.outcomes)
    }

    fn begin_bulk_import(
        &self,
        catalog: &CatalogName,
        provenance: &Provenance,
    ) -> Result<Option<Box<dyn BulkImport + '_>>, WriteError> {
        SqlBackend::begin_bulk_import(self, catalog, provenance)
    }

    fn export(
        &self,
        catalog: &CatalogName,
        with_history: bool,
        page_size: usize,
        sink: &mut dyn ExportSink,
    ) -> Result<ExportEnd, StoreError> {
        self.run_read(|connection| export(connection, catalog, with_history, page_size.max(1), sink))
    }

    fn find(&self, catalog: &CatalogName, id: CourseId) -> Result<Option<Course>, StoreError> {
        self.find_through(catalog, id, || self.run_read(|connection| find(connection, catalog, id)))
    }

    fn find_later(&self, catalog: &CatalogName, id: CourseId) -> Option<PendingRead> {
        SqlBackend::find_later(self, catalog, id)
    }

    fn active_page(
        &self,
        catalog: &CatalogName,
        after: Option<PageCursor>,
        limit: usize,
    ) -> Result<Vec<(Course, PageCursor)>, StoreError> {
        self.run_read(|connection| active_page(connection, catalog, after, limit))
    }

    fn history_page(
        &self,
        catalog: &CatalogName,
        course: &Course,
        before: Option<PageCursor>,
        limit: usize,
    ) -> Result<Vec<(HistoryEntry, PageCursor)>, StoreError> {
        self.run_read(|connection| history_page(connection, catalog, course, before, limit))
    }

    fn count_active(&self, catalog: &CatalogName) -> Result<u64, StoreError> {
        self.run_read(|connection| count_active(connection, catalog))
    }

    fn search_active(
        &self,
        catalog: &CatalogName,
        key: &TitleSearchKey,
        limit: usize,
    ) -> Result<Vec<Course>, StoreError> {
        self.run_read(|connection| search_active(connection, catalog, key, limit))
    }

    fn reads_inline(&self) -> bool {
        SqlBackend::reads_inline(self)
    }

    fn system_name(&self) -> &'static str {
        Self::SYSTEM_NAME
    }

    fn writable(&self) -> Result<(), Unwritable> {
        SqlBackend::writable(self)
    }

    fn pool_status(&self) -> PoolStatus {
        let pool = self.pool();
        let state = pool.state();
        PoolStatus { max_size: pool.max_size(), connections: state.connections, idle: state.idle_connections }
    }

    fn follow_changes(&self, on_change: Box<dyn Fn(RemoteChange) + Send>) -> Option<ChangeFollower> {
        Some(SqlBackend::follow_changes(self, on_change))
    }
}

impl SqlConnection<'_> {
    /// `error`, the failure of a statement writing `row`, with the title index named when it is a
    /// violation of that index. PostgreSQL names the constraint itself. SQLite's extended code
    /// (`SQLITE_CONSTRAINT_UNIQUE`) does not say which index, and diesel keeps only that code and
    /// the message, so the store asks, in the same transaction (SQLite rolled back only the failed
    /// statement; the writer holds the write lock, so nothing changed since): is there another
    /// active course with this title key? Only then was it the title index (ADR 0033).
    fn name_title_violation(&mut self, error: DieselError, row: &CourseRow) -> DieselError {
        let Self::Sqlite(connection) = self else { return error };
        let DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, information) = error else { return error };
        if row.archived {
            return DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, information);
        }
        let holder = courses::table
            .filter(courses::catalog.eq(&row.catalog))
            .filter(ActiveCourses)
            .filter(courses::title_key.eq(&row.title_key))
            .filter(courses::id.ne(&row.id))
            .select(courses::id)
            .get_result::<String>(&mut **connection)
            .optional();
        let constraint = match holder {
            Ok(Some(_)) => Some(TITLE_INDEX),
            Ok(None) => None,
            Err(check) => {
                tracing::warn!(error = %check, "cannot tell which unique index a write violated");
                None
            }
        };
        DieselError::DatabaseError(
            DatabaseErrorKind::UniqueViolation,
            Box::new(NamedViolation { message: information.message().to_owned(), constraint }),
        )
    }
}

/// A unique violation with the constraint the store found it to be (SQLite, see
/// [`SqlConnection::name_title_violation`]).
#[derive(Debug)]
struct NamedViolation {
    message: String,
    constraint: Option<&'static str>,
}

impl DatabaseErrorInformation for NamedViolation {
    fn message(&self) -> &str {
        &self.message
    }
    fn details(&self) -> Option<&str> {
        None
    }
    fn hint(&self) -> Option<&str> {
        None
    }
    fn table_name(&self) -> Option<&str> {
        Some("courses")
    }
    fn column_name(&self) -> Option<&str> {
        None
    }
    fn constraint_name(&self) -> Option<&str> {
        self.constraint
    }
    fn statement_position(&self) -> Option<i32> {
        None
    }
}

/// The failure of a write, as the catalog sees it: a violation of [`TITLE_INDEX`] (by its name,
/// never by message text) is [`WriteError::DuplicateTitle`]; anything else is a store failure.
pub(crate) fn write_error(context: &'static str, error: DieselError) -> WriteError {
    match &error {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, information)
            if information.constraint_name() == Some(TITLE_INDEX) =>
        {
            WriteError::DuplicateTitle
        }
        _ => WriteError::Store(StoreError::new(context, error)),
    }
}

/// Inserts a new course and its history entry.
fn insert(connection: &mut SqlConnection<'_>, row: &CourseRow, provenance: &Provenance) -> QueryResult<()> {
    let inserted =
        on_backend!(connection, |concrete| diesel::insert_into(courses::table).values(row).execute(concrete));
    inserted.map_err(|error| connection.name_title_violation(error, row))?;
    record_history(connection, None, row, provenance)
}

/// Inserts a new course under `key` unless the key was used before. The caller holds whatever
/// makes the key's lookup and the insert one step (SQLite's write lock, PostgreSQL's creation
/// lock). `Ok(Err(earlier))` when the key was used: nothing was written.
fn insert_idempotent(
    connection: &mut SqlConnection<'_>,
    row: &CourseRow,
    key: &IdempotencyKey,
    fingerprint: &CreationFingerprint,
    provenance: &Provenance,
) -> QueryResult<Result<(), IdempotentInsert>> {
    let previous: Option<(String, String)> = on_backend!(connection, |concrete| course_creations::table
        .find((&row.catalog, key.as_str()))
        .select((course_creations::fingerprint, course_creations::course_id))
        .get_result(concrete)
        .optional())?;
    if let Some((previous_fingerprint, course_id)) = previous {
        if previous_fingerprint != fingerprint.as_str() {
            return Ok(Err(IdempotentInsert::KeyReused));
        }
        let original: CourseRow = on_backend!(connection, |concrete| courses::table
            .filter(courses::catalog.eq(&row.catalog))
            .filter(courses::id.eq(&course_id))
            .select(CourseRow::as_select())
            .get_result(concrete))?;
        return Ok(Err(IdempotentInsert::Replayed(
            original.into_course().map_err(|_| DieselError::QueryBuilderError("a stored course is invalid".into()))?,
        )));
    }
    insert(connection, row, provenance)?;
    on_backend!(connection, |concrete| diesel::insert_into(course_creations::table)
        .values((
            course_creations::catalog.eq(&row.catalog),
            course_creations::idempotency_key.eq(key.as_str()),
            course_creations::fingerprint.eq(fingerprint.as_str()),
            course_creations::course_id.eq(&row.id),
            course_creations::created_at.eq(&row.created_at),
        ))
        .execute(concrete))?;
    Ok(Ok(()))
}

/// Stores `rows` (one import batch, in file order) with one history entry each, or with
/// `provenance` `None` (a dry run) only tells what it would do. The caller holds whatever makes
/// the checks and the inserts one step (SQLite's write lock; PostgreSQL's creation lock, which
/// every creation and archiving of the catalog takes; a concurrent rename can still take a title,
/// and then the insert fails on the title index, by name, and the whole batch with it).
fn import_batch(
    connection: &mut SqlConnection<'_>,
    rows: &[CourseRow],
    provenance: Option<&Provenance>,
) -> QueryResult<ImportWrite> {
    use std::collections::{HashMap, HashSet};
    let Some(catalog) = rows.first().map(|row| row.catalog.clone()) else {
        return Ok(ImportWrite { outcomes: Vec::new(), stored: Vec::new() });
    };
    if provenance.is_some() {
        // Before the lookups: on PostgreSQL they are planned from the statistics this may renew.
        on_backend!(connection, |concrete| concrete.set_up_import_batch())?;
    }
    // Two reads per IMPORT_LOOKUP_IDS rows of the batch, each on a unique index, instead of two
    // per course (in pieces: a batch bigger than a backend's bound variables is read too).
    let mut present: HashMap<String, bool> = HashMap::with_capacity(rows.len());
    let mut held: HashSet<String> = HashSet::new();
    for piece in rows.chunks(IMPORT_LOOKUP_IDS) {
        let ids: Vec<&str> = piece.iter().map(|row| row.id.as_str()).collect();
        let found: Vec<(String, String)> = on_backend!(connection, |concrete| courses::table
            .filter(courses::id.eq_any(&ids))
            .select((courses::id, courses::catalog))
            .load(concrete))?;
        present.extend(found.into_iter().map(|(id, of_catalog)| (id, of_catalog == catalog)));
        let keys: Vec<&str> = piece.iter().filter(|row| !row.archived).map(|row| row.title_key.as_str()).collect();
        let taken: Vec<String> = on_backend!(connection, |concrete| courses::table
            .filter(courses::catalog.eq(&catalog))
            .filter(ActiveCourses)
            .filter(courses::title_key.eq_any(&keys))
            .select(courses::title_key)
            .load(concrete))?;
        held.extend(taken);
    }
    let mut outcomes = Vec::with_capacity(rows.len());
    let mut inserted: Vec<&CourseRow> = Vec::new();
    for row in rows {
        let outcome = match present.get(&row.id) {
            Some(true) => ImportOutcome::AlreadyPresent,
            Some(false) => ImportOutcome::IdTaken,
            None if !row.archived && held.contains(&row.title_key) => ImportOutcome::TitleTaken,
            None => {
                inserted.push(row);
                present.insert(row.id.clone(), true);
                if !row.archived {
                    held.insert(row.title_key.clone());
                }
                ImportOutcome::Inserted
            }
        };
        outcomes.push(outcome);
    }
    let mut stored = Vec::new();
    if let Some(provenance) = provenance {
        insert_imported_batch(connection, &inserted, provenance)?;
        stored = inserted.iter().map(|row| ChangeSummary::creation(row)).collect();
    }
    Ok(ImportWrite { outcomes, stored })
}

/// Ids (and title keys) an import batch looks up per statement: under SQLite's 32,766 bound
/// variables and PostgreSQL's 65,535 whatever the batch size (`--batch-size`).
const IMPORT_LOOKUP_IDS: usize = 10_000;

/// The page cache of the SQLite connection that writes an import's batches (ADR 0053).
pub(crate) const IMPORT_PAGE_CACHE: &str = "PRAGMA cache_size = -32768;";

/// Rows per multi-row `INSERT` of an import's batch: 15 history columns × 1,000 bound values
/// stay under both backends' limits (SQLite's 32,766, PostgreSQL's 65,535).
pub(crate) const IMPORT_ROWS_PER_STATEMENT: usize = 1000;

/// Inserts an import batch's new courses, in file order, and one history entry each: a creation
/// (no `before`) for a course at version 1; for a course another database already revised, its
/// arrival, `before` and `after` both the course as it came (the history's rule: only a version-1
/// course has no `before`). Multi-row statements of [`IMPORT_ROWS_PER_STATEMENT`] rows, the
/// courses first (positions and sequence numbers follow the file's order): one statement per
/// thousand rows instead of two per row (ADR 0053). On SQLite those statements fill two staging
/// tables ([`ImportStaging`]), and one `INSERT ... SELECT` per table moves the batch. A unique
/// violation is named by the first row that explains it ([`SqlConnection::name_title_violation`]);
/// the batch fails whole.
pub(crate) fn insert_imported_batch(
    connection: &mut SqlConnection<'_>,
    rows: &[&CourseRow],
    provenance: &Provenance,
) -> QueryResult<()> {
    let staging = ImportStaging::open(connection)?;
    let written = insert_rows_of_batch(connection, rows, provenance).and_then(|()| staging.finish(connection));
    let closed = staging.close(connection);
    match (written, closed) {
        (Err(error), _) => Err(name_batch_violation(connection, error, rows)),
        (Ok(()), closed) => closed,
    }
}

/// The statements of [`insert_imported_batch`]: the courses, then their history entries. On
/// PostgreSQL, one binary `COPY` per table (ADR 0058): no statement of 9,000 parameters to parse
/// and plan per thousand rows; the triggers and indexes see the rows as they see an `INSERT`'s.
fn insert_rows_of_batch(
    connection: &mut SqlConnection<'_>,
    rows: &[&CourseRow],
    provenance: &Provenance,
) -> QueryResult<()> {
    if let SqlConnection::Postgres(concrete) = connection {
        diesel::copy_from(courses::table).from_insertable(rows.to_vec()).execute(&mut **concrete)?;
        let history: Vec<NewHistoryRow<'_>> =
            rows.iter().map(|row| NewHistoryRow::of((row.version > 1).then_some(*row), row, provenance)).collect();
        diesel::copy_from(course_history::table).from_insertable(history).execute(&mut **concrete)?;
        return Ok(());
    }
    for chunk in rows.chunks(IMPORT_ROWS_PER_STATEMENT) {
        on_backend!(connection, |concrete| diesel::insert_into(courses::table)
            .values(chunk.to_vec())
            .execute(concrete))?;
    }
    for chunk in rows.chunks(IMPORT_ROWS_PER_STATEMENT) {
        let values: Vec<NewHistoryRow<'_>> =
            chunk.iter().map(|row| NewHistoryRow::of((row.version > 1).then_some(*row), row, provenance)).collect();
        on_backend!(connection, |concrete| diesel::insert_into(course_history::table)
            .values(&values)
            .execute(concrete))?;
    }
    Ok(())
}

/// An import batch's staging on SQLite (ADR 0053): while it is open, `courses` and
/// `course_history` name empty TEMP tables of the columns an import writes, without index or
/// trigger (an unqualified name finds the TEMP schema first), so the batch's multi-row statements
/// append there cheaply; [`ImportStaging::finish`] moves each into the real table with ONE
/// `INSERT ... SELECT` in staging order. Every index, trigger and the trigram index of the real
/// tables is then maintained by one statement per table instead of one per thousand rows: SQLite
/// saves a page a statement changes into the statement journal once per statement, and FTS5 writes
/// its pending terms at every statement's savepoint. The staging lives inside the batch's
/// transaction on the writer's connection and is dropped before anything else runs on it
/// ([`ImportStaging::close`], on success and failure alike; a rollback drops it too). PostgreSQL
/// writes to the tables directly.
#[derive(Debug)]
struct ImportStaging(());

/// The columns an import writes: all but the keys SQLite assigns in order (`position`, `seq`).
const STAGED_COURSE_COLUMNS: &str =
    "catalog, id, title, title_key, workload_hours, archived, version, created_at, updated_at";
const STAGED_HISTORY_COLUMNS: &str = "catalog, course_id, author, tool, arguments, before_title, \
     before_workload_hours, before_archived, before_version, before_updated_at, after_title, \
     after_workload_hours, after_archived, after_version, after_updated_at";

impl ImportStaging {
    fn open(connection: &mut SqlConnection<'_>) -> QueryResult<Self> {
        let SqlConnection::Sqlite(concrete) = connection else { return Ok(Self(())) };
        concrete.batch_execute(&format!(
            "CREATE TEMP TABLE courses AS SELECT {STAGED_COURSE_COLUMNS} FROM main.courses WHERE 0;
             CREATE TEMP TABLE course_history AS SELECT {STAGED_HISTORY_COLUMNS} FROM main.course_history WHERE 0;"
        ))?;
        Ok(Self(()))
    }

    /// Moves the staged rows into the real tables, in staging order.
    fn finish(&self, connection: &mut SqlConnection<'_>) -> QueryResult<()> {
        let SqlConnection::Sqlite(concrete) = connection else { return Ok(()) };
        concrete.batch_execute(&format!(
            "INSERT INTO main.courses ({STAGED_COURSE_COLUMNS}) SELECT {STAGED_COURSE_COLUMNS} FROM temp.courses ORDER BY rowid;"
        ))?;
        concrete.batch_execute(&format!(
            "INSERT INTO main.course_history ({STAGED_HISTORY_COLUMNS}) \
             SELECT {STAGED_HISTORY_COLUMNS} FROM temp.course_history ORDER BY rowid;"
        ))
    }

    /// Drops the staging tables: `courses` names the real table again.
    fn close(self, connection: &mut SqlConnection<'_>) -> QueryResult<()> {
        let SqlConnection::Sqlite(concrete) = connection else { return Ok(()) };
        concrete.batch_execute("DROP TABLE IF EXISTS temp.courses; DROP TABLE IF EXISTS temp.course_history;")
    }
}

/// [`SqlConnection::name_title_violation`] for a multi-row insert: the title index when one of
/// `rows` has an active title another course holds, else the error as it came. Runs only when
/// the insert failed (one query per row at most).
fn name_batch_violation(connection: &mut SqlConnection<'_>, error: DieselError, rows: &[&CourseRow]) -> DieselError {
    let mut error = error;
    for row in rows {
        error = connection.name_title_violation(error, row);
        if let DieselError::DatabaseError(_, information) = &error
            && information.constraint_name() == Some(TITLE_INDEX)
        {
            break;
        }
    }
    error
}

/// Runs `read` in one read-only transaction whose reads all see one point in time: SQLite's
/// deferred transaction keeps the WAL snapshot of its first read until it ends; PostgreSQL's
/// `REPEATABLE READ READ ONLY` the snapshot of its first statement.
fn in_snapshot<T>(
    connection: &mut SqlConnection<'_>,
    read: impl FnOnce(&mut SqlConnection<'_>) -> QueryResult<T>,
) -> QueryResult<T> {
    match connection {
        SqlConnection::Sqlite(inner) => inner.transaction(|concrete| read(&mut SqlConnection::Sqlite(concrete))),
        SqlConnection::Postgres(inner) => inner
            .build_transaction()
            .repeatable_read()
            .read_only()
            .run(|concrete| read(&mut SqlConnection::Postgres(concrete))),
    }
}

/// [`CourseStore::export`]'s statements: the count, then pages of every course of the catalog by
/// position (and, per page, the history of its courses in one query), all in one snapshot.
fn export(
    connection: &mut SqlConnection<'_>,
    catalog: &CatalogName,
    with_history: bool,
    page_size: usize,
    sink: &mut dyn ExportSink,
) -> Result<ExportEnd, StoreError> {
    use std::ops::ControlFlow;
    let limit = i64::try_from(page_size).map_err(|error| StoreError::new("page size out of range", error))?;
    let mut failure: Option<StoreError> = None;
    let ended = in_snapshot(connection, |connection| {
        let total: i64 = on_backend!(connection, |concrete| courses::table
            .filter(courses::catalog.eq(catalog.as_str()))
            .count()
            .get_result(concrete))?;
        if sink.begin(u64::try_from(total).unwrap_or(0)).is_break() {
            return Ok(ExportEnd::Stopped(0));
        }
        let mut sent = 0_u64;
        let mut after = 0_i64;
        loop {
            let rows: Vec<(i64, CourseRow)> = on_backend!(connection, |concrete| courses::table
                .filter(courses::catalog.eq(catalog.as_str()))
                .filter(courses::position.gt(after))
                .order(courses::position.asc())
                .limit(limit)
                .select((courses::position, CourseRow::as_select()))
                .load(concrete))?;
            let Some((last, _)) = rows.last() else { return Ok(ExportEnd::Finished(sent)) };
            after = *last;
            let full_page = rows.len() == page_size;
            let mut histories: std::collections::HashMap<String, Vec<(HistoryRow, Option<EvidenceColumns>)>> =
                std::collections::HashMap::new();
            if with_history {
                let ids: Vec<&str> = rows.iter().map(|(_, row)| row.id.as_str()).collect();
                let entries: Vec<(HistoryRow, Option<EvidenceColumns>)> =
                    on_backend!(connection, |concrete| course_history::table
                        .left_join(course_history_evidence::table)
                        .filter(course_history::catalog.eq(catalog.as_str()))
                        .filter(course_history::course_id.eq_any(&ids))
                        .order(course_history::seq.asc())
                        .select((HistoryRow::as_select(), Option::<EvidenceColumns>::as_select()))
                        .load(concrete))?;
                for (entry, evidence) in entries {
                    histories.entry(entry.course_id.clone()).or_default().push((entry, evidence));
                }
            }
            for (_, row) in rows {
                let id = row.id.clone();
                let course = match row.into_course() {
                    Ok(course) => course,
                    Err(error) => {
                        failure = Some(error);
                        return Err(DieselError::RollbackTransaction);
                    }
                };
                let history = histories
                    .remove(&id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(entry, evidence)| entry.into_entry(evidence, &course).map(|(entry, _)| entry))
                    .collect::<Result<Vec<_>, _>>();
                let history = match history {
                    Ok(history) => history,
                    Err(error) => {
                        failure = Some(error);
                        return Err(DieselError::RollbackTransaction);
                    }
                };
                if sink.course(&course, &history).is_break() {
                    return Ok(ExportEnd::Stopped(sent));
                }
                sent += 1;
            }
            if sink.page_done() == ControlFlow::Break(()) {
                return Ok(ExportEnd::Stopped(sent));
            }
            if !full_page {
                return Ok(ExportEnd::Finished(sent));
            }
        }
    });
    match (ended, failure) {
        (_, Some(error)) => Err(error),
        (Ok(end), None) => Ok(end),
        (Err(error), None) => Err(StoreError::new("cannot export the catalog", error)),
    }
}

/// Replaces the stored course by the revision's next one if it is still at the expected version
/// (a compare-and-swap: `UPDATE ... WHERE id = ? AND version = ?`), with its history entry.
fn replace(
    connection: &mut SqlConnection<'_>,
    revision: &RevisionRows,
    provenance: &Provenance,
) -> QueryResult<Replaced> {
    let (before, after) = (&revision.before, &revision.after);
    let updated = on_backend!(connection, |concrete| diesel::update(courses::table)
        .filter(courses::catalog.eq(&before.catalog))
        .filter(courses::id.eq(&after.id))
        .filter(courses::version.eq(before.version))
        .set(after)
        .execute(concrete));
    if updated.map_err(|error| connection.name_title_violation(error, after))? != 1 {
        return Ok(Replaced::Stale);
    }
    record_history(connection, Some(before), after, provenance)?;
    Ok(Replaced::Done)
}

/// A history entry to insert: the course `before` the write (none for a creation) and `after` it,
/// with who wrote it. One shape for a single write ([`record_history`]) and an import's batch
/// ([`insert_imported_batch`]); a `None` is stored as NULL (never a column default), so a batch
/// is one multi-row statement on SQLite too.
#[derive(Debug, Insertable)]
#[diesel(table_name = course_history, treat_none_as_default_value = false)]
struct NewHistoryRow<'row> {
    catalog: &'row str,
    course_id: &'row str,
    author: &'row str,
    tool: &'row str,
    arguments: &'row str,
    before_title: Option<&'row str>,
    before_workload_hours: Option<i32>,
    before_archived: Option<bool>,
    before_version: Option<i64>,
    before_updated_at: Option<Timestamp>,
    after_title: &'row str,
    after_workload_hours: i32,
    after_archived: bool,
    after_version: i64,
    after_updated_at: Timestamp,
}

impl<'row> NewHistoryRow<'row> {
    fn of(before: Option<&'row CourseRow>, after: &'row CourseRow, provenance: &'row Provenance) -> Self {
        Self {
            catalog: &after.catalog,
            course_id: &after.id,
            author: provenance.author(),
            tool: provenance.tool(),
            arguments: provenance.arguments(),
            before_title: before.map(|row| row.title.as_str()),
            before_workload_hours: before.map(|row| row.workload_hours),
            before_archived: before.map(|row| row.archived),
            before_version: before.map(|row| row.version),
            before_updated_at: before.map(|row| row.updated_at),
            after_title: &after.title,
            after_workload_hours: after.workload_hours,
            after_archived: after.archived,
            after_version: after.version,
            after_updated_at: after.updated_at,
        }
    }
}

/// Appends the history entry of a write from `before` (none for a creation) to `after`.
fn record_history(
    connection: &mut SqlConnection<'_>,
    before: Option<&CourseRow>,
    after: &CourseRow,
    provenance: &Provenance,
) -> QueryResult<()> {
    let values = NewHistoryRow::of(before, after, provenance);
    on_backend!(connection, |concrete| diesel::insert_into(course_history::table).values(&values).execute(concrete))?;
    let Some(evidence) = provenance.evidence() else { return Ok(()) };
    // The entry just written is this course's newest: a course's writes are serialized (SQLite's
    // one writer, PostgreSQL's row lock, a creation's id unknown to any other transaction).
    let seq: Option<i64> = on_backend!(connection, |concrete| course_history::table
        .filter(course_history::course_id.eq(&after.id))
        .select(diesel::dsl::max(course_history::seq))
        .get_result(concrete))?;
    let seq = seq.ok_or(diesel::result::Error::NotFound)?;
    let evidence = EvidenceColumns::of(seq, evidence)?;
    on_backend!(connection, |concrete| diesel::insert_into(course_history_evidence::table)
        .values(&evidence)
        .execute(concrete))
    .map(|_| ())
}

// Lookups by a unique key use `get_result`, not `first`: `first` adds `LIMIT ?`, and SQLite
// re-prepares a statement whose LIMIT is a bound parameter on every execution (the planner reads
// the bound value), which defeats diesel's statement cache: a full SQL parse per read.

/// The course with this id, archived or not.
fn find(connection: &mut SqlConnection<'_>, catalog: &CatalogName, id: CourseId) -> Result<Option<Course>, StoreError> {
    on_backend!(connection, |concrete| courses::table
        .filter(courses::id.eq(id.to_string()))
        .filter(courses::catalog.eq(catalog.as_str()))
        .select(CourseRow::as_select())
        .get_result(concrete)
        .optional())
    .map_err(|error| StoreError::new("cannot read a course", error))?
    .map(CourseRow::into_course)
    .transpose()
}

/// The courses with these ids, archived or not, of whichever catalog, each with its catalog's
/// name: one statement for many reads of one course ([`point_reads`], ADR 0054).
pub(crate) fn find_each(
    connection: &mut SqlConnection<'_>,
    ids: &[CourseId],
) -> Result<Vec<(String, Course)>, StoreError> {
    let ids: Vec<String> = ids.iter().map(ToString::to_string).collect();
    let rows: Vec<CourseRow> = on_backend!(connection, |concrete| courses::table
        .filter(courses::id.eq_any(&ids))
        .select(CourseRow::as_select())
        .load(concrete))
    .map_err(|error| StoreError::new("cannot read courses", error))?;
    rows.into_iter()
        .map(|row| {
            let catalog = row.catalog.clone();
            row.into_course().map(|course| (catalog, course))
        })
        .collect()
}

/// Up to `limit` active courses after `after`, in creation order, each with its cursor.
fn active_page(
    connection: &mut SqlConnection<'_>,
    catalog: &CatalogName,
    after: Option<PageCursor>,
    limit: usize,
) -> Result<Vec<(Course, PageCursor)>, StoreError> {
    let limit = i64::try_from(limit).map_err(|error| StoreError::new("page size out of range", error))?;
    let after = after
        .map_or(Ok(0), |cursor| i64::try_from(cursor.position()))
        .map_err(|error| StoreError::new("cursor out of range", error))?;
    let rows: Vec<(i64, CourseRow)> = on_backend!(connection, |concrete| courses::table
        .filter(courses::catalog.eq(catalog.as_str()))
        .filter(ActiveCourses)
        .filter(courses::position.gt(after))
        .order(courses::position.asc())
        .limit(limit)
        .select((courses::position, CourseRow::as_select()))
        .load(concrete))
    .map_err(|error| StoreError::new("cannot read a catalog page", error))?;
    rows.into_iter()
        .map(|(position, row)| {
            let position = u64::try_from(position).map_err(|error| StoreError::new("negative position", error))?;
            Ok((row.into_course()?, PageCursor::after_position(position)))
        })
        .collect()
}

/// Up to `limit` history entries of `course`, newest first, older than `before`.
fn history_page(
    connection: &mut SqlConnection<'_>,
    catalog: &CatalogName,
    course: &Course,
    before: Option<PageCursor>,
    limit: usize,
) -> Result<Vec<(HistoryEntry, PageCursor)>, StoreError> {
    let limit = i64::try_from(limit).map_err(|error| StoreError::new("page size out of range", error))?;
    let before = before
        .map_or(Ok(i64::MAX), |cursor| i64::try_from(cursor.position()))
        .map_err(|error| StoreError::new("cursor out of range", error))?;
    let course_id = course.id().to_string();
    let rows: Vec<(HistoryRow, Option<EvidenceColumns>)> = on_backend!(connection, |concrete| course_history::table
        .left_join(course_history_evidence::table)
        .filter(course_history::catalog.eq(catalog.as_str()))
        .filter(course_history::course_id.eq(&course_id))
        .filter(course_history::seq.lt(before))
        .order(course_history::seq.desc())
        .limit(limit)
        .select((HistoryRow::as_select(), Option::<EvidenceColumns>::as_select()))
        .load(concrete))
    .map_err(|error| StoreError::new("cannot read a course's history", error))?;
    rows.into_iter().map(|(row, evidence)| row.into_entry(evidence, course)).collect()
}

/// How many courses are active: the counter the triggers keep.
fn count_active(connection: &mut SqlConnection<'_>, catalog: &CatalogName) -> Result<u64, StoreError> {
    let count: Option<i64> = on_backend!(connection, |concrete| catalog_counters::table
        .find(catalog.as_str())
        .select(catalog_counters::active_courses)
        .get_result(concrete)
        .optional())
    .map_err(|error| StoreError::new("cannot count the catalog", error))?;
    // A catalog gets its counter row with its first course.
    let count = count.unwrap_or(0);
    u64::try_from(count).map_err(|error| StoreError::new("negative count", error))
}

/// Up to `limit` active courses matching `key`, best first: id starting with the key, then title
/// key starting with it (ranges on the partial indexes `courses_active_id` and
/// `courses_active_title_key`, both backends), then title key containing it (each backend's own
/// text index: [`ContainingSearch`], for keys of three characters or more). Every step reads at
/// most `limit` (or `2 × limit`) entries of an index, whatever the catalog's size (ADR 0052).
fn search_active(
    connection: &mut SqlConnection<'_>,
    catalog: &CatalogName,
    key: &TitleSearchKey,
    limit: usize,
) -> Result<Vec<Course>, StoreError> {
    let key = key.as_str();
    if key.contains('\0') {
        // No title key holds NUL (titles refuse control characters), and PostgreSQL text cannot.
        return Ok(Vec::new());
    }
    let sql_limit = i64::try_from(limit).map_err(|error| StoreError::new("limit out of range", error))?;
    let search_error = |error| StoreError::new("cannot search the catalog", error);
    let mut found: Vec<CourseRow> = Vec::new();
    // 1. Ids starting with the key: a range on the partial index of one catalog's active ids,
    //    `courses_active_id` (ADR 0052; ids are lowercase hex and '-'; PostgreSQL's `id` has the
    //    "C" collation, byte order, as SQLite's).
    //    The values are opaque to PostgreSQL's planner, so that it keeps one plan (ADR 0064).
    if key.bytes().all(|byte| byte.is_ascii_hexdigit() || byte == b'-') {
        found.extend(
            on_backend!(connection, |concrete| OpaqueLimit::new(
                courses::table
                    .filter(courses::catalog.eq(OpaqueText(catalog.as_str().to_owned())))
                    .filter(ActiveCourses)
                    .filter(courses::id.ge(OpaqueText(key.to_owned())))
                    .filter(courses::id.lt(OpaqueText(format!("{key}~"))))
                    .order(courses::id.asc())
                    .select(CourseRow::as_select()),
                sql_limit,
            )
            .load(concrete))
            .map_err(search_error)?,
        );
    }
    // 2. Title keys starting with the key: a range on the partial unique index of active title keys.
    if found.len() < limit {
        found.extend(
            on_backend!(connection, |concrete| OpaqueLimit::new(
                courses::table
                    .filter(courses::catalog.eq(OpaqueText(catalog.as_str().to_owned())))
                    .filter(ActiveCourses)
                    .filter(courses::title_key.ge(OpaqueText(key.to_owned())))
                    .filter(courses::title_key.lt(OpaqueText(format!("{key}\u{10FFFF}"))))
                    .order(courses::title_key.asc())
                    .select(CourseRow::as_select()),
                sql_limit,
            )
            .load(concrete))
            .map_err(search_error)?,
        );
    }
    // 3. Title keys containing the key: the backend's text index (it needs three characters).
    if found.len() < limit && key.chars().count() >= 3 {
        let most = sql_limit.saturating_mul(2);
        let containing = on_backend!(connection, |concrete| concrete.title_keys_containing(catalog, key, most));
        found.extend(containing.map_err(search_error)?);
    }
    let mut seen = std::collections::HashSet::new();
    found.into_iter().filter(|row| seen.insert(row.id.clone())).take(limit).map(CourseRow::into_course).collect()
}

/// The fewest trigrams of `key` (three characters or more) that together hold each of its
/// characters: those starting at character 0, 3, 6, … and the last one, in the key's order (ADR
/// 0055). A title key holding `key` holds all of them, so a text index asked for them (each
/// backend's [`ContainingSearch`]) lets every match of the key through, and reads fewer posting
/// lists than for all of the key's trigrams (for 7 characters, 3 against 5). The caller keeps
/// only the title keys that hold the key itself.
pub(crate) fn covering_trigrams(key: &str) -> Vec<&str> {
    let starts: Vec<usize> = key.char_indices().map(|(start, _)| start).collect();
    let trigram_at = |index: usize| {
        let end = starts.get(index + 3).copied().unwrap_or(key.len());
        &key[starts[index]..end]
    };
    let last = starts.len().saturating_sub(3);
    let mut indexes: Vec<usize> = (0..last).step_by(3).collect();
    indexes.push(last);
    indexes.into_iter().map(trigram_at).collect()
}

/// Brings the stored title keys to today's comparison-key rule, in the transaction that migrated
/// the database (ADR 0025): nothing to do when they are already at it.
pub(crate) fn bring_title_keys_to_rule(connection: &mut SqlConnection<'_>) -> QueryResult<()> {
    use crate::rules::{COMPARISON_KEY_RULE, StoredKey, plan_rekey, transient_key};

    let version: i64 =
        on_backend!(connection, |concrete| title_key_rule::table.select(title_key_rule::version).get_result(concrete))?;
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
    let stored: Vec<(String, String, String, String, bool)> = on_backend!(connection, |concrete| courses::table
        .order(courses::position.asc())
        .select((courses::catalog, courses::id, courses::title, courses::title_key, courses::archived))
        .load(concrete))?;
    // Titles are unique within one catalog (ADR 0035): each catalog's keys are planned alone.
    let mut by_catalog: std::collections::BTreeMap<String, Vec<StoredKey>> = std::collections::BTreeMap::new();
    for (catalog, id, title, key, archived) in stored {
        by_catalog.entry(catalog).or_default().push(StoredKey { id, title, key, active: !archived });
    }
    let mut rekey = Rekey::default();
    for courses_of_catalog in by_catalog.into_values() {
        let planned = plan_rekey(courses_of_catalog);
        rekey.changes.extend(planned.changes);
        rekey.duplicates.extend(planned.duplicates);
    }
    let set_key = |connection: &mut SqlConnection<'_>, id: &str, key: &str| {
        on_backend!(connection, |concrete| diesel::update(courses::table.filter(courses::id.eq(id)))
            .set(courses::title_key.eq(key))
            .execute(concrete))
    };
    // Two passes, so that no course takes a key another still holds.
    for (id, _) in &rekey.changes {
        set_key(connection, id, &transient_key(id))?;
    }
    for (id, key) in &rekey.changes {
        set_key(connection, id, key)?;
    }
    on_backend!(connection, |concrete| diesel::update(title_key_rule::table)
        .set(title_key_rule::version.eq(COMPARISON_KEY_RULE))
        .execute(concrete))?;
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

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind, Error as DieselError};

    use diesel::prelude::*;
    use diesel::query_builder::QueryId;

    use super::schema::courses;
    use super::{ActiveCourses, CourseRow, NamedViolation, TITLE_INDEX, write_error};
    use crate::store::port::WriteError;

    fn has_static_query_id<Query: QueryId>(_: &Query) -> bool {
        Query::HAS_STATIC_QUERY_ID
    }

    /// ADR 0064: PostgreSQL keeps one generic plan for a search's two range steps instead of
    /// planning them again at every call. On 20,000 courses, as at a million, a fresh plan of a
    /// range with its values in sight looks cheaper than the generic one, so without the opaque
    /// values every run of both statements was a custom plan. Both statements must also keep
    /// their static query id (diesel's cache by type).
    #[test]
    fn postgresql_plans_the_search_range_steps_once() {
        use crate::rules::{CatalogName, TitleSearchKey};

        let Some(schema) = crate::catalog::tests::TestSchema::create() else { return };
        drop(schema.open());
        schema.execute(
            "INSERT INTO courses (catalog, id, title, title_key, workload_hours, version, created_at, updated_at) \
             SELECT 'padrao', md5(n::text)::uuid::text, 'Curso ' || n, 'curso ' || n, 10, 1, now(), now() \
             FROM generate_series(1, 20000) AS n; ANALYZE courses;",
        );
        let mut connection = schema.connect();
        let catalog = CatalogName::default_catalog();
        // Hex keys (step 1 runs) that start no title (step 2 runs, empty) and no id or one.
        for key in ["0a1b2c3d", "1b2c3d4e", "2c3d4e5f", "3d4e5f60", "4e5f6071", "5f607182", "60718293", "718293a4"] {
            let key = TitleSearchKey::of_typed(key).expect("a key");
            let found = super::search_active(&mut super::SqlConnection::Postgres(&mut connection), &catalog, &key, 10)
                .expect("search");
            assert!(found.len() <= 1, "{key:?}: {found:?}");
        }

        #[derive(QueryableByName, Debug)]
        struct Plans {
            #[diesel(sql_type = diesel::sql_types::Text)]
            statement: String,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            generic_plans: i64,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            custom_plans: i64,
        }
        let plans: Vec<Plans> =
            diesel::sql_query("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
                .load(&mut connection)
                .expect("read the prepared statements");
        let ranges = ["ORDER BY \"courses\".\"id\" ASC", "ORDER BY \"courses\".\"title_key\" ASC"];
        let plans: Vec<Plans> =
            plans.into_iter().filter(|plan| ranges.iter().any(|order| plan.statement.contains(order))).collect();
        assert_eq!(plans.len(), 2, "{plans:#?}");
        for plan in &plans {
            // PostgreSQL plans afresh five times, then compares: from the sixth run on, generic.
            assert!(plan.generic_plans >= 3 && plan.custom_plans <= 5, "planned at every call: {plan:#?}");
        }
    }

    /// The active-course filter is a constant fragment with a static query id, so diesel caches
    /// the statements that use it by type; a `sql()` literal (what SQLite used before) has none, and
    /// makes diesel build the statement's SQL on every execution to look it up.
    #[test]
    fn statements_filtered_to_active_courses_keep_a_static_query_id() {
        let page = courses::table
            .filter(ActiveCourses)
            .filter(courses::position.gt(0_i64))
            .order(courses::position.asc())
            .limit(100)
            .select(<CourseRow as SelectableHelper<diesel::sqlite::Sqlite>>::as_select());
        assert!(has_static_query_id(&page));
        let literal = courses::table.filter(diesel::dsl::sql::<diesel::sql_types::Bool>("archived = 0"));
        assert!(!has_static_query_id(&literal));
    }

    /// An import batch reaches SQLite as a few multi-row statements, not one per row. diesel writes
    /// a batch row by row on SQLite when a row's `Insertable` may hold a DEFAULT (its
    /// `treat_none_as_default_value`, on unless turned off), and each row's statement then opened a
    /// statement savepoint, at which FTS5 writes its pending index to disk: one trigram segment and
    /// one statement journal per row, about three quarters of an import's time (ADR 0053). The
    /// multi-row statements fill the staging tables, and one statement per table moves them.
    #[test]
    fn an_import_batch_is_a_few_multi_row_statements_on_sqlite() {
        let (mut connection, inserts) = instrumented_store();
        let rows = imported_rows(2_500, "Curso");
        insert_batch(&mut connection, &rows).expect("inserted");

        let inserts = inserts.lock().expect("not poisoned").clone();
        let into = |table: &str| inserts.iter().filter(|sql| sql.starts_with(&format!("INSERT INTO {table} "))).count();
        assert_eq!((into("`courses`"), into("`course_history`")), (3, 3), "{inserts:?}");
        assert_eq!((into("main.courses"), into("main.course_history")), (1, 1), "{inserts:?}");
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM main.courses"), 2_500);
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM main.course_history"), 2_500);
        // "urso 1" is in Curso 1, Curso 10–19, 100–199 and 1000–1999: 1 + 10 + 100 + 1000.
        let search = "SELECT COUNT(*) AS value FROM courses_title_search WHERE courses_title_search MATCH '\"urso 1\"'";
        assert_eq!(count(&mut connection, search), 1_111, "every row is in the trigram index");
        let positions = "SELECT COUNT(*) AS value FROM main.courses a JOIN main.courses b ON b.position = a.position + 1 \
             WHERE CAST(substr(b.title, 7) AS INTEGER) = CAST(substr(a.title, 7) AS INTEGER) + 1";
        assert_eq!(count(&mut connection, positions), 2_499, "positions follow the batch's order");
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM sqlite_temp_master"), 0, "no staging left");
    }

    /// A batch whose title another course took after the batch's check (a concurrent rename) fails
    /// whole, named as the title index, with nothing of it written and no staging table left
    /// shadowing `courses` on the connection.
    #[test]
    fn a_staged_batch_with_a_taken_title_writes_nothing_and_leaves_no_staging() {
        let (mut connection, _) = instrumented_store();
        insert_batch(&mut connection, &imported_rows(1, "Tomado")).expect("the holder");
        let mut rows = imported_rows(1_500, "Curso");
        rows[1_200].title_key = "tomado 0".to_owned();

        let error = insert_batch(&mut connection, &rows).expect_err("the title is taken");
        assert!(matches!(write_error("import", error), WriteError::DuplicateTitle));
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM sqlite_temp_master"), 0, "no staging left");
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM courses"), 1, "only the holder");
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM course_history"), 1, "only the holder's");
        insert_batch(&mut connection, &imported_rows(3, "Depois")).expect("the next batch");
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM main.courses"), 4);
    }

    /// A batch bigger than SQLite's bound variables (32,766) is checked and written: its lookups
    /// go in pieces, and a row of a later piece whose id is present or whose title is taken is
    /// still found (`--batch-size` above about 32k failed with "too many SQL variables").
    #[test]
    fn a_batch_beyond_the_bound_variables_is_checked_in_pieces() {
        use crate::store::port::ImportOutcome;

        let (mut connection, _) = instrumented_store();
        let holders = imported_rows(2, "Antigo");
        insert_batch(&mut connection, &holders).expect("the holders");
        let mut rows = imported_rows(35_000, "Curso");
        rows[20_000].id.clone_from(&holders[0].id);
        rows[30_000].title_key.clone_from(&holders[1].title_key);
        let provenance = crate::rules::Provenance::new("import:teste", "importar", "{}");

        let written = connection
            .immediate_transaction(|concrete| {
                super::import_batch(&mut super::SqlConnection::Sqlite(concrete), &rows, Some(&provenance))
            })
            .expect("a batch of 35,000 rows");
        let outcome = |line: usize| written.outcomes[line];
        assert_eq!(written.outcomes.len(), 35_000);
        assert!(matches!(outcome(20_000), ImportOutcome::AlreadyPresent), "{:?}", outcome(20_000));
        assert!(matches!(outcome(30_000), ImportOutcome::TitleTaken), "{:?}", outcome(30_000));
        assert!(matches!(outcome(34_999), ImportOutcome::Inserted), "{:?}", outcome(34_999));
        assert_eq!(count(&mut connection, "SELECT COUNT(*) AS value FROM courses"), 2 + 35_000 - 2);
    }

    type Inserts = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

    /// A migrated SQLite store in memory, and the `INSERT`s it runs from now on (up to `VALUES`).
    fn instrumented_store() -> (SqliteConnection, Inserts) {
        use diesel::connection::InstrumentationEvent;

        let mut connection = crate::testing::migrated_sqlite_in_memory();
        let inserts = Inserts::default();
        let seen = std::sync::Arc::clone(&inserts);
        connection.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { query, .. } = event {
                let sql = query.to_string();
                if sql.starts_with("INSERT") {
                    seen.lock().expect("not poisoned").push(sql.split(" VALUES").next().unwrap_or_default().to_owned());
                }
            }
        });
        (connection, inserts)
    }

    /// `count` courses titled `{prefix} {n}`, active, version 1.
    fn imported_rows(count: usize, prefix: &str) -> Vec<CourseRow> {
        let now = super::Timestamp(time::OffsetDateTime::now_utc());
        (0..count)
            .map(|number| CourseRow {
                catalog: "default".to_owned(),
                id: uuid::Uuid::new_v4().to_string(),
                title: format!("{prefix} {number}"),
                title_key: format!("{} {number}", prefix.to_lowercase()),
                workload_hours: 10,
                archived: false,
                version: 1,
                created_at: now,
                updated_at: now,
            })
            .collect()
    }

    /// One import batch in its own immediate transaction, as the writer runs it.
    fn insert_batch(connection: &mut SqliteConnection, rows: &[CourseRow]) -> Result<(), DieselError> {
        let provenance = crate::rules::Provenance::new("import:teste", "importar", "{}");
        let batch: Vec<&CourseRow> = rows.iter().collect();
        connection.immediate_transaction(|concrete| {
            super::insert_imported_batch(&mut super::SqlConnection::Sqlite(concrete), &batch, &provenance)
        })
    }

    fn count(connection: &mut SqliteConnection, sql: &str) -> i64 {
        diesel::sql_query(sql).get_result::<Counted>(connection).expect("count").value
    }

    #[derive(diesel::QueryableByName)]
    struct Counted {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        value: i64,
    }

    fn unique_violation(
        information: impl diesel::result::DatabaseErrorInformation + Send + Sync + 'static,
    ) -> DieselError {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, Box::new(information))
    }

    #[test]
    fn a_unique_violation_is_a_duplicate_title_by_the_index_name_and_never_by_its_message() {
        let named = |constraint| NamedViolation {
            message: "UNIQUE constraint failed: courses.title_key".to_owned(),
            constraint,
        };
        assert!(matches!(write_error("test", unique_violation(named(Some(TITLE_INDEX)))), WriteError::DuplicateTitle));
        // The message names the column, but no index was named: not recognised from text.
        assert!(matches!(write_error("test", unique_violation(named(None))), WriteError::Store(_)));
        assert!(matches!(
            write_error("test", unique_violation("UNIQUE constraint failed: courses.title_key".to_owned())),
            WriteError::Store(_)
        ));
        assert!(matches!(write_error("test", unique_violation(named(Some("courses_id_key")))), WriteError::Store(_)));
    }
}

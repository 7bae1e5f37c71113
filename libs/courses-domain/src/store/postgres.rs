//! [`PostgresStore`]: the [`CourseStore`](crate::store::port::CourseStore) on a PostgreSQL
//! database, through diesel.
//!
//! libpq (and the OpenSSL it uses for TLS) is built from source (`pq-sys/bundled`,
//! `openssl-sys/vendored`): the build needs no system PostgreSQL library (ADR 0018). The embedded
//! migrations (`migrations_postgres/`) run on open, one process at a time under an advisory lock.
//!
//! The schema, the rows and the statements are shared with SQLite ([`crate::store::sql`], ADR
//! 0033); this file holds what only PostgreSQL does: connecting, migrating under an advisory lock,
//! the creation lock, change notices, and the trigram search.
//!
//! Writes run in READ COMMITTED transactions. The rules that need more than that:
//! - Duplicate titles: the partial unique index `courses_active_title_key` refuses them, also
//!   between concurrent writers; a violation of that index (PostgreSQL names it) is
//!   [`WriteError::DuplicateTitle`].
//! - Creation order: every write that adds to or removes from the active set (a creation, an
//!   archiving) first locks the single `catalog_counters` row, which the counting triggers would
//!   lock anyway. A creation draws its position under that lock, so positions commit in order and a
//!   reader's keyset cursor never skips a course that commits later (ADR 0008's caveat).
//! - Idempotency: the key is looked up under the same lock, so two retries of one key never both
//!   find it unused.
//! - `replace` is a compare-and-swap: `UPDATE ... WHERE id = $1 AND version = $2`; PostgreSQL
//!   re-checks the version on the row a concurrent writer committed.

use std::time::Duration;

use diesel::ConnectionError;
use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::rules::{CatalogName, Course, CourseId};
use crate::store::port::{ChangeFollower, PendingRead, RemoteChange, StoreError, WriteError};
use crate::store::sql::point_reads::PointReads;
use crate::store::sql::read_pool::{Checkout, ReadPool};
use crate::store::sql::schema::{catalog_counters, courses};
use crate::store::sql::{
    self, ActiveCourses, ChangeSummary, ContainingSearch, CourseRow, ImportBatchSetup, SharedRead, SharedWrite,
    SqlBackend, SqlConnection, WriteResult, Written, covering_trigrams, write_error,
};

pub(crate) const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations_postgres");

/// The advisory lock (database-wide) held while migrating, so that several processes may start at
/// once, whatever schema each one uses.
pub(crate) const MIGRATION_LOCK: i64 = 0x6d63_705f_6375_7273; // "mcp_curs"

/// Connections kept by the pool.
const POOL_SIZE: u32 = 8;
/// How long a caller waits for a pooled connection (or a new one) before failing.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// Why [`PostgresStore::open`] failed. Its text never contains the database URL (which may hold a
/// password).
#[derive(Debug, thiserror::Error)]
pub enum OpenPostgresStoreError {
    /// The schema name is not a plain lowercase identifier.
    #[error("invalid schema name {schema:?}: use 1 to 63 of a-z, 0-9 and '_', not starting with a digit")]
    InvalidSchema {
        /// The name that was given.
        schema: String,
    },
    /// The database could not be reached or configured.
    #[error("cannot connect to the PostgreSQL database")]
    Connect {
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The embedded migrations could not be applied.
    #[error("cannot migrate the PostgreSQL database")]
    Migrate {
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The thread that answers reads of one course could not be started.
    #[error("cannot start the PostgreSQL store's reader thread")]
    Start {
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// The PostgreSQL course store: a pool of connections to one database (and, optionally, one schema).
#[derive(Clone)]
pub struct PostgresStore {
    pool: ReadPool<PgConnection>,
    schema: Option<String>,
    /// Kept to open the LISTEN connection of [`PostgresStore::follow_changes`]. Never logged.
    url: std::sync::Arc<str>,
    /// Tells this store's own change notices from other processes' (random, per open).
    origin: std::sync::Arc<str>,
    /// Reads of one course that arrive together, answered by one statement on the store's reader
    /// thread (ADR 0054, 0061); the thread stops when the last clone of the store is dropped.
    point_reads: std::sync::Arc<PointReads>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        formatter.debug_struct("PostgresStore").field("schema", &self.schema).finish_non_exhaustive()
    }
}

/// How many times [`PostgresStore::open`] tries to connect to a server that is not accepting
/// connections yet (refused, or starting up), and how long it waits between tries: about 2 s in
/// all. Longer waits belong to the orchestrator (a restart policy, a health-checked dependency).
const CONNECT_ATTEMPTS: u32 = 5;
/// The wait between two of the [`CONNECT_ATTEMPTS`].
const CONNECT_RETRY_INTERVAL: Duration = Duration::from_millis(500);

/// True when `error` says the server is not accepting connections yet, which a server being
/// started (or restarted) says for a few seconds: the port is closed (refused), or PostgreSQL
/// answers that it is starting up or in recovery. Everything else (unknown host, role, database,
/// password, TLS) is permanent: retrying would only delay the real cause.
fn is_not_up_yet(error: &ConnectionError) -> bool {
    let ConnectionError::BadConnection(message) = error else {
        return false;
    };
    let message = message.to_ascii_lowercase();
    message.contains("connection refused")
        || message.contains("the database system is starting up")
        || message.contains("the database system is in recovery mode")
        || message.contains("the database system is not yet accepting connections")
}

/// Connects once to `url`, trying again while the server is not up yet ([`is_not_up_yet`]), with
/// a warning per failed try, at most [`CONNECT_ATTEMPTS`] times.
fn establish_first_connection(url: &str) -> Result<PgConnection, OpenPostgresStoreError> {
    let mut attempt = 1;
    loop {
        match PgConnection::establish(url) {
            Ok(connection) => return Ok(connection),
            Err(error) if attempt < CONNECT_ATTEMPTS && is_not_up_yet(&error) => {
                // libpq's message names the host and port, never the password.
                tracing::warn!(
                    attempt,
                    of = CONNECT_ATTEMPTS,
                    error = %error.to_string().split_whitespace().collect::<Vec<_>>().join(" "),
                    "PostgreSQL is not accepting connections yet; trying again"
                );
                std::thread::sleep(CONNECT_RETRY_INTERVAL);
                attempt += 1;
            }
            Err(error) => {
                let tries = attempt;
                return Err(OpenPostgresStoreError::Connect {
                    source: Box::new(FirstConnectionError { error, tries }),
                });
            }
        }
    }
}

/// The error of the last try of [`establish_first_connection`], with how many there were.
#[derive(Debug)]
struct FirstConnectionError {
    error: ConnectionError,
    tries: u32,
}

impl std::fmt::Display for FirstConnectionError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // libpq ends its messages with a newline and indents its hints with a tab.
        let message = self.error.to_string();
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        if self.tries > 1 {
            write!(formatter, "{message} (after {} tries)", self.tries)
        } else {
            formatter.write_str(&message)
        }
    }
}

impl std::error::Error for FirstConnectionError {}

/// Puts every new connection of the pool in the store's schema, if it has one (its `SET
/// search_path` statement).
#[derive(Debug)]
struct SearchPath(Option<String>);

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for SearchPath {
    fn on_acquire(&self, connection: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        match &self.0 {
            Some(statement) => connection.batch_execute(statement).map_err(diesel::r2d2::Error::QueryError),
            None => Ok(()),
        }
    }
}

/// True for a plain lowercase SQL identifier, safe to put between double quotes.
fn is_plain_identifier(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
        && !name.starts_with(|character: char| character.is_ascii_digit())
}

impl PostgresStore {
    /// True when `url` is a PostgreSQL connection URI (`postgres://…` or `postgresql://…`): what the
    /// apps open with this store rather than with `SqliteStore`.
    #[must_use]
    pub fn handles(url: &str) -> bool {
        url.starts_with("postgres://") || url.starts_with("postgresql://")
    }

    /// Connects to the database at `url` (`postgres://user:password@host:port/database?...`, any
    /// libpq connection URI) and applies the embedded migrations in the connection's current schema
    /// (the first of its `search_path`, usually `public`). Several processes may open the same
    /// database at once.
    ///
    /// # Errors
    /// [`OpenPostgresStoreError`] when the database cannot be reached or migrated.
    pub fn open(url: &str) -> Result<Self, OpenPostgresStoreError> {
        Self::build(url, None)
    }

    /// Like [`open`](Self::open), but keeps the catalog in `schema` (created if missing), so that
    /// several catalogs can share one database: every connection's `search_path` is
    /// `"<schema>", public`. `pg_trgm`, which is database-wide, is created in `public` if it is
    /// missing, so that dropping one catalog's schema never drops another's index.
    ///
    /// # Errors
    /// [`OpenPostgresStoreError::InvalidSchema`] unless `schema` is 1 to 63 of `a-z`, `0-9` and
    /// `_`, not starting with a digit; otherwise as [`open`](Self::open).
    pub fn open_in_schema(url: &str, schema: &str) -> Result<Self, OpenPostgresStoreError> {
        if !is_plain_identifier(schema) {
            return Err(OpenPostgresStoreError::InvalidSchema { schema: schema.to_owned() });
        }
        Self::build(url, Some(schema))
    }

    fn build(url: &str, schema: Option<&str>) -> Result<Self, OpenPostgresStoreError> {
        let connect_error =
            |source: Box<dyn std::error::Error + Send + Sync>| OpenPostgresStoreError::Connect { source };
        let builder = Pool::builder().max_size(POOL_SIZE).min_idle(Some(1)).connection_timeout(CONNECTION_TIMEOUT);
        let mut search_path = SearchPath(None);
        // One connection first, directly: a wrong host, role, password or database fails here at
        // once with PostgreSQL's own cause (through the pool, r2d2 would retry it for its whole
        // connection timeout and report a timeout). Only a server not up yet is waited for.
        let mut first = establish_first_connection(url)?;
        if let Some(schema) = schema {
            // Before the pool exists: its connections need the schema on their search_path.
            first
                .transaction(|connection| {
                    connection.batch_execute(&format!(
                        "SELECT pg_advisory_xact_lock({MIGRATION_LOCK});
                         CREATE SCHEMA IF NOT EXISTS \"{schema}\";
                         CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;"
                    ))
                })
                .map_err(|error| OpenPostgresStoreError::Migrate { source: error.into() })?;
            search_path = SearchPath(Some(format!("SET search_path TO \"{schema}\", public")));
        }
        drop(first);
        let pool = ReadPool::build(builder, url, search_path).map_err(|error| connect_error(error.into()))?;
        let mut connection = pool.get().map_err(connect_error)?;
        // One process migrates at a time: the others wait for the lock, then find nothing to do.
        connection
            .transaction(|connection| {
                connection.batch_execute(&format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))?;
                connection.run_pending_migrations(MIGRATIONS).map(|_| ()).map_err(|error| {
                    // Carry the migration error out of diesel's transaction closure.
                    DieselError::QueryBuilderError(error)
                })?;
                sql::bring_title_keys_to_rule(&mut SqlConnection::Postgres(connection))
            })
            .map_err(|error| OpenPostgresStoreError::Migrate { source: error.into() })?;
        drop(connection);
        tracing::debug!(schema = schema.unwrap_or("(search_path)"), "PostgreSQL course store opened");
        let origin = CourseId::generate().to_string();
        let point_reads = PointReads::start(Box::new({
            let pool = pool.clone();
            move |ids| {
                let mut connection =
                    pool.get().map_err(|error| StoreError::new("no database connection available", error))?;
                sql::find_each(&mut SqlConnection::Postgres(&mut connection), ids)
            }
        }))
        .map_err(|source| OpenPostgresStoreError::Start { source })?;
        Ok(Self {
            pool,
            schema: schema.map(str::to_owned),
            url: url.into(),
            origin: origin.into(),
            point_reads: std::sync::Arc::new(point_reads),
        })
    }

    /// Starts following the changes other processes (replicas on the same database and schema)
    /// commit: a thread LISTENs on [`CHANGES_CHANNEL`] and calls `on_change` for each of them, in
    /// commit order, at most [`FOLLOW_POLL`] after the commit. Changes made through this store are
    /// not reported (its own process already knows). After a lost connection it reconnects every
    /// second, logging a warning; changes committed meanwhile are not replayed. The first `LISTEN`
    /// is made before this returns, so every change committed after it returns is heard (unless
    /// that first connection fails: the thread then retries). Stops when the returned
    /// [`ChangeFollower`] is dropped.
    #[must_use]
    pub fn follow_changes(&self, on_change: impl Fn(RemoteChange) + Send + 'static) -> ChangeFollower {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let follower = ChangeFollower::new(std::sync::Arc::clone(&stop));
        let url = std::sync::Arc::clone(&self.url);
        let origin = std::sync::Arc::clone(&self.origin);
        let schema = self.schema.clone().unwrap_or_default();
        let listening = listen(&url)
            .map_err(|error| tracing::warn!(%error, "cannot LISTEN for other replicas' changes; retrying in 1 s"))
            .ok();
        let spawned = std::thread::Builder::new().name("pg-change-follower".to_owned()).spawn(move || {
            follow(&url, listening, &origin, &schema, &stop, &on_change);
        });
        if let Err(error) = spawned {
            tracing::error!(%error, "cannot start following the catalog's changes");
        }
        follower
    }

    fn announcer(&self) -> (&str, Option<&str>) {
        (&self.origin, self.schema.as_deref())
    }

    /// The schema given to [`open_in_schema`](Self::open_in_schema), if any.
    #[must_use]
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    fn connection(&self) -> Result<Checkout<PgConnection>, StoreError> {
        self.pool.get().map_err(|error| StoreError::new("no database connection available", error))
    }
}

/// The channel every store announces its committed changes on (`pg_notify`, in the write's
/// transaction, so a notice is delivered if and only if the write commits).
pub const CHANGES_CHANNEL: &str = "mcp_cursos_changes";

/// How often the follower thread checks for notices (a non-blocking read of the LISTEN connection).
pub const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// A connection that `LISTEN`s on [`CHANGES_CHANNEL`].
fn listen(url: &str) -> Result<PgConnection, Box<dyn std::error::Error>> {
    let mut fresh = PgConnection::establish(url)?;
    diesel::sql_query(format!("LISTEN {CHANGES_CHANNEL}")).execute(&mut fresh)?;
    Ok(fresh)
}

fn follow(
    url: &str,
    mut connection: Option<PgConnection>,
    origin: &str,
    schema: &str,
    stop: &std::sync::atomic::AtomicBool,
    on_change: &(impl Fn(RemoteChange) + ?Sized),
) {
    let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
    while !stopped() {
        let Some(listening) = connection.as_mut() else {
            match listen(url) {
                Ok(fresh) => {
                    tracing::debug!("following the catalog's changes (LISTEN {CHANGES_CHANNEL})");
                    connection = Some(fresh);
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot LISTEN for other replicas' changes; retrying in 1 s");
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
            continue;
        };
        let mut lost = false;
        for notice in listening.notifications_iter() {
            match notice {
                Ok(notice) => {
                    if let Some(change) = parse_notice(&notice.payload, origin, schema) {
                        on_change(change);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "lost the LISTEN connection; reconnecting");
                    lost = true;
                    break;
                }
            }
        }
        if lost {
            connection = None;
        } else {
            std::thread::sleep(FOLLOW_POLL);
        }
    }
}

/// `<origin> <schema or -> <catalog> <course id> <0|1>`; `None` for this store's own notices,
/// other schemas' and anything malformed (ADR 0035 added the catalog).
fn notice_payload(origin: &str, schema: Option<&str>, catalog: &str, course_id: &str, changes_listing: bool) -> String {
    format!(
        "{origin} {} {catalog} {course_id} {}",
        schema.filter(|name| !name.is_empty()).unwrap_or("-"),
        u8::from(changes_listing)
    )
}

fn parse_notice(payload: &str, own_origin: &str, own_schema: &str) -> Option<RemoteChange> {
    let mut fields = payload.split(' ');
    let (origin, schema, catalog, id, listing) =
        (fields.next()?, fields.next()?, fields.next()?, fields.next()?, fields.next()?);
    let schema = if schema == "-" { "" } else { schema };
    if origin == own_origin || schema != own_schema || fields.next().is_some() {
        return None;
    }
    let changes_listing = match listing {
        "0" => false,
        "1" => true,
        _ => return None,
    };
    Some(RemoteChange {
        catalog: CatalogName::from_stored(catalog)?,
        course_id: CourseId::parse(id).ok()?,
        changes_listing,
    })
}

/// Announces a committed write's changes to the other processes (delivered only if the
/// transaction commits), in order, in one statement: an import batch stores up to 10,000 courses,
/// and a round trip per notice was a fifth of an import's time on PostgreSQL (ADR 0058).
fn notify_changes(connection: &mut PgConnection, notices: &[String]) -> Result<(), DieselError> {
    match notices {
        [] => return Ok(()),
        // A tool's write: one notice, as ever.
        [notice] => {
            return diesel::sql_query("SELECT pg_notify($1, $2)")
                .bind::<diesel::sql_types::Text, _>(CHANGES_CHANNEL)
                .bind::<diesel::sql_types::Text, _>(notice)
                .execute(connection)
                .map(|_| ());
        }
        _ => {}
    }
    diesel::sql_query("SELECT pg_notify($1, notice) FROM unnest($2::text[]) AS notice")
        .bind::<diesel::sql_types::Text, _>(CHANGES_CHANNEL)
        .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(notices)
        .execute(connection)
        .map(|_| ())
}

/// Takes the catalog's creation lock (its `catalog_counters` row, made first if the catalog has
/// none yet) until the end of the transaction. Every write that changes a catalog's active set
/// takes it first: that catalog's positions are drawn and committed in one order, its idempotency
/// keys are looked up one creation at a time, and the counting triggers, which lock the same row,
/// can never deadlock with a creation waiting on the title index. Catalogs do not wait for each
/// other (ADR 0035).
fn lock_active_set(connection: &mut PgConnection, catalog: &str) -> Result<(), DieselError> {
    diesel::insert_into(catalog_counters::table)
        .values((catalog_counters::catalog.eq(catalog), catalog_counters::active_courses.eq(0_i64)))
        .on_conflict_do_nothing()
        .execute(connection)?;
    catalog_counters::table
        .find(catalog)
        .select(catalog_counters::active_courses)
        .for_update()
        .get_result::<i64>(connection)
        .map(|_| ())
}

/// `text` as a LIKE pattern that matches it literally anywhere (`\` is PostgreSQL's LIKE escape).
fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for character in text.chars() {
        if matches!(character, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    pattern.push('%');
    pattern
}

/// PostgreSQL's part of the shared store ([`crate::store::sql`], ADR 0033).
impl SqlBackend for PostgresStore {
    const SYSTEM_NAME: &'static str = "postgresql";

    type Connection = PgConnection;

    fn pool(&self) -> &Pool<ConnectionManager<PgConnection>> {
        self.pool.pool()
    }

    fn run_read<T>(&self, read: impl SharedRead<T>) -> Result<T, StoreError> {
        read(&mut SqlConnection::Postgres(&mut *self.connection()?))
    }

    /// Together with the other reads of one course that arrive meanwhile, in one statement on one
    /// connection (`point_reads.rs`, ADR 0054): each still current when it is answered.
    fn find_through(
        &self,
        catalog: &CatalogName,
        id: CourseId,
        _read: impl FnOnce() -> Result<Option<Course>, StoreError>,
    ) -> Result<Option<Course>, StoreError> {
        self.point_reads.find(catalog, id)
    }

    /// Queued on the store's reader thread, as [`find_through`](Self::find_through)'s reads.
    fn find_later(&self, catalog: &CatalogName, id: CourseId) -> Option<PendingRead> {
        Some(self.point_reads.find_later(catalog, id))
    }

    /// In a READ COMMITTED transaction of its own: a write that changes the active set takes the
    /// creation lock first ([`lock_active_set`]), and a write that stored something announces
    /// itself to the other replicas ([`notify_changes`], delivered only if it commits).
    ///
    /// A `COMMIT` that got no answer (the connection was lost while it ran) is
    /// [`WriteError::OutcomeUnknown`]: the server may have committed before the connection broke.
    /// Any other error, the `COMMIT`'s own refusals included, means PostgreSQL rolled back.
    fn run_write<T>(&self, context: &'static str, change: ChangeSummary, write: impl SharedWrite<T>) -> WriteResult<T>
    where
        T: Written + Send + 'static,
    {
        let committing = std::cell::Cell::new(false);
        self.connection()?
            .transaction(|connection| {
                if change.changes_active_set {
                    lock_active_set(connection, &change.catalog)?;
                }
                let outcome = write(&mut SqlConnection::Postgres(connection))?;
                let (origin, schema) = self.announcer();
                let mut notices = Vec::new();
                outcome.announce(&change, &mut |stored| {
                    notices.push(notice_payload(
                        origin,
                        schema,
                        &stored.catalog,
                        &stored.course_id,
                        stored.changes_listing,
                    ));
                    Ok(())
                })?;
                notify_changes(connection, &notices)?;
                // Every statement was answered: an error from here on is the COMMIT's.
                committing.set(true);
                Ok(outcome)
            })
            .map_err(|error| {
                if committing.get() && commit_went_unanswered(&error) {
                    WriteError::OutcomeUnknown(StoreError::new(context, error))
                } else {
                    write_error(context, error)
                }
            })
    }

    fn follow_changes(&self, on_change: Box<dyn Fn(RemoteChange) + Send>) -> ChangeFollower {
        PostgresStore::follow_changes(self, on_change)
    }
}

/// Whether a failed `COMMIT` failed for want of an answer (the connection closed, or the command
/// could not be sent) rather than by PostgreSQL's refusal. diesel reports it as such, or, when its
/// rollback after the failed `COMMIT` fails too, wraps it in `RollbackErrorOnCommit`.
fn commit_went_unanswered(error: &DieselError) -> bool {
    match error {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand, _) => {
            true
        }
        DieselError::RollbackErrorOnCommit { commit_error, .. } => commit_went_unanswered(commit_error),
        _ => false,
    }
}

/// An import batch's lookups (which of its ids are present, which of its titles are taken) are
/// planned from the statistics of `courses`. Taken on a small table (or never: a new schema, and a
/// server whose autovacuum is off or has not come round yet), they make the planner scan every
/// active course per batch comparing each with the batch's 10,000 keys, a cost that grows with the
/// table: an import into a new schema slowed to 700 rows/s at 200,000 courses. So each batch first
/// renews them once the rows changed since the last ANALYZE reach half the rows it counted (and
/// 1,000 at least): a few ANALYZEs per import, each of a bounded sample (ADR 0058). For a role
/// that does not own the table, PostgreSQL skips the analysis with a warning (in its log: diesel
/// drops a connection's notices), and the import goes on as before.
impl ImportBatchSetup for PgConnection {
    fn set_up_import_batch(&mut self) -> QueryResult<()> {
        #[derive(QueryableByName)]
        struct Growth {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            stale: bool,
        }
        let growth = diesel::sql_query(
            "SELECT COALESCE(stats.n_mod_since_analyze, 0) >= GREATEST(table_of.reltuples, 0) / 2 + 1000 AS stale \
             FROM pg_class table_of LEFT JOIN pg_stat_user_tables stats ON stats.relid = table_of.oid \
             WHERE table_of.oid = 'courses'::regclass",
        )
        .get_result::<Growth>(self)?;
        if growth.stale {
            self.batch_execute("ANALYZE courses")?;
        }
        Ok(())
    }
}

diesel::define_sql_function! {
    /// PostgreSQL's `strpos(string, substring)`: where `substring` starts in `string` (1-based),
    /// 0 when it is not there. A plain substring test, which no index serves.
    fn strpos(string: diesel::sql_types::Text, substring: diesel::sql_types::Text) -> diesel::sql_types::Integer;
}

/// PostgreSQL's own third step of a search: active courses whose title key contains `key`,
/// served by the trigram index `courses_active_title_trigram`.
///
/// A key of ASCII letters and digits (a number, an id's part, a plain word) is asked of the index
/// as its [`covering_trigrams`], one `LIKE '%abc%'` each, and `strpos` then keeps the title keys
/// holding the key itself (ADR 0063): pg_trgm turns `LIKE '%key%'` into every trigram of the key
/// (5 posting lists for 7 characters, 3 for the cover). Any other key (spaces, punctuation,
/// accents, which pg_trgm reads as word boundaries by its own rules) stays one `LIKE '%key%'`.
/// Both forms answer the same courses, in the order of the same bitmap scan of the table.
impl ContainingSearch for PgConnection {
    fn title_keys_containing(&mut self, catalog: &CatalogName, key: &str, limit: i64) -> QueryResult<Vec<CourseRow>> {
        let mut query = courses::table.filter(courses::catalog.eq(catalog.as_str())).filter(ActiveCourses).into_boxed();
        if key.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            for trigram in covering_trigrams(key) {
                query = query.filter(courses::title_key.like(contains_pattern(trigram)));
            }
            query = query.filter(strpos(courses::title_key, key).gt(0));
        } else {
            query = query.filter(courses::title_key.like(contains_pattern(key)));
        }
        query.limit(limit).select(CourseRow::as_select()).load(self)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{
        PostgresStore, RemoteChange, contains_pattern, is_not_up_yet, is_plain_identifier, notice_payload, parse_notice,
    };
    use crate::catalog::tests::TestSchema;
    use crate::catalog::{Catalog, CreateCourseError, GetCourseError};
    use crate::rules::{CatalogName, CourseChanges, CourseId, PageSize, WorkloadHours};
    use crate::store::port::CourseStore;
    use crate::testing::{by, new_course};

    #[test]
    fn only_a_server_that_is_not_up_yet_is_tried_again() {
        let bad = |message: &str| diesel::ConnectionError::BadConnection(message.to_owned());
        for transient in [
            "connection to server at \"127.0.0.1\", port 5433 failed: Connection refused\n\tIs the server running?",
            "connection to server at \"db\", port 5432 failed: FATAL:  the database system is starting up\n",
            "FATAL:  the database system is in recovery mode",
        ] {
            assert!(is_not_up_yet(&bad(transient)), "{transient}");
        }
        for permanent in [
            "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  role \"x\" does not exist\n",
            "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  database \"x\" does not exist\n",
            "could not translate host name \"dbb\" to address: Name or service not known\n",
            "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  password authentication failed",
        ] {
            assert!(!is_not_up_yet(&bad(permanent)), "{permanent}");
        }
        assert!(!is_not_up_yet(&diesel::ConnectionError::InvalidConnectionUrl("x".to_owned())));
    }

    /// ADR 0008's caveat: a sequence hands out positions in one order and transactions may commit
    /// in another. A reader that pages on while two processes create must still see every course.
    #[test]
    fn a_reader_paging_during_concurrent_creations_skips_no_course() {
        const PER_WRITER: usize = 150;
        let Some(schema) = TestSchema::create() else { return };
        let reader = schema.open();
        let writing = Arc::new(AtomicBool::new(true));
        let writers: Vec<_> = (0..2)
            .map(|writer| {
                let catalog = Catalog::new(schema.open());
                std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                    (0..PER_WRITER)
                        .map(|number| {
                            let course = new_course(&format!("Curso {writer}-{number}"), 10);
                            runtime.block_on(catalog.create(course, by())).expect("created").id()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let done = {
            let writing = Arc::clone(&writing);
            std::thread::spawn(move || {
                let created: Vec<_> = writers.into_iter().flat_map(|writer| writer.join().expect("writer")).collect();
                writing.store(false, Ordering::SeqCst);
                created
            })
        };
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let still_writing = writing.load(Ordering::SeqCst);
            let page = reader.active_page(&CatalogName::default_catalog(), cursor, 100).expect("page");
            if let Some((_, last)) = page.last() {
                cursor = Some(*last);
            }
            let empty = page.is_empty();
            seen.extend(page.into_iter().map(|(course, _)| course.id()));
            if empty && !still_writing {
                break;
            }
        }
        let created: HashSet<_> = done.join().expect("writers").into_iter().collect();
        assert_eq!(seen.len(), 2 * PER_WRITER, "every course once");
        assert_eq!(seen.into_iter().collect::<HashSet<_>>(), created, "no course skipped");
    }

    #[test]
    fn like_wildcards_and_the_escape_character_match_themselves() {
        assert_eq!(contains_pattern("ção a"), "%ção a%");
        assert_eq!(contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }

    #[test]
    fn only_plain_lowercase_identifiers_are_accepted_as_schema_names() {
        assert!(is_plain_identifier("test_1234_abcd"));
        for refused in ["", "1abc", "Abc", "a\"b", "a b", "a;drop", &"a".repeat(64)] {
            assert!(!is_plain_identifier(refused), "{refused:?}");
        }
    }

    #[test]
    fn a_change_committed_by_another_store_is_followed_and_its_own_are_not() {
        let Some(schema) = TestSchema::create() else { return };
        let here = schema.open();
        let (sender, received) = std::sync::mpsc::channel();
        let follower = here.follow_changes(move |change| {
            let _ = sender.send(change);
        });
        let elsewhere = Catalog::new(schema.open());
        let local = Catalog::new(here);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        // Made here: not reported (this process already knows). Refused elsewhere: nothing committed.
        runtime.block_on(local.create(new_course("Local", 10), by())).expect("created");
        runtime.block_on(elsewhere.create(new_course("local", 10), by())).expect_err("duplicate title");
        let created = runtime.block_on(elsewhere.create(new_course("Remoto", 10), by())).expect("created");
        let changes = CourseChanges { workload_hours: WorkloadHours::parse(20).ok(), ..Default::default() };
        runtime.block_on(elsewhere.update(created.id(), changes, by())).expect("updated");
        let timeout = std::time::Duration::from_secs(30);
        let first = received.recv_timeout(timeout).expect("the creation is followed");
        let second = received.recv_timeout(timeout).expect("the update is followed");
        assert_eq!(
            first,
            RemoteChange { catalog: CatalogName::default_catalog(), course_id: created.id(), changes_listing: true }
        );
        assert_eq!(
            second,
            RemoteChange { catalog: CatalogName::default_catalog(), course_id: created.id(), changes_listing: false }
        );
        assert!(received.try_recv().is_err(), "nothing else: not the local write, not the refusal");
        drop(follower);
    }

    /// Reads of one course from many threads at once (answered together, ADR 0054) are each
    /// current: a read that starts after another replica acknowledged an update sees it; and a
    /// course is found in its own catalog only.
    #[test]
    fn reads_answered_together_are_each_current_and_of_their_own_catalog() {
        const READERS: usize = 16;
        const UPDATES: i64 = 30;
        let Some(schema) = TestSchema::create() else { return };
        let writer = Catalog::new(schema.open());
        let reader = Arc::new(schema.open());
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let course = runtime.block_on(writer.create(new_course("Lido por muitos", 1), by())).expect("created");
        let (id, acknowledged) = (course.id(), Arc::new(std::sync::atomic::AtomicU64::new(course.version())));
        let writing = Arc::new(AtomicBool::new(true));
        // Half of the reads awaited on a runtime through the catalog (the store's reader answers
        // them, no thread waits: ADR 0061), half blocking on threads of their own (a write's own
        // reads), all through the same store's reader.
        let tasks = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().expect("runtime");
        let read_catalog = Catalog::new(PostgresStore::clone(&reader));
        let other_catalog = read_catalog.scoped(&CatalogName::parse("outro").expect("name"));
        let awaited: Vec<_> = (0..READERS)
            .map(|_| {
                let (read_catalog, other_catalog) = (read_catalog.clone(), other_catalog.clone());
                let (acknowledged, writing) = (Arc::clone(&acknowledged), Arc::clone(&writing));
                tasks.spawn(async move {
                    let mut reads = 0_u64;
                    while writing.load(Ordering::SeqCst) {
                        let before = acknowledged.load(Ordering::SeqCst);
                        let found = read_catalog.get(id).await.expect("found");
                        assert!(
                            found.version() >= before,
                            "stale: version {} awaited after {before} was acknowledged",
                            found.version()
                        );
                        let elsewhere = other_catalog.get(id).await;
                        assert!(matches!(elsewhere, Err(GetCourseError::NotFound { .. })), "{elsewhere:?}");
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let (reader, acknowledged, writing) =
                    (Arc::clone(&reader), Arc::clone(&acknowledged), Arc::clone(&writing));
                std::thread::spawn(move || {
                    let (main, other) = (CatalogName::default_catalog(), CatalogName::parse("outro").expect("name"));
                    let mut reads = 0_u64;
                    while writing.load(Ordering::SeqCst) {
                        let before = acknowledged.load(Ordering::SeqCst);
                        let found = reader.find(&main, id).expect("read").expect("found");
                        assert!(
                            found.version() >= before,
                            "stale: version {} read after {before} was acknowledged",
                            found.version()
                        );
                        assert_eq!(reader.find(&other, id).expect("read"), None, "not in another catalog");
                        reads += 1;
                    }
                    reads
                })
            })
            .collect();
        for hours in 2..=UPDATES + 1 {
            let changes = CourseChanges { workload_hours: WorkloadHours::parse(hours).ok(), ..Default::default() };
            let updated = runtime.block_on(writer.update(id, changes, by())).expect("updated");
            acknowledged.store(updated.version(), Ordering::SeqCst);
        }
        writing.store(false, Ordering::SeqCst);
        let reads: u64 = readers.into_iter().map(|reader| reader.join().expect("a reader")).sum();
        assert!(reads > 0, "the readers read");
        let awaited: u64 = awaited.into_iter().map(|task| tasks.block_on(task).expect("an awaiting reader")).sum();
        assert!(awaited > 0, "the awaiting readers read");
        let last = reader.find(&CatalogName::default_catalog(), id).expect("read").expect("found");
        assert_eq!(last.workload_hours().get(), u16::try_from(UPDATES + 1).expect("hours"));
    }

    /// A real COMMIT that loses its connection: a deferred constraint trigger, run by PostgreSQL at
    /// COMMIT, terminates its own backend for one title and refuses another with an error.
    #[test]
    fn a_commit_that_loses_its_connection_is_an_unknown_outcome_and_a_refused_commit_wrote_nothing() {
        let Some(schema) = TestSchema::create() else { return };
        let catalog = Catalog::new(schema.open());
        schema.execute(
            "CREATE FUNCTION at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.title = 'Cai no commit' THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
                IF NEW.title = 'Recusado no commit' THEN RAISE EXCEPTION 'refused at commit'; END IF;
                RETURN NULL;
            END $$;
            CREATE CONSTRAINT TRIGGER at_commit AFTER INSERT ON courses
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION at_commit();",
        );
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let create = |title: &str| runtime.block_on(catalog.create(new_course(title, 10), by()));

        create("Antes").expect("an ordinary creation commits");
        let lost = create("Cai no commit");
        assert!(matches!(lost, Err(CreateCourseError::OutcomeUnknown(_))), "{lost:?}");
        let refused = create("Recusado no commit");
        assert!(matches!(refused, Err(CreateCourseError::Store(_))), "{refused:?}");
        create("Depois").expect("the pool replaced the lost connection");

        let titles: Vec<String> = runtime
            .block_on(catalog.active_page(None, PageSize::default()))
            .expect("page")
            .courses
            .iter()
            .map(|course| course.title().as_str().to_owned())
            .collect();
        assert_eq!(titles, ["Antes", "Depois"], "neither failed COMMIT stored its course");
    }

    #[test]
    fn notices_are_read_only_from_other_origins_of_the_same_schema() {
        let id = CourseId::generate();
        let payload = notice_payload("b", Some("s1"), "padrao", &id.to_string(), true);
        assert_eq!(
            parse_notice(&payload, "a", "s1"),
            Some(RemoteChange { catalog: CatalogName::default_catalog(), course_id: id, changes_listing: true })
        );
        assert_eq!(parse_notice(&payload, "b", "s1"), None, "its own");
        assert_eq!(parse_notice(&payload, "a", "s2"), None, "another schema");
        let default_schema = notice_payload("b", None, "padrao", &id.to_string(), false);
        assert_eq!(
            parse_notice(&default_schema, "a", ""),
            Some(RemoteChange { catalog: CatalogName::default_catalog(), course_id: id, changes_listing: false })
        );
        for garbage in ["", "b s1", "b s1 not-an-id 1", &format!("b s1 {id} 2"), &format!("b s1 {id} 1 extra")] {
            assert_eq!(parse_notice(garbage, "a", "s1"), None, "{garbage:?}");
        }
    }
}

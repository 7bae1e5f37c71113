//! Bulk writes into a SQLite file (ADR 0057): [`DeferredIndexes`], the indexes and the full-text
//! trigger left out while the rows of one transaction go in and built once at its end, and
//! [`SqliteBulkImport`], an `import` into a database with no course at all, written that way.
//!
//! Kept row by row, every index over random keys (ids, title keys) and the trigram index take a
//! page walk per row, and past the page cache each walk reads and writes pages of the file: at a
//! million courses that was four fifths of an import's time. Built once over the full table, an
//! index is one sort and the trigram index one `rebuild` (one merged segment, as a search wants it).
//! That is only safe in ONE transaction that holds the write lock from before the rows until after
//! the indexes: no other writer can add a row the missing unique index would have refused, and no
//! reader ever sees the tables without their indexes (WAL readers keep the snapshot before it).

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::{BigInt, Bool, Text};
use diesel::sqlite::SqliteConnection;

use crate::rules::{CatalogName, Course, Provenance};
use crate::store::port::{BulkImport, StoreError, WriteError};
use crate::store::sql::schema::courses;
use crate::store::sql::{CourseRow, IMPORT_PAGE_CACHE, IMPORT_ROWS_PER_STATEMENT, TITLE_INDEX, write_error};

/// The trigger that adds each new course's title key to the trigram index (migration
/// `catalog_scale`), and that index.
const SEARCH_INSERT_TRIGGER: &str = "courses_search_insert";
const SEARCH_INDEX: &str = "courses_title_search";
/// The trigger that counts each new active course in `catalog_counters` (an upsert of one row per
/// course: 8.4 s for a million rows against 2.2 s without it and 0.6 s to count them once, ADR 0059).
const COUNT_INSERT_TRIGGER: &str = "courses_count_insert";
/// Each catalog's active courses counted once, over the table (what [`COUNT_INSERT_TRIGGER`]
/// would have made of rows inserted into a database without courses; a counter copied by
/// `migrate` is set to its rows too, and `migrate` then checks it against its source's).
const RECOUNT: &str = "INSERT INTO catalog_counters (catalog, active_courses)
     SELECT catalog, COUNT(*) FROM courses WHERE archived = 0 GROUP BY catalog
     ON CONFLICT (catalog) DO UPDATE SET active_courses = excluded.active_courses;";

/// Foreign keys off on the import's own connection, for its one transaction (set before `BEGIN`:
/// SQLite ignores the setting inside a transaction). With them on, each history entry looks its
/// course up in `courses.id`'s unique index, a random key: past the page cache at a million courses
/// that was about 5 of the rows' 23 s (ADR 0060). The import checks them once instead, after its
/// indexes are built: [`ORPHAN_HISTORY`].
const NO_FOREIGN_KEYS: &str = "PRAGMA foreign_keys = OFF;";

/// Whether a history entry names a course the table does not hold: what the history's foreign key
/// would have refused row by row (the import writes the two tables alone). Run once the indexes are
/// built, SQLite's plan reads the history through `course_history_by_course`, in course id order,
/// so each lookup in `courses.id`'s index lands beside the one before: 0.4 s at a million courses,
/// against 3.5 s for `PRAGMA foreign_key_check`, which reads the history in its own order.
const ORPHAN_HISTORY: &str = "EXISTS (SELECT 1 FROM course_history AS entry
     WHERE NOT EXISTS (SELECT 1 FROM courses WHERE courses.id = entry.course_id))";

/// The history entries of the courses a batch just added (those whose `position` is past the
/// bound one), read back from `courses` in position order, as [`crate::store::sql::insert_imported_batch`] would
/// write them from the rows: a creation (no `before`) at version 1; past it, an arrival whose
/// `before` and `after` are both the course as it came. Binds: author, tool, arguments, the last
/// position before the batch.
const HISTORY_OF_NEW_COURSES: &str = "INSERT INTO course_history (catalog, course_id, author, tool, arguments,
         before_title, before_workload_hours, before_archived, before_version, before_updated_at,
         after_title, after_workload_hours, after_archived, after_version, after_updated_at)
     SELECT catalog, id, ?, ?, ?,
         CASE WHEN version > 1 THEN title END, CASE WHEN version > 1 THEN workload_hours END,
         CASE WHEN version > 1 THEN archived END, CASE WHEN version > 1 THEN version END,
         CASE WHEN version > 1 THEN updated_at END,
         title, workload_hours, archived, version, updated_at
     FROM courses WHERE position > ? ORDER BY position";

/// The page cache while the indexes are built ([`DeferredIndexes::rebuild`]).
const BUILD_PAGE_CACHE: &str = "PRAGMA cache_size = -2048;";

/// Helper threads an index build may sort with (SQLite's default is none). On two cores the four
/// indexes of a million-course import took 4.3–5.1 s against 7.0 s (ADR 0059); set back to none
/// after.
const BUILD_THREADS: &str = "PRAGMA threads = 2;";
const NO_HELPER_THREADS: &str = "PRAGMA threads = 0;";

/// How much the trigram index's `rebuild` gathers in memory before it writes a segment, in bytes
/// (FTS5's `hashsize`, 1 MiB by default). Each segment written is merged again later: at a million
/// courses the rebuild took 9.3 s against 20.0 s, and left 6 segments against 14 (ADR 0059). It is
/// a setting the index keeps in its `_config` table, so it is set back after the rebuild and its
/// row removed.
const REBUILD_HASH_BYTES: u32 = 32 * 1024 * 1024;
/// FTS5's own `hashsize`, what the trigram index uses for every later write.
const DEFAULT_HASH_BYTES: u32 = 1024 * 1024;
/// FTS5's own `automerge` (segments of one level it merges as it writes). It is 0 during the
/// rebuild: the rebuild's segments are then written and left, not merged as they come. At a million
/// courses the rebuild took 3.6–3.7 s against 4.1–5.1 s, and left 4 segments against 5 (ADR
/// 0060). Set back after the rebuild, and its `_config` row removed.
const DEFAULT_AUTOMERGE: u32 = 4;

/// One object of the schema, as `sqlite_master` holds it.
#[derive(Debug, QueryableByName)]
struct SchemaObject {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    sql: String,
}

/// What [`DeferredIndexes::drop_all`] dropped, to build again with [`DeferredIndexes::rebuild`].
#[derive(Debug)]
pub(crate) struct DeferredIndexes {
    /// Each index's name and its `CREATE INDEX` statement, as the schema holds it.
    indexes: Vec<(String, String)>,
    /// The trigram index's insert trigger, when the schema has it.
    search_trigger: Option<String>,
    /// The active counter's insert trigger, when the schema has it.
    count_trigger: Option<String>,
}

impl DeferredIndexes {
    /// Drops, in the caller's transaction, every index the schema declares on the tables a bulk
    /// write fills (not the automatic index of a PRIMARY KEY or UNIQUE column: `courses.id`'s
    /// uniqueness is still checked row by row, and the history's foreign key finds its course
    /// through it), the trigger that feeds the trigram index and the one that counts active
    /// courses. Indexes are read from `sqlite_master`, not named here, so a later migration's
    /// index is built again too, by its own statement.
    pub(crate) fn drop_all(connection: &mut SqliteConnection) -> QueryResult<Self> {
        let objects: Vec<SchemaObject> = diesel::sql_query(
            "SELECT type AS kind, name, sql FROM sqlite_master
             WHERE (type = 'index' AND sql IS NOT NULL
                    AND tbl_name IN ('courses', 'course_history', 'course_creations', 'course_history_evidence'))
                OR (type = 'trigger' AND name IN (?, ?))
             ORDER BY type, name",
        )
        .bind::<Text, _>(SEARCH_INSERT_TRIGGER)
        .bind::<Text, _>(COUNT_INSERT_TRIGGER)
        .load(connection)?;
        let mut deferred = Self { indexes: Vec::new(), search_trigger: None, count_trigger: None };
        for object in objects {
            let quoted = object.name.replace('"', "\"\"");
            if object.kind == "trigger" {
                connection.batch_execute(&format!("DROP TRIGGER \"{quoted}\";"))?;
                if object.name == COUNT_INSERT_TRIGGER {
                    deferred.count_trigger = Some(object.sql);
                } else {
                    deferred.search_trigger = Some(object.sql);
                }
            } else {
                connection.batch_execute(&format!("DROP INDEX \"{quoted}\";"))?;
                deferred.indexes.push((object.name, object.sql));
            }
        }
        Ok(deferred)
    }

    /// Builds again what [`drop_all`](Self::drop_all) dropped, over every row the tables hold now:
    /// each index by its statement (one sort), the trigram index by one `rebuild` from `courses`,
    /// then its trigger; each catalog's active counter counted once, then its trigger.
    ///
    /// # Errors
    /// The statement's error with the name of the index it builds (the trigram index's for the
    /// search): a unique index the rows break (two active courses of one catalog with one title
    /// key) cannot be built.
    pub(crate) fn rebuild(self, connection: &mut SqliteConnection) -> Result<(), (String, DieselError)> {
        // SQLite's default page cache (2 MiB) from here on: an index build sorts in memory up to
        // the cache's size before it merges runs from a temporary file, and at a million courses
        // a 32 MiB sort took 30 MB more memory and more time than runs of 2 MiB (3.7 s against
        // 2.6 s for two indexes; the trigram index's rebuild the same either way).
        connection.batch_execute(BUILD_PAGE_CACHE).map_err(|error| (String::new(), error))?;
        if let Some(trigger) = self.count_trigger {
            connection
                .batch_execute(&format!("{RECOUNT} {trigger};"))
                .map_err(|error| (COUNT_INSERT_TRIGGER.to_owned(), error))?;
        }
        connection.batch_execute(BUILD_THREADS).map_err(|error| (String::new(), error))?;
        for (name, definition) in self.indexes {
            connection.batch_execute(&definition).map_err(|error| (name, error))?;
        }
        connection.batch_execute(NO_HELPER_THREADS).map_err(|error| (String::new(), error))?;
        if let Some(trigger) = self.search_trigger {
            connection
                .batch_execute(&format!(
                    "INSERT INTO {SEARCH_INDEX} ({SEARCH_INDEX}, rank) VALUES ('hashsize', {REBUILD_HASH_BYTES});
                     INSERT INTO {SEARCH_INDEX} ({SEARCH_INDEX}, rank) VALUES ('automerge', 0);
                     INSERT INTO {SEARCH_INDEX} ({SEARCH_INDEX}) VALUES ('rebuild');
                     INSERT INTO {SEARCH_INDEX} ({SEARCH_INDEX}, rank) VALUES ('hashsize', {DEFAULT_HASH_BYTES});
                     INSERT INTO {SEARCH_INDEX} ({SEARCH_INDEX}, rank) VALUES ('automerge', {DEFAULT_AUTOMERGE});
                     DELETE FROM {SEARCH_INDEX}_config WHERE k IN ('hashsize', 'automerge');
                     {trigger};"
                ))
                .map_err(|error| (SEARCH_INDEX.to_owned(), error))?;
        }
        Ok(())
    }
}

/// An import into a SQLite file with no course (see the module's documentation): one connection of
/// its own, in one `BEGIN IMMEDIATE` transaction from [`begin`](Self::begin) to
/// [`BulkImport::commit`]; dropped before, it rolls back.
pub(crate) struct SqliteBulkImport {
    connection: SqliteConnection,
    catalog: CatalogName,
    provenance: Provenance,
    /// Taken by the commit.
    deferred: Option<DeferredIndexes>,
    /// Whether the transaction is still open (to roll back on drop).
    open: bool,
}

impl std::fmt::Debug for SqliteBulkImport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SqliteBulkImport").field("catalog", &self.catalog).finish_non_exhaustive()
    }
}

impl SqliteBulkImport {
    /// Takes the write lock on `connection` and, if the database holds no course, drops the
    /// deferred indexes and returns the import; `None` (the lock released) otherwise. The
    /// connection is the import's own, dropped with it: its foreign keys stay off
    /// ([`NO_FOREIGN_KEYS`]).
    pub(crate) fn begin(
        mut connection: SqliteConnection,
        catalog: &CatalogName,
        provenance: &Provenance,
    ) -> QueryResult<Option<Self>> {
        connection.batch_execute(IMPORT_PAGE_CACHE)?;
        connection.batch_execute(NO_FOREIGN_KEYS)?;
        connection.batch_execute("BEGIN IMMEDIATE;")?;
        let mut import =
            Self { connection, catalog: catalog.clone(), provenance: provenance.clone(), deferred: None, open: true };
        let empty = !diesel::select(diesel::dsl::exists(courses::table.select(courses::position)))
            .get_result::<bool>(&mut import.connection)?;
        if !empty {
            return Ok(None);
        }
        import.deferred = Some(DeferredIndexes::drop_all(&mut import.connection)?);
        Ok(Some(import))
    }
}

impl SqliteBulkImport {
    fn insert(&mut self, rows: &[CourseRow]) -> QueryResult<()> {
        let connection = &mut self.connection;
        let last: Option<i64> = courses::table.select(diesel::dsl::max(courses::position)).get_result(connection)?;
        // A full chunk goes in as an array, whose statement diesel keeps prepared (a `Vec`'s it
        // prepares again each time: parsing 9,000 placeholders was about a tenth of the writing,
        // ADR 0060); the batch's rest in one more.
        for chunk in rows.chunks(IMPORT_ROWS_PER_STATEMENT) {
            match <&[CourseRow; IMPORT_ROWS_PER_STATEMENT]>::try_from(chunk) {
                Ok(full) => diesel::insert_into(courses::table).values(full).execute(connection)?,
                Err(_) => diesel::insert_into(courses::table).values(chunk).execute(connection)?,
            };
        }
        diesel::sql_query(HISTORY_OF_NEW_COURSES)
            .bind::<Text, _>(self.provenance.author())
            .bind::<Text, _>(self.provenance.tool())
            .bind::<Text, _>(self.provenance.arguments())
            .bind::<BigInt, _>(last.unwrap_or(0))
            .execute(connection)?;
        Ok(())
    }
}

impl BulkImport for SqliteBulkImport {
    /// The batch's courses, then their history entries read back from them
    /// ([`HISTORY_OF_NEW_COURSES`]). No staging (ADR 0053's is for tables with their indexes and
    /// triggers; these have none now). A unique violation here can only be `courses.id`'s (the
    /// title index is not built yet): it is not looked for among the titles, which with no index
    /// would read the whole table once per row of the batch.
    fn add(&mut self, courses: &[Course]) -> Result<(), WriteError> {
        let rows = courses
            .iter()
            .map(|course| CourseRow::from_course(&self.catalog, course))
            .collect::<Result<Vec<_>, _>>()?;
        self.insert(&rows).map_err(|error| write_error("cannot import a batch of courses", error))
    }

    fn commit(mut self: Box<Self>) -> Result<(), WriteError> {
        if let Some(deferred) = self.deferred.take() {
            deferred.rebuild(&mut self.connection).map_err(|(index, error)| match error {
                DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) if index == TITLE_INDEX => {
                    WriteError::DuplicateTitle
                }
                error => WriteError::Store(StoreError::new("cannot build the indexes", error)),
            })?;
        }
        let orphaned = diesel::select(diesel::dsl::sql::<Bool>(ORPHAN_HISTORY))
            .get_result::<bool>(&mut self.connection)
            .map_err(|error| WriteError::Store(StoreError::new("cannot check the history's courses", error)))?;
        if orphaned {
            return Err(WriteError::Store(StoreError::message("a history entry of the import names no course")));
        }
        // Once COMMIT is sent, whether it took is not known on an error: the import run again
        // tells (an empty database is imported whole again; a full one skips every row).
        self.open = false;
        self.connection
            .batch_execute("COMMIT;")
            .map_err(|error| WriteError::OutcomeUnknown(StoreError::new("cannot commit the import", error)))?;
        // The transaction's pages are all in the WAL: copy them into the file now and empty it,
        // rather than leave a WAL the size of the database. A reader may hold it back (a server
        // on the file): then SQLite's own checkpoints finish the work later.
        if let Err(error) = self.connection.batch_execute("PRAGMA wal_checkpoint(TRUNCATE);") {
            tracing::debug!(%error, "the WAL was not checkpointed after the import");
        }
        Ok(())
    }
}

impl Drop for SqliteBulkImport {
    fn drop(&mut self) {
        if self.open {
            // Nothing of the import is kept. A failure to roll back leaves the transaction to
            // SQLite, which rolls it back when the connection closes, just after.
            if let Err(error) = self.connection.batch_execute("ROLLBACK;") {
                tracing::debug!(%error, "the import's transaction was not rolled back explicitly");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use diesel::connection::SimpleConnection;
    use diesel::prelude::*;
    use time::OffsetDateTime;

    use super::SqliteBulkImport;
    use crate::rules::{CatalogName, Course, CourseId, Provenance, TitleSearchKey};
    use crate::store::port::{BulkImport, CourseStore, WriteError};
    use crate::store::sqlite::{SqliteStore, schema, writer};
    use crate::testing::{by, new_course};

    fn catalog() -> CatalogName {
        CatalogName::default_catalog()
    }

    fn importer() -> Provenance {
        Provenance::new("operadora", "importar", "{}")
    }

    /// `count` active courses titled `<prefix> <n>`, then an archived one repeating the first title.
    fn courses(prefix: &str, count: i64) -> Vec<Course> {
        let now = OffsetDateTime::now_utc();
        let mut courses: Vec<Course> = (0..count)
            .map(|index| Course::create(new_course(&format!("{prefix} {index}"), 1 + index % 1000), now))
            .collect();
        let archived =
            Course::imported(CourseId::generate(), new_course(&format!("{prefix} 0"), 5), true, 2, now, now, now)
                .expect("a valid archived course");
        courses.push(archived);
        courses
    }

    /// The file's schema as `sqlite_master` holds it (kind, name, SQL), in a stable order.
    fn schema_of(path: &Path) -> Vec<(String, String, Option<String>)> {
        #[derive(QueryableByName)]
        struct Object {
            #[diesel(sql_type = diesel::sql_types::Text)]
            kind: String,
            #[diesel(sql_type = diesel::sql_types::Text)]
            name: String,
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
            sql: Option<String>,
        }
        let mut connection = connection_to(path);
        diesel::sql_query("SELECT type AS kind, name, sql FROM sqlite_master ORDER BY type, name")
            .load::<Object>(&mut connection)
            .expect("the schema")
            .into_iter()
            .map(|object| (object.kind, object.name, object.sql))
            .collect()
    }

    fn connection_to(path: &Path) -> SqliteConnection {
        let mut connection = SqliteConnection::establish(&path.to_string_lossy()).expect("open the file");
        connection.batch_execute("PRAGMA busy_timeout = 10000").expect("busy timeout");
        connection
    }

    fn search(store: &SqliteStore, typed: &str) -> Vec<String> {
        let key = TitleSearchKey::of_typed(typed).expect("a search key");
        store
            .search_active(&catalog(), &key, 100)
            .expect("searched")
            .iter()
            .map(|course| course.title().as_str().to_owned())
            .collect()
    }

    fn fresh() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore) {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("cursos.db");
        let store = SqliteStore::open(&path).expect("open store");
        (folder, path, store)
    }

    #[test]
    fn a_bulk_import_stores_every_course_with_its_history_and_builds_the_same_schema_again() {
        let (_folder, path, store) = fresh();
        let before = schema_of(&path);
        let (first, second) = (courses("Curso de Rust", 150), courses("Oficina de Go", 40));
        let mut import = store.begin_bulk_import(&catalog(), &importer()).expect("begun").expect("an empty database");
        import.add(&first).expect("added");
        import.add(&second).expect("added");
        import.commit().expect("committed");

        assert_eq!(schema_of(&path), before, "every index and trigger, by its own statement");
        let mut connection = connection_to(&path);
        assert!(schema::schema_differences(&mut connection).expect("compared").is_empty());
        connection
            .batch_execute("INSERT INTO courses_title_search (courses_title_search) VALUES ('integrity-check');")
            .expect("the trigram index matches the courses");
        assert_eq!(store.count_active(&catalog()).expect("count"), 190, "the counters, counted after the rows");
        for course in first.iter().chain(&second) {
            assert_eq!(store.find(&catalog(), course.id()).expect("read").as_ref(), Some(course));
            let history = store.history_page(&catalog(), course, None, 10).expect("history");
            assert_eq!(history.len(), 1, "one entry per course");
        }
        assert_eq!(
            search(&store, "oficina de go 3"),
            [
                "Oficina de Go 3",
                "Oficina de Go 30",
                "Oficina de Go 31",
                "Oficina de Go 32",
                "Oficina de Go 33",
                "Oficina de Go 34",
                "Oficina de Go 35",
                "Oficina de Go 36",
                "Oficina de Go 37",
                "Oficina de Go 38",
                "Oficina de Go 39"
            ]
        );
        // The unique title index is back, and so is the trigram index's trigger.
        let taken = Course::create(new_course("curso de rust 7", 3), OffsetDateTime::now_utc());
        assert!(matches!(store.insert(&catalog(), &taken, &by()), Err(WriteError::DuplicateTitle)));
        let later = Course::create(new_course("Depois da importação", 3), OffsetDateTime::now_utc());
        store.insert(&catalog(), &later, &by()).expect("stored");
        assert_eq!(search(&store, "da importa"), ["Depois da importação"]);
        assert_eq!(store.count_active(&catalog()).expect("count"), 191, "and the counting trigger");
        let rebuild_settings: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "(SELECT COUNT(*) FROM courses_title_search_config WHERE k <> 'version')",
        ))
        .get_result(&mut connection)
        .expect("read the trigram index's settings");
        assert_eq!(rebuild_settings, 0, "the rebuild's hash size and merging are not kept");
        drop(store);
        SqliteStore::open(&path).expect("the file opens again, its schema the migrations'");
    }

    #[test]
    fn a_database_with_a_course_of_any_catalog_gets_no_bulk_import() {
        let (_folder, _path, store) = fresh();
        let elsewhere = CatalogName::parse("outra").expect("valid");
        store.insert(&elsewhere, &courses("Outro", 1)[0], &by()).expect("stored");
        assert!(store.begin_bulk_import(&catalog(), &importer()).expect("asked").is_none());
        // And the write lock it took to look is released: a write goes through at once.
        store.insert(&catalog(), &courses("Curso", 1)[0], &by()).expect("stored");
    }

    #[test]
    fn readers_see_the_database_before_the_import_until_it_commits() {
        let (_folder, path, store) = fresh();
        let rows = courses("Curso", 100);
        let mut import = store.begin_bulk_import(&catalog(), &importer()).expect("begun").expect("an empty database");
        import.add(&rows).expect("added");
        assert_eq!(store.count_active(&catalog()).expect("count"), 0);
        assert_eq!(store.find(&catalog(), rows[0].id()).expect("read"), None);
        let mut reader = connection_to(&path);
        let indexes: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "(SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'course%')",
        ))
        .get_result(&mut reader)
        .expect("read the schema");
        assert_eq!(indexes, 4, "another connection still sees every index");
        import.commit().expect("committed");
        assert_eq!(store.count_active(&catalog()).expect("count"), 100);
    }

    #[test]
    fn a_bulk_import_dropped_before_its_commit_leaves_the_database_as_it_was() {
        let (_folder, path, store) = fresh();
        let before = schema_of(&path);
        let mut import = store.begin_bulk_import(&catalog(), &importer()).expect("begun").expect("an empty database");
        import.add(&courses("Curso", 50)).expect("added");
        drop(import);
        assert_eq!(schema_of(&path), before);
        assert_eq!(store.count_active(&catalog()).expect("count"), 0);
        let course = Course::create(new_course("Curso de SQL", 3), OffsetDateTime::now_utc());
        store.insert(&catalog(), &course, &by()).expect("stored");
        assert_eq!(search(&store, "de sql"), ["Curso de SQL"], "the trigger fed the trigram index");
    }

    #[test]
    fn two_active_courses_with_one_title_fail_the_commit_and_nothing_is_written() {
        let (_folder, path, store) = fresh();
        let before = schema_of(&path);
        let now = OffsetDateTime::now_utc();
        let twins = [Course::create(new_course("Rust", 1), now), Course::create(new_course(" RUST ", 2), now)];
        let mut import = store.begin_bulk_import(&catalog(), &importer()).expect("begun").expect("an empty database");
        import.add(&twins).expect("no title index while the rows go in");
        assert!(matches!(import.commit(), Err(WriteError::DuplicateTitle)));
        assert_eq!(store.count_active(&catalog()).expect("count"), 0);
        assert_eq!(store.find(&catalog(), twins[0].id()).expect("read"), None);
        assert_eq!(schema_of(&path), before);
    }

    /// Every row of `table`, each column quoted, in `order`: one text to compare whole.
    fn rows_of(path: &Path, table: &str, columns: &str, order: &str) -> String {
        let quoted =
            columns.split(", ").map(|column| format!("quote({column})")).collect::<Vec<_>>().join(" || '|' || ");
        diesel::select(diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::Text>>(&format!(
            "(SELECT group_concat(line, char(10)) FROM (SELECT {quoted} AS line FROM {table} ORDER BY {order}))"
        )))
        .get_result::<Option<String>>(&mut connection_to(path))
        .expect("read the table")
        .unwrap_or_default()
    }

    #[test]
    fn a_bulk_import_writes_the_rows_and_history_an_import_batch_by_batch_writes() {
        // Two full statements and a rest, over two batches, an archived arrival at version 2 last.
        let rows = courses("Curso", 2300);
        let (_bulk_folder, bulk_path, bulk) = fresh();
        let mut import = bulk.begin_bulk_import(&catalog(), &importer()).expect("begun").expect("an empty database");
        import.add(&rows[..1200]).expect("added");
        import.add(&rows[1200..]).expect("added");
        import.commit().expect("committed");
        let (_folder, path, store) = fresh();
        for batch in [&rows[..1200], &rows[1200..]] {
            store.import_batch(&catalog(), batch, &importer(), false).expect("imported");
        }

        let courses =
            "position, catalog, id, title, title_key, workload_hours, archived, version, created_at, updated_at";
        let history = "seq, catalog, course_id, author, tool, arguments, before_title, before_workload_hours, \
                       before_archived, before_version, before_updated_at, after_title, after_workload_hours, \
                       after_archived, after_version, after_updated_at";
        let bulk_history = rows_of(&bulk_path, "course_history", history, "seq");
        assert_eq!(bulk_history.lines().count(), 2301, "one entry per course");
        assert!(bulk_history.lines().last().expect("the arrival").contains("|2|"), "{bulk_history:.200}");
        assert_eq!(bulk_history, rows_of(&path, "course_history", history, "seq"));
        assert_eq!(rows_of(&bulk_path, "courses", courses, "position"), rows_of(&path, "courses", courses, "position"));
    }

    /// The concrete bulk import into `store`'s empty file at `path`, its connection at hand.
    fn own_import(store: &SqliteStore, path: &Path) -> SqliteBulkImport {
        let connection = writer::open(&path.to_string_lossy(), &store.settings).expect("opened");
        SqliteBulkImport::begin(connection, &catalog(), &importer()).expect("begun").expect("an empty database")
    }

    /// A history entry for a course no table holds.
    fn orphan_entry() -> String {
        format!(
            "INSERT INTO course_history (catalog, course_id, author, tool, arguments, after_title,
                 after_workload_hours, after_archived, after_version, after_updated_at)
             VALUES ('{}', '{}', 'x', 'importar', '{{}}', 'Fantasma', 1, 0, 1, '2026-12-06T00:00:00.000Z');",
            catalog().as_str(),
            CourseId::generate()
        )
    }

    #[test]
    fn a_history_entry_without_its_course_fails_the_commit_though_foreign_keys_are_off() {
        let (_folder, path, store) = fresh();
        let mut import = own_import(&store, &path);
        let rows = courses("Curso", 3);
        import.add(&rows).expect("added");
        import.connection.batch_execute(&orphan_entry()).expect("no foreign key while the rows go in");
        let error = Box::new(import).commit().expect_err("an orphan entry is refused");
        assert!(error.to_string().contains("names no course"), "{error}");
        assert_eq!(store.count_active(&catalog()).expect("count"), 0, "nothing written");
        let mut reader = connection_to(&path);
        let entries: i64 =
            diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>("(SELECT COUNT(*) FROM course_history)"))
                .get_result(&mut reader)
                .expect("read the history");
        assert_eq!(entries, 0);
        // The store's own connections still enforce the key.
        let orphan = reader.batch_execute(&format!("PRAGMA foreign_keys = ON; {}", orphan_entry()));
        assert!(orphan.is_err(), "a connection with foreign keys on refuses it");
    }

    #[test]
    fn a_repeated_id_fails_its_batch_without_a_title_lookup_per_row() {
        use diesel::connection::InstrumentationEvent;

        let (_folder, path, store) = fresh();
        let mut import = own_import(&store, &path);
        let rows = courses("Curso", 300);
        import.add(&rows[..10]).expect("added");
        let statements = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&statements);
        import.connection.set_instrumentation(move |event: InstrumentationEvent<'_>| {
            if let InstrumentationEvent::StartQuery { .. } = event {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        // The batch's last row repeats the id of an earlier batch's first.
        let mut batch = rows[10..].to_vec();
        batch.push(rows[0].clone());
        let error = import.add(&batch).expect_err("the id's unique index refuses the batch");
        assert!(matches!(error, WriteError::Store(_)), "{error:?}");
        // The last position, the statement that failed: with no title index (not built yet), a
        // lookup per row to name the violation would read the whole table once per row (at a
        // million courses, a stall of many minutes before the import could report the line).
        assert_eq!(statements.load(std::sync::atomic::Ordering::Relaxed), 2);
    }

    #[test]
    fn a_repeated_id_fails_its_batch_and_the_import_writes_nothing() {
        let (_folder, _path, store) = fresh();
        let rows = courses("Curso", 3);
        let mut import = store.begin_bulk_import(&catalog(), &importer()).expect("begun").expect("an empty database");
        import.add(&rows).expect("added");
        assert!(import.add(&rows[..1]).is_err(), "the id's own unique index is kept row by row");
        drop(import);
        assert_eq!(store.count_active(&catalog()).expect("count"), 0);
    }
}

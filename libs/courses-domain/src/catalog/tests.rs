//! The catalog's rules, exercised on real stores: every rule on a SQLite file in a temporary
//! folder and on a PostgreSQL schema of its own (`TEST_DATABASE_URL`, by default
//! `postgres://postgres@127.0.0.1:5432/test`), through [`on_both_stores!`]. PostgreSQL is part of
//! this project's machines and CI, where `REQUIRE_POSTGRES=1` makes an unreachable one fail every
//! PostgreSQL test; elsewhere they are skipped and the run says so (`crate::testing`, ADR 0031).

use std::sync::{Arc, Barrier};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};

use crate::catalog::{
    ArchiveCourseError, Catalog, CatalogObserver, CourseChange, CreateCourseError, GetCourseError, NotReady,
    UpdateCourseError,
};
use crate::rules::{
    ApprovalReceipt, CatalogName, Course, CourseChanges, CourseId, CourseTitle, Evidence, IdempotencyKey, PageSize,
    Provenance, WorkloadHours,
};
use crate::store::port::{CourseStore, Unwritable, WriteError};
use crate::store::postgres::PostgresStore;
use crate::store::sqlite::{MIGRATIONS, SqliteStore};
use crate::testing::{by, new_course};

/// Which store a test runs on.
#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn open_catalog(self) -> TestCatalog {
        let database = TestDatabase::new(self);
        TestCatalog { catalog: database.open(), _database: database }
    }
}

/// A fresh, empty database for one test, removed when dropped: a SQLite file in a temporary
/// folder, or a PostgreSQL schema of its own.
enum TestDatabase {
    Sqlite(tempfile::TempDir),
    Postgres(TestSchema),
}

impl TestDatabase {
    fn new(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => Self::Sqlite(tempfile::tempdir().expect("temp dir")),
            Backend::Postgres => Self::Postgres(TestSchema::create().expect("checked by the test's guard")),
        }
    }

    /// A catalog on a store of its own (its own pool, as another process would have).
    fn open(&self) -> Catalog {
        match self {
            Self::Sqlite(folder) => Catalog::new(SqliteStore::open(&sqlite_file(folder)).expect("open store")),
            Self::Postgres(schema) => Catalog::new(schema.open()),
        }
    }

    /// A store of its own, for what only a direct store call can do (a course no rule would make).
    fn open_store(&self) -> Box<dyn CourseStore> {
        match self {
            Self::Sqlite(folder) => Box::new(SqliteStore::open(&sqlite_file(folder)).expect("open store")),
            Self::Postgres(schema) => Box::new(schema.open()),
        }
    }

    /// Runs `sql` on the database directly, as an older program or an operator would.
    fn execute(&self, sql: &str) {
        match self {
            Self::Sqlite(folder) => {
                let path = sqlite_file(folder);
                let mut connection =
                    diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("connect to the file");
                connection.batch_execute(sql).expect("run the statements");
            }
            Self::Postgres(schema) => schema.execute(sql),
        }
    }
}

/// The SQLite file of a test database, in a folder the store creates.
fn sqlite_file(folder: &tempfile::TempDir) -> std::path::PathBuf {
    folder.path().join("nested/folder/cursos.db")
}

/// A uniquely named PostgreSQL schema, dropped with everything in it when the test ends (also
/// when it fails).
pub(crate) struct TestSchema {
    url: String,
    name: String,
}

impl TestSchema {
    /// `None` when PostgreSQL does not answer and `REQUIRE_POSTGRES` is not set: the caller skips
    /// its test (announced once on stderr; ADR 0031).
    pub(crate) fn create() -> Option<Self> {
        let url = crate::testing::postgres_for_tests()?;
        // The store creates it on open.
        Some(Self { url, name: format!("catalog_test_{}", uuid::Uuid::new_v4().simple()) })
    }

    /// A store of its own (its own pool) on this schema.
    pub(crate) fn open(&self) -> PostgresStore {
        PostgresStore::open_in_schema(&self.url, &self.name).expect("open store")
    }

    /// Runs `sql` in this schema on a connection of its own, as an operator would.
    pub(crate) fn execute(&self, sql: &str) {
        self.connect().batch_execute(sql).expect("run the statements");
    }

    /// A connection of its own to this schema (its `search_path`), outside any store's pool.
    pub(crate) fn connect(&self) -> PgConnection {
        let mut connection = PgConnection::establish(&self.url).expect("connect to PostgreSQL");
        connection
            .batch_execute(&format!("SET search_path TO \"{}\", public", self.name))
            .expect("set the search path");
        connection
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        crate::testing::drop_schema(&self.url, &self.name);
    }
}

struct TestCatalog {
    catalog: Catalog,
    _database: TestDatabase,
}

/// Runs each named test (a function taking a [`Backend`]) once on SQLite and once on PostgreSQL,
/// as `sqlite::<name>` and `postgres::<name>`. Async tests run on Tokio's test runtime.
macro_rules! on_both_stores {
    (async: $($async_test:ident),* $(,)?; sync: $($sync_test:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $async_test() { super::$async_test(super::Backend::Sqlite).await; })*
            $(#[test] fn $sync_test() { super::$sync_test(super::Backend::Sqlite); })*
        }
        mod postgres {
            // Skipped, and said so once, where PostgreSQL does not answer and REQUIRE_POSTGRES is unset (ADR 0031).
            $(#[tokio::test] async fn $async_test() {
                if crate::testing::postgres_for_tests().is_some() { super::$async_test(super::Backend::Postgres).await; }
            })*
            $(#[test] fn $sync_test() {
                if crate::testing::postgres_for_tests().is_some() { super::$sync_test(super::Backend::Postgres); }
            })*
        }
    };
}

on_both_stores! {
    async:
        a_created_course_is_active_and_readable_by_its_id,
        a_title_already_used_by_an_active_course_is_refused_case_and_spacing_aside,
        every_spelling_that_displays_like_an_active_title_is_refused_as_a_duplicate,
        keys_stored_under_the_previous_rule_are_recomputed_on_open_and_collide_with_new_titles,
        an_archived_courses_title_may_be_reused,
        a_partial_update_changes_only_the_given_field_and_bumps_the_version,
        an_update_with_nothing_to_change_is_refused,
        an_update_to_the_current_values_writes_nothing,
        an_update_of_an_unknown_course_is_refused,
        an_archived_course_cannot_be_updated,
        renaming_to_another_active_courses_title_is_refused_and_writes_nothing,
        renaming_a_course_to_another_spelling_of_its_own_title_is_allowed,
        archiving_twice_is_a_no_op_success,
        archiving_an_unknown_course_is_refused,
        reading_an_unknown_course_says_not_found,
        an_archived_course_leaves_the_catalog_pages_and_count_but_stays_readable,
        pages_walk_every_active_course_once_oldest_first,
        a_page_exactly_full_has_no_next_page,
        observers_hear_of_every_change_and_of_no_no_op,
        the_active_count_stays_exact_through_creates_archives_and_refusals,
        suggestions_rank_id_prefix_then_title_prefix_then_title_contains_and_skip_archived_courses,
        a_write_that_expects_an_outdated_version_is_refused_and_changes_nothing,
        a_retried_creation_with_the_same_key_returns_the_first_course_and_creates_nothing,
        a_refused_idempotent_creation_leaves_its_key_unused,
        every_accepted_write_is_in_the_history_newest_first_with_who_how_and_the_states,
        refused_replayed_and_no_op_writes_leave_no_history,
        a_long_history_is_paged_newest_first_without_gaps,
        the_history_of_an_unknown_course_is_not_found,
        every_entry_keeps_its_evidence_and_an_archiving_its_receipt_and_entries_without_read_as_not_recorded,
        an_archiving_under_the_allow_setting_records_that_no_one_was_asked,
        two_catalogs_on_one_store_neither_read_nor_change_each_others_courses,
        titles_counts_pages_and_idempotency_keys_are_per_catalog,
        suggestions_come_only_from_the_callers_catalog,
        observers_hear_which_catalog_changed;
    sync:
        a_taken_course_id_is_a_store_failure_and_not_a_duplicate_title,
        two_concurrent_creates_of_the_same_title_from_two_connections_let_exactly_one_win,
        concurrent_updates_of_different_fields_lose_neither,
        concurrent_retries_of_one_key_from_two_connections_create_one_course,
        concurrent_writers_record_exactly_one_history_entry_per_accepted_write,
}

fn title(text: &str) -> CourseTitle {
    CourseTitle::parse(text).expect("valid title")
}

fn hours(value: i64) -> WorkloadHours {
    WorkloadHours::parse(value).expect("valid hours")
}

async fn a_created_course_is_active_and_readable_by_its_id(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("  Arquitetura de Software ", 12), by()).await.expect("created");
    assert_eq!(created.title().as_str(), "Arquitetura de Software");
    assert_eq!(created.workload_hours().get(), 12);
    assert!(!created.is_archived());
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), created);
    assert_eq!(test.catalog.count_active().await.expect("count"), 1);
}

#[tokio::test]
async fn the_store_creates_its_folder_and_the_data_survives_reopening_the_file() {
    let folder = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&folder.path().join("nested/folder/cursos.db")).expect("open store");
    let catalog = Catalog::new(store.clone());
    let created = catalog.create(new_course("Rust", 40), by()).await.expect("created");
    let path = store.path().to_owned();
    drop(catalog);
    drop(store);
    let reopened = Catalog::new(SqliteStore::open(&path).expect("reopen"));
    assert_eq!(reopened.get(created.id()).await.expect("found"), created);
    drop(folder);
}

/// Group commit (ADR 0020): writes that queue while the writer waits for the file's write lock
/// are committed together, one transaction (one fsync) for the lot, and a write of the batch that
/// fails (a duplicate title) rolls back only itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_queued_behind_a_busy_writer_commit_together_and_a_refused_one_fails_alone() {
    const WRITES: usize = 40;
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let store = SqliteStore::open(&path).expect("open store");
    let catalog = Catalog::new(store.clone());
    // Another process holds the write lock: the writer's BEGIN IMMEDIATE waits (busy timeout).
    let mut holder = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("second connection");
    holder.batch_execute("BEGIN IMMEDIATE").expect("take the write lock");
    let commits_before = store.commits();
    let tasks: Vec<_> = (0..WRITES)
        .map(|number| {
            // Three of them want the same title: one wins, two are refused.
            let title = if number % 13 == 5 { "Duplicado".to_owned() } else { format!("Curso {number}") };
            let catalog = catalog.clone();
            tokio::spawn(async move { catalog.create(new_course(&title, 10), by()).await })
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (queued, writing) = store.pending_writes();
        if writing > 0 && queued + writing == WRITES {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the writes never queued: {queued} queued, {writing} writing");
        tokio::task::yield_now().await;
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    holder.batch_execute("ROLLBACK").expect("release the write lock");
    let mut created = Vec::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(course) => created.push(course),
            Err(CreateCourseError::DuplicateTitle { .. }) => refused += 1,
            Err(other) => panic!("unexpected failure: {other:?}"),
        }
    }
    assert_eq!((created.len(), refused), (WRITES - 2, 2));
    // The batch the writer had taken, then every write queued behind it: two transactions.
    let commits = store.commits() - commits_before;
    assert!(commits <= 2, "{WRITES} writes took {commits} transactions");
    assert_eq!(catalog.count_active().await.expect("count"), u64::try_from(WRITES - 2).expect("fits"));
    for course in &created {
        assert_eq!(&catalog.get(course.id()).await.expect("stored"), course);
        let history = catalog.history(course.id(), None, PageSize::default()).await.expect("history");
        assert_eq!(history.entries.len(), 1, "one history entry per create");
    }
}

/// Group commit (ADR 0020): when the batch's transaction cannot start (another process holds the
/// write lock past the busy timeout), every write of the batch fails with a store error and none
/// is written; the writer then recovers for the next writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_cannot_commit_fails_every_write_in_it_and_writes_nothing() {
    const WRITES: usize = 5;
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let store = SqliteStore::open_with_busy_timeout(&path, std::time::Duration::from_millis(300)).expect("open store");
    let catalog = Catalog::new(store.clone());
    let mut holder = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("second connection");
    holder.batch_execute("BEGIN IMMEDIATE").expect("take the write lock");
    let tasks: Vec<_> = (0..WRITES)
        .map(|number| {
            let catalog = catalog.clone();
            tokio::spawn(async move { catalog.create(new_course(&format!("Curso {number}"), 10), by()).await })
        })
        .collect();
    for task in tasks {
        let outcome = task.await.expect("task");
        assert!(matches!(outcome, Err(CreateCourseError::Store(_))), "{outcome:?}");
    }
    holder.batch_execute("ROLLBACK").expect("release the write lock");
    assert_eq!(catalog.count_active().await.expect("count"), 0, "nothing of the failed batches was written");
    let after = catalog.create(new_course("Curso depois", 10), by()).await.expect("the writer recovered");
    assert_eq!(catalog.get(after.id()).await.expect("stored"), after);
    assert_eq!(catalog.count_active().await.expect("count"), 1);
}

async fn a_title_already_used_by_an_active_course_is_refused_case_and_spacing_aside(backend: Backend) {
    let test = backend.open_catalog();
    test.catalog.create(new_course("Arquitetura de Software", 12), by()).await.expect("created");
    let refused = test.catalog.create(new_course("  arquitetura   DE software", 30), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })), "{refused:?}");
    assert_eq!(test.catalog.count_active().await.expect("count"), 1, "nothing was written");
}

async fn every_spelling_that_displays_like_an_active_title_is_refused_as_a_duplicate(backend: Backend) {
    let test = backend.open_catalog();
    let cafe = test.catalog.create(new_course("Café", 12), by()).await.expect("created");
    for spelling in ["Cafe\u{301}", "CAFÉ", "Ｃａｆé", "cafe\u{301}"] {
        let refused = test.catalog.create(new_course(spelling, 30), by()).await;
        assert!(matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })), "{spelling:?}: {refused:?}");
    }
    let go = test.catalog.create(new_course("Go", 10), by()).await.expect("created");
    let changes = CourseChanges { title: Some(title("Cafe\u{301}")), ..CourseChanges::default() };
    let refused = test.catalog.update(go.id(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::DuplicateTitle { .. })), "{refused:?}");
    assert_eq!(test.catalog.count_active().await.expect("count"), 2, "nothing else was written");
    assert_eq!(test.catalog.get(cafe.id()).await.expect("found").title().as_str(), "Café");
}

/// A database written by a program of the previous title rule (keys computed without
/// normalization, titles with invisible characters accepted) is brought to today's rule when a
/// store opens it: its keys collide with new titles as today's keys would, and its odd titles stay
/// readable.
async fn keys_stored_under_the_previous_rule_are_recomputed_on_open_and_collide_with_new_titles(backend: Backend) {
    let database = TestDatabase::new(backend);
    drop(database.open());
    let legacy = [
        ("00000000-0000-4000-8000-000000000001", "Cafe\u{301}", "cafe\u{301}", false),
        ("00000000-0000-4000-8000-000000000002", "\u{202E}Rust", "\u{202E}rust", false),
        ("00000000-0000-4000-8000-000000000003", "Curso X", "curso x", false),
        ("00000000-0000-4000-8000-000000000004", "Curso\u{200B} X", "curso\u{200B} x", false),
        ("00000000-0000-4000-8000-000000000005", "Go\u{FEFF}", "go\u{FEFF}", true),
    ];
    let rows: Vec<String> = legacy
        .iter()
        .map(|(id, title, key, archived)| {
            format!(
                "('padrao', '{id}', '{title}', '{key}', 10, {archived}, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')"
            )
        })
        .collect();
    database.execute(&format!(
        "INSERT INTO courses (catalog, id, title, title_key, workload_hours, archived, version, created_at, updated_at) \
         VALUES {};
         UPDATE title_key_rule SET version = 1;",
        rows.join(", ")
    ));
    let catalog = database.open();
    for (spelling, holder) in [("Café", 1), ("RUST", 2), ("curso x", 3)] {
        let refused = catalog.create(new_course(spelling, 30), by()).await;
        assert!(
            matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })),
            "{spelling:?} vs {holder}: {refused:?}"
        );
    }
    catalog.create(new_course("Go", 30), by()).await.expect("an archived course's title may be reused");
    // Every legacy course is still readable, and the two that are now duplicates are both active.
    for (id, title, _, archived) in legacy {
        let course = catalog.get(CourseId::parse(id).expect("id")).await.expect("readable");
        assert_eq!((course.title().as_str(), course.is_archived()), (title, archived));
    }
    let page = catalog.active_page(None, PageSize::default()).await.expect("page");
    assert_eq!(page.courses.len(), 5, "four legacy courses and the new Go");
    // A second open finds the keys at today's rule and leaves them.
    let again = database.open();
    let refused = again.create(new_course("CAFÉ", 1), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })), "{refused:?}");
}

async fn an_archived_courses_title_may_be_reused(backend: Backend) {
    let test = backend.open_catalog();
    let first = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    test.catalog.archive(first.id(), by()).await.expect("archived");
    let second = test.catalog.create(new_course("rust", 20), by()).await.expect("title reused");
    assert_ne!(first.id(), second.id());
    assert!(test.catalog.get(first.id()).await.expect("still readable").is_archived());
}

async fn a_partial_update_changes_only_the_given_field_and_bumps_the_version(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    let updated = test.catalog.update(created.id(), changes, by()).await.expect("updated");
    assert_eq!((updated.title().as_str(), updated.workload_hours().get(), updated.version()), ("Rust", 20, 2));
    assert!(updated.updated_at() >= created.updated_at());
    assert_eq!(updated.created_at(), created.created_at());
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), updated);
}

async fn an_update_with_nothing_to_change_is_refused(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let refused = test.catalog.update(created.id(), CourseChanges::default(), by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::NothingToUpdate)), "{refused:?}");
}

async fn an_update_to_the_current_values_writes_nothing(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let same = CourseChanges { title: Some(title("Rust")), workload_hours: Some(hours(10)) };
    assert_eq!(test.catalog.update(created.id(), same, by()).await.expect("accepted"), created);
}

async fn an_update_of_an_unknown_course_is_refused(backend: Backend) {
    let test = backend.open_catalog();
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    let refused = test.catalog.update(CourseId::generate(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::NotFound { .. })), "{refused:?}");
}

async fn an_archived_course_cannot_be_updated(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let archived = test.catalog.archive(created.id(), by()).await.expect("archived");
    let changes = CourseChanges { title: Some(title("Go")), ..CourseChanges::default() };
    let refused = test.catalog.update(created.id(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::Archived { .. })), "{refused:?}");
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), archived, "nothing was written");
}

async fn renaming_to_another_active_courses_title_is_refused_and_writes_nothing(backend: Backend) {
    let test = backend.open_catalog();
    test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let go = test.catalog.create(new_course("Go", 10), by()).await.expect("created");
    let changes = CourseChanges { title: Some(title("RUST")), workload_hours: Some(hours(99)) };
    let refused = test.catalog.update(go.id(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::DuplicateTitle { .. })), "{refused:?}");
    assert_eq!(test.catalog.get(go.id()).await.expect("found"), go);
}

async fn renaming_a_course_to_another_spelling_of_its_own_title_is_allowed(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("rust avançado", 10), by()).await.expect("created");
    let changes = CourseChanges { title: Some(title("Rust Avançado")), ..CourseChanges::default() };
    assert_eq!(
        test.catalog.update(created.id(), changes, by()).await.expect("updated").title().as_str(),
        "Rust Avançado"
    );
}

async fn archiving_twice_is_a_no_op_success(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let first = test.catalog.archive(created.id(), by()).await.expect("archived");
    let second = test.catalog.archive(created.id(), by()).await.expect("archived again");
    assert!(first.is_archived());
    assert_eq!(first, second, "the second archive changed nothing");
    assert_eq!(first.version(), 2);
}

async fn archiving_an_unknown_course_is_refused(backend: Backend) {
    let test = backend.open_catalog();
    let refused = test.catalog.archive(CourseId::generate(), by()).await;
    assert!(matches!(refused, Err(ArchiveCourseError::NotFound { .. })), "{refused:?}");
}

async fn reading_an_unknown_course_says_not_found(backend: Backend) {
    let test = backend.open_catalog();
    assert!(matches!(test.catalog.get(CourseId::generate()).await, Err(GetCourseError::NotFound { .. })));
}

async fn an_archived_course_leaves_the_catalog_pages_and_count_but_stays_readable(backend: Backend) {
    let test = backend.open_catalog();
    let kept = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let gone = test.catalog.create(new_course("Go", 10), by()).await.expect("created");
    test.catalog.archive(gone.id(), by()).await.expect("archived");
    let page = test.catalog.active_page(None, PageSize::default()).await.expect("page");
    assert_eq!(page.courses, vec![kept]);
    assert_eq!(page.next, None);
    assert_eq!(test.catalog.count_active().await.expect("count"), 1);
    assert!(test.catalog.get(gone.id()).await.expect("readable").is_archived());
}

async fn pages_walk_every_active_course_once_oldest_first(backend: Backend) {
    let test = backend.open_catalog();
    let mut created = Vec::new();
    for number in 0..250 {
        created.push(test.catalog.create(new_course(&format!("Curso {number:03}"), 10), by()).await.expect("created"));
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = test.catalog.active_page(cursor, PageSize::default()).await.expect("page");
        assert!(page.courses.len() <= 100);
        pages += 1;
        seen.extend(page.courses);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, created, "creation order, even for courses created in the same millisecond");
}

async fn a_page_exactly_full_has_no_next_page(backend: Backend) {
    let test = backend.open_catalog();
    for number in 0..5 {
        test.catalog.create(new_course(&format!("Curso {number}"), 10), by()).await.expect("created");
    }
    let page = test.catalog.active_page(None, PageSize::clamped(5)).await.expect("page");
    assert_eq!((page.courses.len(), page.next), (5, None));
    let page = test.catalog.active_page(None, PageSize::clamped(4)).await.expect("page");
    assert_eq!(page.courses.len(), 4);
    let rest = test.catalog.active_page(page.next, PageSize::clamped(4)).await.expect("page");
    assert_eq!((rest.courses.len(), rest.next), (1, None));
}

/// Runs `calls[i]` on `catalogs[i]`, each on its own thread and runtime, released together by a
/// barrier: two processes sharing one database, racing. Returns the outcomes in order.
/// Both backends tell the title index from the other unique constraints the same way, by the
/// index (ADR 0033): a course whose id is taken (another unique index of `courses`) is a store
/// failure, not a duplicate title, and a taken title under a fresh id is a duplicate title.
fn a_taken_course_id_is_a_store_failure_and_not_a_duplicate_title(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let now = time::OffsetDateTime::now_utc();
    let first = Course::create(new_course("Rust", 10), now);
    store.insert(&CatalogName::default_catalog(), &first, &by()).expect("stored");
    let same_id =
        Course::from_stored(first.id(), title("Go"), hours(10), false, 1, first.created_at(), first.updated_at());
    let refused = store.insert(&CatalogName::default_catalog(), &same_id, &by());
    assert!(matches!(refused, Err(WriteError::Store(_))), "a taken id: {refused:?}");
    let same_title = Course::create(new_course("  RUST ", 20), now);
    let refused = store.insert(&CatalogName::default_catalog(), &same_title, &by());
    assert!(matches!(refused, Err(WriteError::DuplicateTitle)), "a taken title: {refused:?}");
    assert_eq!(store.count_active(&CatalogName::default_catalog(),).expect("count"), 1, "neither refusal wrote");
    assert_eq!(
        store.find(&CatalogName::default_catalog(), first.id()).expect("read"),
        Some(first),
        "the first course is untouched"
    );
}

fn race<T, F>(catalogs: &[Catalog; 2], calls: [Box<dyn FnOnce(Catalog) -> F + Send>; 2]) -> Vec<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + 'static,
{
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = catalogs
        .iter()
        .zip(calls)
        .map(|(catalog, call)| {
            let catalog = catalog.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
                barrier.wait();
                runtime.block_on(call(catalog))
            })
        })
        .collect();
    threads.into_iter().map(|thread| thread.join().expect("thread")).collect()
}

fn two_concurrent_creates_of_the_same_title_from_two_connections_let_exactly_one_win(backend: Backend) {
    let database = TestDatabase::new(backend);
    // Two stores, two pools: as two processes sharing one database would.
    let catalogs = [database.open(), database.open()];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    for round in 0..20 {
        let title = format!("Concorrência {round}");
        let outcomes: Vec<_> = race(
            &catalogs,
            [title.clone(), title].map(|title| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move { catalog.create(new_course(&title, 10), by()).await })
            }),
        );
        let winners = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
        let duplicates =
            outcomes.iter().filter(|outcome| matches!(outcome, Err(CreateCourseError::DuplicateTitle { .. }))).count();
        assert_eq!((winners, duplicates), (1, 1), "round {round}: {outcomes:?}");
    }
    let count = runtime.block_on(catalogs[0].clone().count_active()).expect("count");
    assert_eq!(count, 20);
    assert_eq!(runtime.block_on(catalogs[1].count_active()).expect("count"), 20);
}

fn concurrent_updates_of_different_fields_lose_neither(backend: Backend) {
    let database = TestDatabase::new(backend);
    // Two stores, two pools: as two processes sharing one database would.
    let catalogs = [database.open(), database.open()];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    for round in 0..10 {
        let created = runtime
            .block_on(catalogs[0].clone().create(new_course(&format!("Curso {round}"), 10), by()))
            .expect("created");
        let changes = [
            CourseChanges { title: Some(title(&format!("Renomeado {round}"))), ..CourseChanges::default() },
            CourseChanges { workload_hours: Some(hours(99)), ..CourseChanges::default() },
        ];
        let id = created.id();
        let outcomes = race(
            &catalogs,
            changes.map(|change| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move { catalog.update(id, change, by()).await })
            }),
        );
        for outcome in outcomes {
            outcome.expect("update accepted");
        }
        let after = runtime.block_on(catalogs[1].clone().get(created.id())).expect("found");
        assert_eq!(
            (after.title().as_str(), after.workload_hours().get(), after.version()),
            (format!("Renomeado {round}").as_str(), 99, 3)
        );
    }
}

#[derive(Debug, Default)]
struct RecordingObserver(std::sync::Mutex<Vec<CourseChange>>, std::sync::Mutex<Vec<CatalogName>>);

impl CatalogObserver for RecordingObserver {
    fn course_changed(&self, catalog: &CatalogName, change: &CourseChange) {
        self.0.lock().expect("lock").push(change.clone());
        self.1.lock().expect("lock").push(catalog.clone());
    }
}

async fn observers_hear_of_every_change_and_of_no_no_op(backend: Backend) {
    let test = backend.open_catalog();
    let observer = Arc::new(RecordingObserver::default());
    let catalog = test.catalog.clone().with_observer(observer.clone());
    let created = catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let renamed = catalog
        .update(created.id(), CourseChanges { title: Some(title("Rust 2")), ..CourseChanges::default() }, by())
        .await
        .expect("updated");
    let same = CourseChanges { title: Some(title("Rust 2")), ..CourseChanges::default() };
    catalog.update(created.id(), same, by()).await.expect("no-op");
    let hours = catalog
        .update(created.id(), CourseChanges { workload_hours: Some(hours(11)), ..CourseChanges::default() }, by())
        .await
        .expect("updated");
    let archived = catalog.archive(created.id(), by()).await.expect("archived");
    catalog.archive(created.id(), by()).await.expect("no-op");
    let _ = catalog.create(new_course("rust 2", 1), by()).await.expect("reused title");
    let refused = catalog.create(new_course("RUST 2", 1), by()).await;
    assert!(refused.is_err());

    let changes = observer.0.lock().expect("lock").clone();
    assert_eq!(changes.len(), 5, "{changes:#?}");
    assert_eq!(changes[0], CourseChange::Created(created.clone()));
    assert_eq!(changes[1], CourseChange::Updated { before: created, after: renamed.clone() });
    assert!(changes[1].changes_listing(), "a new title changes what a listing shows");
    assert_eq!(changes[2], CourseChange::Updated { before: renamed, after: hours });
    assert!(!changes[2].changes_listing(), "new hours do not");
    assert_eq!(changes[3], CourseChange::Archived(archived));
    assert!(matches!(changes[4], CourseChange::Created(_)));
}

async fn the_active_count_stays_exact_through_creates_archives_and_refusals(backend: Backend) {
    let test = backend.open_catalog();
    let mut ids = Vec::new();
    for number in 0..7 {
        ids.push(test.catalog.create(new_course(&format!("Curso {number}"), 10), by()).await.expect("created").id());
    }
    assert!(test.catalog.create(new_course("curso 3", 10), by()).await.is_err());
    test.catalog.archive(ids[0], by()).await.expect("archived");
    test.catalog.archive(ids[0], by()).await.expect("archived twice");
    test.catalog.archive(ids[5], by()).await.expect("archived");
    test.catalog
        .update(ids[1], CourseChanges { title: Some(title("Outro")), ..CourseChanges::default() }, by())
        .await
        .expect("renamed");
    assert_eq!(test.catalog.count_active().await.expect("count"), 5);
    let page = test.catalog.active_page(None, PageSize::default()).await.expect("page");
    assert_eq!(page.courses.len(), 5, "the counter agrees with the rows");
}

async fn suggestions_rank_id_prefix_then_title_prefix_then_title_contains_and_skip_archived_courses(backend: Backend) {
    let test = backend.open_catalog();
    let introduction = test.catalog.create(new_course("Introdução a Rust", 10), by()).await.expect("created");
    let rust = test.catalog.create(new_course("Rust Avançado", 10), by()).await.expect("created");
    let archived = test.catalog.create(new_course("Rust Legado", 10), by()).await.expect("created");
    test.catalog.archive(archived.id(), by()).await.expect("archived");
    let go = test.catalog.create(new_course("Go", 10), by()).await.expect("created");

    let titles =
        |courses: Vec<Course>| courses.iter().map(|course| course.title().as_str().to_owned()).collect::<Vec<_>>();
    assert_eq!(
        titles(test.catalog.suggest("  RUST ", 100).await.expect("suggest")),
        ["Rust Avançado", "Introdução a Rust"]
    );
    assert_eq!(titles(test.catalog.suggest("avanç", 100).await.expect("suggest")), ["Rust Avançado"]);
    assert_eq!(titles(test.catalog.suggest("ção a", 100).await.expect("suggest")), ["Introdução a Rust"]);
    let id_prefix = &go.id().to_string()[..8];
    assert_eq!(test.catalog.suggest(id_prefix, 100).await.expect("suggest")[0], go);
    assert!(
        test.catalog.suggest("legado", 100).await.expect("suggest").is_empty(),
        "archived courses are not suggested"
    );
    assert!(test.catalog.suggest("zz", 100).await.expect("suggest").is_empty());
    assert_eq!(
        test.catalog.suggest("", 2).await.expect("suggest"),
        vec![introduction, rust],
        "nothing typed: the oldest"
    );
    assert_eq!(test.catalog.suggest("r", 1).await.expect("suggest").len(), 1, "the limit holds");
    assert!(test.catalog.suggest("\"; DROP TABLE courses; --", 100).await.expect("suggest").is_empty());
    assert!(test.catalog.suggest("a\" OR \"b", 100).await.expect("quotes are data").is_empty());
}

async fn a_write_that_expects_an_outdated_version_is_refused_and_changes_nothing(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let renamed = test
        .catalog
        .update_if(
            created.id(),
            CourseChanges { title: Some(title("Rust 2")), ..CourseChanges::default() },
            Some(1),
            by(),
        )
        .await
        .expect("version 1 was current");
    assert_eq!(renamed.version(), 2);
    let stale = test
        .catalog
        .update_if(
            created.id(),
            CourseChanges { workload_hours: Some(hours(99)), ..CourseChanges::default() },
            Some(1),
            by(),
        )
        .await;
    assert!(matches!(stale, Err(UpdateCourseError::StaleVersion { expected: 1, current: 2, .. })), "{stale:?}");
    let stale = test.catalog.archive_if(created.id(), Some(1), by()).await;
    assert!(matches!(stale, Err(ArchiveCourseError::StaleVersion { expected: 1, current: 2, .. })), "{stale:?}");
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), renamed, "nothing changed");
    let archived = test.catalog.archive_if(created.id(), Some(2), by()).await.expect("version 2 is current");
    assert!(archived.is_archived());
}

async fn a_retried_creation_with_the_same_key_returns_the_first_course_and_creates_nothing(backend: Backend) {
    let test = backend.open_catalog();
    let key = IdempotencyKey::parse("pedido-42").expect("key");
    let first = test.catalog.create_idempotent(new_course("Rust", 10), key.clone(), by()).await.expect("created");
    assert!(!first.replayed);
    let retry = test.catalog.create_idempotent(new_course(" Rust ", 10), key.clone(), by()).await.expect("replayed");
    assert!(retry.replayed);
    assert_eq!(retry.course, first.course);
    assert_eq!(test.catalog.count_active().await.expect("count"), 1, "the retry created nothing");
    let other = test.catalog.create_idempotent(new_course("Rust", 11), key, by()).await;
    assert!(matches!(other, Err(CreateCourseError::IdempotencyKeyReused { .. })), "{other:?}");
    assert_eq!(test.catalog.count_active().await.expect("count"), 1);
}

async fn a_refused_idempotent_creation_leaves_its_key_unused(backend: Backend) {
    let test = backend.open_catalog();
    test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let key = IdempotencyKey::parse("k1").expect("key");
    let refused = test.catalog.create_idempotent(new_course("rust", 10), key.clone(), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })), "{refused:?}");
    let created =
        test.catalog.create_idempotent(new_course("Go", 10), key, by()).await.expect("the key was not consumed");
    assert!(!created.replayed);
}

fn concurrent_retries_of_one_key_from_two_connections_create_one_course(backend: Backend) {
    let database = TestDatabase::new(backend);
    // Two stores, two pools: as two processes sharing one database would.
    let catalogs = [database.open(), database.open()];
    for round in 0..10 {
        let key = IdempotencyKey::parse(&format!("chave-{round}")).expect("key");
        let title = format!("Curso {round}");
        let outcomes: Vec<_> = race(
            &catalogs,
            [(title.clone(), key.clone()), (title, key)].map(|(title, key)| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move {
                    catalog.create_idempotent(new_course(&title, 10), key, by()).await
                })
            }),
        )
        .into_iter()
        .map(|outcome| outcome.expect("both calls succeed"))
        .collect();
        assert_eq!(outcomes[0].course, outcomes[1].course, "round {round}: the same course");
        assert_eq!(outcomes.iter().filter(|created| created.replayed).count(), 1, "round {round}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    assert_eq!(runtime.block_on(catalogs[0].count_active()).expect("count"), 10);
}

fn as_author(author: &str, tool: &str, arguments: &str) -> Provenance {
    Provenance::new(author, tool, arguments)
}

async fn every_accepted_write_is_in_the_history_newest_first_with_who_how_and_the_states(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), as_author("ana", "criar_curso", "{\"a\":1}")).await;
    let created = created.expect("created");
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    let updated = test.catalog.update(created.id(), changes, as_author("bia", "atualizar_curso", "{\"b\":2}")).await;
    let updated = updated.expect("updated");
    let archived = test.catalog.archive(created.id(), as_author("caio", "arquivar_curso", "{}")).await;
    let archived = archived.expect("archived");

    let history = test.catalog.history(created.id(), None, PageSize::default()).await.expect("history");
    assert_eq!(history.next, None);
    let summary: Vec<_> = history
        .entries
        .iter()
        .map(|entry| {
            (
                entry.provenance.author(),
                entry.provenance.tool(),
                entry.provenance.arguments(),
                entry.before.as_ref().map(Course::version),
                entry.after.version(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("caio", "arquivar_curso", "{}", Some(2), 3),
            ("bia", "atualizar_curso", "{\"b\":2}", Some(1), 2),
            ("ana", "criar_curso", "{\"a\":1}", None, 1),
        ]
    );
    assert_eq!(history.entries[0].after, archived);
    assert_eq!(history.entries[0].before.as_ref(), Some(&updated));
    assert_eq!(history.entries[1].before.as_ref(), Some(&created));
    assert_eq!(history.entries[2].after, created);
    assert_eq!(history.entries[0].recorded_at, archived.updated_at());
}

fn evidence(client: Option<(&str, &str)>, surface: &str) -> Evidence {
    Evidence::new(
        Some("2026-07-28".to_owned()),
        client.map(|(name, _)| name.to_owned()),
        client.map(|(_, version)| version.to_owned()),
        surface,
    )
}

async fn every_entry_keeps_its_evidence_and_an_archiving_its_receipt_and_entries_without_read_as_not_recorded(
    backend: Backend,
) {
    let test = backend.open_catalog();
    // A write without evidence stands for an entry written before evidence was recorded.
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let declared = by().with_evidence(evidence(Some(("Claude Code", "2.1.0")), "sha256:aa"));
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    test.catalog.update(created.id(), changes, declared.clone()).await.expect("updated");
    let answered_at = time::macros::datetime!(2026-12-01 10:00:00.123456 UTC);
    let receipt = ApprovalReceipt::asked("Arquivar o curso \"Rust\"?", 2, "{\"confirmar\":true}", answered_at);
    let silent = by().with_evidence(evidence(None, "sha256:bb").with_approval(receipt.clone()));
    test.catalog.archive_if(created.id(), Some(2), silent.clone()).await.expect("archived");
    // A refused or no-op write leaves neither an entry nor its evidence.
    let refused = by().with_evidence(evidence(None, "sha256:cc"));
    test.catalog.archive_if(created.id(), Some(2), refused.clone()).await.expect_err("a stale version");
    test.catalog.archive_if(created.id(), None, refused).await.expect("a no-op archiving");

    let history = test.catalog.history(created.id(), None, PageSize::default()).await.expect("history");
    let kept: Vec<_> = history.entries.iter().map(|entry| entry.provenance.evidence().cloned()).collect();
    assert_eq!(kept, [silent.evidence().cloned(), declared.evidence().cloned(), None]);
    let archiving = history.entries[0].provenance.evidence().expect("recorded");
    assert_eq!(archiving.client_name(), None, "a client that declared nothing is not given a name");
    assert_eq!(archiving.approval(), Some(&receipt));
    assert_eq!(history.entries[1].provenance.evidence().and_then(Evidence::client_version), Some("2.1.0"));
}

async fn an_archiving_under_the_allow_setting_records_that_no_one_was_asked(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let unasked = by().with_evidence(evidence(None, "sha256:aa").with_approval(ApprovalReceipt::NotAsked));
    test.catalog.archive(created.id(), unasked).await.expect("archived");
    let history = test.catalog.history(created.id(), None, PageSize::default()).await.expect("history");
    let approval = history.entries[0].provenance.evidence().and_then(Evidence::approval);
    assert_eq!(approval, Some(&ApprovalReceipt::NotAsked));
}

async fn refused_replayed_and_no_op_writes_leave_no_history(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let key = IdempotencyKey::parse("k1").expect("key");
    let other = test.catalog.create_idempotent(new_course("Go", 5), key.clone(), by()).await.expect("created");
    test.catalog.create_idempotent(new_course("Go", 5), key, by()).await.expect("replayed");
    test.catalog.create(new_course("rust", 10), by()).await.expect_err("duplicate title");
    let same = CourseChanges { workload_hours: Some(hours(10)), ..CourseChanges::default() };
    test.catalog.update(created.id(), same, by()).await.expect("no-op update");
    let rename = CourseChanges { title: Some(title("go")), ..CourseChanges::default() };
    test.catalog.update(created.id(), rename, by()).await.expect_err("duplicate title");
    let stale = CourseChanges { workload_hours: Some(hours(11)), ..CourseChanges::default() };
    test.catalog.update_if(created.id(), stale, Some(7), by()).await.expect_err("stale version");
    test.catalog.archive(other.course.id(), by()).await.expect("archived");
    test.catalog.archive(other.course.id(), by()).await.expect("no-op archive");

    let history = test.catalog.history(created.id(), None, PageSize::default()).await.expect("history");
    assert_eq!(history.entries.len(), 1, "only the creation: {history:?}");
    let history = test.catalog.history(other.course.id(), None, PageSize::default()).await.expect("history");
    assert_eq!(history.entries.len(), 2, "creation and one archiving: {history:?}");
}

async fn a_long_history_is_paged_newest_first_without_gaps(backend: Backend) {
    let test = backend.open_catalog();
    let created = test.catalog.create(new_course("Rust", 1), by()).await.expect("created");
    for value in 2..=250 {
        let changes = CourseChanges { workload_hours: Some(hours(value)), ..CourseChanges::default() };
        test.catalog.update(created.id(), changes, by()).await.expect("updated");
    }
    let mut versions = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = test.catalog.history(created.id(), cursor, PageSize::default()).await.expect("history");
        pages += 1;
        versions.extend(page.entries.iter().map(|entry| entry.after.version()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(versions, (1..=250).rev().collect::<Vec<u64>>());
}

async fn the_history_of_an_unknown_course_is_not_found(backend: Backend) {
    let test = backend.open_catalog();
    let refused = test.catalog.history(CourseId::generate(), None, PageSize::default()).await;
    assert!(matches!(refused, Err(GetCourseError::NotFound { .. })), "{refused:?}");
}

fn concurrent_writers_record_exactly_one_history_entry_per_accepted_write(backend: Backend) {
    let database = TestDatabase::new(backend);
    // Two stores, two pools: as two processes sharing one database would.
    let catalogs = [database.open(), database.open()];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let created = runtime.block_on(catalogs[0].clone().create(new_course("Curso", 1), by())).expect("created");
    let id = created.id();
    for round in 0..10_i64 {
        let outcomes = race(
            &catalogs,
            [2 * round + 2, 2 * round + 3].map(|value| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move {
                    let changes = CourseChanges { workload_hours: Some(hours(value)), ..CourseChanges::default() };
                    // Each write's evidence names its value: it must land on that write's entry.
                    let marked = by().with_evidence(evidence(None, &format!("sha256:{value}")));
                    catalog.update(id, changes, marked).await
                })
            }),
        );
        for outcome in outcomes {
            outcome.expect("update accepted");
        }
    }
    let catalog = catalogs[1].clone();
    let course = runtime.block_on(catalog.get(id)).expect("found");
    let history = runtime.block_on(catalog.history(id, None, PageSize::default())).expect("history");
    assert_eq!(course.version(), 21);
    let versions: Vec<u64> = history.entries.iter().map(|entry| entry.after.version()).collect();
    assert_eq!(versions, (1..=21).rev().collect::<Vec<u64>>());
    for pair in history.entries.windows(2) {
        assert_eq!(pair[0].before.as_ref(), Some(&pair[1].after), "each entry starts where the previous ended");
    }
    for entry in &history.entries[..20] {
        let surface = entry.provenance.evidence().map(Evidence::surface_hash);
        let expected = format!("sha256:{}", entry.after.workload_hours().get());
        assert_eq!(surface, Some(expected.as_str()), "the evidence of another write: {entry:?}");
    }
}

// ---- A SQLite file that cannot take durable writes (ADR 0026) ------------------------------------

/// A catalog on a SQLite file in a fresh folder, with the file's path.
fn sqlite_catalog() -> (tempfile::TempDir, std::path::PathBuf, Catalog) {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let catalog = Catalog::new(SqliteStore::open(&path).expect("open store"));
    (folder, path, catalog)
}

fn remove_database_files(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(name);
    }
}

/// The shared schema reads and writes SQLite's timestamps as they always were stored (ADR 0033):
/// RFC 3339 text in UTC with milliseconds and a fixed width, so that text order is time order and
/// files written by earlier versions read back unchanged.
#[tokio::test]
async fn sqlite_timestamps_are_still_stored_as_fixed_width_rfc3339_text_in_utc() {
    let (_folder, path, catalog) = sqlite_catalog();
    let key = IdempotencyKey::parse("pedido-1").expect("key");
    let created = catalog.create_idempotent(new_course("Rust", 10), key, by()).await.expect("created").course;
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    catalog.update(created.id(), changes, by()).await.expect("updated");
    use diesel::RunQueryDsl;
    let mut connection = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("connect to the file");
    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = diesel::sql_types::Text)]
        instant: String,
    }
    let stored: Vec<Stored> = diesel::sql_query(
        "SELECT created_at AS instant FROM courses UNION ALL SELECT updated_at FROM courses \
         UNION ALL SELECT created_at FROM course_creations \
         UNION ALL SELECT after_updated_at FROM course_history \
         UNION ALL SELECT before_updated_at FROM course_history WHERE before_updated_at IS NOT NULL",
    )
    .load(&mut connection)
    .expect("read the stored text");
    assert_eq!(stored.len(), 6);
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    for Stored { instant } in stored {
        assert_eq!(instant.len(), "2026-11-30T12:00:00.000Z".len(), "{instant}");
        let parsed = time::PrimitiveDateTime::parse(&instant, format).expect("RFC 3339 with milliseconds");
        assert!(parsed.assume_utc() >= created.created_at(), "{instant}");
    }
    let read_back = catalog.get(created.id()).await.expect("read");
    assert_eq!(read_back.created_at(), created.created_at(), "the stored text reads back to the same instant");
}

#[tokio::test]
async fn a_database_file_deleted_while_open_refuses_writes_and_readiness_says_why() {
    let (_folder, path, catalog) = sqlite_catalog();
    let course = catalog.create(new_course("Rust", 10), by()).await.expect("created");
    catalog.readiness().await.expect("ready while the file is in place");
    remove_database_files(&path);
    let refused = catalog.create(new_course("Go", 10), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::Unwritable(Unwritable::FileReplaced))), "{refused:?}");
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    let refused = catalog.update(course.id(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::Unwritable(Unwritable::FileReplaced))), "{refused:?}");
    let refused = catalog.archive(course.id(), by()).await;
    assert!(matches!(refused, Err(ArchiveCourseError::Unwritable(Unwritable::FileReplaced))), "{refused:?}");
    let readiness = catalog.readiness().await;
    assert!(matches!(readiness, Err(NotReady::Unwritable(Unwritable::FileReplaced))), "{readiness:?}");
}

#[tokio::test]
async fn a_shm_or_wal_deleted_or_replaced_while_open_refuses_writes_and_readiness_says_why() {
    for (suffix, replace) in [("-shm", false), ("-shm", true), ("-wal", false), ("-wal", true)] {
        let (folder, path, catalog) = sqlite_catalog();
        let course = catalog.create(new_course("Rust", 10), by()).await.expect("created");
        catalog.readiness().await.expect("ready while the files are in place");
        let mut sidecar = path.as_os_str().to_owned();
        sidecar.push(suffix);
        if replace {
            // Another file put in its place: same contents, another inode.
            let copy = folder.path().join("copy");
            std::fs::copy(&sidecar, &copy).expect("copy");
            std::fs::rename(&copy, &sidecar).expect("replace");
        } else {
            std::fs::remove_file(&sidecar).expect("remove");
        }
        let refused = catalog.create(new_course("Go", 10), by()).await;
        assert!(
            matches!(refused, Err(CreateCourseError::Unwritable(Unwritable::FileReplaced))),
            "{suffix} replaced: {replace}: {refused:?}"
        );
        let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
        let refused = catalog.update(course.id(), changes, by()).await;
        assert!(matches!(refused, Err(UpdateCourseError::Unwritable(Unwritable::FileReplaced))), "{refused:?}");
        let readiness = catalog.readiness().await;
        assert!(matches!(readiness, Err(NotReady::Unwritable(Unwritable::FileReplaced))), "{readiness:?}");
        // What was acknowledged is still there after a restart, and the file is whole.
        drop(catalog);
        let reopened = Catalog::new(SqliteStore::open(&path).expect("reopen"));
        let read_back = reopened.get(course.id()).await.expect("the acknowledged course");
        assert_eq!(read_back.workload_hours().get(), 10, "{suffix} replaced: {replace}: the refused update is nowhere");
        let titles = reopened.active_page(None, PageSize::default()).await.expect("page").courses.len();
        assert_eq!(titles, 1, "{suffix} replaced: {replace}: the refused create is nowhere");
        let mut connection = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("open");
        #[derive(diesel::QueryableByName)]
        struct Check {
            #[diesel(sql_type = diesel::sql_types::Text)]
            integrity_check: String,
        }
        let check: Vec<Check> =
            diesel::RunQueryDsl::load(diesel::sql_query("PRAGMA integrity_check"), &mut connection).expect("check");
        assert_eq!(check.first().map(|row| row.integrity_check.as_str()), Some("ok"), "{suffix} replaced: {replace}");
    }
}

#[tokio::test]
async fn a_database_file_replaced_while_open_refuses_writes_and_they_never_reach_either_file() {
    let (folder, path, catalog) = sqlite_catalog();
    catalog.create(new_course("Rust", 10), by()).await.expect("created");
    // Another database put in its place (a restore, an operator's mistake).
    let other = folder.path().join("other.db");
    diesel::SqliteConnection::establish(&other.to_string_lossy())
        .expect("create another file")
        .batch_execute("CREATE TABLE other (x INTEGER)")
        .expect("write it");
    remove_database_files(&path);
    std::fs::rename(&other, &path).expect("replace the file");
    let refused = catalog.create(new_course("Go", 10), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::Unwritable(Unwritable::FileReplaced))), "{refused:?}");
    assert!(matches!(catalog.readiness().await, Err(NotReady::Unwritable(Unwritable::FileReplaced))));
    drop(catalog);
    let reopened = Catalog::new(SqliteStore::open(&path).expect("reopen"));
    let titles: Vec<String> = reopened
        .active_page(None, PageSize::default())
        .await
        .expect("page")
        .courses
        .iter()
        .map(|course| course.title().as_str().to_owned())
        .collect();
    assert!(titles.is_empty(), "the refused write is nowhere: {titles:?}");
}

#[test]
fn a_batch_committed_after_its_file_was_deleted_is_not_acknowledged() {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let store = SqliteStore::open(&path).expect("open store");
    let commits_before = store.commits();
    // The file passes the check before the batch, and is deleted while the batch writes.
    let outcome = store.write_with(move |connection| {
        remove_database_files(&path);
        connection.batch_execute("UPDATE catalog_counters SET active_courses = active_courses")
    });
    assert_eq!(store.commits() - commits_before, 1, "SQLite committed, into the deleted file");
    assert!(matches!(outcome, Err(WriteError::Unwritable(Unwritable::FileReplaced))), "{outcome:?}");
}

#[tokio::test]
async fn a_postgresql_store_is_ready_when_it_answers() {
    if crate::testing::postgres_for_tests().is_none() {
        return;
    }
    let database = TestDatabase::new(Backend::Postgres);
    database.open().readiness().await.expect("ready");
}

// Tenants (ADR 0035): one store, several catalogs, no way across.

fn catalog_named(name: &str) -> CatalogName {
    CatalogName::parse(name).expect("valid catalog name")
}

async fn two_catalogs_on_one_store_neither_read_nor_change_each_others_courses(backend: Backend) {
    let test = backend.open_catalog();
    let azul = test.catalog.scoped(&catalog_named("azul"));
    let verde = test.catalog.scoped(&catalog_named("verde"));
    let theirs = azul.create(new_course("Rust", 10), by()).await.expect("created");
    let id = theirs.id();
    // A valid id of the other catalog is answered exactly as an id that does not exist.
    assert!(matches!(verde.get(id).await, Err(GetCourseError::NotFound { .. })));
    assert!(matches!(test.catalog.get(id).await, Err(GetCourseError::NotFound { .. })), "nor from the default");
    assert!(matches!(verde.history(id, None, PageSize::default()).await, Err(GetCourseError::NotFound { .. })));
    let changes = CourseChanges { title: Some(title("Sequestrado")), workload_hours: None };
    assert!(matches!(verde.update(id, changes.clone(), by()).await, Err(UpdateCourseError::NotFound { .. })));
    assert!(matches!(
        verde.update_if(id, changes, Some(theirs.version()), by()).await,
        Err(UpdateCourseError::NotFound { .. })
    ));
    assert!(matches!(verde.archive(id, by()).await, Err(ArchiveCourseError::NotFound { .. })));
    assert!(matches!(verde.archive_if(id, Some(1), by()).await, Err(ArchiveCourseError::NotFound { .. })));
    // The owner's course is unchanged, with one history entry.
    assert_eq!(azul.get(id).await.expect("still there"), theirs);
    let history = azul.history(id, None, PageSize::default()).await.expect("history");
    assert_eq!(history.entries.len(), 1);
    assert_eq!(verde.count_active().await.expect("count"), 0);
    assert!(verde.active_page(None, PageSize::default()).await.expect("page").courses.is_empty());
    // Read twice (the SQLite read cache, ADR 0034, must not serve it to the other catalog either).
    assert_eq!(azul.get(id).await.expect("cached"), theirs);
    assert!(matches!(verde.get(id).await, Err(GetCourseError::NotFound { .. })));
}

async fn titles_counts_pages_and_idempotency_keys_are_per_catalog(backend: Backend) {
    let test = backend.open_catalog();
    let azul = test.catalog.scoped(&catalog_named("azul"));
    let verde = test.catalog.scoped(&catalog_named("verde"));
    let rust_azul = azul.create(new_course("Rust", 10), by()).await.expect("created");
    // The same title in another catalog is another course; within one catalog it is a duplicate.
    let rust_verde = verde.create(new_course("RUST", 20), by()).await.expect("same title, other catalog");
    assert!(matches!(verde.create(new_course("rust", 30), by()).await, Err(CreateCourseError::DuplicateTitle { .. })));
    let go_azul = azul.create(new_course("Go", 10), by()).await.expect("created");
    // Renaming into a title only the other catalog holds is allowed.
    let changes = CourseChanges { title: Some(title("Go")), workload_hours: None };
    verde.update(rust_verde.id(), changes, by()).await.expect("no Go in verde");
    // The same idempotency key in two catalogs makes two courses; a replay stays in its catalog.
    let key = IdempotencyKey::parse("pedido-1").expect("key");
    let first = azul.create_idempotent(new_course("Python", 10), key.clone(), by()).await.expect("created");
    let other = verde.create_idempotent(new_course("Python", 10), key.clone(), by()).await.expect("created");
    assert!(!first.replayed && !other.replayed);
    assert_ne!(first.course.id(), other.course.id());
    let reused = verde.create_idempotent(new_course("Java", 10), key.clone(), by()).await;
    assert!(matches!(reused, Err(CreateCourseError::IdempotencyKeyReused { .. })));
    let replay = azul.create_idempotent(new_course("Python", 10), key, by()).await.expect("replayed");
    assert!(replay.replayed);
    assert_eq!(replay.course.id(), first.course.id());
    // Counts and pages: each catalog its own; the default catalog holds none of them.
    assert_eq!(azul.count_active().await.expect("count"), 3);
    assert_eq!(verde.count_active().await.expect("count"), 2);
    assert_eq!(test.catalog.count_active().await.expect("count"), 0);
    azul.archive(go_azul.id(), by()).await.expect("archived");
    assert_eq!(azul.count_active().await.expect("count"), 2);
    assert_eq!(verde.count_active().await.expect("count"), 2);
    let size = PageSize::clamped(1);
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = azul.active_page(cursor, size).await.expect("page");
        seen.extend(page.courses.iter().map(Course::id));
        let Some(next) = page.next else { break };
        // A cursor of azul's, used in verde, pages only verde's courses.
        for course in verde.active_page(Some(next), PageSize::default()).await.expect("page").courses {
            assert!(course.id() == rust_verde.id() || course.id() == other.course.id());
        }
        cursor = Some(next);
    }
    assert_eq!(seen, [rust_azul.id(), first.course.id()]);
}

async fn suggestions_come_only_from_the_callers_catalog(backend: Backend) {
    let test = backend.open_catalog();
    let azul = test.catalog.scoped(&catalog_named("azul"));
    let verde = test.catalog.scoped(&catalog_named("verde"));
    let secret = azul.create(new_course("Introdução a Rust", 10), by()).await.expect("created");
    let mine = verde.create(new_course("Rust Avançado", 10), by()).await.expect("created");
    let ids = |courses: Vec<Course>| courses.into_iter().map(|course| course.id()).collect::<Vec<_>>();
    assert_eq!(ids(verde.suggest("", 100).await.expect("suggest")), [mine.id()]);
    assert_eq!(ids(verde.suggest("rust", 100).await.expect("suggest")), [mine.id()], "prefix and contains");
    assert!(verde.suggest("introdu", 100).await.expect("suggest").is_empty(), "title prefix");
    assert!(verde.suggest("ção a", 100).await.expect("suggest").is_empty(), "title contains");
    let prefix = secret.id().to_string()[..8].to_owned();
    assert!(!verde.suggest(&prefix, 100).await.expect("suggest").iter().any(|course| course.id() == secret.id()));
    assert_eq!(ids(azul.suggest(&prefix, 100).await.expect("suggest"))[0], secret.id());
}

async fn observers_hear_which_catalog_changed(backend: Backend) {
    let test = backend.open_catalog();
    let observer = Arc::new(RecordingObserver::default());
    let catalog = test.catalog.clone().with_observer(observer.clone());
    let azul = catalog.scoped(&catalog_named("azul"));
    let created = azul.create(new_course("Rust", 10), by()).await.expect("created");
    catalog.create(new_course("Rust", 10), by()).await.expect("created in padrao");
    azul.archive(created.id(), by()).await.expect("archived");
    let heard: Vec<String> = observer.1.lock().expect("lock").iter().map(|name| name.to_string()).collect();
    assert_eq!(heard, ["azul", "padrao", "azul"]);
}

/// A database made before catalogs existed (the migrations before ADR 0035's) keeps its courses,
/// history, idempotency keys and count, in the default catalog, once a store opens it.
#[test]
fn a_database_from_before_catalogs_is_migrated_in_place_into_the_default_catalog() {
    use diesel_migrations::MigrationHarness;
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    {
        let mut connection = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("connect");
        let migrations =
            diesel::migration::MigrationSource::<diesel::sqlite::Sqlite>::migrations(&MIGRATIONS).expect("migrations");
        let ours = migrations
            .iter()
            .position(|migration| migration.name().to_string().ends_with("_catalogs"))
            .expect("ADR 0035's migration");
        let before = &migrations[..ours];
        diesel::migration::MigrationConnection::setup(&mut connection).expect("migrations table");
        for migration in before {
            connection.run_migration(migration.as_ref()).expect("older migration");
        }
        connection
            .batch_execute(
                "INSERT INTO courses (id, title, title_key, workload_hours, archived, version, created_at, updated_at) \
                 VALUES ('00000000-0000-4000-8000-000000000001', 'Rust', 'rust', 10, 0, 1, \
                         '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'); \
                 INSERT INTO course_creations (idempotency_key, fingerprint, course_id, created_at) \
                 VALUES ('k', 'Rust\u{1f}10', '00000000-0000-4000-8000-000000000001', '2026-01-01T00:00:00.000Z'); \
                 INSERT INTO course_history (course_id, author, tool, arguments, after_title, after_workload_hours, \
                         after_archived, after_version, after_updated_at) \
                 VALUES ('00000000-0000-4000-8000-000000000001', 'velho', 'criar_curso', '{}', 'Rust', 10, 0, 1, \
                         '2026-01-01T00:00:00.000Z');",
            )
            .expect("an older program's rows");
    }
    let catalog = Catalog::new(SqliteStore::open(&path).expect("open migrates"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let id = CourseId::parse("00000000-0000-4000-8000-000000000001").expect("id");
        assert_eq!(catalog.get(id).await.expect("in padrao").title().as_str(), "Rust");
        assert_eq!(catalog.count_active().await.expect("count"), 1);
        let history = catalog.history(id, None, PageSize::default()).await.expect("history");
        assert_eq!(history.entries[0].provenance.author(), "velho");
        assert!(matches!(
            catalog.create(new_course("rust", 10), by()).await,
            Err(CreateCourseError::DuplicateTitle { .. })
        ));
        let azul = catalog.scoped(&catalog_named("azul"));
        assert!(matches!(azul.get(id).await, Err(GetCourseError::NotFound { .. })));
        azul.create(new_course("Rust", 10), by()).await.expect("another catalog may use the title");
        assert_eq!(catalog.count_active().await.expect("count"), 1);
    });
}

// The bulk write and the snapshot export of `import`/`export` (ADR 0040), on both stores.
mod portability;
// Searches against a plain scan of random catalogs (ADR 0052), on both stores.
mod search;

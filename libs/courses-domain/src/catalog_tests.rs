//! The catalog's rules, exercised on a real SQLite file in a temporary folder.

use std::sync::{Arc, Barrier};

use crate::{
    ArchiveCourseError, Catalog, CourseChanges, CourseId, CourseStore, CourseTitle, CreateCourseError, GetCourseError,
    NewCourse, PageSize, Provenance, SqliteStore, UpdateCourseError, WorkloadHours,
};

struct TestCatalog {
    catalog: Catalog,
    store: SqliteStore,
    folder: tempfile::TempDir,
}

fn open_catalog() -> TestCatalog {
    let folder = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&folder.path().join("nested/folder/cursos.db")).expect("open store");
    TestCatalog { catalog: Catalog::new(store.clone()), store, folder }
}

fn new_course(title: &str, hours: i64) -> NewCourse {
    NewCourse {
        title: CourseTitle::parse(title).expect("valid title"),
        workload_hours: WorkloadHours::parse(hours).expect("valid hours"),
    }
}

/// Who the tests write as.
fn by() -> Provenance {
    Provenance::new("teste", "criar_curso", "{}")
}

fn title(text: &str) -> CourseTitle {
    CourseTitle::parse(text).expect("valid title")
}

fn hours(value: i64) -> WorkloadHours {
    WorkloadHours::parse(value).expect("valid hours")
}

#[tokio::test]
async fn a_created_course_is_active_and_readable_by_its_id() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("  Arquitetura de Software ", 12), by()).await.expect("created");
    assert_eq!(created.title().as_str(), "Arquitetura de Software");
    assert_eq!(created.workload_hours().get(), 12);
    assert!(!created.is_archived());
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), created);
    assert_eq!(test.catalog.count_active().await.expect("count"), 1);
}

#[tokio::test]
async fn the_store_creates_its_folder_and_the_data_survives_reopening_the_file() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 40), by()).await.expect("created");
    let path = test.store.path().to_owned();
    drop(test.catalog);
    drop(test.store);
    let reopened = Catalog::new(SqliteStore::open(&path).expect("reopen"));
    assert_eq!(reopened.get(created.id()).await.expect("found"), created);
    drop(test.folder);
}

#[tokio::test]
async fn a_title_already_used_by_an_active_course_is_refused_case_and_spacing_aside() {
    let test = open_catalog();
    test.catalog.create(new_course("Arquitetura de Software", 12), by()).await.expect("created");
    let refused = test.catalog.create(new_course("  arquitetura   DE software", 30), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })), "{refused:?}");
    assert_eq!(test.catalog.count_active().await.expect("count"), 1, "nothing was written");
}

#[tokio::test]
async fn an_archived_courses_title_may_be_reused() {
    let test = open_catalog();
    let first = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    test.catalog.archive(first.id(), by()).await.expect("archived");
    let second = test.catalog.create(new_course("rust", 20), by()).await.expect("title reused");
    assert_ne!(first.id(), second.id());
    assert!(test.catalog.get(first.id()).await.expect("still readable").is_archived());
}

#[tokio::test]
async fn a_partial_update_changes_only_the_given_field_and_bumps_the_version() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    let updated = test.catalog.update(created.id(), changes, by()).await.expect("updated");
    assert_eq!((updated.title().as_str(), updated.workload_hours().get(), updated.version()), ("Rust", 20, 2));
    assert!(updated.updated_at() >= created.updated_at());
    assert_eq!(updated.created_at(), created.created_at());
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), updated);
}

#[tokio::test]
async fn an_update_with_nothing_to_change_is_refused() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let refused = test.catalog.update(created.id(), CourseChanges::default(), by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::NothingToUpdate)), "{refused:?}");
}

#[tokio::test]
async fn an_update_to_the_current_values_writes_nothing() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let same = CourseChanges { title: Some(title("Rust")), workload_hours: Some(hours(10)) };
    assert_eq!(test.catalog.update(created.id(), same, by()).await.expect("accepted"), created);
}

#[tokio::test]
async fn an_update_of_an_unknown_course_is_refused() {
    let test = open_catalog();
    let changes = CourseChanges { workload_hours: Some(hours(20)), ..CourseChanges::default() };
    let refused = test.catalog.update(CourseId::generate(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::NotFound { .. })), "{refused:?}");
}

#[tokio::test]
async fn an_archived_course_cannot_be_updated() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let archived = test.catalog.archive(created.id(), by()).await.expect("archived");
    let changes = CourseChanges { title: Some(title("Go")), ..CourseChanges::default() };
    let refused = test.catalog.update(created.id(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::Archived { .. })), "{refused:?}");
    assert_eq!(test.catalog.get(created.id()).await.expect("found"), archived, "nothing was written");
}

#[tokio::test]
async fn renaming_to_another_active_courses_title_is_refused_and_writes_nothing() {
    let test = open_catalog();
    test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let go = test.catalog.create(new_course("Go", 10), by()).await.expect("created");
    let changes = CourseChanges { title: Some(title("RUST")), workload_hours: Some(hours(99)) };
    let refused = test.catalog.update(go.id(), changes, by()).await;
    assert!(matches!(refused, Err(UpdateCourseError::DuplicateTitle { .. })), "{refused:?}");
    assert_eq!(test.catalog.get(go.id()).await.expect("found"), go);
}

#[tokio::test]
async fn renaming_a_course_to_another_spelling_of_its_own_title_is_allowed() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("rust avançado", 10), by()).await.expect("created");
    let changes = CourseChanges { title: Some(title("Rust Avançado")), ..CourseChanges::default() };
    assert_eq!(
        test.catalog.update(created.id(), changes, by()).await.expect("updated").title().as_str(),
        "Rust Avançado"
    );
}

#[tokio::test]
async fn archiving_twice_is_a_no_op_success() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let first = test.catalog.archive(created.id(), by()).await.expect("archived");
    let second = test.catalog.archive(created.id(), by()).await.expect("archived again");
    assert!(first.is_archived());
    assert_eq!(first, second, "the second archive changed nothing");
    assert_eq!(first.version(), 2);
}

#[tokio::test]
async fn archiving_an_unknown_course_is_refused() {
    let test = open_catalog();
    let refused = test.catalog.archive(CourseId::generate(), by()).await;
    assert!(matches!(refused, Err(ArchiveCourseError::NotFound { .. })), "{refused:?}");
}

#[tokio::test]
async fn reading_an_unknown_course_says_not_found() {
    let test = open_catalog();
    assert!(matches!(test.catalog.get(CourseId::generate()).await, Err(GetCourseError::NotFound { .. })));
}

#[tokio::test]
async fn an_archived_course_leaves_the_catalog_pages_and_count_but_stays_readable() {
    let test = open_catalog();
    let kept = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let gone = test.catalog.create(new_course("Go", 10), by()).await.expect("created");
    test.catalog.archive(gone.id(), by()).await.expect("archived");
    let page = test.catalog.active_page(None, PageSize::default()).await.expect("page");
    assert_eq!(page.courses, vec![kept]);
    assert_eq!(page.next, None);
    assert_eq!(test.catalog.count_active().await.expect("count"), 1);
    assert!(test.catalog.get(gone.id()).await.expect("readable").is_archived());
}

#[tokio::test]
async fn pages_walk_every_active_course_once_oldest_first() {
    let test = open_catalog();
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

#[tokio::test]
async fn a_page_exactly_full_has_no_next_page() {
    let test = open_catalog();
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

/// Runs `calls[i]` on `stores[i]`'s catalog, each on its own thread and runtime, released together
/// by a barrier: two processes sharing one file, racing. Returns the outcomes in order.
fn race<T, F>(stores: &[SqliteStore; 2], calls: [Box<dyn FnOnce(Catalog) -> F + Send>; 2]) -> Vec<T>
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + 'static,
{
    let barrier = Arc::new(Barrier::new(2));
    let threads: Vec<_> = stores
        .iter()
        .zip(calls)
        .map(|(store, call)| {
            let catalog = Catalog::new(store.clone());
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

#[test]
fn two_concurrent_creates_of_the_same_title_from_two_connections_let_exactly_one_win() {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    // Two stores, two pools: as two processes sharing one file would.
    let stores = [SqliteStore::open(&path).expect("open"), SqliteStore::open(&path).expect("open")];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    for round in 0..20 {
        let title = format!("Concorrência {round}");
        let outcomes: Vec<_> = race(
            &stores,
            [title.clone(), title].map(|title| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move { catalog.create(new_course(&title, 10), by()).await })
            }),
        );
        let winners = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
        let duplicates =
            outcomes.iter().filter(|outcome| matches!(outcome, Err(CreateCourseError::DuplicateTitle { .. }))).count();
        assert_eq!((winners, duplicates), (1, 1), "round {round}: {outcomes:?}");
    }
    let count = runtime.block_on(Catalog::new(stores[0].clone()).count_active()).expect("count");
    assert_eq!(count, 20);
    assert_eq!(stores[1].count_active().expect("count"), 20);
}

#[test]
fn concurrent_updates_of_different_fields_lose_neither() {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let stores = [SqliteStore::open(&path).expect("open"), SqliteStore::open(&path).expect("open")];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    for round in 0..10 {
        let created = runtime
            .block_on(Catalog::new(stores[0].clone()).create(new_course(&format!("Curso {round}"), 10), by()))
            .expect("created");
        let changes = [
            CourseChanges { title: Some(title(&format!("Renomeado {round}"))), ..CourseChanges::default() },
            CourseChanges { workload_hours: Some(hours(99)), ..CourseChanges::default() },
        ];
        let id = created.id();
        let outcomes = race(
            &stores,
            changes.map(|change| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move { catalog.update(id, change, by()).await })
            }),
        );
        for outcome in outcomes {
            outcome.expect("update accepted");
        }
        let after = runtime.block_on(Catalog::new(stores[1].clone()).get(created.id())).expect("found");
        assert_eq!(
            (after.title().as_str(), after.workload_hours().get(), after.version()),
            (format!("Renomeado {round}").as_str(), 99, 3)
        );
    }
}

#[derive(Debug, Default)]
struct RecordingObserver(std::sync::Mutex<Vec<crate::CourseChange>>);

impl crate::CatalogObserver for RecordingObserver {
    fn course_changed(&self, change: &crate::CourseChange) {
        self.0.lock().expect("lock").push(change.clone());
    }
}

#[tokio::test]
async fn observers_hear_of_every_change_and_of_no_no_op() {
    let test = open_catalog();
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
    assert_eq!(changes[0], crate::CourseChange::Created(created.clone()));
    assert_eq!(changes[1], crate::CourseChange::Updated { before: created, after: renamed.clone() });
    assert!(changes[1].changes_listing(), "a new title changes what a listing shows");
    assert_eq!(changes[2], crate::CourseChange::Updated { before: renamed, after: hours });
    assert!(!changes[2].changes_listing(), "new hours do not");
    assert_eq!(changes[3], crate::CourseChange::Archived(archived));
    assert!(matches!(changes[4], crate::CourseChange::Created(_)));
}

#[tokio::test]
async fn the_active_count_stays_exact_through_creates_archives_and_refusals() {
    let test = open_catalog();
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

#[tokio::test]
async fn suggestions_rank_id_prefix_then_title_prefix_then_title_contains_and_skip_archived_courses() {
    let test = open_catalog();
    let introduction = test.catalog.create(new_course("Introdução a Rust", 10), by()).await.expect("created");
    let rust = test.catalog.create(new_course("Rust Avançado", 10), by()).await.expect("created");
    let archived = test.catalog.create(new_course("Rust Legado", 10), by()).await.expect("created");
    test.catalog.archive(archived.id(), by()).await.expect("archived");
    let go = test.catalog.create(new_course("Go", 10), by()).await.expect("created");

    let titles = |courses: Vec<crate::Course>| {
        courses.iter().map(|course| course.title().as_str().to_owned()).collect::<Vec<_>>()
    };
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

#[tokio::test]
async fn a_write_that_expects_an_outdated_version_is_refused_and_changes_nothing() {
    let test = open_catalog();
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

#[tokio::test]
async fn a_retried_creation_with_the_same_key_returns_the_first_course_and_creates_nothing() {
    let test = open_catalog();
    let key = crate::IdempotencyKey::parse("pedido-42").expect("key");
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

#[tokio::test]
async fn a_refused_idempotent_creation_leaves_its_key_unused() {
    let test = open_catalog();
    test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let key = crate::IdempotencyKey::parse("k1").expect("key");
    let refused = test.catalog.create_idempotent(new_course("rust", 10), key.clone(), by()).await;
    assert!(matches!(refused, Err(CreateCourseError::DuplicateTitle { .. })), "{refused:?}");
    let created =
        test.catalog.create_idempotent(new_course("Go", 10), key, by()).await.expect("the key was not consumed");
    assert!(!created.replayed);
}

#[test]
fn concurrent_retries_of_one_key_from_two_connections_create_one_course() {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let stores = [SqliteStore::open(&path).expect("open"), SqliteStore::open(&path).expect("open")];
    for round in 0..10 {
        let key = crate::IdempotencyKey::parse(&format!("chave-{round}")).expect("key");
        let title = format!("Curso {round}");
        let outcomes: Vec<_> = race(
            &stores,
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
    assert_eq!(stores[0].count_active().expect("count"), 10);
}

fn as_author(author: &str, tool: &str, arguments: &str) -> Provenance {
    Provenance::new(author, tool, arguments)
}

#[tokio::test]
async fn every_accepted_write_is_in_the_history_newest_first_with_who_how_and_the_states() {
    let test = open_catalog();
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
                entry.before.as_ref().map(crate::Course::version),
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

#[tokio::test]
async fn refused_replayed_and_no_op_writes_leave_no_history() {
    let test = open_catalog();
    let created = test.catalog.create(new_course("Rust", 10), by()).await.expect("created");
    let key = crate::IdempotencyKey::parse("k1").expect("key");
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

#[tokio::test]
async fn a_long_history_is_paged_newest_first_without_gaps() {
    let test = open_catalog();
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

#[tokio::test]
async fn the_history_of_an_unknown_course_is_not_found() {
    let test = open_catalog();
    let refused = test.catalog.history(CourseId::generate(), None, PageSize::default()).await;
    assert!(matches!(refused, Err(GetCourseError::NotFound { .. })), "{refused:?}");
}

#[test]
fn concurrent_writers_record_exactly_one_history_entry_per_accepted_write() {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let stores = [SqliteStore::open(&path).expect("open"), SqliteStore::open(&path).expect("open")];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let created =
        runtime.block_on(Catalog::new(stores[0].clone()).create(new_course("Curso", 1), by())).expect("created");
    let id = created.id();
    for round in 0..10_i64 {
        let outcomes = race(
            &stores,
            [2 * round + 2, 2 * round + 3].map(|value| -> Box<dyn FnOnce(Catalog) -> _ + Send> {
                Box::new(move |catalog: Catalog| async move {
                    let changes = CourseChanges { workload_hours: Some(hours(value)), ..CourseChanges::default() };
                    catalog.update(id, changes, by()).await
                })
            }),
        );
        for outcome in outcomes {
            outcome.expect("update accepted");
        }
    }
    let catalog = Catalog::new(stores[1].clone());
    let course = runtime.block_on(catalog.get(id)).expect("found");
    let history = runtime.block_on(catalog.history(id, None, PageSize::default())).expect("history");
    assert_eq!(course.version(), 21);
    let versions: Vec<u64> = history.entries.iter().map(|entry| entry.after.version()).collect();
    assert_eq!(versions, (1..=21).rev().collect::<Vec<u64>>());
    for pair in history.entries.windows(2) {
        assert_eq!(pair[0].before.as_ref(), Some(&pair[1].after), "each entry starts where the previous ended");
    }
}

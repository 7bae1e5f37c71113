//! [`CourseStore::import_batch`] and [`CourseStore::export`] on both stores (ADR 0040).

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use super::{Backend, TestDatabase, by, new_course};
use crate::rules::{CatalogName, Course, CourseId, HistoryEntry, Provenance};
use crate::store::port::{ExportEnd, ExportSink, ImportOutcome, RemoteChange};

on_both_stores! {
    async: ;
    sync:
        a_batch_stores_new_courses_and_leaves_present_ids_and_taken_titles_alone,
        importing_the_same_batch_again_writes_nothing,
        a_batch_of_several_statements_counts_each_active_course_once,
        a_dry_run_tells_what_a_batch_would_do_and_writes_nothing,
        another_process_following_the_database_hears_of_every_imported_course,
        an_export_sees_one_point_in_time_while_another_writer_goes_on,
        an_export_with_history_sends_each_courses_entries_oldest_first,
        a_bulk_import_is_offered_into_an_empty_sqlite_database_only,
}

fn catalog() -> CatalogName {
    CatalogName::default_catalog()
}

fn importer() -> Provenance {
    Provenance::new("operadora", "importar", "{\"arquivo\":\"cursos.csv\"}")
}

fn imported(title: &str, hours: i64) -> Course {
    let new = new_course(title, hours);
    Course::create_with_id(CourseId::for_import(&catalog(), &new.title), new, time::OffsetDateTime::now_utc())
}

/// An archived course as an export would carry it (version 2, archived after its creation).
fn archived(title: &str) -> Course {
    let now = time::OffsetDateTime::now_utc();
    Course::imported(CourseId::generate(), new_course(title, 5), true, 2, now, now, now)
        .expect("a valid archived course")
}

fn a_batch_stores_new_courses_and_leaves_present_ids_and_taken_titles_alone(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let existing = Course::create(new_course("Rust", 10), time::OffsetDateTime::now_utc());
    store.insert(&catalog(), &existing, &by()).expect("stored");
    let other_catalog = CatalogName::parse("outra").expect("valid");
    let elsewhere = Course::create(new_course("Go", 10), time::OffsetDateTime::now_utc());
    store.insert(&other_catalog, &elsewhere, &by()).expect("stored");

    let fresh = imported("Arquitetura", 20);
    let batch = [
        fresh.clone(),
        existing.clone(),        // its id is here
        imported("  RUST ", 30), // another active course has the title
        // An earlier course of the batch took the title (under another id: without one, the
        // same title key would be the same deterministic id, already present).
        Course::create(new_course("arquitetura", 40), time::OffsetDateTime::now_utc()),
        archived("Rust"), // archived: titles of archived courses may repeat
        Course::imported(
            elsewhere.id(),
            new_course("Python", 1),
            false,
            1,
            elsewhere.created_at(),
            elsewhere.updated_at(),
            time::OffsetDateTime::now_utc(),
        )
        .expect("valid"), // the id is another catalog's
    ];
    let outcomes = store.import_batch(&catalog(), &batch, &importer(), false).expect("imported");
    assert_eq!(
        outcomes,
        [
            ImportOutcome::Inserted,
            ImportOutcome::AlreadyPresent,
            ImportOutcome::TitleTaken,
            ImportOutcome::TitleTaken,
            ImportOutcome::Inserted,
            ImportOutcome::IdTaken,
        ]
    );
    assert_eq!(store.count_active(&catalog()).expect("count"), 2, "Rust and Arquitetura");
    assert_eq!(store.find(&catalog(), fresh.id()).expect("read"), Some(fresh.clone()), "stored as given");
    assert_eq!(store.find(&catalog(), batch[4].id()).expect("read"), Some(batch[4].clone()), "archived kept");
    assert_eq!(store.find(&catalog(), existing.id()).expect("read"), Some(existing), "untouched");
    assert_eq!(store.find(&other_catalog, elsewhere.id()).expect("read"), Some(elsewhere), "untouched");
    let history = store.history_page(&catalog(), &fresh, None, 10).expect("history");
    assert_eq!(history.len(), 1, "one entry per imported course");
    let (entry, _) = &history[0];
    assert_eq!((entry.provenance.author(), entry.provenance.tool()), ("operadora", "importar"));
    assert_eq!((entry.before.as_ref(), &entry.after), (None, &fresh));
    // A course another database had revised arrives as it was: before and after are the course.
    let history = store.history_page(&catalog(), &batch[4], None, 10).expect("history");
    let [(entry, _)] = &history[..] else { panic!("one entry: {history:?}") };
    assert_eq!(
        (entry.provenance.tool(), entry.before.as_ref(), &entry.after),
        ("importar", Some(&batch[4]), &batch[4])
    );
}

fn importing_the_same_batch_again_writes_nothing(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let batch: Vec<Course> = (0..50).map(|index| imported(&format!("Curso {index}"), 1 + index)).collect();
    let first = store.import_batch(&catalog(), &batch, &importer(), false).expect("imported");
    assert!(first.iter().all(|outcome| *outcome == ImportOutcome::Inserted), "{first:?}");
    // Rebuilt from the same rows (new instants): the deterministic ids make them the same courses.
    let again: Vec<Course> = (0..50).map(|index| imported(&format!("Curso {index}"), 1 + index)).collect();
    let second = store.import_batch(&catalog(), &again, &importer(), false).expect("imported");
    assert!(second.iter().all(|outcome| *outcome == ImportOutcome::AlreadyPresent), "{second:?}");
    assert_eq!(store.count_active(&catalog()).expect("count"), 50);
    for course in &batch {
        assert_eq!(store.find(&catalog(), course.id()).expect("read").as_ref(), Some(course), "the first import's");
        assert_eq!(store.history_page(&catalog(), course, None, 10).expect("history").len(), 1, "no second entry");
    }
}

/// A batch reaches the store as several multi-row statements (1,000 rows each); the active-course
/// counter is kept per statement on PostgreSQL (ADR 0058): every active course of every statement
/// is counted once, archived ones not at all, and a later creation counts on from there.
fn a_batch_of_several_statements_counts_each_active_course_once(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    store
        .insert(&catalog(), &Course::create(new_course("Antes", 1), time::OffsetDateTime::now_utc()), &by())
        .expect("stored");
    let batch: Vec<Course> = (0..2_500)
        .map(|index| {
            if index % 10 == 0 {
                archived(&format!("Arquivado {index}"))
            } else {
                imported(&format!("Curso {index}"), 5)
            }
        })
        .collect();
    let outcomes = store.import_batch(&catalog(), &batch, &importer(), false).expect("imported");
    assert!(outcomes.iter().all(|outcome| *outcome == ImportOutcome::Inserted), "{outcomes:?}");
    assert_eq!(store.count_active(&catalog()).expect("count"), 1 + 2_250, "the one before and the batch's active ones");
    store
        .insert(&catalog(), &Course::create(new_course("Depois", 1), time::OffsetDateTime::now_utc()), &by())
        .expect("stored");
    assert_eq!(store.count_active(&catalog()).expect("count"), 2 + 2_250);
}

fn a_dry_run_tells_what_a_batch_would_do_and_writes_nothing(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let existing = imported("Rust", 10);
    store.import_batch(&catalog(), std::slice::from_ref(&existing), &importer(), false).expect("imported");
    let with_random_id = |title| Course::create(new_course(title, 3), time::OffsetDateTime::now_utc());
    let batch = [imported("Go", 10), existing, with_random_id("rust"), with_random_id("go"), imported(" RUST", 7)];
    let outcomes = store.import_batch(&catalog(), &batch, &importer(), true).expect("checked");
    assert_eq!(
        outcomes,
        [
            ImportOutcome::Inserted,
            ImportOutcome::AlreadyPresent,
            ImportOutcome::TitleTaken,
            ImportOutcome::TitleTaken,
            // Without an id, the same title key is the same deterministic id: already there.
            ImportOutcome::AlreadyPresent,
        ]
    );
    assert_eq!(store.count_active(&catalog()).expect("count"), 1, "a dry run writes nothing");
    assert_eq!(store.find(&catalog(), batch[0].id()).expect("read"), None);
}

fn another_process_following_the_database_hears_of_every_imported_course(backend: Backend) {
    let database = TestDatabase::new(backend);
    let server = database.open_store();
    let importer_store = database.open_store();
    let heard: Arc<Mutex<Vec<RemoteChange>>> = Arc::default();
    let sink = Arc::clone(&heard);
    let _following = server
        .follow_changes(Box::new(move |change| sink.lock().expect("lock").push(change)))
        .expect("both stores can be shared");
    let batch: Vec<Course> = (0..5).map(|index| imported(&format!("Curso {index}"), 2)).collect();
    // Twice: the second import stores nothing, and must announce nothing.
    for _ in 0..2 {
        importer_store.import_batch(&catalog(), &batch, &importer(), false).expect("imported");
    }
    let expected: Vec<CourseId> = batch.iter().map(Course::id).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let ids: Vec<CourseId> = heard.lock().expect("lock").iter().map(|change| change.course_id).collect();
        if ids.len() >= expected.len() {
            assert_eq!(ids, expected, "each imported course once, in order");
            assert!(
                heard.lock().expect("lock").iter().all(|change| change.changes_listing && change.catalog == catalog())
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "heard only {ids:?}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // A late change would be a duplicate announcement: the follower polls every 20 ms at most
    // (FOLLOW_POLL, SQLITE_FOLLOW_POLL), so another course imported now must be the next one heard.
    let marker = imported("Marcador", 1);
    importer_store.import_batch(&catalog(), std::slice::from_ref(&marker), &importer(), false).expect("imported");
    loop {
        let ids: Vec<CourseId> = heard.lock().expect("lock").iter().map(|change| change.course_id).collect();
        if ids.len() > expected.len() {
            assert_eq!(ids[expected.len()..], [marker.id()], "nothing between the first import and the marker");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the marker was not heard");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Collects what an export sends, and runs `during` after its first page.
struct Collect<'during> {
    total: Option<u64>,
    courses: Vec<(Course, Vec<HistoryEntry>)>,
    during: Option<Box<dyn FnOnce() + 'during>>,
}

impl ExportSink for Collect<'_> {
    fn begin(&mut self, total: u64) -> ControlFlow<()> {
        self.total = Some(total);
        ControlFlow::Continue(())
    }

    fn course(&mut self, course: &Course, history: &[HistoryEntry]) -> ControlFlow<()> {
        self.courses.push((course.clone(), history.to_vec()));
        ControlFlow::Continue(())
    }

    fn page_done(&mut self) -> ControlFlow<()> {
        if let Some(during) = self.during.take() {
            during();
        }
        ControlFlow::Continue(())
    }
}

fn an_export_sees_one_point_in_time_while_another_writer_goes_on(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let writer = database.open_store();
    let before: Vec<Course> = (0..25).map(|index| imported(&format!("Curso {index}"), 3)).collect();
    store.import_batch(&catalog(), &before, &importer(), false).expect("imported");
    let first = before[0].clone();
    let mut sink = Collect {
        total: None,
        courses: Vec::new(),
        during: Some(Box::new(|| {
            // After the first page of 10: ten more courses, and a change to one already sent and
            // to one not sent yet. None of it may show.
            let later: Vec<Course> = (0..10).map(|index| imported(&format!("Depois {index}"), 4)).collect();
            writer.import_batch(&catalog(), &later, &importer(), false).expect("written meanwhile");
            for course in [&before[0], &before[20]] {
                let revision = course.archived_at(time::OffsetDateTime::now_utc()).expect("active");
                writer.replace(&catalog(), &revision, &by()).expect("archived meanwhile");
            }
        })),
    };
    let end = store.export(&catalog(), false, 10, &mut sink).expect("exported");
    assert_eq!(end, ExportEnd::Finished(25));
    assert_eq!(sink.total, Some(25));
    let exported: Vec<Course> = sink.courses.into_iter().map(|(course, _)| course).collect();
    assert_eq!(exported, before, "the snapshot's courses, in creation order, as they were");
    assert!(store.find(&catalog(), first.id()).expect("read").expect("there").is_archived(), "the writer did write");
    assert_eq!(store.count_active(&catalog()).expect("count"), 33);
}

fn an_export_with_history_sends_each_courses_entries_oldest_first(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let course = imported("Rust", 3);
    store.import_batch(&catalog(), std::slice::from_ref(&course), &importer(), false).expect("imported");
    let archived_course = course.archived_at(time::OffsetDateTime::now_utc()).expect("active");
    let archived_now = archived_course.after().clone();
    store.replace(&catalog(), &archived_course, &by()).expect("archived");
    let plain = imported("Go", 3);
    store.import_batch(&catalog(), std::slice::from_ref(&plain), &importer(), false).expect("imported");

    let mut sink = Collect { total: None, courses: Vec::new(), during: None };
    assert_eq!(store.export(&catalog(), true, 1, &mut sink).expect("exported"), ExportEnd::Finished(2));
    let [(first, first_history), (second, second_history)] = &sink.courses[..] else { panic!("{:?}", sink.courses) };
    assert_eq!((first, second), (&archived_now, &plain), "archived courses too, in creation order");
    let tools: Vec<&str> = first_history.iter().map(|entry| entry.provenance.tool()).collect();
    assert_eq!(tools, ["importar", "criar_curso"], "oldest first (the archiving was written as `by()`)");
    assert_eq!(first_history[1].after, archived_now);
    assert_eq!(second_history.len(), 1);
    let mut without = Collect { total: None, courses: Vec::new(), during: None };
    store.export(&catalog(), false, 100, &mut without).expect("exported");
    assert!(without.courses.iter().all(|(_, history)| history.is_empty()), "no history unless asked");
}

/// ADR 0057: SQLite offers one transaction for an import into a database with no course; a
/// database with a course (of any catalog), and PostgreSQL, import batch by batch.
fn a_bulk_import_is_offered_into_an_empty_sqlite_database_only(backend: Backend) {
    let database = TestDatabase::new(backend);
    let store = database.open_store();
    let offered = store.begin_bulk_import(&catalog(), &importer()).expect("asked").is_some();
    assert_eq!(offered, matches!(backend, Backend::Sqlite));
    let elsewhere = CatalogName::parse("outra").expect("valid");
    store.insert(&elsewhere, &imported("Go", 3), &by()).expect("stored: no import holds the lock");
    assert!(store.begin_bulk_import(&catalog(), &importer()).expect("asked").is_none());
}

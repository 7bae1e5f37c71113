//! Failures injected into the SQLite store: what its callers are told, and what the file holds
//! afterwards (issue 14, "Failure semantics"; ADR 0020, 0021, 0026).
//!
//! - A write that ends the batch's transaction (a trigger's `RAISE(ROLLBACK)`, `SQLITE_FULL`)
//!   fails the whole batch: every caller gets an error and nothing of the batch is in the file.
//! - A `COMMIT` that fails leaves the outcome unknown, and callers are told so.
//! - A panic in a batch is reported as a panic; a writer thread that died makes the store
//!   unwritable and not ready.
//! - An inline read never waits for a pooled connection on the async worker.
//!
//! Several writes are put into one batch deterministically: a first write holds the writer inside
//! its batch until released ([`HeldWriter`]), the others queue behind it one at a time (each
//! queued before the next is sent, so their order is known), and on release the writer takes them
//! all as its next batch.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use time::OffsetDateTime;

use crate::catalog::{Catalog, CreateCourseError, NotReady};
use crate::rules::{CatalogName, Course, CourseTitle, NewCourse, WorkloadHours};
use crate::store::port::{CourseStore, Unwritable, WriteError};
use crate::store::sqlite::SqliteStore;
use crate::testing::{by, new_course};

fn course(title: &str) -> Course {
    Course::create(new_course(title, 10), OffsetDateTime::now_utc())
}

/// A store on a fresh file.
fn fresh_store() -> (tempfile::TempDir, PathBuf, SqliteStore) {
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("cursos.db");
    let store = SqliteStore::open(&path).expect("open store");
    (folder, path, store)
}

/// The titles of the courses in the file at `path`, read by a connection of its own (as a
/// restart would).
pub(crate) fn titles_in_file(path: &Path) -> Vec<String> {
    let mut connection = SqliteConnection::establish(&path.to_string_lossy()).expect("open the file");
    // The store's connections may still hold a lock for a moment (a checkpoint, a rollback).
    connection.batch_execute("PRAGMA busy_timeout = 10000").expect("busy timeout");
    diesel::sql_query("SELECT title FROM courses ORDER BY position")
        .load::<TitleRow>(&mut connection)
        .expect("read the titles")
        .into_iter()
        .map(|row| row.title)
        .collect()
}

#[derive(QueryableByName)]
struct TitleRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    title: String,
}

/// A write that holds the writer inside its batch until [`release`](Self::release).
struct HeldWriter {
    release: mpsc::Sender<()>,
    write: JoinHandle<Result<(), WriteError>>,
}

impl HeldWriter {
    /// Starts a write that runs `first` (on the writer's connection, in its batch) and then
    /// waits; returns once that write is running.
    fn hold(
        store: &SqliteStore,
        first: impl FnOnce(&mut SqliteConnection) -> QueryResult<()> + Send + 'static,
    ) -> Self {
        let (started, running) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let store = store.clone();
        let write = std::thread::spawn(move || {
            store.write_with(move |connection| {
                first(connection)?;
                started.send(()).expect("the test waits");
                let _ = released.recv();
                Ok(())
            })
        });
        running.recv().expect("the holding write started");
        Self { release, write }
    }

    /// Lets the held batch finish; its outcome.
    fn release(self) -> Result<(), WriteError> {
        let _ = self.release.send(());
        self.write.join().expect("holding write")
    }
}

/// Sends `write` to the store from a thread of its own and returns once it is queued behind
/// everything sent before it.
fn queue<T: Send + 'static>(
    store: &SqliteStore,
    write: impl FnOnce(&SqliteStore) -> T + Send + 'static,
) -> JoinHandle<T> {
    let queued_before = store.pending_writes().0;
    let thread_store = store.clone();
    let handle = std::thread::spawn(move || write(&thread_store));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.pending_writes().0 <= queued_before {
        assert!(std::time::Instant::now() < deadline, "a write never reached the writer's queue");
        std::thread::yield_now();
    }
    handle
}

/// Inserts a course titled `title` into the default catalog.
fn insert(store: &SqliteStore, title: &str) -> Result<(), WriteError> {
    store.insert(&CatalogName::default_catalog(), &course(title), &by())
}

fn queue_insert(store: &SqliteStore, title: &str) -> JoinHandle<Result<(), WriteError>> {
    let course = course(title);
    queue(store, move |store| store.insert(&CatalogName::default_catalog(), &course, &by()))
}

// ---- A write that ends the batch's transaction --------------------------------------------------

/// A trigger's `RAISE(ROLLBACK)` makes SQLite roll back the whole transaction, not just the
/// write's savepoint. Before issue 14 the writes queued after it then ran outside any transaction
/// (each committed on its own, durable) while every caller was told the batch failed.
#[test]
fn a_write_that_rolls_back_the_whole_transaction_fails_its_batch_and_leaves_nothing_of_it() {
    let (_folder, path, store) = fresh_store();
    insert(&store, "Antes").expect("acknowledged before the fault");
    SqliteConnection::establish(&path.to_string_lossy())
        .expect("second connection")
        .batch_execute(
            "CREATE TRIGGER poison BEFORE INSERT ON courses WHEN new.title = 'Veneno'
             BEGIN SELECT RAISE(ROLLBACK, 'poisoned title'); END;",
        )
        .expect("create the trigger");

    let held = HeldWriter::hold(&store, |_| Ok(()));
    let writes: Vec<_> =
        ["Primeiro", "Veneno", "Terceiro", "Quarto"].iter().map(|title| queue_insert(&store, title)).collect();
    held.release().expect("the holding batch commits");
    for (number, write) in writes.into_iter().enumerate() {
        let outcome = write.join().expect("write");
        assert!(matches!(outcome, Err(WriteError::Store(_))), "write {number} of the failed batch: {outcome:?}");
    }
    assert_eq!(titles_in_file(&path), ["Antes"], "nothing of the failed batch is in the file");

    insert(&store, "Depois").expect("the writer carries on with the next batch");
    drop(store);
    assert_eq!(titles_in_file(&path), ["Antes", "Depois"]);
}

/// A duplicate title is a failure of its write alone, as before: the rest of its batch commits.
#[test]
fn a_duplicate_title_in_a_batch_still_fails_alone() {
    let (_folder, path, store) = fresh_store();
    insert(&store, "Rust").expect("acknowledged");
    let held = HeldWriter::hold(&store, |_| Ok(()));
    let writes: Vec<_> = ["Go", "rust", "Zig"].iter().map(|title| queue_insert(&store, title)).collect();
    held.release().expect("holding batch");
    let outcomes: Vec<_> = writes.into_iter().map(|write| write.join().expect("write")).collect();
    assert!(outcomes[0].is_ok() && outcomes[2].is_ok(), "{outcomes:?}");
    assert!(matches!(outcomes[1], Err(WriteError::DuplicateTitle)), "{outcomes:?}");
    assert_eq!(titles_in_file(&path), ["Rust", "Go", "Zig"]);
}

/// `SQLITE_FULL` from the file's page limit (`PRAGMA max_page_count` on the writer's connection:
/// a real "database or disk is full" without filling a disk, nor root). The batch fails as a
/// whole: every caller gets an error, nothing of it is in the file, and the writes acknowledged
/// before are still there after reopening.
#[test]
fn a_full_database_fails_the_whole_batch_and_keeps_what_was_acknowledged_before() {
    let (_folder, path, store) = fresh_store();
    let before: Vec<String> = (0..3).map(|number| format!("Reconhecido {number}")).collect();
    for title in &before {
        insert(&store, title).expect("acknowledged before the fault");
    }
    // The writer's connection may not grow the file by more than one page from now on.
    let held = HeldWriter::hold(&store, |connection| {
        #[derive(QueryableByName)]
        struct Pages {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            page_count: i64,
        }
        let pages = diesel::sql_query("PRAGMA page_count").get_result::<Pages>(connection)?.page_count;
        connection.batch_execute(&format!("PRAGMA max_page_count = {}", pages + 1))
    });
    let long = "Curso de título longo ".repeat(9);
    let writes: Vec<_> = (0..40)
        .map(|number| queue_insert(&store, &format!("{long}{number}").chars().take(200).collect::<String>()))
        .collect();
    held.release().expect("the holding batch wrote nothing");
    let outcomes: Vec<_> = writes.into_iter().map(|write| write.join().expect("write")).collect();
    assert!(outcomes.iter().all(Result::is_err), "every write of the failed batch is told it failed: {outcomes:?}");
    drop(store);
    assert_eq!(titles_in_file(&path), before, "what was acknowledged is there, nothing of the failed batch is");
    let reopened = SqliteStore::open(&path).expect("reopen");
    insert(&reopened, "Depois").expect("a fresh connection has no page limit");
}

// ---- A COMMIT that fails: a small, full disk ------------------------------------------------------

fn is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// Says on the terminal (past the test harness's capture) that a test did not run, and why; or,
/// with `REQUIRE_TMPFS=1` (set by `.ci/run`, which runs as root), fails it: CI never skips these.
fn announce_not_run(test: &str, reason: &str) {
    if std::env::var("REQUIRE_TMPFS").is_ok_and(|value| !value.is_empty() && value != "0") {
        panic!("{test} cannot run: {reason}; REQUIRE_TMPFS is set, so it may not be skipped");
    }
    let banner = format!("\n*** NOT RUN: {test}: {reason} ***\n\n");
    let _ = std::io::stderr().write_all(banner.as_bytes());
}

/// A 4 MiB tmpfs mounted on a folder for one test, unmounted when dropped.
struct SmallDisk {
    folder: PathBuf,
}

impl SmallDisk {
    /// A small disk in a fresh temporary folder for `test`, or none (said loudly) when this user
    /// cannot mount one.
    fn mount_for(test: &str) -> Option<(tempfile::TempDir, Self)> {
        if !is_root() {
            announce_not_run(test, "mounting a small tmpfs needs root");
            return None;
        }
        let folder = tempfile::tempdir().expect("temp dir");
        match Self::mount(&folder.path().join("disk")) {
            Ok(disk) => Some((folder, disk)),
            Err(reason) => {
                announce_not_run(test, &format!("cannot mount a tmpfs ({reason})"));
                None
            }
        }
    }

    fn mount(folder: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(folder).map_err(|error| error.to_string())?;
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
            .arg(folder)
            .status()
            .map_err(|error| format!("cannot run mount: {error}"))?;
        if status.success() { Ok(Self { folder: folder.to_owned() }) } else { Err(format!("mount said {status}")) }
    }

    /// Writes a file until the disk refuses (`ENOSPC`); its path.
    fn fill(&self) -> PathBuf {
        let filler = self.folder.join("filler");
        let mut file = std::fs::File::create(&filler).expect("create the filler");
        let block = vec![0_u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        let single = [0_u8; 1];
        while file.write_all(&single).is_ok() {}
        let _ = file.sync_all();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.folder).status();
    }
}

/// The disk fills up during a batch (its last write fills it), so its `COMMIT` cannot append to
/// the WAL. Every write of the batch is told its outcome is unknown (not that it succeeded, nor
/// that nothing was written); the writes acknowledged before are there after reopening.
/// Needs root to mount a tmpfs: otherwise it says loudly that it did not run (the max_page_count
/// test above covers `SQLITE_FULL` for everyone).
#[test]
fn a_disk_that_fills_during_a_batch_leaves_its_outcome_unknown_and_loses_nothing_acknowledged() {
    let Some((_folder, disk)) = SmallDisk::mount_for("a_disk_that_fills_during_a_batch_...") else { return };
    let path = disk.folder.join("cursos.db");
    let store = SqliteStore::open(&path).expect("open store");
    let before: Vec<String> = (0..3).map(|number| format!("Reconhecido {number}")).collect();
    for title in &before {
        insert(&store, title).expect("acknowledged before the fault");
    }
    let held = HeldWriter::hold(&store, |_| Ok(()));
    let writes: Vec<_> = (0..30).map(|number| queue_insert(&store, &format!("No lote {number}"))).collect();
    let filler_disk = disk.folder.clone();
    let filler = queue(&store, move |store| {
        store.write_with(move |_| {
            SmallDisk { folder: filler_disk }.fill_and_forget();
            Ok(())
        })
    });
    held.release().expect("the holding batch wrote nothing");
    let outcomes: Vec<_> = writes.into_iter().map(|write| write.join().expect("write")).collect();
    let filled = filler.join().expect("filler");
    assert!(matches!(filled, Err(WriteError::OutcomeUnknown(_))), "{filled:?}");
    for outcome in &outcomes {
        assert!(matches!(outcome, Err(WriteError::OutcomeUnknown(_))), "{outcome:?}");
    }
    std::fs::remove_file(disk.folder.join("filler")).expect("free the disk");
    drop(store);
    let titles = titles_in_file(&path);
    assert_eq!(&titles[..before.len()], &before[..], "what was acknowledged is there");
    // SQLite wrote no commit record for the batch (the WAL could not grow): none of it is there.
    assert_eq!(titles.len(), before.len(), "{titles:?}");
    drop(disk);
}

impl SmallDisk {
    /// [`fill`](Self::fill) without unmounting when dropped (the test's own `SmallDisk` does).
    fn fill_and_forget(self) {
        self.fill();
        std::mem::forget(self);
    }
}

/// Before each batch the writer checks the disk has room: a disk already full refuses the
/// batch with `DiskFull` (nothing written), as `/ready` says, instead of failing its `COMMIT`.
#[test]
fn a_disk_already_full_refuses_the_batch_before_writing_it() {
    let Some((_folder, disk)) = SmallDisk::mount_for("a_disk_already_full_refuses_the_batch_before_writing_it") else {
        return;
    };
    let path = disk.folder.join("cursos.db");
    let store = SqliteStore::open(&path).expect("open store");
    insert(&store, "Antes").expect("acknowledged");
    let filler = disk.fill();
    let refused = insert(&store, "Durante");
    assert!(matches!(refused, Err(WriteError::Unwritable(Unwritable::DiskFull))), "{refused:?}");
    std::fs::remove_file(filler).expect("free the disk");
    insert(&store, "Depois").expect("room again");
    drop(store);
    assert_eq!(titles_in_file(&path), ["Antes", "Depois"]);
}

// ---- Panics in the writer -------------------------------------------------------------------------

/// A write that panics fails its batch, reported as a panic of the writer (not as "writer gone"),
/// nothing of the batch is written, and the writer carries on.
#[test]
fn a_panic_in_a_batch_is_reported_as_a_panic_writes_nothing_and_the_writer_carries_on() {
    let (_folder, path, store) = fresh_store();
    let held = HeldWriter::hold(&store, |_| Ok(()));
    let first = queue_insert(&store, "Antes do pânico");
    let panicking = queue(&store, |store| {
        store.write_with(|connection| {
            connection.batch_execute("UPDATE catalog_counters SET active_courses = active_courses")?;
            panic!("a bug in a write");
        })
    });
    let last = queue_insert(&store, "Depois do pânico");
    held.release().expect("holding batch");
    for outcome in [first.join().expect("write"), panicking.join().expect("write"), last.join().expect("write")] {
        let Err(WriteError::Store(error)) = &outcome else { panic!("{outcome:?}") };
        let chain = error_chain(error);
        assert!(chain.contains("panicked") && chain.contains("a bug in a write"), "{chain}");
    }
    assert!(titles_in_file(&path).is_empty(), "nothing of the batch was written");
    insert(&store, "Depois").expect("the writer carries on");
    let catalog = Catalog::new(store);
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(async {
        catalog.readiness().await.expect("a panic in a batch does not stop the writer");
    });
}

/// The writer thread itself dying (a panic outside any batch, a bug in its loop) is not
/// restarted: readiness says so, and writes are refused as unwritable until the process restarts.
#[test]
fn a_writer_thread_that_died_makes_the_store_not_ready_and_refuses_writes() {
    let (_folder, _path, store) = fresh_store();
    let catalog = Catalog::new(store.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(catalog.readiness()).expect("ready at first");
    store.kill_writer_for_tests();
    let readiness = runtime.block_on(catalog.readiness());
    assert!(matches!(readiness, Err(NotReady::Unwritable(Unwritable::WriterStopped))), "{readiness:?}");
    let refused = runtime.block_on(catalog.create(
        NewCourse {
            title: CourseTitle::parse("Depois").expect("title"),
            workload_hours: WorkloadHours::parse(10).expect("hours"),
        },
        by(),
    ));
    assert!(matches!(refused, Err(CreateCourseError::Unwritable(Unwritable::WriterStopped))), "{refused:?}");
    assert_eq!(Unwritable::WriterStopped.as_str(), "database_writer_stopped");
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

// ---- Inline reads never wait for the pool (ADR 0021) ----------------------------------------------

/// Every pooled connection is taken (held by other threads): a read on the runtime's only thread
/// must not wait for one there (before issue 14 it did, up to the pool's 30 s timeout, and nothing
/// else on that thread ran meanwhile). It is handed to the blocking pool, the thread keeps serving
/// other tasks, readiness's own timeout can fire, and the read answers once a connection is free.
#[tokio::test(flavor = "current_thread")]
async fn a_read_finding_every_pooled_connection_taken_never_blocks_the_runtime() {
    let (_folder, _path, store) = fresh_store();
    let catalog = Catalog::new(store.clone());
    let created = catalog
        .create(
            NewCourse {
                title: CourseTitle::parse("Rust").expect("title"),
                workload_hours: WorkloadHours::parse(10).expect("hours"),
            },
            by(),
        )
        .await
        .expect("created");
    let held = tokio::task::spawn_blocking({
        let store = store.clone();
        move || store.take_every_read_connection()
    })
    .await
    .expect("took the pool's connections");

    let read = tokio::spawn({
        let (catalog, id) = (catalog.clone(), created.id());
        async move { catalog.get(id).await }
    });
    // The only thread runs other tasks while the read waits for a connection.
    let other = tokio::spawn(async { "answered" });
    assert_eq!(other.await.expect("other task"), "answered");
    let readiness = tokio::time::timeout(std::time::Duration::from_millis(200), catalog.readiness()).await;
    assert!(readiness.is_err(), "readiness cannot read with the pool taken, and its timeout fired: {readiness:?}");
    assert!(!read.is_finished(), "the read waits for a connection off the runtime's thread, it did not fail");

    drop(held);
    assert_eq!(read.await.expect("read task").expect("read once a connection is free"), created);
}

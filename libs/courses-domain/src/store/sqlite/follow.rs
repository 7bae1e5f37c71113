//! Changes other processes commit to a [`SqliteStore`](super::SqliteStore)'s file (ADR 0030).
//!
//! SQLite has no notification between processes, but `PRAGMA data_version` on a connection
//! changes whenever another connection commits to the file: a thread with its own connection asks
//! for it every [`SQLITE_FOLLOW_POLL`] (a few microseconds, no I/O beyond the WAL index in shared
//! memory) and, when it changed, reads the `course_history` rows newer than the last one it saw
//! (`seq` is an `AUTOINCREMENT` key: every accepted write has one, in commit order, since one
//! process writes to the file at a time).
//!
//! Rows this process's writer committed are skipped: the catalog's observers already announced
//! them. The writer records the `seq` range of each batch ([`OwnWrites`]) while it holds the
//! file's write lock, and holds the [`OwnWrites`] lock across its `COMMIT`, so the follower never
//! reads a committed row of its own process before it is recorded.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

use crate::rules::{CatalogName, CourseId};
use crate::store::port::{ChangeFollower, RemoteChange, StoreError};

/// How often a following SQLite store asks whether another process committed (ADR 0030).
pub const SQLITE_FOLLOW_POLL: Duration = Duration::from_millis(50);

/// The most history rows read per query (a burst of writes is read in several).
const ROWS_PER_READ: i64 = 500;

/// How long the follower waits before reopening its connection after an error.
const RETRY: Duration = Duration::from_secs(1);

mod schema {
    diesel::table! {
        course_history (seq) {
            seq -> BigInt,
            catalog -> Text,
            course_id -> Text,
            before_title -> Nullable<Text>,
            before_archived -> Nullable<Bool>,
            after_title -> Text,
            after_archived -> Bool,
        }
    }
}

use schema::course_history;

/// The history positions this process's writer committed, while a follower runs.
#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    state: Mutex<OwnState>,
}

#[derive(Debug, Default)]
pub(crate) struct OwnState {
    /// Whether a follower runs (the writer records nothing otherwise).
    following: bool,
    /// Inclusive `seq` ranges committed by this process and not yet passed by the follower.
    ranges: VecDeque<(i64, i64)>,
}

impl OwnWrites {
    /// Locks the record. The writer holds it across its `COMMIT`, until the batch is recorded.
    pub(crate) fn lock(&self) -> MutexGuard<'_, OwnState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl OwnState {
    /// Records that this process committed the history rows `last_before + 1 ..= last` (while a
    /// follower runs; nothing otherwise).
    pub(crate) fn record(&mut self, last_before: i64, last: i64) {
        if self.following && last > last_before {
            self.ranges.push_back((last_before + 1, last));
        }
    }

    fn is_own(&self, seq: i64) -> bool {
        self.ranges.iter().any(|&(first, last)| (first..=last).contains(&seq))
    }

    fn forget_up_to(&mut self, seq: i64) {
        self.ranges.retain(|&(_, last)| last > seq);
    }
}

/// The highest history position in the file (0 when there is none).
pub(crate) fn last_seq(connection: &mut SqliteConnection) -> QueryResult<i64> {
    course_history::table
        .select(diesel::dsl::max(course_history::seq))
        .first::<Option<i64>>(connection)
        .map(Option::unwrap_or_default)
}

#[derive(QueryableByName)]
struct DataVersion {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    data_version: i64,
}

/// One history row, as far as announcing it needs.
#[derive(Queryable)]
struct Written {
    seq: i64,
    catalog: String,
    course_id: String,
    before_title: Option<String>,
    before_archived: Option<bool>,
    after_title: String,
    after_archived: bool,
}

impl Written {
    /// The same rule as `CourseChange::changes_listing`:
    /// a creation, an archiving or a new title changes the listing.
    fn changes_listing(&self) -> bool {
        self.before_title.as_deref() != Some(self.after_title.as_str())
            || self.before_archived != Some(self.after_archived)
    }
}

/// Starts the follower thread on the file at `database`, reporting the changes committed after
/// this call by other processes.
pub(crate) fn start(
    database: String,
    open: impl Fn(&str) -> Result<SqliteConnection, diesel::ConnectionError> + Send + 'static,
    own: &Arc<OwnWrites>,
    on_change: Box<dyn Fn(RemoteChange) + Send>,
) -> ChangeFollower {
    let stop = Arc::new(AtomicBool::new(false));
    let follower = ChangeFollower::new(Arc::clone(&stop));
    // Where to start: read now, under the lock, so that every row committed after this call is
    // either this process's (recorded from now on) or reported.
    let start_after = {
        let mut state = own.lock();
        state.following = true;
        open(&database)
            .map_err(|error| error.to_string())
            .and_then(|mut connection| last_seq(&mut connection).map_err(|error| error.to_string()))
    };
    let start_after = match start_after {
        Ok(seq) => Some(seq),
        Err(error) => {
            tracing::warn!(%error, "cannot read the catalog's history position; following from the next one read");
            None
        }
    };
    let thread_own = Arc::clone(own);
    let spawned = std::thread::Builder::new().name("sqlite-change-follower".to_owned()).spawn(move || {
        follow(&database, &open, &thread_own, start_after, &stop, &*on_change);
        thread_own.lock().following = false;
    });
    if let Err(error) = spawned {
        tracing::error!(%error, "cannot start following the catalog's changes");
        own.lock().following = false;
    }
    follower
}

fn follow(
    database: &str,
    open: &dyn Fn(&str) -> Result<SqliteConnection, diesel::ConnectionError>,
    own: &OwnWrites,
    mut last_seen: Option<i64>,
    stop: &AtomicBool,
    on_change: &dyn Fn(RemoteChange),
) {
    let stopped = || stop.load(Ordering::Relaxed);
    let mut connection: Option<SqliteConnection> = None;
    let mut last_version: Option<i64> = None;
    while !stopped() {
        let Some(reading) = connection.as_mut() else {
            match open(database) {
                Ok(fresh) => {
                    tracing::debug!("following the catalog's changes made by other processes");
                    connection = Some(fresh);
                    last_version = None;
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot open the database to follow other processes' changes; retrying in 1 s");
                    std::thread::sleep(RETRY);
                }
            }
            continue;
        };
        match poll(reading, own, &mut last_version, &mut last_seen) {
            Ok(changes) => changes.into_iter().for_each(on_change),
            Err(error) => {
                tracing::warn!(%error, "cannot read other processes' changes; reopening");
                connection = None;
                continue;
            }
        }
        std::thread::sleep(SQLITE_FOLLOW_POLL);
    }
}

/// One poll: nothing unless another connection committed since the last one; then the changes
/// of the new history rows not written by this process, one per course, in commit order.
fn poll(
    connection: &mut SqliteConnection,
    own: &OwnWrites,
    last_version: &mut Option<i64>,
    last_seen: &mut Option<i64>,
) -> Result<Vec<RemoteChange>, StoreError> {
    let read_error = |error| StoreError::new("cannot read the catalog's history", error);
    let version = diesel::sql_query("PRAGMA data_version")
        .get_result::<DataVersion>(connection)
        .map_err(read_error)?
        .data_version;
    if last_version.replace(version) == Some(version) {
        return Ok(Vec::new());
    }
    let mut changes: Vec<RemoteChange> = Vec::new();
    loop {
        // Under the lock: a row of this process's is either not committed yet or recorded.
        let mut state = own.lock();
        let Some(after) = *last_seen else {
            *last_seen = Some(last_seq(connection).map_err(read_error)?);
            return Ok(changes);
        };
        let rows: Vec<Written> = course_history::table
            .filter(course_history::seq.gt(after))
            .order(course_history::seq.asc())
            .limit(ROWS_PER_READ)
            .select((
                course_history::seq,
                course_history::catalog,
                course_history::course_id,
                course_history::before_title,
                course_history::before_archived,
                course_history::after_title,
                course_history::after_archived,
            ))
            .load(connection)
            .map_err(read_error)?;
        let Some(last) = rows.last().map(|row| row.seq) else {
            return Ok(changes);
        };
        let more = rows.len() >= usize::try_from(ROWS_PER_READ).unwrap_or(usize::MAX);
        let others: Vec<Written> = rows.into_iter().filter(|row| !state.is_own(row.seq)).collect();
        state.forget_up_to(last);
        drop(state);
        *last_seen = Some(last);
        for row in others {
            let changes_listing = row.changes_listing();
            let Ok(course_id) = CourseId::parse(&row.course_id) else {
                tracing::warn!(seq = row.seq, "a history entry names an invalid course: not announced");
                continue;
            };
            let Some(catalog) = CatalogName::from_stored(&row.catalog) else {
                tracing::warn!(seq = row.seq, "a history entry names an invalid catalog: not announced");
                continue;
            };
            match changes.iter_mut().find(|change| change.course_id == course_id) {
                Some(change) => change.changes_listing |= changes_listing,
                None => changes.push(RemoteChange { catalog, course_id, changes_listing }),
            }
        }
        if !more {
            return Ok(changes);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::mpsc;
    use std::time::Duration;

    use super::{OwnWrites, poll};
    use crate::catalog::Catalog;
    use crate::rules::{CatalogName, CourseChanges, CourseId, CourseTitle, WorkloadHours};
    use crate::store::port::RemoteChange;
    use crate::store::sqlite::SqliteStore;
    use crate::testing::{by, new_course};

    /// Long enough for a loaded CI machine; a passing test never waits for it.
    const PATIENCE: Duration = Duration::from_secs(10);

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
    }

    #[test]
    fn changes_committed_through_another_store_on_the_file_are_followed_and_its_own_are_not() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("cursos.db");
        let here = SqliteStore::open(&path).expect("open here");
        let elsewhere = Catalog::new(SqliteStore::open(&path).expect("open elsewhere"));
        let runtime = runtime();
        let before_following = runtime.block_on(elsewhere.create(new_course("Antes", 10), by())).expect("created");
        let (sender, received) = mpsc::channel();
        let follower = here.follow_changes(move |change| {
            let _ = sender.send(change);
        });
        let local = Catalog::new(here);

        let created = runtime.block_on(elsewhere.create(new_course("Remoto", 10), by())).expect("created");
        assert_eq!(
            received.recv_timeout(PATIENCE).expect("the creation is followed"),
            RemoteChange { catalog: CatalogName::default_catalog(), course_id: created.id(), changes_listing: true },
            "a creation elsewhere, not the one made before following"
        );
        let changes = CourseChanges { workload_hours: WorkloadHours::parse(20).ok(), ..Default::default() };
        runtime.block_on(elsewhere.update(created.id(), changes, by())).expect("updated");
        assert_eq!(
            received.recv_timeout(PATIENCE).expect("the update is followed"),
            RemoteChange { catalog: CatalogName::default_catalog(), course_id: created.id(), changes_listing: false },
            "a new workload leaves the listing as it was"
        );
        let retitled = CourseChanges { title: CourseTitle::parse("Remoto 2").ok(), ..Default::default() };
        runtime.block_on(elsewhere.update(created.id(), retitled, by())).expect("retitled");
        assert_eq!(
            received.recv_timeout(PATIENCE).expect("the new title is followed"),
            RemoteChange { catalog: CatalogName::default_catalog(), course_id: created.id(), changes_listing: true }
        );

        // Made here: not reported. Refused elsewhere: nothing committed. Then one more change
        // elsewhere, which must be the next one reported.
        let local_course = runtime.block_on(local.create(new_course("Local", 10), by())).expect("created here");
        runtime.block_on(elsewhere.create(new_course("local", 10), by())).expect_err("duplicate title");
        runtime.block_on(elsewhere.archive(before_following.id(), by())).expect("archived");
        assert_eq!(
            received.recv_timeout(PATIENCE).expect("the archiving is followed"),
            RemoteChange {
                catalog: CatalogName::default_catalog(),
                course_id: before_following.id(),
                changes_listing: true
            },
            "not {}: that write was made here",
            local_course.id()
        );
        drop(follower);
    }

    #[test]
    fn racing_writers_on_one_file_each_hear_exactly_the_others_writes() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("cursos.db");
        let here = SqliteStore::open(&path).expect("open here");
        let elsewhere = Catalog::new(SqliteStore::open(&path).expect("open elsewhere"));
        let (sender, received) = mpsc::channel();
        let follower = here.follow_changes(move |change| {
            let _ = sender.send(change);
        });
        let local = Catalog::new(here);
        let write_many = |catalog: Catalog, prefix: &'static str| {
            std::thread::spawn(move || {
                let runtime = runtime();
                (0..40)
                    .map(|index| {
                        runtime
                            .block_on(catalog.create(new_course(&format!("{prefix} {index}"), 10), by()))
                            .expect("created")
                            .id()
                    })
                    .collect::<HashSet<CourseId>>()
            })
        };
        let local_writes = write_many(local, "Local");
        let remote_writes = write_many(elsewhere, "Remoto");
        let local_ids = local_writes.join().expect("local writer");
        let remote_ids = remote_writes.join().expect("remote writer");

        let mut heard = HashSet::new();
        while heard.len() < remote_ids.len() {
            let change = received.recv_timeout(PATIENCE).expect("every write made elsewhere is followed");
            assert!(!local_ids.contains(&change.course_id), "a write made here was reported");
            assert!(heard.insert(change.course_id), "a write was reported twice");
        }
        assert_eq!(heard, remote_ids);
        drop(follower);
    }

    #[test]
    fn a_poll_reports_each_course_once_in_commit_order() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("cursos.db");
        let elsewhere = Catalog::new(SqliteStore::open(&path).expect("open elsewhere"));
        let mut connection =
            super::super::writer::open(&path.to_string_lossy(), &super::super::test_settings()).expect("connection");
        let own = OwnWrites::default();
        let (mut version, mut seen) = (None, Some(0));
        assert_eq!(poll(&mut connection, &own, &mut version, &mut seen).expect("poll"), Vec::new());

        let runtime = runtime();
        let first = runtime.block_on(elsewhere.create(new_course("Primeiro", 10), by())).expect("created");
        let second = runtime.block_on(elsewhere.create(new_course("Segundo", 10), by())).expect("created");
        let changes = CourseChanges { workload_hours: WorkloadHours::parse(30).ok(), ..Default::default() };
        runtime.block_on(elsewhere.update(second.id(), changes.clone(), by())).expect("updated");
        runtime.block_on(elsewhere.update(first.id(), changes, by())).expect("updated");
        assert_eq!(
            poll(&mut connection, &own, &mut version, &mut seen).expect("poll"),
            vec![
                RemoteChange { catalog: CatalogName::default_catalog(), course_id: first.id(), changes_listing: true },
                RemoteChange { catalog: CatalogName::default_catalog(), course_id: second.id(), changes_listing: true },
            ]
        );
        assert_eq!(poll(&mut connection, &own, &mut version, &mut seen).expect("poll"), Vec::new(), "nothing new");
    }

    #[test]
    fn a_dropped_follower_stops_and_its_store_records_no_more_writes() {
        let folder = tempfile::tempdir().expect("temp dir");
        let here = SqliteStore::open(&folder.path().join("cursos.db")).expect("open");
        let own = std::sync::Arc::clone(&here.own_writes_for_tests());
        let follower = here.follow_changes(|_| {});
        let local = Catalog::new(here);
        let runtime = runtime();
        runtime.block_on(local.create(new_course("Um", 10), by())).expect("created");
        drop(follower);
        let deadline = std::time::Instant::now() + PATIENCE;
        while own.lock().following {
            assert!(std::time::Instant::now() < deadline, "the follower thread did not stop");
            std::thread::sleep(Duration::from_millis(5));
        }
        let recorded = own.lock().ranges.len();
        runtime.block_on(local.create(new_course("Dois", 10), by())).expect("created");
        assert_eq!(own.lock().ranges.len(), recorded, "nothing recorded once nobody follows");
    }
}

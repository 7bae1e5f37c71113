//! [`ReadCache`]: the courses [`SqliteStore::find`](super::SqliteStore) read last, served again only
//! while the database is provably unchanged since they were read (bench/RESULTS.md, issue 14).
//!
//! A point read of SQLite in WAL mode costs mostly its read transaction, not its query: a lock
//! and unlock of the `-shm` file (a process-wide mutex and two `fcntl`) and an `fstat`. The cache
//! replaces that with one `pread` of the **WAL-index header**, the first 96 bytes of the `-shm`
//! file (two copies of one header; SQLite's "WAL-index format" documentation). Why that is exact:
//!
//! - Every commit in WAL mode, by any connection of any process, writes a new header before the
//!   commit returns (`walIndexWriteHdr`, after the WAL is synced): `mxFrame` (the last committed
//!   frame) grows, `iChange` grows by one. A write acknowledged to any client therefore changed the
//!   header before the next read starts, that read sees a different header, misses, and reads
//!   SQLite. Checkpoints copy committed pages and never change what a read returns; a WAL restart
//!   changes the salts, so the header differs again (a miss, never a stale hit).
//! - Within one WAL generation (its salts) the frames up to `mxFrame` never change, so equal
//!   headers mean equal committed contents. A generation's salts repeat only after 2³² restarts
//!   and a 32-bit random draw; every cached course is dropped [`MAX_AGE`] after the header it was
//!   read under was read, far less time than 2³² commits take.
//! - A writer outside WAL mode (a rollback journal) cannot commit while this store is open: in WAL
//!   mode every connection keeps a SHARED lock on the database file, and this store's writer
//!   connection stays open.
//! - The header is read before the row: a commit in between makes the row newer than the header it
//!   is cached under, and the next read sees the newer header and misses. Two copies that differ
//!   (a writer between its two copies) or an uninitialised header disable the cache for that read.
//! - `pread` of the `-shm` file sees what SQLite stores through its shared mapping: on Linux and
//!   macOS a file's mapping and its reads share one page cache. The file is found as SQLite finds
//!   it, beside the database's real path (symbolic links resolved). A `-shm` that cannot be opened
//!   leaves the store without a cache (every read goes to SQLite, as before).
//!
//! Bounded: at most [`MAX_ENTRIES`] courses (then it starts over), all dropped at any change.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::rules::{CatalogName, Course, CourseId};

/// Courses kept at most (about 200 bytes each).
pub(crate) const MAX_ENTRIES: usize = 1024;
/// How long after its header was read a cached course may still be served (see the module docs).
pub(crate) const MAX_AGE: Duration = Duration::from_secs(10);
/// Two copies of the 48-byte WAL-index header.
const HEADER_BYTES: usize = 96;
/// Offset of `isInit` in a header copy.
const IS_INIT: usize = 12;

/// The WAL-index header as read at one instant: what the database's committed contents were then.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalVersion {
    header: [u8; HEADER_BYTES],
    read_at: Instant,
}

impl WalVersion {
    fn same_contents(&self, other: &Self) -> bool {
        self.header == other.header
    }
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct ReadCache {
    shm: File,
    state: Mutex<State>,
    #[cfg(test)]
    hits: std::sync::atomic::AtomicU64,
}

#[derive(Debug)]
struct State {
    /// The header the courses were read under (none: empty).
    version: Option<WalVersion>,
    /// By catalog and id: a course is served only to a read in its own catalog (ADR 0035).
    courses: HashMap<(CatalogName, CourseId), Course>,
}

impl ReadCache {
    /// A cache for the database at `database` (in WAL mode, already open: its `-shm` exists).
    /// Symbolic links are resolved first, as SQLite does: its `-shm` is beside the real file, and a
    /// stray file beside the link must never be taken for it.
    pub(crate) fn open(database: &Path) -> std::io::Result<Self> {
        let mut shm = std::fs::canonicalize(database)?.into_os_string();
        shm.push("-shm");
        Ok(Self {
            shm: File::open(shm)?,
            state: Mutex::new(State { version: None, courses: HashMap::new() }),
            #[cfg(test)]
            hits: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The database's version now, or none when it cannot be told (then do not use the cache).
    pub(crate) fn version(&self) -> Option<WalVersion> {
        let mut header = [0_u8; HEADER_BYTES];
        self.shm.read_exact_at(&mut header, 0).ok()?;
        let (first, second) = header.split_at(HEADER_BYTES / 2);
        (first == second && first[IS_INIT] == 1).then(|| WalVersion { header, read_at: Instant::now() })
    }

    /// The course `id` if it was read under `version`'s contents, less than [`MAX_AGE`] ago.
    pub(crate) fn get(&self, version: &WalVersion, catalog: &CatalogName, id: CourseId) -> Option<Course> {
        let state = self.state.lock().ok()?;
        let cached = state.version.as_ref()?;
        if !cached.same_contents(version) || cached.read_at.elapsed() >= MAX_AGE {
            return None;
        }
        let course = state.courses.get(&(catalog.clone(), id)).cloned();
        #[cfg(test)]
        if course.is_some() {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        course
    }

    /// Keeps `course`, read from SQLite after `version` was read.
    pub(crate) fn put(&self, version: WalVersion, catalog: &CatalogName, course: &Course) {
        let Ok(mut state) = self.state.lock() else { return };
        let current = state
            .version
            .as_ref()
            .is_some_and(|cached| cached.same_contents(&version) && cached.read_at.elapsed() < MAX_AGE);
        if !current || state.courses.len() >= MAX_ENTRIES {
            state.courses.clear();
            state.version = Some(version);
        }
        state.courses.insert((catalog.clone(), course.id()), course.clone());
    }

    /// Reads served from the cache so far (tests).
    #[cfg(test)]
    pub(crate) fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use diesel::Connection as _;
    use diesel::connection::SimpleConnection as _;

    use crate::catalog::Catalog;
    use crate::rules::{Course, CourseChanges, WorkloadHours};
    use crate::store::sqlite::SqliteStore;
    use crate::testing::{by, new_course};

    /// A catalog on a fresh file, its store (to count cache hits) and one course in it.
    async fn catalog_with_a_course() -> (tempfile::TempDir, std::path::PathBuf, SqliteStore, Catalog, Course) {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("cursos.db");
        let store = SqliteStore::open(&path).expect("open store");
        let catalog = Catalog::new(store.clone());
        let course = catalog.create(new_course("Rust", 10), by()).await.expect("created");
        (folder, path, store, catalog, course)
    }

    #[tokio::test]
    async fn a_course_read_again_with_nothing_committed_in_between_comes_from_the_cache() {
        let (_folder, _path, store, catalog, course) = catalog_with_a_course().await;
        assert_eq!(catalog.get(course.id()).await.expect("first read"), course);
        let hits = store.read_cache_hits();
        assert_eq!(catalog.get(course.id()).await.expect("second read"), course);
        assert_eq!(store.read_cache_hits(), hits + 1, "the second read is served from the cache");
    }

    #[tokio::test]
    async fn a_change_committed_by_another_connection_is_seen_by_the_next_read() {
        let (_folder, path, store, catalog, course) = catalog_with_a_course().await;
        catalog.get(course.id()).await.expect("read");
        catalog.get(course.id()).await.expect("read again, from the cache");
        // Another writer of the file (another process's connection, as the stdio app would be).
        let mut other = diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("another connection");
        other
            .batch_execute(&format!(
                "PRAGMA busy_timeout = 10000;
                 UPDATE courses SET title = 'Rust avançado', title_key = 'rust avançado', version = version + 1
                 WHERE id = '{}'",
                course.id()
            ))
            .expect("written by the other connection");
        let hits = store.read_cache_hits();
        let read = catalog.get(course.id()).await.expect("read after the change");
        assert_eq!(read.title().as_str(), "Rust avançado");
        assert_eq!(read.version(), course.version() + 1);
        assert_eq!(store.read_cache_hits(), hits, "read from the file, not from the cache");
    }

    #[tokio::test]
    async fn a_store_opened_through_a_symbolic_link_watches_the_real_file_s_wal_index() {
        let folder = tempfile::tempdir().expect("temp dir");
        let real = folder.path().join("real.db");
        let first = SqliteStore::open(&real).expect("create the real file");
        let link = folder.path().join("link.db");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        // A stray `-shm` beside the link (say, of a file that was there before): a valid header
        // that never changes. SQLite itself resolves the link and uses `real.db-shm`.
        let mut real_shm = real.as_os_str().to_owned();
        real_shm.push("-shm");
        let mut stray_shm = link.as_os_str().to_owned();
        stray_shm.push("-shm");
        std::fs::copy(&real_shm, &stray_shm).expect("a stray -shm beside the link");
        let store = SqliteStore::open(&link).expect("open through the link");
        drop(first);
        let catalog = Catalog::new(store.clone());
        let course = catalog.create(new_course("Rust", 10), by()).await.expect("created");
        catalog.get(course.id()).await.expect("read");
        catalog.get(course.id()).await.expect("read again");
        let mut other = diesel::SqliteConnection::establish(&real.to_string_lossy()).expect("another connection");
        other
            .batch_execute(&format!(
                "PRAGMA busy_timeout = 10000; UPDATE courses SET version = version + 1 WHERE id = '{}'",
                course.id()
            ))
            .expect("written by the other connection");
        assert_eq!(catalog.get(course.id()).await.expect("read after the change").version(), course.version() + 1);
    }

    #[tokio::test]
    async fn a_change_made_through_the_store_is_seen_by_the_next_read() {
        let (_folder, _path, _store, catalog, course) = catalog_with_a_course().await;
        catalog.get(course.id()).await.expect("read");
        catalog.get(course.id()).await.expect("read again, from the cache");
        let changes = CourseChanges {
            workload_hours: Some(WorkloadHours::parse(20).expect("hours")),
            ..CourseChanges::default()
        };
        let updated = catalog.update(course.id(), changes, by()).await.expect("updated");
        assert_eq!(catalog.get(course.id()).await.expect("read after the update"), updated);
        assert_eq!(updated.workload_hours().get(), 20);
    }
}

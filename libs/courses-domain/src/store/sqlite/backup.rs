//! [`backup_sqlite`] and [`restore_sqlite`]: a consistent copy of a live SQLite catalog, and
//! putting one back in place of a database no process has open (ADR 0041).
//!
//! A backup is `VACUUM INTO` a temporary file beside the destination, synced, then renamed: it
//! reads one snapshot (a WAL read transaction, which never blocks the apps' writers nor waits for
//! them), so it holds exactly the commits made before it began, and the destination appears whole
//! or not at all. (SQLite's online backup API would need unsafe FFI, which the workspace forbids,
//! or a second SQLite binding; `VACUUM INTO` is one statement. Its progress is read from the
//! temporary file's size, which grows page by page.)
//!
//! A restore verifies the backup (`PRAGMA integrity_check`, and a schema made by migrations this
//! binary knows), then takes the database only if no process has it open: switching its journal
//! mode from WAL needs an exclusive lock, which SQLite refuses while any other connection (each
//! holds a shared lock for its whole life in WAL mode, ADR 0034) is open. The switch also folds
//! the old `-wal` into the old file and deletes the `-wal` and `-shm`, so none is left to be
//! replayed over the restored file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::migration::MigrationSource;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel::sqlite::SqliteConnection;

use crate::store::port::{MigrationPhase, MigrationProgress};
use crate::store::sqlite::MIGRATIONS;

/// How often a backup's progress is read from the temporary file's size.
const PROGRESS_POLL: Duration = Duration::from_millis(200);

/// Why [`backup_sqlite`] failed. The destination is never left half-written.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The database to back up does not exist.
    #[error("the database {0} does not exist")]
    SourceMissing(PathBuf),
    /// The destination exists and overwriting was not asked for.
    #[error("{0} already exists (pass --overwrite to replace it)")]
    DestinationExists(PathBuf),
    /// Stopped by the caller; nothing was written at the destination.
    #[error("interrupted; nothing was written at the destination")]
    Interrupted,
    /// SQLite failed.
    #[error("the backup failed while {step}")]
    Database {
        /// What it was doing.
        step: &'static str,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A file operation failed.
    #[error("the backup failed while {step} ({path})")]
    File {
        /// What it was doing.
        step: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// The backup file's size in bytes.
    pub bytes: u64,
    /// Courses in it (every catalog).
    pub courses: u64,
}

#[derive(QueryableByName)]
struct Number {
    #[diesel(sql_type = BigInt)]
    value: i64,
}

#[derive(QueryableByName)]
struct Line {
    #[diesel(sql_type = Text)]
    text: String,
}

fn database_error(step: &'static str) -> impl FnOnce(diesel::result::Error) -> BackupError {
    move |source| BackupError::Database { step, source: Box::new(source) }
}

/// Copies the live SQLite database at `database` to `destination` (ADR 0041), reporting pages
/// written through `progress` ([`MigrationPhase::Copy`]).
///
/// # Errors
/// [`BackupError`]; the destination is then untouched (an `--overwrite`n one included).
pub fn backup_sqlite(
    database: &Path,
    destination: &Path,
    overwrite: bool,
    progress: &(dyn MigrationProgress + Sync),
) -> Result<BackupReport, BackupError> {
    if !database.is_file() {
        return Err(BackupError::SourceMissing(database.to_owned()));
    }
    if !overwrite && destination.exists() {
        return Err(BackupError::DestinationExists(destination.to_owned()));
    }
    let temporary = sibling(destination, "backup");
    let file_error = |step: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| BackupError::File { step, path, source }
    };
    // Temporary files left by earlier runs stopped at once (SIGKILL, a second Ctrl-C): each a
    // full copy of the catalog, so removed, unless their process still runs.
    remove_leftovers(destination, "backup").map_err(file_error("removing an old temporary file", destination))?;
    remove_if_present(&temporary).map_err(file_error("removing an old temporary file", &temporary))?;
    // Made here, empty, readable by its owner only (as exports are): `VACUUM INTO` fills an empty
    // file and keeps its mode, so the copy is never readable by others, whatever the umask.
    create_private(&temporary).map_err(file_error("creating the temporary file", &temporary))?;
    let mut connection = SqliteConnection::establish(&database.to_string_lossy())
        .map_err(|error| BackupError::Database { step: "opening the database", source: Box::new(error) })?;
    connection.batch_execute("PRAGMA busy_timeout = 10000;").map_err(database_error("configuring the connection"))?;
    let page_size = number(&mut connection, "SELECT page_size AS value FROM pragma_page_size()")?;
    let pages = number(
        &mut connection,
        "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()) AS value",
    )?;
    progress.phase(MigrationPhase::Copy, u64::try_from(pages).unwrap_or(0));
    let page_size = u64::try_from(page_size).unwrap_or(4096).max(512);

    let vacuum = diesel::sql_query("VACUUM INTO ?").bind::<Text, _>(temporary.to_string_lossy().into_owned());
    let finished = std::sync::atomic::AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut reported = 0_u64;
            while !finished.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::sleep(PROGRESS_POLL);
                let written = std::fs::metadata(&temporary).map(|metadata| metadata.len() / page_size).unwrap_or(0);
                if written > reported {
                    progress.advance(written - reported);
                    reported = written;
                }
            }
        });
        let result = vacuum.execute(&mut connection);
        finished.store(true, std::sync::atomic::Ordering::Release);
        result
    });
    let cleanup = |error: BackupError| {
        let _ = std::fs::remove_file(&temporary);
        error
    };
    result.map_err(database_error("copying the database (VACUUM INTO)")).map_err(cleanup)?;
    drop(connection);
    // VACUUM INTO cannot be stopped half-way; a Ctrl-C during it is honoured here, before the rename.
    if progress.stop_requested() {
        return Err(cleanup(BackupError::Interrupted));
    }
    let courses = {
        let mut copy = SqliteConnection::establish(&temporary.to_string_lossy())
            .map_err(|error| cleanup(BackupError::Database { step: "opening the copy", source: Box::new(error) }))?;
        number(&mut copy, "SELECT COUNT(*) AS value FROM courses").map_err(cleanup)?
    };
    sync_file(&temporary).map_err(file_error("syncing the copy", &temporary)).map_err(cleanup)?;
    let bytes = std::fs::metadata(&temporary).map(|metadata| metadata.len()).unwrap_or(0);
    std::fs::rename(&temporary, destination).map_err(file_error("renaming the copy", destination)).map_err(cleanup)?;
    sync_folder(destination).map_err(file_error("syncing the destination's folder", destination))?;
    Ok(BackupReport { bytes, courses: u64::try_from(courses).unwrap_or(0) })
}

/// Why [`restore_sqlite`] failed. The database is then untouched.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The backup file does not exist.
    #[error("the backup {0} does not exist")]
    BackupMissing(PathBuf),
    /// The backup is damaged.
    #[error("the backup {path} fails SQLite's integrity check: {finding}")]
    Damaged {
        /// The backup.
        path: PathBuf,
        /// The first problem SQLite found.
        finding: String,
    },
    /// The backup is not an mcp-cursos database, or one made by a newer version.
    #[error("the backup {path} is not a mcp-cursos database this version knows: {reason}")]
    UnknownSchema {
        /// The backup.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A process (a backend, a stdio app) has the database open.
    #[error(
        "the database {0} is in use (a running backend or stdio app has it open); stop them first. Nothing was changed"
    )]
    InUse(PathBuf),
    /// SQLite failed.
    #[error("the restore failed while {step}; the database was not changed")]
    Database {
        /// What it was doing.
        step: &'static str,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A file operation failed.
    #[error("the restore failed while {step} ({path})")]
    File {
        /// What it was doing.
        step: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// What a restore put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreReport {
    /// Courses in the restored database (every catalog).
    pub courses: u64,
}

/// Puts the backup at `backup` in place of the SQLite database at `database` (ADR 0041), after
/// verifying it, if no process has `database` open.
///
/// # Errors
/// [`RestoreError`]; `database` is then as it was.
pub fn restore_sqlite(backup: &Path, database: &Path) -> Result<RestoreReport, RestoreError> {
    restore_with(backup, database, || {})
}

/// [`restore_sqlite`], calling `before_rename` while the database's exclusive lock is held, just
/// before the rename (tests open a connection there, as an app starting at that instant would).
fn restore_with(backup: &Path, database: &Path, before_rename: impl FnOnce()) -> Result<RestoreReport, RestoreError> {
    if !backup.is_file() {
        return Err(RestoreError::BackupMissing(backup.to_owned()));
    }
    if let Some(folder) = database.parent().filter(|folder| !folder.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|source| RestoreError::File {
            step: "creating the database's folder",
            path: folder.to_owned(),
            source,
        })?;
    }
    // Verified on a copy beside the database: what is renamed into place is what was checked,
    // and the backup file itself is never written (opening a file may create its -wal).
    let temporary = sibling(database, "restore");
    let file_error = |step: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| RestoreError::File { step, path, source }
    };
    let cleanup = |error: RestoreError| {
        for path in [
            temporary.clone(),
            suffixed(&temporary, "-wal"),
            suffixed(&temporary, "-shm"),
            suffixed(&temporary, "-journal"),
        ] {
            let _ = std::fs::remove_file(path);
        }
        error
    };
    remove_leftovers(database, "restore").map_err(file_error("removing an old temporary file", database))?;
    std::fs::copy(backup, &temporary).map_err(file_error("copying the backup", &temporary)).map_err(cleanup)?;
    let courses = verify_backup(&temporary, backup).map_err(cleanup)?;
    sync_file(&temporary).map_err(file_error("syncing the copy", &temporary)).map_err(cleanup)?;
    // Held until the rename is done: a process that opens the old file meanwhile can neither
    // write to it (the lock) nor, once it is replaced, afterwards (SQLite refuses writes to a
    // file whose path now names another, SQLITE_READONLY_DBMOVED; ADR 0026), so no acknowledged
    // write can land in the file being replaced.
    let _lock = if database.exists() { Some(take_from_its_users(database).map_err(cleanup)?) } else { None };
    // Left by a process that died with the file gone: they would be replayed over the new file.
    for stale in [suffixed(database, "-wal"), suffixed(database, "-shm"), suffixed(database, "-journal")] {
        remove_if_present(&stale).map_err(file_error("removing a stale file", &stale)).map_err(cleanup)?;
    }
    before_rename();
    std::fs::rename(&temporary, database)
        .map_err(file_error("renaming the backup into place", database))
        .map_err(cleanup)?;
    sync_folder(database).map_err(file_error("syncing the database's folder", database))?;
    Ok(RestoreReport { courses })
}

/// Integrity, then the schema's migrations, then a standalone (rollback-journal) file; returns
/// its course count.
fn verify_backup(copy: &Path, backup: &Path) -> Result<u64, RestoreError> {
    let database_error = |step: &'static str| {
        move |source: diesel::result::Error| RestoreError::Database { step, source: Box::new(source) }
    };
    let not_ours = |reason: String| RestoreError::UnknownSchema { path: backup.to_owned(), reason };
    let mut connection = SqliteConnection::establish(&copy.to_string_lossy())
        .map_err(|error| RestoreError::Database { step: "opening the backup", source: Box::new(error) })?;
    let findings = diesel::sql_query("SELECT integrity_check AS text FROM pragma_integrity_check()")
        .load::<Line>(&mut connection)
        .map_err(|error| RestoreError::Damaged { path: backup.to_owned(), finding: error.to_string() })?;
    match findings.first() {
        Some(line) if findings.len() == 1 && line.text == "ok" => {}
        Some(line) => return Err(RestoreError::Damaged { path: backup.to_owned(), finding: line.text.clone() }),
        None => return Err(RestoreError::Damaged { path: backup.to_owned(), finding: "no answer".to_owned() }),
    }
    let applied = diesel::sql_query("SELECT version AS text FROM __diesel_schema_migrations ORDER BY version")
        .load::<Line>(&mut connection)
        .map_err(|_| not_ours("it has no migrations table".to_owned()))?;
    let known: Vec<String> = MigrationSource::<diesel::sqlite::Sqlite>::migrations(&MIGRATIONS)
        .map_err(|error| not_ours(format!("this binary's migrations cannot be listed: {error}")))?
        .iter()
        .map(|migration| migration.name().version().to_string())
        .collect();
    if applied.is_empty() {
        return Err(not_ours("no migration was applied to it".to_owned()));
    }
    if let Some(unknown) = applied.iter().find(|version| !known.contains(&version.text)) {
        return Err(not_ours(format!("it was migrated by a newer version (migration {})", unknown.text)));
    }
    // Brought to this version (on the copy; the apps would at their next start), then compared
    // object by object with what the migrations make in memory: exactly that, nothing planted.
    {
        use diesel_migrations::MigrationHarness as _;
        connection
            .run_pending_migrations(MIGRATIONS)
            .map_err(|error| not_ours(format!("this version's migrations cannot be applied to it: {error}")))?;
    }
    let differences = crate::store::sqlite::schema::schema_differences(&mut connection)
        .map_err(database_error("reading the backup's schema"))?;
    if !differences.is_empty() {
        return Err(not_ours(format!(
            "its schema is not the one this version's migrations make: {}",
            crate::store::sqlite::schema::describe(&differences)
        )));
    }
    let mismatches = crate::store::sqlite::schema::counter_mismatches(&mut connection)
        .map_err(database_error("counting the backup's courses"))?;
    if !mismatches.is_empty() {
        return Err(RestoreError::Damaged { path: backup.to_owned(), finding: mismatches.join("; ") });
    }
    let courses = number_of(&mut connection, "SELECT COUNT(*) AS value FROM courses")
        .map_err(|_| not_ours("it has no courses table".to_owned()))?;
    connection.batch_execute("PRAGMA journal_mode = DELETE;").map_err(database_error("preparing the copy"))?;
    Ok(u64::try_from(courses).unwrap_or(0))
}

/// The old database, held: a connection in an exclusive transaction on it, which ends (and
/// lets go of the file) when this is dropped.
struct ExclusiveLock(SqliteConnection);

impl Drop for ExclusiveLock {
    fn drop(&mut self) {
        let _ = self.0.batch_execute("ROLLBACK;");
    }
}

/// Succeeds only if no other connection has `database` open, leaving it without `-wal`/`-shm`
/// and holding its exclusive lock until the returned value is dropped.
fn take_from_its_users(database: &Path) -> Result<ExclusiveLock, RestoreError> {
    let mut connection = SqliteConnection::establish(&database.to_string_lossy())
        .map_err(|error| RestoreError::Database { step: "opening the current database", source: Box::new(error) })?;
    let in_use = |error: diesel::result::Error| match &error {
        diesel::result::Error::DatabaseError(_, information) if is_locked(information.message()) => {
            RestoreError::InUse(database.to_owned())
        }
        _ => RestoreError::Database { step: "checking that the database is not in use", source: Box::new(error) },
    };
    // No wait: a lock held now means a process has the file open (the apps never let go of it).
    // Leaving WAL needs the exclusive lock no open connection allows; then an exclusive
    // transaction checks the same of a file in rollback-journal mode.
    connection.batch_execute("PRAGMA busy_timeout = 0; PRAGMA journal_mode = DELETE;").map_err(in_use)?;
    let mode = diesel::sql_query("SELECT journal_mode AS text FROM pragma_journal_mode()")
        .load::<Line>(&mut connection)
        .map_err(in_use)?;
    if mode.first().is_none_or(|line| !line.text.eq_ignore_ascii_case("delete")) {
        return Err(RestoreError::InUse(database.to_owned()));
    }
    connection.batch_execute("BEGIN EXCLUSIVE;").map_err(in_use)?;
    Ok(ExclusiveLock(connection))
}

fn is_locked(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("locked") || message.contains("busy")
}

fn number(connection: &mut SqliteConnection, query: &str) -> Result<i64, BackupError> {
    number_of(connection, query).map_err(database_error("reading the database's size"))
}

fn number_of(connection: &mut SqliteConnection, query: &str) -> QueryResult<i64> {
    diesel::sql_query(query).get_result::<Number>(connection).map(|row| row.value)
}

/// `.<name>.<purpose>-<pid>` beside `path`: same folder (so the rename is atomic), hidden, and
/// never another process's.
fn sibling(path: &Path, purpose: &str) -> PathBuf {
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{purpose}-{}", std::process::id()))
}

/// Creates `path`, empty, with mode 0600 (it must not exist).
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map(drop)
}

/// Removes the temporary files [`sibling`] named for `path` and `purpose` in earlier runs (and
/// their `-journal`, `-wal`, `-shm`) whose process is gone: a run killed by SIGKILL cannot remove
/// its own. One whose process still runs (another backup to the same place) is left alone, as is
/// every file when processes cannot be told (no `/proc`). Each removal is logged.
fn remove_leftovers(path: &Path, purpose: &str) -> std::io::Result<()> {
    let proc = Path::new("/proc/self");
    if !proc.exists() {
        return Ok(());
    }
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.{purpose}-");
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.to_owned(),
        _ => PathBuf::from("."),
    };
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|text| text.strip_prefix(&prefix)) else { continue };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (pid, suffix) = rest.split_at(digits);
        if pid.is_empty() || !["", "-journal", "-wal", "-shm"].contains(&suffix) {
            continue;
        }
        if pid == std::process::id().to_string() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        remove_if_present(&entry.path())?;
        tracing::warn!(path = %entry.path().display(), "removed a temporary file left by an interrupted run");
    }
    Ok(())
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn sync_file(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

/// Makes a rename in `path`'s folder durable.
fn sync_folder(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
        Some(folder) => std::fs::File::open(folder)?.sync_all(),
        None => std::fs::File::open(".")?.sync_all(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::failure_tests::titles_in_file;
    use crate::store::sqlite::{MIGRATIONS, SqliteStore};
    /// A database at `path` made by this crate's migrations, in WAL mode as the apps leave it,
    /// holding one course titled `title`; no connection to it is left open (a store's threads
    /// may still hold one for a moment after it is dropped).
    fn database_with(path: &Path, title: &str) {
        use diesel_migrations::MigrationHarness as _;
        let mut connection = SqliteConnection::establish(&path.to_string_lossy()).expect("open");
        connection.batch_execute("PRAGMA journal_mode = WAL;").expect("WAL");
        connection.run_pending_migrations(MIGRATIONS).expect("migrated");
        diesel::sql_query(
            "INSERT INTO courses (catalog, id, title, title_key, workload_hours, archived, version, created_at, updated_at)
             VALUES ('padrao', '00000000-0000-4000-8000-000000000001', ?, lower(?), 10, 0, 1,
                     '2026-12-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z')",
        )
        .bind::<Text, _>(title)
        .bind::<Text, _>(title)
        .execute(&mut connection)
        .expect("inserted");
    }

    struct Silent;

    impl MigrationProgress for Silent {
        fn phase(&self, _phase: MigrationPhase, _total_rows: u64) {}
        fn advance(&self, _rows: u64) {}
        fn stop_requested(&self) -> bool {
            false
        }
    }

    /// Issue 24, item 10: a backup is 0600 whatever the umask, and the temporary copies that runs
    /// killed with SIGKILL left (their process gone) are removed; a live process's is not.
    #[test]
    fn a_backup_is_private_and_removes_what_killed_runs_left() {
        use std::os::unix::fs::PermissionsExt as _;
        let folder = tempfile::tempdir().expect("temp dir");
        let (database, destination) = (folder.path().join("cursos.db"), folder.path().join("copia.db"));
        database_with(&database, "Curso");
        // No process has this pid (above the kernel's maximum); the parent of this one does run.
        let dead = folder.path().join(".copia.db.backup-4194305");
        let dead_journal = folder.path().join(".copia.db.backup-4194305-journal");
        let alive = folder.path().join(format!(".copia.db.backup-{}", std::os::unix::process::parent_id()));
        let unrelated = folder.path().join(".copia.db.backup-notes");
        for path in [&dead, &dead_journal, &alive, &unrelated] {
            std::fs::write(path, b"a full copy of the catalog").expect("write");
        }
        backup_sqlite(&database, &destination, false, &Silent).expect("backup");
        let mode = std::fs::metadata(&destination).expect("backup").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
        assert!(!dead.exists() && !dead_journal.exists(), "a dead run's copy is removed");
        assert!(alive.exists(), "a running process's copy is left alone");
        assert!(unrelated.exists(), "only the names a run makes");
    }

    /// An app that opens the database in the instant between restore's check and its rename can
    /// write neither before the rename (the lock restore holds) nor after it (the file it opened
    /// is no longer the database's): no acknowledged write can be lost with the old file.
    #[test]
    fn a_process_that_opens_the_database_while_it_is_being_restored_cannot_write_to_the_old_file() {
        let folder = tempfile::tempdir().expect("temp dir");
        let (backup, database) = (folder.path().join("copia.db"), folder.path().join("cursos.db"));
        database_with(&backup, "Curso da copia");
        database_with(&database, "Curso atual");

        let mut latecomer: Option<SqliteConnection> = None;
        let report = restore_with(&backup, &database, || {
            let mut connection = SqliteConnection::establish(&database.to_string_lossy()).expect("open");
            connection.batch_execute("PRAGMA busy_timeout = 0").expect("no wait");
            let blocked = connection.batch_execute("UPDATE courses SET title = 'escrito durante' WHERE 1");
            assert!(blocked.is_err(), "a write before the rename must wait for the restore's lock");
            latecomer = Some(connection);
        })
        .expect("restored");
        assert_eq!(report.courses, 1);

        let mut latecomer = latecomer.expect("the hook ran");
        latecomer.batch_execute("PRAGMA busy_timeout = 1000").expect("busy timeout");
        let refused = latecomer.batch_execute("UPDATE courses SET title = 'escrito depois' WHERE 1");
        let error = refused.expect_err("a write to the replaced file must be refused");
        // SQLITE_READONLY_DBMOVED: "attempt to write a readonly database".
        assert!(error.to_string().contains("readonly"), "{error}");
        drop(latecomer);
        assert_eq!(titles_in_file(&database), ["Curso da copia"]);
    }

    #[test]
    fn restore_refuses_a_database_another_connection_has_open_and_changes_nothing() {
        let folder = tempfile::tempdir().expect("temp dir");
        let (backup, database) = (folder.path().join("copia.db"), folder.path().join("cursos.db"));
        database_with(&backup, "Curso da copia");
        database_with(&database, "Curso atual");
        let store = SqliteStore::open(&database).expect("an app has it open");
        let refused = restore_sqlite(&backup, &database).expect_err("in use");
        assert!(matches!(refused, RestoreError::InUse(_)), "{refused:?}");
        drop(store);
        assert_eq!(titles_in_file(&database), ["Curso atual"]);
        let leftovers: Vec<_> = std::fs::read_dir(folder.path())
            .expect("list")
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains(".restore-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

//! [`DatabaseFile`]: whether the SQLite store's file can still take durable writes (ADR 0026).
//!
//! SQLite keeps writing to the file it opened, whatever happens to the path: a file deleted or
//! replaced while the store runs swallows every write (acknowledged, then gone at the next start).
//! A read-only file or folder, or a full disk, makes every write fail. The store checks its file
//! before each batch of writes and after each commit, and `/ready` asks the same question.
//!
//! The same holds for the `-wal` and `-shm` beside it (issue 24): SQLite never deletes them while a
//! connection is open, and the store keeps one open for its life, so one deleted or replaced while
//! it runs was removed by someone else. A process that opens the file then makes a new `-shm`, with
//! its own locks and its own idea of the WAL, and two writers that no longer see each other's
//! locks corrupt the file. The store records both files' identities and refuses writes once either
//! changed, as for the database file.

use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::store::port::Unwritable;

/// Below this many bytes available in the database's file system, the store says the disk is
/// full: a batch of writes needs room for its WAL frames (a few pages per write).
pub(crate) const MIN_FREE_BYTES: u64 = 1024 * 1024;

/// The database file the store opened: its path and the identity (device, inode) it had then, and
/// the same for its `-wal` and `-shm`.
#[derive(Debug)]
pub(crate) struct DatabaseFile {
    path: PathBuf,
    /// Where the file really is (symbolic links resolved): SQLite puts its `-wal` and `-shm` there.
    real_path: PathBuf,
    identity: (u64, u64),
    sidecars: [Sidecar; 2],
}

/// The `-wal` or `-shm` of the database, where SQLite finds it (beside the file's real path), and
/// the identity it had when first seen (the store opens the file in WAL mode before it records
/// them, so both exist then; one not there yet is recorded at the first check that finds it).
#[derive(Debug)]
struct Sidecar {
    path: PathBuf,
    identity: OnceLock<(u64, u64)>,
}

impl Sidecar {
    fn beside(real_path: &Path, suffix: &str) -> Self {
        let mut name = real_path.as_os_str().to_owned();
        name.push(suffix);
        let sidecar = Self { path: PathBuf::from(name), identity: OnceLock::new() };
        let _ = sidecar.is_still_in_place();
        sidecar
    }

    /// Still the file first seen (or none seen yet). Logs the cause when not.
    fn is_still_in_place(&self) -> Result<(), Unwritable> {
        match (std::fs::metadata(&self.path), self.identity.get()) {
            (Ok(metadata), None) => {
                let _ = self.identity.set((metadata.dev(), metadata.ino()));
                Ok(())
            }
            (Err(error), None) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            (Ok(metadata), Some(identity)) if (metadata.dev(), metadata.ino()) == *identity => Ok(()),
            (Ok(_), Some(_)) => {
                tracing::error!(path = %self.path.display(), "a file of the database was replaced while the store had it open");
                Err(Unwritable::FileReplaced)
            }
            (Err(error), Some(_)) if error.kind() == io::ErrorKind::NotFound => {
                tracing::error!(path = %self.path.display(), "a file of the database was deleted while the store had it open");
                Err(Unwritable::FileReplaced)
            }
            (Err(error), _) => {
                tracing::error!(path = %self.path.display(), %error, "a file of the database cannot be examined");
                Err(Unwritable::ReadOnly)
            }
        }
    }
}

impl DatabaseFile {
    /// The file at `path` as it is now (the store opened it just before), and its `-wal` and `-shm`.
    pub(crate) fn opened(path: &Path) -> io::Result<Self> {
        let metadata = std::fs::metadata(path)?;
        let real_path = std::fs::canonicalize(path)?;
        Ok(Self {
            path: path.to_owned(),
            identity: (metadata.dev(), metadata.ino()),
            sidecars: [Sidecar::beside(&real_path, "-wal"), Sidecar::beside(&real_path, "-shm")],
            real_path,
        })
    }

    /// The path still names the file the store opened, and its `-wal` and `-shm` are still the ones
    /// it first saw. Logs the cause when not.
    pub(crate) fn is_still_in_place(&self) -> Result<(), Unwritable> {
        self.database_is_in_place()?;
        self.sidecars_are_in_place()
    }

    /// The `-wal` and `-shm` are still the ones the store first saw. Logs the cause when not.
    pub(crate) fn sidecars_are_in_place(&self) -> Result<(), Unwritable> {
        self.sidecars.iter().try_for_each(Sidecar::is_still_in_place)
    }

    /// The path still names the database file the store opened. Logs the cause when not.
    pub(crate) fn database_is_in_place(&self) -> Result<(), Unwritable> {
        match std::fs::metadata(&self.path) {
            Ok(metadata) if (metadata.dev(), metadata.ino()) == self.identity => Ok(()),
            Ok(_) => {
                tracing::error!(path = %self.path.display(), "the database file was replaced while the store had it open");
                Err(Unwritable::FileReplaced)
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                tracing::error!(path = %self.path.display(), "the database file was deleted while the store had it open");
                Err(Unwritable::FileReplaced)
            }
            Err(error) => {
                tracing::error!(path = %self.path.display(), %error, "the database file cannot be examined");
                Err(Unwritable::ReadOnly)
            }
        }
    }

    /// The file is in place and it, its WAL and shared-memory files and its folder can be written
    /// by this process (as root too: an immutable file or a read-only file system is refused).
    /// Logs the cause when not.
    pub(crate) fn is_writable(&self) -> Result<(), Unwritable> {
        self.is_still_in_place()?;
        // `access`, not `open`: closing any descriptor of the database file would drop the POSIX
        // locks SQLite holds on it in this process. The `-wal` and `-shm` where SQLite has them:
        // beside the file's real path, not beside a symbolic link to it.
        let [wal, shm] = &self.sidecars;
        for file in [&self.path, &wal.path, &shm.path] {
            match rustix::fs::access(file, rustix::fs::Access::WRITE_OK) {
                Ok(()) => {}
                Err(rustix::io::Errno::NOENT) if *file != self.path => {}
                Err(error) => {
                    tracing::error!(path = %file.display(), %error, "the database cannot be written");
                    return Err(Unwritable::ReadOnly);
                }
            }
        }
        let folder = self.folder();
        if let Err(error) = rustix::fs::access(&folder, rustix::fs::Access::WRITE_OK) {
            tracing::error!(path = %folder.display(), %error, "the database folder cannot be written");
            return Err(Unwritable::ReadOnly);
        }
        Ok(())
    }

    /// [`is_writable`](Self::is_writable), and at least [`MIN_FREE_BYTES`] available to this
    /// process's user in the database's file system. Logs the cause when not.
    pub(crate) fn has_room(&self) -> Result<(), Unwritable> {
        self.is_writable()?;
        let folder = self.folder();
        match rustix::fs::statvfs(&folder) {
            Ok(stats) if stats.f_bavail.saturating_mul(stats.f_frsize) < MIN_FREE_BYTES => {
                tracing::error!(
                    path = %folder.display(),
                    available_bytes = stats.f_bavail.saturating_mul(stats.f_frsize),
                    "the disk holding the database is full"
                );
                Err(Unwritable::DiskFull)
            }
            Ok(_) => Ok(()),
            Err(error) => {
                // Not knowing the free space is no reason to refuse: writes will say.
                tracing::warn!(path = %folder.display(), %error, "cannot read the database disk's free space");
                Ok(())
            }
        }
    }

    /// The folder the file really is in, where SQLite creates its `-wal` and `-shm`.
    fn folder(&self) -> PathBuf {
        match self.real_path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder.to_owned(),
            _ => PathBuf::from("."),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ReadOnly;

    #[test]
    fn through_a_symbolic_link_the_wal_that_is_checked_is_the_one_sqlite_writes_beside_the_real_file() {
        let folder = tempfile::tempdir().expect("temp dir");
        let real_folder = folder.path().join("real");
        let link_folder = folder.path().join("link");
        std::fs::create_dir_all(&real_folder).expect("real folder");
        std::fs::create_dir_all(&link_folder).expect("link folder");
        let real = real_folder.join("cursos.db");
        for file in ["cursos.db", "cursos.db-wal", "cursos.db-shm"] {
            std::fs::write(real_folder.join(file), b"").expect("a file");
        }
        let link = link_folder.join("cursos.db");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let database = DatabaseFile::opened(&link).expect("opened");
        assert_eq!(database.is_writable(), Ok(()));

        let read_only = ReadOnly::set(&real_folder.join("cursos.db-wal"));
        assert_eq!(
            database.is_writable(),
            Err(Unwritable::ReadOnly),
            "the real -wal cannot be written: the one beside the link does not exist"
        );
        drop(read_only);
        assert_eq!(database.is_writable(), Ok(()));
    }
}

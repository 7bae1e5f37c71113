//! [`DatabaseFile`]: whether the SQLite store's file can still take durable writes (ADR 0026).
//!
//! SQLite keeps writing to the file it opened, whatever happens to the path: a file deleted or
//! replaced while the store runs swallows every write (acknowledged, then gone at the next start).
//! A read-only file or folder, or a full disk, makes every write fail. The store checks its file
//! before each batch of writes and after each commit, and `/ready` asks the same question.

use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::store::port::Unwritable;

/// Below this many bytes available in the database's file system, the store says the disk is
/// full: a batch of writes needs room for its WAL frames (a few pages per write).
pub(crate) const MIN_FREE_BYTES: u64 = 1024 * 1024;

/// The database file the store opened: its path and the identity (device, inode) it had then.
#[derive(Debug)]
pub(crate) struct DatabaseFile {
    path: PathBuf,
    identity: (u64, u64),
}

impl DatabaseFile {
    /// The file at `path` as it is now (the store opened it just before).
    pub(crate) fn opened(path: &Path) -> io::Result<Self> {
        let metadata = std::fs::metadata(path)?;
        Ok(Self { path: path.to_owned(), identity: (metadata.dev(), metadata.ino()) })
    }

    /// The path still names the file the store opened. Logs the cause when not.
    pub(crate) fn is_still_in_place(&self) -> Result<(), Unwritable> {
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
        // locks SQLite holds on it in this process.
        for file in [self.path.clone(), self.sibling("-wal"), self.sibling("-shm")] {
            match rustix::fs::access(&file, rustix::fs::Access::WRITE_OK) {
                Ok(()) => {}
                Err(rustix::io::Errno::NOENT) if file != self.path => {}
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

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    }

    fn folder(&self) -> PathBuf {
        match self.path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder.to_owned(),
            _ => PathBuf::from("."),
        }
    }
}

//! [`replace`] and [`create_new`]: the one way the backend puts a whole file in place of another (the keys file, an
//! export), a temporary file beside it renamed over it (`tempfile`'s `persist`).

use std::path::Path;

use tempfile::{NamedTempFile, PersistError};

/// Renames `temporary` (written and flushed by the caller, in `path`'s folder so that the rename
/// stays on one file system) over `path`: a reader sees the old file or the new one, never a mix.
/// Then makes the rename itself durable; not every platform can open a folder, so best effort.
///
/// # Errors
/// The rename failed: `temporary` is removed and `path` is as it was.
pub(crate) fn replace(temporary: NamedTempFile, path: &Path) -> Result<(), PersistError> {
    temporary.persist(path)?;
    sync_folder_of(path);
    Ok(())
}

/// [`replace`], but only where nothing is: `path` existing (even appeared since it was checked)
/// fails and is left as it was.
///
/// # Errors
/// `path` exists, or the link failed: `temporary` is removed.
pub(crate) fn create_new(temporary: NamedTempFile, path: &Path) -> Result<(), PersistError> {
    temporary.persist_noclobber(path)?;
    sync_folder_of(path);
    Ok(())
}

fn sync_folder_of(path: &Path) {
    let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Ok(folder) = std::fs::File::open(folder) {
        let _ = folder.sync_all();
    }
}

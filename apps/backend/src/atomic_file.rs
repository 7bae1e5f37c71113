//! [`replace`]: the one way the backend puts a whole file in place of another (the keys file, an
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
    let folder = path.parent().filter(|folder| !folder.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Ok(folder) = std::fs::File::open(folder) {
        let _ = folder.sync_all();
    }
    Ok(())
}

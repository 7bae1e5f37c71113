//! [`open_database`]: the store the two database settings every app takes choose, a PostgreSQL
//! URL or else a SQLite file's path, opened with errors that name the setting.
//!
//! The apps read the settings and give their names ([`DatabaseSettingNames`]); this module words
//! the errors, so that both apps word them the same way (ADR 0028). The one module that names
//! both a concrete store and the [`Catalog`]: it sits above `store/` and `catalog/`.

use std::path::{Path, PathBuf};

use crate::catalog::Catalog;
use crate::store::postgres::{OpenPostgresStoreError, PostgresStore};
use crate::store::sqlite::{OpenStoreError, SqliteStore};

/// A database setting that cannot be followed: the cause first, then the setting (and the value
/// seen, never a URL, which may hold a password) and what to change, on one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DatabaseSettingError(String);

impl DatabaseSettingError {
    /// The opening stopped before it ended (its thread failed).
    #[must_use]
    pub fn stopped(cause: &dyn std::fmt::Display) -> Self {
        Self(format!("{cause}: the database could not be opened"))
    }
}

/// The names an app gives its two database settings, which the errors of [`open_database`] name.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseSettingNames {
    /// The setting holding a PostgreSQL URL.
    pub url: &'static str,
    /// The setting holding the SQLite file's path.
    pub path: &'static str,
}

/// The catalog, and the PostgreSQL store when there is one (its replicas' changes are followed).
#[derive(Debug)]
pub struct OpenedDatabase {
    /// The catalog on the store chosen.
    pub catalog: Catalog,
    /// What was opened, for the log: `postgresql` or the SQLite file's absolute path.
    pub description: String,
}

/// Opens the catalog's store: PostgreSQL when `database_url` is set (it must then be a
/// `postgres://` or `postgresql://` URL), else the SQLite file at `database_path`. Both are
/// migrated. A store that cannot be opened fails at once with its cause (only a PostgreSQL server
/// that is not up yet is waited for, about 2 s).
///
/// # Errors
/// [`DatabaseSettingError`] naming the setting of `names` to change.
pub fn open_database(
    database_url: Option<&str>,
    database_path: &Path,
    names: DatabaseSettingNames,
) -> Result<OpenedDatabase, DatabaseSettingError> {
    match database_url {
        Some(url) if PostgresStore::handles(url) => {
            let store = PostgresStore::open(url).map_err(|error| postgres_error(&error, names.url))?;
            Ok(OpenedDatabase { catalog: Catalog::new(store), description: "postgresql".to_owned() })
        }
        // Never the value: it may hold a password.
        Some(_) => Err(DatabaseSettingError(format!(
            "{} is set but is not a PostgreSQL URL (postgres://… or postgresql://…); \
             fix it, or unset it to keep the catalog in the SQLite file of {}",
            names.url, names.path
        ))),
        None => {
            let absolute = absolute(database_path);
            let store = SqliteStore::open(&absolute)
                .map_err(|error| sqlite_error(&error, database_path, &absolute, names.path))?;
            Ok(OpenedDatabase { catalog: Catalog::new(store), description: absolute.display().to_string() })
        }
    }
}

/// `path` made absolute against the working directory (as given when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// The deepest cause of `error`: what the system or the database said.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string().split_whitespace().collect::<Vec<_>>().join(" ")
}

fn sqlite_error(error: &OpenStoreError, given: &Path, absolute: &Path, setting: &str) -> DatabaseSettingError {
    if let OpenStoreError::Schema { differences, .. } = error {
        return DatabaseSettingError(format!(
            "the SQLite file of {setting}={} does not have this version's schema: {differences}; nothing was \
             written and no server starts on it (restore a backup, or drop what was added: docs/operations.md)",
            absolute.display()
        ));
    }
    let cause = root_cause(error);
    let given = if given == absolute {
        String::new()
    } else {
        format!(" (given as {}, from the working directory)", given.display())
    };
    let what = match error {
        OpenStoreError::CreateFolder { path, .. } => format!("cannot create the folder {}", path.display()),
        OpenStoreError::Open { .. } => "cannot open the SQLite file".to_owned(),
        OpenStoreError::Migrate { .. } | OpenStoreError::Schema { .. } => "cannot migrate the SQLite file".to_owned(),
    };
    DatabaseSettingError(format!(
        "{cause}: {what} for {setting}={}{given}; set {setting} to a file this user can create and write",
        absolute.display()
    ))
}

fn postgres_error(error: &OpenPostgresStoreError, setting: &str) -> DatabaseSettingError {
    let cause = root_cause(error);
    let (what, change) = match error {
        OpenPostgresStoreError::Migrate { .. } => (
            "cannot migrate the PostgreSQL database of",
            "the role needs to create tables (and the pg_trgm extension) there",
        ),
        _ => ("cannot connect to the PostgreSQL database of", "check its host, port, role, password and database name"),
    };
    DatabaseSettingError(format!("{cause}: {what} {setting} (value not shown: it may hold a password); {change}"))
}

//! [`open_database`]: the store the two settings every app takes choose, `DATABASE_URL`
//! (PostgreSQL) or else `DATABASE_PATH` (SQLite), opened with errors that name the setting.
//!
//! The apps read the settings; this module only names them in its errors, so that both apps
//! word them the same way (ADR 0028).

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
/// [`DatabaseSettingError`] naming `DATABASE_URL` or `DATABASE_PATH`.
pub fn open_database(database_url: Option<&str>, database_path: &Path) -> Result<OpenedDatabase, DatabaseSettingError> {
    match database_url {
        Some(url) if PostgresStore::handles(url) => {
            let store = PostgresStore::open(url).map_err(|error| postgres_error(&error))?;
            Ok(OpenedDatabase { catalog: Catalog::new(store), description: "postgresql".to_owned() })
        }
        // Never the value: it may hold a password.
        Some(_) => Err(DatabaseSettingError(
            "DATABASE_URL is set but is not a PostgreSQL URL (postgres://… or postgresql://…); \
             fix it, or unset it to keep the catalog in the SQLite file of DATABASE_PATH"
                .to_owned(),
        )),
        None => {
            let absolute = absolute(database_path);
            let store = SqliteStore::open(&absolute).map_err(|error| sqlite_error(&error, database_path, &absolute))?;
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

fn sqlite_error(error: &OpenStoreError, given: &Path, absolute: &Path) -> DatabaseSettingError {
    let cause = root_cause(error);
    let given = if given == absolute {
        String::new()
    } else {
        format!(" (given as {}, from the working directory)", given.display())
    };
    let what = match error {
        OpenStoreError::CreateFolder { path, .. } => format!("cannot create the folder {}", path.display()),
        OpenStoreError::Open { .. } => "cannot open the SQLite file".to_owned(),
        OpenStoreError::Migrate { .. } => "cannot migrate the SQLite file".to_owned(),
    };
    DatabaseSettingError(format!(
        "{cause}: {what} for DATABASE_PATH={}{given}; set DATABASE_PATH to a file this user can create and write",
        absolute.display()
    ))
}

fn postgres_error(error: &OpenPostgresStoreError) -> DatabaseSettingError {
    let cause = root_cause(error);
    let (what, change) = match error {
        OpenPostgresStoreError::Migrate { .. } => (
            "cannot migrate the PostgreSQL database of DATABASE_URL",
            "the role needs to create tables (and the pg_trgm extension) there",
        ),
        _ => (
            "cannot connect to the PostgreSQL database of DATABASE_URL",
            "check its host, port, role, password and database name",
        ),
    };
    DatabaseSettingError(format!("{cause}: {what} (value not shown: it may hold a password); {change}"))
}

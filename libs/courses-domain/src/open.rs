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
#[error("{message}")]
pub struct DatabaseSettingError {
    message: String,
    /// The loopback host a PostgreSQL connection could not reach (`127.0.0.1`, `localhost`, `::1`).
    unreached_loopback_host: Option<String>,
}

impl DatabaseSettingError {
    fn new(message: String) -> Self {
        Self { message, unreached_loopback_host: None }
    }

    /// The opening stopped before it ended (its thread failed).
    #[must_use]
    pub fn stopped(cause: &dyn std::fmt::Display) -> Self {
        Self::new(format!("{cause}: the database could not be opened"))
    }

    /// The host, when the PostgreSQL server could not be connected to and the URL names a loopback
    /// host: on a machine of its own that is a server that is down, but in a container it is the
    /// container itself, which the app (which knows where it runs) may add as a hint.
    #[must_use]
    pub fn unreached_loopback_host(&self) -> Option<&str> {
        self.unreached_loopback_host.as_deref()
    }

    /// The same error with `hint` after its message (`; hint`).
    #[must_use]
    pub fn with_hint(mut self, hint: &str) -> Self {
        self.message = format!("{}; {hint}", self.message);
        self
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
            let store = PostgresStore::open(url).map_err(|error| postgres_error(&error, url, names.url))?;
            Ok(OpenedDatabase { catalog: Catalog::new(store), description: "postgresql".to_owned() })
        }
        // Never the value: it may hold a password.
        Some(_) => Err(DatabaseSettingError::new(format!(
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
        return DatabaseSettingError::new(format!(
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
    DatabaseSettingError::new(format!(
        "{cause}: {what} for {setting}={}{given}; set {setting} to a file this user can create and write",
        absolute.display()
    ))
}

fn postgres_error(error: &OpenPostgresStoreError, url: &str, setting: &str) -> DatabaseSettingError {
    let cause = root_cause(error);
    let unreached_loopback_host = match error {
        OpenPostgresStoreError::Connect { .. } => url_hosts(url).into_iter().find(|host| is_loopback(host)),
        OpenPostgresStoreError::Migrate { .. }
        | OpenPostgresStoreError::InvalidSchema { .. }
        | OpenPostgresStoreError::Start { .. } => None,
    };
    let (what, change) = match error {
        OpenPostgresStoreError::Start { .. } => {
            ("cannot start the PostgreSQL store for", "the process may have reached its limit of threads")
        }
        OpenPostgresStoreError::Migrate { .. } => (
            "cannot migrate the PostgreSQL database of",
            "the role needs to create tables (and the pg_trgm extension) there",
        ),
        _ => ("cannot connect to the PostgreSQL database of", "check its host, port, role, password and database name"),
    };
    DatabaseSettingError {
        message: format!("{cause}: {what} {setting} (value not shown: it may hold a password); {change}"),
        unreached_loopback_host,
    }
}

/// The hosts a libpq URI names (`postgres://user:password@host:port,host2/db?host=...`), never
/// its password; a Unix socket folder (a `/path`) is not a host.
fn url_hosts(url: &str) -> Vec<String> {
    let Some((_, rest)) = url.split_once("://") else {
        return Vec::new();
    };
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = before_query.split('/').next().unwrap_or_default();
    let hosts = authority.rsplit_once('@').map_or(authority, |(_, hosts)| hosts);
    let from_query = query.split('&').filter_map(|pair| pair.strip_prefix("host=")).flat_map(|hosts| hosts.split(','));
    hosts
        .split(',')
        .chain(from_query)
        .map(|host| match host.strip_prefix('[') {
            Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
            None => host.split(':').next().unwrap_or_default(),
        })
        .filter(|host| !host.is_empty() && !host.starts_with('/') && !host.starts_with("%2F"))
        .map(str::to_owned)
        .collect()
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_of_a_url_are_read_without_its_password() {
        assert_eq!(url_hosts("postgres://app:s3cr3t@127.0.0.1:5432/cursos"), ["127.0.0.1"]);
        assert_eq!(url_hosts("postgresql://localhost/cursos"), ["localhost"]);
        assert_eq!(url_hosts("postgres://app@[::1]:5432/cursos?sslmode=disable"), ["::1"]);
        assert_eq!(url_hosts("postgres://app@db:5432,replica/cursos"), ["db", "replica"]);
        assert_eq!(url_hosts("postgres:///cursos?host=/run/postgresql"), Vec::<String>::new());
        assert_eq!(url_hosts("postgres:///cursos?host=localhost"), ["localhost"]);
    }

    #[test]
    fn only_a_connection_to_a_loopback_host_is_marked_as_such() {
        let connect = || OpenPostgresStoreError::Connect { source: "Connection refused".into() };
        let url = "postgres://app:senha@127.0.0.1:5432/cursos";
        let error = postgres_error(&connect(), url, "THE_URL_SETTING");
        assert_eq!(error.unreached_loopback_host(), Some("127.0.0.1"));
        assert!(!error.to_string().contains("senha"), "{error}");
        let elsewhere = postgres_error(&connect(), "postgres://app@db:5432/cursos", "THE_URL_SETTING");
        assert_eq!(elsewhere.unreached_loopback_host(), None);
        let migrate = OpenPostgresStoreError::Migrate { source: "permission denied".into() };
        assert_eq!(postgres_error(&migrate, url, "THE_URL_SETTING").unreached_loopback_host(), None);
        assert!(error.with_hint("a hint").to_string().ends_with("; a hint"));
    }
}

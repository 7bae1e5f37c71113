//! Test support shared by this workspace's test suites (feature `test-support`; not part of the
//! domain's API): where the PostgreSQL tests run, and what happens when there is no PostgreSQL.
//!
//! The rule (ADR 0031): the tests of the PostgreSQL store run against `TEST_DATABASE_URL`
//! (default the local `test` database). When that does not answer:
//! - with `REQUIRE_POSTGRES=1` (set by `.ci/run`) the test fails, naming the URL and the error:
//!   CI never skips them;
//! - otherwise (a contributor's laptop) the test returns without checking anything, and the
//!   process says so once on the terminal's stderr (past the test harness's capture), so the
//!   README's `cargo test --workspace` passes on a machine without PostgreSQL and says what it
//!   did not run.

use std::io::Write;
use std::sync::OnceLock;

use diesel::{Connection, PgConnection};

/// Where the PostgreSQL tests run unless `TEST_DATABASE_URL` says otherwise.
pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The URL of the PostgreSQL database the tests use, or `None` when it does not answer and
/// `REQUIRE_POSTGRES` is not set (the caller then skips its test).
///
/// # Panics
/// When PostgreSQL does not answer and `REQUIRE_POSTGRES` is set.
#[must_use]
pub fn postgres_for_tests() -> Option<String> {
    static AVAILABLE: OnceLock<Result<String, String>> = OnceLock::new();
    let available = AVAILABLE.get_or_init(|| {
        let url = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned());
        match PgConnection::establish(&url) {
            Ok(_) => Ok(url),
            Err(error) => {
                let error = error.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                Err(format!("PostgreSQL at TEST_DATABASE_URL ({}) does not answer: {error}", redact(&url)))
            }
        }
    });
    match available {
        Ok(url) => Some(url.clone()),
        Err(reason) if required() => {
            panic!("{reason}; REQUIRE_POSTGRES is set, so the PostgreSQL tests may not be skipped")
        }
        Err(reason) => {
            announce_skip(reason);
            None
        }
    }
}

fn required() -> bool {
    std::env::var("REQUIRE_POSTGRES").is_ok_and(|value| !value.is_empty() && value != "0")
}

/// Says once per process, on stderr itself (libtest captures only `eprint!`), which tests did not run.
fn announce_skip(reason: &str) {
    static ANNOUNCED: OnceLock<()> = OnceLock::new();
    ANNOUNCED.get_or_init(|| {
        let banner = format!(
            "\n*** SKIPPED: the PostgreSQL tests of {} ({reason}). Start PostgreSQL or set \
             TEST_DATABASE_URL to run them; CI sets REQUIRE_POSTGRES=1 and never skips them. ***\n\n",
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.file_name().map(|name| name.to_string_lossy().into_owned()))
                .unwrap_or_default()
        );
        let _ = std::io::stderr().write_all(banner.as_bytes());
    });
}

/// Drops the schema `name`, with everything in it, from the PostgreSQL database at `url`, as a
/// test ends; a failure is said on stderr and does not change the test's outcome.
pub fn drop_schema(url: &str, name: &str) {
    use diesel::connection::SimpleConnection;
    let dropped = PgConnection::establish(url).map_err(|error| error.to_string()).and_then(|mut connection| {
        let statement = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
        connection.batch_execute(&statement).map_err(|error| error.to_string())
    });
    if let Err(error) = dropped {
        eprintln!("cannot drop the test schema {name}: {error}");
    }
}

/// A new course, for this crate's own tests.
#[cfg(test)]
pub(crate) fn new_course(title: &str, hours: i64) -> crate::rules::NewCourse {
    let title = crate::rules::CourseTitle::parse(title).expect("valid title");
    crate::rules::NewCourse { title, workload_hours: crate::rules::WorkloadHours::parse(hours).expect("valid hours") }
}

/// Who this crate's own tests write as.
#[cfg(test)]
pub(crate) fn by() -> crate::rules::Provenance {
    crate::rules::Provenance::new("teste", "criar_curso", "{}")
}

/// A SQLite database in memory with this version's schema, for tests of the shared SQL layer
/// (which never names a backend's store itself).
#[cfg(test)]
pub(crate) fn migrated_sqlite_in_memory() -> diesel::SqliteConnection {
    use diesel_migrations::MigrationHarness;
    let mut connection = diesel::SqliteConnection::establish(":memory:").expect("in memory");
    connection.run_pending_migrations(crate::store::sqlite::MIGRATIONS).expect("migrated");
    connection
}

/// The URL without a password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _password)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_url_never_reaches_a_message() {
        assert_eq!(redact("postgres://ana:segredo@db:5432/test"), "postgres://ana:***@db:5432/test");
        assert_eq!(redact("postgres://postgres@127.0.0.1:5432/test"), "postgres://postgres@127.0.0.1:5432/test");
        assert_eq!(redact("postgres://db/test"), "postgres://db/test");
    }
}

/// Whether this process runs as root (which ignores permission bits, so read-only needs
/// `chattr +i` there, and a few tests need root to mount a tmpfs).
#[must_use]
pub fn is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// Makes a file unwritable for this process: `chattr +i` as root (root ignores permission bits),
/// `chmod a-w` otherwise. Undone on drop.
#[derive(Debug)]
pub struct ReadOnly {
    path: std::path::PathBuf,
    immutable: bool,
}

impl ReadOnly {
    /// Makes `path` unwritable.
    ///
    /// # Panics
    /// When `chattr` or `chmod` fails.
    #[must_use]
    pub fn set(path: &std::path::Path) -> Self {
        let immutable = is_root();
        let status = if immutable {
            std::process::Command::new("chattr").arg("+i").arg(path).status().expect("chattr")
        } else {
            std::process::Command::new("chmod").arg("a-w").arg(path).status().expect("chmod")
        };
        assert!(status.success(), "cannot make {} read-only (immutable: {immutable})", path.display());
        Self { path: path.to_owned(), immutable }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = if self.immutable {
            std::process::Command::new("chattr").arg("-i").arg(&self.path).status()
        } else {
            std::process::Command::new("chmod").arg("u+w").arg(&self.path).status()
        };
    }
}

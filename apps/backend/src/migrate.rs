//! The `migrate`, `backup` and `restore` commands (ADR 0041): the settings read, the progress
//! shown and Ctrl-C turned into a stop; the work itself is the domain's
//! ([`courses_domain::migrate`], [`courses_domain::backup_sqlite`], [`courses_domain::restore_sqlite`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, bail};
use courses_domain::{Endpoint, MigrateError, MigrationPhase, MigrationProgress, NonEmptyTarget, PostgresStore};

use crate::progress::{Interrupt, Progress};
use crate::settings::MigrateArguments;

/// The exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
const INTERRUPTED_STATUS: i32 = 130;

/// Shows a command's phases as [`Progress`] bars or lines, and answers its stop checks from the
/// [`Interrupt`] flag.
struct Shown {
    command: &'static str,
    current: Mutex<Option<Progress>>,
    interrupt: Interrupt,
}

impl Shown {
    fn new(command: &'static str, interrupt: Interrupt) -> Self {
        Self { command, current: Mutex::new(None), interrupt }
    }

    fn finish(&self, outcome: &str) {
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(progress) = current.take() {
            progress.finish(outcome);
        }
    }
}

impl MigrationProgress for Shown {
    fn phase(&self, phase: MigrationPhase, total_rows: u64) {
        self.finish("done");
        let (what, unit) = match (self.command, phase) {
            ("backup", _) => ("backup", "pages"),
            (_, MigrationPhase::Copy) => ("migrate (copy)", "rows"),
            (_, MigrationPhase::Verify) => ("migrate (verify)", "rows"),
        };
        let progress = Progress::start(what, unit, Some(total_rows));
        // The first line at once: an operator (or a test) sees the command is under way.
        progress.advance(0);
        *self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(progress);
    }

    fn advance(&self, rows: u64) {
        if let Some(progress) = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref() {
            progress.advance(rows);
        }
    }

    fn stop_requested(&self) -> bool {
        self.interrupt.requested()
    }
}

/// `migrate`: copies the database, then prints the counts and the checksum on stdout.
///
/// # Errors
/// A source or target that cannot be read from the arguments, or any [`MigrateError`] (the target
/// is then unchanged). Interrupted, the process exits with status 130.
pub async fn migrate_command(arguments: &MigrateArguments) -> anyhow::Result<()> {
    let from = endpoint(arguments.from.as_deref(), arguments.from_env.as_deref(), "--from")?;
    let to = endpoint(arguments.to.as_deref(), arguments.to_env.as_deref(), "--to")?;
    let non_empty = if arguments.force { NonEmptyTarget::Replace } else { NonEmptyTarget::Refuse };
    eprintln!("migrate: from {} to {}", from.describe(), to.describe());
    let shown = Shown::new("migrate", Interrupt::on_signals());
    let (shown, result) = tokio::task::spawn_blocking(move || {
        let result = courses_domain::migrate(&from, &to, non_empty, &shown);
        (shown, result)
    })
    .await
    .context("the migration's thread failed")?;
    match result {
        Ok(report) => {
            shown.finish("done");
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(
                format!(
                    "migrated and verified: {} courses, {} idempotent creations, {} history entries, {} evidence rows, {} catalog counters; sha256 {}\n",
                    report.courses, report.creations, report.history, report.evidence, report.catalogs, report.checksum
                )
                .as_bytes(),
            )?;
            stdout.flush()?;
            Ok(())
        }
        Err(MigrateError::Interrupted) => {
            shown.finish("interrupted");
            eprintln!("migrate: {}", MigrateError::Interrupted);
            std::process::exit(INTERRUPTED_STATUS);
        }
        Err(error) => {
            shown.finish("failed");
            Err(error).context("migrate failed")
        }
    }
}

/// The endpoint named by a path flag or by an environment variable (whose value is a PostgreSQL
/// URL or a path). A URL in a flag is refused: `ps` would show its password.
fn endpoint(path: Option<&Path>, variable: Option<&str>, flag: &str) -> anyhow::Result<Endpoint> {
    match (path, variable) {
        (Some(path), None) => {
            if PostgresStore::handles(&path.to_string_lossy()) {
                bail!(
                    "{flag} takes a SQLite path; a PostgreSQL URL (which may hold a password, and flags show in `ps`) goes in an environment variable named with {flag}-env"
                );
            }
            Ok(Endpoint::Sqlite(path.to_owned()))
        }
        (None, Some(variable)) => {
            // Never the value in an error: it may hold a password.
            let value = std::env::var(variable).with_context(|| {
                format!("{flag}-env {variable}: the environment variable is not set (or not UTF-8)")
            })?;
            if value.is_empty() {
                bail!("{flag}-env {variable}: the environment variable is empty");
            }
            if PostgresStore::handles(&value) {
                Ok(Endpoint::Postgres(value))
            } else if value.contains("://") {
                bail!("{flag}-env {variable}: not a PostgreSQL URL (postgres://… or postgresql://…) nor a file path");
            } else {
                Ok(Endpoint::Sqlite(PathBuf::from(value)))
            }
        }
        // clap's argument groups allow exactly one of the two.
        _ => bail!("give exactly one of {flag} and {flag}-env"),
    }
}

/// `backup`: copies DATABASE_PATH to `destination`.
///
/// # Errors
/// A PostgreSQL DATABASE_URL (pg_dump's job), or any [`courses_domain::BackupError`].
pub async fn backup_command(
    database_url: Option<&str>,
    database_path: &Path,
    destination: &Path,
    overwrite: bool,
) -> anyhow::Result<()> {
    refuse_postgres(database_url, "backup", "pg_dump")?;
    let database = database_path.to_owned();
    let destination = destination.to_owned();
    let shown = Shown::new("backup", Interrupt::on_signals());
    let (shown, result) = tokio::task::spawn_blocking(move || {
        let result = courses_domain::backup_sqlite(&database, &destination, overwrite, &shown);
        (shown, result, destination)
    })
    .await
    .map(|(shown, result, destination)| (shown, result.map(|report| (report, destination))))
    .context("the backup's thread failed")?;
    match result {
        Ok((report, destination)) => {
            shown.finish("done");
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(
                format!(
                    "backup written to {}: {} bytes, {} courses\n",
                    destination.display(),
                    report.bytes,
                    report.courses
                )
                .as_bytes(),
            )?;
            stdout.flush()?;
            Ok(())
        }
        Err(courses_domain::BackupError::Interrupted) => {
            shown.finish("interrupted");
            eprintln!("backup: {}", courses_domain::BackupError::Interrupted);
            std::process::exit(INTERRUPTED_STATUS);
        }
        Err(error) => {
            shown.finish("failed");
            Err(error).context("backup failed")
        }
    }
}

/// `restore`: puts `backup` in place of DATABASE_PATH.
///
/// # Errors
/// A PostgreSQL DATABASE_URL (pg_restore's job), or any [`courses_domain::RestoreError`].
pub fn restore_command(database_url: Option<&str>, database_path: &Path, backup: &Path) -> anyhow::Result<()> {
    refuse_postgres(database_url, "restore", "pg_restore")?;
    let report = courses_domain::restore_sqlite(backup, database_path).context("restore failed")?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(
        format!("restored {} into {}: {} courses\n", backup.display(), database_path.display(), report.courses)
            .as_bytes(),
    )?;
    stdout.flush()?;
    Ok(())
}

fn refuse_postgres(database_url: Option<&str>, command: &str, tool: &str) -> anyhow::Result<()> {
    if database_url.is_some() {
        bail!(
            "DATABASE_URL is set: `{command}` works on the SQLite file of DATABASE_PATH only; a PostgreSQL catalog is backed up and restored with PostgreSQL's own tools ({tool}); unset DATABASE_URL to {command} the SQLite file"
        );
    }
    Ok(())
}

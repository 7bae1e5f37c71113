//! `mcp-cursos-backend migrate` (ADR 0041): the copy of a whole database between two stores is
//! the domain's ([`courses_domain::migrate`]); here, where from and where to, the progress shown
//! and Ctrl-C turned into a stop.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use courses_domain::{Endpoint, MigrateError, NonEmptyTarget, PostgresStore};

use super::progress::{EXIT_INTERRUPTED, Interrupt, Shown};

/// `migrate`: where from, where to. A PostgreSQL URL (which may hold a password) is only taken
/// from an environment variable, never from a flag, which `ps` would show.
#[derive(Debug, Clone, clap::Args)]
// The usage clap would write is one line of 115 characters: two, for `-h` on a terminal.
#[command(override_usage = "mcp-cursos-backend migrate [OPTIONS] <--from <PATH>|--from-env <VARIABLE>>\n       \
                            <--to <PATH>|--to-env <VARIABLE>>")]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from", "from_env"])))]
#[command(group(clap::ArgGroup::new("target").required(true).args(["to", "to_env"])))]
pub struct MigrateArguments {
    /// The SQLite file to copy from.
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,
    /// The environment variable holding the source.
    ///
    /// A PostgreSQL URL (postgres://…), or a SQLite path.
    #[arg(long, value_name = "VARIABLE")]
    pub from_env: Option<String>,
    /// The SQLite file to copy to (created if missing).
    #[arg(long, value_name = "PATH")]
    pub to: Option<PathBuf>,
    /// The environment variable holding the target.
    ///
    /// A PostgreSQL URL (postgres://…), or a SQLite path.
    #[arg(long, value_name = "VARIABLE")]
    pub to_env: Option<String>,
    /// Replace whatever the target holds (every catalog).
    ///
    /// In the same transaction as the copy: the target ends up as the source, or as it was if anything fails.
    #[arg(long)]
    pub force: bool,
}

/// `migrate`: copies the database, then prints the counts and the checksum on stdout.
///
/// # Errors
/// A source or target that cannot be read from the arguments, or any [`MigrateError`] (the target
/// is then unchanged). Interrupted, the process exits with status 130.
pub async fn run(arguments: &MigrateArguments) -> anyhow::Result<()> {
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
            let mut stdout = super::stdout();
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
            std::process::exit(EXIT_INTERRUPTED);
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

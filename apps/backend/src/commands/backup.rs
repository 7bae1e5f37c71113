//! `mcp-cursos-backend backup` (ADR 0041): a consistent copy of the live SQLite database
//! ([`courses_domain::backup_sqlite`]), with its progress shown and Ctrl-C turned into a stop.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};

use super::progress::{EXIT_INTERRUPTED, Interrupt, Shown};
use super::settings::Settings;

/// `backup`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct BackupArgs {
    /// The backup file to write (written to a temporary name, renamed when complete).
    pub destination: PathBuf,
    /// Replace the destination if it exists.
    #[arg(long)]
    pub overwrite: bool,
}

/// `backup`: copies DATABASE_PATH to `destination`.
///
/// # Errors
/// A PostgreSQL DATABASE_URL (pg_dump's job), or any [`courses_domain::BackupError`].
pub async fn run(settings: &Settings, arguments: &BackupArgs) -> anyhow::Result<()> {
    refuse_postgres(settings.database_url.as_deref(), "backup", "pg_dump")?;
    let database = settings.database_path.clone();
    let (destination, overwrite) = (arguments.destination.clone(), arguments.overwrite);
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
            let mut stdout = super::stdout();
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
            std::process::exit(EXIT_INTERRUPTED);
        }
        Err(error) => {
            shown.finish("failed");
            Err(error).context("backup failed")
        }
    }
}

/// Refuses `command` when DATABASE_URL is set: a PostgreSQL catalog is `tool`'s job.
///
/// # Errors
/// When `database_url` is set.
pub(crate) fn refuse_postgres(database_url: Option<&str>, command: &str, tool: &str) -> anyhow::Result<()> {
    if database_url.is_some() {
        bail!(
            "DATABASE_URL is set: `{command}` works on the SQLite file of DATABASE_PATH only; a PostgreSQL catalog is backed up and restored with PostgreSQL's own tools ({tool}); unset DATABASE_URL to {command} the SQLite file"
        );
    }
    Ok(())
}

//! `mcp-cursos-backend restore` (ADR 0041): a verified backup put in place of DATABASE_PATH
//! ([`courses_domain::restore_sqlite`]).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use super::backup::refuse_postgres;
use super::settings::Settings;

/// `restore`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct RestoreArgs {
    /// The backup file (left as it is).
    pub backup: PathBuf,
}

/// `restore`: puts `backup` in place of DATABASE_PATH.
///
/// # Errors
/// A PostgreSQL DATABASE_URL (pg_restore's job), or any [`courses_domain::RestoreError`].
pub fn run(settings: &Settings, arguments: &RestoreArgs) -> anyhow::Result<()> {
    refuse_postgres(settings.database_url.as_deref(), "restore", "pg_restore")?;
    let (backup, database_path) = (&arguments.backup, &settings.database_path);
    let report = courses_domain::restore_sqlite(backup, database_path).context("restore failed")?;
    let mut stdout = super::stdout();
    stdout.write_all(
        format!("restored {} into {}: {} courses\n", backup.display(), database_path.display(), report.courses)
            .as_bytes(),
    )?;
    stdout.flush()?;
    Ok(())
}

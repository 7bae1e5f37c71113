//! `mcp-cursos-backend export` (ADR 0040): the catalog as JSON Lines in the contract's shapes
//! ([`mcp_server::portable`]), on the database the server uses.
//!
//! It reads one snapshot (one read transaction, keyset pages) and writes to stdout or to a
//! temporary file beside the output, renamed over it only when complete: an interrupted or failed
//! export leaves no file (stdout, once written, cannot be taken back).

use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use courses_domain::{Catalog, CatalogName, Course, ExportEnd, ExportSink, HistoryEntry, OffsetDateTime};
use mcp_server::portable::{self, HeaderJson};

use super::progress::{EXIT_INTERRUPTED, Interrupt, Progress};
use super::settings::{Database, Settings};
use crate::atomic_file;

/// `export`'s flags.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The catalog to export.
    ///
    /// 1-64 of a-z, 0-9, '-'; `padrao` by default (ADR 0035).
    #[arg(long, value_parser = CatalogName::parse, default_value = CatalogName::DEFAULT)]
    pub catalog: CatalogName,
    /// Also write each course's history (oldest entry first) under `historico`.
    #[arg(long)]
    pub history: bool,
    /// Where to write: a file, or `-` for stdout.
    ///
    /// A file is written whole or not at all, readable by its owner only. An existing file is refused unless --overwrite is given, as for `backup`.
    #[arg(long, default_value = "-")]
    pub output: PathBuf,
    /// Replace the --output file if it exists.
    #[arg(long)]
    pub overwrite: bool,
    /// Courses read per page of the snapshot (memory is bounded by one page).
    #[arg(long, default_value_t = 1000, hide = true, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub page_size: u32,
}

/// `export`: exits with the status of [`export`].
///
/// # Errors
/// As [`export`].
pub async fn run(settings: &Settings, arguments: &ExportArgs) -> anyhow::Result<()> {
    std::process::exit(export(settings.database(), arguments.clone()).await?);
}

/// `export`: its exit status (0, or [`EXIT_INTERRUPTED`]).
///
/// # Errors
/// The database cannot be opened or read, or the output cannot be written.
pub async fn export(database: Database, arguments: ExportArgs) -> anyhow::Result<i32> {
    let interrupt = Interrupt::on_signals();
    tokio::task::spawn_blocking(move || export_blocking(&database, &arguments, &interrupt))
        .await
        .context("the export stopped")?
}

struct LineSink<'run, Out: Write> {
    out: Out,
    catalog: &'run CatalogName,
    with_history: bool,
    interrupt: &'run Interrupt,
    progress: Option<Progress>,
    pending: u64,
    failure: Option<anyhow::Error>,
    interrupted: bool,
}

impl<Out: Write> LineSink<'_, Out> {
    fn write_line(&mut self, line: serde_json::Result<String>) -> ControlFlow<()> {
        let written = line.map_err(anyhow::Error::from).and_then(|line| {
            self.out.write_all(line.as_bytes())?;
            self.out.write_all(b"\n")?;
            Ok(())
        });
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => {
                self.failure = Some(error.context("cannot write the export"));
                ControlFlow::Break(())
            }
        }
    }
}

impl<Out: Write> ExportSink for LineSink<'_, Out> {
    fn begin(&mut self, total: u64) -> ControlFlow<()> {
        self.progress = Some(Progress::start("export", "courses", Some(total)));
        let header = HeaderJson::new(self.catalog, total, self.with_history, OffsetDateTime::now_utc());
        self.write_line(serde_json::to_string(&header))
    }

    fn course(&mut self, course: &Course, history: &[HistoryEntry]) -> ControlFlow<()> {
        self.pending += 1;
        self.write_line(portable::course_line(course, self.with_history.then_some(history)))
    }

    fn page_done(&mut self) -> ControlFlow<()> {
        if let Some(progress) = &self.progress {
            progress.advance(std::mem::take(&mut self.pending));
        }
        if self.interrupt.requested() {
            self.interrupted = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

fn export_blocking(database: &Database, arguments: &ExportArgs, interrupt: &Interrupt) -> anyhow::Result<i32> {
    let opened = database.open()?;
    let catalog = opened.catalog.scoped(&arguments.catalog);
    let to_stdout = arguments.output.as_os_str() == "-";
    let page_size = usize::try_from(arguments.page_size).unwrap_or(1000);
    if to_stdout {
        let stdout = super::stdout();
        let (status, _) = run_export(&catalog, arguments, page_size, BufWriter::new(stdout), interrupt)?;
        if status == EXIT_INTERRUPTED {
            eprintln!("export interrupted: what stdout received is incomplete");
        }
        return Ok(status);
    }
    let output = std::path::absolute(&arguments.output).unwrap_or_else(|_| arguments.output.clone());
    // Checked before reading anything (and again at the rename, which never replaces without it).
    anyhow::ensure!(
        arguments.overwrite || std::fs::symlink_metadata(&output).is_err(),
        "{} already exists (pass --overwrite to replace it)",
        output.display()
    );
    let folder = output.parent().map_or_else(|| PathBuf::from("."), Path::to_owned);
    // Beside the output, so that the final rename stays on one file system (atomic). Dropped, it
    // is deleted: an interrupted or failed export leaves no file at all.
    let temporary = tempfile::Builder::new()
        .prefix(".export-")
        .suffix(".partial")
        .tempfile_in(&folder)
        .with_context(|| format!("cannot create a file in {}", folder.display()))?;
    let (status, writer) = run_export(&catalog, arguments, page_size, BufWriter::new(temporary), interrupt)?;
    if status == EXIT_INTERRUPTED {
        drop(writer);
        eprintln!("export interrupted: {} was not written", output.display());
        return Ok(status);
    }
    let temporary = writer.into_inner().map_err(|error| error.into_error()).context("cannot write the export")?;
    temporary.as_file().sync_all().context("cannot write the export")?;
    if arguments.overwrite {
        atomic_file::replace(temporary, &output).with_context(|| format!("cannot write {}", output.display()))?;
    } else {
        atomic_file::create_new(temporary, &output).with_context(|| {
            format!("cannot write {} (if it appeared meanwhile, pass --overwrite to replace it)", output.display())
        })?;
    }
    Ok(0)
}

/// Runs the export into `out`; gives back the status and the writer (flushed when complete).
fn run_export<Out: Write>(
    catalog: &Catalog,
    arguments: &ExportArgs,
    page_size: usize,
    out: Out,
    interrupt: &Interrupt,
) -> anyhow::Result<(i32, Out)> {
    let mut sink = LineSink {
        out,
        catalog: &arguments.catalog,
        with_history: arguments.history,
        interrupt,
        progress: None,
        pending: 0,
        failure: None,
        interrupted: false,
    };
    let ended = catalog.export(arguments.history, page_size, &mut sink).context("cannot read the catalog")?;
    if let Some(failure) = sink.failure {
        return Err(failure);
    }
    let progress = sink.progress.take();
    match ended {
        ExportEnd::Finished(_) => {
            if let Some(progress) = &progress {
                progress.advance(sink.pending);
                sink.out.flush().context("cannot write the export")?;
                progress.finish("done");
            }
            Ok((0, sink.out))
        }
        ExportEnd::Stopped(_) => {
            if let Some(progress) = &progress {
                progress.finish("interrupted");
            }
            debug_assert!(sink.interrupted);
            Ok((EXIT_INTERRUPTED, sink.out))
        }
    }
}

//! `mcp-cursos-backend import` (ADR 0040): courses from JSON Lines (an export) or CSV, each row
//! read in the contract's shapes ([`mcp_server::portable`]), on the database the server uses.
//!
//! It reads its file twice by default: a check of every row (rules, duplicates within the file,
//! against the catalog) that writes nothing, then the writing, in batches of one transaction each.
//! With `--partial`, one pass that writes the valid rows. Into a database with no course yet, the
//! writing is ONE transaction, which an interruption rolls back whole (ADR 0057), and it is tried
//! first, before any check (ADR 0059): a file without a problem is then read once, and a file
//! with one is rolled back at the first and imported as by default, its check naming them all. Rows already in
//! the catalog (same id; a row without id gets a UUID v5 of catalog and title key) are skipped:
//! importing a file again changes nothing, and an interrupted import is resumed by running it
//! again. The rules are the domain's ([`courses_domain::ImportPass`]), their sentences the
//! contract's.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use courses_domain::{
    BulkImport, Catalog, CatalogName, Course, ImportPass, InFileDuplicates, OffsetDateTime, Provenance, RowOutcome,
    WriteError,
};
use mcp_server::portable::{self, FieldError, ImportRow};

use super::progress::{EXIT_INTERRUPTED, Interrupt, Progress};
use super::settings::{Database, Settings};

/// Exit status of an import that wrote the valid rows but refused some (`--partial`, or a title
/// taken by a concurrent writer during the import).
pub const EXIT_SOME_REFUSED: i32 = 2;
/// How many bad rows are printed one by one; beyond it they are only counted.
const MAX_REPORTED_ROWS: u64 = 1000;
/// Rows per transaction by default (ADR 0053): each commit has a fixed cost (the write lock, the
/// WAL's sync and checkpoint, a new full-text segment merged later), and 10,000 rows hold the
/// server's writers back for a fraction of a second. At 2,000 those costs were a large part of
/// an import.
const BATCH_ROWS: u32 = 10_000;
/// The longest line an import reads, in bytes (issue 24: one 100 MB line took 712 MB). A course's
/// line of an export is under 1 KiB; with `--history`, about 400 bytes more per entry. A longer
/// line is refused by its number and never held in memory.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// JSON Lines, as `export` writes them (a header line is optional).
    Jsonl,
    /// CSV with a header row naming `titulo`, `cargaHoraria` and optionally `id`.
    Csv,
}

/// `import`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The file to import, or `-` for stdin (copied to a temporary file first: it is read twice).
    pub input: PathBuf,
    /// The catalog to import into; `padrao` by default (ADR 0035).
    #[arg(long, value_parser = CatalogName::parse, default_value = CatalogName::DEFAULT)]
    pub catalog: CatalogName,
    /// `jsonl` or `csv` (by default from the file's name).
    ///
    /// By default, `csv` for a file named `*.csv`, `jsonl` otherwise.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write the valid rows even when others are refused.
    ///
    /// By default nothing is written unless every row is valid.
    #[arg(long)]
    pub partial: bool,
    /// Only tell what would happen (new, already present, refused); write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Who is importing; by default $USER.
    ///
    /// Recorded as the author of each imported course's history entry (tool `importar`).
    #[arg(long, env = "USER", hide_env_values = true)]
    pub author: Option<String>,
    /// Rows per transaction.
    #[arg(long, default_value_t = BATCH_ROWS, hide = true, value_parser = clap::value_parser!(u32).range(1..=50_000))]
    pub batch_size: u32,
}

/// `import`: exits with the status of [`import`].
///
/// # Errors
/// As [`import`].
pub async fn run(settings: &Settings, arguments: &ImportArgs) -> anyhow::Result<()> {
    std::process::exit(import(settings.database(), arguments.clone()).await?);
}

/// `import`: its exit status (0; 1 when rows were refused and nothing written, or a dry run found
/// refused rows; [`EXIT_SOME_REFUSED`]; [`EXIT_INTERRUPTED`]).
///
/// # Errors
/// The database or the file cannot be opened or read, or a batch cannot be written.
pub async fn import(database: Database, arguments: ImportArgs) -> anyhow::Result<i32> {
    let interrupt = Interrupt::on_signals();
    tokio::task::spawn_blocking(move || import_blocking(&database, &arguments, &interrupt))
        .await
        .context("the import stopped")?
}

/// What one pass over the file found or did.
#[derive(Debug, Default)]
struct Tally {
    /// Rows stored (a check: that would be).
    new: u64,
    /// Rows whose course is already in the catalog.
    present: u64,
    /// Rows refused: a rule, a duplicate within the file, a title or id taken in the database.
    refused: u64,
    /// The last line handled.
    line: u64,
    interrupted: bool,
    /// Written as one transaction into an empty database (ADR 0057): interrupted, nothing stays.
    bulk: bool,
    /// A [`ImportPass::FirstTry`] that met a refused row or a failure: rolled back, nothing reported.
    gave_up: bool,
}

impl Tally {
    fn counts(&self, verb: &str) -> String {
        format!("{} {verb}, {} already present, {} refused", self.new, self.present, self.refused)
    }
}

fn import_blocking(database: &Database, arguments: &ImportArgs, interrupt: &Interrupt) -> anyhow::Result<i32> {
    let author = arguments.author.as_deref().map(str::trim).filter(|author| !author.is_empty()).unwrap_or("operador");
    anyhow::ensure!(
        author.chars().count() <= 64 && !author.chars().any(char::is_control),
        "--author must be 1 to 64 characters without control characters"
    );
    let format = arguments.format.unwrap_or_else(|| {
        if arguments.input.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("csv")) {
            Format::Csv
        } else {
            Format::Jsonl
        }
    });
    // stdin is read twice (check, then write): copied to a temporary file, never into memory.
    let (source, _spooled) = if arguments.input.as_os_str() == "-" {
        let mut spool = tempfile::NamedTempFile::new().context("cannot create a temporary file for stdin")?;
        std::io::copy(&mut std::io::stdin().lock(), &mut spool).context("cannot read stdin")?;
        (spool.path().to_owned(), Some(spool))
    } else {
        (arguments.input.clone(), None)
    };
    let opened = database.open()?;
    let catalog = opened.catalog.scoped(&arguments.catalog);
    let now = OffsetDateTime::now_utc();
    let details = serde_json::json!({
        "arquivo": arguments.input.file_name().map_or_else(|| "-".into(), |name| name.to_string_lossy()),
        "formato": match format { Format::Jsonl => "jsonl", Format::Csv => "csv" },
        "importadoEm": portable::HeaderJson::new(&arguments.catalog, 0, false, now).exportado_em,
    });
    let provenance = Provenance::new(author, "importar", details.to_string());
    let run = Run { catalog: &catalog, source: &source, format, arguments, provenance: &provenance, interrupt, now };
    let mut stdout = super::stdout();

    // Into a database with no course yet (ADR 0057), one pass first (ADR 0059): ONE transaction,
    // the file's duplicates found by the indexes built at its end. Any problem rolls it back, and
    // the import goes on below as if it had not been tried, its check naming each problem.
    if ImportPass::tries_first(arguments.partial, arguments.dry_run)
        && let Some(bulk) = catalog
            .begin_bulk_import(&provenance)
            .map_err(|error| anyhow::Error::from(error).context("cannot start the import"))?
    {
        let tried = run.pass(ImportPass::FirstTry, None, Some(bulk))?;
        if tried.interrupted {
            writeln!(stdout, "{}", interrupted_in_one_transaction(tried.line))?;
            return Ok(EXIT_INTERRUPTED);
        }
        if !tried.gave_up {
            writeln!(stdout, "import: {}", tried.counts("written"))?;
            return Ok(0);
        }
    }
    let mut expected = None;
    if ImportPass::checks_first(arguments.partial, arguments.dry_run) {
        let checked = run.pass(ImportPass::Check, None, None)?;
        if checked.interrupted {
            writeln!(stdout, "import interrupted while checking (line {}): nothing written", checked.line)?;
            return Ok(EXIT_INTERRUPTED);
        }
        if arguments.dry_run {
            writeln!(stdout, "import (dry run): {}; nothing written", checked.counts("new"))?;
            return Ok(i32::from(checked.refused > 0));
        }
        if checked.refused > 0 {
            writeln!(
                stdout,
                "import: {}; nothing written (fix the lines above, or use --partial to write the valid rows)",
                checked.counts("new")
            )?;
            return Ok(1);
        }
        expected = Some(checked.new + checked.present);
    }
    // Into a database with no course yet (ADR 0057): the writing is ONE transaction, the indexes
    // built at its end. Begun after the check, so its write lock is not held while the file is
    // checked. (Reached when the first try above gave up, or the database has courses, or
    // `--partial`.)
    let bulk = catalog
        .begin_bulk_import(&provenance)
        .map_err(|error| anyhow::Error::from(error).context("cannot start the import"))?;
    let written = run.pass(ImportPass::Write, expected, bulk)?;
    if written.interrupted && written.bulk {
        writeln!(stdout, "{}", interrupted_in_one_transaction(written.line))?;
        return Ok(EXIT_INTERRUPTED);
    }
    if written.bulk && written.refused > 0 && !arguments.partial {
        writeln!(
            stdout,
            "import: {}; nothing written (fix the lines above, or use --partial to write the valid rows)",
            written.counts("new")
        )?;
        return Ok(1);
    }
    if written.interrupted {
        writeln!(
            stdout,
            "import interrupted after line {}: {}; run the same command again to go on (rows already imported are skipped)",
            written.line,
            written.counts("written")
        )?;
        return Ok(EXIT_INTERRUPTED);
    }
    writeln!(stdout, "import: {}", written.counts("written"))?;
    Ok(if written.refused > 0 { EXIT_SOME_REFUSED } else { 0 })
}

/// What an import into an empty database says when interrupted.
fn interrupted_in_one_transaction(line: u64) -> String {
    format!(
        "import interrupted after line {line}: nothing written (into an empty database an import is one transaction); \
         run the same command again"
    )
}

struct Run<'run> {
    catalog: &'run Catalog,
    source: &'run Path,
    format: Format,
    arguments: &'run ImportArgs,
    provenance: &'run Provenance,
    interrupt: &'run Interrupt,
    now: OffsetDateTime,
}

/// A refused row: its line and its problems.
type Refused = (u64, Vec<FieldError>);

/// A row with its line: read, or refused with its problems.
type NumberedRow = (u64, Result<ImportRow, Vec<FieldError>>);

/// The rows of the file, one at a time, with their line numbers.
enum Rows {
    Json {
        lines: BoundedLines<BufReader<std::fs::File>>,
        line: u64,
    },
    Csv {
        records: csv::ByteRecordsIntoIter<LineLimit<std::fs::File>>,
        columns: Result<(usize, usize, Option<usize>), FieldError>,
        /// The header's names, trimmed: a record that repeats them is a second file's header.
        header: Vec<String>,
    },
}

impl Rows {
    fn open(path: &Path, format: Format) -> anyhow::Result<(Self, Option<Refused>)> {
        let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        match format {
            Format::Jsonl => Ok((Self::Json { lines: BoundedLines::new(BufReader::new(file)), line: 0 }, None)),
            Format::Csv => {
                let mut reader =
                    csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(LineLimit::new(file));
                let mut records = reader.byte_records();
                let header = records.next().transpose().map_err(csv_error)?.unwrap_or_default();
                let names: Vec<String> = header
                    .iter()
                    .map(|name| String::from_utf8_lossy(name).trim_start_matches('\u{feff}').to_owned())
                    .collect();
                let columns = portable::csv_columns(&names.iter().map(String::as_str).collect::<Vec<_>>());
                let bad_header = columns.as_ref().err().map(|error| (1, vec![error.clone()]));
                let header = names.iter().map(|name| name.trim().to_owned()).collect();
                Ok((Self::Csv { records: reader.into_byte_records(), columns, header }, bad_header))
            }
        }
    }

    /// The next row: its line, and the row or its problems; `None` at the end. A header line of
    /// JSON Lines is skipped.
    fn next_row(&mut self, now: OffsetDateTime) -> anyhow::Result<Option<NumberedRow>> {
        loop {
            match self {
                Self::Json { lines, line } => {
                    let Some(read) = lines.next_line().with_context(|| format!("cannot read line {}", *line + 1))?
                    else {
                        return Ok(None);
                    };
                    *line += 1;
                    let text = match read {
                        Line::Text(text) => text,
                        Line::TooLong => return Ok(Some((*line, Err(vec![too_long()])))),
                        Line::NotUtf8(valid_up_to) => return Ok(Some((*line, Err(vec![not_utf8(valid_up_to)])))),
                    };
                    let text = text.trim_start_matches('\u{feff}');
                    if text.trim().is_empty() {
                        continue;
                    }
                    if let Some(row) = portable::parse_json_line(text, now).transpose() {
                        return Ok(Some((*line, row)));
                    }
                }
                Self::Csv { records, columns, header } => {
                    let Some(record) = records.next() else { return Ok(None) };
                    let record = record.map_err(csv_error)?;
                    let line = record.position().map_or(0, csv::Position::line);
                    let fields: Vec<&str> = match record.iter().map(std::str::from_utf8).collect() {
                        Ok(fields) => fields,
                        Err(error) => {
                            let before: usize = record
                                .iter()
                                .take_while(|field| std::str::from_utf8(field).is_ok())
                                .map(|field| field.len() + 1)
                                .sum();
                            return Ok(Some((line, Err(vec![not_utf8(before + error.valid_up_to())]))));
                        }
                    };
                    if fields.iter().all(|field| field.trim().is_empty()) {
                        continue;
                    }
                    let Ok(columns) = columns else { return Ok(None) };
                    if fields.len() == header.len()
                        && fields.iter().zip(header.iter()).all(|(field, name)| field.trim() == name)
                    {
                        return Ok(Some((
                            line,
                            Err(vec![FieldError::row(
                                "repete o cabeçalho da linha 1 (dois arquivos CSV juntados?); uma linha é um curso.",
                            )]),
                        )));
                    }
                    return Ok(Some((line, portable::parse_csv_row(*columns, &fields))));
                }
            }
        }
    }
}

impl Run<'_> {
    /// One pass over the file; `bulk`, an import into an empty database to write into (ADR 0057),
    /// committed at the end unless a row was refused (not `--partial`: the file changed since its
    /// check) or the pass was interrupted.
    fn pass(
        &self,
        pass: ImportPass,
        total: Option<u64>,
        mut bulk: Option<Box<dyn BulkImport + '_>>,
    ) -> anyhow::Result<Tally> {
        let what = if pass == ImportPass::Check { "import (check)" } else { "import" };
        let progress = Progress::start(what, "rows", total);
        let (rows, bad_header) = Rows::open(self.source, self.format)?;
        let mut tally = Tally { bulk: bulk.is_some(), ..Tally::default() };
        let mut reported = 0_u64;
        let mut report = |tally: &mut Tally, line: u64, errors: &[FieldError]| {
            tally.refused += 1;
            for error in errors {
                reported += 1;
                if reported <= MAX_REPORTED_ROWS {
                    eprintln!("linha {line}: {}: {}", error.field, error.message);
                } else if reported == MAX_REPORTED_ROWS + 1 {
                    eprintln!("(more refused rows are counted, not shown)");
                }
            }
        };
        let first_try = pass == ImportPass::FirstTry;
        if let Some((line, errors)) = bad_header {
            if first_try {
                tally.gave_up = true;
                progress.finish("a problem found: checking the whole file");
                return Ok(tally);
            }
            report(&mut tally, line, &errors);
            progress.finish("refused");
            return Ok(tally);
        }
        // The check pass found the file's duplicates, or this pass does (`--partial`): the store's
        // bulk import requires it of every row it is given, but for a first try, whose duplicates
        // fail the store's unique indexes (ADR 0059).
        let seen = pass.in_file_duplicates(ImportPass::checks_first(self.arguments.partial, self.arguments.dry_run));
        let batch_size = usize::try_from(self.arguments.batch_size).unwrap_or(usize::MAX);
        let (catalog, now) = (&self.arguments.catalog, self.now);
        // Stores one message of the reading, in the file's order; true to stop (interrupted, or a
        // first try given up).
        let mut consume = |message: anyhow::Result<Parsed>| -> anyhow::Result<bool> {
            let (lines, courses) = match message? {
                Parsed::Refused(..) if first_try => {
                    tally.gave_up = true;
                    return Ok(true);
                }
                Parsed::Refused(line, errors) => {
                    tally.line = line;
                    report(&mut tally, line, &errors);
                    return Ok(false);
                }
                Parsed::Batch(lines, courses) => (lines, courses),
            };
            // Between batches, each committed whole: where Ctrl-C stops (ADR 0040). Asked before
            // a batch, not after it, so that the file's last batch is always stored.
            if self.interrupt.requested() {
                return Ok(true);
            }
            tally.line = lines.last().copied().unwrap_or(tally.line);
            let outcomes = if tally.bulk {
                if tally.refused > 0 && !self.arguments.partial {
                    // A row was refused: nothing will be written. The transaction is rolled back
                    // now, and the rest of the file only checked.
                    bulk = None;
                }
                if let Some(bulk) = bulk.as_mut() {
                    let (first, last) = (lines.first().copied().unwrap_or(0), lines.last().copied().unwrap_or(0));
                    match bulk.add(&courses) {
                        Ok(()) => {}
                        Err(error) if first_try => {
                            // An id repeated within the file (its unique index is kept row by
                            // row), or the store's failure, which the import's next attempt meets
                            // again and reports.
                            tracing::debug!(%error, first, last, "the import's first try gave up");
                            tally.gave_up = true;
                            return Ok(true);
                        }
                        Err(error) => {
                            return Err(anyhow::Error::from(error)
                                .context(format!("cannot import the lines {first}-{last}; nothing was written")));
                        }
                    }
                }
                vec![RowOutcome::Inserted; courses.len()]
            } else {
                self.store_batch(&lines, &courses, pass)?
            };
            for (line, outcome) in lines.iter().zip(outcomes) {
                match outcome {
                    RowOutcome::Inserted => tally.new += 1,
                    RowOutcome::AlreadyPresent => tally.present += 1,
                    RowOutcome::Refused(refusal) => report(&mut tally, *line, &[portable::refusal_message(&refusal)]),
                }
            }
            progress.advance(u64::try_from(courses.len()).unwrap_or(u64::MAX));
            Ok(false)
        };
        let interrupted = if seen.is_some() {
            // The pass that holds the file's duplicate tables (the check, or `--partial`'s only
            // pass) reads and stores on one thread: a batch read ahead would add to its peak.
            let mut outcome = Ok(false);
            read_batches(rows, seen, catalog, now, batch_size, &mut |message| {
                outcome = consume(message);
                matches!(outcome, Ok(false))
            });
            outcome?
        } else {
            // The writing after a check: the file is read and parsed on a thread of its own, one
            // batch ahead, while this one stores (the parsing and the store's work overlap on two
            // cores). When this thread stops (interrupted, failed), the reader's next send fails
            // and it ends.
            std::thread::scope(|scope| -> anyhow::Result<bool> {
                let (sender, parsed) = std::sync::mpsc::sync_channel(PARSED_AHEAD);
                scope.spawn(move || {
                    read_batches(rows, None, catalog, now, batch_size, &mut |message| sender.send(message).is_ok());
                });
                for message in parsed {
                    if consume(message)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            })?
        };
        if tally.gave_up {
            // Rolled back whole as it is dropped.
            drop(bulk);
            tally.new = 0;
            progress.finish("a problem found: checking the whole file");
            return Ok(tally);
        }
        if interrupted {
            // A bulk import is rolled back whole as it is dropped.
            if bulk.take().is_some() {
                tally.new = 0;
            }
            tally.interrupted = true;
            progress.finish("interrupted");
            return Ok(tally);
        }
        if tally.bulk && tally.refused > 0 && !self.arguments.partial {
            drop(bulk);
            progress.finish("refused");
        } else if let Some(bulk) = bulk {
            progress.finish("stored, building the indexes");
            match bulk.commit() {
                Ok(()) => {}
                // Two active courses with one title (their unique index cannot be built), or the
                // store's failure: nothing was written, and the next attempt reports it.
                Err(error) if first_try && !matches!(error, WriteError::OutcomeUnknown(_)) => {
                    tracing::debug!(%error, "the import's first try gave up at its commit");
                    tally.gave_up = true;
                    tally.new = 0;
                    return Ok(tally);
                }
                Err(error) => {
                    return Err(anyhow::Error::from(error)
                        .context("cannot finish the import (one transaction: nothing was written)"));
                }
            }
        } else {
            progress.finish("done");
        }
        Ok(tally)
    }

    /// One batch through [`Catalog::import_rows`] (checked or written, retried on a title taken
    /// meanwhile), its error naming the batch's lines.
    fn store_batch(&self, lines: &[u64], courses: &[Course], pass: ImportPass) -> anyhow::Result<Vec<RowOutcome>> {
        let (first, last) = (lines.first().copied().unwrap_or(0), lines.last().copied().unwrap_or(0));
        self.catalog.import_rows(courses, self.provenance, pass).map_err(|error| match error {
            WriteError::OutcomeUnknown(error) => anyhow::Error::from(error).context(format!(
                "the batch ending at line {last} may or may not be stored; run the same command again \
                 (rows already imported are skipped)"
            )),
            error => anyhow::Error::from(error).context(format!("cannot import the batch of lines {first}-{last}")),
        })
    }
}

/// Messages from [`read_batches`] to the pass that stores them, in the file's order.
enum Parsed {
    /// A line refused by the rules of its fields or as a duplicate within the file.
    Refused(u64, Vec<FieldError>),
    /// A batch of courses to store, with their lines.
    Batch(Vec<u64>, Vec<Course>),
}

/// How many messages wait between [`read_batches`] on its thread and the storing: none (a
/// rendezvous), so at most two batches are alive, the one being stored and the one being read.
/// Two waiting gave the same time and more memory.
const PARSED_AHEAD: usize = 0;

/// Reads `rows` to their end: each line refused (by its fields, or by `seen`, the file's
/// duplicates) or gathered into batches of `batch_size`, given to `emit` in order. Stops at the
/// first error (emitted) or when `emit` returns false.
fn read_batches(
    mut rows: Rows,
    mut seen: Option<InFileDuplicates>,
    catalog: &CatalogName,
    now: OffsetDateTime,
    batch_size: usize,
    emit: &mut dyn FnMut(anyhow::Result<Parsed>) -> bool,
) {
    let (mut lines, mut courses): (Vec<u64>, Vec<Course>) = (Vec::new(), Vec::with_capacity(batch_size));
    loop {
        let (line, row) = match rows.next_row(now) {
            Ok(Some(next)) => next,
            Ok(None) => break,
            Err(error) => {
                emit(Err(error));
                return;
            }
        };
        let refused = match row.map(|row| row.into_course(catalog, now)) {
            Err(errors) => Some(errors),
            Ok(course) => match seen.as_mut().map_or(Ok(()), |seen| seen.check(line, &course)) {
                Err(refusal) => Some(vec![portable::refusal_message(&refusal)]),
                Ok(()) => {
                    lines.push(line);
                    courses.push(course);
                    None
                }
            },
        };
        let message = match refused {
            Some(errors) => Parsed::Refused(line, errors),
            None if courses.len() >= batch_size => Parsed::Batch(
                std::mem::take(&mut lines),
                std::mem::replace(&mut courses, Vec::with_capacity(batch_size)),
            ),
            None => continue,
        };
        if !emit(Ok(message)) {
            return;
        }
    }
    if !courses.is_empty() {
        emit(Ok(Parsed::Batch(lines, courses)));
    }
}

/// The refusal of a line longer than [`MAX_LINE_BYTES`].
fn too_long() -> FieldError {
    FieldError::row(format!(
        "a linha tem mais de {} MiB e não foi lida (uma linha é um curso; um curso exportado com \
         --history e milhares de entradas de histórico pode passar do limite: exporte sem --history).",
        MAX_LINE_BYTES / (1024 * 1024)
    ))
}

/// The refusal of a line that is not UTF-8.
fn not_utf8(valid_up_to: usize) -> FieldError {
    FieldError::row(format!("não é texto UTF-8 válido (byte {} da linha).", valid_up_to + 1))
}

/// A CSV reading error: a line over [`MAX_LINE_BYTES`] (which ends the reading, since the CSV
/// reader cannot go on past a failed read) or the file's own.
fn csv_error(error: csv::Error) -> anyhow::Error {
    let line = error.position().map(csv::Position::line);
    if let csv::ErrorKind::Io(io) = error.kind()
        && io.kind() == std::io::ErrorKind::InvalidData
    {
        return anyhow::anyhow!("{io}; nothing after it was read");
    }
    match line {
        Some(line) => anyhow::Error::from(error).context(format!("cannot read the CSV record of line {line}")),
        None => anyhow::Error::from(error).context("cannot read a CSV record"),
    }
}

/// One line as read by [`BoundedLines`].
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// The line's text, without its end (`\n` or `\r\n`).
    Text(String),
    /// Longer than [`MAX_LINE_BYTES`]: skipped to its end, never held.
    TooLong,
    /// Not UTF-8: the bytes before the first invalid one.
    NotUtf8(usize),
}

/// Lines of a reader in memory bounded by [`MAX_LINE_BYTES`], each one judged on its own (a line
/// too long or not UTF-8 is one refused line, not the end of the import).
struct BoundedLines<R> {
    reader: R,
    buffer: Vec<u8>,
    max: usize,
}

impl<R: BufRead> BoundedLines<R> {
    fn new(reader: R) -> Self {
        Self::with_max(reader, MAX_LINE_BYTES)
    }

    fn with_max(reader: R, max: usize) -> Self {
        Self { reader, buffer: Vec::new(), max }
    }

    /// The next line; `None` at the end.
    fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        self.buffer.clear();
        let (mut any, mut too_long) = (false, false);
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let end = memchr::memchr(b'\n', available);
            let chunk = &available[..end.unwrap_or(available.len())];
            if !too_long && self.buffer.len() + chunk.len() > self.max + 1 {
                too_long = true;
                self.buffer = Vec::new();
            }
            if !too_long {
                self.buffer.extend_from_slice(chunk);
            }
            let used = end.map_or(available.len(), |end| end + 1);
            self.reader.consume(used);
            if end.is_some() {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        if self.buffer.last() == Some(&b'\r') {
            self.buffer.pop();
        }
        if too_long || self.buffer.len() > self.max {
            self.buffer = Vec::new();
            return Ok(Some(Line::TooLong));
        }
        match String::from_utf8(std::mem::take(&mut self.buffer)) {
            Ok(text) => Ok(Some(Line::Text(text))),
            Err(error) => Ok(Some(Line::NotUtf8(error.utf8_error().valid_up_to()))),
        }
    }
}

/// A reader that fails (`InvalidData`, naming the line) once a line runs past [`MAX_LINE_BYTES`]:
/// the CSV reader would otherwise hold a record of any length.
struct LineLimit<R> {
    inner: R,
    line: u64,
    in_line: usize,
    max: usize,
}

impl<R> LineLimit<R> {
    fn new(inner: R) -> Self {
        Self { inner, line: 1, in_line: 0, max: MAX_LINE_BYTES }
    }
}

impl<R: Read> Read for LineLimit<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        for &byte in &buffer[..read] {
            if byte == b'\n' {
                self.line += 1;
                self.in_line = 0;
            } else {
                self.in_line += 1;
                if self.in_line > self.max + 1 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("line {} is longer than {} MiB", self.line, self.max / (1024 * 1024)),
                    ));
                }
            }
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(bytes: &[u8], max: usize) -> Vec<Line> {
        // A small buffer: lines cross many `fill_buf`s.
        let mut lines = BoundedLines::with_max(BufReader::with_capacity(4, bytes), max);
        std::iter::from_fn(|| lines.next_line().expect("read")).collect()
    }

    #[test]
    fn each_line_is_judged_on_its_own_and_a_long_one_is_never_held() {
        let bytes = b"curta\r\nlonga demais\nok\xffmau\nsem fim";
        assert_eq!(
            lines_of(bytes, 8),
            [Line::Text("curta".to_owned()), Line::TooLong, Line::NotUtf8(2), Line::Text("sem fim".to_owned()),]
        );
        assert_eq!(lines_of(b"12345678\n123456789\n", 8), [Line::Text("12345678".to_owned()), Line::TooLong]);
        assert_eq!(lines_of(b"", 8), []);
        assert_eq!(lines_of(b"\n", 8), [Line::Text(String::new())]);
    }

    #[test]
    fn a_csv_line_past_the_limit_fails_the_read_naming_the_line() {
        let mut limited = LineLimit { inner: &b"a,b\nabcdefghij\n"[..], line: 1, in_line: 0, max: 5 };
        let mut sink = Vec::new();
        let error = limited.read_to_end(&mut sink).expect_err("too long");
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("line 2"), "{error}");
    }
}

//! `mcp-cursos-backend import` (ADR 0040): courses from JSON Lines (an export) or CSV, each row
//! read in the contract's shapes ([`mcp_server::portable`]), on the database the server uses.
//!
//! It reads its file twice by default: a check of every row (rules, duplicates within the file,
//! against the catalog) that writes nothing, then the writing, in batches of one transaction each.
//! With `--partial`, one pass that writes the valid rows. Rows already in the catalog (same id; a
//! row without id gets a UUID v5 of catalog and title key) are skipped: importing a file again
//! changes nothing, and an interrupted import is resumed by running it again.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use courses_domain::{Catalog, CatalogName, Course, ImportOutcome, OffsetDateTime, Provenance, WriteError};
use mcp_server::portable::{self, FieldError, ImportRow};

use super::progress::{EXIT_INTERRUPTED, Interrupt, Progress};
use super::settings::{Database, Settings};

/// Exit status of an import that wrote the valid rows but refused some (`--partial`, or a title
/// taken by a concurrent writer during the import).
pub const EXIT_SOME_REFUSED: i32 = 2;
/// How many bad rows are printed one by one; beyond it they are only counted.
const MAX_REPORTED_ROWS: u64 = 1000;

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
    /// `jsonl` or `csv`; by default, `csv` for a file named `*.csv`, `jsonl` otherwise.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write the valid rows even when others are refused (by default nothing is written unless
    /// every row is valid).
    #[arg(long)]
    pub partial: bool,
    /// Only tell what would happen (new, already present, refused); write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Who is importing, recorded as the author of each imported course's history entry (tool
    /// `importar`); by default $USER.
    #[arg(long, env = "USER", hide_env_values = true)]
    pub author: Option<String>,
    /// Rows per transaction.
    #[arg(long, default_value_t = 2000, hide = true, value_parser = clap::value_parser!(u32).range(1..=50_000))]
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
}

impl Tally {
    fn counts(&self, verb: &str) -> String {
        format!("{} {verb}, {} already present, {} refused", self.new, self.present, self.refused)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Check,
    Write,
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

    let mut expected = None;
    if !arguments.partial || arguments.dry_run {
        let checked = run.pass(Pass::Check, None)?;
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
    let written = run.pass(Pass::Write, expected)?;
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
        lines: std::io::Lines<BufReader<std::fs::File>>,
        line: u64,
    },
    Csv {
        records: csv::StringRecordsIntoIter<std::fs::File>,
        columns: Result<(usize, usize, Option<usize>), FieldError>,
    },
}

impl Rows {
    fn open(path: &Path, format: Format) -> anyhow::Result<(Self, Option<Refused>)> {
        let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        match format {
            Format::Jsonl => Ok((Self::Json { lines: BufReader::new(file).lines(), line: 0 }, None)),
            Format::Csv => {
                let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(file);
                let mut records = reader.records();
                let header = match records.next() {
                    Some(header) => header.context("cannot read the CSV header")?,
                    None => csv::StringRecord::new(),
                };
                let names: Vec<&str> = header.iter().map(|name| name.trim_start_matches('\u{feff}')).collect();
                let columns = portable::csv_columns(&names);
                let bad_header = columns.as_ref().err().map(|error| (1, vec![error.clone()]));
                Ok((Self::Csv { records: reader.into_records(), columns }, bad_header))
            }
        }
    }

    /// The next row: its line, and the row or its problems; `None` at the end. A header line of
    /// JSON Lines is skipped.
    fn next_row(&mut self) -> anyhow::Result<Option<NumberedRow>> {
        loop {
            match self {
                Self::Json { lines, line } => {
                    let Some(text) = lines.next() else { return Ok(None) };
                    *line += 1;
                    let text = text.with_context(|| format!("cannot read line {line}"))?;
                    let text = text.trim_start_matches('\u{feff}');
                    if text.trim().is_empty() {
                        continue;
                    }
                    match portable::parse_json_line(text) {
                        Ok(None) => continue,
                        Ok(Some(row)) => return Ok(Some((*line, Ok(row)))),
                        Err(errors) => return Ok(Some((*line, Err(errors)))),
                    }
                }
                Self::Csv { records, columns } => {
                    let Some(record) = records.next() else { return Ok(None) };
                    let record = record.context("cannot read a CSV record")?;
                    let line = record.position().map_or(0, csv::Position::line);
                    if record.iter().all(|field| field.trim().is_empty()) {
                        continue;
                    }
                    let Ok((title, hours, id)) = columns else { return Ok(None) };
                    let row = if record.len() > [*title, *hours, id.unwrap_or(0)].into_iter().max().unwrap_or(0) + 1 {
                        Err(vec![FieldError::row(format!(
                            "tem {} colunas; o cabeçalho nomeia menos (use aspas num título com vírgula).",
                            record.len()
                        ))])
                    } else {
                        portable::parse_csv_record(
                            record.get(*title),
                            record.get(*hours),
                            id.and_then(|id| record.get(id)),
                        )
                    };
                    return Ok(Some((line, row)));
                }
            }
        }
    }
}

/// Duplicates within the file, in bounded memory: a 64-bit hash of each active title's comparison
/// key with the line that had it first, and a 64-bit hash of each id (about 13 and 9 bytes a row
/// in the tables, not the rows; ids without their line, as a repeated id is rarer). Kept by the
/// pass that checks, and by the writing pass only when none checked before it (`--partial`): a
/// file that passed its check has no duplicates to find again, and the store still refuses a
/// title taken and skips an id present. Two distinct titles with one hash would be refused as
/// duplicates: at a million rows, a chance of about 3 in 100 million, accepted (ADR 0040).
#[derive(Default)]
struct SeenInFile {
    titles: HashMap<u64, u32>,
    ids: std::collections::HashSet<u64>,
}

fn hash_of(value: impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

impl SeenInFile {
    fn check(&mut self, line: u64, course: &Course) -> Result<(), FieldError> {
        // The title first: a row without id repeating a title has the same deterministic id too,
        // and the title is what its author can see.
        let key = (!course.is_archived()).then(|| hash_of(course.title().comparison_key()));
        if let Some(first) = key.and_then(|key| self.titles.get(&key)) {
            return Err(FieldError {
                field: "titulo",
                message: format!("o título repete o da linha {first} do arquivo (maiúsculas e espaços à parte)."),
            });
        }
        if self.ids.contains(&hash_of(course.id())) {
            return Err(FieldError {
                field: "id",
                message: format!("o mesmo curso (id {}) já está numa linha anterior do arquivo.", course.id()),
            });
        }
        if let Some(key) = key {
            // Past 4,294,967,295 lines the line named is that one: no file of courses gets there.
            self.titles.insert(key, u32::try_from(line).unwrap_or(u32::MAX));
        }
        self.ids.insert(hash_of(course.id()));
        Ok(())
    }
}

impl Run<'_> {
    fn pass(&self, pass: Pass, total: Option<u64>) -> anyhow::Result<Tally> {
        let what = match pass {
            Pass::Check => "import (check)",
            Pass::Write => "import",
        };
        let progress = Progress::start(what, "rows", total);
        let (mut rows, bad_header) = Rows::open(self.source, self.format)?;
        let mut tally = Tally::default();
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
        if let Some((line, errors)) = bad_header {
            report(&mut tally, line, &errors);
            progress.finish("refused");
            return Ok(tally);
        }
        let mut seen = (pass == Pass::Check || self.arguments.partial).then(SeenInFile::default);
        let batch_size = usize::try_from(self.arguments.batch_size).unwrap_or(2000);
        let mut batch: Vec<(u64, Course)> = Vec::with_capacity(batch_size);
        loop {
            let next = rows.next_row()?;
            let end = next.is_none();
            if let Some((line, row)) = next {
                tally.line = line;
                match row.map(|row| row.into_course(&self.arguments.catalog, self.now)) {
                    Err(errors) => report(&mut tally, line, &errors),
                    Ok(course) => match seen.as_mut().map_or(Ok(()), |seen| seen.check(line, &course)) {
                        Err(error) => report(&mut tally, line, &[error]),
                        Ok(()) => batch.push((line, course)),
                    },
                }
            }
            if batch.len() >= batch_size || (end && !batch.is_empty()) {
                let outcomes = self.store_batch(&batch, pass)?;
                for ((line, _), outcome) in batch.iter().zip(outcomes) {
                    match outcome {
                        ImportOutcome::Inserted => tally.new += 1,
                        ImportOutcome::AlreadyPresent => tally.present += 1,
                        ImportOutcome::TitleTaken => report(
                            &mut tally,
                            *line,
                            &[FieldError {
                                field: "titulo",
                                message: "já existe um curso ativo com este título no catálogo.".to_owned(),
                            }],
                        ),
                        ImportOutcome::IdTaken => report(
                            &mut tally,
                            *line,
                            &[FieldError {
                                field: "id",
                                message: "este id é de um curso de outro catálogo deste banco de dados.".to_owned(),
                            }],
                        ),
                    }
                }
                progress.advance(u64::try_from(batch.len()).unwrap_or(u64::MAX));
                batch.clear();
                // Between batches, each committed whole: where Ctrl-C stops (ADR 0040).
                if self.interrupt.requested() && !end {
                    tally.interrupted = true;
                    progress.finish("interrupted");
                    return Ok(tally);
                }
            }
            if end {
                break;
            }
        }
        progress.finish("done");
        Ok(tally)
    }

    /// One batch through the store: checked (read only) or written in one transaction. A title
    /// taken by a concurrent rename between the batch's check and its insert fails the whole batch
    /// (nothing of it written); it is tried once more, and then that row is refused as taken.
    fn store_batch(&self, batch: &[(u64, Course)], pass: Pass) -> anyhow::Result<Vec<ImportOutcome>> {
        let courses: Vec<Course> = batch.iter().map(|(_, course)| course.clone()).collect();
        let dry_run = pass == Pass::Check;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.catalog.import_batch(&courses, self.provenance, dry_run) {
                Err(WriteError::DuplicateTitle) if attempt < 3 => {}
                Err(WriteError::OutcomeUnknown(error)) => {
                    return Err(anyhow::Error::from(error).context(format!(
                        "the batch ending at line {} may or may not be stored; run the same command again \
                         (rows already imported are skipped)",
                        batch.last().map_or(0, |(line, _)| *line)
                    )));
                }
                outcome => {
                    return outcome.with_context(|| {
                        format!(
                            "cannot import the batch of lines {}-{}",
                            batch.first().map_or(0, |(line, _)| *line),
                            batch.last().map_or(0, |(line, _)| *line)
                        )
                    });
                }
            }
        }
    }
}

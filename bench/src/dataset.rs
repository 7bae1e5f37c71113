//! The data set: one SQLite file per catalog size, with `N` active courses plus about 5% archived
//! ones, generated from a seed (the same seed gives the same file) and bulk-loaded fast.
//!
//! The file is opened with [`SqliteStore::open`] first, so the embedded migrations (tables,
//! indexes, triggers) are exactly the server's. Rows then go into the `courses` table only (staged
//! first in a TEMP table of the loading connection), with raw SQL in one transaction, so every
//! trigger on `courses` fires as it would for the store.
//! Columns follow the store's semantics: canonical UUID v4 ids, trimmed titles, the domain's
//! comparison key, RFC 3339 UTC millisecond timestamps, `position` assigned by SQLite.
//!
//! For PostgreSQL ([`prepare_postgres`]), the SQLite file of the same size is copied by the
//! operators' own `migrate` (ADR 0041) into a schema of its own, `bench_scale_<N>`: the same ids,
//! positions and titles, so the same fixtures serve both stores.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use courses_domain::{
    CourseTitle, Endpoint, MigrationPhase, MigrationProgress, NonEmptyTarget, PostgresStore, SqliteStore, migrate,
};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Text};
use diesel::sqlite::{Sqlite, SqliteConnection};
use time::format_description::BorrowedFormatItem;
use time::macros::{datetime, format_description};

use crate::measure::WRITES_CATALOG;

/// Written next to a loaded file; a kept file is reused only when its manifest is the expected one.
const MANIFEST_VERSION: &str = "mcp-cursos-bench dataset v1";
/// The columns the loader writes; `position` is left to SQLite.
const COLUMNS: &str = "id, title, title_key, workload_hours, archived, version, created_at, updated_at";
/// Rows per staging `INSERT`: 500 × 8 bound values, well under SQLite's variable limit.
const ROWS_PER_STATEMENT: usize = 500;
/// One generated course in this many is archived (about 5%).
const ARCHIVED_ONE_IN: u64 = 20;
/// Course ids sampled up front for `resources/read cursos://<uuid>`.
const SAMPLED_IDS: usize = 1024;
/// How many active courses the deep page cursor sits before the end of the catalog.
const DEEP_OFFSET_FROM_END: u64 = 150;
/// The store's timestamp format: RFC 3339, UTC, millisecond precision, fixed width.
const TIMESTAMP_FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

const PREFIXES: [&str; 12] = [
    "Introdução a",
    "Fundamentos de",
    "Curso prático de",
    "Tópicos avançados em",
    "Oficina de",
    "Boas práticas em",
    "Arquitetura com",
    "Testes automatizados em",
    "Desempenho em",
    "Primeiros passos em",
    "Laboratório de",
    "Especialização em",
];
const TOPICS: [&str; 24] = [
    "Rust",
    "Python",
    "SQL",
    "Go",
    "Java",
    "TypeScript",
    "Kubernetes",
    "Docker",
    "Redes de Computadores",
    "Estatística",
    "Aprendizado de Máquina",
    "Segurança da Informação",
    "Design de APIs",
    "Banco de Dados",
    "Cálculo",
    "Álgebra Linear",
    "Gestão de Projetos",
    "Engenharia de Dados",
    "Sistemas Distribuídos",
    "Computação em Nuvem",
    "Programação Funcional",
    "Acessibilidade Web",
    "Observabilidade",
    "Compiladores",
];
const AUDIENCES: [&str; 8] = [
    "",
    " para Iniciantes",
    " na Prática",
    " para Equipes",
    " com Projetos Reais",
    " Intensivo",
    " para Analistas",
    " (Edição Noturna)",
];

/// A catalog file ready to serve.
#[derive(Debug)]
pub(crate) struct Dataset {
    /// The SQLite file.
    pub(crate) path: PathBuf,
    /// The store the server will use, opened (and migrated) on this file.
    pub(crate) store: SqliteStore,
    /// Active courses: the catalog size `N`.
    pub(crate) active: u64,
    /// Archived courses, in addition to `N`.
    pub(crate) archived: u64,
    /// How long the bulk load took, or `None` when a kept file was reused.
    pub(crate) load_time: Option<Duration>,
}

/// A PostgreSQL copy of a [`Dataset`], ready to serve.
#[derive(Debug)]
pub(crate) struct PostgresDataset {
    /// The store the server will use, on the copy's schema.
    pub(crate) store: PostgresStore,
    /// How long the copy (`migrate` and `ANALYZE`) took, or `None` when a kept copy was reused.
    pub(crate) load_time: Option<Duration>,
}

/// Makes (or, with `reuse`, finds) the PostgreSQL copy of `dataset` in the schema
/// `bench_scale_<active>` of the database at `url`.
///
/// The copy is `migrate`'s, into a schema the store made (so the migrations are the server's),
/// followed by `ANALYZE` (what autovacuum would do soon after such a load), and a manifest table:
/// a kept copy is reused only when its manifest is the expected one.
///
/// # Errors
/// When PostgreSQL cannot be reached, or the copy fails.
pub(crate) fn prepare_postgres(url: &str, dataset: &Dataset, seed: u64, reuse: bool) -> Result<PostgresDataset> {
    let schema = format!("bench_scale_{}", dataset.active);
    let manifest = format!("{MANIFEST_VERSION}\nseed={seed}\nactive={}\n", dataset.active);
    let mut connection = diesel::PgConnection::establish(url).context("connecting to PostgreSQL")?;
    if reuse && postgres_manifest(&mut connection, &schema).as_deref() == Some(manifest.as_str()) {
        let store = PostgresStore::open_in_schema(url, &schema).context("reopening the PostgreSQL copy")?;
        connection.batch_execute(&format!("SET search_path = \"{schema}\"; BEGIN; {}; COMMIT;", forget_writes()))?;
        // Outside a transaction, as VACUUM must be: the deleted rows' index entries go too.
        // One statement each: several in one query string would be one implicit transaction.
        connection.batch_execute(&format!("VACUUM ANALYZE \"{schema}\".courses"))?;
        connection.batch_execute(&format!("VACUUM \"{schema}\".course_history"))?;
        return Ok(PostgresDataset { store, load_time: None });
    }
    connection.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE;"))?;
    let started = Instant::now();
    // The store creates the schema and applies its migrations; migrate then fills it.
    drop(PostgresStore::open_in_schema(url, &schema).context("creating the PostgreSQL schema")?);
    let separator = if url.contains('?') { '&' } else { '?' };
    let target = format!("{url}{separator}options=-csearch_path%3D{schema}%2Cpublic");
    migrate(&Endpoint::Sqlite(dataset.path.clone()), &Endpoint::Postgres(target), NonEmptyTarget::Refuse, &Quiet)
        .context("copying the catalog to PostgreSQL")?;
    connection.batch_execute(&format!("ANALYZE \"{schema}\".courses;"))?;
    let load_time = started.elapsed();
    connection.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".bench_manifest (manifest TEXT NOT NULL);
         INSERT INTO \"{schema}\".bench_manifest VALUES ('{}');",
        manifest.replace('\'', "''")
    ))?;
    let store = PostgresStore::open_in_schema(url, &schema).context("opening the PostgreSQL copy")?;
    Ok(PostgresDataset { store, load_time: Some(load_time) })
}

/// Drops the PostgreSQL copy of the catalog of `active` courses, if present.
///
/// # Errors
/// When PostgreSQL cannot be reached or refuses.
pub(crate) fn remove_postgres(url: &str, active: u64) -> Result<()> {
    let mut connection = diesel::PgConnection::establish(url).context("connecting to PostgreSQL")?;
    connection.batch_execute(&format!("DROP SCHEMA IF EXISTS \"bench_scale_{active}\" CASCADE;"))?;
    Ok(())
}

/// The manifest a kept PostgreSQL copy holds, if any.
fn postgres_manifest(connection: &mut diesel::PgConnection, schema: &str) -> Option<String> {
    #[derive(QueryableByName)]
    struct Manifest {
        #[diesel(sql_type = Text)]
        manifest: String,
    }
    diesel::sql_query(format!("SELECT manifest FROM \"{schema}\".bench_manifest"))
        .get_result::<Manifest>(connection)
        .ok()
        .map(|row| row.manifest)
}

/// `migrate`'s progress, unreported: the run's own lines say when a copy starts and ends.
struct Quiet;

impl MigrationProgress for Quiet {
    fn phase(&self, _: MigrationPhase, _: u64) {}
    fn advance(&self, _: u64) {}
    fn stop_requested(&self) -> bool {
        false
    }
}

/// Request inputs picked up front with SQL, so the timed loop does no database work of its own.
/// Only the default catalog's rows: the timed creations go to another catalog of the same file.
#[derive(Debug, Clone)]
pub(crate) struct Fixtures {
    /// Ids of existing courses (active and archived), sampled at random positions.
    pub(crate) course_ids: Vec<String>,
    /// A page cursor (the decimal `position` of an active course) near the end of the catalog.
    pub(crate) deep_cursor: String,
}

/// Makes (or, with `reuse`, finds) the catalog of `size` active courses in `folder`.
///
/// # Errors
/// When the file cannot be opened, migrated or loaded.
pub(crate) fn prepare(folder: &Path, size: u64, seed: u64, reuse: bool) -> Result<Dataset> {
    ensure!(size > 0, "a catalog size must be at least 1");
    let path = folder.join(format!("cursos-{size}.db"));
    let manifest_path = path.with_extension("manifest");
    let manifest = format!("{MANIFEST_VERSION}\nseed={seed}\nactive={size}\n");
    if reuse && path.exists() && std::fs::read_to_string(&manifest_path).ok().as_deref() == Some(&manifest) {
        // Opening applies any migration added since the file was made.
        let store = SqliteStore::open(&path).with_context(|| format!("reopening {}", path.display()))?;
        let mut connection = connect(&path)?;
        // The trigram index is told of each course deleted (its content lives in `courses`), and
        // merged again, as the loader left it.
        connection.batch_execute(&format!(
            "BEGIN IMMEDIATE;
             INSERT INTO courses_title_search (courses_title_search, rowid, title_key)
                 SELECT 'delete', position, title_key FROM courses WHERE catalog = '{WRITES_CATALOG}';
             {};
             INSERT INTO courses_title_search (courses_title_search) VALUES ('optimize');
             COMMIT;",
            forget_writes()
        ))?;
        let (active, archived) = count_courses(&mut connection)?;
        ensure!(active == size, "{} holds {active} active courses, not {size}", path.display());
        return Ok(Dataset { path, store, active, archived, load_time: None });
    }
    remove(&path)?;
    let store = SqliteStore::open(&path).with_context(|| format!("creating {}", path.display()))?;
    let started = Instant::now();
    let archived = bulk_load(&path, size, seed)?;
    let load_time = started.elapsed();
    std::fs::write(&manifest_path, manifest).with_context(|| format!("writing {}", manifest_path.display()))?;
    Ok(Dataset { path, store, active: size, archived, load_time: Some(load_time) })
}

/// What a previous run's timed creations left in a kept copy: the courses of [`WRITES_CATALOG`],
/// their history and counter, deleted before the copy is measured again (both stores' SQL). Each
/// run creates about a thousand; a kept 1k catalog that kept them measured slower run after run
/// (`bench/RESULTS.md`, 6 December), which made the 1M/1k ratios look better than they are.
fn forget_writes() -> String {
    format!(
        "DELETE FROM course_history_evidence
             WHERE seq IN (SELECT seq FROM course_history WHERE catalog = '{WRITES_CATALOG}');
         DELETE FROM course_history WHERE catalog = '{WRITES_CATALOG}';
         DELETE FROM course_creations WHERE catalog = '{WRITES_CATALOG}';
         DELETE FROM courses WHERE catalog = '{WRITES_CATALOG}';
         DELETE FROM catalog_counters WHERE catalog = '{WRITES_CATALOG}'"
    )
}

/// Deletes a catalog file, its WAL and shared-memory files and its manifest, if present.
///
/// # Errors
/// When a file exists but cannot be deleted.
pub(crate) fn remove(path: &Path) -> Result<()> {
    let mut files = vec![path.to_owned(), path.with_extension("manifest")];
    files.extend(["-wal", "-shm"].map(|suffix| PathBuf::from(format!("{}{suffix}", path.display()))));
    for file in files {
        match std::fs::remove_file(&file) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(error).with_context(|| format!("deleting {}", file.display()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Picks the request inputs for a catalog: random course ids and a cursor near its end.
///
/// # Errors
/// When the file cannot be read or holds no active course.
pub(crate) fn fixtures(path: &Path, active: u64, seed: u64) -> Result<Fixtures> {
    #[derive(QueryableByName)]
    struct Position {
        #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
        position: Option<i64>,
    }
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let connection = &mut connect(path)?;
    let last = diesel::sql_query("SELECT MAX(position) AS position FROM courses WHERE catalog = 'padrao'")
        .get_result::<Position>(connection)?
        .position
        .and_then(|position| u64::try_from(position).ok())
        .context("the catalog is empty")?;
    let mut random = SplitMix64::new(seed ^ 0x5eed_f1c7);
    let course_ids = (0..SAMPLED_IDS)
        .map(|_| {
            let position = i64::try_from(1 + random.below(last))?;
            let id = diesel::sql_query(
                "SELECT id FROM courses WHERE catalog = 'padrao' AND position >= ? ORDER BY position LIMIT 1",
            )
            .bind::<BigInt, _>(position)
            .get_result::<Id>(connection)?
            .id;
            Ok(id)
        })
        .collect::<Result<Vec<_>>>()?;
    // Small catalogs have no "deep": their cursor sits in the middle instead.
    let offset = if active > 2 * DEEP_OFFSET_FROM_END { DEEP_OFFSET_FROM_END } else { active / 2 };
    let deep =
        diesel::sql_query("SELECT position FROM courses WHERE catalog = 'padrao' AND archived = 0 ORDER BY position DESC LIMIT 1 OFFSET ?")
            .bind::<BigInt, _>(i64::try_from(offset)?)
            .get_result::<Position>(connection)?
            .position
            .context("no active course for the deep cursor")?;
    Ok(Fixtures { course_ids, deep_cursor: deep.to_string() })
}

/// A plain connection to the file (not the store's pool) for loading and picking fixtures.
fn connect(path: &Path) -> Result<SqliteConnection> {
    let mut connection = SqliteConnection::establish(&path.to_string_lossy())
        .with_context(|| format!("connecting to {}", path.display()))?;
    connection.batch_execute("PRAGMA busy_timeout = 10000;")?;
    Ok(connection)
}

fn count_courses(connection: &mut SqliteConnection) -> Result<(u64, u64)> {
    #[derive(QueryableByName)]
    struct Counts {
        #[diesel(sql_type = BigInt)]
        active: i64,
        #[diesel(sql_type = BigInt)]
        archived: i64,
    }
    let counts = diesel::sql_query(
        "SELECT COUNT(*) FILTER (WHERE archived = 0) AS active, COUNT(*) FILTER (WHERE archived = 1) AS archived \
         FROM courses WHERE catalog = 'padrao'",
    )
    .get_result::<Counts>(connection)?;
    Ok((u64::try_from(counts.active)?, u64::try_from(counts.archived)?))
}

/// Inserts courses until `active` of them are active, in one transaction, and returns how many
/// archived ones were inserted along the way.
///
/// Rows are first staged in a TEMP table (no index, no trigger: cheap appends), then moved into
/// `courses` by a single `INSERT ... SELECT` in generation order, so `position` follows creation
/// time and every trigger on `courses` fires once per row. One big statement matters: SQLite
/// copies each page a statement touches that was already dirty into a statement journal, so
/// thousands of multi-row `INSERT`s into the indexed table would copy the hot index pages again
/// and again (on the 2-core machine this took a million courses from about 80 s to about 45 s).
fn bulk_load(path: &Path, active: u64, seed: u64) -> Result<u64> {
    let connection = &mut connect(path)?;
    // This connection only: no fsync during the load (a file cut short by an OS crash has no
    // manifest, so it is rebuilt), and a page cache big enough for the indexes (1 GiB at most).
    // The store's connections keep their own settings.
    connection.batch_execute("PRAGMA synchronous = OFF; PRAGMA cache_size = -1048576;")?;
    let mut generator = Generator::new(seed);
    let archived = connection.immediate_transaction::<_, anyhow::Error, _>(|connection| {
        connection.batch_execute(&format!("CREATE TEMP TABLE staged_courses ({COLUMNS});"))?;
        let mut batch = Vec::with_capacity(ROWS_PER_STATEMENT);
        let (mut staged_active, mut staged_archived) = (0, 0);
        while staged_active < active {
            let row = generator.next_row()?;
            if row.archived {
                staged_archived += 1;
            } else {
                staged_active += 1;
            }
            batch.push(row);
            if batch.len() == ROWS_PER_STATEMENT || staged_active == active {
                stage(connection, &batch)?;
                batch.clear();
            }
        }
        connection.batch_execute(&format!(
            "INSERT INTO courses ({COLUMNS}) SELECT {COLUMNS} FROM temp.staged_courses ORDER BY rowid;
             DROP TABLE temp.staged_courses;"
        ))?;
        Ok(staged_archived)
    })?;
    // Leave a compact file: move the load out of the WAL before the server reads it.
    connection.batch_execute("PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(archived)
}

/// Appends `rows` to the staging table with one multi-row `INSERT`.
fn stage(connection: &mut SqliteConnection, rows: &[Row]) -> Result<()> {
    let placeholders = vec!["(?, ?, ?, ?, ?, ?, ?, ?)"; rows.len()].join(", ");
    let sql = format!("INSERT INTO temp.staged_courses ({COLUMNS}) VALUES {placeholders}");
    let mut query = diesel::sql_query(sql).into_boxed::<Sqlite>();
    for row in rows {
        query = query
            .bind::<Text, _>(row.id.as_str())
            .bind::<Text, _>(row.title.as_str())
            .bind::<Text, _>(row.title_key.as_str())
            .bind::<Integer, _>(row.workload_hours)
            .bind::<Bool, _>(row.archived)
            .bind::<BigInt, _>(row.version)
            .bind::<Text, _>(row.created_at.as_str())
            .bind::<Text, _>(row.updated_at.as_str());
    }
    query.execute(connection).context("staging courses")?;
    Ok(())
}

/// One `courses` row, as the store would have written it.
#[derive(Debug)]
struct Row {
    id: String,
    title: String,
    title_key: String,
    workload_hours: i32,
    archived: bool,
    version: i64,
    created_at: String,
    updated_at: String,
}

/// Generates rows from a seed: titles such as "Introdução a Rust para Iniciantes 0000123".
#[derive(Debug)]
struct Generator {
    random: SplitMix64,
    number: u64,
}

impl Generator {
    fn new(seed: u64) -> Self {
        Self { random: SplitMix64::new(seed), number: 0 }
    }

    fn next_row(&mut self) -> Result<Row> {
        let number = self.number;
        self.number += 1;
        let random = &mut self.random;
        let mut bytes = [0; 16];
        bytes[..8].copy_from_slice(&random.next_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&random.next_u64().to_le_bytes());
        let id = uuid::Builder::from_random_bytes(bytes).into_uuid().hyphenated().to_string();
        // The running number keeps every title (and so every comparison key) unique.
        let title = CourseTitle::parse(&format!(
            "{} {}{} {number:07}",
            pick(random, &PREFIXES),
            pick(random, &TOPICS),
            pick(random, &AUDIENCES)
        ))?;
        let archived = random.below(ARCHIVED_ONE_IN) == 0;
        let workload_hours = i32::try_from(1 + random.below(1000))?;
        // One course a minute from 2024 on, so creation times follow positions.
        let created_at = datetime!(2024-01-01 0:00 UTC)
            + time::Duration::minutes(i64::try_from(number)?)
            + time::Duration::milliseconds(i64::try_from(random.below(1000))?);
        // An archived course went through `arquivar_curso`: one more version, a later update.
        let (version, updated_at) = if archived {
            (2, created_at + time::Duration::hours(i64::try_from(1 + random.below(24 * 90))?))
        } else {
            (1, created_at)
        };
        Ok(Row {
            id,
            title_key: title.comparison_key(),
            title: title.as_str().to_owned(),
            workload_hours,
            archived,
            version,
            created_at: created_at.format(TIMESTAMP_FORMAT)?,
            updated_at: updated_at.format(TIMESTAMP_FORMAT)?,
        })
    }
}

fn pick<'a>(random: &mut SplitMix64, words: &[&'a str]) -> &'a str {
    // Word lists are tiny: the index always fits.
    words[usize::try_from(random.below(words.len() as u64)).unwrap_or(0)]
}

/// SplitMix64: a tiny, fast, seedable generator, so a seed always gives the same catalog and
/// the same request sequence (no dependency, no OS entropy).
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.0;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound` (`bound > 0`; the modulo bias is negligible for our bounds).
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_rows_follow_the_store_s_rules_and_the_seed() {
        let mut first = Generator::new(7);
        let mut again = Generator::new(7);
        for _ in 0..200 {
            let row = first.next_row().expect("row");
            assert_eq!(row.id, again.next_row().expect("row").id, "same seed, same rows");
            let id = uuid::Uuid::parse_str(&row.id).expect("uuid");
            assert_eq!((id.get_version_num(), id.hyphenated().to_string()), (4, row.id.clone()));
            let title = CourseTitle::parse(&row.title).expect("title");
            assert_eq!((title.as_str(), title.comparison_key()), (row.title.as_str(), row.title_key));
            assert!((1..=1000).contains(&row.workload_hours));
            assert_eq!(row.created_at.len(), "2024-01-01T00:00:00.000Z".len());
            assert_eq!(row.version, if row.archived { 2 } else { 1 });
        }
    }
}

//! `scale`: how the server's read paths behave as the catalog grows.
//!
//! For each catalog size `N` (default 1,000, 100,000 and 1,000,000 active courses) it bulk-loads a
//! reproducible SQLite file ([`dataset`]), serves it with the real `CursosServer` in process and
//! times requests through an rmcp client ([`measure`]), then prints a markdown table ([`report`])
//! of median, p90 and p99 latencies and of each size's median against the smallest size's.
//! With `--postgres <URL>`, each size is also copied to PostgreSQL (`migrate`, a schema per size)
//! and measured there the same way.
//!
//! ```text
//! cargo run --release -p mcp-cursos-bench --bin scale -- --sizes 1000,100000,1000000
//! cargo run --release -p mcp-cursos-bench --bin scale -- --sizes 1000,1000000 --keep \
//!     --postgres postgres://postgres@127.0.0.1:5432/test
//! ```
//!
//! Progress goes to stderr; stdout carries only the report. See `bench/README.md`.

#![allow(clippy::print_stdout, reason = "a benchmark binary: its report goes to stdout")]

mod dataset;
mod measure;
mod report;

use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use clap::Parser;
use time::format_description::well_known::Rfc3339;

use courses_domain::Catalog;

use crate::measure::{Harness, Operation};
use crate::report::{Report, SizeResult, Store};

/// Scale benchmark of mcp-cursos: latency of catalog reads as the catalog grows.
#[derive(Debug, Clone, Parser)]
#[command(version)]
struct Settings {
    /// Catalog sizes to measure: active courses (about 5% more archived ones are added).
    #[arg(long, value_delimiter = ',', default_value = "1000,100000,1000000")]
    sizes: Vec<u64>,
    /// Timed calls per operation and size (after a warm-up of a tenth of that, 5 to 50 calls).
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Folder of the SQLite files. Default: a fresh temporary folder, or, with --keep,
    /// `mcp-cursos-bench` in the system's temporary folder.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the SQLite files, and reuse the ones a previous run with the same seed left.
    #[arg(long)]
    keep: bool,
    /// Also write the markdown report to this file.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Seed of the data set and of the random course picks.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Also measure each size on PostgreSQL at this URL: a copy of the SQLite file in the schema
    /// `bench_scale_<size>` (kept and reused with --keep, dropped otherwise).
    #[arg(long)]
    postgres: Option<String>,
    /// Measure only on PostgreSQL (the SQLite file is still made: it is the copy's source).
    #[arg(long, requires = "postgres")]
    postgres_only: bool,
}

#[tokio::main]
async fn main() -> Result<()> {
    let settings = Settings::parse();
    let report = run(&settings).await?;
    println!("{report}");
    if let Some(output) = &settings.output {
        std::fs::write(output, report.to_string()).with_context(|| format!("writing {}", output.display()))?;
    }
    Ok(())
}

/// Measures every size in turn, smallest first.
async fn run(settings: &Settings) -> Result<Report> {
    ensure!(settings.iterations > 0, "--iterations must be at least 1");
    let mut sizes = settings.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    ensure!(!sizes.is_empty() && sizes[0] > 0, "--sizes needs at least one size of 1 or more");
    let started_at = time::OffsetDateTime::now_utc().replace_nanosecond(0)?.format(&Rfc3339)?;
    // Dropped (and deleted) at the end unless the files are kept.
    let temporary = match (&settings.dir, settings.keep) {
        (None, false) => Some(tempfile::tempdir()?),
        _ => None,
    };
    let folder = match (&temporary, &settings.dir) {
        (Some(temporary), _) => temporary.path().to_owned(),
        (None, Some(dir)) => dir.clone(),
        (None, None) => std::env::temp_dir().join("mcp-cursos-bench"),
    };
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;

    let mut results = Vec::with_capacity(sizes.len());
    for size in sizes {
        eprintln!("[{size}] preparing the catalog in {}", folder.display());
        let dataset = dataset::prepare(&folder, size, settings.seed, settings.keep)?;
        match dataset.load_time {
            Some(time) => eprintln!(
                "[{size}] loaded {} active + {} archived courses in {:.1} s",
                dataset.active,
                dataset.archived,
                time.as_secs_f64()
            ),
            None => eprintln!("[{size}] reused {}", dataset.path.display()),
        }
        let fixtures = dataset::fixtures(&dataset.path, dataset.active, settings.seed)?;
        if !settings.postgres_only {
            let catalog = Catalog::new(dataset.store.clone());
            let latencies = measure_all(settings, catalog, &fixtures, size, Store::Sqlite).await?;
            results.push(SizeResult {
                store: Store::Sqlite,
                active: dataset.active,
                archived: dataset.archived,
                load_time: dataset.load_time,
                latencies,
            });
        }
        if let Some(url) = &settings.postgres {
            eprintln!("[{size}] preparing the PostgreSQL copy");
            let copy = dataset::prepare_postgres(url, &dataset, settings.seed, settings.keep)?;
            match copy.load_time {
                Some(time) => eprintln!("[{size}] copied to PostgreSQL in {:.1} s", time.as_secs_f64()),
                None => eprintln!("[{size}] reused the PostgreSQL copy"),
            }
            let latencies =
                measure_all(settings, Catalog::new(copy.store.clone()), &fixtures, size, Store::Postgres).await?;
            results.push(SizeResult {
                store: Store::Postgres,
                active: dataset.active,
                archived: dataset.archived,
                load_time: copy.load_time,
                latencies,
            });
            if !settings.keep {
                dataset::remove_postgres(url, dataset.active)?;
            }
        }
        let path = dataset.path.clone();
        drop(dataset);
        if !settings.keep {
            dataset::remove(&path)?;
        }
    }
    Ok(Report { started_at, iterations: settings.iterations, seed: settings.seed, sizes: results })
}

/// Times every operation on `catalog`, served by a fresh in-process server.
async fn measure_all(
    settings: &Settings,
    catalog: Catalog,
    fixtures: &dataset::Fixtures,
    size: u64,
    store: Store,
) -> Result<Vec<(Operation, measure::Latency)>> {
    let mut harness = Harness::start(catalog, fixtures.clone(), size, settings.seed).await?;
    let mut latencies = Vec::with_capacity(Operation::ALL.len());
    for operation in Operation::ALL {
        let latency = harness.measure(operation, settings.iterations).await?;
        eprintln!(
            "[{size}] {} {}: median {:.0} µs, p90 {:.0} µs, p99 {:.0} µs",
            store.label(),
            operation.label(),
            latency.median,
            latency.p90,
            latency.p99
        );
        latencies.push((operation, latency));
    }
    harness.stop().await?;
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use diesel::{Connection, RunQueryDsl};

    use super::*;

    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        value: i64,
    }

    fn count(connection: &mut diesel::SqliteConnection, sql: &str) -> i64 {
        diesel::sql_query(sql).get_result::<Count>(connection).expect("counted").value
    }

    fn settings(dir: &std::path::Path, keep: bool) -> Settings {
        Settings {
            sizes: vec![120, 50],
            iterations: 5,
            dir: Some(dir.to_owned()),
            keep,
            output: None,
            seed: 7,
            postgres: None,
            postgres_only: false,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tiny_run_measures_every_operation_at_every_size() {
        let folder = tempfile::tempdir().expect("temp dir");
        let report = run(&settings(folder.path(), false)).await.expect("run");
        assert_eq!(report.sizes.iter().map(|size| size.active).collect::<Vec<_>>(), [50, 120]);
        assert!(report.sizes.iter().all(|size| size.latencies.len() == Operation::ALL.len()));
        let table = report.to_string();
        for operation in Operation::ALL {
            assert!(table.contains(operation.label()), "{table}");
        }
        assert_eq!(std::fs::read_dir(folder.path()).expect("folder").count(), 0, "files deleted without --keep");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn kept_files_are_reused_by_the_next_run() {
        let folder = tempfile::tempdir().expect("temp dir");
        let first = run(&settings(folder.path(), true)).await.expect("first run");
        assert!(first.sizes.iter().all(|size| size.load_time.is_some()));
        let writes = |size: u64| {
            let path = folder.path().join(format!("cursos-{size}.db"));
            let mut connection =
                diesel::SqliteConnection::establish(&path.to_string_lossy()).expect("the kept file opens");
            diesel::connection::SimpleConnection::batch_execute(&mut connection, "PRAGMA busy_timeout = 10000;")
                .expect("busy timeout");
            let courses =
                count(&mut connection, "SELECT COUNT(*) AS value FROM courses WHERE catalog = 'bench-escritas'");
            let history =
                count(&mut connection, "SELECT COUNT(*) AS value FROM course_history WHERE catalog = 'bench-escritas'");
            diesel::sql_query("INSERT INTO courses_title_search (courses_title_search) VALUES ('integrity-check')")
                .execute(&mut connection)
                .expect("the trigram index matches the courses");
            (courses, history)
        };
        let after_first = writes(120);
        assert!(after_first.0 > 0, "the timed creations wrote: {after_first:?}");
        let second = run(&settings(folder.path(), true)).await.expect("second run");
        assert!(second.sizes.iter().all(|size| size.load_time.is_none()), "no reload");
        assert_eq!(writes(120), after_first, "the first run's creations were forgotten, not kept");
        let archived = |report: &Report| report.sizes.iter().map(|size| size.archived).collect::<Vec<_>>();
        assert_eq!(archived(&first), archived(&second));
    }
}

//! How late a SQLite store hears of a write another store committed to the same file (ADR 0030),
//! and what one poll of the follower costs.
//!
//! Opens two stores on a fresh file (as two processes would), follows the changes on the first,
//! and creates `--writes` courses one at a time through the second: each latency is the time from
//! the write's acknowledgement (after its `COMMIT`) to the follower's report; a pause varying
//! from 0 to 52 ms before each write puts writes at any moment of the poll interval. Then times
//! `PRAGMA data_version` (what an idle poll runs) on a connection of its own.
//!
//! `cargo run -p mcp-cursos-bench --bin follow_latency -- --writes 200 [--in-step]`

#![allow(clippy::print_stdout, reason = "a benchmark binary: its figures go to stdout")]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use courses_domain::{Catalog, CourseTitle, NewCourse, Provenance, SqliteStore, WorkloadHours};
use diesel::connection::SimpleConnection;
use diesel::{Connection, RunQueryDsl, SqliteConnection};

#[derive(Debug, Parser)]
struct Arguments {
    /// Writes to time, one at a time.
    #[arg(long, default_value_t = 200)]
    writes: usize,
    /// Writes right after the previous report (in step with the follower's polls: near the worst
    /// case) instead of after a pause that varies from 0 to 52 ms (a write at any moment).
    #[arg(long)]
    in_step: bool,
    /// Polls to time.
    #[arg(long, default_value_t = 100_000)]
    polls: u32,
}

#[derive(diesel::QueryableByName)]
struct DataVersion {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    #[allow(dead_code, reason = "read only to be decoded, as the follower does")]
    data_version: i64,
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let last = sorted.len().saturating_sub(1);
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "an index into a few hundred samples"
    )]
    let index = ((last as f64) * fraction).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn main() -> anyhow::Result<()> {
    let arguments = Arguments::parse();
    let folder = tempfile::tempdir()?;
    let path = folder.path().join("cursos.db");
    let following = SqliteStore::open(&path).context("open the following store")?;
    let writing = Catalog::new(SqliteStore::open(&path).context("open the writing store")?);
    let (sender, heard) = mpsc::channel();
    let follower = following.follow_changes(move |change| {
        let _ = sender.send((Instant::now(), change.course_id));
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut latencies = Vec::with_capacity(arguments.writes);
    for index in 0..arguments.writes {
        if !arguments.in_step {
            std::thread::sleep(Duration::from_millis(u64::try_from(index * 17 % 53)?));
        }
        let new_course = NewCourse {
            title: CourseTitle::parse(&format!("Curso {index}"))?,
            workload_hours: WorkloadHours::parse(10)?,
        };
        let course = runtime.block_on(writing.create(new_course, Provenance::new("bench", "criar_curso", "{}")))?;
        let acknowledged = Instant::now();
        let (at, id) = heard.recv_timeout(Duration::from_secs(10)).context("the write was not heard")?;
        anyhow::ensure!(id == course.id(), "heard another course");
        latencies.push(at.saturating_duration_since(acknowledged));
    }
    drop(follower);
    latencies.sort();
    println!(
        "{} writes, acknowledged -> heard by the other store: median {:?}, p90 {:?}, max {:?} (poll interval {:?})",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.9),
        latencies.last().copied().unwrap_or_default(),
        courses_domain::SQLITE_FOLLOW_POLL,
    );

    let mut connection = SqliteConnection::establish(&path.to_string_lossy())?;
    connection.batch_execute("PRAGMA journal_mode = WAL;")?;
    let started = Instant::now();
    for _ in 0..arguments.polls {
        connection.batch_execute("PRAGMA data_version;")?;
    }
    let raw = started.elapsed() / arguments.polls;
    // As the follower runs it: through diesel, read back as a row.
    let started = Instant::now();
    for _ in 0..arguments.polls {
        diesel::sql_query("PRAGMA data_version").get_result::<DataVersion>(&mut connection)?;
    }
    let through_diesel = started.elapsed() / arguments.polls;
    println!(
        "an idle poll (PRAGMA data_version), mean of {}: {raw:?} (sqlite3_exec), {through_diesel:?} (diesel sql_query, as the follower)",
        arguments.polls
    );
    Ok(())
}

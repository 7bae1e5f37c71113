//! `stdio_probe`: the stdio part of the load benchmark (`bench/run.sh`).
//!
//! 1. **Spawn to first answer**, `--spawns` times: start `mcp-cursos-stdio` on an existing
//!    database, write `initialize`, `notifications/initialized` and one `resources/read` at once,
//!    and time until the `initialize` answer and until the read's answer arrive on stdout.
//! 2. **Requests/s over one connection**: one process, `--requests` `resources/read` calls with
//!    at most `--window` in flight (pipelined), then the same one at a time (`window` 1).
//!
//! Every answer is checked (the right id, a `result`, no `error`); any other answer is an error
//! and the probe fails. One line of JSON per figure goes to stdout, for `run.sh`.

#![allow(clippy::print_stdout, reason = "a benchmark binary: its figures go to stdout")]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use serde_json::{Value, json};

/// Times mcp-cursos-stdio: spawn to first answer, and requests/s over one connection.
#[derive(Debug, Parser)]
struct Settings {
    /// The `mcp-cursos-stdio` binary.
    #[arg(long)]
    binary: PathBuf,
    /// An existing (migrated, populated) database.
    #[arg(long)]
    database: PathBuf,
    /// The resource read in every request, e.g. `cursos://<uuid>`.
    #[arg(long)]
    uri: String,
    /// Processes spawned for the spawn-to-first-answer figure.
    #[arg(long, default_value_t = 30)]
    spawns: usize,
    /// Requests per throughput run.
    #[arg(long, default_value_t = 5000)]
    requests: u64,
    /// Requests in flight at once in the pipelined run.
    #[arg(long, default_value_t = 32)]
    window: usize,
}

fn main() -> Result<()> {
    let settings = Settings::parse();
    ensure!(
        settings.database.exists(),
        "{} does not exist: the probe needs an existing database",
        settings.database.display()
    );
    spawn_to_first_answer(&settings)?;
    for window in [settings.window, 1] {
        throughput(&settings, window)?;
    }
    Ok(())
}

fn spawn(settings: &Settings) -> Result<(Child, ChildStdin, BufReader<ChildStdout>)> {
    let mut child = Command::new(&settings.binary)
        .env("DATABASE_PATH", &settings.database)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", settings.binary.display()))?;
    let stdin = child.stdin.take().context("no stdin")?;
    let stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    Ok((child, stdin, stdout))
}

fn initialize_lines() -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-cursos-bench", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    format!("{initialize}\n{initialized}\n")
}

fn read_line(uri: &str, id: u64) -> String {
    format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}}))
}

/// Reads one answer and checks it is the result of request `id`.
fn answer(stdout: &mut BufReader<ChildStdout>, line: &mut String, id: Option<u64>) -> Result<()> {
    line.clear();
    ensure!(stdout.read_line(line)? > 0, "the server closed stdout");
    let message: Value = serde_json::from_str(line).context("an answer is not JSON")?;
    if message.get("result").is_none() || id.is_some_and(|id| message["id"] != json!(id)) {
        bail!("unexpected answer: {}", line.trim_end());
    }
    Ok(())
}

fn close(mut child: Child, stdin: ChildStdin) -> Result<()> {
    drop(stdin);
    let status = child.wait()?;
    ensure!(status.success(), "mcp-cursos-stdio exited with {status}");
    Ok(())
}

fn spawn_to_first_answer(settings: &Settings) -> Result<()> {
    let mut to_initialize = Vec::with_capacity(settings.spawns);
    let mut to_read = Vec::with_capacity(settings.spawns);
    let mut line = String::new();
    for _ in 0..settings.spawns {
        let started = Instant::now();
        let (child, mut stdin, mut stdout) = spawn(settings)?;
        stdin.write_all(format!("{}{}", initialize_lines(), read_line(&settings.uri, 1)).as_bytes())?;
        stdin.flush()?;
        answer(&mut stdout, &mut line, Some(0))?;
        to_initialize.push(started.elapsed());
        answer(&mut stdout, &mut line, Some(1))?;
        to_read.push(started.elapsed());
        close(child, stdin)?;
    }
    for (figure, mut times) in [("spawn_to_initialize", to_initialize), ("spawn_to_first_read", to_read)] {
        times.sort();
        println!(
            "{}",
            json!({"figure": figure, "runs": times.len(), "median_ms": ms(percentile(&times, 50)),
                   "p90_ms": ms(percentile(&times, 90)), "min_ms": ms(times[0]), "max_ms": ms(times[times.len() - 1])})
        );
    }
    Ok(())
}

fn throughput(settings: &Settings, window: usize) -> Result<()> {
    let (child, mut stdin, mut stdout) = spawn(settings)?;
    let mut line = String::new();
    stdin.write_all(initialize_lines().as_bytes())?;
    stdin.flush()?;
    answer(&mut stdout, &mut line, Some(0))?;
    let requests = settings.requests;
    let uri = settings.uri.clone();
    // A permit per request in flight: the writer blocks once `window` are unanswered.
    let (permits, answered) = sync_channel::<()>(window);
    let started = Instant::now();
    let writer = std::thread::spawn(move || -> Result<ChildStdin> {
        for id in 1..=requests {
            permits.send(())?;
            stdin.write_all(read_line(&uri, id).as_bytes())?;
            stdin.flush()?;
        }
        Ok(stdin)
    });
    for _ in 0..requests {
        answer(&mut stdout, &mut line, None)?;
        answered.recv()?;
    }
    let elapsed = started.elapsed();
    let stdin = writer.join().map_err(|_| anyhow::anyhow!("the writer panicked"))??;
    close(child, stdin)?;
    println!(
        "{}",
        json!({"figure": "stdio_throughput", "window": window, "requests": requests,
               "seconds": elapsed.as_secs_f64(), "requests_per_second": requests as f64 / elapsed.as_secs_f64()})
    );
    Ok(())
}

fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    sorted[((sorted.len() - 1) * percent).div_ceil(100)]
}

fn ms(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e5).round() / 100.0
}

//! How the long operator commands (export, import, migrate, backup) show their progress, and how
//! Ctrl-C stops them at a point they can stop at.
//!
//! On a terminal, [`Progress`] draws an `indicatif` bar on stderr with the rate and the time left;
//! anywhere else (a log collector, a CI job, a test reading the child's stderr) it writes plain
//! lines: one at the first step, then at most one per interval, then one at the end. stdout is left
//! to the command's own output (`export` may write the catalog there).
//!
//! [`Interrupt`] turns the first SIGINT or SIGTERM into a flag the command checks between batches,
//! so it stops where its target is whole (each command documents what it leaves); a second signal
//! ends the process at once with status 130.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use courses_domain::{MigrationPhase, MigrationProgress};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// How often the plain lines are written when stderr is not a terminal.
pub const PLAIN_INTERVAL: Duration = Duration::from_secs(2);

/// The progress of one long operation, counted in `unit`s (courses, pages, rows).
#[derive(Debug)]
pub struct Progress {
    what: &'static str,
    unit: &'static str,
    total: Option<u64>,
    done: AtomicU64,
    started: Instant,
    view: View,
}

#[derive(Debug)]
enum View {
    Bar(ProgressBar),
    Lines { every: Duration, last: Mutex<Option<Instant>> },
}

impl Progress {
    /// Starts showing `what` (the command's name), out of `total` when it is known: a bar when
    /// stderr is a terminal, plain lines every [`PLAIN_INTERVAL`] otherwise.
    #[must_use]
    pub fn start(what: &'static str, unit: &'static str, total: Option<u64>) -> Self {
        if std::io::stderr().is_terminal() {
            Self::with_view(what, unit, total, View::Bar(bar(what, unit, total)))
        } else {
            Self::lines(what, unit, total, PLAIN_INTERVAL)
        }
    }

    /// Plain lines on stderr, at most one per `every` (besides the first and the last).
    #[must_use]
    pub fn lines(what: &'static str, unit: &'static str, total: Option<u64>, every: Duration) -> Self {
        Self::with_view(what, unit, total, View::Lines { every, last: Mutex::new(None) })
    }

    fn with_view(what: &'static str, unit: &'static str, total: Option<u64>, view: View) -> Self {
        Self { what, unit, total, done: AtomicU64::new(0), started: Instant::now(), view }
    }

    /// Counts `steps` more units done.
    pub fn advance(&self, steps: u64) {
        let done = self.done.fetch_add(steps, Ordering::Relaxed) + steps;
        match &self.view {
            View::Bar(bar) => bar.set_position(done),
            View::Lines { every, last } => {
                let now = Instant::now();
                let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if last.is_none_or(|at| now.duration_since(at) >= *every) {
                    *last = Some(now);
                    drop(last);
                    self.line(&self.status(done, now));
                }
            }
        }
    }

    /// How many units are done so far.
    #[must_use]
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Ends the display with `outcome` (`"done"`, `"interrupted"`, ...) and the totals.
    pub fn finish(&self, outcome: &str) {
        let done = self.done();
        let elapsed = self.started.elapsed();
        let message = format!(
            "{}: {outcome}: {done} {} in {:.1} s ({}/s)",
            self.what,
            self.unit,
            elapsed.as_secs_f64(),
            rate(done, elapsed)
        );
        match &self.view {
            View::Bar(bar) => {
                bar.finish_and_clear();
                self.line(&message);
            }
            View::Lines { .. } => self.line(&message),
        }
    }

    /// The plain line for `done` units at `now`: `export: 250000/1000000 courses (25%), 81000/s, 9 s left`.
    fn status(&self, done: u64, now: Instant) -> String {
        let elapsed = now.duration_since(self.started);
        let per_second = rate(done, elapsed);
        match self.total {
            Some(total) if total > 0 => {
                let left = if per_second == 0 {
                    String::from("? s left")
                } else {
                    format!("{} s left", total.saturating_sub(done).div_ceil(per_second))
                };
                format!("{}: {done}/{total} {} ({}%), {per_second}/s, {left}", self.what, self.unit, done * 100 / total)
            }
            _ => format!("{}: {done} {}, {per_second}/s", self.what, self.unit),
        }
    }

    fn line(&self, text: &str) {
        let line = format!("{text}\n");
        match &self.view {
            // Printed above the bar, which indicatif redraws below it.
            View::Bar(bar) => bar.suspend(|| write_stderr(&line)),
            View::Lines { .. } => write_stderr(&line),
        }
    }
}

fn write_stderr(line: &str) {
    // Progress is best effort: a closed stderr must not fail the operation it describes.
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(line.as_bytes());
    let _ = stderr.flush();
}

/// Whole units per second over `elapsed` (0 before a millisecond has passed).
fn rate(done: u64, elapsed: Duration) -> u64 {
    let millis = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    done.saturating_mul(1000).checked_div(millis).unwrap_or(0)
}

fn bar(what: &'static str, unit: &'static str, total: Option<u64>) -> ProgressBar {
    let (bar, template) = match total {
        Some(total) => (
            ProgressBar::new(total),
            format!("{what} [{{bar:30}}] {{human_pos}}/{{human_len}} {unit} {{per_sec}} {{eta}} left"),
        ),
        None => (ProgressBar::no_length(), format!("{what} {{spinner}} {{human_pos}} {unit} {{per_sec}}")),
    };
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    // The templates above are fixed and valid; a failure would only lose the styling.
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Set by the first SIGINT (Ctrl-C) or SIGTERM; checked by a command between batches.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

/// What a command returns when it stopped because it was asked to.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted (Ctrl-C or SIGTERM)")]
pub struct Interrupted;

impl Interrupt {
    /// Listens for SIGINT and SIGTERM on the current Tokio runtime: the first sets the flag and
    /// says so on stderr; a second ends the process at once (status 130).
    #[must_use]
    pub fn on_signals() -> Self {
        let interrupt = Self::default();
        let flag = interrupt.clone();
        let mut signals = Signals::install();
        tokio::spawn(async move {
            signals.next().await;
            flag.0.store(true, Ordering::SeqCst);
            write_stderr("stopping at the next safe point (press Ctrl-C again to quit at once)\n");
            signals.next().await;
            write_stderr("quitting at once\n");
            std::process::exit(EXIT_INTERRUPTED);
        });
        interrupt
    }

    /// Whether a signal asked the command to stop.
    #[must_use]
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// `Err(Interrupted)` once a signal asked the command to stop.
    ///
    /// # Errors
    /// [`Interrupted`] when a signal came.
    pub fn check(&self) -> Result<(), Interrupted> {
        if self.requested() { Err(Interrupted) } else { Ok(()) }
    }

    /// Asks the command to stop, as a signal would (for in-process callers and tests).
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// SIGINT and SIGTERM, listened for by the server's graceful shutdown and the long commands'
/// [`Interrupt`] from the moment [`Signals::install`] returns: a signal sent
/// right after the server printed its first lines (its address, a generated key) is a graceful
/// stop, never the default action's abrupt end (tokio registers a handler only when its stream is
/// created, so it is created before anything is announced).
#[derive(Debug)]
pub struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the handlers now. Call it from the Tokio runtime.
    #[must_use]
    pub fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(stream) => Some(stream),
                Err(error) => {
                    tracing::warn!(target: "backend::progress", %error, "cannot listen for {name}");
                    None
                }
            };
            Self {
                interrupt: listen(SignalKind::interrupt(), "SIGINT"),
                terminate: listen(SignalKind::terminate(), "SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        Self {}
    }

    /// The next SIGINT or SIGTERM: its name.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
                match signal {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
            tokio::select! {
                () = received(self.interrupt.as_mut()) => "SIGINT",
                () = received(self.terminate.as_mut()) => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

/// Shows the phases of `migrate` or `backup` as [`Progress`] bars or lines, and answers its stop checks from the
/// [`Interrupt`] flag.
pub(crate) struct Shown {
    command: &'static str,
    current: Mutex<Option<Progress>>,
    interrupt: Interrupt,
}

impl Shown {
    pub(crate) fn new(command: &'static str, interrupt: Interrupt) -> Self {
        Self { command, current: Mutex::new(None), interrupt }
    }

    pub(crate) fn finish(&self, outcome: &str) {
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(progress) = current.take() {
            progress.finish(outcome);
        }
    }
}

impl MigrationProgress for Shown {
    fn phase(&self, phase: MigrationPhase, total_rows: u64) {
        self.finish("done");
        let (what, unit) = match (self.command, phase) {
            ("backup", _) => ("backup", "pages"),
            (_, MigrationPhase::Copy) => ("migrate (copy)", "rows"),
            (_, MigrationPhase::Verify) => ("migrate (verify)", "rows"),
        };
        let progress = Progress::start(what, unit, Some(total_rows));
        // The first line at once: an operator (or a test) sees the command is under way.
        progress.advance(0);
        *self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(progress);
    }

    fn advance(&self, rows: u64) {
        if let Some(progress) = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref() {
            progress.advance(rows);
        }
    }

    fn stop_requested(&self) -> bool {
        self.interrupt.requested()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_tells_how_far_how_fast_and_how_long_is_left() {
        let progress = Progress::lines("export", "courses", Some(1000), Duration::from_secs(3600));
        progress.done.store(250, Ordering::Relaxed);
        let line = progress.status(250, progress.started + Duration::from_secs(1));
        assert_eq!(line, "export: 250/1000 courses (25%), 250/s, 3 s left");
        let unknown = Progress::lines("backup", "pages", None, Duration::from_secs(1));
        assert_eq!(unknown.status(10, unknown.started + Duration::from_secs(2)), "backup: 10 pages, 5/s");
    }

    #[test]
    fn nothing_done_yet_has_no_rate_and_an_unknown_time_left() {
        let progress = Progress::lines("import", "rows", Some(10), Duration::from_secs(1));
        assert_eq!(progress.status(0, progress.started), "import: 0/10 rows (0%), 0/s, ? s left");
    }

    #[test]
    fn an_interrupt_is_seen_by_every_clone() {
        let interrupt = Interrupt::default();
        let seen_by_worker = interrupt.clone();
        assert!(seen_by_worker.check().is_ok());
        interrupt.request();
        assert!(seen_by_worker.check().is_err());
    }
}

//! The allocator's thread caches given back once the server goes quiet (issue 24, item 7; ADR 0065).
//!
//! jemalloc (ADR 0046) keeps a cache of freed blocks in each thread, and trims it only as that
//! thread allocates again. A runtime worker that parks after a burst of sessions keeps what it
//! freed last, 1.5–2.5 MiB on two workers (`bench/RESULTS.md`), for as long as the server stays
//! quiet. So:
//!
//! - each worker adds up the time it works between two parks ([`on_worker_unpark`],
//!   [`on_worker_park`]);
//! - [`give_back_when_quiet`], a task, looks at that time once a [`TICK`]: at the first quiet tick
//!   (workers busy under [`QUIET`] of it) after one that was not, it opens a new *generation* and
//!   wakes every worker with an empty task;
//! - a worker about to park flushes its cache once per generation.
//!
//! Under load nothing is flushed (the caches do their work); a quiet server wakes one worker once a
//! [`TICK`] and flushes nothing; a second or two after the last request every worker has given its
//! cache back to jemalloc, whose background thread then returns the pages (its 1 s decay, ADR 0049).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often [`give_back_when_quiet`] looks at the time the workers worked.
pub const TICK: Duration = Duration::from_secs(1);
/// A tick in which the workers worked less than this, all together, is quiet: a server answering a
/// few requests a second (about 30 µs of work each), or only its own timers.
pub const QUIET: Duration = Duration::from_millis(20);

/// Opened by [`give_back_when_quiet`]; each worker flushes once per generation.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds the runtime's workers worked (from a wake-up to the next park) since the last tick.
static WORKED_NANOS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The generation this thread last flushed its cache in.
    static FLUSHED: Cell<u64> = const { Cell::new(0) };
    /// When this worker last woke.
    static WOKE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// For the runtime's `on_thread_park`: adds the time since this worker woke (its first park, after
/// whatever it ran since it started, counts as [`QUIET`]), and flushes its cache if a generation
/// opened since it last did.
pub fn on_worker_park() {
    let worked = WOKE.take().map_or(QUIET, |woke| woke.elapsed());
    WORKED_NANOS.fetch_add(u64::try_from(worked.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    let generation = GENERATION.load(Ordering::Relaxed);
    FLUSHED.with(|flushed| {
        if flushed.get() != generation {
            flushed.set(generation);
            flush_thread_cache();
        }
    });
}

/// For the runtime's `on_thread_unpark`: notes when this worker woke.
pub fn on_worker_unpark() {
    WOKE.set(Some(Instant::now()));
}

/// Runs until the runtime stops: once a [`TICK`], after a tick with work, the first quiet one opens
/// a generation and wakes `workers` workers, so that each parks again and flushes.
pub async fn give_back_when_quiet(workers: usize) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let quiet = u64::try_from(QUIET.as_nanos()).unwrap_or(u64::MAX);
    let mut worked_since_flush = false;
    loop {
        ticks.tick().await;
        if WORKED_NANOS.swap(0, Ordering::Relaxed) >= quiet {
            worked_since_flush = true;
        } else if worked_since_flush {
            worked_since_flush = false;
            GENERATION.fetch_add(1, Ordering::Relaxed);
            for _ in 0..workers {
                tokio::spawn(async {});
            }
        }
    }
}

/// Hands this thread's cached blocks back to jemalloc's arena.
#[cfg(not(target_env = "msvc"))]
#[allow(unsafe_code)]
fn flush_thread_cache() {
    // SAFETY: `thread.tcache.flush` takes and returns nothing: both pointer pairs are null and the
    // length 0, and the name is a static NUL-terminated string. It only flushes the calling
    // thread's cache (an error, e.g. caches turned off, changes nothing and is ignored).
    let _ = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"thread.tcache.flush".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
}

/// The system allocator keeps no such cache.
#[cfg(target_env = "msvc")]
fn flush_thread_cache() {}

//! The backend's runtime gives its workers' jemalloc thread caches back once it is quiet (issue 24,
//! item 7; ADR 0065). Its own test binary: it needs jemalloc as the global allocator, as the
//! backend's `main` has it, and this process's RSS to itself.

#![cfg(target_os = "linux")]

use std::time::Duration;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's large size classes its thread caches keep by default (up to `tcache_max`, 32 KiB),
/// and how many of each a thread cache holds (`tcache_nslots_large`).
const CACHED_SIZES: [usize; 5] = [16 << 10, 20 << 10, 24 << 10, 28 << 10, 32 << 10];
const CACHED_PER_SIZE: usize = 20;
/// Tasks that fill the caches, spread over the workers, and how many times each fills and frees:
/// enough work (tens of milliseconds) for the runtime to see it as work, not as a quiet second
/// (`backend::allocator::QUIET`).
const FILLERS: usize = 8;
const ROUNDS: usize = 20;
/// A worker's full cache of those sizes is 2.4 MiB, and at least one worker fills its own; after the
/// flush the RSS must have come back to within this of where it was before the caches were filled
/// (without it, it stays about 2.4 MiB or more over: nothing else frees a parked worker's cache).
const BACK_WITHIN_KIB: u64 = 1024;
/// A bound for the poll, never a measure of speed: the flush comes within two ticks (1 s each), then
/// jemalloc's background thread purges the freed pages after its 1 s decay.
const PATIENCE: Duration = Duration::from_secs(30);

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in kB")
}

/// `ROUNDS` times: allocates `CACHED_PER_SIZE` blocks of each cached size, writes every byte of them
/// (so they are resident), then frees them all. The freeing thread's cache keeps the last ones.
fn fill_this_threads_cache() -> usize {
    let mut written = 0;
    for _ in 0..ROUNDS {
        let mut blocks = Vec::new();
        for size in CACHED_SIZES {
            for _ in 0..CACHED_PER_SIZE {
                blocks.push(vec![1u8; size]);
            }
        }
        written += blocks
            .iter()
            .map(|block| block.iter().step_by(4096).map(|&byte| usize::from(byte)).sum::<usize>())
            .sum::<usize>();
    }
    written
}

#[test]
fn a_quiet_runtime_gives_its_workers_thread_caches_back() {
    let runtime = mcp_server::setup::runtime_with_worker_hooks(
        backend::allocator::on_worker_park,
        backend::allocator::on_worker_unpark,
    )
    .expect("runtime");
    runtime.block_on(async {
        let workers = tokio::runtime::Handle::current().metrics().num_workers();
        tokio::spawn(backend::allocator::give_back_when_quiet(workers));
        let before = resident_kib();
        let fillers: Vec<_> = (0..FILLERS).map(|_| tokio::spawn(async { fill_this_threads_cache() })).collect();
        for filler in fillers {
            assert!(filler.await.expect("filler") > 0);
        }
        let filled = resident_kib();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut now = filled;
        while now > before + BACK_WITHIN_KIB && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            now = resident_kib();
        }
        assert!(
            now <= before + BACK_WITHIN_KIB,
            "the workers' caches were not given back: RSS {before} KiB before they were filled, {filled} KiB \
             filled, still {now} KiB after {PATIENCE:?}"
        );
    });
}

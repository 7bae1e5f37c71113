//! A short soak: HTTP sessions opened and abandoned (never deleted) are reclaimed once idle, and
//! the backend's memory stays flat. The long run is `scripts/soak.sh`; its figures are in
//! `docs/faults.md`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{Backend, Era, PATIENCE, fresh_database, resident_kib, start_backend_with, thread_count};

const KEY: &str = "chave-de-teste-do-soak";
/// Sessions opened and abandoned per cycle. A cycle opens them all
/// within the idle timeout (3 s), so every cycle reaches about the same number of open sessions: an
/// idle session holds memory until reclaimed and the allocator keeps its high-water mark, so only
/// equal cycles make growth after the first one mean a leak.
const SESSIONS_PER_CYCLE: usize = 300;
const CYCLES: usize = 4;
/// The first cycles only warm up: the allocator's footprint still settles during them (about
/// +8 MiB then +4 MiB in a debug build), then grows by a few MiB at most.
const WARM_UP_CYCLES: usize = 2;
const CONCURRENCY: usize = 6;
/// Generous on purpose (allocator noise is not a leak): over the 600 sessions after the warm-up, it
/// still catches a leak of about 30 KiB per abandoned session. `scripts/soak.sh` is the fine check.
const RSS_GROWTH_BOUND_KIB: u64 = 18 * 1024;

/// What the abandoning clients need to know (the backend itself stays with the test).
#[derive(Debug)]
struct Target {
    http: reqwest::Client,
    mcp_url: String,
    bearer: String,
    pid: u32,
}

impl Target {
    /// The backend's `/mcp`, with its key, and its process.
    fn of(backend: &Backend) -> Self {
        Self {
            http: reqwest::Client::new(),
            mcp_url: backend.mcp_url.clone(),
            bearer: format!("Bearer {}", backend.api_key),
            pid: backend.pid(),
        }
    }

    async fn post(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.mcp_url)
            .header("authorization", &self.bearer)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send().await.expect("HTTP request")
    }

    /// `initialize`, `notifications/initialized` and a read of the catalog; then the client goes
    /// away without `DELETE`. Returns the session id.
    async fn open_and_abandon(&self) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}});
        let initialized = self.post(None, &initialize).await;
        assert_eq!(initialized.status(), StatusCode::OK);
        let session =
            initialized.headers().get("mcp-session-id").expect("a session").to_str().expect("ascii").to_owned();
        assert!(initialized.text().await.expect("initialize answer").contains("serverInfo"));
        let notice = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&session), &notice).await.status(), StatusCode::ACCEPTED);
        let read =
            json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "cursos://catalogo"}});
        let answer = self.post(Some(&session), &read).await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert!(answer.text().await.expect("read answer").contains("cursos://catalogo"));
        session
    }
}

/// Opens and abandons `count` sessions from [`CONCURRENCY`] clients at once; returns the peak RSS
/// seen meanwhile (KiB) and the sessions' ids, and checks every session got its own id.
async fn open_and_abandon_many(target: &Arc<Target>, count: usize) -> (u64, Vec<String>) {
    let peak = Arc::new(AtomicU64::new(resident_kib(target.pid)));
    let sessions = Arc::new(Mutex::new(HashSet::new()));
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|worker| {
            let (target, peak, sessions) = (target.clone(), peak.clone(), sessions.clone());
            tokio::spawn(async move {
                for _ in (worker..count).step_by(CONCURRENCY) {
                    let session = target.open_and_abandon().await;
                    sessions.lock().expect("sessions").insert(session);
                    peak.fetch_max(resident_kib(target.pid), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for worker in workers {
        tokio::time::timeout(PATIENCE, worker).await.expect("sessions opened in time").expect("no panic");
    }
    let sessions: Vec<String> = sessions.lock().expect("sessions").drain().collect();
    assert_eq!(sessions.len(), count, "one session per initialize");
    (peak.load(Ordering::Relaxed), sessions)
}

/// Polls `/health` until the session manager and the hub hold no session; returns how long it took.
async fn wait_until_reclaimed(backend: &Backend) -> std::time::Duration {
    let started = tokio::time::Instant::now();
    loop {
        let health = backend.health().await;
        if health["sessions"] == 0 && health["subscriptions"]["sessions"] == 0 {
            return started.elapsed();
        }
        assert!(started.elapsed() < PATIENCE, "idle sessions were not reclaimed: {health}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_sessions_are_reclaimed_and_memory_stays_flat() {
    let (_folder, database) = fresh_database();
    // One key opens every session here: the per-key cap (ADR 0023) is raised so that memory per
    // session is what this measures.
    let backend =
        start_backend_with(&database, Some(KEY), &[("SESSION_IDLE_TIMEOUT", "3"), ("MAX_SESSIONS_PER_KEY", "10000")])
            .await;
    let target = Arc::new(Target::of(&backend));
    let started_kib = resident_kib(target.pid);
    // After each cycle, every session reclaimed: (peak RSS while opening, RSS once reclaimed, sessions
    // still open when the cycle's last one was opened, time to reclaim them).
    let mut cycles = Vec::new();
    for _ in 0..CYCLES {
        let (peak_kib, _) = open_and_abandon_many(&target, SESSIONS_PER_CYCLE).await;
        let still_open = backend.health().await["sessions"].as_u64().expect("stateful: a session count");
        let reclaimed_in = wait_until_reclaimed(&backend).await;
        cycles.push((peak_kib, resident_kib(target.pid), still_open, reclaimed_in));
    }
    eprintln!(
        "soak: RSS at start {started_kib} KiB; {CYCLES} cycles of {SESSIONS_PER_CYCLE} abandoned sessions \
         (peak KiB, reclaimed KiB, still open after the last, reclaimed in): {cycles:?}"
    );
    let warm_kib = cycles[WARM_UP_CYCLES - 1].1;
    // Measured as the sessions are reclaimed, the RSS may still hold the pages just freed: the
    // allocator gives them back after its decay (ADR 0049). Polled, as the bursts' test does.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut end_kib = cycles[CYCLES - 1].1;
    while end_kib >= warm_kib + RSS_GROWTH_BOUND_KIB && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        end_kib = resident_kib(target.pid);
    }
    assert!(
        end_kib < warm_kib + RSS_GROWTH_BOUND_KIB,
        "memory grew by {} KiB over {} abandoned sessions after the warm-up: {cycles:?}",
        end_kib.saturating_sub(warm_kib),
        SESSIONS_PER_CYCLE * (CYCLES - WARM_UP_CYCLES)
    );

    let client = backend.client(Era::Initialize).await;
    assert!(!client.list_all_tools().await.expect("still serving").is_empty());
    client.cancel().await.expect("close");
    assert!(backend.stop().await.success());
}

/// Sessions per burst, and bursts, in [`memory_after_bursts_of_closed_sessions_goes_back`].
const BURST: usize = 600;
const BURSTS: usize = 3;
/// The RSS a warm backend must come back to after the bursts, as a share of what it was before.
/// The target is 1.2 (met in `bench/session_bursts.py` after five bursts of 2,000, release and
/// debug figures in `bench/RESULTS.md`); here, beside other tests on a shared machine, 1.5, which
/// still fails plainly on the allocator that kept the pages (glibc: 8× after three bursts of
/// 2,000). What stays under it is attributed in ADR 0049: jemalloc's metadata for the most extents
/// it held and partly used slabs; the maps that held the sessions shrink back (their own unit tests);
/// the workers' thread caches are flushed once the server is quiet (ADR 0065, `apps/backend/tests/allocator.rs`).
const BACK_WITHIN: f64 = 1.5;

/// Issue 24, item 7 (ADR 0046): bursts of sessions opened together and closed (`DELETE`). With
/// glibc's malloc the backend kept the freed pages (three bursts of 2,000 took it from 30 to 243
/// MiB); with jemalloc's background threads it comes back, within the allocator's decay (10 s),
/// near its RSS before the first burst ([`BACK_WITHIN`]). RSS is read from `/proc`, polled (bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_after_bursts_of_closed_sessions_goes_back() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some(KEY), &[("MAX_SESSIONS_PER_KEY", "10000")]).await;
    let target = Arc::new(Target::of(&backend));
    let close_all = |sessions: Vec<String>| {
        let target = target.clone();
        async move {
            for session in sessions {
                let closed = target
                    .http
                    .delete(&target.mcp_url)
                    .header("authorization", &target.bearer)
                    .header("mcp-protocol-version", "2025-11-25")
                    .header("mcp-session-id", &session)
                    .send()
                    .await
                    .expect("DELETE");
                assert_eq!(closed.status(), StatusCode::NO_CONTENT);
            }
        }
    };
    // Warm: the pool's connections and their page caches, the runtime's threads.
    let (_, warm) = open_and_abandon_many(&target, 64).await;
    close_all(warm).await;
    wait_until_reclaimed(&backend).await;
    let before_kib = resident_kib(target.pid);
    let mut bursts = Vec::new();
    for _ in 0..BURSTS {
        let (peak_kib, sessions) = open_and_abandon_many(&target, BURST).await;
        close_all(sessions).await;
        wait_until_reclaimed(&backend).await;
        bursts.push((peak_kib, resident_kib(target.pid)));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let bound_kib = (before_kib as f64 * BACK_WITHIN) as u64;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut now_kib = resident_kib(target.pid);
    while now_kib > bound_kib && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        now_kib = resident_kib(target.pid);
    }
    eprintln!(
        "bursts: RSS before {before_kib} KiB; {BURSTS} bursts of {BURST} sessions (peak, all closed) {bursts:?}; \
         then {now_kib} KiB"
    );
    assert!(
        now_kib <= bound_kib,
        "after {BURSTS} bursts of {BURST} closed sessions the RSS stayed at {now_kib} KiB, over {BACK_WITHIN} × \
         {before_kib} KiB before the first: {bursts:?}"
    );
    assert!(backend.stop().await.success());
}

/// Writers at once in [`the_threads_a_burst_of_writes_started_end_soon_after_it`], and creates each.
const WRITERS: usize = 48;
const CREATES_PER_WRITER: usize = 12;
/// How long after a burst its threads may still be there: the apps keep an idle blocking-pool
/// thread 1 s (`mcp_server::setup::BLOCKING_THREAD_KEEP_ALIVE`), tokio's default 10 s. A bound
/// for the poll below, well under the default, never a measure of speed.
const THREADS_GONE_WITHIN: std::time::Duration = std::time::Duration::from_secs(6);

/// Issue 26 (memory for reads after writes): every write waits for the store on a thread of the
/// runtime's blocking pool, so a burst of writes at 48 connections starts dozens of threads, each
/// with its stack and its allocator cache. They end soon after the burst instead of holding that
/// memory for tokio's default 10 s. Thread counts are read from `/proc`, polled (bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threads_a_burst_of_writes_started_end_soon_after_it() {
    let (_folder, database) = fresh_database();
    let backend = start_backend_with(&database, Some(KEY), &[("SESSION_MODE", "stateless")]).await;
    let target = Arc::new(Target::of(&backend));
    let before = thread_count(target.pid);
    let peak = Arc::new(AtomicU64::new(before));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (target, peak) = (target.clone(), peak.clone());
            tokio::spawn(async move {
                for number in 0..CREATES_PER_WRITER {
                    let create = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                        "name": "criar_curso",
                        "arguments": {"titulo": format!("Curso {writer} {number}"), "cargaHoraria": 10}}});
                    let answer = target.post(None, &create).await;
                    assert_eq!(answer.status(), StatusCode::OK);
                    let text = answer.text().await.expect("an answer");
                    assert!(text.contains("structuredContent") && !text.contains("\"isError\":true"), "{text}");
                    peak.fetch_max(thread_count(target.pid), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for writer in writers {
        tokio::time::timeout(PATIENCE, writer).await.expect("the writes answered in time").expect("no panic");
    }
    let (peak, burst_ended) = (peak.load(Ordering::Relaxed), tokio::time::Instant::now());
    // How many depends on how many writes the machine keeps in flight at once: a few at least.
    assert!(peak >= before + 3, "a burst of {WRITERS} writers started threads: {before} before, {peak} at most");
    let mut now = thread_count(target.pid);
    while now > before + 1 && burst_ended.elapsed() < THREADS_GONE_WITHIN {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        now = thread_count(target.pid);
    }
    eprintln!("threads: {before} before, {peak} during {WRITERS} writers, {now} after {:?}", burst_ended.elapsed());
    assert!(
        now <= before + 1,
        "{THREADS_GONE_WITHIN:?} after a burst of writes the backend still had {now} threads ({before} before, \
         {peak} during it)"
    );
    assert!(backend.stop().await.success());
}

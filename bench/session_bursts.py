"""Memory after bursts of sessions (issue 24, item 7): a stateful backend on a fresh SQLite file; its
RSS (VmRSS) before the first burst, then after each of CYCLES bursts of SESSIONS sessions opened
(`initialize` + `notifications/initialized`, all open at once) and closed (`DELETE`), and after the
last one closed. Prints one line per measure and the ratio of the final RSS to the first.

    BIN=target/release/mcp-cursos-backend python3 bench/session_bursts.py
    CYCLES=5 SESSIONS=2000 CONNECTIONS=8 WARMUP=64 SETTLE=3 ...   (the defaults)

A measurement, not a test: after a burst it polls /health until no session is open. STATS=1 (on a
build with tikv-jemallocator's `stats` feature, gdb installed) also prints jemalloc's own totals
before the first burst and after the last, and keeps its full statistics beside the database.
FLUSH=1 (gdb) then has every thread flush its jemalloc thread cache and purges the arenas, and
prints the RSS after (with STATS=1, jemalloc's totals again); SMAPS=1 keeps /proc's smaps then."""
import http.client, json, os, socket, subprocess, sys, tempfile, threading, time

BIN = os.environ.get("BIN", "target/release/mcp-cursos-backend")
CYCLES, SESSIONS = int(os.environ.get("CYCLES", 5)), int(os.environ.get("SESSIONS", 2000))
CONNECTIONS = int(os.environ.get("CONNECTIONS", 8))
WARMUP = int(os.environ.get("WARMUP", 64))
SETTLE = float(os.environ.get("SETTLE", 3))  # seconds between the last close and the measure
KEY = "chave-das-rajadas-de-sessoes"
folder = tempfile.mkdtemp(prefix="session-bursts-")
with socket.socket() as free:
    free.bind(("127.0.0.1", 0))
    PORT = free.getsockname()[1]
env = dict(PATH=os.environ["PATH"], HOST="127.0.0.1", PORT=str(PORT), DATABASE_PATH=folder + "/c.db", API_KEY=KEY,
           SESSION_MODE="stateful", MAX_SESSIONS_PER_KEY=str(SESSIONS + 10), RUST_LOG="warn",
           **{k: v for k, v in os.environ.items() if k in ("MALLOC_ARENA_MAX", "_RJEM_MALLOC_CONF")})
backend = subprocess.Popen(os.environ.get("WRAP", "").split() + [BIN], env=env, stdout=subprocess.DEVNULL, stderr=open(folder + "/log", "w"))


def rss_mib() -> float:
    with open(f"/proc/{backend.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def jemalloc_stats(when: str) -> None:
    """Diagnosis (STATS=1, on a build with tikv-jemallocator's `stats` feature): gdb calls jemalloc's
    `malloc_stats_print` in the process; its totals (allocated, active, metadata, resident, mapped,
    retained) go to the backend's log, and their line is printed here."""
    if not os.environ.get("STATS"):
        return
    log = folder + "/log"
    start = os.path.getsize(log)
    subprocess.run(["gdb", "-p", str(backend.pid), "-batch", "-ex", "call (void) _rjem_malloc_stats_print(0, 0, 0)"],
                   capture_output=True)
    with open(log) as text:
        text.seek(start)
        dump = text.read()
    with open(f"{folder}/jemalloc-{when}.txt", "w") as out:
        out.write(dump)
    for line in dump.splitlines():
        if line.startswith("Allocated:"):
            print(f"  jemalloc {when} ({folder}/jemalloc-{when}.txt): {line.strip()}", flush=True)


def flush_caches(when: str) -> None:
    """Diagnosis (FLUSH=1, gdb installed): gdb has every thread flush its jemalloc thread cache
    (`thread.tcache.flush`) and then purges every arena (`arena.4096.purge`); prints the RSS before
    and after, so what the threads' caches pinned is measured apart from the rest."""
    if not os.environ.get("FLUSH"):
        return
    held = rss_mib()
    subprocess.run(["gdb", "-p", str(backend.pid), "-batch",
                    "-ex", 'thread apply all call (int) _rjem_mallctl("thread.tcache.flush", 0, 0, 0, 0)',
                    "-ex", 'call (int) _rjem_mallctl("arena.4096.purge", 0, 0, 0, 0)'], capture_output=True)
    time.sleep(1)
    print(f"  {when}: {held:.1f} MiB, with every thread cache flushed and the arenas purged {rss_mib():.1f} MiB", flush=True)
    jemalloc_stats(f"{when}-flushed")
    if os.environ.get("SMAPS"):
        with open(f"/proc/{backend.pid}/smaps") as src, open(f"{folder}/smaps-{when}.txt", "w") as out:
            out.write(src.read())
        print(f"  smaps: {folder}/smaps-{when}.txt", flush=True)


def open_sessions() -> int:
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request("GET", "/health")
    sessions = json.loads(c.getresponse().read())["sessions"]
    c.close()
    return sessions


HEADERS = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream", "Host": f"127.0.0.1:{PORT}"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "rajada", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def worker(count: int, ids: list) -> None:
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    for _ in range(count):
        c.request("POST", "/mcp", INITIALIZE, HEADERS)
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
        sid = r.getheader("mcp-session-id")
        c.request("POST", "/mcp", INITIALIZED, {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        r = c.getresponse(); r.read()
        ids.append(sid)
    c.close()


def closer(ids: list) -> None:
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    for sid in ids:
        c.request("DELETE", "/mcp", None, {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
        r = c.getresponse(); r.read()
    c.close()


def parallel(target, args_list):
    threads = [threading.Thread(target=target, args=args) for args in args_list]
    for t in threads: t.start()
    for t in threads: t.join()


for _ in range(300):
    try:
        open_sessions(); break
    except OSError:
        time.sleep(0.05)
# A warm server: a few sessions opened and closed first (the pool's connections opened, their
# page caches, the runtime's worker threads), so the bursts measure what sessions keep.
warm = [[] for _ in range(CONNECTIONS)]
parallel(worker, [(WARMUP // CONNECTIONS, ids) for ids in warm])
parallel(closer, [(ids,) for ids in warm])
time.sleep(SETTLE)
first = rss_mib()
print(f"before the first burst (after {WARMUP} sessions opened and closed): {first:.1f} MiB", flush=True)
jemalloc_stats("before")
flush_caches("before")
for cycle in range(1, CYCLES + 1):
    per = [[] for _ in range(CONNECTIONS)]
    parallel(worker, [(SESSIONS // CONNECTIONS, ids) for ids in per])
    peak = rss_mib()
    parallel(closer, [(ids,) for ids in per])
    deadline = time.time() + 60
    while open_sessions() and time.time() < deadline:
        time.sleep(0.1)
    closed = rss_mib()
    time.sleep(SETTLE)
    print(f"burst {cycle}: {SESSIONS} open {peak:.1f} MiB, all closed {closed:.1f} MiB, {SETTLE} s later {rss_mib():.1f} MiB",
          flush=True)
last = rss_mib()
print(f"after {CYCLES} bursts: {last:.1f} MiB = {last / first:.2f}x the RSS before the first", flush=True)
jemalloc_stats("after")
flush_caches("after")
if os.environ.get("TRIM"):  # diagnosis: what glibc would give back (gdb calls malloc_trim(0) in the process)
    subprocess.run(["gdb", "-p", str(backend.pid), "-batch", "-ex", "call (int) malloc_trim(0)"], capture_output=True)
    print(f"after malloc_trim(0): {rss_mib():.1f} MiB", flush=True)
backend.terminate(); backend.wait()

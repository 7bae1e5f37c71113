#!/usr/bin/env bash
# The backend's resident memory and threads around a burst of writes (issue 26, ADR 0062): a
# stateless backend on a fresh SQLite file, 2 s of catalog reads, then 3 s of `criar_curso` at 50
# connections (wrk), then its VmRSS and thread count every 3 s for 14 s. Each write waits for the
# store on a thread of the runtime's blocking pool: this shows how many the burst started and how
# long they (and their memory) stay. Nothing is asserted (the test is `soak::the_threads_a_burst_of_writes_started_end_soon_after_it`).
#
# Usage: BIN=target/release/mcp-cursos-backend bash bench/threads_after_writes.sh
# Needs wrk as `bench/run.sh` installs it (run that once; it unpacks wrk under target/test-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-target/release/mcp-cursos-backend}"
TOOLS="$PWD/target/test-tools"
WRK="$TOOLS/wrk/root/usr/bin/wrk"
export LD_LIBRARY_PATH="$TOOLS/wrk/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ -x "$WRK" ]] || { echo "no wrk under $TOOLS: run bench/run.sh once" >&2; exit 1; }
FOLDER="$(mktemp -d)"
KEY="bench_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
env API_KEY="$KEY" HOST=127.0.0.1 PORT=0 RUST_LOG=warn,mcp_cursos_backend=info SESSION_MODE=stateless \
  DATABASE_PATH="$FOLDER/cursos.db" "$BIN" >"$FOLDER/log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null; rm -rf "$FOLDER"' EXIT
deadline=$((SECONDS + 60))
until URL="$(grep -so 'http://127\.0\.0\.1:[0-9]*/mcp' "$FOLDER/log" | sed -n 1p)" && [[ -n "$URL" ]]; do
  kill -0 "$PID" 2>/dev/null || { tail -5 "$FOLDER/log" >&2; exit 1; }
  (( SECONDS < deadline )) || { echo "the backend did not start in 60 s" >&2; exit 1; }
  sleep 0.1
done
state() {
  echo "$1: VmRSS $(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status") kB, threads $(awk '/^Threads:/ {print $2}' "/proc/$PID/status")"
}
state "started"
BENCH_OP=read BENCH_URI=cursos://catalogo BENCH_SESSION= BENCH_KEY="$KEY" \
  "$WRK" -t 2 -c 50 -d 2s -s bench/load/mcp.lua "$URL" | grep -o '"rps":[0-9.]*'
state "after 2 s of reads"
BENCH_OP=create BENCH_URI= BENCH_SESSION= BENCH_KEY="$KEY" BENCH_TAG="threads $RANDOM" \
  "$WRK" -t 2 -c 50 -d 3s -s bench/load/mcp.lua "$URL" | grep -o '"rps":[0-9.]*'
for after in 0 3 6 9 12; do
  state "${after} s after 3 s of creates"
  sleep 3
done

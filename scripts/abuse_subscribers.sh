#!/usr/bin/env bash
# Abuse run for live updates (bounded, loopback only): stuck 2025-era sessions and 2026-07-28 listen
# streams that never read, and oversized listen filters, against a real backend while a
# well-behaved client of each era is told of every write. Prints the backend's resident memory
# before, during and after, and whether the well-behaved clients heard of every write (exit 1 if
# not). The driver is scripts/abuse_subscribers.py (Python standard library only).
#
#   bash scripts/abuse_subscribers.sh                                   # release binary (built if needed)
#   BACKEND_BIN=target/debug/mcp-cursos-backend bash scripts/abuse_subscribers.sh
#   ABUSE_KEYS=8 ABUSE_WRITES=600 bash scripts/abuse_subscribers.sh
#
# Settings (environment): ABUSE_KEYS (4 read-only abuser keys), ABUSE_SESSION_URIS (1000 pages per
# stuck session), ABUSE_STREAMS_PER_KEY (4), ABUSE_STREAM_URIS (250 pages per stuck stream),
# ABUSE_WRITES (600), ABUSE_NOTICE_DEADLINE (5 s), ABUSE_HOLD_SECONDS (12), BACKEND_BIN.
# The whole run is bounded by `timeout` (300 s). Figures: docs/faults.md.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

if [[ -z "${BACKEND_BIN:-}" ]]; then
  cargo build --release --locked --quiet -p mcp-cursos-backend
  BACKEND_BIN="$ROOT/target/release/mcp-cursos-backend"
fi
export BACKEND_BIN
exec timeout --kill-after=10 300 python3 "$ROOT/scripts/abuse_subscribers.py"

#!/usr/bin/env bash
# Soak run (bounded, loopback only): opens and abandons MCP sessions on a real backend for
# SOAK_SECONDS, sampling its resident memory and /health; fails if memory does not stay flat or
# idle sessions are not reclaimed. The driver is scripts/soak.py (Python standard library only).
#
#   bash scripts/soak.sh                       # 120 s on the release binary (built if needed)
#   SOAK_SECONDS=180 bash scripts/soak.sh
#   BACKEND_BIN=target/debug/mcp-cursos-backend SOAK_SECONDS=30 bash scripts/soak.sh
#
# Settings (environment): SOAK_SECONDS (120), SOAK_IDLE_TIMEOUT (2, seconds), SOAK_WARMUP_SECONDS
# (a quarter of the run, 5 to 30), SOAK_WORKERS (4), SOAK_RATE (200 sessions/s in all),
# SOAK_RSS_BOUND_MB (16), BACKEND_BIN.
# The whole run is bounded by `timeout` (SOAK_SECONDS + 180 s). Figures: docs/faults.md.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

SOAK_SECONDS="${SOAK_SECONDS:-120}"
if [[ -z "${BACKEND_BIN:-}" ]]; then
  cargo build --release --locked --quiet -p mcp-cursos-backend
  BACKEND_BIN="$ROOT/target/release/mcp-cursos-backend"
fi
export SOAK_SECONDS BACKEND_BIN
exec timeout --kill-after=10 "$((SOAK_SECONDS + 180))" python3 "$ROOT/scripts/soak.py"

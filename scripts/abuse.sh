#!/usr/bin/env bash
# Connection abuse run (bounded, loopback only): a client without a key holds 1,200 idle and 100
# slowloris connections on a real backend with default settings for ABUSE_SECONDS, reopening each
# one the server closes, while a well-behaved client calls /health and an MCP read with its key;
# prints the backend's RSS before, during and after and whether the well-behaved client was served
# every time (it fails otherwise). The driver is scripts/abuse.py (Python standard library only).
#
#   bash scripts/abuse.sh                      # 30 s on the release binary (built if needed)
#   BACKEND_BIN=target/debug/mcp-cursos-backend ABUSE_SECONDS=60 bash scripts/abuse.sh
#
# Settings (environment): ABUSE_SECONDS (30), ABUSE_IDLE (1200), ABUSE_SLOWLORIS (100),
# ABUSE_SOFT_NOFILE (1024: the backend starts with this soft open-files limit and raises it),
# ABUSE_SETTLE_SECONDS (5), BACKEND_BIN.
# The whole run is bounded by `timeout` (ABUSE_SECONDS + 120 s). Figures: docs/faults.md.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

ABUSE_SECONDS="${ABUSE_SECONDS:-30}"
if [[ -z "${BACKEND_BIN:-}" ]]; then
  cargo build --release --locked --quiet -p mcp-cursos-backend
  BACKEND_BIN="$ROOT/target/release/mcp-cursos-backend"
fi
export ABUSE_SECONDS BACKEND_BIN
exec timeout --kill-after=10 "$((ABUSE_SECONDS + 120))" python3 "$ROOT/scripts/abuse.py"

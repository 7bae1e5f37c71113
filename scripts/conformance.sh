#!/usr/bin/env bash
# Runs the official MCP conformance suite against mcp-cursos-backend (see interop/README.md).
#
#   1. @modelcontextprotocol/conformance@0.1.16 `server --suite all` (2025-11-25 wire) against the
#      backend in SESSION_MODE=stateful, with conformance/expected-failures.yml;
#   2. if the prerelease 0.2.0-alpha.12 is installed:
#      - `server --requirements 2026-07-28` (server-stateless, caching, http-header-validation,
#        sep-2164-resource-not-found, ... at the 2026-07-28 wire) against SESSION_MODE=stateless and
#        again against SESSION_MODE=stateful, with conformance/expected-failures-2026-07-28.yml;
#      - `server --scenario server-session-lifecycle` (2025-11-25: DELETE, then 404) against
#        SESSION_MODE=stateful, with no expected failure.
#
# The suite cannot send headers, so the backend runs with NO_AUTH=true on 127.0.0.1 (a mode it
# refuses on any other address), on a free port, with a throwaway database. Results (checks.json
# per scenario) and logs are kept in target/conformance/. Needs scripts/install-test-tools.sh and
# the debug binaries (cargo build -p mcp-cursos-stdio -p mcp-cursos-backend).
# Last line: `conformance: N passed, M failed` (scenarios; expected failures are in neither count).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
load_tools conformance
need_binaries conformance

# Settings a developer may have exported that would change what the suite sees (scripts/lib.sh
# clears the others; a RATE_LIMIT would turn scenarios into 429s).
unset KEYS_FILE UNCONFIRMED_ARCHIVE RATE_LIMIT SESSION_IDLE_TIMEOUT

OUT="$ROOT/target/conformance"
rm -rf "$OUT"
mkdir -p "$OUT"
# The log files exist before the backends start, so start_backend's first poll finds them.
: >"$OUT/backend-stateful.log"; : >"$OUT/backend-stateless.log"
DB_DIR="$(mktemp -d)"
cleanup() { stop_all_backends; rm -rf "$DB_DIR"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

PASSED=0 FAILED=0 EXPECTED=0

# suite LABEL JS URL BASELINE|- [suite arguments...]
suite() {
  local label="$1" js="$2" url="$3" baseline="$4"; shift 4
  local dir="$OUT/$label" rc counts
  mkdir -p "$dir"
  local args=(server --url "$url" -o "$dir/results" "$@")
  [[ "$baseline" != - ]] && args+=(--expected-failures "$baseline")
  echo "-- $label: conformance ${args[*]}"
  (cd "$dir" && timeout 600 "$NODE" "$js" "${args[@]}") >"$dir/output.txt" 2>&1
  rc=$?
  sed -i 's/\x1b\[[0-9;]*m//g' "$dir/output.txt"
  grep -E '^[✓✗] ' "$dir/output.txt" | sed 's/^/    /'
  counts="$("$PY" "$ROOT/scripts/conformance_count.py" "$dir/results" "${baseline/#-//dev/null}" "$label")"
  grep -v '^COUNTS ' <<<"$counts"
  read -r _ p f e <<<"$(grep '^COUNTS ' <<<"$counts")"
  if [[ -z "${e:-}" ]]; then
    echo "    ✗ could not count the results of $label"; p=0 f=1 e=0
  fi
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    echo "    ✗ the suite exited with status $rc (see $dir/output.txt):"
    tail -15 "$dir/output.txt" | sed 's/^/      /'
    f=1
  fi
  PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) EXPECTED=$((EXPECTED + e))
}

no_backend() { echo "conformance: 0 passed, 1 failed"; exit 1; }
start_backend conformance "$OUT/backend-stateful.log" NO_AUTH=true SESSION_MODE=stateful \
  DATABASE_PATH="$DB_DIR/stateful.db" || no_backend
STATEFUL_URL="$BACKEND_URL"
start_backend conformance "$OUT/backend-stateless.log" NO_AUTH=true SESSION_MODE=stateless \
  DATABASE_PATH="$DB_DIR/stateless.db" || no_backend
STATELESS_URL="$BACKEND_URL"

suite "$CONFORMANCE_VERSION-all-stateful" "$CONFORMANCE_JS" "$STATEFUL_URL" \
  "$ROOT/conformance/expected-failures.yml" --suite all

if [[ -n "${CONFORMANCE_NEXT_JS:-}" && -f "${CONFORMANCE_NEXT_JS:-}" ]]; then
  suite "$CONFORMANCE_NEXT_VERSION-2026-07-28-stateless" "$CONFORMANCE_NEXT_JS" "$STATELESS_URL" \
    "$ROOT/conformance/expected-failures-2026-07-28.yml" --requirements 2026-07-28
  suite "$CONFORMANCE_NEXT_VERSION-2026-07-28-stateful" "$CONFORMANCE_NEXT_JS" "$STATEFUL_URL" \
    "$ROOT/conformance/expected-failures-2026-07-28.yml" --requirements 2026-07-28
  suite "$CONFORMANCE_NEXT_VERSION-session-lifecycle-stateful" "$CONFORMANCE_NEXT_JS" "$STATEFUL_URL" - \
    --scenario server-session-lifecycle --spec-version 2025-11-25
else
  echo "-- skipped: the 2026-07-28 scenarios need @modelcontextprotocol/conformance@${CONFORMANCE_NEXT_VERSION:-0.2.0-alpha.12}," \
       "which scripts/install-test-tools.sh could not install"
fi

stop_all_backends
echo "conformance: $EXPECTED expected failures (see conformance/*.yml); results in target/conformance/"
echo "conformance: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]

#!/usr/bin/env bash
# Interop tests with independent client SDKs (see interop/README.md):
#   1. Python `mcp` 2.3.0 (interop/python/test_interop.py): stdio, HTTP stateful and HTTP stateless,
#      each on both eras (legacy → 2025-11-25, auto → 2026-07-28);
#   2. Python `mcp` 1.27.2, the v1 SDK (interop/python/test_v1_client.py): the same targets;
#   3. MCP Inspector CLI 2.12.0 (interop/inspector.sh): stdio and HTTP stateful, both eras.
# Two backends run for the whole script (SESSION_MODE=stateful and stateless, with a random
# API_KEY plus a KEYS_FILE holding one `leitura` key made by `mcp-cursos-backend keys create`, on
# free loopback ports, throwaway databases, UNCONFIRMED_ARCHIVE left at its default `refuse`) and
# are stopped on exit.
# Needs scripts/install-test-tools.sh and the debug binaries. Last line: `interop: N passed, M failed`.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
load_tools interop
need_binaries interop

WORK="$(mktemp -d)"
cleanup() { stop_all_backends; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# Settings a developer may have exported that would change what the clients see (scripts/lib.sh
# clears the others): the backends get exactly the settings given below.
unset KEYS_FILE UNCONFIRMED_ARCHIVE RATE_LIMIT SESSION_IDLE_TIMEOUT

export API_KEY="interop-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
no_backend() { echo "interop: 0 passed, 1 failed"; exit 1; }
# A read-only key, made as an operator would; the key is printed once on stdout (the notice on stderr).
if ! LEITURA_KEY="$("$BACKEND_BIN" keys create --name interop-leitura --scope leitura \
    --keys-file "$WORK/keys" 2>"$WORK/keys-create.log")" || [[ -z "$LEITURA_KEY" ]]; then
  echo "interop: keys create failed:"; cat "$WORK/keys-create.log"; no_backend
fi
export LEITURA_KEY
# The log files exist before the backends start, so start_backend's first poll finds them.
: >"$WORK/stateful.log"; : >"$WORK/stateless.log"
start_backend interop "$WORK/stateful.log" API_KEY="$API_KEY" KEYS_FILE="$WORK/keys" SESSION_MODE=stateful \
  DATABASE_PATH="$WORK/stateful.db" || no_backend
STATEFUL_URL="$BACKEND_URL"
start_backend interop "$WORK/stateless.log" API_KEY="$API_KEY" KEYS_FILE="$WORK/keys" SESSION_MODE=stateless \
  DATABASE_PATH="$WORK/stateless.db" || no_backend
STATELESS_URL="$BACKEND_URL"

PASSED=0 FAILED=0
# runner NAME COMMAND...: runs one client's tests, echoing its output, and adds up its last line.
runner() {
  local name="$1"; shift
  local log="$WORK/$name.log" rc line p f
  echo "== interop: $name"
  timeout 600 "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line="$(grep -E '^interop: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)"
  if [[ -z "$line" ]]; then
    echo "  FAIL $name: exited with status $rc without a summary line"
    FAILED=$((FAILED + 1))
    return
  fi
  read -r p f <<<"$(sed -E 's/^interop: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/' <<<"$line")"
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    echo "  FAIL $name: exited with status $rc"
    f=1
  fi
  PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
}

TARGETS=(--stdio "$STDIO_BIN" --http "stateful=$STATEFUL_URL" --http "stateless=$STATELESS_URL")
runner python-mcp-2.3.0 "$PY" "$ROOT/interop/python/test_interop.py" "${TARGETS[@]}"
runner python-mcp-1.27.2 "$PY1" "$ROOT/interop/python/test_v1_client.py" "${TARGETS[@]}"
runner inspector-"$INSPECTOR_VERSION" env INTEROP_HTTP_URL="$STATEFUL_URL" bash "$ROOT/interop/inspector.sh"

# The servers must have logged no panic while serving all of the above.
if grep -l 'panicked' "$WORK"/*.log >/dev/null 2>&1; then
  echo "  FAIL a backend panicked:"; grep -h -A3 'panicked' "$WORK"/*.log | head -20
  FAILED=$((FAILED + 1))
fi

stop_all_backends
echo "interop: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]

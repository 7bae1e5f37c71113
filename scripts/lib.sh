# Helpers shared by scripts/conformance.sh and scripts/interop.sh (sourced, not run).
# Requires: ROOT set to the repository root.

BACKEND_BIN="${BACKEND_BIN:-$ROOT/target/debug/mcp-cursos-backend}"
STDIO_BIN="${STDIO_BIN:-$ROOT/target/debug/mcp-cursos-stdio}"

load_tools() {
  local env="$ROOT/target/test-tools/env.sh"
  if [[ ! -f "$env" ]]; then
    echo "$1: test tools missing; run: bash scripts/install-test-tools.sh" >&2
    exit 1
  fi
  # shellcheck disable=SC1090
  . "$env"
}

need_binaries() {
  local b
  for b in "$BACKEND_BIN" "$STDIO_BIN"; do
    if [[ ! -x "$b" ]]; then
      echo "$1: $b not built; run: cargo build -p mcp-cursos-stdio -p mcp-cursos-backend" >&2
      exit 1
    fi
  done
}

# start_backend NAME LOG [VAR=VALUE ...]: starts the backend on 127.0.0.1 with a free port and the
# given environment, polls its log for the "listening url=..." line, and sets BACKEND_PID and
# BACKEND_URL. Every started pid is remembered in BACKEND_PIDS for stop_all_backends.
BACKEND_PIDS=()
start_backend() {
  local name="$1" log="$2"; shift 2
  # Settings that may be exported in the caller's shell are cleared first, so only "$@" applies.
  : >"$log"   # exists before it is polled
  env -u API_KEY -u NO_AUTH -u SESSION_MODE -u RESOURCE_TOOLS -u ALLOWED_HOSTS -u ALLOWED_ORIGINS \
    -u DATABASE_PATH -u KEYS_FILE -u RATE_LIMIT -u UNCONFIRMED_ARCHIVE -u METRICS -u SESSION_IDLE_TIMEOUT \
    -u MAX_SESSIONS_PER_KEY -u MAX_CONNECTIONS -u HEADER_READ_TIMEOUT -u WRITE_STALL_TIMEOUT \
    -u MAX_CONNECTIONS_PER_ADDRESS -u MAX_CONNECTIONS_PER_KEY \
    HOST=127.0.0.1 PORT=0 RUST_LOG="${RUST_LOG:-info,rmcp=warn}" "$@" "$BACKEND_BIN" \
    >"$log" 2>&1 &
  BACKEND_PID=$!
  BACKEND_PIDS+=("$BACKEND_PID")
  BACKEND_URL=""
  local i
  for ((i = 0; i < 300; i++)); do           # up to 30 s, polling every 0.1 s
    BACKEND_URL="$(sed -n 's/.*mcp-cursos-backend listening url=\(http:[^ ]*\).*/\1/p' "$log" | head -1)"
    [[ -n "$BACKEND_URL" ]] && return 0
    if ! kill -0 "$BACKEND_PID" 2>/dev/null; then
      echo "$name: backend exited before listening; its log:" >&2; cat "$log" >&2; return 1
    fi
    sleep 0.1
  done
  echo "$name: backend did not report its url within 30 s; its log:" >&2; cat "$log" >&2
  return 1
}

# stop_backend PID: SIGTERM, wait up to 5 s, then SIGKILL.
stop_backend() {
  local pid="$1" i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

stop_all_backends() {
  local pid
  for pid in "${BACKEND_PIDS[@]}"; do stop_backend "$pid"; done
  BACKEND_PIDS=()
}

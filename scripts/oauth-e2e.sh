#!/usr/bin/env bash
# The OAuth end-to-end suite (issue 23, interop/oauth/README.md): real parts nobody on this project wrote.
#   1. a real authorization server, oidc-provider 9.13.3 (interop/oauth/as.mjs), on a free loopback port;
#   2. two backends (target/debug/mcp-cursos-backend, SESSION_MODE=stateful and stateless) with OAuth on
#      (OAUTH_ISSUER = that AS, OAUTH_RESOURCE = their own /mcp URL, OAUTH_CATALOG_CLAIM=tenant), throwaway
#      SQLite files;
#   3. on each backend, the official SDKs' OAuth clients, both eras: TS @modelcontextprotocol/sdk 1.32.2
#      (2025-11-25) and @modelcontextprotocol/client 2.4.0 (legacy → 2025-11-25, auto → 2026-07-28),
#      Python mcp 2.3.0 (legacy and auto) and mcp 1.27.2 (2025-11-25); DCR and the pre-registered client
#      (and the TS v2 ClientCredentialsProvider as the machine client `mcp-machine`);
#   4. interop/oauth/negative.py, which starts its own AS and backend pairs (wrong audience, issuer,
#      signature, alg none, unknown kid, expiry, scope, tenant, query string, key + token, introspection,
#      AS outage, session swap, and no token in any log).
# Builds nothing: needs scripts/install-test-tools.sh and `cargo build -p mcp-cursos-backend`.
# Every process it starts is stopped on exit. Last line: `oauth-e2e: N passed, M failed`; non-zero on failure.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
load_tools oauth-e2e
if [[ ! -x "$BACKEND_BIN" ]]; then
  echo "oauth-e2e: $BACKEND_BIN not built; run: cargo build -p mcp-cursos-backend" >&2
  exit 1
fi
[[ -n "${OAUTH_NODE_MODULES:-}" && -d "$OAUTH_NODE_MODULES/oidc-provider" ]] \
  || { echo "oauth-e2e: no oidc-provider in target/test-tools; run: bash scripts/install-test-tools.sh" >&2; exit 1; }
export OAUTH_NODE_MODULES

# OAuth settings a developer may have exported: the backends get exactly the ones given below.
unset API_KEY KEYS_FILE OAUTH_ISSUER OAUTH_RESOURCE OAUTH_CATALOG_CLAIM OAUTH_CATALOG OAUTH_READ_SCOPE \
  OAUTH_WRITE_SCOPE OAUTH_INTROSPECTION_CLIENT_ID OAUTH_INTROSPECTION_CLIENT_SECRET OAUTH_LEEWAY_SECONDS \
  OAUTH_JWKS_FETCHES_PER_MINUTE

WORK="$(mktemp -d)"
AS_PIDS=()
cleanup() {
  local pid
  stop_all_backends
  # Each AS runs in its own process group (setsid): end the group, not a name.
  for pid in "${AS_PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${AS_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_as OUT ARGS...: as.mjs in its own process group; waits (polls) for its JSON line in OUT and sets
# AS_JSON to it. Not to be called in $(...): AS_PIDS must be this shell's, for cleanup.
start_as() {
  local out="$1" i pid; shift
  : >"$out"
  setsid "$NODE" "$ROOT/interop/oauth/as.mjs" "$@" >"$out" 2>"$out.err" </dev/null &
  pid=$!
  AS_PIDS+=("$pid")
  for ((i = 0; i < 300; i++)); do           # up to 30 s, polling every 0.1 s
    [[ -s "$out" ]] && { AS_JSON="$(head -1 "$out")"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "oauth-e2e: as.mjs did not start:" >&2; cat "$out.err" >&2
  return 1
}
json_field() { "$PY" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
no_start() { echo "oauth-e2e: 0 passed, 1 failed"; exit 1; }

STATEFUL_PORT="$(free_port)" STATELESS_PORT="$(free_port)"
STATEFUL_RESOURCE="http://127.0.0.1:$STATEFUL_PORT/mcp"
STATELESS_RESOURCE="http://127.0.0.1:$STATELESS_PORT/mcp"
# One AS for both backends: each backend's URL is an allowed resource (RFC 8707).
start_as "$WORK/as.json" --resource "$STATEFUL_RESOURCE" --other-resource "$STATELESS_RESOURCE" || no_start
ISSUER="$(json_field "$AS_JSON" issuer)"
echo "oauth-e2e: oidc-provider $OIDC_PROVIDER_VERSION at $ISSUER"

for mode in stateful stateless; do
  if [[ $mode == stateful ]]; then port=$STATEFUL_PORT resource=$STATEFUL_RESOURCE; else port=$STATELESS_PORT resource=$STATELESS_RESOURCE; fi
  start_backend oauth-e2e "$WORK/$mode.log" PORT="$port" SESSION_MODE="$mode" DATABASE_PATH="$WORK/$mode.db" \
    OAUTH_ISSUER="$ISSUER" OAUTH_RESOURCE="$resource" OAUTH_CATALOG_CLAIM=tenant || no_start
  [[ "$BACKEND_URL" == "$resource" ]] || { echo "oauth-e2e: backend at $BACKEND_URL, expected $resource"; no_start; }
done

PASSED=0 FAILED=0
# runner NAME COMMAND...: runs one client or suite, echoing its output, and adds up its last line.
runner() {
  local name="$1"; shift
  local log="$WORK/run-$name.log" rc line p f
  echo "== oauth-e2e: $name"
  timeout 900 "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line="$(grep -E '^oauth-[a-z]+: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)"
  if [[ -z "$line" ]]; then
    echo "  FAIL $name: exited with status $rc without a summary line"
    FAILED=$((FAILED + 1))
    return
  fi
  read -r p f <<<"$(sed -E 's/^oauth-[a-z]+: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/' <<<"$line")"
  if [[ $rc -ne 0 && $f -eq 0 ]]; then
    echo "  FAIL $name: exited with status $rc"
    f=1
  fi
  PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
  SUMMARY+=("$(printf '%-44s %3d passed, %d failed' "$name" "$p" "$f")")
}
SUMMARY=()

TS="$ROOT/interop/oauth/ts_client.mjs" PYC="$ROOT/interop/oauth/py_client.py"
for mode in stateful stateless; do
  if [[ $mode == stateful ]]; then url=$STATEFUL_RESOURCE; else url=$STATELESS_RESOURCE; fi
  runner "$mode-ts-sdk-$TS_SDK_VERSION-dcr" "$NODE" "$TS" --url "$url" --sdk v1 --expect-version 2025-11-25
  runner "$mode-ts-sdk-$TS_SDK_VERSION-pre-bob" "$NODE" "$TS" --url "$url" --sdk v1 --registration pre \
    --user bob --tenant beta --expect-version 2025-11-25
  runner "$mode-ts-client-$TS_CLIENT_VERSION-legacy-dcr" "$NODE" "$TS" --url "$url" --sdk v2 --mode legacy \
    --expect-version 2025-11-25
  runner "$mode-ts-client-$TS_CLIENT_VERSION-auto-pre" "$NODE" "$TS" --url "$url" --sdk v2 --mode auto \
    --registration pre --expect-version 2026-07-28
  runner "$mode-ts-client-$TS_CLIENT_VERSION-auto-dcr-bob" "$NODE" "$TS" --url "$url" --sdk v2 --mode auto \
    --user bob --tenant beta --expect-version 2026-07-28
  runner "$mode-ts-client-$TS_CLIENT_VERSION-legacy-machine" "$NODE" "$TS" --url "$url" --sdk v2 --mode legacy \
    --registration machine --expect-version 2025-11-25
  runner "$mode-ts-client-$TS_CLIENT_VERSION-auto-machine" "$NODE" "$TS" --url "$url" --sdk v2 --mode auto \
    --registration machine --expect-version 2026-07-28
  runner "$mode-py-mcp-2.3.0-legacy-dcr" "$PY" "$PYC" --url "$url" --mode legacy --expect-version 2025-11-25
  runner "$mode-py-mcp-2.3.0-auto-pre" "$PY" "$PYC" --url "$url" --mode auto --registration pre \
    --expect-version 2026-07-28
  runner "$mode-py-mcp-2.3.0-auto-dcr-bob" "$PY" "$PYC" --url "$url" --mode auto --user bob --tenant beta \
    --expect-version 2026-07-28
  runner "$mode-py-mcp-1.27.2-dcr" "$PY1" "$PYC" --url "$url" --expect-version 2025-11-25
  runner "$mode-py-mcp-1.27.2-pre-bob" "$PY1" "$PYC" --url "$url" --registration pre --user bob --tenant beta \
    --expect-version 2025-11-25
done

# The backends must have logged no panic and no access token while serving all of the above.
if grep -l 'panicked' "$WORK"/stateful.log "$WORK"/stateless.log >/dev/null 2>&1; then
  echo "  FAIL a backend panicked:"; grep -h -A3 'panicked' "$WORK"/stateful.log "$WORK"/stateless.log | head -20
  FAILED=$((FAILED + 1))
fi
if grep -lE 'eyJ[A-Za-z0-9_-]{10,}\.eyJ' "$WORK"/stateful.log "$WORK"/stateless.log >/dev/null 2>&1; then
  echo "  FAIL a JWT appears in a backend log"; FAILED=$((FAILED + 1))
fi

runner negative "$PY" "$ROOT/interop/oauth/negative.py" --backend "$BACKEND_BIN" --node "$NODE"

stop_all_backends
echo "== oauth-e2e summary (oidc-provider $OIDC_PROVIDER_VERSION, TS sdk $TS_SDK_VERSION, TS client $TS_CLIENT_VERSION, Python mcp 2.3.0 / 1.27.2)"
printf '  %s\n' "${SUMMARY[@]}"
echo "oauth-e2e: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]

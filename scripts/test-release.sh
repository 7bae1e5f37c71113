#!/usr/bin/env bash
# Tests every artifact in dist/ (scripts/release.sh) as a user would, on loopback, and leaves
# nothing running (containers, volumes and temporary folders are removed on exit):
#   - SHA256SUMS match; server.json passes skillsaw (the released registry schemas, offline);
#   - the image, loaded from its OCI archive: labels, non-root user, size; `podman run` with a
#     volume: /health 200 (also with a foreign Host, as probes send), 401 without a key, 403 on a
#     foreign Host at /mcp, a real MCP client (Python
#     SDK) creates a course over HTTP, the HEALTHCHECK command passes, `podman stop` returns
#     within 5 s with exit 0, and a new container on the same volume still lists the course;
#     the same image with DATABASE_URL on the local PostgreSQL (host network, 127.0.0.1);
#   - the npm packages, from their tarballs, through `npx` (empty cache), by the same client
#     over stdio; the launcher's messages without a binary (scripts/test-npm-launcher.sh);
#   - the wheel through `uvx` (uv tool run, offline, empty cache), by the same client;
#   - the bundle: unpacked by mcpb, its declared command and env started by the same client;
#   - stdio start time through npx and uvx beside the bare binary (medians; printed, not asserted).
# Last line: `test-release: N passed, M failed`; exit 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
# shellcheck source=/dev/null
source target/release-tools/env.sh
# shellcheck source=/dev/null
source target/test-tools/env.sh
export CONTAINERS_CONF="$ROOT/packaging/containers.conf"
VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
DIST="$ROOT/dist"
IMAGE="localhost/mcp-cursos:$VERSION"
WORK="$(mktemp -d)"
NAME="mcp-cursos-test-$$"
SMOKE=("$PY" "$ROOT/packaging/tests/smoke_client.py")
passed=0; failed=0

cleanup() {
  podman rm -f -v "$NAME-1" "$NAME-2" "$NAME-3" "$NAME-4" "$NAME-5" >/dev/null 2>&1  # -v: the anonymous /data of the PostgreSQL run
  podman volume rm -f "$NAME" "$NAME-keyless" >/dev/null 2>&1
  psql "${PG_URL:-postgres://postgres@127.0.0.1:5432/test}" -qAtc "DROP DATABASE IF EXISTS ${PG_DATABASE:-none} WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

check() { # check DESCRIPTION COMMAND...: one test
  local description="$1"; shift
  if "$@" >"$WORK/out" 2>&1; then
    passed=$((passed + 1)); echo "  ok   $description"
  else
    failed=$((failed + 1)); echo "  FAIL $description"; sed 's/^/       /' "$WORK/out" | tail -15
  fi
}

echo "-- artifacts of $VERSION"
check "SHA256SUMS match every artifact" bash -c "cd '$DIST' && sha256sum --quiet -c SHA256SUMS"
mkdir -p "$WORK/registry/npm"; cp "$DIST/server.json" "$WORK/registry/"; cp packaging/npm/mcp-cursos/package.json "$WORK/registry/npm/"
check "dist/server.json names the bundle's SHA-256" python3 -c "
import hashlib, json, sys
entry = json.load(open('$DIST/server.json'))
bundle = [p for p in entry['packages'] if p['registryType'] == 'mcpb'][0]
assert bundle['fileSha256'] == hashlib.sha256(open('$DIST/mcp-cursos-$VERSION.mcpb', 'rb').read()).hexdigest(), bundle"
check "server.json is valid for the MCP Registry (skillsaw, schema 2025-12-11) and names the npm package's mcpName" \
  "$SKILLSAW" lint --quiet --no-progress --strict "$WORK/registry"

echo "-- container image"
podman rmi -f "$IMAGE" >/dev/null 2>&1
check "the image archive loads" podman load -q -i "$DIST/mcp-cursos-$VERSION.image.tar"
label() { podman image inspect --format "{{index .Labels \"$1\"}}" "$IMAGE"; }
server_name="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' server.json)"
check "labels: version $VERSION, license MIT, source, io.modelcontextprotocol.server.name = $server_name" bash -c "
  [[ \"\$(podman image inspect --format '{{index .Labels \"org.opencontainers.image.version\"}}' $IMAGE)\" == '$VERSION' ]] &&
  [[ \"\$(podman image inspect --format '{{index .Labels \"org.opencontainers.image.licenses\"}}' $IMAGE)\" == MIT ]] &&
  [[ -n \"\$(podman image inspect --format '{{index .Labels \"org.opencontainers.image.source\"}}' $IMAGE)\" ]] &&
  [[ \"\$(podman image inspect --format '{{index .Labels \"io.modelcontextprotocol.server.name\"}}' $IMAGE)\" == '$server_name' ]]"
check "runs as the unprivileged user 65532" bash -c "[[ \"\$(podman image inspect --format '{{.Config.User}}' $IMAGE)\" == 65532:65532 ]]"
size_bytes="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
echo "  image size: $((size_bytes / 1024)) KiB ($(du -k "$DIST/mcp-cursos-$VERSION.image.tar" | cut -f1) KiB as an archive)"

KEY="imagem-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
start_container() { # start_container N: runs container N on the shared volume, sets PORT
  podman run -d --name "$NAME-$1" -p 127.0.0.1::3000 -v "$NAME:/data" -e API_KEY="$KEY" "$IMAGE" >/dev/null || return 1
  PORT="$(podman port "$NAME-$1" 3000/tcp | head -1 | sed 's/.*://')"
  local deadline=$((SECONDS + 30))
  until curl -fs -o /dev/null "http://127.0.0.1:$PORT/health"; do
    (( SECONDS < deadline )) || { podman logs "$NAME-$1"; return 1; }
    sleep 0.2
  done
}
status_of() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
if check "podman run with a volume: /health answers 200" start_container 1; then
  check "POST /mcp without a key: 401" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:$PORT/mcp -H 'content-type: application/json' -d '{}') == 401 ]]"
  check "a foreign Host (DNS rebinding) on /mcp: 403, naming ALLOWED_HOSTS" bash -c "
    body=\$(curl -s -w ' %{http_code}' -X POST -H 'Host: evil.example' -H 'content-type: application/json' -d '{}' http://127.0.0.1:$PORT/mcp) &&
    [[ \$body == *' 403' && \$body == *ALLOWED_HOSTS* ]]"
  check "a probe naming the machine's address in Host: /health 200 (ADR 0029)" bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: 10.1.2.3:3000' http://127.0.0.1:$PORT/health) == 200 ]]"
  check "an MCP client creates a course over HTTP" "${SMOKE[@]}" --create "Curso no contêiner" http "http://127.0.0.1:$PORT/mcp" "$KEY"
  check "the image's HEALTHCHECK (mcp-cursos-backend health, no shell) passes" podman healthcheck run "$NAME-1"
  stop_started=$SECONDS
  check "podman stop (SIGTERM) returns within 5 s and the server exits 0" bash -c "
    podman stop -t 10 $NAME-1 >/dev/null && (( SECONDS - $stop_started <= 5 )) &&
    [[ \$(podman inspect --format '{{.State.ExitCode}}' $NAME-1) == 0 ]]"
  if check "a new container on the same volume starts" start_container 2; then
    check "and still lists the course" "${SMOKE[@]}" --expect "Curso no contêiner" http "http://127.0.0.1:$PORT/mcp" "$KEY"
    podman stop -t 10 "$NAME-2" >/dev/null 2>&1
  fi
fi

# Without API_KEY (ADR 0048): the first start prints a generated key and keeps its hash in the
# volume; a new container on the same volume prints none and accepts the same key.
start_keyless() { # start_keyless N: container N without a key on the volume $NAME-keyless, sets PORT
  podman run -d --name "$NAME-$1" -p 127.0.0.1::3000 -v "$NAME-keyless:/data" "$IMAGE" >/dev/null || return 1
  PORT="$(podman port "$NAME-$1" 3000/tcp | head -1 | sed 's/.*://')"
  local deadline=$((SECONDS + 30))
  until curl -fs -o /dev/null "http://127.0.0.1:$PORT/health"; do
    (( SECONDS < deadline )) || { podman logs "$NAME-$1"; return 1; }
    sleep 0.2
  done
}
if check "without API_KEY: the container starts on a generated key" start_keyless 4; then
  GENERATED="$(podman logs "$NAME-4" 2>/dev/null | sed -n 's/^API_KEY=//p' | head -1)"
  check "the generated key is printed once in the container's output" bash -c "[[ '$GENERATED' == mcp_* ]]"
  check "an MCP client creates a course with it" "${SMOKE[@]}" --create "Curso sem API_KEY" http "http://127.0.0.1:$PORT/mcp" "$GENERATED"
  podman stop -t 10 "$NAME-4" >/dev/null 2>&1
  if check "a new container on the same volume, still without API_KEY, starts" start_keyless 5; then
    check "it prints no key and says which one is in use" bash -c "
      logs=\$(podman logs $NAME-5 2>&1); [[ \$logs != *API_KEY=* && \$logs == *'the API key generated on'* ]]"
    check "and accepts the same key" "${SMOKE[@]}" --expect "Curso sem API_KEY" http "http://127.0.0.1:$PORT/mcp" "$GENERATED"
    podman stop -t 10 "$NAME-5" >/dev/null 2>&1
  fi
fi

# The same image on PostgreSQL (the one on 127.0.0.1:5432, a database of this run's own, dropped
# on exit): host networking, so the server binds 127.0.0.1 on a free port of its choosing.
PG_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
PG_DATABASE="mcp_cursos_release_$$"
start_on_postgres() {
  psql "$PG_URL" -qAtc "CREATE DATABASE $PG_DATABASE" || return 1
  podman run -d --name "$NAME-3" --network host -e HOST=127.0.0.1 -e PORT=0 -e API_KEY="$KEY" \
    -e DATABASE_URL="${PG_URL%/*}/$PG_DATABASE" "$IMAGE" >/dev/null || return 1
  local deadline=$((SECONDS + 30))
  until PG_PORT="$(podman logs "$NAME-3" 2>&1 | sed -n 's/.*listening.*url=http:\/\/127\.0\.0\.1:\([0-9]*\)\/mcp.*/\1/p' | head -1)" && [[ -n "$PG_PORT" ]]; do
    (( SECONDS < deadline )) || { podman logs "$NAME-3"; return 1; }
    sleep 0.2
  done
}
if command -v psql >/dev/null && check "the same image with DATABASE_URL (PostgreSQL) starts" start_on_postgres; then
  check "an MCP client creates and reads a course there" \
    "${SMOKE[@]}" --create "Curso no PostgreSQL" --expect "Curso no PostgreSQL" http "http://127.0.0.1:$PG_PORT/mcp" "$KEY"
  check "the course is in PostgreSQL" bash -c \
    "[[ \$(psql '${PG_URL%/*}/$PG_DATABASE' -qAtc \"select count(*) from courses where title = 'Curso no PostgreSQL'\") == 1 ]]"
fi

echo "-- npm (npx, from the packed tarballs)"
export npm_config_cache="$WORK/npm-cache" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
NPX=(npx -y --package "$DIST/mcp-cursos-linux-x64-$VERSION.tgz" --package "$DIST/mcp-cursos-$VERSION.tgz" mcp-cursos)
check "npx mcp-cursos: an MCP client creates and reads a course over stdio" \
  env DATABASE_PATH="$WORK/npx/cursos.db" "${SMOKE[@]}" --create "Curso pelo npx" --expect "Curso pelo npx" stdio "${NPX[@]}"
check "npx mcp-cursos --version is $VERSION" bash -c "[[ \"\$(${NPX[*]} --version)\" == 'mcp-cursos-stdio $VERSION' ]]"
# The launcher's messages where it cannot run a binary (another platform; its platform package
# missing, as a 404 leaves it): node alone, no release needed (run it by itself after a change).
check "the npm launcher names what happened and what works, exit 1 (scripts/test-npm-launcher.sh)" \
  bash scripts/test-npm-launcher.sh

echo "-- PyPI wheel (uvx, offline, from the wheel file)"
export UV_CACHE_DIR="$WORK/uv-cache" UV_TOOL_DIR="$WORK/uv-tools" UV_PYTHON_DOWNLOADS=never
WHEEL="$(ls "$DIST"/mcp_cursos_stdio-"$VERSION"-*.whl)"
UVX=("$UV" tool run --offline --from "$WHEEL" mcp-cursos-stdio)
check "uvx mcp-cursos-stdio: an MCP client creates and reads a course over stdio" \
  env DATABASE_PATH="$WORK/uvx/cursos.db" "${SMOKE[@]}" --create "Curso pelo uvx" --expect "Curso pelo uvx" stdio "${UVX[@]}"

echo "-- MCP bundle"
check "mcpb unpacks the bundle" "$MCPB" unpack "$DIST/mcp-cursos-$VERSION.mcpb" "$WORK/bundle"
bundle_command() { # the bundle's declared command, with ${__dirname} and its user_config filled in
  python3 - "$WORK/bundle" "$WORK/bundle-data" <<'PY'
import json, sys
folder, data = sys.argv[1], sys.argv[2]
config = json.load(open(f"{folder}/manifest.json"))["server"]["mcp_config"]
fill = lambda text: text.replace("${__dirname}", folder).replace("${user_config.database_folder}", data)
for name, value in config.get("env", {}).items():
    print(f"env {name}={fill(value)}")
for argument in [config["command"], *config.get("args", [])]:
    print(f"arg {fill(argument)}")
PY
}
if [[ -f "$WORK/bundle/manifest.json" ]]; then
  mkdir -p "$WORK/bundle-data"
  declared_env=(); declared_command=()
  while IFS= read -r line; do
    case "$line" in env\ *) declared_env+=("${line#env }") ;; arg\ *) declared_command+=("${line#arg }") ;; esac
  done < <(bundle_command)
  check "the bundle's declared command ${declared_command[0]#"$WORK/"}: an MCP client creates and reads a course" \
    env "${declared_env[@]}" "${SMOKE[@]}" --create "Curso pelo pacote" --expect "Curso pelo pacote" stdio "${declared_command[@]}"
fi

echo "-- stdio start time (spawn to the initialize answer; medians, not asserted)"
bare="$DIST/mcp-cursos-stdio-$VERSION-linux-x64"
for entry in "bare binary|$bare" "npx (cached)|${NPX[*]}" "uvx (cached)|${UVX[*]}"; do
  label="${entry%%|*}"; read -r -a command <<<"${entry#*|}"
  DATABASE_PATH="$WORK/start/cursos.db" "$PY" packaging/tests/start_time.py 15 "$label" "${command[@]}" \
    || { failed=$((failed + 1)); echo "  FAIL start time of $label"; }
done

echo "test-release: $passed passed, $failed failed"
(( failed == 0 ))

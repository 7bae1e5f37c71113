#!/usr/bin/env bash
# Interop test: MCP Inspector CLI 2.12.0 (`mcp-inspector --cli`) drives mcp-cursos over stdio and over
# Streamable HTTP with `Authorization: Bearer ...`, on both protocol eras (`--protocol-era legacy`
# → 2025-11-25, `--protocol-era modern` → 2026-07-28). Every Inspector invocation is one test: its
# exit code and the key fields of its `--format json -q` output are checked (with the test venv's
# Python; jq is not on every machine).
#
# Usage: bash interop/inspector.sh
#   INTEROP_HTTP_URL=http://127.0.0.1:PORT/mcp API_KEY=... to use a running backend (scripts/interop.sh
#   does); otherwise one is started here (SESSION_MODE=stateful) and stopped at the end.
# Needs scripts/install-test-tools.sh and the debug binaries. Last line: `interop: N passed, M failed`.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/lib.sh
. "$ROOT/scripts/lib.sh"
load_tools inspector
need_binaries inspector

WORK="$(mktemp -d)"
cleanup() { stop_all_backends; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
export HOME="$WORK/home"   # the Inspector writes ~/.mcp-inspector
mkdir -p "$HOME"

if [[ -z "${INTEROP_HTTP_URL:-}" ]]; then
  API_KEY="inspector-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  start_backend inspector "$WORK/backend.log" API_KEY="$API_KEY" SESSION_MODE=stateful \
    DATABASE_PATH="$WORK/http.db" || { echo "interop: 0 passed, 1 failed"; exit 1; }
  INTEROP_HTTP_URL="$BACKEND_URL"
fi
: "${API_KEY:?API_KEY must be set with INTEROP_HTTP_URL}"

PASSED=0 FAILED=0
TIMEOUT=60

# inspect TAG WANT_RC CHECK TARGET... -- INSPECTOR ARGS: runs the Inspector on TARGET (stdio or
# http), expects exit code WANT_RC and runs CHECK, a Python snippet where `d` is the parsed stdout
# (`{"result": ...}`) and `r = d["result"]`. Sets OUT to the stdout file.
inspect() {
  local tag="$1" want_rc="$2" check="$3" target="$4"; shift 4
  local n=$((PASSED + FAILED + 1))
  OUT="$WORK/out-$n.json"
  local err="$WORK/err-$n.txt" rc
  local cmd=("$NODE" "$INSPECTOR_JS" --cli)
  case "$target" in
    stdio) cmd+=(-e "DATABASE_PATH=$WORK/stdio.db" -e RUST_LOG=error "$STDIO_BIN") ;;
    http) cmd+=("$INTEROP_HTTP_URL" --transport http --header "Authorization: Bearer $API_KEY") ;;
    http-nokey) cmd+=("$INTEROP_HTTP_URL" --transport http --stored-auth-only) ;;
  esac
  timeout "$TIMEOUT" "${cmd[@]}" "$@" --format json -q >"$OUT" 2>"$err"
  rc=$?
  local why=""
  if [[ $rc -ne $want_rc ]]; then
    why="exit code $rc, expected $want_rc"
  elif ! why="$("$PY" - "$OUT" "$err" "$check" 2>&1 <<'PY'
import json, sys
out, err, check = sys.argv[1:4]
text = open(out, encoding="utf-8").read().strip() or open(err, encoding="utf-8").read().strip()
d = json.loads(text.splitlines()[0] if text.startswith("{") and "\n{" in text else text)
r = d.get("result")
exec(check, {"d": d, "r": r, "json": json})
PY
)"; then
    why="${why:-check failed}"
  else
    why=""
  fi
  if [[ -z "$why" ]]; then
    PASSED=$((PASSED + 1)); echo "  ok   $tag"
  else
    FAILED=$((FAILED + 1)); echo "  FAIL $tag: $(tail -3 <<<"$why" | tr '\n' ' ')"
    echo "       stdout: $(head -c 400 "$OUT")"; echo "       stderr: $(head -c 400 "$err")"
  fi
}

for target in stdio http; do
  for era in legacy modern; do
    t="$target/$era"
    version=2025-11-25; [[ $era == modern ]] && version=2026-07-28
    token="$(printf '%04x%04x' $RANDOM $RANDOM)"
    title="Inspector $target $era $token"
    E=(--protocol-era "$era")
    echo "-- inspector $INSPECTOR_VERSION, $t"

    inspect "$t: initialize negotiates $version" 0 "
assert r['protocolVersion'] == '$version', r['protocolVersion']
assert r['serverInfo']['name'] == 'mcp-cursos', r['serverInfo']
assert {'tools', 'resources', 'prompts', 'completions'} <= set(r['capabilities']), r['capabilities']
" "$target" "${E[@]}" --method initialize

    inspect "$t: tools/list names and annotations" 0 "
tools = {x['name']: x for x in r['tools']}
assert {'criar_curso', 'atualizar_curso', 'arquivar_curso'} <= set(tools), sorted(tools)
a = tools['criar_curso']['annotations']
assert a['readOnlyHint'] is False and a['destructiveHint'] is False, a
for n in ('atualizar_curso', 'arquivar_curso'):
    a = tools[n]['annotations']
    assert a['readOnlyHint'] is False and a['destructiveHint'] is True and a['idempotentHint'] is True, (n, a)
" "$target" "${E[@]}" --method tools/list

    inspect "$t: tools/call criar_curso (--tool-arg, number coerced)" 0 "
assert r['isError'] is False, r
s = r['structuredContent']
assert s['titulo'] == '$title' and s['cargaHoraria'] == 40 and s['versao'] == 1, s
links = [c['uri'] for c in r['content'] if c['type'] == 'resource_link']
assert links == ['cursos://' + s['id']], links
print(s['id'])
" "$target" "${E[@]}" --method tools/call --tool-name criar_curso --tool-arg "titulo=$title" cargaHoraria=40
    id="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["structuredContent"]["id"])' "$OUT" 2>/dev/null || echo 00000000-0000-4000-8000-000000000000)"

    inspect "$t: tools/call refused → exit 5 (tool_is_error), message names cargaHoraria" 5 "
assert r['isError'] is True, r
text = ' '.join(c.get('text', '') for c in r['content'])
assert \"Campo 'cargaHoraria' deve estar entre 1 e 1000\" in text, text
" "$target" "${E[@]}" --method tools/call --tool-name criar_curso --tool-arg "titulo=Outro $token" cargaHoraria=0

    inspect "$t: tools/call atualizar_curso (--tool-args-json) bumps versao" 0 "
s = r['structuredContent']
assert r['isError'] is False and s['versao'] == 2 and s['cargaHoraria'] == 41, r
" "$target" "${E[@]}" --method tools/call --tool-name atualizar_curso --tool-args-json "{\"id\":\"$id\",\"cargaHoraria\":41}"

    inspect "$t: resources/read cursos://catalogo" 0 "
c = r['contents'][0]
assert c['uri'] == 'cursos://catalogo' and c['mimeType'] == 'application/json', c
cat = json.loads(c['text'])
assert '$id' in [x['id'] for x in cat['cursos']] and cat['proximaPagina'] is None, cat
# SEP-2549 caching hints are 2026-07-28 fields: present on modern, absent on legacy
assert ('ttlMs' in r) == ('$era' == 'modern'), sorted(r)
" "$target" "${E[@]}" --method resources/read --uri cursos://catalogo

    inspect "$t: resources/templates/list" 0 "
assert 'cursos://{uuid}' in [x['uriTemplate'] for x in r['resourceTemplates']], r
" "$target" "${E[@]}" --method resources/templates/list

    inspect "$t: prompts/get criar-curso" 0 "
m = r['messages']
assert len(m) == 1 and m[0]['role'] == 'user', m
assert json.dumps('$title', ensure_ascii=False) in m[0]['content']['text'], m
" "$target" "${E[@]}" --method prompts/get --prompt-name criar-curso --prompt-args "titulo=$title" cargaHoraria=40
  done
done

echo "-- inspector $INSPECTOR_VERSION, http without the key"
inspect "http: no Authorization → exit 3 (auth_required), no OAuth attempted" 3 "
assert d['error']['code'] == 'auth_required', d
" http-nokey --method tools/list

echo "inspector $INSPECTOR_VERSION:"
echo "interop: $PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]

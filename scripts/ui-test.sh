#!/usr/bin/env bash
# The catalog's MCP App in a real browser (issue 15, ADR 0039): ui-test/run.mjs drives the view in
# headless Chromium through a test host built on the official ext-apps AppBridge, against the real
# backend (target/debug/mcp-cursos-backend, built by the CI's cargo test step) on loopback. Any
# network request outside the host page and its /mcp fails the run. Screenshots of every step are
# kept in target/ui-screenshots/ (a CI artifact).
# Installs what it needs: Debian's chromium package when missing (no browser download) and the
# pinned npm packages of ui-test/package-lock.json (`npm ci`). Node >= 20 (the system's, or the
# pinned Node 24 of scripts/install-test-tools.sh when the system has none).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BACKEND_BIN="${BACKEND_BIN:-$ROOT/target/debug/mcp-cursos-backend}"
if [[ ! -x "$BACKEND_BIN" ]]; then
  echo "ui-test: $BACKEND_BIN not built; run: cargo build -p mcp-cursos-backend" >&2
  exit 1
fi

if ! command -v chromium >/dev/null 2>&1; then
  echo "ui-test: installing Debian's chromium package"
  SUDO=""; [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
export CHROMIUM_BIN="${CHROMIUM_BIN:-$(command -v chromium)}"

NODE="node"
node_major() { "$1" -e 'process.stdout.write(String(process.versions.node.split(".")[0]))' 2>/dev/null || echo 0; }
if [[ "$(node_major node)" -lt 20 ]]; then
  # shellcheck disable=SC1091
  [[ -f "$ROOT/target/test-tools/env.sh" ]] && . "$ROOT/target/test-tools/env.sh"
  [[ "$(node_major "${NODE:-node}")" -ge 20 ]] || { echo "ui-test: needs Node >= 20 (or scripts/install-test-tools.sh)" >&2; exit 1; }
  PATH="$(dirname "$NODE"):$PATH"
fi

cd "$ROOT/ui-test"
npm ci --no-audit --no-fund --loglevel=error
"$NODE" run.mjs

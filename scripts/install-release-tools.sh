#!/usr/bin/env bash
# Installs what scripts/release.sh and scripts/test-release.sh need, pinned, under
# target/release-tools/ (ignored by git through /target), plus podman and runc from the system's
# packages when missing. Idempotent: a tool is (re)installed only when its stamp does not match.
#
#   py/          Python venv: maturin (the wheel), skillsaw (server.json against the released
#                registry schemas, offline), uv (uvx, to run the wheel as a user would)
#   npm/mcpb/    @anthropic-ai/mcpb (validate, pack and unpack the MCP bundle)
#   env.sh       paths for the other scripts
#
# Needs: python3 with venv, npm (any version), and root or podman already installed.
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
SKILLSAW_VERSION=0.22.0
UV_VERSION=0.13.9
MCPB_VERSION=2.1.2

TOOLS="$PWD/target/release-tools"
mkdir -p "$TOOLS/npm"
stamp_ok() { [[ -f "$1/.installed" && "$(cat "$1/.installed")" == "$2" ]]; }

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  echo "install-release-tools: installing podman and runc (Debian packages)"
  if [[ "$(id -u)" != 0 ]]; then
    echo "install-release-tools: podman and runc are missing and this is not root: install them (apt-get install podman runc)" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >"$TOOLS/apt.log" 2>&1 || {
    apt-get update -q >>"$TOOLS/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >>"$TOOLS/apt.log" 2>&1 || { tail -20 "$TOOLS/apt.log" >&2; exit 1; }
  }
fi

want="maturin==$MATURIN_VERSION skillsaw==$SKILLSAW_VERSION uv==$UV_VERSION"
if stamp_ok "$TOOLS/py" "$want"; then
  echo "install-release-tools: py up to date ($want)"
else
  echo "install-release-tools: creating venv py ($want)"
  rm -rf "$TOOLS/py"
  python3 -m venv "$TOOLS/py"
  # shellcheck disable=SC2086
  "$TOOLS/py/bin/python" -m pip install --quiet --disable-pip-version-check --no-input $want
  echo "$want" > "$TOOLS/py/.installed"
fi

spec="@anthropic-ai/mcpb@$MCPB_VERSION"
if stamp_ok "$TOOLS/npm/mcpb" "$spec"; then
  echo "install-release-tools: $spec up to date"
else
  echo "install-release-tools: npm install $spec"
  rm -rf "$TOOLS/npm/mcpb"; mkdir -p "$TOOLS/npm/mcpb"
  npm install --prefix "$TOOLS/npm/mcpb" --no-audit --no-fund --no-update-notifier --loglevel=error --save-exact "$spec" \
    >"$TOOLS/npm/mcpb/npm-install.log" 2>&1 || { tail -20 "$TOOLS/npm/mcpb/npm-install.log" >&2; exit 1; }
  echo "$spec" > "$TOOLS/npm/mcpb/.installed"
fi

cat > "$TOOLS/env.sh" <<ENV
# Written by scripts/install-release-tools.sh; sourced by scripts/release.sh and scripts/test-release.sh.
MATURIN="$TOOLS/py/bin/maturin"
SKILLSAW="$TOOLS/py/bin/skillsaw"
UV="$TOOLS/py/bin/uv"
MCPB="$TOOLS/npm/mcpb/node_modules/.bin/mcpb"
ENV
echo "install-release-tools: podman $(podman --version | awk '{print $3}'), maturin $MATURIN_VERSION, skillsaw $SKILLSAW_VERSION, uv $UV_VERSION, mcpb $MCPB_VERSION"

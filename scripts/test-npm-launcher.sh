#!/usr/bin/env bash
# The npm launcher's messages (packaging/npm/mcp-cursos/bin/mcp-cursos.js) on the machines it
# cannot serve, with node alone: no release, no registry. Run by scripts/test-release.sh; run it
# yourself after changing the launcher:
#   - a platform without a binary (darwin arm64, as a Mac reports it): what works there, exit 1;
#   - this platform's package not installed, as npx leaves it when that package is not published
#     (a 404 npm does not report): the package and version named, the 404 said, no blame on
#     --no-optional, what works, exit 1;
#   - the same after --omit=optional (npm_config_omit=optional): that option named, exit 1.
# Last line: `test-npm-launcher: N passed, M failed`; exit 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
LAUNCHER=./packaging/npm/mcp-cursos/bin/mcp-cursos.js
VERSION="$(sed -n 's/^ *"mcp-cursos-linux-x64": "\(.*\)"$/\1/p' packaging/npm/mcp-cursos/package.json)"
passed=0; failed=0

# expect DESCRIPTION OUTPUT STATUS PATTERN... (a pattern starting with ! must not match)
expect() {
  local description="$1" out="$2" rc="$3"; shift 3
  local ok=true pattern
  [[ $rc == 1 ]] || ok=false
  for pattern in "$@"; do
    if [[ $pattern == !* ]]; then [[ $out != *"${pattern#!}"* ]] || ok=false
    else [[ $out == *"$pattern"* ]] || ok=false; fi
  done
  if $ok; then passed=$((passed + 1)); echo "  ok   $description"
  else failed=$((failed + 1)); echo "  FAIL $description (exit $rc)"; echo "$out" | sed 's/^/       /'; fi
}

# launch PLATFORM ARCH [VARIABLE=VALUE...]: the launcher as that platform would run it, from
# this tree (where no platform package is installed), with nothing of the caller's npm settings.
launch() {
  local platform="$1" arch="$2"; shift 2
  env -u MCP_CURSOS_BINARY -u npm_config_omit -u npm_config_optional "$@" node -e "
    Object.defineProperty(process, 'platform', {value: '$platform'});
    Object.defineProperty(process, 'arch', {value: '$arch'});
    require('$LAUNCHER')" 2>&1
}

out="$(launch darwin arm64)"; rc=$?
expect "on darwin arm64 it names the source build and the image" "$out" "$rc" \
  'no binary for darwin arm64' 'cargo build --release -p mcp-cursos-stdio' 'container image'

out="$(launch linux x64)"; rc=$?
expect "without its platform package it names the package, the 404 and what works, not --no-optional" "$out" "$rc" \
  "the package mcp-cursos-linux-x64@$VERSION" 'not published on the registry' '404' \
  "npm view mcp-cursos-linux-x64@$VERSION" 'cargo build --release -p mcp-cursos-stdio' 'container image' \
  '!was told to leave optional dependencies out'

out="$(launch linux x64 npm_config_omit=optional)"; rc=$?
expect "after --omit=optional it names that option" "$out" "$rc" \
  'npm was told to leave optional dependencies out (--omit=optional or --no-optional)' '!404' 'container image'

echo "test-npm-launcher: $passed passed, $failed failed"
[[ $failed == 0 ]]

#!/usr/bin/env bash
# One version for every artifact: the workspace's `version` in Cargo.toml must be the version of
# the binaries (--version, when built), the container image label, the npm packages (and the
# launcher's dependency on its platform package), the Python wheel (taken from Cargo.toml by
# maturin), the MCP bundle, server.json (top level and each package), and a section of
# CHANGELOG.md. Prints each mismatch; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[[ -n "$VERSION" ]] || { echo "check-versions: no [workspace.package] version in Cargo.toml"; exit 1; }

python3 - "$VERSION" <<'PY'
import json, re, subprocess, sys, os
version = sys.argv[1]
bad = []
def check(where, found):
    if found != version:
        bad.append(f"{where}: {found!r}, expected {version!r}")

for crate in ("apps/mcp-stdio/Cargo.toml", "apps/backend/Cargo.toml"):
    text = open(crate).read()
    if "version.workspace = true" not in text:
        bad.append(f"{crate}: does not take the workspace version")
arg = re.search(r"^ARG VERSION=(\S+)$", open("Containerfile").read(), re.M)
check("Containerfile ARG VERSION", arg.group(1) if arg else None)
launcher = json.load(open("packaging/npm/mcp-cursos/package.json"))
check("npm mcp-cursos", launcher["version"])
for name, spec in launcher.get("optionalDependencies", {}).items():
    check(f"npm mcp-cursos optionalDependencies {name}", spec)
    check(f"npm {name}", json.load(open(f"packaging/npm/{name}/package.json"))["version"])
pyproject = open("packaging/python/pyproject.toml").read()
if 'dynamic = ["version"]' not in pyproject:
    bad.append("packaging/python/pyproject.toml: the version must be dynamic (from Cargo.toml)")
check("MCP bundle manifest", json.load(open("packaging/mcpb/manifest.json"))["version"])
server = json.load(open("server.json"))
check("server.json version", server["version"])
for package in server.get("packages", []):
    if package["registryType"] == "oci":
        check(f"server.json {package['identifier']}", package["identifier"].rsplit(":", 1)[-1])
    else:
        check(f"server.json {package['identifier']}", package.get("version"))
    if package["registryType"] == "mcpb" and not package["identifier"].endswith(f"/v{version}/mcp-cursos-{version}.mcpb"):
        bad.append(f"server.json: the bundle's URL {package['identifier']!r} is not the release of {version}")
if f"## [{version}]" not in open("CHANGELOG.md").read():
    bad.append(f"CHANGELOG.md: no section '## [{version}]'")
names = {
    "server.json": server["name"],
    "npm mcpName": launcher.get("mcpName"),
}
label = re.search(r'io\.modelcontextprotocol\.server\.name="([^"]+)"', open("Containerfile").read())
names["Containerfile label"] = label.group(1) if label else None
marker = re.search(r"mcp-name: (\S+)", open("packaging/python/README.md").read())
names["PyPI README mcp-name"] = marker.group(1) if marker else None
for where, name in names.items():
    if name != server["name"]:
        bad.append(f"{where}: server name {name!r}, expected {server['name']!r}")
for binary in ("mcp-cursos-backend", "mcp-cursos-stdio"):
    for folder in ("target/x86_64-unknown-linux-gnu/release", "target/debug"):
        path = os.path.join(folder, binary)
        if os.path.exists(path):
            out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip()
            check(f"{path} --version", out.rsplit(" ", 1)[-1])
for line in bad:
    print(f"check-versions: {line}")
print(f"check-versions: {version}: {'MISMATCH' if bad else 'consistent'}")
sys.exit(1 if bad else 0)
PY

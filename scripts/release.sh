#!/usr/bin/env bash
# Builds every release artifact into dist/, with SHA-256 sums:
#   mcp-cursos-backend-<v>-linux-x64, mcp-cursos-stdio-<v>-linux-x64   static binaries (glibc +crt-static), stripped
#   mcp-cursos-<v>.image.tar      the container image (Containerfile; `docker load` / `podman load`), also
#                                 left in podman's local storage as localhost/mcp-cursos:<v>
#   mcp-cursos-<v>.tgz, mcp-cursos-linux-x64-<v>.tgz     the npm launcher and its linux-x64 binary package
#   mcp_cursos_stdio-<v>-py3-none-<platform>.whl         the wheel for uvx / pipx (maturin, bin bindings)
#   mcp-cursos-<v>.mcpb           the MCP bundle (one-click install in Claude Desktop), validated and packed by mcpb
#   server.json                   the MCP Registry entry (validated by skillsaw against the released schemas)
#   SHA256SUMS
# One version for all (scripts/check-versions.sh). The static build is the one compile (about as
# long as a release build of the workspace); the wheel reuses it. Needs scripts/install-release-tools.sh.
# Publishing is not done here: no registry credentials (see docs/release.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
# shellcheck source=/dev/null
source target/release-tools/env.sh
export CONTAINERS_CONF="$ROOT/packaging/containers.conf"

VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
TRIPLE=x86_64-unknown-linux-gnu
export RUSTFLAGS='-C target-feature=+crt-static'
RELEASE="$ROOT/target/$TRIPLE/release"
DIST="$ROOT/dist"
STAGE="$ROOT/target/release-stage"
step() { echo "release: $*"; }

bash scripts/check-versions.sh
rm -rf "$DIST" "$STAGE"; mkdir -p "$DIST" "$STAGE"

step "static build of both binaries ($TRIPLE, +crt-static)"
started=$SECONDS
cargo build --release --locked --target "$TRIPLE" -p mcp-cursos-backend -p mcp-cursos-stdio
step "static build took $((SECONDS - started)) s"
for binary in mcp-cursos-backend mcp-cursos-stdio; do
  if ! file "$RELEASE/$binary" | grep -Eq 'static(-pie)? linked|statically linked'; then
    echo "release: $binary is not statically linked: $(file "$RELEASE/$binary")" >&2; exit 1
  fi
  strip -o "$DIST/$binary-$VERSION-linux-x64" "$RELEASE/$binary"
done

step "container image localhost/mcp-cursos:$VERSION"
# The Containerfile's build stage, replaced by the binary just built (same command, same flags).
mkdir -p "$STAGE/container/out/data"
cp "$DIST/mcp-cursos-backend-$VERSION-linux-x64" "$STAGE/container/out/mcp-cursos-backend"
# Docker's image format: it keeps the HEALTHCHECK (the OCI format has no field for it).
podman build --quiet --format docker --build-context build="$STAGE/container" --build-arg VERSION="$VERSION" \
  -t "localhost/mcp-cursos:$VERSION" -f Containerfile . >/dev/null
podman save --quiet --format docker-archive -o "$DIST/mcp-cursos-$VERSION.image.tar" "localhost/mcp-cursos:$VERSION"

step "npm packages"
cp -r packaging/npm "$STAGE/npm"
cp LICENSE "$STAGE/npm/mcp-cursos/"; cp LICENSE "$STAGE/npm/mcp-cursos-linux-x64/"
mkdir -p "$STAGE/npm/mcp-cursos-linux-x64/bin"  # git keeps no empty folder
cp "$DIST/mcp-cursos-stdio-$VERSION-linux-x64" "$STAGE/npm/mcp-cursos-linux-x64/bin/mcp-cursos-stdio"
chmod 755 "$STAGE/npm/mcp-cursos-linux-x64/bin/mcp-cursos-stdio" "$STAGE/npm/mcp-cursos/bin/mcp-cursos.js"
for package in mcp-cursos mcp-cursos-linux-x64; do
  (cd "$STAGE/npm/$package" && npm pack --silent --pack-destination "$DIST" >/dev/null)
done

step "wheel (maturin, bin bindings)"
(cd packaging/python && "$MATURIN" build --quiet --release --locked --target "$TRIPLE" --compatibility manylinux2014 --out "$DIST")
ls "$DIST"/mcp_cursos_stdio-"$VERSION"-*.whl >/dev/null

step "MCP bundle"
mkdir -p "$STAGE/mcpb/server"
cp packaging/mcpb/manifest.json LICENSE "$STAGE/mcpb/"
cp "$DIST/mcp-cursos-stdio-$VERSION-linux-x64" "$STAGE/mcpb/server/mcp-cursos-stdio"
chmod 755 "$STAGE/mcpb/server/mcp-cursos-stdio"
"$MCPB" validate "$STAGE/mcpb/manifest.json" >/dev/null
"$MCPB" pack "$STAGE/mcpb" "$DIST/mcp-cursos-$VERSION.mcpb" >"$STAGE/mcpb-pack.log" 2>&1 || { cat "$STAGE/mcpb-pack.log"; exit 1; }

step "server.json"
# The registry entry of the bundle names its file's SHA-256: the repository's server.json holds
# zeros there, the published one (dist/) the bundle just packed.
python3 - "$DIST/mcp-cursos-$VERSION.mcpb" <<'PY' > "$DIST/server.json"
import hashlib, json, sys
entry = json.load(open("server.json"))
digest = hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()
for package in entry["packages"]:
    if package["registryType"] == "mcpb":
        package["fileSha256"] = digest
print(json.dumps(entry, indent=2, ensure_ascii=False))
PY

mkdir -p "$STAGE/registry/npm"
cp "$DIST/server.json" "$STAGE/registry/"; cp packaging/npm/mcp-cursos/package.json "$STAGE/registry/npm/"
"$SKILLSAW" lint --quiet --no-progress --strict "$STAGE/registry"
(cd "$DIST" && sha256sum -- * > SHA256SUMS)
bash scripts/check-versions.sh >/dev/null
step "dist/ for $VERSION:"
(cd "$DIST" && ls -l --block-size=K | tail -n +2 | awk '{print "  " $5 "\t" $9}')

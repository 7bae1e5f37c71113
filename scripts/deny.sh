#!/usr/bin/env bash
# The dependency audit (issue 23, ADR 0043): cargo-deny over Cargo.lock with deny.toml.
#   licenses, bans, sources   always (they need only Cargo.lock and the crates.io index)
#   advisories (+ yanked)     against the RustSec advisory database, a git repository:
#     - ADVISORY_DB=/path/to/advisory-db (a checkout of it): that snapshot, offline, stated with its date;
#     - otherwise the database is fetched (`cargo deny fetch db`); where it cannot be fetched (this
#       project's machines reach package registries only) the check is skipped, said so loudly, and
#       REQUIRE_ADVISORIES=1 makes that a failure.
# cargo-deny itself comes from scripts/install-cargo-deny.sh (pinned, under target/test-tools/).
set -euo pipefail
cd "$(dirname "$0")/.."

deny="$(bash scripts/install-cargo-deny.sh)"
common=(--locked)

echo "deny: cargo-deny $("$deny" --version | cut -d' ' -f2) check licenses bans sources"
"$deny" "${common[@]}" check --hide-inclusion-graph licenses bans sources

if [[ -n "${ADVISORY_DB:-}" ]]; then
  [[ -d "$ADVISORY_DB/crates" ]] || { echo "deny: ADVISORY_DB=$ADVISORY_DB is not a RustSec advisory-db checkout (no crates/)" >&2; exit 1; }
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  # cargo-deny looks for the default database in DB_PATH/advisory-db-<hash of its URL> (0.20).
  mkdir -p "$tmp/dbs"; ln -s "$(cd "$ADVISORY_DB" && pwd)" "$tmp/dbs/advisory-db-3157b0e258782691"
  awk -v p="$tmp/dbs" '{print} /^\[advisories\]/{print "db-path = \"" p "\""}' deny.toml > "$tmp/deny.toml"
  when="$(git -C "$ADVISORY_DB" log -1 --format='%h of %cs' 2>/dev/null || echo 'unknown date')"
  echo "deny: cargo-deny check advisories, offline, against the snapshot $ADVISORY_DB ($when)"
  "$deny" "${common[@]}" --offline --config "$tmp/deny.toml" check --hide-inclusion-graph advisories
elif fetch_log="$("$deny" fetch db 2>&1)"; then
  echo "deny: cargo-deny check advisories (RustSec database fetched)"
  "$deny" "${common[@]}" check --hide-inclusion-graph advisories
else
  echo "deny: *** SKIPPED: advisories — the RustSec advisory database could not be fetched:"
  grep -m1 -E 'fatal|ERROR' <<<"$fetch_log" | sed 's/^/deny:     /' || true
  echo "deny:     licenses, bans and sources were checked; the exception is recorded in ADR 0043."
  if [[ "${REQUIRE_ADVISORIES:-}" == 1 ]]; then echo "deny: REQUIRE_ADVISORIES=1: failing" >&2; exit 1; fi
fi

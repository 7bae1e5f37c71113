#!/usr/bin/env bash
# Scale figures of `migrate` and `backup` (issue 11 part B, ADR 0041): a 1,000,000-course SQLite
# catalog (built by the scale benchmark's loader, bench/src/dataset.rs), migrated to PostgreSQL,
# migrated back to a new SQLite file, and backed up; wall time and peak RSS of each from
# /usr/bin/time -v, RUNS times (median reported).
#
#   bash bench/migrate.sh                      # 1M courses, 3 runs
#   SIZE=100000 RUNS=1 bash bench/migrate.sh   # quicker (SKIP_BUILD=1: use the release binaries as built)
#
# PostgreSQL: PG_URL (default postgres://postgres@127.0.0.1:5432/test); the script works in a
# schema of its own (bench_migrate), dropped and recreated before each run. Needs psql.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${SIZE:-1000000}
RUNS=${RUNS:-3}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/test}
DIR=${DIR:-${TMPDIR:-/tmp}/mcp-cursos-bench}
SCHEMA=bench_migrate
mkdir -p "$DIR"

[ -n "${SKIP_BUILD:-}" ] || cargo build --release --locked -p mcp-cursos-backend -p mcp-cursos-bench --bin mcp-cursos-backend --bin scale
BACKEND=target/release/mcp-cursos-backend
# The loader keeps the file (and reuses it on the next run with the same seed); one timed call
# per operation is all the scale part runs here.
target/release/scale --sizes "$SIZE" --keep --dir "$DIR" --iterations 1 >/dev/null
SOURCE="$DIR/cursos-$SIZE.db"

separator='?'
case "$PG_URL" in *\?*) separator='&' ;; esac
export BENCH_PG="${PG_URL}${separator}options=-csearch_path%3D${SCHEMA}%2Cpublic"

# `/usr/bin/time -v` of one command: prints "<seconds> <peak KiB>".
measure() {
  local report
  report=$(mktemp)
  /usr/bin/time -v -o "$report" "$@" >/dev/null 2>>"$DIR/migrate-bench.log"
  local elapsed rss
  elapsed=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$report" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$report")
  rm -f "$report"
  echo "$elapsed $rss"
}

median() { sort -n | awk '{ values[NR] = $1 } END { print values[int((NR + 1) / 2)] }'; }

declare -A seconds kib
for run in $(seq 1 "$RUNS"); do
  psql "$PG_URL" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" -c "CREATE SCHEMA $SCHEMA" \
    -c "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public"
  rm -f "$DIR/back.db" "$DIR/back.db-wal" "$DIR/back.db-shm" "$DIR/backup.db"
  read -r s k < <(measure "$BACKEND" migrate --from "$SOURCE" --to-env BENCH_PG)
  seconds[to_pg]+="$s "; kib[to_pg]+="$k "
  read -r s k < <(measure "$BACKEND" migrate --from-env BENCH_PG --to "$DIR/back.db")
  seconds[to_sqlite]+="$s "; kib[to_sqlite]+="$k "
  read -r s k < <(measure env DATABASE_PATH="$SOURCE" "$BACKEND" backup "$DIR/backup.db")
  seconds[backup]+="$s "; kib[backup]+="$k "
  echo "run $run: to PostgreSQL ${seconds[to_pg]}s, back ${seconds[to_sqlite]}s, backup ${seconds[backup]}s" >&2
done
psql "$PG_URL" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE"

echo "| operation ($SIZE courses, $RUNS runs) | median wall time (s) | median peak RSS (MiB) |"
echo "|---|---|---|"
for operation in to_pg to_sqlite backup; do
  s=$(tr ' ' '\n' <<<"${seconds[$operation]}" | grep . | median)
  k=$(tr ' ' '\n' <<<"${kib[$operation]}" | grep . | median)
  echo "| $operation | $s | $(awk -v k="$k" 'BEGIN { printf "%.1f", k / 1024 }') |"
done

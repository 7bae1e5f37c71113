#!/usr/bin/env bash
# Bulk writes at scale (issue 26, ADR 0053): `import` of the export (JSON Lines) and of a CSV of
# titles, into an empty SQLite file and an empty PostgreSQL schema, and `migrate` SQLite →
# PostgreSQL → SQLite, on the scale loader's catalog (bench/src/dataset.rs, seed 42: SIZE active
# courses plus about 5% archived). Each operation runs under /usr/bin/time -v: wall time, CPU time
# (user + system: what a crowded machine does not inflate) and peak RSS; rows/s is rows over wall
# time. With BASELINE=<another mcp-cursos-backend>, every operation runs with the baseline first
# and this build right after, interleaved, in the same run.
#
#   bash bench/bulk.sh                                   # 1M courses, every operation, RUNS=1
#   SIZE=200000 RUNS=3 BASELINE=/tmp/backend-main bash bench/bulk.sh
#   OPS="import_jsonl to_sqlite" SKIP_BUILD=1 bash bench/bulk.sh
# (BACKEND=<path>: the binary measured, by default target/release/mcp-cursos-backend)
#
# The catalog, its export and the CSV are built once and kept in $WORK (reused while SIZE is the
# same). PostgreSQL: PG_URL (default postgres://postgres@127.0.0.1:5432/test), in a schema of its
# own (bench_bulk), dropped and recreated before each operation. Needs psql and python3.
set -euo pipefail

SIZE=${SIZE:-1000000}
RUNS=${RUNS:-1}
OPS=${OPS:-"import_jsonl import_csv import_jsonl_pg import_csv_pg to_pg to_sqlite"}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/test}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/mcp-cursos-bulk}
BACKEND=${BACKEND:-"$ROOT/target/release/mcp-cursos-backend"}
SCHEMA=bench_bulk
export PGOPTIONS="-c client_min_messages=warning"
mkdir -p "$WORK"

separator='?'
case "$PG_URL" in *\?*) separator='&' ;; esac
export BENCH_PG="${PG_URL}${separator}options=-csearch_path%3D${SCHEMA}%2Cpublic"

build() {
    (cd "$ROOT" && cargo build --release --locked -p mcp-cursos-backend -p mcp-cursos-bench \
        --bin mcp-cursos-backend --bin scale)
}

# The catalog (the scale loader's, kept), its export and a CSV of its active titles, made once.
dataset() {
    "${SCALE:-$ROOT/target/release/scale}" --sizes "$SIZE" --iterations 1 --keep --dir "$WORK" >/dev/null
    SOURCE="$WORK/cursos-$SIZE.db"
    test -f "$SOURCE"
    if ! test -s "$WORK/catalogo-$SIZE.jsonl"; then
        env DATABASE_PATH="$SOURCE" "$BACKEND" export --overwrite --output "$WORK/catalogo-$SIZE.jsonl" 2>/dev/null
    fi
    if ! test -s "$WORK/catalogo-$SIZE.csv"; then
        # The active courses' titles and workloads, CSV-quoted: a list from another system.
        python3 "$ROOT/bench/csv_of_export.py" "$WORK/catalogo-$SIZE.jsonl" "$WORK/catalogo-$SIZE.csv"
    fi
    JSONL_ROWS=$(($(wc -l <"$WORK/catalogo-$SIZE.jsonl") - 1))
    CSV_ROWS=$(($(wc -l <"$WORK/catalogo-$SIZE.csv") - 1))
    COURSES=$(sqlite3 "$SOURCE" "SELECT COUNT(*) FROM courses")
}

fresh_schema() {
    psql "$PG_URL" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" -c "CREATE SCHEMA $SCHEMA" \
        -c "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public" >/dev/null
}

# measure <label> <rows> <command...>: one timed run; appends "wall cpu kib rows" to $WORK/<label>.runs.
measure() {
    local label=$1 rows=$2
    shift 2
    local report="$WORK/time.txt"
    /usr/bin/time -v "$@" 2>"$report" >/dev/null || { tail -20 "$report" >&2; return 1; }
    local wall cpu kib
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$report")
    cpu=$(awk -F': ' '/User time/ { u = $2 } /System time/ { s = $2 } END { print u + s }' "$report")
    kib=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$report")
    echo "$label: $rows rows, ${wall} s wall ($(awk -v r="$rows" -v w="$wall" 'BEGIN { printf "%.0f", r / w }') rows/s), ${cpu} s CPU, $((kib / 1024)) MB peak RSS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    echo "$wall $cpu $kib $rows" >>"$WORK/$label.runs"
}

# Each operation: op_<name> <label> <backend binary>.
op_import_jsonl() {
    rm -f "$WORK"/import.db*
    measure "$1" "$JSONL_ROWS" env DATABASE_PATH="$WORK/import.db" "$2" import "$WORK/catalogo-$SIZE.jsonl"
}

op_import_csv() {
    rm -f "$WORK"/import.db*
    measure "$1" "$CSV_ROWS" env DATABASE_PATH="$WORK/import.db" "$2" import "$WORK/catalogo-$SIZE.csv"
}

op_import_jsonl_pg() {
    fresh_schema
    measure "$1" "$JSONL_ROWS" env DATABASE_URL="$BENCH_PG" "$2" import "$WORK/catalogo-$SIZE.jsonl"
}

op_import_csv_pg() {
    fresh_schema
    measure "$1" "$CSV_ROWS" env DATABASE_URL="$BENCH_PG" "$2" import "$WORK/catalogo-$SIZE.csv"
}

op_to_pg() {
    fresh_schema
    measure "$1" "$COURSES" "$2" migrate --from "$SOURCE" --to-env BENCH_PG
}

# From the schema to_pg filled (made by this build's to_pg first if it is not there).
op_to_sqlite() {
    if [[ "$(psql "$PG_URL" -tA -c "SELECT COUNT(*) FROM $SCHEMA.courses" 2>/dev/null || echo 0)" != "$COURSES" ]]; then
        fresh_schema
        "$BACKEND" migrate --from "$SOURCE" --to-env BENCH_PG >/dev/null 2>&1
    fi
    rm -f "$WORK"/back.db*
    measure "$1" "$COURSES" "$2" migrate --from-env BENCH_PG --to "$WORK/back.db"
}

medians() {
    echo "| operation ($SIZE active courses) | rows | median wall | rows/s | median CPU | median peak RSS | runs |"
    echo "|---|---|---|---|---|---|---|"
    for op in $OPS; do
        for label in "$op-baseline" "$op"; do
            local file="$WORK/$label.runs"
            test -f "$file" || continue
            sort -n "$file" | awk -v label="$label" '{ w[NR] = $1; r = $4 } END { m = w[int((NR + 1) / 2)]; printf "| %s | %d | %.1f s | %.0f |", label, r, m, r / m }'
            awk '{ print $2 }' "$file" | sort -n | awk '{ c[NR] = $1 } END { printf " %.1f s |", c[int((NR + 1) / 2)] }'
            awk '{ print $3 }' "$file" | sort -n | awk '{ k[NR] = $1 } END { printf " %d MB | %d |\n", k[int((NR + 1) / 2)] / 1024, NR }'
        done
    done
}

main() {
    # SKIP_BUILD=1: measure the release binaries already built.
    test "${SKIP_BUILD:-0}" = 1 || build
    dataset
    for op in $OPS; do rm -f "$WORK/$op.runs" "$WORK/$op-baseline.runs"; done
    for _ in $(seq "$RUNS"); do
        for op in $OPS; do
            if [[ -n "${BASELINE:-}" ]]; then "op_$op" "$op-baseline" "$BASELINE"; fi
            "op_$op" "$op" "$BACKEND"
        done
    done
    psql "$PG_URL" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null
    medians
}

main "$@"

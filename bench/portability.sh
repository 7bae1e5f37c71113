#!/usr/bin/env bash
# Scale figures of the backend's data-portability commands (issue 11): time and peak memory of each
# operation on a 1,000,000-course SQLite catalog (plus about 5% archived courses), built by the
# scale bench's loader (bench/src/dataset.rs, seed 42: the same file every time).
#
#   bash bench/portability.sh                 # 1,000,000 courses, every operation, RUNS=3 each
#   SIZE=100000 RUNS=1 bash bench/portability.sh
#   OPS="export import_jsonl" SKIP_BUILD=1 bash bench/portability.sh
#
# Each operation is a function `op_<name>` that runs one timed command through `measure`; to add
# one (migrate, backup, restore: ADR 0041), write its function and add its name to OPS. Prints one
# line per run (wall seconds, peak RSS from /usr/bin/time -v) and the medians, as markdown rows.
set -euo pipefail

SIZE=${SIZE:-1000000}
RUNS=${RUNS:-3}
OPS=${OPS:-"export export_history import_jsonl import_csv"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/mcp-cursos-portability}
BACKEND="$ROOT/target/release/mcp-cursos-backend"
mkdir -p "$WORK"

build() {
    (cd "$ROOT" && cargo build --release --locked -p mcp-cursos-backend -p mcp-cursos-bench \
        --bin mcp-cursos-backend --bin scale)
}

# The catalog: the scale bench's loader builds it once (kept in $WORK, reused while the seed and
# size match); one timed iteration of its reads is the price of reusing it.
dataset() {
    "$ROOT/target/release/scale" --sizes "$SIZE" --iterations 1 --keep --dir "$WORK" >/dev/null
    SOURCE="$WORK/cursos-$SIZE.db"
    test -f "$SOURCE"
}

# measure <label> <command...>: runs it under /usr/bin/time -v; appends "seconds kib" to $WORK/<label>.runs.
measure() {
    local label=$1
    shift
    local report="$WORK/time.txt"
    /usr/bin/time -v "$@" 2>"$report" >/dev/null || { cat "$report" >&2; return 1; }
    local seconds kib
    seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$report")
    kib=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$report")
    echo "$label: ${seconds} s, $((kib / 1024)) MB peak RSS" >&2
    echo "$seconds $kib" >>"$WORK/$label.runs"
}

op_export() {
    measure export env DATABASE_PATH="$SOURCE" "$BACKEND" export --overwrite --output "$WORK/catalogo.jsonl"
}

op_export_history() {
    measure export_history env DATABASE_PATH="$SOURCE" "$BACKEND" export --overwrite --history --output "$WORK/catalogo-historico.jsonl"
}

# Into an empty file each run (the export of op_export, made first if missing).
op_import_jsonl() {
    test -f "$WORK/catalogo.jsonl" || env DATABASE_PATH="$SOURCE" "$BACKEND" export --output "$WORK/catalogo.jsonl" 2>/dev/null
    rm -f "$WORK"/import-jsonl.db*
    measure import_jsonl env DATABASE_PATH="$WORK/import-jsonl.db" "$BACKEND" import "$WORK/catalogo.jsonl"
}

op_import_csv() {
    if ! test -f "$WORK/catalogo.csv"; then
        # The active courses' titles and workloads, CSV-quoted: what a list from another system looks like.
        python3 "$ROOT/bench/csv_of_export.py" "$WORK/catalogo.jsonl" "$WORK/catalogo.csv"
    fi
    rm -f "$WORK"/import-csv.db*
    measure import_csv env DATABASE_PATH="$WORK/import-csv.db" "$BACKEND" import "$WORK/catalogo.csv"
}

medians() {
    echo "| operation ($SIZE courses) | median wall time | median peak RSS | runs |"
    echo "|---|---|---|---|"
    for op in $OPS; do
        local file="$WORK/$op.runs"
        test -f "$file" || continue
        sort -n "$file" | awk -v op="$op" '{ s[NR] = $1 } END { m = s[int((NR + 1) / 2)]; printf "| %s | %.1f s |", op, m }'
        awk '{ print $2 }' "$file" | sort -n | awk '{ k[NR] = $1 } END { printf " %d MB | %d |\n", k[int((NR + 1) / 2)] / 1024, NR }'
    done
}

main() {
    # SKIP_BUILD=1: measure the release binaries already built.
    test "${SKIP_BUILD:-0}" = 1 || build
    dataset
    for op in $OPS; do rm -f "$WORK/$op.runs"; done
    for _ in $(seq "$RUNS"); do
        for op in $OPS; do "op_$op"; done
    done
    medians
}

main "$@"

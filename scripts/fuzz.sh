#!/usr/bin/env bash
# Bounded coverage-guided fuzzing of the HTTP backend's request handling (fuzz/README.md).
#
#   FUZZ_SECONDS   how long libFuzzer runs, after the build (default 60; CI uses the default)
#   FUZZ_TIMEOUT   seconds one input may take before libFuzzer reports a hang (default 10)
#
# Builds fuzz/ (a Cargo project outside the workspace) with libFuzzer's coverage instrumentation
# on the stable toolchain: the SanitizerCoverage pass and `--cfg fuzzing` are ordinary `-C` flags,
# and no sanitizer is used, so neither nightly nor cargo-fuzz is needed. Runs the seed corpus, then
# mutates for FUZZ_SECONDS, prints how many inputs ran, and fails on any crash, hang or leak of
# a finding (the input is left in fuzz/artifacts/).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-10}"
TARGET=http_request

HOST_TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
# The flags cargo-fuzz passes for `--sanitizer none`. With an explicit --target, RUSTFLAGS reach the
# fuzzed crates only, not build scripts and proc-macros.
RUSTFLAGS="-Cpasses=sancov-module"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-level=4"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-pc-table"
RUSTFLAGS+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
RUSTFLAGS+=" --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
export RUSTFLAGS
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# The fuzz project's lock starts as the workspace's (the fuzzed crates get the versions CI tested);
# cargo only adds what the fuzz project alone needs (libfuzzer-sys, pinned exactly, and its deps).
cp Cargo.lock fuzz/Cargo.lock
build_start=$SECONDS
(cd fuzz && cargo build --release --target "$HOST_TRIPLE" --bin "$TARGET")
echo "fuzz: instrumented build took $((SECONDS - build_start)) s"

BIN="fuzz/target/$HOST_TRIPLE/release/$TARGET"
SEEDS="fuzz/corpus/$TARGET"
GENERATED="fuzz/target/corpus/$TARGET"      # new inputs go to the first directory: never the seeds
ARTIFACTS="fuzz/artifacts/$TARGET"
LOG="fuzz/target/$TARGET.log"
mkdir -p "$GENERATED" "$ARTIFACTS"

echo "fuzz: $TARGET for ${FUZZ_SECONDS} s (timeout ${FUZZ_TIMEOUT} s per input), seeds in $SEEDS"
status=0
"$BIN" "$GENERATED" "$SEEDS" \
  -dict="fuzz/$TARGET.dict" \
  -max_total_time="$FUZZ_SECONDS" \
  -timeout="$FUZZ_TIMEOUT" \
  -max_len=16384 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$ARTIFACTS/" \
  >"$LOG" 2>&1 || status=$?

grep -E '^(INFO: seed corpus|#[0-9]+[[:space:]]+(INITED|DONE))' "$LOG" || true
grep -E '^stat::' "$LOG" || true
executions="$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)"
if [[ "$status" -ne 0 ]]; then
  echo "fuzz: FAILED (libFuzzer exit $status); the end of $LOG:" >&2
  tail -60 "$LOG" >&2
  echo "fuzz: the input is in $ARTIFACTS/; replay it with: $BIN <file>" >&2
  exit 1
fi
echo "fuzz: $TARGET ran ${executions:-?} inputs in ${FUZZ_SECONDS} s, no crash, no hang"

#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer harnesses with clang (-fsanitize=fuzzer,address,undefined)
# and runs each for FUZZ_SECONDS seconds (default 300). Only the sources a harness needs are
# compiled (no CMake, no libkiln), into FUZZ_BUILD (default build-fuzz). Inputs the fuzzer finds
# interesting go to $FUZZ_BUILD/corpus/<harness>/; the committed seeds in fuzz/corpus/<harness>/
# are only read. A crash, a leak, undefined behaviour or an input slower than 10 s stops the run
# with a non-zero status and leaves the input as $FUZZ_BUILD/<harness>-crash-* (reproduce with
# `$FUZZ_BUILD/<harness> FILE`).
#
# Environment: FUZZ_SECONDS, FUZZ_BUILD, FUZZ_CXX (default clang++-14, else clang++), FUZZ_JOBS
# (parallel fuzzing processes per harness, default 1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_TO_RUN=${FUZZ_SECONDS:-300}
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
JOBS=${FUZZ_JOBS:-1}
CXX=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [ -z "$CXX" ]; then
  echo "fuzz/run.sh: clang++ not found; run 'bash tools/deps.sh --fuzz' (Debian: clang-14, libclang-rt-14-dev)" >&2
  exit 1
fi

# harness name -> the library sources it needs besides fuzz/<name>_fuzz.cpp
declare -A SOURCES=(
  [safetensors]="kiln/core/error.cpp kiln/core/dtype.cpp kiln/io/utf8.cpp kiln/io/json_cursor.cpp
                 kiln/io/safetensors_format.cpp kiln/io/safetensors_header.cpp"
  [flex_expr]="kiln/core/error.cpp kiln/ops/nn/flex/expr_text.cpp"
)

mkdir -p "$BUILD"
for name in "${!SOURCES[@]}"; do
  exe=$BUILD/${name}_fuzz
  srcs=("$ROOT/fuzz/${name}_fuzz.cpp")
  for s in ${SOURCES[$name]}; do srcs+=("$ROOT/$s"); done
  echo "fuzz: building $exe with $CXX"
  "$CXX" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$ROOT" "${srcs[@]}" -o "$exe"

  corpus=$BUILD/corpus/$name
  mkdir -p "$corpus"
  extra=()
  [ -f "$ROOT/fuzz/$name.dict" ] && extra+=(-dict="$ROOT/fuzz/$name.dict")
  # With -jobs, libFuzzer runs workers that log to files; one process logs here.
  [ "$JOBS" -gt 1 ] && extra+=(-jobs="$JOBS" -workers="$JOBS")
  echo "fuzz: running $name for ${SECONDS_TO_RUN}s"
  (cd "$BUILD" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    "$exe" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$BUILD/$name-" "${extra[@]}" \
    "$corpus" "$ROOT/fuzz/corpus/$name")
done

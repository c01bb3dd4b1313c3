#!/usr/bin/env bash
# Builds Kiln, installs it into a private prefix, builds the Kiln-vs-libtorch benchmarks against it
# (bench/libtorch: a separate CMake project, because CI has no torch), runs one or all of them and
# writes their reports:
#
#   bash bench/run.sh [--ops | --gnn | --train | --all] [--quick] [--threads N]
#
#   --ops    (default) pointwise, reductions, softmax, matmul: kiln_vs_torch -> bench/RESULTS.md
#   --gnn    scatter_reduce, gather, index_select, sort, topk, CSR mm: gnn_vs_torch
#            -> bench/RESULTS-gnn.md
#   --train  one training step of an MLP, a CNN and the demo's GPT: train_vs_torch
#            -> bench/RESULTS-train.md
#   --all    the three in turn
#   Other arguments go to the programs: --threads N (default: libtorch's, the number of cores),
#   --quick (smaller cases: a smoke test), --out PATH (another report file, e.g.
#   bench/RESULTS-train-threads1.md for a --threads 1 run).
#
# Both libraries run their threads as OpenMP teams (two libgomp runtimes in one process). With
# libgomp's default wait policy, idle workers spin; on a 2-core machine that other processes keep
# busy, spinning workers take the cores from the thread with work and --threads 2 timings of
# many small calls (a training step) grow 10-50x. OMP_WAIT_POLICY therefore defaults to passive
# here (set it to override); each report records it and the load averages.
#
# Environment: BUILD (Kiln's build directory, default build), KILN_PREFIX (an installed Kiln to
# use instead of building and installing one), BENCH_BUILD (the benchmarks' build directory,
# default $BUILD/bench/libtorch), JOBS (parallel build jobs, default the number of cores),
# TORCH_PYTHON (a Python whose environment has the pip torch wheel, default /opt/ref/bin/python).
set -euo pipefail

programs=() passed=()
for arg in "$@"; do
  case $arg in
    --ops) programs+=(kiln_vs_torch) ;;
    --gnn) programs+=(gnn_vs_torch) ;;
    --train) programs+=(train_vs_torch) ;;
    --all) programs+=(kiln_vs_torch gnn_vs_torch train_vs_torch) ;;
    *) passed+=("$arg") ;;
  esac
done
[ ${#programs[@]} -gt 0 ] || programs=(kiln_vs_torch)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
TORCH_PYTHON=${TORCH_PYTHON:-/opt/ref/bin/python}

if ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
  echo "bench/run.sh: $TORCH_PYTHON cannot import torch; set TORCH_PYTHON to a Python with the torch wheel" >&2
  exit 1
fi

JOBS=${JOBS:-$(nproc)}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if [ -n "${KILN_PREFIX:-}" ]; then
  PREFIX=$KILN_PREFIX
else
  [ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" -j "$JOBS"
  PREFIX=$BUILD/bench/kiln-prefix
  cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
fi

BENCH_BUILD=${BENCH_BUILD:-$BUILD/bench/libtorch}
# Named explicitly so that a benchmark build directory configured before follows a new prefix.
kiln_dir=$(ls -d "$PREFIX"/lib*/cmake/Kiln | head -1)
cmake -S "$ROOT/bench/libtorch" -B "$BENCH_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DKiln_DIR="$kiln_dir" \
  -DTORCH_PYTHON="$TORCH_PYTHON" >/dev/null
cmake --build "$BENCH_BUILD" -j "$JOBS" --target "${programs[@]}"

field() { lscpu | sed -n "s/^$1: *//p" | head -1; }
isa=AVX2
grep -qw avx512f /proc/cpuinfo && isa=AVX-512
machine="$(field 'Model name'), $(nproc) CPUs ($(field 'Core(s) per socket') cores per socket x \
$(field 'Socket(s)') socket(s), $(field 'Thread(s) per core') thread(s) per core), $isa, \
$(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo) RAM, $(uname -sr)"
version=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" --no-optional-locks status --porcelain 2>/dev/null | head -1)" ]; then
  version="$version (with uncommitted changes)"
fi

for program in "${programs[@]}"; do
  case $program in
    kiln_vs_torch) out=RESULTS.md ;;
    gnn_vs_torch) out=RESULTS-gnn.md ;;
    train_vs_torch) out=RESULTS-train.md ;;
  esac
  "$BENCH_BUILD/$program" --out "$ROOT/bench/$out" --machine "$machine" \
    --command "bash bench/run.sh $*" --kiln-version "$version" "${passed[@]}"
done

#!/usr/bin/env bash
# Builds Kiln, installs it into a private prefix, builds the Kiln-vs-libtorch benchmark against it
# (bench/libtorch: a separate CMake project, because CI has no torch), runs it and writes
# bench/RESULTS.md.
#
#   bash bench/run.sh [--quick] [--threads N]
#
# Environment: BUILD (Kiln's build directory, default build), TORCH_PYTHON (a Python whose
# environment has the pip torch wheel, default /opt/ref/bin/python).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
TORCH_PYTHON=${TORCH_PYTHON:-/opt/ref/bin/python}

if ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
  echo "bench/run.sh: $TORCH_PYTHON cannot import torch; set TORCH_PYTHON to a Python with the torch wheel" >&2
  exit 1
fi

[ -f "$BUILD/build.ninja" ] || cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j "$(nproc)"
PREFIX=$BUILD/bench/kiln-prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null

cmake -S "$ROOT/bench/libtorch" -B "$BUILD/bench/libtorch" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DTORCH_PYTHON="$TORCH_PYTHON" >/dev/null
cmake --build "$BUILD/bench/libtorch" -j "$(nproc)"

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

"$BUILD/bench/libtorch/kiln_vs_torch" --out "$ROOT/bench/RESULTS.md" --machine "$machine" \
  --command "bash bench/run.sh $*" --kiln-version "$version" "$@"

#!/usr/bin/env bash
# Kiln's exported programs against torch.export, side by side (bench/RESULTS-export.md):
#
#   bash bench/export_bench.sh [--no-aoti]
#
# Builds bench/export_bench.cpp by hand against the built libkiln.so (the flags of bench/
# gemm_dtypes in compile_commands.json), unless KILN_EXPORT_BENCH names a built program (the
# CMake target export_bench: build/bench/export_bench). Runs it, then bench/export_bench.py
# under TORCH_PYTHON, one after the other, and prints both outputs and a table of Kiln/torch
# ratios. --no-aoti skips torch's AOTInductor case (its two compiles take about 15 s on 2 cores).
#
# Environment: BUILD (Kiln's build directory, default build), OUT (where the program, the raw
# outputs and the compile caches go, default /tmp/export_bench), TORCH_PYTHON (default
# /opt/ref/bin/python). Kiln keeps its default thread count; torch's side sets as many threads as
# cores. KILN_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR default to fresh folders under $OUT (removed
# at exit), so both compilers' first calls compile from nothing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=${OUT:-/tmp/export_bench}
TORCH_PYTHON=${TORCH_PYTHON:-/opt/ref/bin/python}
mkdir -p "$OUT"

if [ -n "${KILN_EXPORT_BENCH:-}" ]; then
  program=$KILN_EXPORT_BENCH
else
  program=$OUT/export_bench
  if [ ! -x "$program" ] || [ "$ROOT/bench/export_bench.cpp" -nt "$program" ] ||
     [ "$BUILD/libkiln.so" -nt "$program" ]; then
    echo "building $program" >&2
    "${CXX:-c++}" -I"$ROOT" -O3 -DNDEBUG -Wall -Wextra -std=c++20 \
      -o "$program" "$ROOT/bench/export_bench.cpp" \
      -L"$BUILD" -lkiln -Wl,-rpath,"$BUILD"
  fi
fi

# Fresh compile caches, removed at exit, unless the caller names its own.
if [ -z "${KILN_CACHE_DIR:-}" ] || [ -z "${TORCHINDUCTOR_CACHE_DIR:-}" ]; then
  caches=$(mktemp -d "$OUT/caches.XXXXXX")
  trap 'rm -rf "$caches"' EXIT
  export KILN_CACHE_DIR=${KILN_CACHE_DIR:-$caches/kiln}
  export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$caches/inductor}
fi

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)} OMP_NUM_THREADS=${OMP_NUM_THREADS:-(unset)}"
echo "# kiln: $program"
"$program" | tee "$OUT/kiln.txt"
echo "# torch: $TORCH_PYTHON $ROOT/bench/export_bench.py $*"
"$TORCH_PYTHON" "$ROOT/bench/export_bench.py" "$@" 2>"$OUT/torch.stderr" | tee "$OUT/torch.txt"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$TORCH_PYTHON" - "$OUT/kiln.txt" "$OUT/torch.txt" <<'EOF'
import sys


def figures(path):
    out = {}
    for line in open(path):
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            out[parts[0], parts[1]] = float(parts[2])
    return out


kiln, torch = figures(sys.argv[1]), figures(sys.argv[2])
rows = []
for case in ("lstm", "transformer"):
    rows += [
        (case, "module forward (eager)", "kiln_module", "torch_module"),
        (case, "loaded program, eager runtime", "kiln_export", "torch_export"),
        (case, "loaded program, compiled", "kiln_compiled", "torch_compiled"),
        (case, "AOT shared library", "kiln_aot", "torch_aoti"),
        (case, "compiled: first call", "kiln_compiled_first_call", "torch_compiled_first_call"),
        (case, "load_program / export.load + .module()", "kiln_load_once", "torch_load_once"),
        (case, "AOT: build the library", "kiln_aot_build_once", "torch_aoti_compile_once"),
    ]
rows += [
    ("mlp100m", "load_program / torch.export.load", "kiln_load", "torch_load"),
    ("mlp100m", "load_program / export.load + .module()", "kiln_load", "torch_load_module"),
]


def cell(table, case, label):
    value = table.get((case, label)) if label else None
    if value is None:
        return "-", None
    if value >= 1e5:
        return f"{value / 1e3:,.1f} ms", value
    return f"{value:,.1f} us", value


print("| case | what | Kiln | torch | Kiln/torch |")
print("|---|---|---:|---:|---:|")
for case, what, k, t in rows:
    (ks, kv), (ts, tv) = cell(kiln, case, k), cell(torch, case, t)
    ratio = "-"
    if kv is not None and tv is not None:
        ratio = f"{kv / tv:.2f}" if kv / tv >= 0.1 else f"{kv / tv:.2g}"
    print(f"| {case} | {what} | {ks} | {ts} | {ratio} |")
for side, table in (("Kiln", kiln), ("torch", torch)):
    for (case, label), value in table.items():
        if label.endswith("_bytes"):
            print(f"{side} {case} file: {value / 1e6:.1f} MB")
EOF

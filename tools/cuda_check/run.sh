#!/usr/bin/env bash
# On a lent GPU machine (docs/cuda.md, "Testing on a GPU"): unpacks build/cuda-bundle.tar.xz
# (bundle.sh), runs the CUDA tests and the op table's CudaMatchesCpu suite (sharded over the
# cores: most of its time is NVRTC compiling each op's kernels once), after bench/cuda_vs_torch.py
# against the machine's PyTorch. Logs go to $OUT; a summary is printed last.
set -u
OUT=${OUT:-/tmp/cuda-check}
mkdir -p "$OUT"
B=$(mktemp -d)
tar -xJf build/cuda-bundle.tar.xz -C "$B"
# cuDNN (the backend links it) from PyTorch's wheel where the toolkit's folder has none.
CUDNN_LIB=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)
export LD_LIBRARY_PATH="$B/lib:$B/lib/kiln/backends:/usr/local/cuda/lib64:${CUDNN_LIB:-}:${LD_LIBRARY_PATH:-}"
export KILN_CACHE_DIR="$B/cache"
export KILN_TEST_BACKEND_PATH="$B/lib/libkiln_test_backend.so"
nvidia-smi -L
# The benchmarks first, on a quiet machine (the op table below keeps every core busy).
[ "${BENCH:-1}" = 1 ] && timeout 200 python3 bench/cuda_vs_torch.py "$B/bin/cuda_bench" 2>&1 | tee "$OUT/bench.log"
[ "${VARIANTS:-1}" = 1 ] && timeout 120 "$B/bin/cuda_pointwise_variants" 2>&1 | tee "$OUT/variants.log"
"$B/bin/kiln_cuda_tests" > "$OUT/kiln_cuda_tests.log" 2>&1
echo "kiln_cuda_tests exit $?"
KILN_LAUNCH_BLOCKING=1 "$B/bin/kiln_cuda_tests" --gtest_filter='CudaDeviceAssert.*' \
  > "$OUT/launch_blocking.log" 2>&1
echo "device-side assertion tests with KILN_LAUNCH_BLOCKING=1: exit $?"
SHARDS=${SHARDS:-16}
for i in $(seq 0 $((SHARDS - 1))); do
  GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i timeout 400 "$B/bin/kiln_tests" \
    --gtest_filter="${FILTER:-*CudaMatchesCpu*:DeviceBackend*}" > "$OUT/op_table.$i.log" 2>&1 &
done
wait
for i in $(seq 0 $((SHARDS - 1))); do
  f="$OUT/op_table.$i.log"
  grep -q "Global test environment tear-down" "$f" || echo "shard $i crashed during: $(grep '^\[ RUN' "$f" | tail -1)"
done
cat "$OUT"/op_table.*.log > "$OUT/op_table.log" && rm "$OUT"/op_table.*.log
echo "op table: $(grep -c '^\[       OK \]' "$OUT/op_table.log") passed," \
     "$(grep -c '^\[  FAILED  \].*ms)$' "$OUT/op_table.log") failed"
# Each failure with the first lines of its message.
grep -A3 "Failure$" "$OUT/op_table.log" | grep -v "^--$" | cut -c1-220 | head -90
grep -h "runs through the CPU fallback on cuda" "$OUT/op_table.log" | sort -u | wc -l | xargs echo "ops through the CPU fallback:"
grep -h -A4 "Failure$" "$OUT/kiln_cuda_tests.log" "$OUT/launch_blocking.log" | cut -c1-300 | head -60
tail -3 "$OUT/launch_blocking.log"
tail -5 "$OUT/kiln_cuda_tests.log"

// The cost of calling a kiln::compile'd function on tiny inputs, where the guard check and the
// replay's bookkeeping are all there is to measure (Google Benchmark):
//
//   build/bench/compile_overhead
//
// Each case runs the same function eagerly and compiled (the "eager" backend replays the graph
// through the dispatcher, so compiled minus eager is the guard check plus the replay's
// overhead). bench/compile_overhead.py measures torch.compile the same way; figures and the
// commands: bench/RESULTS-compile.md.
#include <benchmark/benchmark.h>

#include "kiln/kiln.h"

namespace {

using kiln::Tensor;

Tensor pointwise(const Tensor& x) { return (x * 2.0 + 1.0).relu(); }
Tensor block(const Tensor& x, const Tensor& w, const Tensor& b) {
  return kiln::gelu(x.matmul(w) + b);
}

void BM_PointwiseEager(benchmark::State& state) {
  const Tensor x = kiln::randn({4});
  for (auto _ : state) benchmark::DoNotOptimize(pointwise(x));
}

void BM_PointwiseCompiled(benchmark::State& state) {
  auto f = kiln::compile(pointwise, kiln::CompileOptions().dynamic(state.range(0) != 0));
  const Tensor x = kiln::randn({4});
  f(x);
  for (auto _ : state) benchmark::DoNotOptimize(f(x));
}

void BM_BlockEager(benchmark::State& state) {
  const Tensor x = kiln::randn({8, 64}), w = kiln::randn({64, 64}), b = kiln::randn({64});
  for (auto _ : state) benchmark::DoNotOptimize(block(x, w, b));
}

void BM_BlockCompiled(benchmark::State& state) {
  auto f = kiln::compile(block);
  const Tensor x = kiln::randn({8, 64}), w = kiln::randn({64, 64}), b = kiln::randn({64});
  f(x, w, b);
  for (auto _ : state) benchmark::DoNotOptimize(f(x, w, b));
}

}  // namespace

BENCHMARK(BM_PointwiseEager);
BENCHMARK(BM_PointwiseCompiled)->Arg(0)->Arg(1)->ArgName("dynamic");
BENCHMARK(BM_BlockEager);
BENCHMARK(BM_BlockCompiled);
BENCHMARK_MAIN();

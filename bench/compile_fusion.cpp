// What kiln::compile's generated kernels gain over eager, on the cases (Google
// Benchmark):
//
//   build/bench/compile_fusion
//
// memcpy of 16M floats (on Kiln's threads) gives the machine's copy bandwidth; gelu(x*w+b) and a
// six-op chain over 16M floats run eagerly and compiled (one fused kernel each); softmax,
// layer_norm, rms_norm and cross_entropy over [4096, 4096] the same, and the mean squared error of
// two 16M-float vectors (a reduction of every element), (x*2).sum(0) over [4096, 4096] (over the
// leading dim); a linear layer with gelu, gelu(x @ w + b); the demo GPT's forward; and
// the cost of a cold compile (the C++ compiler runs) and of a warm one (the kernel cache on disk,
// as a new process sees it). bench/compile_fusion.py measures torch eager and torch.compile on the
// same cases; figures and commands: bench/RESULTS-compile.md.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

namespace {

using kiln::Tensor;
constexpr int64_t kN = 16 << 20;

Tensor gelu_affine(const Tensor& x, const Tensor& w, const Tensor& b) {
  return kiln::gelu(x * w + b);
}
Tensor chain(const Tensor& x, const Tensor& y) {
  return ((x * y + 1.0).sigmoid() - x).tanh() * 0.5 + y.exp();
}

void bytes(benchmark::State& state, int64_t n) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n);
}

// memcpy on as many threads as Kiln's kernels use, each copying its share.
void BM_Memcpy(benchmark::State& state) {
  std::vector<float> a(kN, 1.0f), b(kN);
  const int threads = kiln::get_num_threads();
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const int64_t begin = kN * t / threads, end = kN * (t + 1) / threads;
        std::memcpy(b.data() + begin, a.data() + begin, (end - begin) * sizeof(float));
      });
    for (auto& t : pool) t.join();
    benchmark::DoNotOptimize(b.data());
  }
  bytes(state, 2 * kN * 4);
}

void BM_GeluAffine(benchmark::State& state) {
  const bool compiled = state.range(0) != 0;
  const Tensor x = kiln::randn({kN / 1024, 1024}), w = kiln::randn({1024}), b = kiln::randn({1024});
  auto f = kiln::compile(gelu_affine);
  for (auto _ : state) benchmark::DoNotOptimize(compiled ? f(x, w, b) : gelu_affine(x, w, b));
  bytes(state, 2 * kN * 4);  // x read, the result written
}

void BM_Chain(benchmark::State& state) {
  const bool compiled = state.range(0) != 0;
  const Tensor x = kiln::randn({kN}), y = kiln::randn({kN});
  auto f = kiln::compile(chain);
  for (auto _ : state) benchmark::DoNotOptimize(compiled ? f(x, y) : chain(x, y));
  bytes(state, 3 * kN * 4);
}

// Reductions over [4096, 4096] (extern calls into the eager kernels so far).
Tensor softmax(const Tensor& x) { return kiln::softmax(x, -1); }
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  return kiln::layer_norm(x, {4096}, w, b);
}
Tensor rms_norm(const Tensor& x, const Tensor& w) { return kiln::rms_norm(x, {4096}, w); }
Tensor cross_entropy(const Tensor& x, const Tensor& t) { return kiln::cross_entropy(x, t); }

// A reduction of every element: the mean squared error over 16M floats.
Tensor mean_squared_error(const Tensor& x, const Tensor& y) { return ((x - y) * (x - y)).mean(); }
// A reduction over the leading dim (a column sum, as a bias gradient is).
Tensor scaled_column_sum(const Tensor& x) { return (x * 2.0).sum(0); }
// A reduction over dims that are not consecutive: batch norm's variance over [N, C, H, W].
Tensor channel_variance(const Tensor& x, const Tensor& mean) {
  return ((x - mean) * (x - mean)).mean({0, 2, 3});
}

template <class Fn, class... A>
void run_case(benchmark::State& state, Fn fn, const A&... a) {
  auto f = kiln::compile(fn);
  const bool compiled = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(compiled ? f(a...) : fn(a...));
}

void BM_Softmax(benchmark::State& state) { run_case(state, softmax, kiln::randn({4096, 4096})); }
void BM_LayerNorm(benchmark::State& state) {
  run_case(state, layer_norm, kiln::randn({4096, 4096}), kiln::randn({4096}), kiln::randn({4096}));
}
void BM_RmsNorm(benchmark::State& state) {
  run_case(state, rms_norm, kiln::randn({4096, 4096}), kiln::randn({4096}));
}
void BM_MeanSquaredError(benchmark::State& state) {
  run_case(state, mean_squared_error, kiln::randn({kN}), kiln::randn({kN}));
  bytes(state, 2 * kN * 4);
}
void BM_ColumnSum(benchmark::State& state) {
  run_case(state, scaled_column_sum, kiln::randn({4096, 4096}));
}
void BM_ChannelVariance(benchmark::State& state) {
  run_case(state, channel_variance, kiln::randn({64, 64, 32, 32}), kiln::randn({64, 1, 1}));
}
void BM_CrossEntropy(benchmark::State& state) {
  run_case(state, cross_entropy, kiln::randn({4096, 4096}), kiln::randint(0, 4096, {4096}));
}

// A linear layer and its activation, gelu(x @ w + b), at three shapes (argument "shape"):
// 0 x [4096, 256] @ w [256, 1024] (the demo GPT's MLP widths on 4096 tokens), 1 [576, 64] @
// [64, 256] (the demo GPT's MLP on its 64 x 9-token batch), 2 [256, 64] @ [64, 96] (under 2^21
// multiply-adds: Kiln's own GEMM kernel by default). Variant 0 eager (the GEMM, then the bias add
// and gelu as two passes), 1 compiled (by default the epilogue runs inside the GEMM's panels where
// Kiln's kernel computes it, else one fused pass after it), 2 the GEMM alone, 3 compiled with mode
// "max-autotune" (each GEMM on the implementation timed fastest, and its epilogue inside or after
// it, as timed).
constexpr int64_t kLinearShapes[3][3] = {{4096, 256, 1024}, {576, 64, 256}, {256, 64, 96}};
Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& b) {
  return kiln::gelu(x.matmul(w) + b);
}
void BM_LinearGelu(benchmark::State& state) {
  const auto& [m, k, n] = kLinearShapes[state.range(1)];
  const Tensor x = kiln::randn({m, k}), w = kiln::randn({k, n}), b = kiln::randn({n});
  auto f = kiln::compile(linear_gelu);
  auto tuned = kiln::compile(linear_gelu, kiln::CompileOptions().mode("max-autotune"));
  for (auto _ : state) {
    switch (state.range(0)) {
      case 0:
        benchmark::DoNotOptimize(linear_gelu(x, w, b));
        break;
      case 1:
        benchmark::DoNotOptimize(f(x, w, b));
        break;
      case 3:
        benchmark::DoNotOptimize(tuned(x, w, b));
        break;
      default:
        benchmark::DoNotOptimize(x.matmul(w));
    }
  }
}

// The demo's GPT (vocabulary 12, block 8, 2 layers, 4 heads, 64 channels) on [16, 8] tokens,
// for inference (under NoGradGuard: compiled graphs with parameters that require grad run on
// the eager kernels until compiled training lands).
void BM_GptForward(benchmark::State& state) {
  kiln::manual_seed(0);
  gpt::GPT model(gpt::Config{12, 8, 2, 4, 64, 0.0});
  model->eval();
  kiln::NoGradGuard no_grad;
  const Tensor idx = kiln::randint(0, 12, {16, 8});
  auto f = kiln::compile(model);
  const bool compiled = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(compiled ? f(idx) : model(idx));
}

// A cold compile: a fresh cache directory each time (the C++ compiler runs, the precompiled
// header is already built). A warm one: the kernels come from the disk cache, as in a new
// process (the in-memory cache is cleared).
void BM_CompileLatency(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "kiln-bench-compile-cache";
  setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  const Tensor x = kiln::randn({64, 1024}), w = kiln::randn({1024}), b = kiln::randn({1024});
  kiln::compile(gelu_affine)(x, w, b);  // builds the precompiled header once
  for (auto _ : state) {
    state.PauseTiming();
    kiln::compiler::clear_memory_cache();
    if (cold) fs::remove_all(dir / "kernels");
    auto f = kiln::compile(gelu_affine);
    state.ResumeTiming();
    benchmark::DoNotOptimize(f(x, w, b));
  }
  unsetenv("KILN_CACHE_DIR");
}

}  // namespace

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GeluAffine)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Chain)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Softmax)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LayerNorm)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_RmsNorm)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_MeanSquaredError)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ColumnSum)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ChannelVariance)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CrossEntropy)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LinearGelu)
    ->ArgNames({"variant", "shape"})
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_GptForward)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_CompileLatency)
    ->ArgName("cold")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

BENCHMARK_MAIN();

// scaled_dot_product_attention on the CPU (Google Benchmark), the flash backend against the math
// one, on the shapes:
//
//   build/bench/attention
//
// B1 H25 S1024 D64 float32 forward (the shape PyTorch benchmarked its CPU flash kernel on);
// causal B1 H8 S4096 D64 bfloat16, forward and forward+backward; and a 1024^3 sgemm through
// matmul for the machine's GEMM rate; flex_attention at S4096 with no mask, a causal mask and a
// sliding window of 256 (torch's side: torch.compile(flex_attention)). Counters give GFLOP/s
// (attention: 4 S^2 D per head, half of it when causal; the backward counts 2.5 times the forward).
// bench/attention.py runs torch's CPU sdpa on the same cases; figures and commands:
// bench/RESULTS-attention.md.
#include <benchmark/benchmark.h>

#include "kiln/kiln.h"

namespace {

using kiln::Tensor;
using kiln::nn::attention::SDPBackend;

void flops(benchmark::State& state, double per_call) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(per_call * 1e-9 * state.iterations(), benchmark::Counter::kIsRate);
}

SDPBackend backend(const benchmark::State& state) {
  return state.range(0) ? SDPBackend::flash_attention : SDPBackend::math;
}

void BM_SdpaForward(benchmark::State& state) {
  kiln::nn::attention::sdpa_kernel only({backend(state)});
  const Tensor q = kiln::randn({1, 25, 1024, 64}), k = kiln::randn({1, 25, 1024, 64}),
               v = kiln::randn({1, 25, 1024, 64});
  for (auto _ : state) benchmark::DoNotOptimize(kiln::scaled_dot_product_attention(q, k, v));
  flops(state, 4.0 * 1024 * 1024 * 64 * 25);
}

struct Causal {
  Tensor q, k, v;
  Causal() {
    const kiln::TensorOptions bf16(kiln::kBFloat16);
    q = kiln::randn({1, 8, 4096, 64}, bf16);
    k = kiln::randn({1, 8, 4096, 64}, bf16);
    v = kiln::randn({1, 8, 4096, 64}, bf16);
  }
  static constexpr double kFlops = 4.0 * 4096 * 4096 * 64 * 8 / 2;
};

void BM_CausalBf16Forward(benchmark::State& state) {
  kiln::nn::attention::sdpa_kernel only({backend(state)});
  const Causal c;
  kiln::NoGradGuard no_grad;
  for (auto _ : state)
    benchmark::DoNotOptimize(kiln::scaled_dot_product_attention(c.q, c.k, c.v, {}, 0, true));
  flops(state, Causal::kFlops);
}

void BM_CausalBf16ForwardBackward(benchmark::State& state) {
  kiln::nn::attention::sdpa_kernel only({backend(state)});
  Causal c;
  c.q.requires_grad_();
  c.k.requires_grad_();
  c.v.requires_grad_();
  for (auto _ : state) {
    kiln::scaled_dot_product_attention(c.q, c.k, c.v, {}, 0, true).sum().backward();
    benchmark::DoNotOptimize(c.q.grad());
  }
  flops(state, Causal::kFlops * 3.5);
}

// flex_attention over B1 H8 S4096 D64 float32: full attention (no mask), causal, and a causal
// sliding window of 256 keys, each through a block mask of 128 x 128 blocks. Counters give the
// FLOP rate of the visible blocks.
void BM_FlexForward(benchmark::State& state) {
  using kiln::flex::Expr;
  const int64_t s = 4096;
  const Tensor q = kiln::randn({1, 8, s, 64}), k = kiln::randn({1, 8, s, 64}),
               v = kiln::randn({1, 8, s, 64});
  std::optional<kiln::BlockMask> mask;
  if (state.range(0) == 1)
    mask = kiln::create_block_mask([](Expr, Expr, Expr i, Expr j) { return i >= j; }, std::nullopt,
                                   std::nullopt, s, s);
  if (state.range(0) == 2)
    mask =
        kiln::create_block_mask([](Expr, Expr, Expr i, Expr j) { return (i >= j) & (i - j < 256); },
                                std::nullopt, std::nullopt, s, s);
  kiln::NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(kiln::flex_attention(q, k, v, {}, mask));
  const double visible = mask ? 1 - mask->sparsity() / 100 : 1.0;
  flops(state, 4.0 * s * s * 64 * 8 * visible);
}

void BM_Sgemm1024(benchmark::State& state) {
  const Tensor a = kiln::randn({1024, 1024}), b = kiln::randn({1024, 1024});
  for (auto _ : state) benchmark::DoNotOptimize(kiln::matmul(a, b));
  flops(state, 2.0 * 1024 * 1024 * 1024);
}

BENCHMARK(BM_SdpaForward)->ArgName("flash")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CausalBf16Forward)->ArgName("flash")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CausalBf16ForwardBackward)
    ->ArgName("flash")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlexForward)
    ->ArgName("mask")  // 0 none, 1 causal, 2 causal sliding window of 256
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sgemm1024)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

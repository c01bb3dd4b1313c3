// Training steps with the forward compiled (kiln::compile's joint forward/backward graphs)
// against the same steps in eager mode (Google Benchmark):
//
//   build/bench/compile_training
//
// A step is zero_grad, the forward, cross_entropy, backward and an AdamW step; only the forward
// (and so its backward) is compiled, as torch.compile(model) does it. Cases: the demo GPT
// (vocabulary 12, block 8, 2 layers, 4 heads, 64 channels) on [64, 8] tokens, and an MLP
// 784-512-512-10 with ReLU on a batch of 128, and a small CNN on 32 MNIST-sized images. The GPT
// also runs with its blocks compiled regionally (block->compile()), and the cold start of an
// 8-block GPT compares the two ways of compiling. The memory a GPT block's step holds and peaks
// at, eager and compiled, is BM_GptBlockMemory. bench/compile_training.py times torch eager and
// torch.compile on the same cases; figures and commands: bench/RESULTS-compile.md.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

namespace {

using kiln::Tensor;

// compiled_autograd: the backward passes run under kiln::compiler::compiled_autograd.
template <class Model, class Forward>
void train_steps(benchmark::State& state, Model& model, Forward forward, const Tensor& x,
                 const Tensor& y, bool compiled_autograd = false) {
  std::optional<kiln::compiler::CompiledAutograd> guard;
  if (compiled_autograd) guard.emplace();
  kiln::optim::AdamW opt(model->parameters(), kiln::optim::AdamWOptions(1e-3));
  for (auto _ : state) {
    opt.zero_grad();
    Tensor logits = forward(x);
    Tensor loss = kiln::cross_entropy(logits.flatten(0, logits.dim() - 2), y.flatten());
    loss.backward();
    opt.step();
  }
}

// The whole step compiled as one function: zero_grad, the forward, the loss, its backward()
// (traced into the same graph) and the optimizer's step() (run after each call of the graph).
template <class Model, class Forward>
void train_steps_whole(benchmark::State& state, Model& model, Forward forward, const Tensor& x,
                       const Tensor& y) {
  kiln::optim::AdamW opt(model->parameters(), kiln::optim::AdamWOptions(1e-3));
  auto step = kiln::compile(
      [&](const Tensor& inputs, const Tensor& targets) {
        opt.zero_grad();
        Tensor logits = forward(inputs);
        Tensor loss = kiln::cross_entropy(logits.flatten(0, logits.dim() - 2), targets.flatten());
        loss.backward();
        opt.step();
        return loss.detach();
      },
      kiln::CompileOptions().fullgraph(true));
  for (int i = 0; i < 2; ++i) step(x, y);  // the captures: .grad None, then defined
  for (auto _ : state) step(x, y);
}

// compiled: 0 eager, 1 the whole model under kiln::compile, 2 its blocks compiled regionally
// (block->compile(); the embeddings and the output layer run eagerly), 3 an eager forward with
// the backward under compiled autograd, 4 the whole model compiled and compiled autograd, 5 the
// whole step compiled as one function (train_steps_whole).
void BM_GptTrainStep(benchmark::State& state) {
  kiln::manual_seed(0);
  gpt::GPT model(gpt::Config{12, 8, 2, 4, 64, 0.0});
  const Tensor x = kiln::randint(0, 12, {64, 8}), y = kiln::randint(0, 12, {64, 8});
  auto eager = [&](const Tensor& t) { return model(t); };
  const int64_t mode = state.range(0);
  if (mode == 1 || mode == 4) {
    auto f = kiln::compile(model);
    return train_steps(
        state, model, [&](const Tensor& t) { return f(t); }, x, y, mode == 4);
  }
  if (mode == 5) return train_steps_whole(state, model, eager, x, y);
  if (mode == 2)
    for (const auto& block : *model->blocks) block->compile();
  train_steps(state, model, eager, x, y, mode == 3);
}

// The first training step of an 8-block GPT with an empty kernel cache (the C++ compiler runs):
// regional: 0 the whole model compiled, 1 its blocks compiled regionally.
void BM_GptColdStart(benchmark::State& state) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "kiln-bench-cold-start";
  setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  const Tensor x = kiln::randint(0, 12, {64, 8}), y = kiln::randint(0, 12, {64, 8});
  for (auto _ : state) {
    state.PauseTiming();
    kiln::compiler::reset();
    kiln::compiler::clear_memory_cache();
    fs::remove_all(dir / "kernels");
    kiln::manual_seed(0);
    gpt::GPT model(gpt::Config{12, 8, 8, 4, 64, 0.0});
    state.ResumeTiming();
    Tensor logits;
    if (state.range(0) == 1) {
      for (const auto& block : *model->blocks) block->compile();
      logits = model(x);
    } else {
      logits = kiln::compile(model)(x);
    }
    kiln::cross_entropy(logits.flatten(0, 1), y.flatten()).backward();
  }
  unsetenv("KILN_CACHE_DIR");
}

// A Sequential's steps, eager (compiled: 0), with kiln::compile(model) (compiled: 1), eager
// with the backward under compiled autograd (compiled: 2), or the whole step compiled as one
// function (compiled: 3).
void train_sequential(benchmark::State& state, kiln::nn::Sequential& model, const Tensor& x,
                      const Tensor& y) {
  if (state.range(0) == 3)
    return train_steps_whole(
        state, model, [&](const Tensor& t) { return model->forward(t); }, x, y);
  if (state.range(0) != 1)
    return train_steps(
        state, model, [&](const Tensor& t) { return model->forward(t); }, x, y,
        state.range(0) == 2);
  auto f = kiln::compile(model);
  train_steps(
      state, model, [&](const Tensor& t) { return f(t); }, x, y);
}

void BM_MlpTrainStep(benchmark::State& state) {
  namespace nn = kiln::nn;
  kiln::manual_seed(0);
  nn::Sequential model(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 512), nn::ReLU(),
                       nn::Linear(512, 10));
  const Tensor x = kiln::randn({128, 784}), y = kiln::randint(0, 10, {128});
  train_sequential(state, model, x, y);
}

// A small CNN on MNIST-sized images: conv 1->16 5x5, ReLU, max-pool 2, conv 16->32 5x5, ReLU,
// max-pool 2, a linear layer to 10 classes; batch 32.
void BM_CnnTrainStep(benchmark::State& state) {
  namespace nn = kiln::nn;
  kiln::manual_seed(0);
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 16, 5)), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Conv2d(nn::Conv2dOptions(16, 32, 5)), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Flatten(), nn::Linear(32 * 4 * 4, 10));
  const Tensor x = kiln::randn({32, 1, 28, 28}), y = kiln::randint(0, 10, {32});
  train_sequential(state, model, x, y);
}

// The memory of one GPT block's training step (64 tokens of 16 sequences, 256 channels, 4 heads,
// a [16, 64, 256] float activation is 1 MiB): held_MiB is what the forward leaves allocated for
// the backward (its saved values and its result), peak_MiB the most allocated during forward
// and backward, both above what was allocated before (kiln::cpu::memory_allocated).
// compiled: 0 eager, 1 kiln::compile(block).
void BM_GptBlockMemory(benchmark::State& state) {
  kiln::manual_seed(0);
  gpt::Block block(gpt::Config{12, 64, 1, 4, 256, 0.0});
  const Tensor x = kiln::randn({16, 64, 256}).requires_grad_();
  auto f = kiln::compile(block);
  auto forward = [&] { return state.range(0) == 1 ? f(x) : block->forward(x); };
  forward().sum().backward();  // compiles
  double held = 0, peak = 0;
  for (auto _ : state) {
    block->zero_grad();
    x.mutable_grad() = Tensor();
    const int64_t before = kiln::cpu::memory_allocated();
    kiln::cpu::reset_peak_memory_stats();
    Tensor y = forward();
    held = static_cast<double>(kiln::cpu::memory_allocated() - before);
    y.sum().backward();
    peak = static_cast<double>(kiln::cpu::max_memory_allocated() - before);
  }
  state.counters["held_MiB"] = held / (1 << 20);
  state.counters["peak_MiB"] = peak / (1 << 20);
}

}  // namespace

BENCHMARK(BM_GptBlockMemory)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_GptTrainStep)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->Arg(5)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_GptColdStart)
    ->ArgName("regional")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(BM_MlpTrainStep)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK(BM_CnnTrainStep)
    ->ArgName("compiled")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK_MAIN();

// `make demo`: trains a small GPT in C++ with Kiln.
//
// Default task (no download): multi-digit addition written as text ("12+07=" -> the sum's digits
// reversed). It reports the exact-match accuracy on held-out problems the model never saw and
// prints a few of them. With --text FILE it trains a character-level language model on any text
// file instead and prints samples.
//
//   demo [--steps N] [--digits D] [--text FILE] [--checkpoint PATH] [--resume] [--seed S] [--flex]
//        [--compile]
//
// --flex runs the causal attention through flex_attention and a causal block mask instead of
// scaled_dot_product_attention. --compile trains with the whole training step (forward, backward,
// clipping, AdamW) under kiln::compile, and first prints the compile time and the speed-up over
// eager.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <numbers>
#include <random>
#include <string>

#include "examples/gpt/model.h"
#include "examples/gpt/progress.h"
#include "examples/gpt/tasks.h"
#include "kiln/io/checkpoint.h"
#include "kiln/optim/optim.h"

using namespace kiln;

namespace {

struct Args {
  int64_t steps = 1000;
  int digits = 2;
  std::string text;
  std::string checkpoint = "gpt_demo.safetensors";
  bool resume = false;
  uint64_t seed = 1337;
  bool flex = false;
  bool compile = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> std::string {
      KILN_CHECK(i + 1 < argc, "demo: ", argv[i], " needs a value");
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--steps"))
      a.steps = std::stoll(next());
    else if (!std::strcmp(argv[i], "--digits"))
      a.digits = std::stoi(next());
    else if (!std::strcmp(argv[i], "--text"))
      a.text = next();
    else if (!std::strcmp(argv[i], "--checkpoint"))
      a.checkpoint = next();
    else if (!std::strcmp(argv[i], "--resume"))
      a.resume = true;
    else if (!std::strcmp(argv[i], "--seed"))
      a.seed = std::stoull(next());
    else if (!std::strcmp(argv[i], "--flex"))
      a.flex = true;
    else if (!std::strcmp(argv[i], "--compile"))
      a.compile = true;
    else
      KILN_FAIL("demo: unknown argument '", argv[i], "' (see the comment at the top of demo.cpp)");
  }
  return a;
}

// Linear warmup, then cosine decay to 10% of the peak.
double lr_factor(int64_t step, int64_t total) {
  const int64_t warmup = std::max<int64_t>(1, total / 20);
  if (step < warmup) return static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double t = static_cast<double>(step - warmup) /
                   static_cast<double>(std::max<int64_t>(1, total - warmup));
  return 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * std::min(1.0, t)));
}

// One training step: zero_grad, forward, loss, backward, gradient clipping and the optimizer's
// step; returns the loss. The clipping reads no value (get_total_norm, clip_grads_with_norm_), so
// the whole step compiles as one function.
using Step = std::function<Tensor(const Tensor& x, const Tensor& y)>;

Step step_of(gpt::GPT model, optim::AdamW& opt) {
  return [model, &opt](const Tensor& x, const Tensor& y) mutable {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x).flatten(0, 1), y.flatten());
    loss.backward();
    const std::vector<Tensor> parameters = model->parameters();
    std::vector<Tensor> grads;
    for (const Tensor& p : parameters) grads.push_back(p.grad());
    nn::utils::clip_grads_with_norm_(parameters, 1.0, nn::utils::get_total_norm(grads));
    opt.step();
    return loss.detach();
  };
}

// The training step, or with --compile the step under kiln::compile. Compiling first times, on a
// model and batch of its own (so that training is the same as without --compile), the first
// compiled step (capture, code generation and the C++ compiler, or the kernel cache on a later run)
// and then the step compiled and eager.
using Batch = std::pair<Tensor, Tensor>;

Step training_step(const gpt::Config& config, gpt::GPT& model, optim::AdamW& opt, bool compile,
                   const Batch& probe_batch) {
  if (!compile) return step_of(model, opt);
  {
    gpt::GPT probe(config);
    optim::AdamW probe_opt(probe->parameters(), optim::AdamWOptions(1e-4));
    probe->train();
    const Step eager = step_of(probe, probe_opt);
    const Step compiled = kiln::compile(eager);
    const auto& [x, y] = probe_batch;
    using Clock = std::chrono::steady_clock;
    auto ms_since = [](Clock::time_point t) {
      return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    };
    auto per_step = [&](const Step& step) {
      for (int i = 0; i < 3; ++i) step(x, y);
      const auto start = Clock::now();
      for (int i = 0; i < 20; ++i) step(x, y);
      return ms_since(start) / 20;
    };
    const auto start = Clock::now();
    compiled(x, y);
    const double first = ms_since(start);
    const double eager_ms = per_step(eager), compiled_ms = per_step(compiled);
    std::printf(
        "kiln::compile: first step %.0f ms (capture, code generation, C++ compiler or kernel "
        "cache); training step %.2f ms compiled, %.2f ms eager: %.2fx speed-up\n",
        first, compiled_ms, eager_ms, eager_ms / compiled_ms);
  }
  return kiln::compile(step_of(model, opt));
}

template <class NextBatch>
void train(gpt::GPT& model, const Step& train_step, optim::AdamW& opt, int64_t first_step,
           int64_t steps, NextBatch next_batch) {
  model->train();
  optim::LambdaLR schedule(opt, [steps](int64_t s) { return lr_factor(s, steps); });
  schedule.step(first_step);
  gpt::Progress progress(first_step, steps);
  for (int64_t step = first_step; step < steps; ++step) {
    auto [x, y] = next_batch();
    const Tensor loss = train_step(x, y);
    schedule.step();
    progress.update(step + 1, loss.item<double>(), x.numel());
  }
  progress.finish();
  model->eval();
}

int run_addition(const Args& args) {
  gpt::AdditionTask task(args.digits, args.seed);
  gpt::Config config;
  config.vocab_size = task.vocab_size();
  config.block_size = task.sequence_length();
  config.flex = args.flex;
  gpt::GPT model(config);
  optim::AdamW opt(model->parameters(), optim::AdamWOptions(3e-3).weight_decay(0.01));
  int64_t first = 0;
  if (args.resume && std::filesystem::exists(args.checkpoint)) {
    auto meta = io::load_checkpoint(args.checkpoint, *model, &opt);
    first = std::stoll(meta.at("step"));
    std::printf("resumed from %s at step %lld\n", args.checkpoint.c_str(),
                static_cast<long long>(first));
  }
  std::printf(
      "GPT: %lld parameters, task: %d-digit addition, %lld training / %lld held-out "
      "problems, %lld steps\n",
      static_cast<long long>(nn::utils::parameters_to_vector(model->parameters()).numel()),
      args.digits, static_cast<long long>(task.train_size()),
      static_cast<long long>(task.test_size()), static_cast<long long>(args.steps));
  std::mt19937_64 rng(args.seed + static_cast<uint64_t>(first));
  auto next_batch = [&] { return task.batch(64, rng); };
  std::mt19937_64 probe_rng(args.seed);
  const Step step = training_step(config, model, opt, args.compile, task.batch(64, probe_rng));
  train(model, step, opt, first, args.steps, next_batch);

  auto [prompts, answers] = task.test_set();
  Tensor generated = model->generate(prompts, task.answer_length()).slice(1, task.prompt_length());
  Tensor correct = generated.eq(answers).all(1);
  const double accuracy = correct.to(kFloat64).mean().item<double>();
  std::printf("held-out accuracy: %.1f%% (%lld/%lld exact answers)\n", 100 * accuracy,
              static_cast<long long>(correct.sum().item<int64_t>()),
              static_cast<long long>(task.test_size()));
  for (int64_t i = 0; i < 5; ++i) {
    std::string prompt = task.decode(prompts[i]), out = task.decode(generated[i]);
    std::string sum(out.rbegin(), out.rend());
    std::printf("  %s%s  (model wrote %s, digits reversed)%s\n", prompt.c_str(), sum.c_str(),
                out.c_str(), correct[i].item<bool>() ? "" : "  <- wrong");
  }
  io::save_checkpoint(args.checkpoint, *model, &opt, {{"step", std::to_string(args.steps)}});
  std::printf("saved checkpoint %s (continue with --resume --steps N)\n", args.checkpoint.c_str());
  return accuracy >= 0.9 ? 0 : 1;
}

int run_text(const Args& args) {
  gpt::CharCorpus corpus(args.text);
  gpt::Config config;
  config.vocab_size = corpus.vocab_size();
  config.block_size = 64;
  config.n_layer = 4;
  config.n_embd = 128;
  config.flex = args.flex;
  gpt::GPT model(config);
  optim::AdamW opt(model->parameters(), optim::AdamWOptions(1e-3).weight_decay(0.1));
  int64_t first = 0;
  if (args.resume && std::filesystem::exists(args.checkpoint)) {
    first = std::stoll(io::load_checkpoint(args.checkpoint, *model, &opt).at("step"));
  }
  std::mt19937_64 rng(args.seed + static_cast<uint64_t>(first));
  auto next_batch = [&] { return corpus.batch(32, config.block_size, rng); };
  std::mt19937_64 probe_rng(args.seed);
  const Step step = training_step(config, model, opt, args.compile,
                                  corpus.batch(32, config.block_size, probe_rng));
  train(model, step, opt, first, args.steps, next_batch);
  manual_seed(args.seed);
  Tensor sample = model->generate(corpus.encode("\n"), 200, /*temperature=*/0.8);
  std::printf("sample:\n%s\n", corpus.decode(sample).c_str());
  io::save_checkpoint(args.checkpoint, *model, &opt, {{"step", std::to_string(args.steps)}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args args = parse(argc, argv);
    manual_seed(args.seed);
    return args.text.empty() ? run_addition(args) : run_text(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "demo: %s\n", e.what());
    return 2;
  }
}

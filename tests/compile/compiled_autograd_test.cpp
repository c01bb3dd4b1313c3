// Compiled autograd: backward() under the guard captures the whole pass, compiles it, caches it by
// the autograd graph's structure, and gives the gradients eager autograd gives.
#include "kiln/compile/compiled_autograd.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using compiler::CompiledAutograd;

// The gradients of `params` after loss().backward(), eager then under compiled autograd (run
// `steps` times, .grad cleared before each).
struct Grads {
  std::vector<Tensor> eager, compiled;
  compiler::CompiledAutogradStats stats;
};
Grads both_ways(const std::vector<Tensor>& params, const std::function<Tensor()>& loss,
                int steps = 1, CompileOptions options = {}) {
  auto take = [&] {
    std::vector<Tensor> out;
    for (const Tensor& p : params) {
      out.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
      p.mutable_grad() = Tensor();
    }
    return out;
  };
  for (const Tensor& p : params) p.mutable_grad() = Tensor();
  Grads g;
  loss().backward();
  g.eager = take();
  CompiledAutograd guard(options);
  for (int s = 0; s < steps; ++s) {
    take();
    loss().backward();
  }
  g.compiled = take();
  g.stats = guard.stats();
  return g;
}

void expect_close(const Grads& g, double tol = 1e-5) {
  ASSERT_EQ(g.eager.size(), g.compiled.size());
  for (size_t i = 0; i < g.eager.size(); ++i) {
    ASSERT_EQ(g.eager[i].defined(), g.compiled[i].defined()) << i;
    if (g.eager[i].defined())
      EXPECT_TRUE(allclose(g.compiled[i], g.eager[i], tol, tol))
          << i << ": " << (g.compiled[i] - g.eager[i]).abs().max().item<float>();
  }
}

TEST(CompiledAutograd, AnMlpStepCompilesOnceAndMatchesEager) {
  manual_seed(1);
  const Tensor x = randn({32, 16}), target = randn({32, 8});
  const Tensor w1 = (randn({16, 64}) * 0.2).requires_grad_(), b1 = zeros({64}).requires_grad_();
  const Tensor w2 = (randn({64, 8}) * 0.2).requires_grad_();
  const auto loss = [&] { return mse_loss(gelu(x.matmul(w1) + b1).matmul(w2), target); };
  const Grads g = both_ways({w1, b1, w2}, loss, /*steps=*/3);
  expect_close(g);
  EXPECT_EQ(g.stats.compilations, 1);
  EXPECT_EQ(g.stats.cache_hits, 2);
  EXPECT_EQ(g.stats.eager_passes, 0);
}

TEST(CompiledAutograd, AGptBlockMatchesEager) {
  gpt::Config c;
  c.vocab_size = 16;
  c.block_size = 16;
  c.n_head = 2;
  c.n_embd = 32;
  manual_seed(2);
  gpt::Block block(c);
  const Tensor x = randn({4, 16, 32}).requires_grad_(), dy = randn({4, 16, 32});
  std::vector<Tensor> params = block->parameters();
  params.push_back(x);
  const Grads g = both_ways(
      params, [&] { return (block->forward(x) * dy).sum(); }, 2);
  expect_close(g, 1e-4);
  EXPECT_EQ(g.stats.compilations, 1);
  EXPECT_EQ(g.stats.cache_hits, 1);
}

// A compiled forward's backward (a training graph) is traced into the pass too, with the eager
// ops around it.
TEST(CompiledAutograd, ACompiledForwardsBackwardJoinsThePass) {
  manual_seed(5);
  const Tensor x = randn({16, 32}), w = (randn({32, 32}) * 0.3).requires_grad_();
  const Tensor b = zeros({32}).requires_grad_();
  auto layer = compile(
      [](const Tensor& x, const Tensor& w, const Tensor& b) { return gelu(x.matmul(w) + b); });
  const Grads g = both_ways(
      {w, b}, [&] { return layer(layer(x, w, b).tanh(), w, b).sum(); }, 2);
  expect_close(g);
  EXPECT_EQ(g.stats.compilations, 1);
  EXPECT_EQ(g.stats.cache_hits, 1);
  EXPECT_EQ(g.stats.eager_passes, 0);
}

// Accumulation is part of the graph: a second backward without clearing .grad adds to it (and,
// with a .grad to read, is another structure).
TEST(CompiledAutograd, GradientsAccumulateIntoLeaves) {
  const Tensor w = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  CompiledAutograd guard;
  (w * w).sum().backward();
  (w * w).sum().backward();
  EXPECT_TRUE(allclose(w.grad(), tensor({4.0f, 8.0f, 12.0f})));
  EXPECT_EQ(guard.stats().compilations, 2);
  (w * w).sum().backward();
  EXPECT_TRUE(allclose(w.grad(), tensor({6.0f, 12.0f, 18.0f})));
  EXPECT_EQ(guard.stats().cache_hits, 1);
}

// Tensor hooks (on an intermediate and on a leaf) are traced into the graph; retain_grad keeps
// an intermediate's gradient; a post-accumulate hook sees the new .grad.
TEST(CompiledAutograd, HooksAndRetainGradMatchEager) {
  const Tensor w = tensor({0.5f, -1.0f, 2.0f}).requires_grad_();
  auto run = [&] {
    w.mutable_grad() = Tensor();
    Tensor h = w * 3.0;
    h.add_grad_hook([](const Tensor& g) { return g * 2.0; });
    h.retain_grad();
    Tensor y = (h * h).sum();
    y.backward();
    return std::vector<Tensor>{w.grad().clone(), h.grad().clone()};
  };
  w.add_grad_hook([](const Tensor& g) { return g.clamp(-10.0, 10.0); });
  int seen = 0;
  w.register_post_accumulate_grad_hook([&](const Tensor& p) {
    ++seen;
    EXPECT_TRUE(p.grad().defined());
  });
  const std::vector<Tensor> eager = run();
  CompiledAutograd guard;
  const std::vector<Tensor> compiled = run();
  EXPECT_EQ(guard.stats().compilations, 1);
  EXPECT_EQ(seen, 2);
  // h = 3w, dy/dh = 2h = 6w, doubled by the hook: 12w; dy/dw = 36w, clamped to [-10, 10].
  EXPECT_TRUE(allclose(eager[0], tensor({10.0f, -10.0f, 10.0f})));
  EXPECT_TRUE(allclose(eager[1], tensor({6.0f, -12.0f, 24.0f})));  // retained after the hook
  EXPECT_TRUE(allclose(compiled[0], eager[0]));
  EXPECT_TRUE(allclose(compiled[1], eager[1]));
}

Tensor doubled(const Tensor& g) { return g * 2.0; }
Tensor tripled(const Tensor& g) { return g * 3.0; }

// Two hooks of one type (function pointers) are two structures, not one cached graph.
TEST(CompiledAutograd, FunctionPointerHooksAreToldApart) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  CompiledAutograd guard;
  for (auto* hook : {&doubled, &tripled}) {
    w.mutable_grad() = Tensor();
    Tensor h = w * 1.0;
    h.add_grad_hook(hook);
    h.sum().backward();
    EXPECT_TRUE(allclose(w.grad(), hook(ones({2}))));
  }
  EXPECT_EQ(guard.stats().compilations, 2);
}

TEST(CompiledAutograd, NewSizesCompileAnotherGraph) {
  const Tensor w = randn({8, 8}).requires_grad_();
  CompiledAutograd guard;
  for (int64_t rows : {4, 6, 4}) {
    w.mutable_grad() = Tensor();
    const Tensor x = randn({rows, 8});
    tanh(x.matmul(w)).sum().backward();
    const Tensor t = tanh(x.matmul(w));
    EXPECT_TRUE(allclose(w.grad(), x.t().matmul(1 - t * t), 1e-5, 1e-5));
  }
  EXPECT_EQ(guard.stats().compilations, 2);
  EXPECT_EQ(guard.stats().cache_hits, 1);
}

TEST(CompiledAutograd, RetainGraphAllowsASecondPassAndFreedGraphsStillFail) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  CompiledAutograd guard;
  const Tensor y = (w.exp() * w).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  const Tensor once = (w.exp() * (w + 1)).detach();
  EXPECT_TRUE(allclose(w.grad(), 2 * once, 1e-6, 1e-6));
  EXPECT_THROW(y.backward(), Error);
}

TEST(CompiledAutograd, AnInPlaceChangeToASavedTensorIsStillAnError) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  CompiledAutograd guard;
  Tensor h = w * 2.0;
  Tensor y = (h * h).sum();
  {
    NoGradGuard no_grad;
    h.add_(1.0);
  }
  EXPECT_THROW(y.backward(), Error);
}

// A custom Function's backward is traced too, with stand-ins for what it saved (variables and
// saved_data tensors); its other saved_data values are part of the key.
struct ScaledSquare : autograd::Function<ScaledSquare> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x, double scale) {
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["twice"] = x * 2.0;
    return x * x * scale;
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
    const Tensor twice = ctx->saved_data["twice"].toTensor();
    return {twice * ctx->saved_data["scale"].toDouble() * grads[0], Tensor()};
  }
};

TEST(CompiledAutograd, CustomFunctionsAreTraced) {
  const Tensor w = tensor({3.0f, -1.0f}).requires_grad_();
  CompiledAutograd guard;
  for (double scale : {1.0, 1.0, 0.5}) {
    w.mutable_grad() = Tensor();
    ScaledSquare::apply(w, scale).sum().backward();
    EXPECT_TRUE(allclose(w.grad(), tensor({6.0f, -2.0f}) * scale)) << scale;
  }
  EXPECT_EQ(guard.stats().compilations, 2);  // scale 0.5 is another graph
  EXPECT_EQ(guard.stats().cache_hits, 1);
  EXPECT_EQ(guard.stats().eager_passes, 0);
}

// What it cannot capture runs on the eager engine, counted, and is still right.
TEST(CompiledAutograd, CreateGraphAndValueReadsRunEagerly) {
  struct ReadsAValue : autograd::Function<ReadsAValue> {
    static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
      ctx->save_for_backward({x});
      return x * x;
    }
    static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
      const Tensor x = ctx->get_saved_variables()[0];
      return {x * 2.0 * grads[0] * x.sum().item<double>()};
    }
  };
  const Tensor w = tensor({3.0f}).requires_grad_();
  CompiledAutograd guard;
  ReadsAValue::apply(w).sum().backward();
  EXPECT_TRUE(allclose(w.grad(), tensor({18.0f})));
  w.mutable_grad() = Tensor();
  (w * w * w).sum().backward({}, {}, /*create_graph=*/true);
  EXPECT_TRUE(allclose(w.grad(), tensor({27.0f})));
  EXPECT_TRUE(w.grad().requires_grad());
  EXPECT_EQ(guard.stats().eager_passes, 2);
  EXPECT_EQ(guard.stats().compilations, 0);
  w.mutable_grad() = Tensor();  // a gradient with a graph that saved w is a reference cycle

  CompiledAutograd strict(CompileOptions().fullgraph(true));
  EXPECT_THROW((w * w).sum().backward({}, {}, /*create_graph=*/true), Error);
}

TEST(CompiledAutograd, TheGuardOnlyActsWhileAlive) {
  const Tensor w = tensor({1.0f}).requires_grad_();
  compiler::CompiledAutogradStats stats;
  {
    compiler::compiled_autograd guard;
    (w * 2.0).sum().backward();
    stats = guard.stats();
  }
  (w * 2.0).sum().backward();
  EXPECT_EQ(stats.compilations, 1);
  EXPECT_TRUE(allclose(w.grad(), tensor({4.0f})));
}

}  // namespace
}  // namespace kiln

// Training graphs: when an argument or a captured parameter requires grad, the codegen backend
// compiles the forward together with the backward (joint.cpp), and loss.backward() after a
// compiled call runs the compiled backward. Gradients are checked against eager autograd.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_TRUE(got.defined() && want.defined());
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  EXPECT_TRUE(allclose(got.to(kFloat64), want.to(kFloat64), tol, tol)) << got << "\n" << want;
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& params) {
  std::vector<Tensor> g;
  for (const Tensor& p : params) g.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  return g;
}

TEST(TrainingGraphs, AnMlpsParameterGradientsMatchEager) {
  manual_seed(0);
  nn::Sequential net(nn::Linear(8, 16), nn::GELU(), nn::Linear(16, 4));
  auto f = compile(net);
  for (int step = 0; step < 2; ++step) {
    const Tensor x = randn({5, 8}), target = randn({5, 4});
    net->zero_grad();
    const Tensor y = f(x);
    ASSERT_TRUE(y.grad_fn() != nullptr);
    EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
    mse_loss(y, target).backward();
    const std::vector<Tensor> compiled = grads_of(net->parameters());
    net->zero_grad();
    mse_loss(net->forward(x), target).backward();
    const std::vector<Tensor> eager = grads_of(net->parameters());
    for (size_t i = 0; i < eager.size(); ++i) expect_close(compiled[i], eager[i], 1e-5);
  }
  EXPECT_EQ(f.compilations(), 1);
}

// With symbolic sizes, the backward program runs with the symbol values of its forward call.
TEST(TrainingGraphs, SymbolicBatchSizesReachTheBackward) {
  manual_seed(1);
  nn::Sequential net(nn::Linear(6, 8), nn::Tanh(), nn::Linear(8, 3));
  auto f = compile(net, CompileOptions().dynamic(true));
  for (int64_t batch : {4, 9, 2}) {
    const Tensor x = randn({batch, 6}).requires_grad_();
    const Tensor x_eager = x.detach().clone().requires_grad_();
    net->zero_grad();
    f(x).pow(2).mean().backward();
    const std::vector<Tensor> compiled = grads_of(net->parameters());
    net->zero_grad();
    net->forward(x_eager).pow(2).mean().backward();
    const std::vector<Tensor> eager = grads_of(net->parameters());
    for (size_t i = 0; i < eager.size(); ++i) expect_close(compiled[i], eager[i], 1e-5);
    expect_close(x.grad(), x_eager.grad(), 1e-5);
  }
  EXPECT_EQ(f.compilations(), 1);
}

// Several results, one without a gradient (an index), an argument that needs none and one that
// is not used: each input's gradient is what eager gives, undefined where eager's is.
TEST(TrainingGraphs, ResultsAndArgumentsWithAndWithoutGradients) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& /*unused*/, const Tensor& c) {
    Tensor h = (x * w).sin() + c;
    return std::make_tuple(h.sum(1), h.argmax(1), (h * h).mean());
  };
  auto f = compile(fn);
  const Tensor x0 = randn({3, 4}, kFloat64), w0 = randn({4}, kFloat64), u0 = randn({2}, kFloat64),
               c = randn({3, 4}, kFloat64);
  auto run = [&](auto&& g, Tensor& x, Tensor& w, Tensor& u) {
    x = x0.clone().requires_grad_();
    w = w0.clone().requires_grad_();
    u = u0.clone().requires_grad_();
    auto [a, idx, m] = g(x, w, u, c);
    EXPECT_FALSE(idx.requires_grad());
    (a.sum() * 2.0 + m).backward();
    return idx;
  };
  Tensor x1, w1, u1, x2, w2, u2;
  const Tensor idx1 = run(f, x1, w1, u1), idx2 = run(fn, x2, w2, u2);
  EXPECT_TRUE(idx1.equal(idx2));
  expect_close(x1.grad(), x2.grad(), 1e-12);
  expect_close(w1.grad(), w2.grad(), 1e-12);
  EXPECT_FALSE(u1.grad().defined());
  EXPECT_FALSE(u2.grad().defined());
}

// Only the result's gradient that flows is used; a result returned twice gets both.
TEST(TrainingGraphs, GradientsOfOneResultOfTwoAndOfAReturnedArgument) {
  auto fn = [](const Tensor& x) { return std::make_tuple(x.exp(), x * 3.0, x); };
  auto f = compile(fn);
  Tensor x = randn({4}, kFloat64).requires_grad_();
  auto [e, t, same] = f(x);
  (e.sum() + same.sum() * 5.0).backward();
  expect_close(x.grad(), x.detach().exp() + 5.0, 1e-12);
}

// The demo's GPT trained with its forward compiled follows eager training's loss curve: two
// copies from one initialisation, 50 AdamW steps on the same batches.
TEST(TrainingGraphs, TheDemoGptTrainsCompiledAsEager) {
  gpt::Config c;
  c.vocab_size = 13;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  manual_seed(7);
  gpt::GPT eager(c);
  manual_seed(7);
  gpt::GPT compiled(c);
  optim::AdamW eager_opt(eager->parameters(), optim::AdamWOptions(3e-3).weight_decay(0.01));
  optim::AdamW compiled_opt(compiled->parameters(), optim::AdamWOptions(3e-3).weight_decay(0.01));
  auto f = compile(compiled);
  auto loss_of = [&](const Tensor& logits, const Tensor& y) {
    return cross_entropy(logits.view({-1, c.vocab_size}), y.view({-1}));
  };
  manual_seed(8);
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    // Counting sequences from random starts: the next token is the last one plus 1.
    const Tensor x = (randint(0, c.vocab_size, {4, 1}) + arange(c.block_size)) % c.vocab_size;
    const Tensor y = (x + 1) % c.vocab_size;
    eager_opt.zero_grad();
    compiled_opt.zero_grad();
    const Tensor logits = f(x);
    ASSERT_EQ(logits.grad_fn()->name(), "CompiledFunctionBackward");  // not a fallback
    const Tensor eager_loss = loss_of(eager(x), y), compiled_loss = loss_of(logits, y);
    eager_loss.backward();
    compiled_loss.backward();
    eager_opt.step();
    compiled_opt.step();
    const double e = eager_loss.item<double>(), got = compiled_loss.item<double>();
    EXPECT_NEAR(got, e, 1e-4 * std::max(1.0, std::abs(e))) << "step " << step;
    if (step == 0) first = e;
    last = e;
  }
  EXPECT_LT(last, first * 0.8);  // it learned something, so the comparison covered training
  EXPECT_EQ(f.compilations(), 1);
}

// create_graph=true through a compiled function runs the call again eagerly, whose graph gives
// gradients that record their own: second derivatives match eager's (gradient penalties, MAML).
TEST(TrainingGraphs, CreateGraphRunsTheCallAgainEagerly) {
  const Tensor w = randn({4}, TensorOptions(kFloat64)).requires_grad_();
  auto fn = [&](const Tensor& x) { return (x * w).sin().sum() * x.sum(); };
  auto f = compile(fn);
  const Tensor x = randn({4}, TensorOptions(kFloat64)).requires_grad_();
  auto second = [&](const Tensor& y) {
    const auto g = autograd::grad({y}, {w, x}, {}, std::nullopt, /*create_graph=*/true);
    return autograd::grad({(g[0] * g[0]).sum() + g[1].sum()}, {w, x});
  };
  const auto got = second(f(x));
  const auto want = second(fn(x));
  EXPECT_TRUE(allclose(got[0], want[0])) << got[0] << want[0];
  EXPECT_TRUE(allclose(got[1], want[1])) << got[1] << want[1];
  EXPECT_EQ(f.compilations(), 1);

  // The rerun reads the inputs again, so one changed in place since the call is an error.
  const Tensor v = x.detach().clone().requires_grad_();
  const Tensor z = f(v);
  {
    NoGradGuard no_grad;
    v.add_(1.0);
  }
  try {
    autograd::grad({z}, {w}, {}, std::nullopt, /*create_graph=*/true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos)
        << e.what();
  }
}

// A tensor the compiled backward reads, changed in place after the forward, is the error eager
// gives, naming the compiled node.
TEST(TrainingGraphs, AnInPlaceChangeBeforeTheBackwardIsAnError) {
  const Tensor w = randn({4}).requires_grad_();
  auto f = compile([&](const Tensor& x) { return (x * w).sin().sum(); });
  const Tensor x = randn({4});
  const Tensor y = f(x);
  x.add_(1.0);
  try {
    y.backward();
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("modified by an inplace operation"), std::string::npos) << m;
    EXPECT_NE(m.find("input to CompiledFunctionBackward"), std::string::npos) << m;
  }
}

// A buffer the forward changes (functionalized: its new value copied back at the end) is not
// what the backward reads: it runs after the copy. w's gradient needs the new value of
// `running`, which the forward saves rather than recomputing it from `running`.
TEST(TrainingGraphs, ABufferTheForwardChangesIsNotReadByTheBackward) {
  const Tensor w = randn({4}).requires_grad_();
  Tensor running = ones({4}), eager_running = ones({4});
  auto step = [&w](Tensor& buffer) {
    return [&w, &buffer](const Tensor& x) {
      buffer.add_(1.0);
      return (x * w * buffer).sum();
    };
  };
  auto f = compile(step(running));
  for (int call = 0; call < 2; ++call) {
    const Tensor x = randn({4});
    w.mutable_grad() = Tensor();
    const Tensor y = f(x);
    EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
    y.backward();
    const Tensor compiled = w.grad().clone();
    w.mutable_grad() = Tensor();
    step(eager_running)(x).backward();
    expect_close(compiled, w.grad(), 1e-6);
    expect_close(running, eager_running, 0);
  }
  // A backward that needs the changed tensor itself runs on the eager kernels, whose autograd
  // raises eager's error.
  Tensor scale = full({4}, 2.0);
  auto g = compile([&](const Tensor& x) {
    scale.mul_(2.0);
    return (x * w).sum() + scale.sum();
  });
  auto needs_it = compile([&](const Tensor& x) {
    const Tensor y = (w * scale).sum();
    scale.add_(1.0);
    return y * x.sum();
  });
  w.mutable_grad() = Tensor();
  g(ones({4})).backward();
  expect_close(w.grad(), ones({4}), 0);
  expect_close(scale, full({4}, 4.0), 0);
  const Tensor y = needs_it(ones({4}));
  EXPECT_NE(y.grad_fn()->name(), "CompiledFunctionBackward");
  expect_close(scale, full({4}, 5.0), 0);
  try {
    y.backward();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln

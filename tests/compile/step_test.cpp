// backward() and .grad inside a compiled function: the capture traces the backward formulas as
// ops, reads each .grad the function reads from its tensor at every call, and sets each .grad the
// function sets after every call (kiln/compile/captured_state.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CompiledStep, BackwardInsideTheFunctionIsCaptured) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  auto f = compile([&](const Tensor& x) {
    Tensor loss = (x * w).sum();
    loss.backward();
    return loss;
  });
  for (int i = 1; i <= 3; ++i) {
    const Tensor loss = f(tensor({3.0f, 4.0f}));
    EXPECT_TRUE(allclose(loss, tensor(11.0f)));
    EXPECT_FALSE(loss.requires_grad());  // its backward has run, in the graph
    EXPECT_TRUE(allclose(w.grad(), tensor({3.0f, 4.0f}) * i)) << i;
  }
  // The first call found w.grad None, the second a tensor to add to: two graphs, then replays.
  EXPECT_EQ(f.compilations(), 2);
}

// A training step compiled whole but for the optimizer: zero_grad, forward, loss, backward.
TEST(CompiledStep, AnMlpsStepMatchesEager) {
  auto train = [](bool compiled) {
    manual_seed(0);
    nn::Sequential net(nn::Linear(6, 16), nn::GELU(), nn::Linear(16, 3));
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    auto step = [&](const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = mse_loss(net->forward(x), y);
      loss.backward();
      return loss.detach();
    };
    auto compiled_step = compile(step, CompileOptions().fullgraph(true));
    std::vector<Tensor> losses;
    manual_seed(1);
    for (int i = 0; i < 4; ++i) {
      const Tensor x = randn({8, 6}), y = randn({8, 3});
      losses.push_back(compiled ? compiled_step(x, y) : step(x, y));
      opt.step();
    }
    if (compiled) EXPECT_EQ(compiled_step.compilations(), 2);  // .grad None, then defined
    losses.push_back(net->parameters()[0].detach());
    losses.push_back(net->parameters()[0].grad());
    return losses;
  };
  const std::vector<Tensor> eager = train(false), compiled = train(true);
  for (size_t i = 0; i < eager.size(); ++i)
    EXPECT_TRUE(allclose(compiled[i], eager[i], 1e-5, 1e-6)) << i << compiled[i] << eager[i];
}

// Gradient clipping without reading the norm (get_total_norm, clip_grads_with_norm_) stays in the
// graph, and the step with it and AdamW matches eager.
TEST(CompiledStep, ClippingTheGradientsIsCaptured) {
  auto train = [](bool compiled) {
    manual_seed(0);
    nn::Sequential net(nn::Linear(6, 16), nn::GELU(), nn::Linear(16, 3));
    optim::AdamW opt(net->parameters(), optim::AdamWOptions(0.05));
    auto step = [&](const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = mse_loss(net->forward(x), y) * 100;  // so that the clipping clips
      loss.backward();
      std::vector<Tensor> grads;
      for (const Tensor& p : net->parameters()) grads.push_back(p.grad());
      const Tensor norm = nn::utils::get_total_norm(grads);
      nn::utils::clip_grads_with_norm_(net->parameters(), 1.0, norm);
      opt.step();
      return norm;
    };
    auto compiled_step = compile(step, CompileOptions().fullgraph(true));
    std::vector<Tensor> results;
    manual_seed(1);
    for (int i = 0; i < 4; ++i) {
      const Tensor x = randn({8, 6}), y = randn({8, 3});
      results.push_back(compiled ? compiled_step(x, y) : step(x, y));
    }
    EXPECT_GT(results[0].item<double>(), 1.0);
    for (const Tensor& p : net->parameters()) results.push_back(p.detach());
    results.push_back(net->parameters()[0].grad());
    return results;
  };
  const std::vector<Tensor> eager = train(false), compiled = train(true);
  for (size_t i = 0; i < eager.size(); ++i)
    EXPECT_TRUE(allclose(compiled[i], eager[i], 1e-5, 1e-6)) << i << compiled[i] << eager[i];
}

TEST(CompiledStep, ZeroGradInPlaceThenBackward) {
  const Tensor w = tensor({1.0f, -1.0f}).requires_grad_();
  w.set_grad(tensor({5.0f, 5.0f}));
  optim::SGD opt({w}, optim::SGDOptions(0.1));
  auto f = compile([&](const Tensor& x) {
    opt.zero_grad(/*set_to_none=*/false);
    (x * w * w).sum().backward();
    return x;
  });
  for (int i = 1; i <= 3; ++i) {
    f(tensor({1.0f, 2.0f}) * i);
    EXPECT_TRUE(allclose(w.grad(), tensor({2.0f, -4.0f}) * i)) << i << w.grad();
  }
  EXPECT_EQ(f.compilations(), 1);
}

// A function that reads .grad reads the tensor's gradient at each call, not the one it had when
// the function was captured (eager backward replaces .grad with a new tensor).
TEST(CompiledStep, ReadingGradReadsTheCurrentGradient) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  auto scaled = compile([&](const Tensor& s) { return w.grad() * s; });
  for (int i = 1; i <= 3; ++i) {
    w.set_grad(Tensor());
    (w * w * static_cast<float>(i)).sum().backward();
    EXPECT_TRUE(allclose(scaled(tensor(10.0f)), w.grad() * 10)) << i;
  }
  EXPECT_EQ(scaled.compilations(), 1);
  w.set_grad(Tensor());
  // Now None: the guard fails and the function is captured again, where it fails as eager does.
  EXPECT_NE(error_of([&] { scaled(tensor(10.0f)); }), "");
}

TEST(CompiledStep, GradientsAreTensorsOfTheirOwn) {
  const Tensor a = tensor({1.0f, 2.0f}).requires_grad_(), b = tensor({3.0f, 4.0f}).requires_grad_();
  const Tensor c = tensor({0.5f}).requires_grad_();
  auto f = compile([&](const Tensor& x) {
    ((a + b) * x).sum().backward();  // a and b get the same gradient
    (c * 1.0f).sum().backward();     // c's is a broadcast of ones
    return x;
  });
  f(tensor({1.0f, 1.0f}));
  EXPECT_NE(a.grad().data_ptr(), b.grad().data_ptr());
  EXPECT_TRUE(c.grad().is_contiguous());
  a.grad().mul_(2);  // the optimizer may change one in place
  EXPECT_TRUE(allclose(a.grad(), tensor({2.0f, 2.0f})));
  EXPECT_TRUE(allclose(b.grad(), tensor({1.0f, 1.0f})));
  EXPECT_TRUE(allclose(c.grad(), tensor({1.0f})));
}

TEST(CompiledStep, AutogradGradInsideTheFunction) {
  const Tensor w = tensor({1.0f, 2.0f, 3.0f}).requires_grad_();
  auto fn = [&](const Tensor& x) {
    const Tensor y = (x * w * w).sum();
    return autograd::grad({y}, {w})[0] + 1;
  };
  auto f = compile(fn, CompileOptions().fullgraph(true));
  const Tensor x = tensor({1.0f, 0.5f, -1.0f});
  EXPECT_TRUE(allclose(f(x), fn(x)));
  EXPECT_TRUE(allclose(f(x * 2), fn(x * 2)));
  EXPECT_FALSE(w.grad().defined());  // autograd::grad sets no .grad
  EXPECT_EQ(f.compilations(), 1);
}

// The whole step: step() inside the function runs after each call of the graph, once the .grad
// are set, with its C++ state (step count, learning rate, buffers) as eager's.
TEST(CompiledStep, TheOptimizerStepRunsAfterTheGraph) {
  for (const char* which : {"sgd", "adam", "adamw"}) {
    auto train = [&](bool compiled) {
      manual_seed(0);
      nn::Sequential net(nn::Linear(5, 8), nn::Tanh(), nn::Linear(8, 2));
      std::unique_ptr<optim::Optimizer> opt;
      if (std::string(which) == "sgd")
        opt = std::make_unique<optim::SGD>(net->parameters(),
                                           optim::SGDOptions(0.1).momentum(0.9).dampening(0.5));
      else if (std::string(which) == "adam")
        opt = std::make_unique<optim::Adam>(net->parameters(), optim::AdamOptions(0.01));
      else
        opt = std::make_unique<optim::AdamW>(net->parameters(), optim::AdamWOptions(0.01));
      auto step = [&](const Tensor& x, const Tensor& y) {
        opt->zero_grad();
        Tensor loss = mse_loss(net->forward(x), y);
        loss.backward();
        opt->step();
        return loss.detach();
      };
      auto compiled_step = compile(step, CompileOptions().fullgraph(true));
      std::vector<Tensor> out;
      manual_seed(1);
      for (int i = 0; i < 4; ++i) {
        const Tensor x = randn({6, 5}), y = randn({6, 2});
        out.push_back(compiled ? compiled_step(x, y) : step(x, y));
        if (i == 2)  // a new learning rate is read by the next step, without a recompile
          opt->param_groups()[0].options().set_lr(0.05);
      }
      if (compiled) EXPECT_EQ(compiled_step.compilations(), 2) << which;
      const Tensor w = net->parameters()[0];
      EXPECT_EQ(opt->state().at(w.impl()).step, 4) << which;
      out.push_back(w.detach());
      return out;
    };
    const std::vector<Tensor> eager = train(false), compiled = train(true);
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_TRUE(allclose(compiled[i], eager[i], 1e-5, 1e-6)) << which << " " << i;
  }
}

// The step runs after the graph, so the function may not read what it changes afterwards.
TEST(CompiledStep, ReadingAParameterAfterTheStepRunsEagerly) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5));
  auto fn = [&](const Tensor& x) {
    opt.zero_grad();
    (x * w).sum().backward();
    opt.step();
    return w * 1.0f;  // eager reads the updated w
  };
  auto f = compile(fn);
  EXPECT_TRUE(allclose(f(tensor({2.0f, 2.0f})), tensor({0.0f, 1.0f})));
  EXPECT_EQ(f.compilations(), 0);
  auto strict = compile(fn, CompileOptions().fullgraph(true));
  const std::string err = error_of([&] { strict(tensor({2.0f, 2.0f})); });
  EXPECT_NE(err.find("reads a captured tensor after SGD::step"), std::string::npos) << err;
}

// The graph steps the optimizer it captured: once that one is destroyed, a call is a clear error
// (not a step of freed memory), and reset() captures the function again with the new one.
TEST(CompiledStep, AStepOfADestroyedOptimizerIsAnError) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  auto opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(0.5));
  auto f = compile([&](const Tensor& x) {
    opt->zero_grad();
    (x * w).sum().backward();
    opt->step();
    return x;
  });
  f(tensor({1.0f, 1.0f}));
  EXPECT_TRUE(allclose(w.detach(), tensor({0.5f, 1.5f})));
  opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(1.0));
  f(tensor({1.0f, 1.0f}));  // a new graph: .grad was None, is now defined
  EXPECT_TRUE(allclose(w.detach(), tensor({-0.5f, 0.5f})));
  opt = std::make_unique<optim::SGD>(std::vector<Tensor>{w}, optim::SGDOptions(0.5));
  const std::string err = error_of([&] { f(tensor({1.0f, 1.0f})); });
  EXPECT_NE(err.find("no longer exists"), std::string::npos) << err;
  compiler::reset();
  f(tensor({1.0f, 1.0f}));
  EXPECT_TRUE(allclose(w.detach(), tensor({-1.0f, 0.0f})));
}

// What the capture does not replay runs eagerly, with the reason under fullgraph.
TEST(CompiledStep, WhatIsNotCapturedRunsEagerly) {
  const Tensor w = tensor({1.0f, 2.0f}).requires_grad_();
  auto create_graph = [&](const Tensor& x) {
    const Tensor g = autograd::grad({(x * w * w).sum()}, {w}, {}, std::nullopt, true)[0];
    return g.sum();
  };
  auto f = compile(create_graph);
  const Tensor x = tensor({1.0f, 1.0f});
  const Tensor penalty = f(x);
  EXPECT_TRUE(allclose(penalty, tensor(6.0f)));
  EXPECT_TRUE(penalty.requires_grad());
  EXPECT_EQ(f.compilations(), 0);
  auto strict = compile(create_graph, CompileOptions().fullgraph(true));
  EXPECT_NE(error_of([&] { strict(x); }).find("create_graph=true"), std::string::npos);

  auto twice = compile(
      [&](const Tensor& x) {
        const Tensor loss = (x * w).sum();
        loss.backward();
        loss.backward();
        return x;
      },
      CompileOptions().fullgraph(true));
  EXPECT_NE(error_of([&] { twice(x); }).find("second backward()"), std::string::npos);

  const Tensor h = tensor({1.0f}).requires_grad_();
  int hook_calls = 0;
  h.register_hook([&](const Tensor& g) {
    ++hook_calls;
    return g;
  });
  auto hooked = compile([&](const Tensor& x) {
    (x * h).sum().backward();
    return x;
  });
  hooked(tensor({2.0f}));
  hooked(tensor({2.0f}));
  EXPECT_EQ(hook_calls, 2);
  EXPECT_TRUE(allclose(h.grad(), tensor({4.0f})));
  EXPECT_EQ(hooked.compilations(), 0);
}

}  // namespace
}  // namespace kiln

// What a capture cannot hold: reading values, random numbers, data-dependent sizes. The
// function runs eagerly with a reason, or fails under fullgraph naming the op and the function.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::string fullgraph_error(const std::function<Tensor(const Tensor&)>& fn, const Tensor& x) {
  auto f = compile(fn, CompileOptions().fullgraph(true).name("user_fn"));
  try {
    f(x);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CompileFallback, ItemRunsEagerlyWithTheReason) {
  auto fn = [](const Tensor& x) { return x * x.sum().item<float>(); };
  auto f = compile(fn);
  const Tensor x = randn({4});
  EXPECT_TRUE(allclose(f(x), fn(x)));
  const Tensor y = randn({4});
  EXPECT_TRUE(allclose(f(y), fn(y)));  // not a replay of x's value
  EXPECT_EQ(f.compilations(), 0);
  compiler::Explanation e = f.explain(x);
  ASSERT_EQ(e.fallback_reasons.size(), 1u);
  EXPECT_NE(e.fallback_reasons[0].find("item: the tensor is a traced value"), std::string::npos);
  const std::string err = fullgraph_error(fn, x);
  EXPECT_NE(err.find("user_fn cannot be captured as one graph"), std::string::npos) << err;
  EXPECT_NE(err.find("item:"), std::string::npos) << err;
}

// A step with a closure re-evaluates the loss, which a graph cannot replay: the function runs
// eagerly, and under fullgraph the error names the step. The failed capture changed no state.
TEST(CompileFallback, AnOptimizerStepWithAClosureRunsEagerly) {
  const Tensor w = tensor({1.0f}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.1).momentum(0.9));
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = (w * w).sum();
    loss.backward();
    return loss;
  };
  auto step = compile(
      [&](const Tensor& x) {
        opt.step(closure);
        return x;
      },
      CompileOptions().fullgraph(true));
  try {
    step(tensor(1.0f));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SGD::step with a closure"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(opt.state().empty());  // the failed capture made no buffer
  auto lenient = compile([&](const Tensor& x) {
    opt.step(closure);
    return x;
  });
  lenient(tensor(1.0f));
  EXPECT_TRUE(allclose(w.detach(), tensor({0.8f})));
  EXPECT_EQ(lenient.compilations(), 0);
}

TEST(CompileFallback, AFailingCallRaisesTheEagerError) {
  auto f = compile([](const Tensor& a, const Tensor& b) { return matmul(a, b).relu(); });
  auto error_of = [&](const Tensor& a, const Tensor& b) {
    try {
      f(a, b);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(ones({2, 3}), ones({4, 5})).find("[2, 3] by [4, 5]"), std::string::npos);
  EXPECT_TRUE(allclose(f(ones({2, 3}), ones({3, 5})), full({2, 5}, 3.0)));
  const std::string err = error_of(ones({2, 3}), ones({4, 5}));  // after a size changed
  EXPECT_NE(err.find("[2, 3] by [4, 5]: 3 != 4"), std::string::npos) << err;
  EXPECT_TRUE(allclose(f(ones({2, 3}), ones({3, 5})), full({2, 5}, 3.0)));
  EXPECT_EQ(f.compilations(), 1);
}

// A function that assigns a tensor it computed to a variable outliving the call (a cache kept
// in a member) cannot be replayed: a graph does not assign, so later calls would read a stale
// value. The capture notices the kept traced tensor and says so.
TEST(CompileFallback, KeepingAComputedTensorPastTheCallIsAClearError) {
  Tensor cache = zeros({1, 4});
  auto f = compile([&](const Tensor& k) {
    cache = cat({cache, k});
    return cache.sum();
  });
  try {
    f(ones({1, 4}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kept a tensor it computed past the call"),
              std::string::npos)
        << e.what();
  }
  std::vector<Tensor> kept;
  auto g = compile([&](const Tensor& x) {
    const Tensor y = x * 2.0;
    kept.push_back(y);
    return y.relu();
  });
  EXPECT_THROW(g(ones({2})), Error);
}

TEST(CompileFallback, DataDependentSizesNameTheOp) {
  const std::string err = fullgraph_error([](const Tensor& x) { return nonzero(x); }, randn({4}));
  EXPECT_NE(err.find("nonzero makes an output whose size depends on the input's values"),
            std::string::npos)
      << err;
  auto f = compile([](const Tensor& x) { return masked_select(x, x > 0); });
  const Tensor x = randn({6});
  EXPECT_TRUE(equal(f(x), masked_select(x, x > 0)));
}

TEST(CompileFallback, RandomOpsRunEagerlyAndStayRandom) {
  auto f = compile([](const Tensor& x) { return x + randn_like(x); });
  const Tensor x = zeros({64});
  EXPECT_FALSE(equal(f(x), f(x)));
  EXPECT_NE(fullgraph_error([](const Tensor& t) { return t + randn_like(t); }, x)
                .find("draws random numbers"),
            std::string::npos);
}

TEST(CompileFallback, PrintingAValueRunsEagerly) {
  auto fn = [](const Tensor& x) {
    std::ostringstream os;
    os << x;
    return x + 1.0;
  };
  EXPECT_NE(fullgraph_error(fn, randn({2})).find("print: the tensor is a traced value"),
            std::string::npos);
  auto f = compile(fn);
  const Tensor x = randn({2});
  EXPECT_TRUE(allclose(f(x), x + 1.0));
}

TEST(CompileFallback, InPlaceViewOpsRunEagerly) {
  // t_ changes x's own geometry: a replay of the recorded transpose alone would not.
  auto fn = [](const Tensor& x) {
    Tensor y = x.clone();
    y.t_();
    return y.contiguous();
  };
  const Tensor x = randn({2, 3});
  EXPECT_TRUE(equal(compile(fn)(x), x.t().contiguous()));
  EXPECT_NE(fullgraph_error(fn, x).find("t_: an in-place view op"), std::string::npos);
  EXPECT_NE(fullgraph_error(
                [](const Tensor& t) {
                  Tensor y = t * 1.0;
                  y.resize_({6});
                  return y;
                },
                x)
                .find("resize_:"),
            std::string::npos);
}

TEST(CompileFallback, UserErrorsPropagate) {
  auto f = compile([](const Tensor& a, const Tensor& b) { return a + b; });
  EXPECT_THROW(f(randn({2}), randn({3})), Error);
}

TEST(CompileFallback, UnknownBackendsAndModesAreErrors) {
  auto fn = [](const Tensor& x) { return x; };
  EXPECT_THROW(compile(fn, CompileOptions().backend("inductor")), Error);
  EXPECT_THROW(compile(fn, CompileOptions().mode("reduce-overhead")), Error);
  EXPECT_THROW(compiler::set_logs("graph,bogus"), Error);
}

}  // namespace
}  // namespace kiln

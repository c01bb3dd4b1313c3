#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

double at(const Tensor& t, int64_t i) { return t.reshape({-1})[i].item<double>(); }

TEST(Autograd, BackwardOfScalarAccumulatesIntoLeaves) {
  Tensor x = tensor({1.0, 2.0, 3.0}, requires_grad());
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_EQ(at(x.grad(), 0), 2.0);
  EXPECT_EQ(at(x.grad(), 2), 6.0);
  // A second graph accumulates into the same .grad.
  (x * 3.0).sum().backward();
  EXPECT_EQ(at(x.grad(), 1), 7.0);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward0");
}

TEST(Autograd, BackwardWithGradientArgument) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 2.0;
  y.backward(tensor({10.0, 100.0}));
  EXPECT_EQ(at(x.grad(), 0), 20.0);
  EXPECT_EQ(at(x.grad(), 1), 200.0);
}

TEST(Autograd, NonScalarBackwardWithoutGradientIsAnError) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  try {
    (x * 2.0).backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grad can be implicitly created only for scalar outputs"),
              std::string::npos);
  }
}

TEST(Autograd, BackwardOnTensorWithoutGradIsAnError) {
  Tensor x = tensor({1.0, 2.0});
  EXPECT_THROW(x.sum().backward(), Error);
}

TEST(Autograd, BroadcastGradientsAreSummedToInputShape) {
  Tensor a = ones({3, 1}, requires_grad());
  Tensor b = ones({4}, requires_grad());
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().sizes().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(at(a.grad(), 0), 4.0);
  EXPECT_EQ(b.grad().sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(at(b.grad(), 0), 3.0);
}

// Both inputs of an add receive the same gradient tensor, and a sum's backward a broadcast of one
// value: each .grad is a contiguous tensor of its own, so an in-place change of one (an
// optimizer's, clip_grad_norm_'s) reaches no other and writes no element twice.
TEST(Autograd, EachLeafGetsAGradientOfItsOwn) {
  const Tensor a = tensor({1.0f, 2.0f}).requires_grad_(), b = tensor({3.0f, 4.0f}).requires_grad_();
  (a + b).sum().backward();
  EXPECT_NE(a.grad().data_ptr(), b.grad().data_ptr());
  a.grad().mul_(2);
  EXPECT_TRUE(allclose(b.grad(), tensor({1.0f, 1.0f})));
  const Tensor c = tensor({0.5f, 0.5f}).requires_grad_();
  c.sum().backward();
  EXPECT_TRUE(c.grad().is_contiguous());
  c.grad().add_(tensor({1.0f, 2.0f}));
  EXPECT_TRUE(allclose(c.grad(), tensor({2.0f, 3.0f})));
}

TEST(Autograd, GradReturnsWithoutTouchingDotGrad) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = (x * x * x).sum();
  auto g = autograd::grad({y}, {x});
  EXPECT_EQ(at(g[0], 1), 12.0);
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, CreateGraphGivesHigherOrderGradients) {
  Tensor x = tensor({2.0}, requires_grad());
  Tensor y = (x * x * x).sum();                                // x^3
  auto g1 = autograd::grad({y}, {x}, {}, std::nullopt, true);  // 3x^2 = 12
  EXPECT_EQ(at(g1[0], 0), 12.0);
  auto g2 = autograd::grad({g1[0].sum()}, {x}, {}, std::nullopt, true);  // 6x = 12
  EXPECT_EQ(at(g2[0], 0), 12.0);
  auto g3 = autograd::grad({g2[0].sum()}, {x});  // 6
  EXPECT_EQ(at(g3[0], 0), 6.0);
}

TEST(Autograd, ExpSecondDerivativeUsesSavedOutput) {
  Tensor x = tensor({0.5}, requires_grad());
  Tensor y = x.exp().sum();
  auto g1 = autograd::grad({y}, {x}, {}, std::nullopt, true);
  auto g2 = autograd::grad({g1[0].sum()}, {x});
  EXPECT_NEAR(at(g2[0], 0), std::exp(0.5), 1e-6);  // float32
}

TEST(Autograd, RetainGraphAllowsASecondBackward) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = (x * x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(at(x.grad(), 1), 8.0);
}

TEST(Autograd, SecondBackwardWithoutRetainGraphIsAnError) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = (x * x).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backward through the graph a second time"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("retain_graph=true"), std::string::npos);
  }
}

TEST(Autograd, NoGradGuardStopsRecording) {
  Tensor x = ones({2}, requires_grad());
  {
    NoGradGuard g;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, DetachSharesStorageWithoutHistory) {
  Tensor x = ones({2}, requires_grad());
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr(), y.data_ptr());
  y.detach_();
  EXPECT_FALSE(y.requires_grad());
}

TEST(Autograd, RequiresGradOnlyForFloatsAndLeaves) {
  Tensor i = zeros({2}, kInt64);
  EXPECT_THROW(i.requires_grad_(), Error);
  Tensor x = ones({2}, requires_grad());
  Tensor y = x * 2.0;
  EXPECT_THROW(y.requires_grad_(false), Error);
}

TEST(Autograd, TensorHooksSeeAndReplaceGradients) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 3.0;
  double seen = 0;
  y.register_hook([&](const Tensor& g) { seen = at(g, 0); });
  y.register_hook([](const Tensor& g) { return g * 10.0; });
  x.register_hook([](const Tensor& g) { return g + 1.0; });
  y.sum().backward();
  EXPECT_EQ(seen, 1.0);
  EXPECT_EQ(at(x.grad(), 0), 31.0);  // (1 * 10) * 3 + 1
}

TEST(Autograd, RetainGradKeepsNonLeafGradient) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 3.0;
  y.retain_grad();
  (y * y).sum().backward();
  EXPECT_EQ(at(y.grad(), 1), 12.0);
}

TEST(Autograd, ModifiedSavedTensorIsReported) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor a = x * 2.0;
  Tensor b = a * a;  // saves a
  {
    NoGradGuard g;
    a.add_(1.0);
  }
  try {
    b.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("modified by an inplace operation"), std::string::npos) << m;
    EXPECT_NE(m.find("MulBackward0"), std::string::npos) << m;
    EXPECT_NE(m.find("is at version 1; expected version 0"), std::string::npos) << m;
  }
}

TEST(Autograd, InPlaceOnLeafRequiringGradIsAnError) {
  Tensor x = ones({2}, requires_grad());
  EXPECT_THROW(x.add_(1.0), Error);
  NoGradGuard g;
  x.add_(1.0);  // allowed without grad mode (optimizer updates)
  EXPECT_EQ(at(x, 0), 2.0);
}

TEST(Autograd, InPlaceOpsRecordHistory) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = x * 1.0;
  y.mul_(x);  // y = x^2 in place
  y.sum().backward();
  EXPECT_EQ(at(x.grad(), 1), 4.0);
  EXPECT_EQ(y._version(), 1);
}

TEST(Autograd, ChangingAViewsBaseAfterwardsKeepsTheViewsGradient) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, requires_grad());
  Tensor y = x * 2.0;
  Tensor z = y.view({2, 2}).select(0, 1);  // views save only metadata
  y.add_(1.0);
  (z * 3.0).sum().backward();
  EXPECT_EQ(at(x.grad(), 0), 0.0);
  EXPECT_EQ(at(x.grad(), 3), 6.0);
}

TEST(Autograd, DeepChainDoesNotOverflowTheStack) {
  Tensor x = ones({1}, requires_grad());
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.sum().backward();
  EXPECT_EQ(at(x.grad(), 0), 1.0);
  y = Tensor();  // destroying the graph must not recurse either
}

TEST(Autograd, UnusedInputNeedsAllowUnused) {
  Tensor x = ones({1}, requires_grad()), z = ones({1}, requires_grad());
  Tensor y = (x * 2.0).sum();
  EXPECT_THROW(autograd::grad({y}, {x, z}, {}, true), Error);
  auto g = autograd::grad({y}, {x, z}, {}, true, false, /*allow_unused=*/true);
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, IntegerOutputsDoNotRequireGrad) {
  Tensor x = ones({3}, requires_grad());
  Tensor y = x.to(kInt64);
  EXPECT_FALSE(y.requires_grad());
}

struct MulConstant : autograd::Function<MulConstant> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double c) {
    ctx->saved_data["c"] = c;
    ctx->save_for_backward({x});
    return x * c;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list grads) {
    double c = ctx->saved_data["c"].toDouble();
    auto saved = ctx->get_saved_variables();
    EXPECT_EQ(saved.size(), 1u);
    return {grads[0] * c, Tensor()};
  }
};

TEST(Autograd, CustomFunction) {
  Tensor x = tensor({1.0, 2.0}, requires_grad());
  Tensor y = MulConstant::apply(x, 5.0);
  EXPECT_EQ(y.grad_fn()->name(),
            "torch::autograd::CppNode<kiln::(anonymous namespace)::MulConstant>");
  y.sum().backward();
  EXPECT_EQ(at(x.grad(), 0), 5.0);
}

struct Square : autograd::Function<Square> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& x) {
    Tensor out = x * x;
    ctx->save_for_backward({x, out});  // saving an output must not leak or cycle
    return out;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list grads) {
    auto s = ctx->get_saved_variables();
    return {grads[0] * 2.0 * s[0]};
  }
};

TEST(Autograd, CustomFunctionSavingItsOutput) {
  Tensor x = tensor({3.0}, requires_grad());
  std::weak_ptr<TensorImpl> weak;
  {
    Tensor y = Square::apply(x);
    weak = y.impl_ptr();
    y.sum().backward();
  }
  EXPECT_EQ(at(x.grad(), 0), 6.0);
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace kiln

// kiln::func: grad, vjp, jvp, vmap, jacrev, jacfwd, hessian and functional_call, alone and
// nested, against autograd, finite differences and loops.
#include <gtest/gtest.h>

#include "kiln/func/func.h"
#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

namespace F = kiln::func;

Tensor rand64(std::vector<int64_t> sizes, uint64_t seed) {
  manual_seed(seed);
  return randn(sizes, TensorOptions(kFloat64));
}

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-10) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(got.allclose(want, tol, tol)) << "got\n" << got << "\nwant\n" << want;
}

// Central differences of a function of one tensor: d f / d x, sizes f(x).sizes + x.sizes.
Tensor numeric_jacobian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  const double eps = 1e-6;
  Tensor y = f(x);
  Tensor jac = zeros({y.numel(), x.numel()}, TensorOptions(kFloat64));
  for (int64_t j = 0; j < x.numel(); ++j) {
    Tensor plus = x.clone(), minus = x.clone();
    plus.view({-1})[j].add_(eps);
    minus.view({-1})[j].sub_(eps);
    jac.select(1, j).copy_(f(plus).sub(f(minus)).div(2 * eps).reshape({-1}));
  }
  std::vector<int64_t> sizes = y.sizes().vec();
  for (int64_t s : x.sizes()) sizes.push_back(s);
  return jac.reshape(sizes);
}

Tensor loss3(const Tensor& x) { return x.sin().mul(x).sum(); }

TEST(Grad, EqualsAutogradGrad) {
  Tensor x = rand64({3, 4}, 1);
  Tensor g = F::grad(loss3)(x);
  Tensor xr = x.detach().requires_grad_(true);
  Tensor want = autograd::grad({loss3(xr)}, {xr})[0];
  expect_close(g, want);
  EXPECT_FALSE(g.requires_grad());
  EXPECT_FALSE(x.requires_grad());
}

TEST(Grad, ArgnumsHasAuxAndValue) {
  Tensor w = rand64({4}, 2), x = rand64({4}, 3);
  auto f = [](const Tensor& w, const Tensor& x, double scale) { return w.mul(x).sum().mul(scale); };
  auto [gw, gx] = F::grad(f, F::argnums<0, 1>)(w, x, 2.0);
  expect_close(gw, x.mul(2.0));
  expect_close(gx, w.mul(2.0));
  Tensor only_x = F::grad(f, F::argnums<1>)(w, x, 2.0);
  expect_close(only_x, w.mul(2.0));

  auto with_aux = [](const Tensor& x) { return std::make_pair(x.pow(2).sum(), x.mul(3)); };
  auto [g, aux] = F::grad(with_aux, true)(x);
  expect_close(g, x.mul(2));
  expect_close(aux, x.mul(3));
  auto [g2, value] = F::grad_and_value(loss3)(x);
  expect_close(g2, x.cos().mul(x).add(x.sin()));
  expect_close(value, loss3(x));
  EXPECT_THROW(F::grad(with_aux)(x), Error);  // has_aux not said
}

TEST(Grad, OfAMapOfParameters) {
  std::map<std::string, Tensor> p{{"a", rand64({3}, 4)}, {"b", rand64({2}, 5)}};
  auto f = [](const std::map<std::string, Tensor>& p) {
    return p.at("a").pow(2).sum().add(p.at("b").sum().mul(3));
  };
  auto g = F::grad(f)(p);
  expect_close(g.at("a"), p.at("a").mul(2));
  expect_close(g.at("b"), ones_like(p.at("b")).mul(3));
}

TEST(Grad, NonScalarOutputAndIntegerInputsAreClearErrors) {
  EXPECT_TRUE(testing::raises([] { F::grad([](const Tensor& x) { return x.mul(2); })(ones({3})); },
                              "grad", "one element, got sizes [3]"));
  EXPECT_TRUE(
      testing::raises([] { F::grad([](const Tensor& x) { return x.sum(); })(ones({3}, kInt64)); },
                      "grad", "only floating point tensors can be differentiated"));
}

TEST(Grad, NestsToHigherDerivatives) {
  Tensor x = rand64({}, 6);
  auto f = [](const Tensor& x) { return x.pow(4); };
  // d/dx x^4 = 4x^3; d2 = 12x^2; d3 = 24x.
  Tensor d3 = F::grad(F::grad(F::grad(f)))(x);
  expect_close(d3, x.mul(24));
  // The inner grad's argument aliases the outer one: no perturbation confusion.
  auto g = [](const Tensor& x) {
    return F::grad([&](const Tensor& y) { return x.mul(y).sum(); })(x).sum();
  };
  expect_close(F::grad(g)(x), ones_like(x));
}

TEST(Vjp, PullsCotangentsBackToEveryArgument) {
  Tensor a = rand64({2, 3}, 7), b = rand64({3, 4}, 8);
  auto [y, pullback] = F::vjp([](const Tensor& a, const Tensor& b) { return a.mm(b); }, a, b);
  expect_close(y, a.mm(b));
  Tensor ct = rand64({2, 4}, 9);
  auto [ga, gb] = pullback(ct);
  expect_close(ga, ct.mm(b.t()));
  expect_close(gb, a.t().mm(ct));
}

TEST(Jvp, MatchesFiniteDifferences) {
  Tensor x = rand64({5}, 10), v = rand64({5}, 11);
  auto f = [](const Tensor& x) { return x.tanh().mul(x.exp()); };
  auto [y, dy] = F::jvp(f, std::tuple{x}, std::tuple{v});
  expect_close(y, f(x));
  Tensor numeric = f(x.add(v, 1e-6)).sub(f(x.sub(v, 1e-6))).div(2e-6);
  expect_close(dy, numeric, 1e-6);
}

TEST(Jacobians, JacrevEqualsJacfwdAndFiniteDifferences) {
  Tensor w = rand64({3, 4}, 12), x = rand64({4}, 13);
  auto f = [&](const Tensor& x) { return w.matmul(x).tanh().mul(x.sum()); };
  Tensor jr = F::jacrev(f)(x), jf = F::jacfwd(f)(x);
  ASSERT_EQ(jr.sizes(), IntArrayRef({3, 4}));
  expect_close(jr, jf);
  expect_close(jr, numeric_jacobian(f, x), 1e-6);
  // Matrix in, matrix out: sizes out + in.
  auto g = [](const Tensor& m) { return m.matmul(m).sin(); };
  Tensor m = rand64({2, 2}, 14);
  Tensor jg = F::jacrev(g)(m);
  ASSERT_EQ(jg.sizes(), IntArrayRef({2, 2, 2, 2}));
  expect_close(jg, F::jacfwd(g)(m));
  expect_close(jg, numeric_jacobian(g, m), 1e-6);
}

TEST(Hessian, MatchesFiniteDifferencesOfTheGradient) {
  Tensor x = rand64({4}, 15);
  auto f = [](const Tensor& x) { return x.pow(3).sum().add(x.prod()).add(x.sin().sum()); };
  Tensor h = F::hessian(f)(x);
  ASSERT_EQ(h.sizes(), IntArrayRef({4, 4}));
  Tensor numeric = numeric_jacobian([&](const Tensor& y) { return F::grad(f)(y); }, x);
  expect_close(h, numeric, 1e-5);
  expect_close(h, h.t(), 1e-10);
  // A Hessian-vector product without the Hessian: the jvp of the gradient.
  Tensor v = rand64({4}, 16);
  auto [g, hvp] = F::jvp(F::grad(f), std::tuple{x}, std::tuple{v});
  expect_close(hvp, h.matmul(v), 1e-9);
}

TEST(Vmap, MapsOverInDimsAndPlacesOutDims) {
  Tensor xs = rand64({5, 3}, 17), w = rand64({3, 2}, 18);
  auto f = [](const Tensor& x, const Tensor& w) { return x.matmul(w).relu().sum(0); };
  Tensor got = F::vmap(f, {0, std::nullopt})(xs, w);
  std::vector<Tensor> loop;
  for (int64_t b = 0; b < 5; ++b) loop.push_back(f(xs[b], w));
  expect_close(got, stack(loop));
  // The batch in dim 1 of the input and dim 1 of the output.
  Tensor xt = xs.t().contiguous();
  Tensor got_t = F::vmap(
      [](const Tensor& x) {
        return x.unsqueeze(0).expand({2, 3});
      },
      {1}, {1})(xt);
  ASSERT_EQ(got_t.sizes(), IntArrayRef({2, 5, 3}));
  expect_close(got_t.select(1, 4), xs[4].unsqueeze(0).expand({2, 3}));
}

TEST(Vmap, ChunkSizeGivesTheSameResult) {
  Tensor xs = rand64({7, 4}, 19);
  auto f = [](const Tensor& x) { return x.softmax(0).mul(x.sum()); };
  expect_close(F::vmap(f, {}, {0}, "error", 3)(xs), F::vmap(f)(xs));
}

TEST(Vmap, NestsWithEachLevelItsOwnBatch) {
  Tensor a = rand64({2, 3, 4}, 20), b = rand64({3, 4}, 21);
  auto dot = [](const Tensor& x, const Tensor& y) { return x.mul(y).sum(); };
  // Outer over a's dim 0, inner over dim 0 of both: every (i, j) pair's dot product of rows.
  Tensor got = F::vmap([&](const Tensor& ai) { return F::vmap(dot)(ai, b); })(a);
  ASSERT_EQ(got.sizes(), IntArrayRef({2, 3}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_NEAR(got[i][j].item<double>(), dot(a[i][j], b[j]).item<double>(), 1e-12);
}

TEST(Vmap, RandomOpsFollowRandomness) {
  Tensor xs = zeros({4, 3}, TensorOptions(kFloat64));
  auto noisy = [](const Tensor& x) { return x.add(randn({3}, TensorOptions(kFloat64))); };
  EXPECT_TRUE(testing::raises([&] { F::vmap(noisy)(xs); }, "vmap", "randomness"));
  Tensor same = F::vmap(noisy, {}, {0}, "same")(xs);
  Tensor different = F::vmap(noisy, {}, {0}, "different")(xs);
  expect_close(same[0], same[3]);
  EXPECT_FALSE(different[0].allclose(different[3]));
  // Dropout of a batched input: one mask for all, or one each.
  Tensor ones4 = ones({4, 64}, TensorOptions(kFloat64));
  auto drop = [](const Tensor& x) { return kiln::dropout(x, 0.5, true); };
  Tensor d_same = F::vmap(drop, {}, {0}, "same")(ones4);
  expect_close(d_same[0], d_same[2]);
  Tensor d_diff = F::vmap(drop, {}, {0}, "different")(ones4);
  EXPECT_FALSE(d_diff[0].allclose(d_diff[2]));
  // One draw per element cannot land in a tensor that is the same for every element.
  Tensor shared = zeros({3}, TensorOptions(kFloat64));
  EXPECT_TRUE(testing::raises(
      [&] {
        F::vmap([&](const Tensor& x) { return x.add(shared.uniform_()); }, {}, {0},
                "different")(xs);
      },
      "vmap", "writes its batched result into input 0, which is not batched"));
}

TEST(Vmap, BadArgumentsAreClearErrors) {
  Tensor a = ones({3, 2}), b = ones({4, 2});
  auto add = [](const Tensor& x, const Tensor& y) { return x.add(y); };
  EXPECT_TRUE(
      testing::raises([&] { F::vmap(add)(a, b); }, "vmap", "input 0 has 3 and input 1 has 4"));
  EXPECT_TRUE(testing::raises([&] { F::vmap(add, {2, 0})(a, a); }, "vmap", "in_dim 2"));
  EXPECT_TRUE(testing::raises(
      [&] {
        F::vmap(add, {std::nullopt, std::nullopt})(a, a);
      },
      "vmap", "no input is mapped"));
  EXPECT_TRUE(testing::raises(
      [&] { F::vmap([](const Tensor& x) { return x.mul(x.sum().item<float>()); })(a); }, "data_ptr",
      "batched by vmap"));
  // A batched tensor kept past its vmap is an error, not garbage.
  Tensor kept;
  F::vmap([&](const Tensor& x) {
    kept = x;
    return x.mul(2);
  })(a);
  EXPECT_TRUE(testing::raises([&] { kept.add(1); }, "add", "escaped"));
}

TEST(Vmap, OpsWithoutARuleLoopAndAreReportedOnce) {
  // Max pooling has no batching rule yet: it runs once per element.
  Tensor xs = rand64({3, 2, 6, 6}, 22);
  auto pool = [](const Tensor& x) {
    return nn::functional::max_pool2d(x, nn::functional::MaxPool2dFuncOptions(2));
  };
  expect_close(F::vmap(pool)(xs), pool(xs));
  const auto ops = F::vmap_fallback_ops();
  EXPECT_NE(std::find(ops.begin(), ops.end(), "max_pool2d_with_indices"), ops.end());
}

TEST(Vmap, ConvolutionsBatchIntoSamplesAndGroups) {
  // A shared weight: the batch joins the samples; per-element weight gradients: the groups.
  Tensor xs = rand64({3, 2, 2, 5, 5}, 23), w = rand64({4, 2, 3, 3}, 24);
  auto conv = [&](const Tensor& x) { return nn::functional::conv2d(x, w); };
  Tensor got = F::vmap(conv)(xs);
  for (int64_t b = 0; b < 3; ++b) expect_close(got[b], conv(xs[b]));
  auto loss = [](const Tensor& w, const Tensor& x) {
    return nn::functional::conv2d(x, w, nn::functional::ConvFuncOptions().padding({1}).groups(2))
        .pow(2)
        .sum();
  };
  Tensor w2 = rand64({4, 1, 3, 3}, 25);
  Tensor grads = F::vmap(F::grad(loss), {std::nullopt, 0})(w2, xs);
  for (int64_t b = 0; b < 3; ++b) expect_close(grads[b], F::grad(loss)(w2, xs[b]), 1e-9);
  const auto ops = F::vmap_fallback_ops();
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "convolution_backward_weight"), ops.end());
}

TEST(Transforms, GradOfVmapAndVmapOfGrad) {
  Tensor w = rand64({3}, 24), xs = rand64({5, 3}, 25);
  auto loss = [](const Tensor& w, const Tensor& x) { return w.mul(x).sum().tanh(); };
  // Per-sample gradients: vmap of grad.
  Tensor per_sample = F::vmap(F::grad(loss), {std::nullopt, 0})(w, xs);
  ASSERT_EQ(per_sample.sizes(), IntArrayRef({5, 3}));
  for (int64_t b = 0; b < 5; ++b) expect_close(per_sample[b], F::grad(loss)(w, xs[b]));
  // grad of vmap: the gradient of the summed batch.
  auto total = [&](const Tensor& w) { return F::vmap(loss, {std::nullopt, 0})(w, xs).sum(); };
  expect_close(F::grad(total)(w), per_sample.sum(0));
  // jacfwd of jacrev through a vmap inside.
  auto batched = [&](const Tensor& w) { return F::vmap(loss, {std::nullopt, 0})(w, xs).sum(); };
  Tensor h = F::hessian(batched)(w);
  Tensor numeric = numeric_jacobian([&](const Tensor& y) { return F::grad(batched)(y); }, w);
  expect_close(h, numeric, 1e-5);
}

TEST(FunctionalCall, RunsTheModuleWithTheGivenTensors) {
  manual_seed(26);
  nn::Linear lin(3, 2);
  Tensor x = randn({4, 3});
  std::map<std::string, Tensor> p{{"weight", zeros({2, 3})}, {"bias", ones({2})}};
  expect_close(F::functional_call(lin, p, x), ones({4, 2}));
  expect_close(lin(x), x.matmul(lin->weight.t()).add(lin->bias), 1e-6);  // unchanged
  std::map<std::string, Tensor> bad{{"weights", zeros({2, 3})}};
  EXPECT_TRUE(testing::raises([&] { F::functional_call(lin, bad, x); }, "functional_call",
                              "no parameter or buffer named 'weights'"));
}

struct SmallCnnImpl : nn::Module {
  SmallCnnImpl() {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 4, 3)));
    fc = register_module("fc", nn::Linear(4 * 6 * 6, 10));
  }
  Tensor forward(const Tensor& x) { return fc(nn::functional::relu(conv(x)).flatten(1)); }
  nn::Conv2d conv{nullptr};
  nn::Linear fc{nullptr};
};
KILN_MODULE(SmallCnn);

TEST(Examples, PerSampleGradientsOfACnnEqualTheLoop) {
  manual_seed(27);
  SmallCnn model;
  model->to(kFloat64);
  Tensor images = randn({6, 1, 8, 8}, TensorOptions(kFloat64));
  Tensor labels = randint(0, 10, {6});
  std::map<std::string, Tensor> params;
  for (const auto& item : model->named_parameters())
    params.emplace(item.key(), item.value().detach());
  auto loss = [&](const std::map<std::string, Tensor>& p, const Tensor& x, const Tensor& y) {
    Tensor logits = F::functional_call(model, p, x.unsqueeze(0));
    return nn::functional::cross_entropy(logits, y.unsqueeze(0));
  };
  auto per_sample = F::vmap(F::grad(loss), {std::nullopt, 0, 0})(params, images, labels);
  for (int64_t b = 0; b < 6; ++b) {
    model->zero_grad();
    nn::functional::cross_entropy(model(images[b].unsqueeze(0)), labels[b].unsqueeze(0)).backward();
    for (const auto& item : model->named_parameters())
      expect_close(per_sample.at(item.key())[b], item.value().grad(), 1e-10);
  }
}

TEST(Examples, EnsemblingStackedModelsWithVmap) {
  manual_seed(28);
  std::vector<nn::Linear> models;
  for (int i = 0; i < 3; ++i) models.emplace_back(4, 2);
  std::map<std::string, Tensor> stacked;
  for (const char* name : {"weight", "bias"}) {
    std::vector<Tensor> each;
    for (auto& m : models) each.push_back(m->named_parameters()[name].detach());
    stacked[name] = stack(each);
  }
  Tensor x = randn({5, 4});
  auto run = [&](const std::map<std::string, Tensor>& p, const Tensor& x) {
    return F::functional_call(models[0], p, x);
  };
  Tensor out = F::vmap(run, {0, std::nullopt})(stacked, x);
  ASSERT_EQ(out.sizes(), IntArrayRef({3, 5, 2}));
  for (int i = 0; i < 3; ++i) expect_close(out[i], models[i](x), 1e-6);
}

}  // namespace
}  // namespace kiln

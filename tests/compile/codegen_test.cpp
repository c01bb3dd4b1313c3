// The codegen backend: pointwise ops fused into generated C++ kernels, checked against eager, with
// the number of kernels asserted; views and broadcasts read in place; the kernel cache on disk.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kiln/kiln.h"
#include "tests/compile/cache_dir.h"

namespace fs = std::filesystem;

namespace kiln {
namespace {

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  ASSERT_EQ(a.dtype(), b.dtype());
  EXPECT_TRUE(allclose(a.to(kFloat64), b.to(kFloat64), tol, tol)) << a << "\n" << b;
}

int kernels_of(const compiler::Explanation& e) { return e.kernel_count; }

// The schedule lists one line per kernel and per extern call.
int extern_calls(const compiler::Explanation& e) {
  int n = 0;
  for (size_t p = e.schedule.find("extern "); p != std::string::npos;
       p = e.schedule.find("extern ", p + 1))
    ++n;
  return n;
}

Tensor gelu_affine(const Tensor& x, const Tensor& w, const Tensor& b) { return gelu(x * w + b); }

TEST(Codegen, GeluOfAnAffineMapIsOneKernel) {
  const Tensor x = randn({64, 300}), w = randn({300}), b = randn({300});
  compiler::Explanation e = compiler::explain(gelu_affine, x, w, b);
  EXPECT_EQ(kernels_of(e), 1) << e;
  EXPECT_EQ(extern_calls(e), 0) << e;
  auto f = compile(gelu_affine);
  expect_close(f(x, w, b), gelu_affine(x, w, b));
}

TEST(Codegen, MultiplyThenAddRoundsTwiceAsEagerDoes) {
  // Generated code is not allowed to contract a * b + c into one FMA (eager rounds twice).
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) { return x * w + b; };
  const Tensor x = randn({64, 256}), w = randn({256}), b = randn({256});
  EXPECT_TRUE(equal(compile(fn)(x, w, b), fn(x, w, b)));
}

TEST(Codegen, SixOpChainIsOneKernel) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    return ((x * y + 1.0).sigmoid() - x).tanh() * 0.5 + y.exp();
  };
  const Tensor x = randn({1000}), y = randn({1000});
  compiler::Explanation e = compiler::explain(fn, x, y);
  EXPECT_EQ(kernels_of(e), 1) << e;
  expect_close(compile(fn)(x, y), fn(x, y), 1e-5);
}

TEST(Codegen, ViewsAndBroadcastsAreReadInPlace) {
  // x.t() is a view (an extern call that copies nothing); the kernel reads it with its strides.
  auto fn = [](const Tensor& x, const Tensor& col) { return x.t() * col + 2.0; };
  const Tensor x = randn({7, 5}), col = randn({5, 1});
  compiler::Explanation e = compiler::explain(fn, x, col);
  EXPECT_EQ(kernels_of(e), 1) << e;
  expect_close(compile(fn)(x, col), fn(x, col));
}

// ---- reductions over the trailing dims, fused with their producers and consumers ----

template <class F, class... A>
void expect_one_kernel(F fn, const A&... args) {
  compiler::Explanation e = compiler::explain(fn, args...);
  EXPECT_EQ(kernels_of(e), 1) << e;
  EXPECT_EQ(extern_calls(e), 0) << e;
  expect_close(compile(fn)(args...), fn(args...), 1e-5);
}

TEST(Codegen, SoftmaxOfAScaledMaskedInputIsOneKernel) {
  auto fn = [](const Tensor& x, const Tensor& mask) { return softmax(x * 0.125 + mask, -1); };
  expect_one_kernel(fn, randn({4, 33, 70}), randn({33, 70}));
}

TEST(Codegen, LogSoftmaxAndItsConsumersAreOneKernel) {
  expect_one_kernel([](const Tensor& x) { return log_softmax(x, -1).exp() * 2.0; }, randn({9, 40}));
}

TEST(Codegen, ResidualPlusLayerNormIsOneKernel) {
  auto fn = [](const Tensor& x, const Tensor& r, const Tensor& w, const Tensor& b) {
    return layer_norm(x + r, {96}, w, b);
  };
  expect_one_kernel(fn, randn({5, 7, 96}), randn({5, 7, 96}), randn({96}), randn({96}));
}

TEST(Codegen, ResidualStreamAndItsLayerNormShareOnePass) {
  // h is returned as well: the kernel stores it in its last pass, and reads x and r only there
  // and in the statistics' passes.
  auto fn = [](const Tensor& x, const Tensor& r, const Tensor& w) {
    Tensor h = x + r;
    return std::make_tuple(h, layer_norm(h, {64}, w, {}));
  };
  const Tensor x = randn({12, 64}), r = randn({12, 64}), w = randn({64});
  compiler::Explanation e = compiler::explain(fn, x, r, w);
  EXPECT_EQ(kernels_of(e), 1) << e;
  auto [h, y] = compile(fn)(x, r, w);
  auto [h2, y2] = fn(x, r, w);
  expect_close(h, h2);
  expect_close(y, y2, 1e-5);
}

TEST(Codegen, RmsNormIsOneKernel) {
  expect_one_kernel([](const Tensor& x, const Tensor& w) { return rms_norm(x, {50}, w) * 3.0; },
                    randn({8, 50}), randn({50}));
}

TEST(Codegen, CrossEntropyIsOneKernelThatNeverStoresTheLogProbabilities) {
  auto fn = [](const Tensor& x, const Tensor& t) { return cross_entropy(x * 0.5, t); };
  const Tensor x = randn({16, 100}), t = randint(0, 100, {16});
  compiler::Explanation e = compiler::explain(fn, x, t);
  EXPECT_EQ(kernels_of(e), 1) << e;  // mul, log_softmax, nll_loss's gather
  EXPECT_EQ(extern_calls(e), 0) << e;
  EXPECT_NE(e.schedule.find("(2 loads, 0 stores)"), std::string::npos) << e;
  expect_close(compile(fn)(x, t), fn(x, t), 1e-6);
}

TEST(Codegen, CrossEntropyGatherKeepsNllLossSemantics) {
  const Tensor x = randn({37, 21}), w = rand({21}) + 0.5;
  Tensor t = randint(0, 21, {37});
  t.index_put_({tensor({3, 11, 30}, TensorOptions(kInt64))}, tensor({-100}, TensorOptions(kInt64)));
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(r)) + (weighted ? " weighted" : ""));
      auto fn = [&](const Tensor& x, const Tensor& t) {
        return cross_entropy(x, t, weighted ? w : Tensor(), r);
      };
      expect_close(compile(fn)(x, t), fn(x, t), 1e-6);
    }
  }
  // A class index of its own, and int32 targets.
  auto ignore_2 = [](const Tensor& x, const Tensor& t) {
    return nll_loss(log_softmax(x, 1), t, {}, Reduction::Mean, 2);
  };
  expect_close(compile(ignore_2)(x, t.clamp(0)), ignore_2(x, t.clamp(0)), 1e-6);
  const Tensor t32 = t.clamp(0).to(kInt32);
  expect_close(compile(ignore_2)(x, t32), ignore_2(x, t32), 1e-6);
  // Every target ignored: a mean of nothing is NaN, as in eager.
  const Tensor all_ignored = full({37}, -100, TensorOptions(kInt64));
  auto mean = [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); };
  EXPECT_TRUE(compile(mean)(x, all_ignored).isnan().item<bool>());
}

TEST(Codegen, CrossEntropyWithTargetsOrWeightsMadeInsideTheFunction) {
  // Constants computed inside the function, and a target also read elementwise: no gather (the
  // nll_loss runs its eager kernel), the same results.
  const Tensor x = randn({6, 6}), t = randint(0, 6, {6});
  auto constant_weight = [](const Tensor& x, const Tensor& t) {
    return cross_entropy(x, t, full({6}, 0.5));
  };
  expect_close(compile(constant_weight)(x, t), constant_weight(x, t), 1e-6);
  auto constant_target = [](const Tensor& x) {
    return nll_loss(log_softmax(x * 2.0, 1), full({6}, 3, TensorOptions(kInt64)));
  };
  expect_close(compile(constant_target)(x), constant_target(x), 1e-6);
  auto target_read_twice = [](const Tensor& x, const Tensor& t) {
    return nll_loss(log_softmax(x + t, 1), t);
  };
  expect_close(compile(target_read_twice)(x, t), target_read_twice(x, t), 1e-6);
}

TEST(Codegen, CrossEntropyGatherChecksTargets) {
  auto fn = [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); };
  auto f = compile(fn);
  const Tensor x = randn({4, 5});
  f(x, tensor({0, 1, 2, 3}, TensorOptions(kInt64)));
  try {
    f(x, tensor({0, 5, 2, 3}, TensorOptions(kInt64)));
    FAIL() << "no error for an out-of-range target";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("nll_loss: Target 5 is out of bounds for 5 classes"),
              std::string::npos)
        << err.what();
  }
}

TEST(Codegen, CrossEntropyGatherDtypesAndSizes) {
  // The log-probabilities rounded to 16-bit as eager stores them; also returned (stored); a
  // symbolic batch and class count serve every size with one kernel.
  auto fn = [](const Tensor& x, const Tensor& t) {
    Tensor logp = log_softmax(x + 1.0, -1);
    return std::make_tuple(logp, nll_loss(logp, t));
  };
  for (ScalarType dt : {kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Tensor x = randn({9, 40}).to(dt), t = randint(0, 40, {9});
    auto [lp, loss] = compile(fn)(x, t);
    auto [lp2, loss2] = fn(x, t);
    expect_close(lp, lp2, dt == kFloat64 ? 1e-12 : 1e-2);
    expect_close(loss, loss2, dt == kFloat64 ? 1e-12 : 1e-2);
  }
  auto f = compile(fn, CompileOptions().dynamic(true));
  for (int64_t n : {3, 17, 64}) {
    const Tensor x = randn({n, n + 5}), t = randint(0, n + 5, {n});
    expect_close(std::get<1>(f(x, t)), std::get<1>(fn(x, t)), 1e-6);
  }
}

// fn returns a sum and a mean of x; compiled and eager agree in float64 and the 16-bit floats
// (sum_tol: the 16-bit sums' absolute tolerance).
template <class F>
void expect_sums_and_means_in_each_float_dtype(F fn, std::vector<int64_t> shape, double sum_tol) {
  for (ScalarType dt : {kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Tensor y = randn(shape).to(dt);
    auto [s, m] = compile(fn)(y);
    auto [s2, m2] = fn(y);
    expect_close(s, s2, dt == kFloat64 ? 1e-10 : sum_tol);
    expect_close(m, m2, dt == kFloat64 ? 1e-12 : 1e-2);
  }
}

TEST(Codegen, ReductionsOfEveryElementFuseTheirProducers) {
  // Blocks of the flattened input go to the threads; (x - y)^2 is never stored.
  auto fn = [](const Tensor& x, const Tensor& y) { return ((x - y) * (x - y)).mean(); };
  const Tensor x = randn({300, 257}), y = randn({257});
  compiler::Explanation e = compiler::explain(fn, x, y);
  EXPECT_EQ(kernels_of(e), 1) << e;
  EXPECT_EQ(extern_calls(e), 0) << e;
  EXPECT_NE(e.schedule.find("(2 loads, 1 stores)"), std::string::npos) << e;
  expect_close(compile(fn)(x, y), fn(x, y), 1e-5);
  // A producer that is also returned is stored by the same pass.
  auto both = [](const Tensor& x) {
    Tensor h = x.exp();
    return std::make_tuple(h, h.sum(), amax(h), amin(x * 2.0, {0, 1}, true));
  };
  const Tensor z = randn({70000}).view({7, 10000});
  auto [h, s, mx, mn] = compile(both)(z);
  auto [h2, s2, mx2, mn2] = both(z);
  expect_close(h, h2);
  expect_close(s, s2, 1e-4);
  expect_close(mx, mx2);
  expect_close(mn, mn2);
}

TEST(Codegen, ReductionsOfEveryElementDoNotDependOnTheThreadCount) {
  auto fn = [](const Tensor& x) { return (x * 3.0).sum(); };
  const Tensor x = randn({1 << 20});
  const int threads = get_num_threads();
  auto f = compile(fn);
  set_num_threads(1);
  const Tensor one = f(x);
  set_num_threads(2);
  const Tensor two = f(x);
  set_num_threads(threads);
  EXPECT_TRUE(equal(one, two)) << one << " " << two;
  expect_close(one, fn(x), 1e-2);
}

TEST(Codegen, ReductionsOfEveryElementPropagateNaNAndKeepDtypes) {
  Tensor x = randn({40000});
  x.index_put_({tensor({31000}, TensorOptions(kInt64))}, NAN);
  auto extremes = [](const Tensor& x) { return std::make_tuple(amax(x), amin(x + 1.0)); };
  auto [mx, mn] = compile(extremes)(x);
  EXPECT_TRUE(mx.isnan().item<bool>());
  EXPECT_TRUE(mn.isnan().item<bool>());
  expect_sums_and_means_in_each_float_dtype(
      [](const Tensor& x) { return std::make_tuple((x * 0.5).sum(), x.mean()); }, {3, 4000}, 0.5);
  auto dynamic =
      compile([](const Tensor& x) { return (x - 1.0).mean(); }, CompileOptions().dynamic(true));
  for (int64_t n : {5, 16384, 16385, 50000}) {
    const Tensor y = randn({n});
    expect_close(dynamic(y), (y - 1.0).mean(), 1e-5);
  }
}

TEST(Codegen, ALoneSoftmaxRunsItsEagerKernel) {
  auto fn = [](const Tensor& x) { return softmax(x, -1); };
  const Tensor x = randn({8, 64});
  compiler::Explanation e = compiler::explain(fn, x);
  EXPECT_EQ(kernels_of(e), 0) << e;
  EXPECT_EQ(extern_calls(e), 1) << e;
  expect_close(compile(fn)(x), fn(x));
}

TEST(Codegen, SumsFeedTheirConsumersInTheSameKernel) {
  auto fn = [](const Tensor& x) { return (x.exp() / x.exp().sum(-1, true)).relu() * 3.0; };
  expect_one_kernel(fn, randn({6, 9}));
  expect_one_kernel([](const Tensor& x) { return x - x.amax(-1, true); }, randn({3, 17}));
}

TEST(Codegen, AGemmsEpilogueIsOnePassOverItsOutput) {
  // Bias, activation and residual after an extern GEMM: one kernel reading the product once and
  // storing the result once.
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& r) {
    return gelu(x.matmul(w) + b) + r;
  };
  const Tensor x = randn({64, 96}), w = randn({96, 80}), b = randn({80}), r = randn({64, 80});
  compiler::Explanation e = compiler::explain(fn, x, w, b, r);
  EXPECT_EQ(extern_calls(e), 1) << e;  // mm
  EXPECT_NE(e.schedule.find("kernel 0 over [64, 80]: add gelu add (3 loads, 1 stores)"),
            std::string::npos)
      << e;
  expect_close(compile(fn)(x, w, b, r), fn(x, w, b, r), 1e-5);
  // A linear layer over [B, T, C] (addmm with the bias, a view back to 3-d), then the residual
  // and layer_norm: the view is metadata, and the epilogue one row kernel.
  auto block = [](const Tensor& h, const Tensor& w, const Tensor& b, const Tensor& g) {
    return layer_norm(h + linear(h, w, b), {32}, g);
  };
  const Tensor h = randn({4, 6, 32}), lw = randn({32, 32}), lb = randn({32}), g = randn({32});
  compiler::Explanation eb = compiler::explain(block, h, lw, lb, g);
  EXPECT_EQ(kernels_of(eb), 1) << eb;
  EXPECT_NE(eb.schedule.find("add layer_norm (3 loads, 1 stores)"), std::string::npos) << eb;
  expect_close(compile(block)(h, lw, lb, g), block(h, lw, lb, g), 1e-5);
}

TEST(Codegen, AttentionBlockPointwisePartsFuse) {
  // scores = q k^T (an extern GEMM); scale, mask and softmax in one kernel; the weighted sum
  // another GEMM.
  auto fn = [](const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
    return softmax(q.matmul(k.transpose(-2, -1)) * 0.25 + mask, -1).matmul(v);
  };
  const Tensor q = randn({2, 4, 10, 16}), k = randn({2, 4, 10, 16}), v = randn({2, 4, 10, 16}),
               mask = randn({10, 10});
  compiler::Explanation e = compiler::explain(fn, q, k, v, mask);
  EXPECT_EQ(kernels_of(e), 1) << e;
  expect_close(compile(fn)(q, k, v, mask), fn(q, k, v, mask), 1e-5);
}

TEST(Codegen, ReductionsOverLeadingDimsFuseTheirProducers) {
  // Columns go to the threads; (x * 2) is never stored; the + 1 reads the finished sums.
  auto fn = [](const Tensor& x) { return (x * 2.0).sum(0) + 1.0; };
  const Tensor x = randn({600, 300});
  compiler::Explanation e = compiler::explain(fn, x);
  EXPECT_EQ(kernels_of(e), 2) << e;  // mul and sum; add
  EXPECT_EQ(extern_calls(e), 0) << e;
  expect_close(compile(fn)(x), fn(x), 1e-4);
  auto more = [](const Tensor& x, const Tensor& b) {
    Tensor h = x.exp() - b;  // also returned: stored by the reduction's pass
    return std::make_tuple(h, h.mean({0, 1}, true), amax(x, {0}), amin(x + 1.0, {0, 1}));
  };
  const Tensor y = randn({7, 5, 33}).transpose(0, 1), b = randn({33});
  auto [h, m, mx, mn] = compile(more)(y, b);
  auto [h2, m2, mx2, mn2] = more(y, b);
  expect_close(h, h2);
  expect_close(m, m2, 1e-5);
  expect_close(mx, mx2);
  expect_close(mn, mn2);
}

TEST(Codegen, ReductionsOverLeadingDimsKeepSemantics) {
  Tensor x = randn({40, 70});
  x.index_put_({tensor({3}, TensorOptions(kInt64)), tensor({5}, TensorOptions(kInt64))}, NAN);
  auto extremes = [](const Tensor& x) { return std::make_tuple(amax(x, {0}), amin(x, {0})); };
  auto [mx, mn] = compile(extremes)(x);
  auto [mx2, mn2] = extremes(x);
  EXPECT_TRUE(equal(mx.isnan(), mx2.isnan()));
  EXPECT_TRUE(mx[5].isnan().item<bool>());
  expect_close(mx.nan_to_num(), mx2.nan_to_num());
  expect_close(mn.nan_to_num(), mn2.nan_to_num());
  expect_sums_and_means_in_each_float_dtype(
      [](const Tensor& x) { return std::make_tuple((x * 0.5).sum(0), x.mean(0)); }, {300, 41}, 0.2);
  auto dynamic =
      compile([](const Tensor& x) { return (x - 1.0).sum(0); }, CompileOptions().dynamic(true));
  for (int64_t n : {3, 17, 300}) {
    const Tensor y = randn({n, n + 250});
    expect_close(dynamic(y), (y - 1.0).sum(0), 1e-4);
  }
}

TEST(Codegen, ReductionsOverMiddleDimsAreColumnsOfEachOuterIndex) {
  // Mean pooling over a sequence: [B, T, C] -> [B, C], one kernel with its producer.
  auto pool = [](const Tensor& x, const Tensor& b) { return (x + b).mean(1); };
  const Tensor x = randn({5, 37, 300}), b = randn({300});
  compiler::Explanation e = compiler::explain(pool, x, b);
  EXPECT_EQ(kernels_of(e), 1) << e;
  EXPECT_EQ(extern_calls(e), 0) << e;
  expect_close(compile(pool)(x, b), pool(x, b), 1e-5);
  // Several kept and reduced dims, keepdim, a strided input, max with a NaN.
  auto several = [](const Tensor& x) {
    return std::make_tuple(x.sum({1, 2}, true), amax(x * 2.0, {1}), amin(x, {2}));
  };
  Tensor y = randn({3, 4, 5, 6, 7}).transpose(3, 4);
  y.index_put_({tensor({1}, TensorOptions(kInt64)), tensor({2}, TensorOptions(kInt64))}, NAN);
  auto [s, mx, mn] = compile(several)(y);
  auto [s2, mx2, mn2] = several(y);
  EXPECT_TRUE(equal(s.isnan(), s2.isnan()));
  EXPECT_TRUE(equal(mx.isnan(), mx2.isnan()));
  expect_close(s.nan_to_num(), s2.nan_to_num(), 1e-5);
  expect_close(mx.nan_to_num(), mx2.nan_to_num());
  expect_close(mn.nan_to_num(), mn2.nan_to_num());
}

TEST(Codegen, ReductionsOverDimsThatAreNotConsecutiveLoopInTheirOwnOrder) {
  // Batch-norm statistics over [N, C, H, W]: rows of C, each folded in segments of H * W.
  auto stats = [](const Tensor& x, const Tensor& shift) {
    Tensor d = x - shift;
    return std::make_tuple(d.sum({0, 2, 3}), (d * d).mean({0, 2, 3}, true));
  };
  const Tensor x = randn({6, 5, 9, 31}), shift = randn({5, 1, 1});
  compiler::Explanation e = compiler::explain(stats, x, shift);
  EXPECT_EQ(kernels_of(e), 2) << e;  // one per reduction, each with its producers
  EXPECT_EQ(extern_calls(e), 0) << e;
  auto [s, m] = compile(stats)(x, shift);
  auto [s2, m2] = stats(x, shift);
  expect_close(s, s2, 1e-4);
  expect_close(m, m2, 1e-5);
  // Kept dims after the last reduced one: columns of each kept outer index.
  auto gaps = [](const Tensor& x) {
    return std::make_tuple((x * 2.0).sum({0, 2}), amax(x, {1, 3}), amin(x, {0, 2}, true));
  };
  Tensor z = randn({4, 6, 9, 70}).transpose(1, 2);
  z.index_put_({tensor({1}, TensorOptions(kInt64)), tensor({2}, TensorOptions(kInt64))}, NAN);
  EXPECT_EQ(extern_calls(compiler::explain(gaps, z)), 0);
  auto [gs, gmx, gmn] = compile(gaps)(z);
  auto [gs2, gmx2, gmn2] = gaps(z);
  ASSERT_EQ(gmn.sizes(), gmn2.sizes());
  EXPECT_TRUE(equal(gs.isnan(), gs2.isnan()));
  EXPECT_TRUE(equal(gmx.isnan(), gmx2.isnan()));
  EXPECT_TRUE(equal(gmn.isnan(), gmn2.isnan()));
  EXPECT_GT(gmx.isnan().sum().item<int64_t>(), 0);
  expect_close(gs.nan_to_num(), gs2.nan_to_num(), 1e-4);
  expect_close(gmx.nan_to_num(), gmx2.nan_to_num());
  expect_close(gmn.nan_to_num(), gmn2.nan_to_num());
  expect_sums_and_means_in_each_float_dtype(
      [](const Tensor& x) {
        return std::make_tuple((x * 0.5).sum({0, 2}), x.mean({0, 2}));
      },
      {20, 3, 50}, 0.2);
  auto dynamic = compile(
      [](const Tensor& x) {
        return (x + 1.0).mean({0, 2});
      },
      CompileOptions().dynamic(true));
  for (int64_t n : {2, 7, 40}) {
    const Tensor y = randn({n, 3, n + 13});
    expect_close(dynamic(y), (y + 1.0).mean({0, 2}), 1e-5);
  }
}

TEST(Codegen, ReductionDtypesAndSizes) {
  auto fn = [](const Tensor& x) { return softmax(x, -1) + layer_norm(x, {x.size(-1)}); };
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    auto f = compile(fn, CompileOptions().dynamic(true));
    for (int64_t n : {3, 17, 64}) {
      const Tensor x = randn({5, n}).to(dt);
      const double tol = dt == kBFloat16 ? 2e-2 : dt == kFloat16 ? 2e-3 : 1e-5;
      expect_close(f(x), fn(x), tol);
    }
  }
}

TEST(Codegen, DtypesComputeAsEager) {
  auto fn = [](const Tensor& a, const Tensor& b) { return where(a > b, a * b, a - b) + 1; };
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt8, kUInt8}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = (randn({33, 17}) * 4).to(dt), b = (randn({17}) * 4).to(dt);
    auto f = compile(fn);
    Tensor got = f(a, b), want = fn(a, b);
    ASSERT_EQ(got.dtype(), want.dtype());
    EXPECT_TRUE(equal(got, want)) << got << "\n" << want;
  }
}

TEST(Codegen, OneKernelServesEverySize) {
  auto f = compile(gelu_affine);
  for (int64_t n : {8, 16, 24, 32, 1000}) {
    const Tensor x = randn({n, 12}), w = randn({12}), b = randn({12});
    expect_close(f(x, w, b), gelu_affine(x, w, b));
  }
  EXPECT_EQ(f.compilations(), 2);  // static at 8, then s0 from 16 on
}

TEST(Codegen, MutatedInputsAreMutatedAfterTheCall) {
  auto fn = [](const Tensor& x) {
    Tensor a = x * 2.0;
    x.add_(1.0);
    return a + x;
  };
  Tensor x1 = randn({10}), x2 = x1.clone();
  Tensor got = compile(fn)(x1), want = fn(x2);
  expect_close(got, want);
  expect_close(x1, x2);
}

TEST(Codegen, InputsThatRequireGradGetACompiledBackward) {
  const Tensor x = randn({4, 3}).requires_grad_(), w = randn({3}), b = randn({3});
  auto f = compile(gelu_affine);
  Tensor y = f(x, w, b);
  ASSERT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
  y.sum().backward();
  Tensor x2 = x.detach().requires_grad_();
  gelu_affine(x2, w, b).sum().backward();
  expect_close(x.grad(), x2.grad());
}

TEST(Codegen, ExplainListsTheFusedOps) {
  const Tensor x = randn({3}), w = randn({3}), b = randn({3});
  compiler::Explanation e = compiler::explain(gelu_affine, x, w, b);
  EXPECT_NE(e.schedule.find("kernel 0 over [3]: mul add gelu"), std::string::npos) << e;
}

// ---- the kernel cache ----

Tensor run_gelu_affine(int64_t n) {
  auto f = compile(gelu_affine, CompileOptions().dynamic(false));
  const Tensor x = randn({n}), w = randn({n}), b = randn({n});
  Tensor y = f(x, w, b);
  expect_close(y, gelu_affine(x, w, b));
  return y;
}

TEST(CodegenCache, ASecondLoadComesFromDiskWithoutTheCompiler) {
  CacheDir dir;
  const auto before = compiler::cache_stats();
  run_gelu_affine(5);
  EXPECT_EQ(compiler::cache_stats().compiles, before.compiles + 1);
  compiler::clear_memory_cache();
  run_gelu_affine(5);
  const auto after = compiler::cache_stats();
  EXPECT_EQ(after.compiles, before.compiles + 1);
  EXPECT_EQ(after.disk_hits, before.disk_hits + 1);
}

// The child half of the next test: compiles and reports its cache counters in a file.
TEST(CodegenCache, ChildProcess) {
  const char* report = std::getenv("KILN_TEST_CACHE_REPORT");
  if (!report) GTEST_SKIP() << "run by AnotherProcessHitsTheDiskCache";
  run_gelu_affine(7);
  std::ofstream(report) << compiler::cache_stats().compiles << " "
                        << compiler::cache_stats().disk_hits;
}

TEST(CodegenCache, AnotherProcessHitsTheDiskCache) {
  CacheDir dir;
  const fs::path report = dir.path() / "report.txt";
  fs::create_directories(dir.path());
  // The child runs its one test whatever shard this process is (make test-sanitize shards).
  const std::string cmd =
      "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX KILN_TEST_CACHE_REPORT='" + report.string() +
      "' '" + fs::read_symlink("/proc/self/exe").string() +
      "' --gtest_filter=CodegenCache.ChildProcess > /dev/null 2>&1";
  auto child = [&] {
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    int64_t compiles = -1, hits = -1;
    std::ifstream(report) >> compiles >> hits;
    return std::pair{compiles, hits};
  };
  EXPECT_EQ(child(), (std::pair<int64_t, int64_t>{1, 0}));  // the first process compiles
  EXPECT_EQ(child(), (std::pair<int64_t, int64_t>{0, 1}));  // the second loads from disk
}

TEST(CodegenCache, DamagedEntriesAreRebuilt) {
  CacheDir dir;
  run_gelu_affine(6);
  const auto objects = dir.objects();
  ASSERT_EQ(objects.size(), 1u);
  std::ofstream(objects[0], std::ios::app) << "garbage";
  compiler::clear_memory_cache();
  const auto before = compiler::cache_stats();
  run_gelu_affine(6);
  const auto after = compiler::cache_stats();
  EXPECT_EQ(after.rebuilt, before.rebuilt + 1);
  EXPECT_EQ(after.compiles, before.compiles + 1);
  EXPECT_EQ(after.disk_hits, before.disk_hits);
}

TEST(CodegenCache, LeastRecentlyUsedEntriesAreEvicted) {
  CacheDir dir;
  setenv("KILN_CACHE_MAX_MB", "0", 1);  // every new entry evicts the others
  const auto before = compiler::cache_stats();
  run_gelu_affine(9);
  run_gelu_affine(10);
  EXPECT_EQ(dir.objects().size(), 1u);
  EXPECT_EQ(compiler::cache_stats().evicted, before.evicted + 1);
}

TEST(CodegenCache, ThreadsCompileTogetherAndShareAUnit) {
  CacheDir dir;
  const auto before = compiler::cache_stats();
  std::vector<std::thread> threads;
  // Four threads: two units (sizes 13 and 14), each wanted twice at once; each is compiled once.
  for (int t = 0; t < 4; ++t) threads.emplace_back([t] { run_gelu_affine(13 + t % 2); });
  for (auto& t : threads) t.join();
  const auto after = compiler::cache_stats();
  EXPECT_EQ(after.compiles, before.compiles + 2);
  EXPECT_EQ(after.memory_hits + after.disk_hits - before.memory_hits - before.disk_hits, 2);
}

TEST(CodegenCache, ACompilerFailureKeepsTheSource) {
  CacheDir dir;
  fs::create_directories(dir.path());
  const fs::path fake = dir.path() / "fake-cxx";
  std::ofstream(fake) << "#!/bin/sh\n"
                         "if [ \"$1\" = --version ]; then echo fake 1.0; exit 0; fi\n"
                         "echo 'generated.cpp:1: error: broken on purpose' >&2; exit 1\n";
  fs::permissions(fake, fs::perms::owner_all);
  setenv("KILN_CXX", fake.c_str(), 1);
  std::string err;
  try {
    run_gelu_affine(11);
  } catch (const Error& e) {
    err = e.what();
  }
  unsetenv("KILN_CXX");
  EXPECT_NE(err.find("the C++ compiler failed on generated code (kept at "), std::string::npos)
      << err;
  EXPECT_NE(err.find("broken on purpose"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln

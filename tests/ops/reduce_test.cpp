// Reductions beyond the op table: PyTorch's error messages, empty inputs, ties, correction,
// norms, -inf/large inputs, accuracy on long sums, every layout the CPU driver plans for
// (inner, outer, copy; split rows and split columns), gradients at zeros and ties, and
// symbolic shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

using samples::make;
using V = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class F>
void expect_error(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
  }
}

V values(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return V(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

void expect_values(const Tensor& t, const V& want, double tol = 1e-12) {
  V got = values(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": got " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at " << i;
    }
  }
}

// Compares a reduction of `x` with the same reduction of a float64 contiguous copy.
void expect_matches_double(const Tensor& got, const Tensor& want_f64, double rtol) {
  ASSERT_EQ(got.sizes().vec(), want_f64.sizes().vec());
  V g = values(got), w = values(want_f64);
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_NEAR(g[i], w[i], rtol * std::max(1.0, std::abs(w[i]))) << "at flat index " << i;
}

// Sums are compared relative to the sum of magnitudes (their condition), per output.
void expect_sum_matches(const Tensor& got, const Tensor& x, std::vector<int64_t> dims, double rtol,
                        double divisor = 1) {
  Tensor d = x.to(kFloat64);
  V want = values(d.sum(dims)), scale = values(d.abs().sum(dims));
  V g = values(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(g[i], want[i] / divisor, rtol * std::max(1.0, scale[i]) / divisor)
        << "at flat index " << i;
}

Tensor grad_of(const Tensor& x_in, const std::function<Tensor(const Tensor&)>& f) {
  Tensor x = x_in.detach().clone().requires_grad_(true);
  f(x).sum().backward();
  return x.grad();
}

TEST(Reduce, DimOutOfRangeAndRepeatedDims) {
  Tensor x = make({2, 3}, kFloat32);
  const std::string range =
      "dimension out of range (expected to be in range of [-2, 1], but got 2)";
  expect_error([&] { sum(x, {2}); }, range);
  expect_error([&] { amax(x, {2}); }, range);
  expect_error([&] { x.var({2}, true); }, range);
  expect_error([&] { x.argmax(2); }, range);
  expect_error([&] { x.max(2); }, range);
  expect_error([&] { x.softmax(2); }, range);
  expect_error([&] { x.cumsum(-3); }, "but got -3");
  expect_error([&] { sum(x, {0, -2}); }, "dim 0 appears multiple times in the list of dims");
}

TEST(Reduce, DtypeRules) {
  Tensor i = tensor({1, 2, 3}, TensorOptions(kInt32));
  EXPECT_EQ(i.sum().dtype(), kInt64);
  EXPECT_EQ(i.sum().item<int64_t>(), 6);
  EXPECT_EQ(i.prod().dtype(), kInt64);
  EXPECT_EQ(i.cumsum(0).dtype(), kInt64);
  EXPECT_EQ(tensor({true, true, false}).sum().item<int64_t>(), 2);
  EXPECT_EQ(i.sum(kFloat64).dtype(), kFloat64);
  expect_error([&] { i.mean(); },
               "mean: could not infer output dtype. Input dtype must be either a floating "
               "point or complex dtype. Got: int32");
  expect_error([&] { make({3}, kFloat32).mean(kInt64); }, "Optional dtype must be either");
  EXPECT_DOUBLE_EQ(i.mean(kFloat64).item<double>(), 2.0);
  expect_error([&] { i.var(); }, "std and var only support floating point");
  expect_error([&] { i.norm(); }, "Expected a floating point or complex tensor as input");
  EXPECT_EQ(tensor({0, 7}, TensorOptions(kUInt8)).any().dtype(), kUInt8);
  EXPECT_EQ(i.all().dtype(), kBool);
  EXPECT_EQ(i.argmax().dtype(), kInt64);
  EXPECT_EQ(i.logsumexp({0}).dtype(), kFloat32);
  EXPECT_EQ(make({3}, kBFloat16).sum().dtype(), kBFloat16);
  EXPECT_EQ(i.softmax(0, kFloat64).dtype(), kFloat64);
}

TEST(Reduce, EmptyInputs) {
  Tensor e = make({0, 3}, kFloat32);
  EXPECT_EQ(e.sum().item<float>(), 0.0f);
  expect_values(e.sum({0}), {0, 0, 0});
  EXPECT_EQ(e.sum({1}).sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(e.prod().item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(e.mean().item<float>()));
  expect_values(e.mean({0}), {NAN, NAN, NAN});
  EXPECT_TRUE(std::isnan(e.var().item<float>()));
  EXPECT_EQ(e.norm().item<float>(), 0.0f);
  EXPECT_EQ(e.logsumexp({0, 1}).item<float>(), -INFINITY);
  EXPECT_TRUE(e.all().item<bool>());
  EXPECT_FALSE(e.any().item<bool>());
  EXPECT_EQ(e.count_nonzero().item<int64_t>(), 0);
  EXPECT_EQ(e.cumsum(0).sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(e.softmax(1).numel(), 0);

  const std::string unspecified =
      "Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
      "with the 'dim' argument.";
  expect_error([&] { e.amax(); }, "amax: " + unspecified);
  expect_error([&] { e.amin(); }, "amin: " + unspecified);
  expect_error([&] { e.max(); }, "max: " + unspecified);
  expect_error([&] { e.argmax(); }, "argmax: " + unspecified);
  expect_error([&] { e.amax({0}); }, "amax: Expected reduction dim 0 to have non-zero size.");
  expect_error([&] { e.max(0); }, "max_dim: Expected reduction dim 0 to have non-zero size.");
  expect_error([&] { e.argmin(0); }, "argmin: Expected reduction dim 0 to have non-zero size.");
  expect_error([&] { e.norm(INFINITY, {0}); }, "cannot compute the inf norm on an empty tensor");
  // Reducing a non-empty dim of an empty tensor is fine.
  EXPECT_EQ(e.amax({1}).sizes().vec(), std::vector<int64_t>{0});
  EXPECT_EQ(std::get<1>(e.max(1)).sizes().vec(), std::vector<int64_t>{0});
}

TEST(Reduce, TiesGiveTheFirstIndex) {
  Tensor x = tensor({1.0, 3.0, 3.0, 2.0, 3.0}, TensorOptions(kFloat32));
  auto [v, i] = x.max(0);
  EXPECT_EQ(v.item<float>(), 3.0f);
  EXPECT_EQ(i.item<int64_t>(), 1);
  EXPECT_EQ(x.argmax().item<int64_t>(), 1);
  EXPECT_EQ(std::get<1>(x.min(0)).item<int64_t>(), 0);
  // Column layout (dim 0 of a row-major matrix) and strided rows (transposed).
  Tensor m = tensor({{1.0, 5.0, 2.0}, {5.0, 5.0, 2.0}, {5.0, 2.0, 2.0}}, TensorOptions(kFloat32));
  expect_values(std::get<1>(m.max(0)), {1, 0, 0});
  expect_values(m.argmin(0), {0, 2, 0});
  expect_values(m.t().argmax(1), {1, 0, 0});
  expect_values(m.argmax(1, true), {1, 0, 0});
  EXPECT_EQ(m.argmax(std::nullopt, true).sizes().vec(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.argmax().item<int64_t>(), 1);
  // NaN is the maximum and the minimum; the first NaN is returned.
  Tensor n = tensor({1.0, NAN, 7.0, NAN}, TensorOptions(kFloat32));
  EXPECT_EQ(n.argmax().item<int64_t>(), 1);
  EXPECT_EQ(n.argmin().item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(n.max().item<float>()));
  EXPECT_TRUE(std::isnan(n.amin().item<float>()));
}

TEST(Reduce, ExtremeGradientsAtTies) {
  Tensor x = tensor({1.0, 3.0, 3.0, 2.0}, TensorOptions(kFloat64));
  expect_values(grad_of(x, [](const Tensor& t) { return t.amax(); }), {0, 0.5, 0.5, 0});
  expect_values(grad_of(x, [](const Tensor& t) { return t.max(); }), {0, 0.5, 0.5, 0});
  expect_values(grad_of(x, [](const Tensor& t) { return std::get<0>(t.max(0)); }), {0, 1, 0, 0});
  Tensor m = tensor({{2.0, 2.0}, {1.0, 4.0}}, TensorOptions(kFloat64));
  expect_values(grad_of(m, [](const Tensor& t) { return t.amin({1}); }), {0.5, 0.5, 1, 0});
  expect_values(grad_of(m, [](const Tensor& t) { return std::get<0>(t.min(1, true)); }),
                {1, 0, 1, 0});
}

TEST(Reduce, VarianceCorrection) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, TensorOptions(kFloat64));
  auto var_c = [&](double c) { return x.var(std::nullopt, Scalar(c)).item<double>(); };
  EXPECT_DOUBLE_EQ(var_c(0), 1.25);
  EXPECT_DOUBLE_EQ(var_c(1), 5.0 / 3);
  EXPECT_DOUBLE_EQ(var_c(2), 2.5);
  EXPECT_EQ(var_c(4), kInf);  // divisor max(0, N - correction) = 0
  EXPECT_DOUBLE_EQ(x.var().item<double>(), 5.0 / 3);
  EXPECT_DOUBLE_EQ(x.var(false).item<double>(), 1.25);
  EXPECT_DOUBLE_EQ(x.std(std::nullopt, Scalar(0)).item<double>(), std::sqrt(1.25));
  auto [v, m] = var_mean(x, std::nullopt, Scalar(2));
  EXPECT_DOUBLE_EQ(v.item<double>(), 2.5);
  EXPECT_DOUBLE_EQ(m.item<double>(), 2.5);
  EXPECT_TRUE(std::isnan(tensor({5.0}).var().item<float>()));  // N = 1, unbiased
  // Data far from zero: no catastrophic cancellation.
  Tensor far = tensor({1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4}, TensorOptions(kFloat64));
  EXPECT_NEAR(far.var().item<double>(), 5.0 / 3, 1e-9);
  Tensor mat = tensor({{1.0, 2.0}, {3.0, 5.0}}, TensorOptions(kFloat32));
  expect_values(mat.var({0}, true), {2, 4.5}, 1e-6);
  expect_values(mat.var({1}, false, true), {0.25, 1}, 1e-6);
  // std's gradient at std == 0 is 0 (not NaN).
  expect_values(
      grad_of(tensor({2.0, 2.0}, TensorOptions(kFloat64)), [](const Tensor& t) { return t.std(); }),
      {0, 0});
}

TEST(Reduce, NormValues) {
  Tensor x = tensor({3.0, -4.0, 0.0}, TensorOptions(kFloat64));
  EXPECT_DOUBLE_EQ(x.norm().item<double>(), 5);
  EXPECT_DOUBLE_EQ(x.norm(1).item<double>(), 7);
  EXPECT_DOUBLE_EQ(x.norm(INFINITY).item<double>(), 4);
  EXPECT_DOUBLE_EQ(x.norm(-INFINITY).item<double>(), 0);
  EXPECT_DOUBLE_EQ(x.norm(0).item<double>(), 2);
  EXPECT_NEAR(x.norm(3).item<double>(), std::cbrt(91.0), 1e-12);
  Tensor m = tensor({{1.0, 2.0}, {3.0, 4.0}}, TensorOptions(kFloat32));
  EXPECT_NEAR(norm(m, "fro").item<float>(), std::sqrt(30.0), 1e-5);
  expect_values(norm(m, "fro", {1}), {std::sqrt(5.0), 5}, 1e-6);
  expect_values(m.norm(1, {0}, true), {4, 6}, 1e-6);
  EXPECT_EQ(m.norm(2, {0}, false, kFloat64).dtype(), kFloat64);
  // Subgradient 0 at a zero vector.
  Tensor z = zeros({3}, TensorOptions(kFloat64));
  for (double p : V{1.0, 2.0, 3.0, 0.5, kInf})
    expect_values(grad_of(z, [p](const Tensor& t) { return t.norm(p); }), {0, 0, 0});
  expect_values(grad_of(x, [](const Tensor& t) { return t.norm(); }), {0.6, -0.8, 0});
}

TEST(Reduce, LogSumExpWithInfinities) {
  auto lse = [](V v) { return tensor(v, TensorOptions(kFloat32)).logsumexp({0}).item<float>(); };
  EXPECT_EQ(lse({-kInf, -kInf}), -INFINITY);
  EXPECT_FLOAT_EQ(lse({-kInf, 0}), 0.0f);
  EXPECT_EQ(lse({kInf, 1}), INFINITY);
  EXPECT_TRUE(std::isnan(lse({NAN, 1})));
  EXPECT_FLOAT_EQ(lse({1000, 1000}), 1000 + std::log(2.0f));
  EXPECT_NEAR(lse({-1000, -1001}), -1000 + std::log1p(std::exp(-1.0)), 1e-3);
  Tensor x = tensor({-kInf, 0.0, 0.0}, TensorOptions(kFloat64));
  expect_values(grad_of(x, [](const Tensor& t) { return t.logsumexp({0}); }), {0, 0.5, 0.5});
  // Long rows go through the split (parallel) path and the vector exp.
  Tensor big = make({3, 200000}, kFloat32, -5, 5);
  expect_matches_double(big.logsumexp({1}), big.to(kFloat64).logsumexp({1}), 1e-6);
}

TEST(Reduce, SoftmaxIsStableAndNormalised) {
  Tensor big = tensor({1000.0, 1000.0, 1000.0}, TensorOptions(kFloat32));
  expect_values(big.softmax(0), {1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-6);
  expect_values(tensor({1000.0, 0.0}, TensorOptions(kFloat32)).softmax(0), {1, 0}, 1e-7);
  expect_values(tensor({1000.0, 0.0}, TensorOptions(kFloat32)).log_softmax(0), {0, -1000}, 1e-6);
  expect_values(tensor({-kInf, 0.0}, TensorOptions(kFloat32)).softmax(0), {0, 1});
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    for (int64_t dim : {1, 0}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " dim " + std::to_string(dim));
      Tensor x = make({37, 4099}, dt, -100, 100);
      Tensor y = x.softmax(dim);
      expect_values(y.to(kFloat32).sum({dim}), V(dim == 1 ? 37 : 4099, 1.0),
                    dt == kBFloat16 ? 2e-2 : 1e-5);
      const double tol = dt == kBFloat16 ? 1e-2 : dt == kFloat32 ? 2e-6 : 1e-12;
      Tensor xd = x.to(kFloat64);
      expect_matches_double(y, xd.softmax(dim), tol);
      expect_matches_double(x.log_softmax(dim), xd.log_softmax(dim), dt == kBFloat16 ? 2e-2 : tol);
    }
  }
}

TEST(Reduce, LongSumsAreAccurate) {
  const int64_t n = int64_t{1} << 24;
  Tensor ones_f = ones({n}, TensorOptions(kFloat32));
  EXPECT_EQ(ones_f.sum().item<float>(), 16777216.0f);
  EXPECT_EQ(ones_f.mean().item<float>(), 1.0f);
  Tensor u = make({n}, kFloat32, 0, 1);
  const double want = u.to(kFloat64).sum().item<double>();
  EXPECT_NEAR(u.sum().item<float>(), want, 1e-6 * want);
  EXPECT_NEAR(u.view({4096, 4096}).sum({0}).sum().item<float>(), want, 1e-5 * want);
  Tensor b = ones({n}, TensorOptions(kBFloat16));
  EXPECT_EQ(b.sum().item<float>(), 16777216.0f);
  Tensor third = full({n}, 1.0 / 3, TensorOptions(kFloat32));
  EXPECT_NEAR(third.sum().item<float>(), n / 3.0, 1e-5 * n / 3.0);
}

// Rows of every length around the kernel's blocks: a block of lanes, a register of lanes, the
// single-lane rest, and their combinations.
TEST(Reduce, RowLengthsAroundTheLaneBlocks) {
  for (int64_t n = 1; n <= 140; ++n) {
    SCOPED_TRACE("row length " + std::to_string(n));
    for (ScalarType dt : {kFloat32, kFloat64, kInt64}) {
      Tensor x = dt == kInt64 ? make({3, n}, kFloat64, -50, 50).to(kInt64) : make({3, n}, dt);
      Tensor d = x.to(kFloat64);
      expect_sum_matches(x.sum({1}), x, {1}, 1e-6);
      expect_matches_double(x.amax({1}), d.amax({1}), 0);
      expect_matches_double(x.amin({1}), d.amin({1}), 0);
    }
  }
}

// A NaN at any position of a row makes its amax/amin NaN (also where the vector kernel's last
// step overlaps the one before), the other rows keep their value; -inf and inf are values.
TEST(Reduce, ExtremesPropagateNaNFromEveryPosition) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (int64_t n : {31, 32, 33, 47, 64, 65, 100, 2049}) {
    for (ScalarType dt : {kFloat32, kBFloat16}) {
      for (int64_t j = 0; j < n; j += (n > 100 ? 97 : 1)) {
        SCOPED_TRACE("row length " + std::to_string(n) + ", NaN at " + std::to_string(j));
        Tensor x = make({3, n}, dt);
        x.index_put_({1, j}, kNaN);
        x.index_put_({2, j}, j % 2 ? kInf : -kInf);
        Tensor d = x.to(kFloat64);
        Tensor mx = x.amax({1}).to(kFloat64), mn = x.amin({1}).to(kFloat64);
        EXPECT_TRUE(std::isnan(mx[1].item<double>()));
        EXPECT_TRUE(std::isnan(mn[1].item<double>()));
        EXPECT_EQ(mx[0].item<double>(), d[0].amax().item<double>());
        EXPECT_EQ(mn[0].item<double>(), d[0].amin().item<double>());
        EXPECT_EQ(mx[2].item<double>(), j % 2 ? kInf : d[2].amax().item<double>());
        EXPECT_EQ(mn[2].item<double>(), j % 2 ? d[2].amin().item<double>() : -kInf);
      }
    }
  }
}

// softmax, log_softmax and logsumexp take the row maximum with the vector run kernel for long
// rows: a NaN anywhere in a row makes that row NaN, the other rows match float64.
TEST(Reduce, SoftmaxRowsWithNaNAtAnyPosition) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    for (int64_t j : {0, 13, 31, 32, 47, 69}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + ", NaN at " + std::to_string(j));
      Tensor x = make({3, 70}, dt);
      x.index_put_({1, j}, kNaN);
      Tensor d = x.to(kFloat64);
      for (Tensor got : {softmax(x, 1), log_softmax(x, 1), x.logsumexp({1}, true)}) {
        Tensor g = got.to(kFloat64);
        EXPECT_TRUE(g[1].isnan().all().item<bool>());
        EXPECT_FALSE(g[0].isnan().any().item<bool>());
        EXPECT_FALSE(g[2].isnan().any().item<bool>());
      }
      const double tol = dt == kFloat32 ? 1e-6 : 1e-2;
      expect_matches_double(softmax(x, 1)[0], softmax(d, 1)[0], tol);
      expect_matches_double(x.logsumexp({1}, true)[2], d.logsumexp({1}, true)[2], tol);
    }
  }
}

// Every plan of the CPU driver against the same reduction of a float64 contiguous copy.
TEST(Reduce, LayoutsMatchContiguousDouble) {
  Tensor x = make({37, 53}, kFloat32);
  Tensor xt = x.t();  // [53, 37], strides (1, 53)
  Tensor d = xt.to(kFloat64).contiguous();
  for (int64_t dim : {0, 1}) {
    expect_sum_matches(xt.sum({dim}), xt, {dim}, 1e-6);
    expect_matches_double(xt.amax({dim}), d.amax({dim}), 0);
    expect_matches_double(xt.var({dim}, true), d.var({dim}, true), 1e-5);
    expect_matches_double(xt.prod(dim), d.prod(dim), 1e-4);
    expect_matches_double(std::get<0>(xt.min(dim)), std::get<0>(d.min(dim)), 0);
    expect_matches_double(xt.cumsum(dim), d.cumsum(dim), 1e-5);
  }
  Tensor p = make({4, 5, 6}, kFloat32).permute({2, 0, 1});  // copy plan for dims {0, 2}
  Tensor pd = p.to(kFloat64).contiguous();
  expect_sum_matches(p.sum({0, 2}), p, {0, 2}, 1e-6);
  expect_matches_double(p.norm(3, {0, 2}), pd.norm(3, {0, 2}), 1e-5);
  expect_matches_double(p.logsumexp({0, 2}, true), pd.logsumexp({0, 2}, true), 1e-6);
  // Expanded (stride 0) input.
  Tensor col = make({5, 1}, kFloat32);
  expect_matches_double(col.expand({5, 7}).sum({1}), col.to(kFloat64).sum({1}) * 7, 1e-6);
  expect_matches_double(col.expand({5, 7}).sum({0}), col.to(kFloat64).sum() * ones({7}), 1e-6);
  // Outer plan split over columns (parallel), and over rows when there are few columns.
  Tensor wide = make({300, 4099}, kFloat32);
  expect_sum_matches(wide.sum({0}), wide, {0}, 1e-6);
  expect_sum_matches(wide.mean({0}), wide, {0}, 1e-6, 300);
  Tensor tall = make({200000, 3}, kFloat32);
  expect_sum_matches(tall.sum({0}), tall, {0}, 1e-6);
  expect_matches_double(tall.amin({0}), tall.to(kFloat64).amin({0}), 0);
  expect_matches_double(tall.argmax(0), tall.to(kFloat64).argmax(0), 0);
  // Inner plan split within rows (few long rows), and many short rows.
  Tensor rows = make({2, 300001}, kFloat32);
  expect_sum_matches(rows.sum({1}), rows, {1}, 1e-6);
  expect_matches_double(rows.var({1}, true), rows.to(kFloat64).var({1}, true), 1e-5);
  expect_matches_double(rows.norm(2, {1}), rows.to(kFloat64).norm(2, {1}), 1e-6);
  Tensor many = make({100000, 7}, kFloat32);
  expect_sum_matches(many.sum({1}), many, {1}, 1e-6);
  expect_matches_double(many.amax({1}), many.to(kFloat64).amax({1}), 0);
  // Middle dims: [B, N, M] reduced over N.
  Tensor mid = make({3, 50, 70}, kBFloat16);
  expect_sum_matches(mid.sum({1}), mid, {1}, 1e-2);
  expect_matches_double(mid.softmax(1), mid.to(kFloat64).softmax(1), 1e-2);
}

// float16 goes through the same kernels as bfloat16 (computed in float).
TEST(Reduce, Float16) {
  Tensor h = make({6, 300}, kFloat16, -2, 2);
  Tensor d = h.to(kFloat64);
  expect_sum_matches(h.sum({1}), h, {1}, 2e-3);
  expect_matches_double(h.mean({0}), d.mean({0}), 2e-3);
  expect_matches_double(h.amax({1}), d.amax({1}), 0);
  expect_matches_double(h.var({1}, true), d.var({1}, true), 2e-3);
  expect_matches_double(h.softmax(1), d.softmax(1), 2e-3);
  expect_matches_double(h.log_softmax(0), d.log_softmax(0), 2e-3);
  expect_matches_double(h.logsumexp({1}), d.logsumexp({1}), 2e-3);
  expect_matches_double(h.cumsum(1), d.cumsum(1), 2e-3);
  EXPECT_EQ(h.argmax().item<int64_t>(), d.argmax().item<int64_t>());
}

TEST(Reduce, ScansAlongEachDim) {
  Tensor m = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, TensorOptions(kFloat32));
  expect_values(m.cumsum(1), {1, 3, 6, 4, 9, 15});
  expect_values(m.cumsum(0), {1, 2, 3, 5, 7, 9});
  expect_values(m.cumprod(1), {1, 2, 6, 4, 20, 120});
  expect_values(m.t().cumprod(1), {1, 4, 2, 10, 3, 18});
  expect_values(tensor({1, 2, 3}, TensorOptions(kInt32)).cumsum(0), {1, 3, 6});
  expect_values(grad_of(m.to(kFloat64), [](const Tensor& t) { return t.cumsum(1); }),
                {3, 2, 1, 3, 2, 1});
}

TEST(Reduce, ProductGradientsWithZeros) {
  auto g = [](V v) {
    return grad_of(tensor(v, TensorOptions(kFloat64)), [](const Tensor& t) { return t.prod(); });
  };
  expect_values(g({2, 4}), {4, 2});
  expect_values(g({2, 0, 3}), {0, 6, 0});
  expect_values(g({0, 0, 3}), {0, 0, 0});
  expect_values(grad_of(tensor({2.0, 0.0, 3.0, 0.0, 5.0}, TensorOptions(kFloat64)),
                        [](const Tensor& t) { return t.cumprod(0); }),
                {1, 8, 0, 0, 0});
}

TEST(Reduce, KeepdimShapes) {
  Tensor x = make({2, 3, 4}, kFloat32);
  EXPECT_EQ(x.sum({1}, true).sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(x.amax({0, 2}, true).sizes().vec(), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(x.mean({-1}).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.all(1, true).sizes().vec(), (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(x.count_nonzero({0, 1}).sizes().vec(), std::vector<int64_t>{4});
  EXPECT_EQ(std::get<1>(x.max(2, true)).sizes().vec(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(x.sum().dim(), 0);
}

TEST(Reduce, SymbolicShapesStaySymbolic) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8, "s0");
  Tensor x = empty_meta({s0, 4});
  EXPECT_EQ(x.sum({1}).sym_size(0).str(), "s0");
  EXPECT_EQ(x.amax({1}, true).sym_size(1).str(), "1");
  EXPECT_EQ(x.var({0}, true, true).sym_size(0).str(), "1");
  EXPECT_EQ(x.softmax(0).sym_size(0).str(), "s0");
  EXPECT_EQ(x.cumsum(0).sym_size(0).str(), "s0");
  EXPECT_EQ(x.argmax(1).sym_size(0).str(), "s0");
  EXPECT_EQ(std::get<1>(x.max(1)).sym_size(0).str(), "s0");
  EXPECT_TRUE(env.guards().empty());
}

}  // namespace
}  // namespace kiln

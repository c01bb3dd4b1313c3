// The CPU's vectorised float math (kiln/backend/cpu/vec_math.h) through the ops that use it:
// float32 results against double-precision std:: math, in units in the last place of the
// float result, over dense grids and the special values; and agreement between the vector body,
// the tail of a run, non-contiguous runs and bfloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> floats(const Tensor& t) {
  Tensor c = t.to(kFloat32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}
Tensor make(const std::vector<float>& v) {
  return from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, kFloat32)
      .clone();
}
std::vector<float> grid(double lo, double hi, int n) {
  std::vector<float> v;
  for (int i = 0; i <= n; ++i) v.push_back(static_cast<float>(lo + (hi - lo) * i / n));
  return v;
}

// The error of `got` against the exact `want`, in float ulps at `want` (at least the smallest
// normal's ulp, so that results underflowing to subnormals count by absolute error).
double ulps(float got, double want) {
  const double scale = std::max(std::abs(want), static_cast<double>(FLT_MIN));
  int e;
  std::frexp(scale, &e);
  return std::abs(got - want) / std::ldexp(1.0, e - 24);
}

// Largest error of op over xs, in ulps; NaN results must match NaN expectations exactly.
double max_ulps(const std::function<Tensor(const Tensor&)>& op,
                const std::function<double(double)>& exact, const std::vector<float>& xs) {
  const std::vector<float> got = floats(op(make(xs)));
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = exact(xs[i]);
    if (std::isnan(want) || std::isinf(want)) {
      EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i]) : got[i] == want)
          << "x = " << xs[i] << ": got " << got[i] << ", want " << want;
      continue;
    }
    worst = std::max(worst, ulps(got[i], want));
  }
  return worst;
}

Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  return call_op1(get_op("gelu_backward"), {grad, x}, {approximate});
}

double gelu_exact(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// 0.5 x (1 + tanh(y)) as x sigmoid(2y), which has no cancellation in double either.
double gelu_tanh_exact(double x) {
  return x / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(VecMath, ExpWithinTwoUlps) {
  EXPECT_LE(max_ulps([](const Tensor& t) { return t.exp(); }, [](double x) { return std::exp(x); },
                     grid(-87, 88.7, 200000)),
            2.0);
  EXPECT_EQ(floats(make({-kInf, kInf, -200.f, 100.f, 0.f}).exp()),
            (std::vector<float>{0.f, kInf, 0.f, kInf, 1.f}));
  EXPECT_TRUE(std::isnan(floats(make({kNaN}).exp())[0]));
}

// The vector form is the instruction, correctly rounded as std::sqrt is: equal bit for bit,
// subnormals, -0, infinity and NaN (from negative numbers) included.
TEST(VecMath, SqrtIsStdSqrt) {
  std::vector<float> xs = grid(0, 1000, 100001);
  for (int e = -149; e <= 127; ++e)
    for (float m : {1.0f, 1.2345f, 1.5f, 1.99f}) xs.push_back(std::ldexp(m, e));
  for (float x : {-0.f, kInf, -1.f, -kInf, kNaN}) xs.push_back(x);
  const std::vector<float> got = floats(make(xs).sqrt());
  int64_t differ = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = std::sqrt(xs[i]);
    differ +=
        std::isnan(want) ? !std::isnan(got[i]) : std::memcmp(&got[i], &want, sizeof(float)) != 0;
  }
  EXPECT_EQ(differ, 0);
}

TEST(VecMath, LogWithinThreeUlps) {
  std::vector<float> xs = grid(0.01, 4, 100000);
  for (int e = -149; e <= 127; ++e)
    for (float m : {1.0f, 1.2345f, 1.5f, 1.99f}) xs.push_back(std::ldexp(m, e));
  for (float x : grid(0.999, 1.001, 2000)) xs.push_back(x);
  EXPECT_LE(
      max_ulps([](const Tensor& t) { return t.log(); }, [](double x) { return std::log(x); }, xs),
      3.0);
  const std::vector<float> special = floats(make({0.f, -0.f, kInf, -1.f, kNaN}).log());
  EXPECT_EQ(special[0], -kInf);
  EXPECT_EQ(special[1], -kInf);
  EXPECT_EQ(special[2], kInf);
  EXPECT_TRUE(std::isnan(special[3]) && std::isnan(special[4]));
}

TEST(VecMath, TanhSigmoidSiluExpm1) {
  std::vector<float> xs = grid(-12, 12, 100000);
  for (float x : {1e-3f, -1e-5f, 1e-20f, 3e-39f}) xs.push_back(x);
  EXPECT_LE(
      max_ulps([](const Tensor& t) { return t.tanh(); }, [](double x) { return std::tanh(x); }, xs),
      3.0);
  EXPECT_LE(max_ulps([](const Tensor& t) { return t.sigmoid(); },
                     [](double x) { return 1 / (1 + std::exp(-x)); }, grid(-80, 20, 100000)),
            3.0);
  EXPECT_LE(max_ulps([](const Tensor& t) { return silu(t); },
                     [](double x) { return x / (1 + std::exp(-x)); }, grid(-80, 20, 100000)),
            4.0);
  EXPECT_LE(max_ulps([](const Tensor& t) { return t.expm1(); },
                     [](double x) { return std::expm1(x); }, xs),
            3.0);
  EXPECT_EQ(floats(make({kInf, -kInf, -0.f}).tanh()), (std::vector<float>{1.f, -1.f, -0.f}));
  EXPECT_TRUE(std::signbit(floats(make({-0.f}).tanh())[0]));
  EXPECT_EQ(floats(make({kInf, -kInf}).sigmoid()), (std::vector<float>{1.f, 0.f}));
  EXPECT_TRUE(std::isnan(floats(make({kNaN}).tanh())[0]));
}

TEST(VecMath, ErfAndGelu) {
  std::vector<float> xs = grid(-7, 7, 200000);
  for (float x : {1e-4f, -1e-7f, 1e-30f}) xs.push_back(x);
  EXPECT_LE(
      max_ulps([](const Tensor& t) { return t.erf(); }, [](double x) { return std::erf(x); }, xs),
      3.0);
  EXPECT_EQ(floats(make({kInf, -kInf, 0.f}).erf()), (std::vector<float>{1.f, -1.f, 0.f}));
  EXPECT_TRUE(std::isnan(floats(make({kNaN}).erf())[0]));
  // gelu's negative tail comes from erfc and exp(-x^2 / 2) of x itself, so it keeps its relative
  // accuracy down to x = -13, where the result is 1e-37 (6 ulps at worst; 6.3 in a portable build
  // without FMA, whose exp(-x^2 / 2) takes the longer polynomial).
  EXPECT_LE(max_ulps([](const Tensor& t) { return gelu(t); }, gelu_exact, grid(-12.9, 8, 300000)),
            7.0);
  // tanh's: x sigmoid(2y) inherits the rounding of y, magnified |2y| times by exp (49 ulps at
  // x = -6, where the result is -1e-8).
  EXPECT_LE(max_ulps([](const Tensor& t) { return gelu(t, "tanh"); }, gelu_tanh_exact,
                     grid(-3, 8, 200000)),
            16.0);
  EXPECT_LE(max_ulps([](const Tensor& t) { return gelu(t, "tanh"); }, gelu_tanh_exact,
                     grid(-6, 8, 200000)),
            64.0);
}

TEST(VecMath, GeluBackwardMatchesDerivative) {
  const std::vector<float> xs = grid(-6, 6, 50000);
  const Tensor x = make(xs), g = full({static_cast<int64_t>(xs.size())}, 1.5, kFloat32);
  for (const std::string mode : {"none", "tanh"}) {
    const std::vector<float> got = floats(gelu_backward(g, x, mode));
    const double h = 1e-5;
    for (size_t i = 0; i < xs.size(); ++i) {
      auto f = mode == "none" ? gelu_exact : gelu_tanh_exact;
      const double want = 1.5 * (f(xs[i] + h) - f(xs[i] - h)) / (2 * h);
      ASSERT_NEAR(got[i], want, 2e-6 * (1 + std::abs(want))) << mode << " x = " << xs[i];
    }
  }
}

// Every element sees the same arithmetic whether it falls in a full vector, in the tail of a
// run or in a strided run, and bfloat16 is the float result rounded.
TEST(VecMath, TailsStridesAndBFloat16AgreeWithTheVectorBody) {
  const std::vector<float> xs = grid(-5, 5, 36);  // 37 values: vectors plus a tail
  const Tensor x = make(xs);
  const std::vector<float> whole = floats(gelu(x));
  for (int64_t n = 1; n <= 17; ++n) {
    const std::vector<float> part = floats(gelu(x.narrow(0, 3, n)));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(part[i], whole[i + 3]) << "n = " << n;
  }
  const std::vector<float> strided = floats(gelu(x.slice(0, 1, 37, 3)));
  for (size_t i = 0; i < strided.size(); ++i) ASSERT_EQ(strided[i], whole[1 + 3 * i]);
  const Tensor m = x.narrow(0, 0, 36).view({6, 6}).t();  // non-contiguous, coalesces to rows
  EXPECT_TRUE(gelu(m).equal(gelu(m.contiguous())));
  const Tensor xb = x.to(kBFloat16);
  EXPECT_TRUE(gelu(xb).equal(gelu(xb.to(kFloat32)).to(kBFloat16)));
  EXPECT_TRUE(xb.exp().equal(xb.to(kFloat32).exp().to(kBFloat16)));
}

}  // namespace
// bfloat16 +, -, *, / run in the vector loop (16 elements widened and narrowed as a pair): every
// result is the float result rounded, dense, in the tail, strided and broadcast, NaN included.
TEST(VecMath, BFloat16ArithmeticIsTheRoundedFloatResult) {
  std::vector<float> av = grid(-7, 9, 40), bv = grid(3, -5, 40);
  av[3] = kNaN, bv[17] = kInf, av[18] = -kInf, bv[20] = 0.f, av[21] = 3e38f, bv[21] = 7.f;
  const Tensor a = make(av).to(kBFloat16), b = make(bv).to(kBFloat16);
  using Op = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<const char*, Op>> ops = {
      {"add", [](const Tensor& x, const Tensor& y) { return x + y; }},
      {"sub", [](const Tensor& x, const Tensor& y) { return x - y; }},
      {"mul", [](const Tensor& x, const Tensor& y) { return x * y; }},
      {"div", [](const Tensor& x, const Tensor& y) { return x / y; }},
  };
  auto same = [](const Tensor& got, const Tensor& want) {
    const std::vector<float> g = floats(got), w = floats(want);
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(w[i])) {
        EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
      } else {
        EXPECT_EQ(g[i], w[i]) << "at " << i;
      }
    }
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    const Tensor af = a.to(kFloat32), bf = b.to(kFloat32);
    same(op(a, b), op(af, bf).to(kBFloat16));
    same(op(a.slice(0, 1, 40, 2), b.slice(0, 0, 39, 2)),
         op(af.slice(0, 1, 40, 2), bf.slice(0, 0, 39, 2)).to(kBFloat16));
    same(op(a, b.slice(0, 5, 6)), op(af, bf.slice(0, 5, 6)).to(kBFloat16));
  }
}

}  // namespace kiln

// Pointwise semantics beyond the op table: rounding and remainder conventions, type promotion,
// comparisons with numbers, in-place rules and autograd's version check, error messages.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(kFloat64).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

// Runs f, which must throw a kiln::Error whose message contains every one of `parts`.
template <class F>
void expect_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

TEST(Pointwise, DivRoundingModesOnNegativeNumbers) {
  Tensor a = tensor({-7.0, 7.0, -7.0, 7.0, -6.0}, kFloat64);
  Tensor b = tensor({2.0, -2.0, -2.0, 2.0, 4.0}, kFloat64);
  EXPECT_EQ(values(a / b), (std::vector<double>{-3.5, -3.5, 3.5, 3.5, -1.5}));
  EXPECT_EQ(values(div(a, b, std::string("trunc"))), (std::vector<double>{-3, -3, 3, 3, -1}));
  EXPECT_EQ(values(div(a, b, std::string("floor"))), (std::vector<double>{-4, -4, 3, 3, -2}));

  Tensor ai = tensor({-7, 7, -7, 7, -6}, kInt64), bi = tensor({2, -2, -2, 2, 4}, kInt64);
  EXPECT_EQ((ai / bi).dtype(), kFloat32);  // true division promotes integers
  EXPECT_EQ(values(ai / bi), (std::vector<double>{-3.5, -3.5, 3.5, 3.5, -1.5}));
  Tensor trunc = ai.div(bi, "trunc"), floor = ai.div(bi, "floor");
  EXPECT_EQ(trunc.dtype(), kInt64);
  EXPECT_EQ(values(trunc), (std::vector<double>{-3, -3, 3, 3, -1}));
  EXPECT_EQ(values(floor), (std::vector<double>{-4, -4, 3, 3, -2}));
  EXPECT_EQ(values(floor_divide(ai, 3)), (std::vector<double>{-3, 2, -3, 2, -2}));

  expect_error(
      [&] {
        div(ai, tensor({1, 0, 1, 1, 1}, kInt64), std::string("floor"));
      },
      {"div", "ZeroDivisionError"});
  expect_error([&] { div(a, b, std::string("round")); }, {"rounding_mode", "'round'"});
}

TEST(Pointwise, RemainderTakesTheDivisorsSignAndFmodTheDividends) {
  Tensor a = tensor({-7, 7, -7, 7}, kInt32), b = tensor({3, -3, -3, 3}, kInt32);
  EXPECT_EQ(values(remainder(a, b)), (std::vector<double>{2, -2, -1, 1}));
  EXPECT_EQ(values(fmod(a, b)), (std::vector<double>{-1, 1, -1, 1}));
  Tensor x = tensor({-7.5, 7.5, -7.5}, kFloat64);
  EXPECT_EQ(values(remainder(x, 2)), (std::vector<double>{0.5, 1.5, 0.5}));
  EXPECT_EQ(values(fmod(x, 2)), (std::vector<double>{-1.5, 1.5, -1.5}));
  EXPECT_EQ(values(remainder(x, -2)), (std::vector<double>{-1.5, -0.5, -1.5}));
  expect_error([&] { fmod(a, 0); }, {"fmod", "ZeroDivisionError"});
}

TEST(Pointwise, RoundsHalfToEven) {
  Tensor x = tensor({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5}, kFloat32);
  EXPECT_EQ(values(x.round()), (std::vector<double>{-2, -2, 0, 0, 2, 2, 4}));
  EXPECT_TRUE(std::signbit(values(x.round())[2]));  // -0.5 rounds to -0
  EXPECT_NEAR(values(round(tensor({1.2345}, kFloat64), 2))[0], 1.23, 1e-12);
  EXPECT_EQ(values(round(tensor({1250.0, 1350.0}, kFloat64), -2)),
            (std::vector<double>{1200, 1400}));
  EXPECT_EQ(values(tensor({3, -4}, kInt64).round()), (std::vector<double>{3, -4}));
}

TEST(Pointwise, TypePromotionFollowsPyTorch) {
  Tensor i32 = tensor({1, 2, 3}, kInt32);
  EXPECT_EQ((i32 + 2.5).dtype(), kFloat32);
  EXPECT_EQ(values(i32 + 2.5), (std::vector<double>{3.5, 4.5, 5.5}));
  EXPECT_EQ((i32 + 2).dtype(), kInt32);
  EXPECT_EQ((i32 + tensor(int64_t{5})).dtype(), kInt32);       // a 0-dim tensor of the same kind
  EXPECT_EQ((i32 + tensor(1.5, kFloat64)).dtype(), kFloat64);  // ... of a higher kind
  EXPECT_EQ((tensor({1.0f}, kFloat32) + tensor(1.5, kFloat64)).dtype(), kFloat32);

  Tensor t = tensor({true, false, true}), f = tensor({true, false, false});
  Tensor s = t + f;
  EXPECT_EQ(s.dtype(), kBool);
  EXPECT_EQ(values(s), (std::vector<double>{1, 0, 1}));
  expect_error([&] { t - f; }, {"sub", "bool"});

  EXPECT_EQ((ones({2}, kFloat16) + ones({2}, kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kUInt8) + ones({2}, kInt8)).dtype(), kInt16);
  EXPECT_EQ((ones({2}, kInt64) * ones({2}, kFloat16)).dtype(), kFloat16);
  EXPECT_EQ(i32.exp().dtype(), kFloat32);  // float-valued ops promote integers
  EXPECT_EQ(i32.sqrt().dtype(), kFloat32);
  EXPECT_EQ(pow(i32, 2).dtype(), kInt32);
  EXPECT_EQ(values(pow(i32, 2)), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(pow(i32, 0.5).dtype(), kFloat32);
  EXPECT_EQ(values(pow(2, i32)), (std::vector<double>{2, 4, 8}));
  expect_error([&] { pow(i32, -1); }, {"pow", "negative integer powers"});
}

TEST(Pointwise, ComparesWithNumbers) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat32);
  Tensor gt = x > 2;
  EXPECT_EQ(gt.dtype(), kBool);
  EXPECT_EQ(values(gt), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(values(2 < x), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(values(x == 2), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(x.le(2)), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(values(tensor({1, 2}, kInt64) > 1.5), (std::vector<double>{0, 1}));  // in float
  EXPECT_EQ(values(x != x), (std::vector<double>{0, 0, 0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor n = tensor(std::vector<double>{nan, 1.0}, kFloat64);
  EXPECT_EQ(values(n == n), (std::vector<double>{0, 1}));
  EXPECT_EQ(values(n.isnan()), (std::vector<double>{1, 0}));
}

TEST(Pointwise, InPlaceResultMustCastToSelf) {
  Tensor i = tensor({1, 2}, kInt64);
  expect_error(
      [&] {
        i.add_(tensor({0.5f, 1.5f}, kFloat32));
      },
      {"add_", "can't be cast", "float32", "int64"});
  expect_error([&] { i.exp_(); }, {"exp_"});
  expect_error([&] { tensor({true}).add_(1); }, {"add_"});
  expect_error([&] { ones({3}).add_(ones({2, 3})); }, {"add_", "[3]", "[2, 3]"});

  Tensor f = tensor({1.0f, 2.0f}, kFloat32);  // a float64 operand may be written to float32
  f.add_(tensor({0.25, 0.5}, kFloat64));
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(values(f), (std::vector<double>{1.25, 2.5}));
  Tensor c = tensor({1.0, 5.0}, kFloat64);
  c.lt_(2);  // the bool result is cast to self's dtype
  EXPECT_EQ(values(c), (std::vector<double>{1, 0}));
  Tensor m = tensor({1, 2, 3}, kInt32);
  m.mul_(tensor(int64_t{3}));
  EXPECT_EQ(m.dtype(), kInt32);
  EXPECT_EQ(values(m), (std::vector<double>{3, 6, 9}));
}

TEST(Pointwise, InPlaceBumpsTheVersionAndReturnsSelf) {
  Tensor x = tensor({1.0, 4.0}, kFloat64);
  const int64_t v = x._version();
  Tensor& r = x.sqrt_();
  EXPECT_EQ(&r, &x);
  EXPECT_GT(x._version(), v);
  EXPECT_EQ(values(x), (std::vector<double>{1, 2}));
  x.clamp_(1.5, std::nullopt).mul_(2).masked_fill_(tensor({true, false}), -1);
  EXPECT_EQ(values(x), (std::vector<double>{-1, 4}));
  relu_(x);
  EXPECT_EQ(values(x), (std::vector<double>{0, 4}));
}

TEST(Pointwise, InPlaceReadsOverlappingInputsBeforeWriting) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}, kFloat64);
  x.narrow(0, 1, 3).add_(x.narrow(0, 0, 3));
  EXPECT_EQ(values(x), (std::vector<double>{1, 3, 5, 7}));
  expect_error([&] { zeros({1}).expand({3}).add_(1); }, {"single memory location"});
}

// A scalar operand is broadcast along the whole tensor: every dim merges into one run with a
// stride-0 input, which the loops read from a filled buffer, in pieces over the threads. Sizes
// over several parallel grains (32768) with a tail; values exact in every dtype.
TEST(Pointwise, ScalarOperandsOverLongRuns) {
  const int64_t n = 3 * 32768 + 37;
  std::vector<double> base(n);
  for (int64_t i = 0; i < n; ++i) base[i] = static_cast<double>(i % 64 - 32);
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64, kInt32}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Tensor x = tensor(base, kFloat64).to(dt);
    auto expect = [&](const Tensor& got, auto f) {
      const std::vector<double> v = values(got);
      ASSERT_EQ(static_cast<int64_t>(v.size()), n);
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += v[i] != f(base[i]);
      EXPECT_EQ(wrong, 0);
    };
    expect(x * 2, [](double a) { return a * 2; });
    expect(3 - x, [](double a) { return 3 - a; });
    expect(x + tensor(4.0, dt), [](double a) { return a + 4; });
    expect(addcmul(x, tensor(2.0, dt), x), [](double a) { return a + 2 * a; });
    expect(where(x > 0, x, tensor(-1.0, dt)), [](double a) { return a > 0 ? a : -1; });
    expect(x > 0, [](double a) { return a > 0 ? 1.0 : 0.0; });
    EXPECT_EQ(values(x.pow(2)), values(x * x));  // x * x, rounded to dt as a product is
    expect(x.clamp(-3, 5), [](double a) { return std::min(std::max(a, -3.0), 5.0); });
    Tensor y = x.clone();
    y.mul_(-2);
    expect(y, [](double a) { return a * -2; });
  }
}

// Broadcast operands first or second, along the inner dim or an outer one, with runs that end in
// a partial vector: small integers, so every dtype's result is exact.
TEST(Pointwise, BroadcastOperandsInEitherPositionAreExact) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{40}, {}}, {{5, 37}, {5, 1}}, {{5, 37}, {1, 37}}, {{37, 5}, {37, 1}}, {{2, 3, 40}, {3, 1}}};
  for (const auto& [big, small] : shapes) {
    for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(big.size()));
      const Tensor a = randint(-4, 5, big).to(dt), b = randint(-4, 5, small).to(dt);
      for (bool swap : {false, true}) {
        const Tensor x = swap ? b : a, y = swap ? a : b;
        const Tensor xd = x.to(kFloat64), yd = y.to(kFloat64);
        auto error = [&](const Tensor& got, const Tensor& want) {
          return (got.to(kFloat64) - want).abs().max().item<double>();
        };
        EXPECT_EQ(error(x + y, xd + yd), 0);
        EXPECT_EQ(error(x - y, xd - yd), 0);
        EXPECT_EQ(error(x * y, xd * yd), 0);
        EXPECT_EQ(error(x / 2, xd / 2), 0);
        EXPECT_EQ(error(2 / (x.abs() + 1), (2 / (xd.abs() + 1)).to(dt).to(kFloat64)), 0);
      }
    }
  }
}

TEST(Pointwise, BroadcastErrorNamesBothShapes) {
  expect_error([] { ones({2, 3}) + ones({4}); }, {"add", "[2, 3]", "[4]", "broadcast"});
  expect_error([] { where(ones({2}) > 0, ones({3}), ones({2})); }, {"where", "[3]"});
}

TEST(Pointwise, GeluExactAndTanh) {
  Tensor x = tensor({1.0, -0.5, 2.0}, kFloat64);
  auto exact = values(gelu(x)), approx = values(gelu(x, "tanh"));
  const std::vector<double> want_exact = {0.8413447460685429, -0.15426876936299344,
                                          1.9544997361036416};
  const std::vector<double> want_tanh = {0.8411919906082768, -0.15428599017485606,
                                         1.954597694087775};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(exact[i], want_exact[i], 1e-12);
    EXPECT_NEAR(approx[i], want_tanh[i], 1e-12);
  }
  expect_error([&] { gelu(x, "fast"); }, {"gelu", "none or tanh"});
}

TEST(Pointwise, ActivationValues) {
  Tensor x = tensor({-8.0, -1.0, 0.5, 7.0}, kFloat64);
  EXPECT_EQ(values(relu6(x)), (std::vector<double>{0, 0, 0.5, 6}));
  EXPECT_EQ(values(leaky_relu(x, 0.1)), (std::vector<double>{-0.8, -0.1, 0.5, 7}));
  EXPECT_EQ(values(hardtanh(x, -2, 2)), (std::vector<double>{-2, -1, 0.5, 2}));
  EXPECT_EQ(values(hardsigmoid(x)), (std::vector<double>{0, 1.0 / 3, 7.0 / 12, 1}));
  EXPECT_NEAR(values(elu(x))[1], std::expm1(-1.0), 1e-15);
  EXPECT_NEAR(values(selu(x))[3], 1.0507009873554805 * 7, 1e-12);
  EXPECT_NEAR(values(softplus(x, 2, 10))[2], std::log1p(std::exp(1.0)) / 2, 1e-15);
  EXPECT_EQ(values(softplus(x, 1, 5))[3], 7.0);  // above the threshold: x itself
  EXPECT_NEAR(values(silu(x))[2], 0.5 / (1 + std::exp(-0.5)), 1e-15);
  EXPECT_NEAR(values(erfinv(erf(x / 4)))[1], -0.25, 1e-14);
}

TEST(Pointwise, NanToNumDefaultsAreTheDtypesExtremes) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor(std::vector<double>{std::nan(""), inf, -inf, 1.5}, kFloat64);
  EXPECT_EQ(values(x.to(kFloat32).nan_to_num()), (std::vector<double>{0, FLT_MAX, -FLT_MAX, 1.5}));
  EXPECT_EQ(values(x.to(kFloat16).nan_to_num()), (std::vector<double>{0, 65504, -65504, 1.5}));
  EXPECT_EQ(values(x.nan_to_num(2.0, 10.0)), (std::vector<double>{2, 10, -DBL_MAX, 1.5}));
}

TEST(Pointwise, ClampWithNumberAndTensorBounds) {
  Tensor x = tensor({-3.0, 0.5, 4.0}, kFloat32);
  EXPECT_EQ(values(x.clamp(-1, 1)), (std::vector<double>{-1, 0.5, 1}));
  EXPECT_EQ(values(x.clamp_min(0)), (std::vector<double>{0, 0.5, 4}));
  EXPECT_EQ(values(x.clamp_max(0)), (std::vector<double>{-3, 0, 0}));
  Tensor lo = tensor({-4.0f, 1.0f, 0.0f}), hi = tensor({-3.5f, 2.0f, 3.0f});
  EXPECT_EQ(values(clamp(x, lo, hi)), (std::vector<double>{-3.5, 1, 3}));
  Tensor i = tensor({1, 5}, kInt32);
  EXPECT_EQ(i.clamp(0, 3).dtype(), kInt32);
  EXPECT_EQ(i.clamp(1.5, std::nullopt).dtype(), kFloat32);
  expect_error([&] { x.clamp(std::optional<Scalar>(), std::optional<Scalar>()); },
               {"clamp", "At least one of 'min' or 'max'"});
}

TEST(Pointwise, WhereAndMaskedFill) {
  Tensor c = tensor({true, false, true});
  Tensor a = tensor({1.0, 2.0, 3.0}, kFloat64);
  EXPECT_EQ(values(where(c, a, 0)), (std::vector<double>{1, 0, 3}));
  EXPECT_EQ(values(where(c, -1, a)), (std::vector<double>{-1, 2, -1}));
  EXPECT_EQ(values(a.masked_fill(c, 9)), (std::vector<double>{9, 2, 9}));
  EXPECT_EQ(values(a.masked_fill(c, tensor(7.0, kFloat64))), (std::vector<double>{7, 2, 7}));
  expect_error([&] { a.masked_fill(c, ones({3})); }, {"0-dimensional value"});
  expect_error([&] { a.masked_fill(a, 1); }, {"boolean masks"});
  expect_error([&] { where(a, a, a); }, {"condition to be a boolean tensor"});
}

TEST(Pointwise, LogicalAndBitwise) {
  Tensor a = tensor({0.0, 2.0, -1.0}, kFloat64), b = tensor({1.0, 0.0, 3.0}, kFloat64);
  EXPECT_EQ(values(logical_and(a, b)), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(values(logical_xor(a, b)), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(values(a.logical_not()), (std::vector<double>{1, 0, 0}));
  Tensor i = tensor({12, 10}, kInt32);
  EXPECT_EQ(values(i & 6), (std::vector<double>{4, 2}));
  EXPECT_EQ(values(i | 1), (std::vector<double>{13, 11}));
  EXPECT_EQ(values(~i), (std::vector<double>{-13, -11}));
  EXPECT_EQ(values(~tensor({true, false})), (std::vector<double>{0, 1}));
  expect_error([&] { a& b; }, {"bitwise_and"});
}

TEST(Pointwise, InPlaceModificationOfASavedTensorIsAnError) {
  Tensor x = tensor({0.5, 1.0, 1.5}, kFloat64).requires_grad_();
  Tensor a = x.exp();
  Tensor b = a.sin();
  a.mul_(2);
  expect_error([&] { b.sum().backward(); }, {"modified by an inplace operation"});
}

TEST(Pointwise, InPlaceOpsAreDifferentiable) {
  Tensor x = tensor({0.5, 1.0, 1.5}, kFloat64).requires_grad_();
  Tensor y = x * 1;
  y.mul_(3).exp_();  // y = exp(3x)
  y.sum().backward();
  const auto g = values(x.grad());
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(g[i], 3 * std::exp(3 * values(x)[i]), 1e-9);
  expect_error([&] { x.add_(1); }, {"leaf Variable"});
}

}  // namespace
}  // namespace kiln

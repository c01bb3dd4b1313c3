// Integers keep PyTorch's semantics: exact int64 lists, checked narrowing conversions, and no
// negative integer powers of a scalar exponent.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>

#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

TEST(IntegerSemantics, IntegerListsAreExact) {
  EXPECT_EQ(tensor({INT64_MAX}).item<int64_t>(), INT64_MAX);
  EXPECT_EQ(tensor({INT64_MIN, int64_t{0}}).select(0, 0).item<int64_t>(), INT64_MIN);
  const int64_t odd = (int64_t{1} << 53) + 1;  // not a double
  EXPECT_EQ(tensor(std::vector<int64_t>{odd}).item<int64_t>(), odd);
  EXPECT_EQ(tensor({odd}, kInt32).dtype(), kInt32);
  EXPECT_EQ(tensor({odd}, kFloat64).item<double>(), static_cast<double>(odd));
}

TEST(IntegerSemantics, ItemChecksTheRangeOfTheRequestedType) {
  EXPECT_EQ(tensor({255}).item<uint8_t>(), 255);
  EXPECT_EQ(tensor({-128}).item<int8_t>(), -128);
  std::string m = testing::error_message([] { tensor({300}).item<uint8_t>(); });
  EXPECT_EQ(m.rfind("item: value 300 cannot be converted to type uint8", 0), 0u) << m;
  EXPECT_THROW(tensor({-129}).item<int8_t>(), OverflowError);
  EXPECT_THROW(tensor({int64_t{1} << 31}).item<int32_t>(), OverflowError);
  EXPECT_THROW(tensor({NAN}).item<int64_t>(), OverflowError);
  EXPECT_THROW(tensor({1e19}).item<int64_t>(), OverflowError);
  EXPECT_THROW(tensor({1e300}, kFloat64).item<float>(), OverflowError);
  EXPECT_EQ(tensor({-2.5}).item<int32_t>(), -2);  // truncation, as a C++ cast
  EXPECT_TRUE(std::isinf(tensor({INFINITY}).item<float>()));
  // As in c10, an integer may wrap into an unsigned type from as low as -max.
  EXPECT_EQ(Scalar(-1).to<uint8_t>(), 255);
  EXPECT_THROW(Scalar(-256).to<uint8_t>(), OverflowError);
}

TEST(IntegerSemantics, FillValuesMustFitTheDtype) {
  std::string m = testing::error_message([] { full({2}, 300, kUInt8); });
  EXPECT_EQ(m.rfind("full: value 300 cannot be converted to type uint8", 0), 0u) << m;
  EXPECT_THROW(zeros({2}, kInt8).fill_(128), OverflowError);
  EXPECT_THROW(full({1}, 1e300, kFloat32), OverflowError);
  EXPECT_THROW(full({1}, 70000.0, kFloat16), OverflowError);
  EXPECT_EQ(full({1}, -INFINITY, kFloat16).item<float>(), -INFINITY);
}

TEST(IntegerSemantics, NegativeScalarPowersOfIntegersThrow) {
  const std::string want = "pow: Integers to negative integer powers are not allowed.";
  EXPECT_EQ(testing::error_message([] { tensor({2, 3}).pow(-1); }), want);
  EXPECT_EQ(testing::error_message([] { tensor({0}).pow(-1); }), want);
  EXPECT_EQ(testing::error_message([] { pow(tensor({0, 1}), -2); }), want);
  EXPECT_NE(testing::error_message([] { tensor({2}).pow_(-1); }).find(want.substr(5)),
            std::string::npos);
  EXPECT_EQ(testing::error_message([] { tensor({2}, kUInt8).pow(-1); }), want);
  // Floating bases and non-negative exponents are fine.
  EXPECT_EQ(tensor({2.0}).pow(-1).item<double>(), 0.5);
  EXPECT_EQ(tensor({3}).pow(2).item<int64_t>(), 9);
  // A tensor exponent is evaluated per element, as PyTorch's kernel does (2^-1 -> 0).
  Tensor r = pow(tensor({2, 0, 1, -1}), tensor({-1, -1, -2, -3}));
  EXPECT_EQ(r.select(0, 0).item<int64_t>(), 0);
  EXPECT_EQ(r.select(0, 2).item<int64_t>(), 1);
  EXPECT_EQ(r.select(0, 3).item<int64_t>(), -1);
}

}  // namespace
}  // namespace kiln

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.h"
#include "kiln/ops/meta.h"

namespace kiln {
namespace {

TEST(DType, PromotionTableMatchesPyTorch) {
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kBool, kInt32), kInt32);
  EXPECT_EQ(promote_types(kInt64, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kBFloat16, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kFloat32, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kInt32, kInt64), kInt64);
}

TEST(DType, ResultTypeTreatsScalarsAndZeroDimByCategory) {
  Tensor i32 = zeros({3}, kInt32);
  Tensor f16 = zeros({3}, kFloat16);
  EXPECT_EQ(meta::result_type({i32, wrapped_scalar(2.5)}), kFloat32);  // default dtype
  EXPECT_EQ(meta::result_type({i32, wrapped_scalar(int64_t{2})}), kInt32);
  EXPECT_EQ(meta::result_type({f16, wrapped_scalar(2.5)}), kFloat16);
  EXPECT_EQ(meta::result_type({i32, zeros({}, kInt64)}), kInt32);  // 0-dim: same category
  EXPECT_EQ(meta::result_type({i32, zeros({}, kFloat64)}), kFloat64);  // 0-dim: higher category
  EXPECT_EQ(meta::result_type({f16, zeros({}, kFloat64)}), kFloat16);
  EXPECT_EQ(meta::result_type({zeros({3}, kBool), wrapped_scalar(true)}), kBool);
  EXPECT_EQ(meta::result_type({zeros({3}, kBool), wrapped_scalar(int64_t{1})}), kInt64);
  EXPECT_EQ((zeros({2}, kInt32) + 1.5).dtype(), kFloat32);
  EXPECT_EQ((zeros({2}, kUInt8) + zeros({2}, kInt8)).dtype(), kInt16);
}

TEST(DType, HalfRoundTripsAndRounds) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(static_cast<float>(Half(f)), f) << f;
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(Half(1e-9f)), 0.0f);
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(3.140625f)), 3.140625f);
  EXPECT_EQ(static_cast<float>(BFloat16(1.00390625f)), 1.0f);  // halfway: to even
  EXPECT_EQ(static_cast<float>(BFloat16(1.01171875f)), 1.015625f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
}

TEST(DType, DefaultDtypeDrivesFloatFactories) {
  EXPECT_EQ(ones({2}).dtype(), kFloat32);
  set_default_dtype(kFloat64);
  EXPECT_EQ(ones({2}).dtype(), kFloat64);
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), kFloat64);
  set_default_dtype(kFloat32);
  EXPECT_THROW(set_default_dtype(kInt32), Error);
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
}

}  // namespace
}  // namespace kiln

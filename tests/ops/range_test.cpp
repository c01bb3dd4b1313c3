// arange, linspace, logspace, eye: sizes, dtype inference and errors as in PyTorch (values are
// also checked against closed forms by the op-table suite).
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Range, ArangeDtypeInference) {
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(1, 2.5, 0.5).dtype(), get_default_dtype());
  EXPECT_EQ(arange(5.0).dtype(), get_default_dtype());
  EXPECT_EQ(arange(5, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(values(arange(5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(arange(0, 1, 0.25)), (std::vector<double>{0, 0.25, 0.5, 0.75}));
}

TEST(Range, ArangeSizes) {
  EXPECT_EQ(values(arange(10, 0, -3)), (std::vector<double>{10, 7, 4, 1}));
  EXPECT_EQ(values(arange(0, 10, 3)), (std::vector<double>{0, 3, 6, 9}));
  EXPECT_EQ(arange(0, 1, 0.1).numel(), 10);
  EXPECT_EQ(arange(-5, 5).numel(), 10);
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_TRUE(arange(4.0, requires_grad()).requires_grad());
}

TEST(Range, ArangeErrors) {
  EXPECT_EQ(error_of([] { arange(0, 5, 0); }), "arange: step must be nonzero");
  EXPECT_EQ(error_of([] { arange(5, 0, 1); }),
            "arange: upper bound and lower bound inconsistent with step sign (start=5, end=0, "
            "step=1)");
}

TEST(Range, Linspace) {
  EXPECT_EQ(values(linspace(0, 1, 5)), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(linspace(0, 1, 5).dtype(), get_default_dtype());
  EXPECT_EQ(values(linspace(0, 10, 4, kInt64)), (std::vector<double>{0, 3, 6, 10}));
  EXPECT_EQ(values(linspace(2, 3, 1)), (std::vector<double>{2}));
  EXPECT_EQ(linspace(2, 3, 0).numel(), 0);
  // Both ends exact, even when the step is not representable.
  std::vector<double> v = values(linspace(0.1, 0.7, 7, kFloat64));
  EXPECT_EQ(v.front(), 0.1);
  EXPECT_EQ(v.back(), 0.7);
  EXPECT_EQ(error_of([] { linspace(0, 1, -1); }),
            "linspace: number of steps must be non-negative, got -1");
}

TEST(Range, Logspace) {
  EXPECT_EQ(values(logspace(0, 2, 3)), (std::vector<double>{1, 10, 100}));
  EXPECT_EQ(values(logspace(0, 3, 4, 2.0)), (std::vector<double>{1, 2, 4, 8}));
}

TEST(Range, Eye) {
  EXPECT_EQ(eye(2, 3).sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(eye(2, 3)), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(eye(2, kInt64).dtype(), kInt64);
  EXPECT_EQ(values(eye(2, kBool)), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(error_of([] { eye(-1); }), "eye: n must be greater or equal to 0, got -1");
}

TEST(Range, MetaMode) {
  ModeGuard guard(std::make_shared<MetaMode>());
  Tensor t = arange(0, 10, 3);
  EXPECT_TRUE(t.is_meta());
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{4}));
  EXPECT_EQ(eye(3, 5).sizes().vec(), (std::vector<int64_t>{3, 5}));
}

}  // namespace
}  // namespace kiln

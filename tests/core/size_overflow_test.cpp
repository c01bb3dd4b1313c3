// Sizes, strides, offsets and byte counts that do not fit int64 are errors that name the op and
// the sizes, never a wrapped allocation (Note [Checked sizes] in kiln/core/size_math.cpp).
#include <gtest/gtest.h>

#include <climits>

#include "kiln/kiln.h"

namespace kiln {
namespace {

constexpr int64_t k2_32 = int64_t{1} << 32;
constexpr int64_t k2_40 = int64_t{1} << 40;
constexpr int64_t k2_61 = int64_t{1} << 61;
constexpr int64_t k2_62 = int64_t{1} << 62;

// Runs f, which must throw E with a message that starts with `op` and contains `detail`.
template <class E = Error, class F>
void expect_error(F&& f, const std::string& op, const std::string& detail) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one from " << op;
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(op + ":", 0), 0u) << what;
    EXPECT_NE(what.find(detail), std::string::npos) << what;
  }
}

TEST(SizeOverflow, FactoriesWhoseByteCountWrapsThrow) {
  expect_error<OverflowError>([] { zeros({k2_62}); }, "full", "4611686018427387904");
  expect_error<OverflowError>([] { empty({k2_62}).fill_(1); }, "empty", "4611686018427387904");
  expect_error<OverflowError>([] { randn({k2_62}); }, "randn", "4611686018427387904");
  expect_error<OverflowError>([] { zeros({k2_61}, kInt64); }, "full", "2305843009213693952");
  expect_error<OverflowError>([] { arange(0, k2_62); }, "arange", "4611686018427387904");
}

TEST(SizeOverflow, NumelThatWrapsThrows) {
  expect_error<OverflowError>(
      [] {
        ones({k2_40, k2_40});
      },
      "full", "[1099511627776, 1099511627776]");
  expect_error<OverflowError>([] { zeros({INT64_MAX, 2}); }, "full", "9223372036854775807");
  expect_error<OverflowError>([] { empty({INT64_MAX, 2}); }, "empty", "9223372036854775807");
  // Under the meta mode too: the compiler's tracing relies on the same checks.
  ModeGuard meta(std::make_shared<MetaMode>());
  expect_error<OverflowError>([] { zeros({k2_40, k2_40}); }, "full", "overflows int64");
}

TEST(SizeOverflow, ViewsThatWrapThrow) {
  expect_error<OverflowError>(
      [] {
        ones({1}).expand({k2_32, k2_32}).sum();
      },
      "expand", "[4294967296, 4294967296]");
  expect_error<OverflowError>(
      [] {
        zeros({0}).reshape({k2_32, k2_32});
      },
      "reshape", "overflows int64");
  expect_error<OverflowError>([] { zeros({0}).view({k2_32, k2_32}); }, "view", "overflows int64");
  // 2^62 elements of stride 0 is a valid view; two of them concatenated are not.
  Tensor big = ones({1}).expand({k2_62});
  EXPECT_EQ(big.numel(), k2_62);
  expect_error<OverflowError>([&] { cat({big, big}); }, "cat", "overflows int64");
  expect_error<OverflowError>([] { ones({2}).repeat({k2_62}); }, "repeat", "overflows int64");
}

TEST(SizeOverflow, ZeroSizedTensorsNeedNoProduct) {
  Tensor t = ones({1}).expand({0, k2_62, 4});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(zeros({k2_62, 0}).numel(), 0);
}

TEST(SizeOverflow, ViewsStayInsideTheirStorage) {
  expect_error([] { ones({3}).as_strided({4}, {1}); }, "as_strided", "too small");
  expect_error([] { ones({3}).as_strided({2}, {1}, 2); }, "as_strided", "offset 2");
  expect_error<OverflowError>(
      [] {
        ones({3}).as_strided({2, 2}, {INT64_MAX, 1});
      },
      "as_strided", "overflows int64");
  EXPECT_EQ(ones({3}).as_strided({2}, {1}, 1).sum().item<double>(), 2.0);
}

TEST(SizeOverflow, NegativeSizesThrow) {
  EXPECT_THROW(empty({2, -1}), Error);
  std::vector<float> buf(4);
  expect_error<ValueError>([&] { from_blob(buf.data(), {-2}); }, "from_blob", "-2");
  expect_error<OverflowError>(
      [&] {
        from_blob(buf.data(), {k2_62, 4});
      },
      "from_blob", "overflows int64");
}

TEST(SizeOverflow, AllocationsThatCannotBeSatisfiedAreErrors) {
  // 4 TiB: more than this machine (or any test machine) can give, but no overflow.
  expect_error<OutOfMemoryError>([] { empty({k2_40}); }, "empty", "cannot allocate");
}

TEST(SizeOverflow, SymIntArithmeticIsChecked) {
  EXPECT_THROW(SymInt(INT64_MAX) + 1, OverflowError);
  EXPECT_THROW(SymInt(INT64_MIN) - 1, OverflowError);
  EXPECT_THROW(SymInt(k2_62) * 2, OverflowError);
  EXPECT_THROW(-SymInt(INT64_MIN), OverflowError);
  EXPECT_THROW(SymInt(INT64_MIN) / -1, OverflowError);
  EXPECT_THROW(SymInt(uint64_t{1} << 63), OverflowError);
  EXPECT_EQ((SymInt(k2_62) * 1 + (k2_62 - 1)).guard_int(), INT64_MAX);
}

}  // namespace
}  // namespace kiln

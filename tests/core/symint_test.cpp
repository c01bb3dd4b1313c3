#include <gtest/gtest.h>

#include "kiln/core/error.h"
#include "kiln/core/symint.h"

namespace kiln {
namespace {

TEST(SymInt, ConcreteArithmeticStaysConcrete) {
  SymInt a = 6, b = 4;
  EXPECT_FALSE((a + b).is_symbolic());
  EXPECT_EQ((a + b).guard_int(), 10);
  EXPECT_EQ((a - b).guard_int(), 2);
  EXPECT_EQ((a * b).guard_int(), 24);
  EXPECT_EQ((a / b).guard_int(), 1);
  EXPECT_EQ((a % b).guard_int(), 2);
  EXPECT_EQ(SymInt::floordiv(-7, 2).guard_int(), -4);  // floor, as Python
  EXPECT_EQ(SymInt::mod(-7, 2).guard_int(), 1);
  EXPECT_EQ(sym_min(a, b).guard_int(), 4);
  EXPECT_EQ(sym_max(a, b).guard_int(), 6);
}

TEST(SymInt, PolynomialSimplification) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8), s1 = env.create_symbol(3);
  EXPECT_EQ((s0 + s1).str(), "s0+s1");
  EXPECT_EQ((s1 + s0).str(), "s0+s1");
  EXPECT_EQ((s0 * 4).str(), "4*s0");
  EXPECT_EQ((2 * s0 * 2).str(), "4*s0");
  EXPECT_EQ((s0 + s1 - s1).str(), "s0");
  EXPECT_EQ((s0 + 1).str(), "s0+1");
  EXPECT_EQ((s0 - 1).str(), "s0-1");
  EXPECT_EQ((s0 * s1).str(), "s0*s1");
  EXPECT_EQ(((4 * s0) / (2 * s0)).str(), "2");
  EXPECT_FALSE(((4 * s0) / (2 * s0)).is_symbolic());
  EXPECT_EQ(((4 * s0) / 2).str(), "2*s0");
  EXPECT_EQ(((4 * s0) % 2).str(), "0");
  EXPECT_EQ((s0 / 3).str(), "(s0//3)");
  EXPECT_EQ(((s0 + 1) % 2).str(), "((s0+1)%2)");
  EXPECT_EQ(sym_max(s0 + 1, s0).str(), "s0+1");
  EXPECT_EQ(sym_min(s0, s1).str(), "min(s0, s1)");
  EXPECT_TRUE((s0 - s0).maybe_int().has_value());
}

TEST(SymInt, HintsEvaluateExpressions) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8), s1 = env.create_symbol(3);
  EXPECT_EQ((s0 * s1 + 2).hint(), 26);
  EXPECT_EQ((s0 / 3).hint(), 2);
  EXPECT_EQ(sym_min(s0, s1).hint(), 3);
  EXPECT_TRUE(env.guards().empty());
}

TEST(SymInt, DecidableComparisonsRecordNoGuard) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(5);
  EXPECT_TRUE(s0 + 1 > s0);
  EXPECT_TRUE(s0 == s0);
  EXPECT_FALSE(2 * s0 == s0 + s0 + 1);
  EXPECT_TRUE(env.guards().empty());
}

TEST(SymInt, UndecidableComparisonsGuardOnHints) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(5), s1 = env.create_symbol(7);
  EXPECT_TRUE(s0 < s1);
  EXPECT_FALSE(s0 == 1);
  ASSERT_EQ(env.guards().size(), 2u);
  EXPECT_EQ(env.guards()[0].str(), "s0 < s1");
  EXPECT_EQ(env.guards()[1].str(), "s0 != 1");
}

TEST(SymInt, SpecialisingRecordsAGuard) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(5);
  int64_t n = s0 * 2;  // implicit conversion specialises
  EXPECT_EQ(n, 10);
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].str(), "2*s0 == 10");
}

TEST(SymInt, MixedIntegerOperatorsAreUnambiguous) {
  SymInt a = 3;
  size_t u = 2;
  int i = 4;
  EXPECT_EQ((a * u).guard_int(), 6);
  EXPECT_EQ((i - a).guard_int(), 1);
  EXPECT_TRUE(a < i);
  EXPECT_TRUE(a >= u);
  EXPECT_EQ(static_cast<double>(a), 3.0);
}

TEST(SymInt, DivisionByZeroIsAnError) { EXPECT_THROW(SymInt::floordiv(1, 0), Error); }

TEST(ShapeEnv, RangesDecideComparisonsWithoutGuards) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8, "", SymbolRange{2, 100});
  SymInt s1 = env.create_symbol(3, "", SymbolRange{2, INT64_MAX});
  EXPECT_FALSE(s0 == 1);
  EXPECT_FALSE(s0 == 0);
  EXPECT_TRUE(s0 >= 2);
  EXPECT_TRUE(s0 < 101);
  EXPECT_TRUE(2 * s0 * s1 + 1 > 8);  // at least 2*2*2+1
  EXPECT_TRUE(env.guards().empty());
  EXPECT_TRUE(s0 > 4);  // not decided by the ranges: guarded on the hint
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].str(), "4 < s0");
  EXPECT_THROW(env.create_symbol(1, "", SymbolRange{2, 10}), Error);
}

// min and max are decided by the ranges where they can be: a contiguous stride's max(s, 1) is s.
TEST(ShapeEnv, MinAndMaxAreDecidedByRanges) {
  ShapeEnv env;
  SymInt s = env.create_symbol(4, "", SymbolRange{2, INT64_MAX});
  SymInt t = env.create_symbol(3, "", SymbolRange{0, 10});
  EXPECT_TRUE(SymInt::max(s, 1).same_as(s));
  EXPECT_TRUE(SymInt::min(s, 1).same_as(SymInt(1)));
  EXPECT_TRUE(SymInt::max(8 * s, 16).same_as(8 * s));
  EXPECT_EQ(SymInt::max(t, 1).str(), "max(s1, 1)");  // t may be 0
  EXPECT_TRUE(env.guards().empty());
}

// Products of three unbounded symbols exceed any fixed width: their bounds saturate instead of
// wrapping into an interval that decides the comparison wrongly without a guard.
TEST(ShapeEnv, UnboundedProductsDoNotWrapTheirBounds) {
  ShapeEnv env;
  const SymbolRange unbounded{2, INT64_MAX};
  SymInt a = env.create_symbol(5, "", unbounded), b = env.create_symbol(3, "", unbounded),
         c = env.create_symbol(8, "", unbounded);
  EXPECT_TRUE(SymInt(120) == a * b * c);
  EXPECT_TRUE(a * b * c * a >= 16);  // decided by the ranges
  EXPECT_FALSE(a * b * c * a * b < 0);
  ASSERT_EQ(env.guards().size(), 1u);  // the equality, on the hints
}

TEST(ShapeEnv, GuardsAreStructuredAndCheckedAgainstNewValues) {
  ShapeEnv env;
  SymInt s0 = env.create_symbol(8), s1 = env.create_symbol(3);
  env.set_origin("view");
  EXPECT_TRUE(s0 % 4 == 0);
  env.set_origin("user code");
  EXPECT_EQ((s1 + 1).guard_int(), 4);
  ASSERT_EQ(env.guards().size(), 2u);
  EXPECT_EQ(env.guards()[0].rel, ShapeGuard::Rel::Eq);
  EXPECT_EQ(env.guards()[0].origin, "view");
  EXPECT_EQ(env.guards()[1].str(), "s1+1 == 4");
  EXPECT_EQ(env.guards()[1].origin, "user code");
  std::string why;
  const std::vector<int64_t> ok{12, 3}, not_multiple{10, 3}, other_s1{12, 5};
  EXPECT_TRUE(env.check(ok, &why)) << why;
  EXPECT_FALSE(env.check(not_multiple, &why));
  EXPECT_EQ(why, "(s0%4) == 0 (s0 = 10, s1 = 3)");
  EXPECT_FALSE(env.check(other_s1, &why));
  EXPECT_EQ(why, "s1+1 == 4 (s0 = 12, s1 = 5)");
  const std::vector<int64_t> negative{-1, 3};
  EXPECT_FALSE(env.check(negative, &why));
  EXPECT_EQ(why, "s0 = -1 is outside [0, 9223372036854775807]");
  EXPECT_EQ((s0 * s1 + 2).evaluate(ok), 38);
}

}  // namespace
}  // namespace kiln

// Meta functions on symbolic sizes: the shape ops keep sizes as expressions over the shape
// symbols (what tracing and export rely on), and specialising a size records a guard.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<std::string> exprs(SymIntArrayRef sizes) {
  std::vector<std::string> out;
  for (const SymInt& s : sizes) out.push_back(s.str());
  return out;
}
std::vector<std::string> exprs(const Tensor& t) { return exprs(t.sym_sizes()); }
using Strs = std::vector<std::string>;

bool has_guard(const ShapeEnv& env, const std::string& guard) {
  const auto& g = env.guards();
  return std::any_of(g.begin(), g.end(), [&](const ShapeGuard& x) { return x.str() == guard; });
}

class SymbolicShapes : public ::testing::Test {
 protected:
  ShapeEnv env;
  SymInt s0 = env.create_symbol(3);
  SymInt s1 = env.create_symbol(5);
};

TEST_F(SymbolicShapes, CatAddsTheSymbolicSizes) {
  Tensor c = cat({empty_meta({s0, 4}), empty_meta({s1, 4})}, 0);
  EXPECT_TRUE(c.is_meta());
  EXPECT_EQ(exprs(c), (Strs{"s0+s1", "4"}));
  EXPECT_EQ(exprs(cat({empty_meta({s0, 2}), empty_meta({s0, 3})}, 1)), (Strs{"s0", "5"}));
  EXPECT_EQ(exprs(cat({empty_meta({s0}), empty_meta({s0}), empty_meta({s1})})), (Strs{"2*s0+s1"}));
}

TEST_F(SymbolicShapes, ReshapeAndViewStaySymbolic) {
  Tensor x = empty_meta({s0, 4});
  EXPECT_EQ(exprs(x.reshape({-1})), (Strs{"4*s0"}));
  Tensor v = x.view({x.sym_size(0) * 2, -1});
  EXPECT_EQ(exprs(v), (Strs{"2*s0", "2"}));
  EXPECT_EQ(exprs(v.sym_strides()), (Strs{"2", "1"}));
  EXPECT_EQ(exprs(x.flatten()), (Strs{"4*s0"}));
  EXPECT_EQ(exprs(empty_meta({s0, 4, s1}).flatten(1)), (Strs{"s0", "4*s1"}));
  EXPECT_EQ(exprs(x.unflatten(1, {2, 2})), (Strs{"s0", "2", "2"}));
  EXPECT_EQ(exprs(x.view_as(empty_meta({4, s0}))), (Strs{"4", "s0"}));
}

TEST_F(SymbolicShapes, BroadcastingBinaryOp) {
  Tensor a = empty_meta({s0, 1}), b = empty_meta({1, 5});
  EXPECT_EQ(exprs(a * b), (Strs{"s0", "5"}));
  EXPECT_EQ(exprs(a + b), (Strs{"s0", "5"}));
}

TEST_F(SymbolicShapes, ViewsPermuteSymbolicDims) {
  Tensor x = empty_meta({s0, 4, s1});
  EXPECT_EQ(exprs(x.transpose(0, 2)), (Strs{"s1", "4", "s0"}));
  EXPECT_EQ(exprs(x.permute({1, 2, 0})), (Strs{"4", "s1", "s0"}));
  EXPECT_EQ(exprs(x.movedim(0, -1)), (Strs{"4", "s1", "s0"}));
  EXPECT_EQ(exprs(x.unsqueeze(1)), (Strs{"s0", "1", "4", "s1"}));
  EXPECT_EQ(exprs(x.unsqueeze(1).squeeze(1)), (Strs{"s0", "4", "s1"}));
  EXPECT_EQ(exprs(empty_meta({s0, 1, 4}).squeeze()), (Strs{"s0", "4"}));
  EXPECT_EQ(exprs(x.select(1, 2)), (Strs{"s0", "s1"}));
  EXPECT_EQ(exprs(x.narrow(0, 1, s0 - 2)), (Strs{"s0-2", "4", "s1"}));
  EXPECT_EQ(exprs(x.slice(2, 1)), (Strs{"s0", "4", "s1-1"}));
  EXPECT_EQ(exprs(x.index({indexing::Slice(), 0})), (Strs{"s0", "s1"}));
  EXPECT_EQ(exprs(empty_meta({s0, 1}).expand({s0, 5})), (Strs{"s0", "5"}));
  EXPECT_EQ(exprs(empty_meta({s0, 1}).expand({-1, s1})), (Strs{"s0", "s1"}));
  EXPECT_EQ(exprs(empty_meta({1, 4}).expand({s0, 4}).sym_strides()), (Strs{"0", "1"}));
}

TEST_F(SymbolicShapes, StackChunkAndCopies) {
  Tensor x = empty_meta({s0, 4});
  EXPECT_EQ(exprs(stack({x, x}, 1)), (Strs{"s0", "2", "4"}));
  EXPECT_EQ(exprs(stack({x, x})), (Strs{"2", "s0", "4"}));
  auto halves = x.chunk(2, 1);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_EQ(exprs(halves[1]), (Strs{"s0", "2"}));
  auto rows = x.chunk(2, 0);  // s0 = 3: sizes 2 and 1, as expressions
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(exprs(rows[0]), (Strs{"((s0+1)//2)", "4"}));
  EXPECT_EQ(exprs(rows[1]), (Strs{"-((s0+1)//2)+s0", "4"}));
  EXPECT_EQ(rows[1].sym_size(0).hint(), 1);
  EXPECT_EQ(exprs(x.repeat({2, 3})), (Strs{"2*s0", "12"}));
  EXPECT_EQ(exprs(x.repeat_interleave(3, 0)), (Strs{"3*s0", "4"}));
  EXPECT_EQ(exprs(x.flip({0})), (Strs{"s0", "4"}));
  EXPECT_EQ(exprs(pad(x, {1, 2, 3, 4})), (Strs{"s0+7", "7"}));
  EXPECT_EQ(exprs(x.tril()), (Strs{"s0", "4"}));
  EXPECT_EQ(exprs(x.unfold(0, 2, 1)), (Strs{"s0-1", "4", "2"}));
}

TEST_F(SymbolicShapes, SpecialisingASizeRecordsAGuard) {
  Tensor x = empty_meta({s0, 4});
  EXPECT_FALSE(has_guard(env, "s0 == 3"));
  int64_t n = x.sym_size(0);  // specialises s0 to its hint
  EXPECT_EQ(n, 3);
  EXPECT_TRUE(has_guard(env, "s0 == 3"));
  // A size the expressions cannot decide is decided by the hints and recorded too.
  Tensor y = empty_meta({s1});
  EXPECT_EQ(y.split(2).size(), 3u);  // s1 = 5
  EXPECT_FALSE(env.guards().empty());
}

}  // namespace
}  // namespace kiln

// Guards and recompiles: automatic dynamic, dynamic(true), mark_dynamic / mark_static, the
// recompile limit, and the messages that name the failed guard.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

Tensor double_it(const Tensor& x) { return x * 2.0; }

class CompileGuards : public ::testing::Test {
 protected:
  void TearDown() override { compiler::set_logs(""); }
};

TEST_F(CompileGuards, AutomaticDynamicCompilesTwiceThenNeverAgain) {
  auto f = compile(double_it);
  for (int64_t batch : {8, 16, 24, 32}) {
    const Tensor x = randn({batch, 3});
    EXPECT_TRUE(allclose(f(x), x * 2.0));
  }
  // 8: specialised; 16: batch becomes symbolic; 24 and 32 hit that graph.
  EXPECT_EQ(f.compilations(), 2);
  const Tensor odd = randn({5, 3});
  EXPECT_TRUE(allclose(f(odd), odd * 2.0));
  EXPECT_EQ(f.compilations(), 2);
  // The feature dim stayed static: a new one recompiles.
  f(randn({8, 4}));
  EXPECT_EQ(f.compilations(), 3);
}

TEST_F(CompileGuards, DynamicTrueCompilesOnceForEverySize) {
  auto f = compile(double_it, CompileOptions().dynamic(true));
  for (int64_t n : {8, 16, 3, 100}) f(randn({n, n + 1}));
  EXPECT_EQ(f.compilations(), 1);
}

TEST_F(CompileGuards, SizesZeroAndOneSpecialise) {
  auto f = compile(double_it, CompileOptions().dynamic(true));
  f(randn({8}));
  f(randn({1}));
  f(randn({0}));
  EXPECT_EQ(f.compilations(), 3);
}

TEST_F(CompileGuards, EqualSizesShareASymbol) {
  auto f = compile([](const Tensor& a, const Tensor& b) { return a + b; },
                   CompileOptions().dynamic(true));
  f(randn({4}), randn({4}));
  f(randn({7}), randn({7}));
  EXPECT_EQ(f.compilations(), 1);
  // a and b were one symbol: sizes that differ need another graph (broadcasting 1 against 7).
  f(randn({7}), randn({1}));
  EXPECT_EQ(f.compilations(), 2);
}

TEST_F(CompileGuards, MarkStaticOverridesDynamic) {
  auto f = compile(double_it, CompileOptions().dynamic(true));
  Tensor a = randn({8}), b = randn({16});
  compiler::mark_static(a, 0);
  f(a);
  f(b);
  EXPECT_EQ(f.compilations(), 2);
}

TEST_F(CompileGuards, MarkDynamicRangesAreGuarded) {
  auto f = compile(double_it, CompileOptions().dynamic(false));
  Tensor a = randn({8});
  compiler::mark_dynamic(a, 0, 4, 16);
  f(a);
  f(randn({12}));
  EXPECT_EQ(f.compilations(), 1);
  compiler::set_logs("recompiles");
  ::testing::internal::CaptureStderr();
  f(randn({32}));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("s0 = 32 is outside [4, 16]"), std::string::npos) << log;
  EXPECT_EQ(f.compilations(), 2);
  EXPECT_THROW(compiler::mark_dynamic(a, 1), Error);
  EXPECT_THROW(compiler::mark_dynamic(a, 0, 9, 3), Error);
}

TEST_F(CompileGuards, RecompileMessagesNameTheGuardWithBothValues) {
  auto f = compile(double_it, CompileOptions().dynamic(false).name("double_it"));
  compiler::set_logs("recompiles");
  ::testing::internal::CaptureStderr();
  f(randn({8}));
  f(randn({16}));
  f(randn({16}, kFloat64));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("recompiling double_it: args[0].size(0): expected 8, got 16"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("args[0].dtype: expected float32, got float64"), std::string::npos) << log;
}

TEST_F(CompileGuards, TheRecompileLimitFallsBackToEager) {
  auto f = compile(double_it, CompileOptions().dynamic(false).recompile_limit(2));
  for (int64_t n : {2, 3, 4, 5}) {
    const Tensor x = randn({n});
    EXPECT_TRUE(allclose(f(x), x * 2.0));
  }
  EXPECT_EQ(f.compilations(), 2);
  auto strict =
      compile(double_it, CompileOptions().dynamic(false).recompile_limit(1).fullgraph(true));
  strict(randn({2}));
  try {
    strict(randn({3}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recompile limit (1)"), std::string::npos) << e.what();
  }
}

TEST_F(CompileGuards, ComparingASymbolicSizeGuardsTheComparison) {
  auto f = compile([](const Tensor& x) { return x.sym_size(0) > 4 ? x * 2.0 : x * 3.0; },
                   CompileOptions().dynamic(true));
  EXPECT_TRUE(allclose(f(ones({8})), full({8}, 2.0)));
  EXPECT_TRUE(allclose(f(ones({16})), full({16}, 2.0)));
  EXPECT_EQ(f.compilations(), 1);
  EXPECT_TRUE(allclose(f(ones({3})), full({3}, 3.0)));
  EXPECT_EQ(f.compilations(), 2);
}

TEST_F(CompileGuards, ReadingAnIntegerSizeSpecialisesItWhereExplainShows) {
  auto f = [](const Tensor& x) { return x.reshape({x.size(0) * 2, -1}); };
  const Tensor x = randn({6, 4});
  compiler::Explanation e = compile(f, CompileOptions().dynamic(true)).explain(x);
  EXPECT_NE(e.guards.find("s0 == 6  (user code"), std::string::npos) << e.guards;
}

TEST_F(CompileGuards, GradModeIsGuarded) {
  auto f = compile(double_it);
  const Tensor x = randn({3});
  f(x);
  {
    NoGradGuard no_grad;
    f(x);
  }
  EXPECT_EQ(f.compilations(), 2);
}

// Factories and numbers take the default dtype at capture: changing it recompiles (PyTorch's
// global-state guard), rather than replaying the old dtype.
TEST_F(CompileGuards, TheDefaultDtypeIsGuarded) {
  auto fn = [](const Tensor& x) { return x * 1.5 + ones({3}); };
  auto f = compile(fn);
  const Tensor i = arange(3, TensorOptions(kInt64));
  EXPECT_EQ(f(i).dtype(), kFloat32);
  set_default_dtype(kFloat64);
  const Tensor got = f(i);
  set_default_dtype(kFloat32);
  EXPECT_EQ(got.dtype(), kFloat64);
  EXPECT_EQ(f.compilations(), 2);
  EXPECT_NE(compiler::explain(fn, i).guards.find("default dtype float32"), std::string::npos);
}

TEST_F(CompileGuards, ResetForgetsEveryGraph) {
  auto f = compile(double_it);
  f(randn({3}));
  compiler::reset();
  f(randn({3}));
  EXPECT_EQ(f.compilations(), 2);
}

}  // namespace
}  // namespace kiln

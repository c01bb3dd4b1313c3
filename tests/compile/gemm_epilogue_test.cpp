// A product's epilogue inside its tiles (kiln/compile/codegen/gemm_epilogue.h): the fused kernel
// after a float32 product runs panel by panel inside it, and computes what eager computes; where
// it cannot (it reads the product transposed, the product is large), it runs after the product.
#include "kiln/compile/codegen/gemm_epilogue.h"

#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/compile/cache_dir.h"

namespace kiln {
namespace {

using compiler::gemm_epilogues_run_inside;

template <class F, class... Args>
void expect_as_eager(F f, int64_t inside, CompileOptions options, const Args&... args) {
  auto compiled = compile(f, options);
  const int64_t before = gemm_epilogues_run_inside();
  for (int call = 0; call < 2; ++call) {
    const Tensor want = f(args...), got = compiled(args...);
    EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max();
  }
  EXPECT_EQ(gemm_epilogues_run_inside() - before, 2 * inside);
}

TEST(GemmEpilogue, BiasAndGeluRunInsideTheProduct) {
  manual_seed(0);
  const Tensor x = randn({37, 29}), w = randn({45, 29}), b = randn({45});
  expect_as_eager(
      [](const Tensor& x, const Tensor& w, const Tensor& b) { return gelu(x.mm(w.t()) + b); }, 1,
      CompileOptions(), x, w, b);
}

// addmm's self, beta and alpha are the product's own (C starts as beta * self).
TEST(GemmEpilogue, AddmmWithBetaAndAlpha) {
  manual_seed(6);
  const Tensor self = randn({20, 1}), a = randn({20, 12}), b = randn({12, 33});
  expect_as_eager([](const Tensor& self, const Tensor& a,
                     const Tensor& b) { return relu(addmm(self, a, b, 0.5, -2.0)) * 3; },
                  1, CompileOptions(), self, a, b);
}

// A linear layer over [batch, tokens, features]: the product is a view away from its epilogue.
TEST(GemmEpilogue, ThroughAViewWithAResidual) {
  manual_seed(1);
  const Tensor x = randn({3, 11, 24}), w = randn({24, 24}), b = randn({24});
  expect_as_eager([](const Tensor& x, const Tensor& w,
                     const Tensor& b) { return x + relu(nn::functional::linear(x, w, b)); },
                  1, CompileOptions(), x, w, b);
}

TEST(GemmEpilogue, BatchedProducts) {
  manual_seed(2);
  const Tensor a = randn({4, 9, 13}), c = randn({4, 13, 17}).transpose(1, 2).contiguous();
  expect_as_eager([](const Tensor& a, const Tensor& c) { return tanh(a.bmm(c.transpose(1, 2))); },
                  1, CompileOptions(), a, c);
}

// Row reductions over the product's rows run inside it too: each panel holds whole rows. (A
// softmax alone stays on its eager kernel; scaled, it is a fused kernel.)
TEST(GemmEpilogue, LayerNormSoftmaxAndRowSumsOverTheProductsRows) {
  manual_seed(7);
  const Tensor x = randn({2, 19, 24}), w = randn({40, 24}), b = randn({40}), r = randn({40});
  const Tensor gamma = randn({40}), beta = randn({40});
  expect_as_eager(
      [&](const Tensor& x) {
        return layer_norm(nn::functional::linear(x, w, b) + r, {40}, gamma, beta, 1e-5);
      },
      1, CompileOptions(), x);
  expect_as_eager([&](const Tensor& x) { return softmax(x.matmul(w.t()) * 0.5, -1); }, 1,
                  CompileOptions(), x);
  expect_as_eager([&](const Tensor& x) { return (x.matmul(w.t()) * 2).sum(-1); }, 1,
                  CompileOptions(), x);
}

// A reduction of every element, or over the rows' columns, is not the product's rows: after it.
TEST(GemmEpilogue, ReductionsAcrossRowsRunAfterTheProduct) {
  manual_seed(8);
  const Tensor x = randn({33, 16}), w = randn({16, 20});
  expect_as_eager([&](const Tensor& x) { return x.mm(w).exp().sum(); }, 0, CompileOptions(), x);
  expect_as_eager([&](const Tensor& x) { return x.mm(w).exp().sum(0); }, 0, CompileOptions(), x);
}

TEST(GemmEpilogue, AKernelReadingTheProductTransposedRunsAfterIt) {
  manual_seed(3);
  const Tensor x = randn({16, 8}), w = randn({8, 16});
  expect_as_eager([](const Tensor& x, const Tensor& w) { return sigmoid(x.mm(w).t()) * 2; }, 0,
                  CompileOptions(), x, w);
}

TEST(GemmEpilogue, ALargeProductStaysOnItsLibraryByDefault) {
  manual_seed(4);
  const Tensor x = randn({256, 128}), w = randn({128, 128});  // 2^22 multiply-adds
  expect_as_eager([](const Tensor& x, const Tensor& w) { return relu(x.mm(w)); }, 0,
                  CompileOptions(), x, w);
}

// max-autotune times the kernel inside the product against after it, once, and either way the
// numbers are eager's.
TEST(GemmEpilogue, MaxAutotuneChoosesAndComputesTheSame) {
  const CacheDir cache;
  manual_seed(5);
  const Tensor x = randn({256, 128}), w = randn({96, 128}), b = randn({96});
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return gelu(nn::functional::linear(x, w, b));
  };
  auto compiled = compile(f, CompileOptions().mode("max-autotune"));
  for (int call = 0; call < 3; ++call)
    EXPECT_TRUE(allclose(compiled(x, w, b), f(x, w, b), 1e-4, 1e-5));
}

}  // namespace
}  // namespace kiln

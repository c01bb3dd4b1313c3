// scaled_dot_product_attention's backends: the CPU flash kernel against the math backend (outputs
// and gradients, fully masked rows, grouped-query heads, float masks, 16-bit dtypes), and the
// selection by nn::attention::sdpa_kernel with its error when no enabled backend fits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/backend/cpu/amx.h"
#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

using nn::attention::sdpa_kernel;
using nn::attention::SDPBackend;

struct Result {
  Tensor out, dq, dk, dv, dmask;
};

// One call through `backend` with gradients for q, k, v (and a floating mask).
Result run(SDPBackend backend, const Tensor& q, const Tensor& k, const Tensor& v,
           const Tensor& mask, bool causal, bool gqa = false) {
  sdpa_kernel only({backend});
  Tensor qg = q.detach().requires_grad_(), kg = k.detach().requires_grad_(),
         vg = v.detach().requires_grad_();
  Tensor mg = mask.defined() ? mask.detach() : mask;
  if (mg.defined() && mg.is_floating_point()) mg.requires_grad_();
  Tensor out = scaled_dot_product_attention(qg, kg, vg, mg, 0, causal, std::nullopt, gqa);
  Tensor weights = randn(out.sizes().vec(), TensorOptions(kFloat64)).to(out.dtype());
  (out * weights).sum().backward();
  return {out.detach(), qg.grad(), kg.grad(), vg.grad(),
          mg.defined() && mg.requires_grad() ? mg.grad() : Tensor()};
}

void expect_same(const Result& a, const Result& b, double tol) {
  const char* names[] = {"output", "grad q", "grad k", "grad v", "grad mask"};
  const Tensor* x[] = {&a.out, &a.dq, &a.dk, &a.dv, &a.dmask};
  const Tensor* y[] = {&b.out, &b.dq, &b.dk, &b.dv, &b.dmask};
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(x[i]->defined(), y[i]->defined()) << names[i];
    if (!x[i]->defined()) continue;
    EXPECT_EQ(x[i]->sizes().vec(), y[i]->sizes().vec()) << names[i];
    EXPECT_FALSE(isnan(*x[i]).any().item<bool>()) << names[i];
    const double diff = (x[i]->to(kFloat64) - y[i]->to(kFloat64)).abs().max().item<double>();
    EXPECT_LT(diff, tol) << names[i];
  }
}

// The same seed before each backend's call, so both draw the same output weights.
void expect_backends_agree(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                           bool causal, bool gqa = false, double tol = 1e-10) {
  manual_seed(7);
  const Result flash = run(SDPBackend::flash_attention, q, k, v, mask, causal, gqa);
  manual_seed(7);
  const Result math = run(SDPBackend::math, q, k, v, mask, causal, gqa);
  expect_same(flash, math, tol);
}

TensorOptions f64() { return TensorOptions(kFloat64); }

TEST(Attention, FlashMatchesMathAcrossTiles) {
  manual_seed(1);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    // 150 queries and 97 keys cross the 64-row tiles, in both orders.
    expect_backends_agree(randn({2, 3, 150, 16}, f64()), randn({2, 3, 97, 16}, f64()),
                          randn({2, 3, 97, 8}, f64()), Tensor(), causal);
    expect_backends_agree(randn({1, 2, 97, 16}, f64()), randn({1, 2, 150, 16}, f64()),
                          randn({1, 2, 150, 24}, f64()), Tensor(), causal);
  }
}

TEST(Attention, FullyMaskedRowsGiveZerosAndZeroGradients) {
  manual_seed(2);
  Tensor mask = rand({70, 130}) > 0.5;
  mask.narrow(0, 3, 65).fill_(false);  // rows 3..67, across the tile boundary at 64
  Tensor q = randn({2, 70, 8}, f64()), k = randn({2, 130, 8}, f64()), v = randn({2, 130, 8}, f64());
  expect_backends_agree(q, k, v, mask, false);
  const Result r = run(SDPBackend::flash_attention, q, k, v, mask, false);
  EXPECT_EQ(r.out.narrow(1, 3, 65).abs().max().item<double>(), 0.0);
  EXPECT_EQ(r.dq.narrow(1, 3, 65).abs().max().item<double>(), 0.0);
}

TEST(Attention, FlashGroupedQueryAndFloatMaskGradients) {
  manual_seed(3);
  expect_backends_agree(randn({2, 6, 80, 8}, f64()), randn({2, 2, 90, 8}, f64()),
                        randn({2, 2, 90, 4}, f64()), Tensor(), true, /*gqa=*/true);
  // A float mask broadcast over batch and heads: its gradient is summed over them.
  expect_backends_agree(randn({2, 3, 70, 8}, f64()), randn({2, 3, 90, 8}, f64()),
                        randn({2, 3, 90, 8}, f64()), randn({70, 90}, f64()), false);
}

TEST(Attention, FlashSixteenBitDtypesMatchFloat32) {
  manual_seed(4);
  Tensor q = randn({1, 2, 100, 32}), k = randn({1, 2, 100, 32}), v = randn({1, 2, 100, 32});
  // Inputs rounded once to 16 bits, the kernels accumulating in float: outputs agree with the
  // float32 result to the 16-bit type's rounding (bfloat16 8 bits, float16 11 bits).
  for (auto [dt, tol] : {std::pair{kBFloat16, 3e-2}, std::pair{kFloat16, 4e-3}}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    manual_seed(7);
    const Result low = run(SDPBackend::flash_attention, q.to(dt), k.to(dt), v.to(dt), {}, true);
    manual_seed(7);
    const Result ref = run(SDPBackend::math, q.to(dt).to(kFloat32), k.to(dt).to(kFloat32),
                           v.to(dt).to(kFloat32), {}, true);
    EXPECT_EQ(low.out.dtype(), dt);
    EXPECT_EQ(low.dq.dtype(), dt);
    Result widened{low.out.to(kFloat32), low.dq.to(kFloat32), low.dk.to(kFloat32),
                   low.dv.to(kFloat32), Tensor()};
    expect_same(widened, ref, tol * 4);
  }
}

// Where the CPU has AMX, bfloat16 flash attention multiplies bfloat16 tiles into float32 and
// rounds the probabilities to bfloat16 for P V (as PyTorch's CPU kernel does): outputs and
// gradients against the math backend in float64 on the same rounded inputs, and its log-sum-exp
// against the float32 kernel's (KILN_CPU_CAPABILITY=avx512 turns AMX off).
TEST(Attention, FlashBfloat16OnAmx) {
  if (!cpu::amx_bf16_available()) GTEST_SKIP() << "this CPU has no AMX";
  struct Case {
    std::vector<int64_t> q, k, v;
    bool causal = false, gqa = false;
    Tensor mask;
  };
  manual_seed(11);
  Tensor bool_mask = rand({70, 135}) > 0.3;
  bool_mask.select(0, 5).fill_(false);  // a row that sees no key
  const std::vector<Case> cases = {
      {{1, 2, 300, 64}, {1, 2, 300, 64}, {1, 2, 300, 64}, true, false, {}},
      {{1, 2, 300, 64}, {1, 2, 300, 64}, {1, 2, 300, 64}, false, false, {}},
      {{2, 4, 100, 80}, {2, 2, 300, 80}, {2, 2, 300, 48}, true, true, {}},
      {{1, 2, 70, 40}, {1, 2, 135, 40}, {1, 2, 135, 24}, false, false, bool_mask},
      {{1, 3, 130, 64},
       {1, 3, 129, 64},
       {1, 3, 129, 64},
       false,
       false,
       randn({130, 129}).to(kBFloat16)},
      {{1, 1, 5, 8}, {1, 1, 3, 8}, {1, 1, 3, 8}, true, false, {}},
  };
  static const OpDef& flash = get_op("_scaled_dot_product_flash_attention_for_cpu");
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.q) + ::testing::PrintToString(c.k));
    const Tensor q = randn(c.q).to(kBFloat16), k = randn(c.k).to(kBFloat16),
                 v = randn(c.v).to(kBFloat16);
    const Attrs attrs{c.causal, std::monostate{}, c.gqa};
    const std::vector<Tensor> amx = call_op(flash, {q, k, v, c.mask}, attrs);
    const Tensor mask64 =
        c.mask.defined() && c.mask.is_floating_point() ? c.mask.to(kFloat64) : c.mask;
    const Tensor want = scaled_dot_product_attention(q.to(kFloat64), k.to(kFloat64), v.to(kFloat64),
                                                     mask64, 0, c.causal, std::nullopt, c.gqa);
    EXPECT_EQ(amx[0].dtype(), kBFloat16);
    EXPECT_FALSE(isnan(amx[0]).any().item<bool>());
    EXPECT_LT((amx[0].to(kFloat64) - want).abs().max().item<double>(), 2e-2);
    const cpu::CpuCapability level = cpu::cpu_capability();
    cpu::set_cpu_capability(cpu::CpuCapability::Avx512);
    const std::vector<Tensor> widened = call_op(flash, {q, k, v, c.mask}, attrs);
    cpu::set_cpu_capability(level);
    EXPECT_TRUE(allclose(amx[1], widened[1], 1e-5, 1e-5)) << amx[1] << widened[1];

    // The backward multiplies bfloat16 tiles too (P and dS rounded to bfloat16).
    std::vector<Tensor> low = {q.detach().requires_grad_(), k.detach().requires_grad_(),
                               v.detach().requires_grad_()};
    std::vector<Tensor> high = {q.to(kFloat64).requires_grad_(), k.to(kFloat64).requires_grad_(),
                                v.to(kFloat64).requires_grad_()};
    const Tensor weights = randn(amx[0].sizes().vec()).to(kBFloat16);
    {
      sdpa_kernel only({SDPBackend::flash_attention});
      (scaled_dot_product_attention(low[0], low[1], low[2], c.mask, 0, c.causal, std::nullopt,
                                    c.gqa) *
       weights)
          .sum()
          .backward();
    }
    (scaled_dot_product_attention(high[0], high[1], high[2], mask64, 0, c.causal, std::nullopt,
                                  c.gqa) *
     weights.to(kFloat64))
        .sum()
        .backward();
    for (size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE("gradient " + std::to_string(i));
      EXPECT_EQ(low[i].grad().dtype(), kBFloat16);
      const Tensor want_grad = high[i].grad();
      const double scale = want_grad.abs().max().item<double>();
      EXPECT_LT((low[i].grad().to(kFloat64) - want_grad).abs().max().item<double>(),
                2e-2 * scale + 1e-2);
    }
  }
  // The row that sees no key: zeros and a log-sum-exp of -inf, as on the float32 path.
  const Tensor q = randn({1, 2, 70, 40}).to(kBFloat16), k = randn({1, 2, 135, 40}).to(kBFloat16);
  const std::vector<Tensor> out =
      call_op(flash, {q, k, k, bool_mask}, Attrs{false, std::monostate{}, false});
  EXPECT_TRUE(equal(out[0].select(2, 5), zeros({1, 2, 40}, TensorOptions(kBFloat16))));
  EXPECT_EQ(out[1].select(2, 5).max().item<float>(), -INFINITY);
}

TEST(Attention, FlashGradientsAreDeterministic) {
  manual_seed(5);
  Tensor q = randn({1, 4, 200, 16}), k = randn({1, 2, 200, 16}), v = randn({1, 2, 200, 16});
  manual_seed(7);
  const Result a = run(SDPBackend::flash_attention, q, k, v, {}, true, true);
  manual_seed(7);
  const Result b = run(SDPBackend::flash_attention, q, k, v, {}, true, true);
  EXPECT_TRUE(equal(a.dk, b.dk));
  EXPECT_TRUE(equal(a.dq, b.dq));
}

TEST(Attention, SelectionFollowsSdpaKernel) {
  Tensor q = randn({1, 1, 4, 8}), k = randn({1, 1, 4, 8}), v = randn({1, 1, 4, 8});
  auto uses_flash = [&](double dropout) {
    Tensor out = scaled_dot_product_attention(q.requires_grad_(), k, v, {}, dropout);
    return out.grad_fn() && out.grad_fn()->name().find("Flash") != std::string::npos;
  };
  EXPECT_TRUE(uses_flash(0));
  EXPECT_FALSE(uses_flash(0.5));  // dropout runs on the math backend
  {
    sdpa_kernel only({SDPBackend::math});
    EXPECT_FALSE(uses_flash(0));
    {
      sdpa_kernel inner({SDPBackend::flash_attention});
      EXPECT_TRUE(uses_flash(0));
    }
    EXPECT_FALSE(uses_flash(0));  // the inner guard restored the outer one's set
  }
  EXPECT_TRUE(uses_flash(0));
  q.requires_grad_(false);
}

TEST(Attention, NoFittingBackendListsEachReason) {
  Tensor q = randn({1, 2, 4, 8}), k = randn({1, 2, 4, 8}), v = randn({1, 2, 4, 8});
  sdpa_kernel only({SDPBackend::flash_attention});
  EXPECT_TRUE(testing::raises(
      [&] { scaled_dot_product_attention(q, k, v, {}, 0.1); }, "scaled_dot_product_attention",
      "no enabled backend can run these inputs (flash_attention: dropout_p > 0 is not "
      "supported; math: not enabled by sdpa_kernel)"));
  EXPECT_TRUE(testing::raises(
      [&] {
        scaled_dot_product_attention(q, k, v, randn({4, 4}, f64()));
      },
      "scaled_dot_product_attention",
      "flash_attention: attn_mask of dtype float64 is not supported"));
}

TEST(Attention, FlashDoubleBackwardIsAClearError) {
  Tensor q = randn({1, 3, 4}, f64()).requires_grad_(), k = randn({1, 3, 4}, f64()),
         v = randn({1, 3, 4}, f64());
  Tensor out = scaled_dot_product_attention(q, k, v);
  Tensor g = autograd::grad({out.sum()}, {q}, {}, std::nullopt, true)[0];
  EXPECT_TRUE(testing::raises([&] { g.sum().backward(); },
                              "_scaled_dot_product_flash_attention_for_cpu_backward",
                              "double backward through the flash attention kernel"));
  sdpa_kernel math({SDPBackend::math});  // the math backend is twice differentiable
  Tensor out2 = scaled_dot_product_attention(q, k, v);
  autograd::grad({out2.sum()}, {q}, {}, std::nullopt, true)[0].sum().backward();
  EXPECT_TRUE(q.grad().defined());
}

}  // namespace
}  // namespace kiln

// flex_attention and create_block_mask against the math backend of scaled_dot_product_attention
// given the same masks and biases as dense tensors, in float64: the masks and score
// functions, gradients (to q, k, v and to a captured bias), block masks, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

using flex::Expr;
using nn::attention::SDPBackend;

TensorOptions f64() { return TensorOptions(kFloat64); }

struct Inputs {
  Tensor q, k, v;
};

Inputs inputs(int64_t b, int64_t hq, int64_t hk, int64_t l, int64_t s, int64_t e = 8) {
  return {randn({b, hq, l, e}, f64()), randn({b, hk, s, e}, f64()), randn({b, hk, s, e}, f64())};
}

// The mask_mod evaluated densely, by plain loops over a bool tensor [B, H, L, S].
template <class Visible>
Tensor dense_mask(int64_t b, int64_t h, int64_t l, int64_t s, const Visible& visible) {
  Tensor m = zeros({b, h, l, s}, TensorOptions(kBool));
  bool* p = m.data_ptr<bool>();
  for (int64_t x = 0; x < b; ++x)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t i = 0; i < l; ++i)
        for (int64_t j = 0; j < s; ++j) p[((x * h + y) * l + i) * s + j] = visible(x, y, i, j);
  return m;
}

// flex_attention's output and gradients against sdpa's math backend with the dense mask (and an
// additive float mask standing for the score_mod's bias, when the score_mod adds one).
void expect_matches_math(const Inputs& in, const flex::ScoreMod& score_mod,
                         const std::optional<BlockMask>& block_mask, const Tensor& dense,
                         const Tensor& bias = {}, bool gqa = false) {
  manual_seed(11);
  Tensor q = in.q.clone().requires_grad_(), k = in.k.clone().requires_grad_(),
         v = in.v.clone().requires_grad_();
  Tensor out = flex_attention(q, k, v, score_mod, block_mask, std::nullopt, gqa);
  Tensor w = randn(out.sizes().vec(), f64());
  (out * w).sum().backward();

  nn::attention::sdpa_kernel math({SDPBackend::math});
  Tensor q2 = in.q.clone().requires_grad_(), k2 = in.k.clone().requires_grad_(),
         v2 = in.v.clone().requires_grad_();
  Tensor mask;
  if (dense.defined() && bias.defined())
    mask = bias.masked_fill(dense.logical_not(), -INFINITY);
  else if (dense.defined())
    mask = dense;
  else
    mask = bias;
  Tensor ref = scaled_dot_product_attention(q2, k2, v2, mask, 0, false, std::nullopt, gqa);
  (ref * w).sum().backward();
  auto diff = [](const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); };
  EXPECT_LT(diff(out, ref), 1e-10);
  EXPECT_LT(diff(q.grad(), q2.grad()), 1e-10);
  EXPECT_LT(diff(k.grad(), k2.grad()), 1e-10);
  EXPECT_LT(diff(v.grad(), v2.grad()), 1e-10);
}

TEST(FlexAttention, CausalSlidingWindowPrefixLm) {
  manual_seed(1);
  const int64_t l = 300;  // not a multiple of the block size
  const Inputs in = inputs(2, 2, 2, l, l);
  auto causal = [](Expr, Expr, Expr q, Expr kv) { return q >= kv; };
  auto window = [](Expr, Expr, Expr q, Expr kv) { return (q >= kv) & (q - kv <= 40); };
  auto prefix = [](Expr, Expr, Expr q, Expr kv) { return (kv <= 70) | (q >= kv); };
  expect_matches_math(in, {}, create_block_mask(causal, std::nullopt, std::nullopt, l, l),
                      dense_mask(1, 1, l, l, [](auto, auto, auto i, auto j) { return i >= j; }));
  expect_matches_math(
      in, {}, create_block_mask(window, std::nullopt, std::nullopt, l, l, 32),
      dense_mask(1, 1, l, l, [](auto, auto, auto i, auto j) { return i >= j && i - j <= 40; }));
  expect_matches_math(
      in, {}, create_block_mask(prefix, std::nullopt, std::nullopt, l, l, 64),
      dense_mask(1, 1, l, l, [](auto, auto, auto i, auto j) { return j <= 70 || i >= j; }));
}

TEST(FlexAttention, DocumentMaskPerBatchAndFullyMaskedRows) {
  manual_seed(2);
  const int64_t l = 200;
  const Inputs in = inputs(2, 3, 3, l, l);
  // Documents differ per batch; in batch 1 the queries of document 3 see nothing (ids 3 never
  // appear among the keys' ids there), so their rows are fully masked.
  Tensor doc = zeros({2, l}, TensorOptions(kInt64));
  for (int64_t i = 0; i < l; ++i) {
    doc.data_ptr<int64_t>()[i] = i / 70;
    doc.data_ptr<int64_t>()[l + i] = i / 45;
  }
  Tensor kv_doc = doc.clone();
  kv_doc.select(0, 1).masked_fill_(kv_doc.select(0, 1) == 3, 99);
  auto same = [d = flex::capture(doc), kd = flex::capture(kv_doc)](Expr b, Expr, Expr q, Expr kv) {
    return Expr(d[b][q]) == Expr(kd[b][kv]);
  };
  const BlockMask mask = create_block_mask(same, 2, std::nullopt, l, l, 32);
  const int64_t* dp = doc.data_ptr<int64_t>();
  const int64_t* kp = kv_doc.data_ptr<int64_t>();
  Tensor dense = dense_mask(2, 1, l, l, [&](int64_t b, auto, int64_t i, int64_t j) {
    return dp[b * l + i] == kp[b * l + j];
  });
  expect_matches_math(in, {}, mask, dense);
  Tensor out = flex_attention(in.q, in.k, in.v, {}, mask);
  EXPECT_EQ(out.select(0, 1).narrow(1, 135, 45).abs().max().item<double>(), 0.0);  // doc 3
}

TEST(FlexAttention, AlibiSoftCapAndGroupedQuery) {
  manual_seed(3);
  const int64_t l = 150, s = 170, hq = 4;
  const Inputs in = inputs(1, hq, 2, l, s);
  Tensor slopes = tensor(std::vector<double>{0.5, 0.25, 0.125, 0.0625}).to(kFloat64);
  auto alibi = [sl = flex::capture(slopes)](Expr score, Expr, Expr h, Expr q, Expr kv) {
    return score + Expr(sl[h]) * (kv - q);
  };
  Tensor bias = zeros({1, hq, l, s}, f64());
  for (int64_t h = 0; h < hq; ++h)
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = 0; j < s; ++j)
        bias.data_ptr<double>()[(h * l + i) * s + j] = slopes.data_ptr<double>()[h] * (j - i);
  expect_matches_math(in, alibi, std::nullopt, {}, bias, /*gqa=*/true);

  // tanh soft-capping: compared with the capped scores written out densely.
  auto cap = [](Expr score, Expr, Expr, Expr, Expr) { return flex::tanh(score / 3.0) * 3.0; };
  Tensor q = in.q.clone().requires_grad_();
  Tensor out = flex_attention(q, in.k, in.v, cap, std::nullopt, std::nullopt, true);
  out.sum().backward();
  Tensor q2 = in.q.clone().requires_grad_();
  Tensor k = in.k.repeat_interleave(2, 1), v = in.v.repeat_interleave(2, 1);
  Tensor scores = (q2.matmul(k.transpose(-2, -1)) / std::sqrt(8.0) / 3.0).tanh() * 3.0;
  Tensor ref = scores.softmax(-1).matmul(v);
  ref.sum().backward();
  EXPECT_LT((out - ref).abs().max().item<double>(), 1e-10);
  EXPECT_LT((q.grad() - q2.grad()).abs().max().item<double>(), 1e-10);
}

TEST(FlexAttention, LearnableRelativeBiasGetsItsGradientDeterministically) {
  manual_seed(4);
  const int64_t l = 140;
  const Inputs in = inputs(2, 2, 2, l, l);
  Tensor rel = randn({2, 2 * l - 1}, f64()).requires_grad_();
  auto with_bias = [r = flex::capture(rel)](Expr score, Expr, Expr h, Expr q, Expr kv) {
    return score + r[h][q - kv + (l - 1)];
  };
  auto causal = [](Expr, Expr, Expr q, Expr kv) { return q >= kv; };
  const BlockMask mask = create_block_mask(causal, std::nullopt, std::nullopt, l, l, 64);
  Tensor out = flex_attention(in.q, in.k, in.v, with_bias, mask);
  Tensor w = randn(out.sizes().vec(), f64());
  (out * w).sum().backward();
  const Tensor grad = rel.grad().clone();

  // The same bias gathered into a dense [H, L, L] tensor, through sdpa's math backend.
  Tensor rel2 = rel.detach().clone().requires_grad_();
  Tensor idx = (arange(l, TensorOptions(kInt64)).view({l, 1}) -
                arange(l, TensorOptions(kInt64)).view({1, l}) + (l - 1));
  Tensor bias = rel2.index_select(1, idx.reshape({-1})).view({2, l, l}).unsqueeze(0);
  Tensor dense = dense_mask(1, 1, l, l, [](auto, auto, auto i, auto j) { return i >= j; });
  Tensor ref;
  {
    nn::attention::sdpa_kernel math({SDPBackend::math});
    ref = scaled_dot_product_attention(in.q, in.k, in.v,
                                       bias.masked_fill(dense.logical_not(), -INFINITY));
  }
  (ref * w).sum().backward();
  EXPECT_LT((out - ref).abs().max().item<double>(), 1e-10);
  EXPECT_LT((grad - rel2.grad()).abs().max().item<double>(), 1e-10);

  rel.grad().zero_();
  (flex_attention(in.q, in.k, in.v, with_bias, mask) * w).sum().backward();
  EXPECT_TRUE(equal(rel.grad(), grad));  // bit for bit: no atomics
}

// A score_mod may hide keys itself with -inf (no block mask): the same as a causal mask.
TEST(FlexAttention, ScoreModMaskingWithMinusInfinity) {
  manual_seed(7);
  const Inputs in = inputs(1, 2, 2, 100, 100);
  auto causal_scores = [](Expr s, Expr, Expr, Expr q, Expr kv) {
    return flex::where(kv > q, -INFINITY, s);
  };
  expect_matches_math(
      in, causal_scores, std::nullopt,
      dense_mask(1, 1, 100, 100, [](auto, auto, auto i, auto j) { return i >= j; }));
}

TEST(FlexAttention, BroadcastMasksAndReturnLse) {
  manual_seed(5);
  const Inputs in = inputs(2, 3, 3, 90, 90);
  auto head_window = [](Expr, Expr h, Expr q, Expr kv) { return kv <= q + h * 10; };
  const BlockMask per_head = create_block_mask(head_window, std::nullopt, 3, 90, 90, 16);
  EXPECT_EQ(per_head.kinds().sizes().vec(), (std::vector<int64_t>{1, 3, 6, 6}));
  expect_matches_math(in, {}, per_head,
                      dense_mask(1, 3, 90, 90, [](auto, int64_t h, int64_t i, int64_t j) {
                        return j <= i + h * 10;
                      }));
  auto [out, lse] = flex_attention_with_lse(in.q, in.k, in.v);
  Tensor scores = in.q.matmul(in.k.transpose(-2, -1)) / std::sqrt(8.0);
  EXPECT_LT((lse - scores.logsumexp({-1})).abs().max().item<double>(), 1e-12);
}

TEST(FlexAttention, SixteenBitAndCompiled) {
  manual_seed(6);
  Tensor q = randn({1, 2, 130, 16}), k = randn({1, 2, 130, 16}), v = randn({1, 2, 130, 16});
  auto causal = [](Expr, Expr, Expr q, Expr kv) { return q >= kv; };
  const BlockMask mask = create_block_mask(causal, std::nullopt, std::nullopt, 130, 130);
  const Tensor ref = flex_attention(q, k, v, {}, mask);
  const Tensor low = flex_attention(q.to(kBFloat16), k.to(kBFloat16), v.to(kBFloat16), {}, mask);
  EXPECT_EQ(low.dtype(), kBFloat16);
  EXPECT_LT((low.to(kFloat32) - ref).abs().max().item<double>(), 0.05);
  auto f = compile([&](const Tensor& a, const Tensor& b, const Tensor& c) {
    return flex_attention(a, b, c, {}, mask) * 2;
  });
  EXPECT_LT((f(q, k, v) - ref * 2).abs().max().item<double>(), 1e-6);
  EXPECT_LT((f(q, k, v) - ref * 2).abs().max().item<double>(), 1e-6);
  EXPECT_EQ(f.compilations(), 1);
}

TEST(BlockMask, TablesSparsityAndCombinators) {
  auto causal = [](Expr, Expr, Expr q, Expr kv) { return q >= kv; };
  auto window = [](Expr, Expr, Expr q, Expr kv) { return q - kv < 256; };
  const BlockMask m =
      create_block_mask(and_masks({causal, window}), std::nullopt, std::nullopt, 1024, 1024);
  // Blocks of 128: the diagonal is partial, the one below it too (the window's edge), the rest
  // empty.
  EXPECT_EQ(m.kv_num_blocks.sizes().vec(), (std::vector<int64_t>{1, 1, 8}));
  EXPECT_EQ(m.kv_num_blocks.select(2, 3).item<int64_t>(), 2);
  EXPECT_EQ(m.full_kv_num_blocks.select(2, 3).item<int64_t>(), 1);
  EXPECT_EQ(m.kv_indices.select(2, 3)
                .narrow(-1, 0, 2)
                .contiguous()
                .view({2})
                .to(kInt64)
                .sum()
                .item<int64_t>(),
            3 + 1);
  EXPECT_NEAR(m.sparsity(), 100.0 * (64 - 8 - 7 - 6) / 64, 1e-9);
  EXPECT_EQ(m.to_dense().sum().item<int64_t>(), 8 + 7 + 6);
  EXPECT_NE(m.to_string().find("sparsity"), std::string::npos);
  const BlockMask any = create_block_mask(or_masks({causal, noop_mask}), 1, 1, 300, 300);
  EXPECT_EQ(any.sparsity(), 0.0);
  EXPECT_EQ(any.full_kv_num_blocks.sum().item<int64_t>(), 9);
  // A 32k x 32k causal mask is decided by interval arithmetic, block by block.
  const BlockMask big = create_block_mask(causal, std::nullopt, std::nullopt, 32768, 32768);
  EXPECT_NEAR(big.sparsity(), 100.0 * (256.0 * 256 - 256 * 257 / 2) / (256.0 * 256), 1e-9);
}

TEST(FlexAttention, ErrorsNameTheProblem) {
  Tensor q = randn({1, 1, 10, 4}), k = randn({1, 1, 10, 4}), v = randn({1, 1, 10, 4});
  auto causal = [](Expr, Expr, Expr q, Expr kv) { return q >= kv; };
  const BlockMask other = create_block_mask(causal, std::nullopt, std::nullopt, 20, 20);
  EXPECT_TRUE(testing::raises([&] { flex_attention(q, k, v, {}, other); }, "flex_attention",
                              "the block mask was made for lengths 20 and 20"));
  Tensor table = zeros({5});
  auto out_of_range = [t = flex::capture(table)](Expr s, Expr, Expr, Expr q, Expr) {
    return s + t[q];
  };
  EXPECT_TRUE(
      testing::raises([&] { flex_attention(q, k, v, out_of_range); }, "flex_attention",
                      "index 5 is out of range for dim 0 of a captured tensor of shape [5]"));
  // An integer index beyond int64's range (q = 3 gives 1.2e19) is an error too: it used to reach
  // a float-to-int64 cast that overflows (undefined behaviour).
  auto huge_index = [t = flex::capture(table)](Expr s, Expr, Expr, Expr q, Expr) {
    return s + t[q * int64_t{4000000000000000000}];
  };
  EXPECT_TRUE(testing::raises([&] { flex_attention(q, k, v, huge_index); }, "flex_attention",
                              "is out of range for dim 0 of a captured tensor of shape [5]"));
  auto float_index = [t = flex::capture(table)](Expr s, Expr, Expr, Expr q, Expr) {
    return s + t[q * 0.5];
  };
  EXPECT_TRUE(testing::raises([&] { flex_attention(q, k, v, float_index); }, "flex_attention",
                              "indexed with a float Expr"));
  auto number_mask = [](Expr, Expr, Expr q, Expr) { return q + 1; };
  EXPECT_TRUE(testing::raises([&] { create_block_mask(number_mask, 1, 1, 8, 8); },
                              "create_block_mask", "a mask_mod must return a bool Expr"));
  EXPECT_TRUE(testing::raises([] { Expr(1.0); }, "flex::Expr", "used outside a score_mod"));
}

TEST(FlexExpr, TextRoundTripsAndHostileTextIsRejected) {
  Tensor table = zeros({4, 3});
  auto f = [t = flex::capture(table)](Expr s, Expr b, Expr h, Expr q, Expr kv) {
    return flex::where(q % 3 == 1, s * 2 + Expr(t[h][floor_divide(kv, 2)]),
                       flex::where(kv > q, -INFINITY, flex::exp2(-s)));
  };
  const flex::Traced traced = flex::trace(flex::ScoreMod(f), "test");
  const std::string text = traced.graph->to_string();
  EXPECT_EQ(flex::Graph::parse(text).to_string(), text);
  for (const char* bad :
       {"captured 0\n%0 = add float %0 %0\nreturn %0\n", "captured 0\n%0 = q_idx int\nreturn %3\n",
        "captured 0\n%0 = load float t0 %0\nreturn %0\n",
        "captured 0\n%0 = frobnicate int\nreturn %0\n", "captured 0\n%0 = q_idx int\n",
        "captured 0\n%0 = add float %1\nreturn %0\n"})
    EXPECT_TRUE(testing::raises([&] { flex::Graph::parse(bad); }, "flex::Graph::parse", "")) << bad;
  // A long damaged line is quoted by its start and length, not whole (the fuzzer found a 5 KB
  // message).
  const std::string long_line = "captured 0\n%0 = q_idx int " + std::string(5000, 'x') + "\n";
  const std::string message = testing::error_message([&] { flex::Graph::parse(long_line); });
  EXPECT_NE(message.find("...' (5015 bytes)"), std::string::npos) << message;
  EXPECT_LT(message.size(), 400u);
}

}  // namespace
}  // namespace kiln

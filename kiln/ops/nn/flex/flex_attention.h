#pragma once
// flex_attention: scaled dot-product attention whose scores a C++ score_mod rewrites and whose
// keys a block mask's mask_mod hides, computed by the CPU flash kernel (docs/attention.md):
//
//   auto causal = [](flex::Expr, flex::Expr, flex::Expr q, flex::Expr kv) { return q >= kv; };
//   BlockMask mask = create_block_mask(causal, std::nullopt, std::nullopt, L, L);
//   Tensor y = flex_attention(q, k, v, soft_cap, mask);
#include <optional>
#include <tuple>

#include "kiln/ops/nn/flex/block_mask.h"
#include "kiln/ops/nn/flex/expr.h"

namespace kiln {

// query [B, Hq, L, E], key [B, Hkv, S, E], value [B, Hkv, S, Ev] (Hq == Hkv unless enable_gqa);
// the block mask's shape must be [B or 1, Hq or 1, L, S]. scale defaults to 1 / sqrt(E).
Tensor flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                      const flex::ScoreMod& score_mod = {},
                      const std::optional<BlockMask>& block_mask = std::nullopt,
                      std::optional<double> scale = std::nullopt, bool enable_gqa = false);

// flex_attention with return_lse: the output and each query row's log-sum-exp of the modified
// scores ([B, Hq, L], float32 or float64; -inf where a row sees no key), both differentiable.
std::tuple<Tensor, Tensor> flex_attention_with_lse(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const flex::ScoreMod& score_mod = {}, const std::optional<BlockMask>& block_mask = std::nullopt,
    std::optional<double> scale = std::nullopt, bool enable_gqa = false);

}  // namespace kiln

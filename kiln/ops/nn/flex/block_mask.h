#pragma once
// PyTorch's BlockMask: which (query block, key block) pairs of an attention have no visible key
// (skipped), some (mask_mod evaluated), or all (mask_mod skipped), built by create_block_mask
// from a mask_mod over the whole [Q_LEN, KV_LEN] grid, per batch and head (or broadcast over
// them).
#include <optional>
#include <string>
#include <vector>

#include "kiln/ops/nn/flex/expr.h"

namespace kiln {

class BlockMask {
 public:
  enum Block : uint8_t { kEmpty = 0, kPartial = 1, kFull = 2 };

  // kinds: uint8 [B, H, q_blocks, kv_blocks] of Block values.
  BlockMask(Tensor kinds, int64_t q_len, int64_t kv_len, int64_t q_block_size,
            int64_t kv_block_size, flex::MaskMod mask_mod);

  const Tensor& kinds() const { return kinds_; }
  int64_t q_len() const { return q_len_; }
  int64_t kv_len() const { return kv_len_; }
  int64_t q_block_size() const { return q_block_size_; }
  int64_t kv_block_size() const { return kv_block_size_; }
  const flex::MaskMod& mask_mod() const { return mask_mod_; }
  std::vector<int64_t> shape() const;  // {B, H, q_len, kv_len}

  // PyTorch's index tables (int32): per query block, the number and indices of its partial key
  // blocks ([B, H, q_blocks], [B, H, q_blocks, kv_blocks], indices first, then zeros), the same for
  // full blocks, and per key block the query blocks (the backward's view).
  Tensor kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices;
  Tensor q_num_blocks, q_indices, full_q_num_blocks, full_q_indices;

  // Percent of blocks skipped.
  double sparsity() const;
  // int32 [B, H, q_blocks, kv_blocks]: 1 where a block is computed.
  Tensor to_dense() const;
  // A picture of each (b, h): "██" full, "░░" partial, "  " skipped blocks.
  std::string to_string() const;

 private:
  Tensor kinds_;
  int64_t q_len_, kv_len_, q_block_size_, kv_block_size_;
  flex::MaskMod mask_mod_;
};

// mask_mod evaluated over [B, H, Q_LEN, KV_LEN] by blocks of BLOCK_SIZE (B or H nullopt: the
// mask does not depend on it and broadcasts). Blocks whose answer interval arithmetic decides
// (causal, sliding windows, prefixes) cost nothing; the others are evaluated element by element.
BlockMask create_block_mask(const flex::MaskMod& mask_mod, std::optional<int64_t> B,
                            std::optional<int64_t> H, int64_t Q_LEN, int64_t KV_LEN,
                            int64_t BLOCK_SIZE = 128);
BlockMask create_block_mask(const flex::MaskMod& mask_mod, std::optional<int64_t> B,
                            std::optional<int64_t> H, int64_t Q_LEN, int64_t KV_LEN,
                            std::pair<int64_t, int64_t> BLOCK_SIZE);

// Masks combined: a key is visible where every (and_masks) or any (or_masks) mask shows it;
// noop_mask shows every key.
flex::MaskMod and_masks(std::vector<flex::MaskMod> masks);
flex::MaskMod or_masks(std::vector<flex::MaskMod> masks);
flex::Expr noop_mask(flex::Expr b, flex::Expr h, flex::Expr q_idx, flex::Expr kv_idx);

}  // namespace kiln

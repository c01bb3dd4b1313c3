#include "kiln/ops/nn/flex/block_mask.h"

#include <sstream>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/core/error.h"
#include "kiln/ops/nn/flex/expr_bounds.h"
#include "kiln/ops/nn/flex/tables.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

constexpr const char* kOp = "create_block_mask";

// The per-row counts and indices of one block kind, along the last dim of kinds [B, H, R, C]
// (indices first, zeros after), as int32.
std::pair<Tensor, Tensor> index_table(const Tensor& kinds, uint8_t kind) {
  const int64_t rows = kinds.numel() / std::max<int64_t>(kinds.size(-1), 1), cols = kinds.size(-1);
  std::vector<int64_t> lead = kinds.sizes().vec();
  lead.pop_back();
  Tensor num = zeros(lead, TensorOptions(kInt32));
  Tensor idx = zeros(kinds.sizes().vec(), TensorOptions(kInt32));
  const uint8_t* k = kinds.data_ptr<uint8_t>();
  int32_t* n = num.data_ptr<int32_t>();
  int32_t* ix = idx.data_ptr<int32_t>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      if (k[r * cols + c] == kind) ix[r * cols + n[r]++] = static_cast<int32_t>(c);
  return {num, idx};
}

}  // namespace

BlockMask::BlockMask(Tensor kinds, int64_t q_len, int64_t kv_len, int64_t q_block_size,
                     int64_t kv_block_size, flex::MaskMod mask_mod)
    : kinds_(std::move(kinds)),
      q_len_(q_len),
      kv_len_(kv_len),
      q_block_size_(q_block_size),
      kv_block_size_(kv_block_size),
      mask_mod_(std::move(mask_mod)) {
  std::tie(kv_num_blocks, kv_indices) = index_table(kinds_, kPartial);
  std::tie(full_kv_num_blocks, full_kv_indices) = index_table(kinds_, kFull);
  const Tensor by_key = kinds_.transpose(-2, -1).contiguous();
  std::tie(q_num_blocks, q_indices) = index_table(by_key, kPartial);
  std::tie(full_q_num_blocks, full_q_indices) = index_table(by_key, kFull);
}

std::vector<int64_t> BlockMask::shape() const {
  return {kinds_.size(0), kinds_.size(1), q_len_, kv_len_};
}

double BlockMask::sparsity() const {
  const int64_t total = kinds_.numel();
  if (total == 0) return 0;
  const int64_t computed = (kinds_ != 0).sum().item<int64_t>();
  return 100.0 * static_cast<double>(total - computed) / static_cast<double>(total);
}

Tensor BlockMask::to_dense() const { return (kinds_ != 0).to(kInt32); }

std::string BlockMask::to_string() const {
  std::ostringstream os;
  os << "BlockMask(shape=(" << kinds_.size(0) << ", " << kinds_.size(1) << ", " << q_len_ << ", "
     << kv_len_ << "), sparsity=" << sparsity() << "%,\n";
  const int64_t qb = kinds_.size(2), kb = kinds_.size(3);
  const uint8_t* k = kinds_.data_ptr<uint8_t>();
  for (int64_t bh = 0; bh < kinds_.size(0) * kinds_.size(1); ++bh) {
    os << "(" << bh / kinds_.size(1) << ", " << bh % kinds_.size(1) << ")\n";
    for (int64_t r = 0; r < qb; ++r) {
      for (int64_t c = 0; c < kb; ++c) {
        const uint8_t kind = k[(bh * qb + r) * kb + c];
        os << (kind == kFull ? "██" : kind == kPartial ? "░░" : "  ");
      }
      os << "\n";
    }
  }
  os << ")";
  return os.str();
}

BlockMask create_block_mask(const flex::MaskMod& mask_mod, std::optional<int64_t> B,
                            std::optional<int64_t> H, int64_t Q_LEN, int64_t KV_LEN,
                            int64_t BLOCK_SIZE) {
  return create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, {BLOCK_SIZE, BLOCK_SIZE});
}

BlockMask create_block_mask(const flex::MaskMod& mask_mod, std::optional<int64_t> B,
                            std::optional<int64_t> H, int64_t Q_LEN, int64_t KV_LEN,
                            std::pair<int64_t, int64_t> BLOCK_SIZE) {
  const int64_t batch = B.value_or(1), heads = H.value_or(1);
  const auto [qbs, kbs] = BLOCK_SIZE;
  KILN_CHECK(batch >= 1 && heads >= 1 && Q_LEN >= 0 && KV_LEN >= 0, kOp,
             ": expected B, H >= 1 and Q_LEN, KV_LEN >= 0, got B=", batch, ", H=", heads,
             ", Q_LEN=", Q_LEN, ", KV_LEN=", KV_LEN);
  KILN_CHECK(qbs >= 1 && kbs >= 1, kOp, ": expected a positive BLOCK_SIZE, got (", qbs, ", ", kbs,
             ")");
  KILN_CHECK(static_cast<bool>(mask_mod), kOp, ": expected a mask_mod");
  const flex::Traced traced = flex::trace(mask_mod, kOp);
  const std::vector<Tensor> dense = flex::dense_tables(traced.captured, kFloat64);
  const std::vector<flex::Table<double>> tables = flex::tables_of<double>(dense);
  const flex::TileEvaluator<double> exact(*traced.graph, tables, kOp);
  const int64_t q_blocks = (Q_LEN + qbs - 1) / qbs, kv_blocks = (KV_LEN + kbs - 1) / kbs;
  Tensor kinds = empty({batch, heads, q_blocks, kv_blocks}, TensorOptions(kUInt8));
  uint8_t* out = kinds.data_ptr<uint8_t>();
  cpu::parallel_for(0, batch * heads * q_blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> values;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bh = t / q_blocks, i0 = t % q_blocks * qbs, m = std::min(qbs, Q_LEN - i0);
      const int64_t b = bh / heads, h = bh % heads;
      for (int64_t kb = 0; kb < kv_blocks; ++kb) {
        const int64_t j0 = kb * kbs, nb = std::min(kbs, KV_LEN - j0);
        const flex::Interval r =
            flex::bounds(*traced.graph, tables, b, h, i0, i0 + m - 1, j0, j0 + nb - 1);
        uint8_t kind;
        if (r.lo > 0 || r.hi < 0) {
          kind = BlockMask::kFull;
        } else if (r.lo == 0 && r.hi == 0) {
          kind = BlockMask::kEmpty;
        } else {
          values.resize(m * nb);
          exact.evaluate(b, h, i0, m, j0, nb, nullptr, values.data());
          int64_t shown = 0;
          for (double v : values) shown += v != 0;
          kind = shown == 0        ? BlockMask::kEmpty
                 : shown == m * nb ? BlockMask::kFull
                                   : BlockMask::kPartial;
        }
        out[t * kv_blocks + kb] = kind;
      }
    }
  });
  return BlockMask(std::move(kinds), Q_LEN, KV_LEN, qbs, kbs, mask_mod);
}

flex::MaskMod and_masks(std::vector<flex::MaskMod> masks) {
  return [masks = std::move(masks)](flex::Expr b, flex::Expr h, flex::Expr q, flex::Expr kv) {
    flex::Expr all = true;
    for (const auto& m : masks) all = all & m(b, h, q, kv);
    return all;
  };
}

flex::MaskMod or_masks(std::vector<flex::MaskMod> masks) {
  return [masks = std::move(masks)](flex::Expr b, flex::Expr h, flex::Expr q, flex::Expr kv) {
    flex::Expr any = false;
    for (const auto& m : masks) any = any | m(b, h, q, kv);
    return any;
  };
}

flex::Expr noop_mask(flex::Expr, flex::Expr, flex::Expr, flex::Expr) { return true; }

}  // namespace kiln

#pragma once
// The mode a vmap puts on the dispatch stack for the length of its call: it takes apart the
// tensors batched at its level and computes each op for the whole batch (batching_rules.h).
#include "kiln/core/dispatch.h"
#include "kiln/func/vmap_flat.h"

namespace kiln::func::detail {

class VmapMode final : public DispatchMode {
 public:
  VmapMode(int64_t level, int64_t batch_size, Randomness randomness)
      : level_(level), batch_size_(batch_size), randomness_(randomness) {}
  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override;

 private:
  std::vector<Tensor> batch(const OpDef& op, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& values,
                            const std::vector<std::optional<int64_t>>& bdims,
                            const Attrs& attrs) const;

  int64_t level_;
  int64_t batch_size_;
  Randomness randomness_;
};

}  // namespace kiln::func::detail

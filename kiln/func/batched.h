#pragma once
// vmap's batched tensor (ARCHITECTURE.md §4-§5): a meta TensorImpl with the logical sizes (the
// physical sizes less the batch dim) whose extension holds the physical tensor. Each vmap has a
// level; a tensor batched at level L is taken apart only by the vmap of level L, so that nested
// vmaps (and grad inside or outside them) each see their own batch.
#include <cstdint>
#include <optional>

#include "kiln/core/tensor.h"

namespace kiln::func::detail {

struct Batched final : TensorExtension {
  Batched(Tensor value, int64_t bdim, int64_t level)
      : value(std::move(value)), bdim(bdim), level(level) {}
  std::string describe() const override;

  Tensor value;  // the physical tensor: the logical one with the batch at bdim
  int64_t bdim;
  int64_t level;
};

// The tensor of logical sizes value.sizes() less bdim, batched at `level`.
Tensor make_batched(Tensor value, int64_t bdim, int64_t level);
// t's batch at `level`, or null when t is not batched there (unbatched, or another level's).
const Batched* batched_at(const Tensor& t, int64_t level);

// The levels of the transforms now running on this thread (vmap's; grad needs none, see
// autodiff.cpp): each vmap takes the next one for the length of its call.
class LevelGuard {
 public:
  LevelGuard();
  ~LevelGuard();
  LevelGuard(const LevelGuard&) = delete;
  LevelGuard& operator=(const LevelGuard&) = delete;
  int64_t level() const { return level_; }

 private:
  int64_t level_;
};

}  // namespace kiln::func::detail

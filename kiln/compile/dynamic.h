#pragma once
// mark_dynamic / mark_static: per-tensor hints that the next capture reads (PyTorch's
// torch._dynamo.mark_dynamic and mark_static).
#include <cstdint>
#include <optional>

#include "kiln/core/tensor.h"

namespace kiln::compiler {

// Dim `dim` of t is symbolic when a function is captured with t as an argument, with values in
// [min, max] (min defaults to 2: sizes 0 and 1 specialise, as in PyTorch).
void mark_dynamic(const Tensor& t, int64_t dim, std::optional<int64_t> min = std::nullopt,
                  std::optional<int64_t> max = std::nullopt);
// Dim `dim` of t is specialised even under dynamic=true or automatic dynamic.
void mark_static(const Tensor& t, int64_t dim);

// What the marks say about one dim (for the capture).
struct DimMark {
  bool dynamic = false;  // false: static
  int64_t min = 2, max = INT64_MAX;
};
std::optional<DimMark> dim_mark(const Tensor& t, int64_t dim);

}  // namespace kiln::compiler

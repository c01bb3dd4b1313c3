#pragma once
// Copies whose source is a transpose or permute of the destination's layout.
#include "kiln/core/tensor.h"

namespace kiln::cpu {

// Copies src into dst (same dtype and sizes, dst contiguous) when src's innermost dim is
// strided but another of its dims is dense, as in x.t().contiguous(): element by element, every
// read or every write would touch a new cache line; here the two dims are walked in square
// tiles, so both stay within a tile's lines. Returns false, copying nothing, for other layouts.
bool copy_transposed(const Tensor& dst, const Tensor& src);

}  // namespace kiln::cpu

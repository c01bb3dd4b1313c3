#pragma once
// CUDA kernels for empty, fill_, full, arange, tril, triu, cat, slice/select/diagonal_backward and
// scaled_dot_product_attention's math path (composite.cpp).

namespace kiln::cuda {

void register_composite_kernels();

}  // namespace kiln::cuda

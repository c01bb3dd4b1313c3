#pragma once
// Sparse CSR tensors and sparse-dense products (the GNN message-passing primitive).
//   Tensor a = kiln::sparse_csr_tensor(crow, col, values, {rows, cols});
//   Tensor y = kiln::sparse::mm(a, x, "sum");   // y[i] = sum_j a[i, j] * x[j]
// x.to_sparse_csr(), a.to_dense(), a.crow_indices(), a.col_indices(), a.values() as in PyTorch.
#include <string>

#include "kiln/core/tensor.h"

namespace kiln {

// Checks the structure (monotone crow_indices from 0 to nnz, columns in range) and builds the
// tensor; values may require grad (sparse::mm and to_dense pass gradients to them).
Tensor sparse_csr_tensor(const Tensor& crow_indices, const Tensor& col_indices,
                         const Tensor& values, IntArrayRef size);

namespace sparse {

// out[i, :] = reduce over the stored entries j of row i of (values[j] * dense[col[j], :]), with
// reduce "sum", "mean", "amax" or "amin"; rows without entries give 0. Gradients flow to dense
// and to the CSR values (for every reduction; amax/amin route them to the selected entry).
Tensor mm(const Tensor& sparse, const Tensor& dense, const std::string& reduce = "sum");

}  // namespace sparse
}  // namespace kiln

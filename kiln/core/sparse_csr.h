#pragma once
// Sparse CSR tensors (PyTorch's torch.sparse_csr layout): a 2-D matrix stored as
// crow_indices [rows + 1] (where each row's entries start), col_indices [nnz] and values [nnz].
// The Tensor handle is an ordinary kiln::Tensor whose TensorImpl has Layout::SparseCsr and holds
// the three component tensors; ops that only take dense tensors reject it by name.
#include "kiln/core/tensor.h"
#include "kiln/core/tensor_impl.h"

namespace kiln {

class SparseCsrTensorImpl : public TensorImpl {
 public:
  SparseCsrTensorImpl(Tensor crow_indices, Tensor col_indices, Tensor values, SymShape size);

  const Tensor& crow_indices() const { return crow_indices_; }
  const Tensor& col_indices() const { return col_indices_; }
  const Tensor& values() const { return values_; }

 private:
  Tensor crow_indices_, col_indices_, values_;
};

// The CSR impl of `t`, or an error naming `op` when t is not sparse CSR.
const SparseCsrTensorImpl& sparse_csr_impl(const Tensor& t, const char* op);

}  // namespace kiln

#include "kiln/core/sparse_csr.h"

#include "kiln/core/error.h"

namespace kiln {

SparseCsrTensorImpl::SparseCsrTensorImpl(Tensor crow_indices, Tensor col_indices, Tensor values,
                                         SymShape size)
    : TensorImpl(StorageImpl::meta(values.device()), values.dtype(), std::move(size), SymShape{}),
      crow_indices_(std::move(crow_indices)),
      col_indices_(std::move(col_indices)),
      values_(std::move(values)) {
  set_layout(Layout::SparseCsr);
}

const SparseCsrTensorImpl& sparse_csr_impl(const Tensor& t, const char* op) {
  KILN_CHECK(t.defined() && t.impl()->layout() == Layout::SparseCsr, op,
             ": expected a sparse CSR tensor, got ",
             t.defined() ? "a strided (dense) tensor" : "an undefined tensor");
  return static_cast<const SparseCsrTensorImpl&>(*t.impl());
}

}  // namespace kiln

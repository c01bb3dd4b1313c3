#pragma once
// CSR x dense products: out[i, :] = reduce_j values[j] * dense[col[j], :] over row i's entries.
#include <cstdint>

#include "kiln/core/tensor.h"

namespace kiln::cpu {

enum class SpmmReduce { Sum, Mean, Max, Min };

// crow [rows + 1], col [nnz] int64 contiguous; values [nnz], dense [K, F] contiguous with out's
// dtype (float32 or float64); out [rows, F]; arg [rows, F] (int32, or int64 when nnz needs it)
// receives the chosen entry for Max/Min (-1 for empty rows) and is ignored otherwise.
void spmm(const Tensor& crow, const Tensor& col, const Tensor& values, const Tensor& dense,
          SpmmReduce reduce, Tensor& out, Tensor& arg);

}  // namespace kiln::cpu

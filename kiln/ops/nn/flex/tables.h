#pragma once
// Captured tensors as the expression evaluator reads them: dense copies in the compute dtype.
#include <vector>

#include "kiln/ops/nn/flex/expr_eval.h"

namespace kiln::flex {

std::vector<Tensor> dense_tables(const std::vector<Tensor>& captured, ScalarType dtype);

template <class T>
std::vector<Table<T>> tables_of(const std::vector<Tensor>& dense) {
  std::vector<Table<T>> tables;
  for (const Tensor& t : dense) tables.push_back({t.data_ptr<T>(), t.sizes().vec()});
  return tables;
}

}  // namespace kiln::flex

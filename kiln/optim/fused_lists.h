#pragma once
// What the fused optimizer ops (_fused_adam_, _fused_adamw_, _fused_sgd_) share: their inputs
// are lists of equal length, list k holding tensor i at in[k * n + i], the first list the
// parameters, the second their gradients and the rest their state.
#include <cstdint>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

struct TensorLists {
  int64_t n;  // tensors per list
  size_t at(int list, int64_t i) const { return static_cast<size_t>(list * n + i); }
};

// Checks that `in` holds names.size() lists and that `steps` has one count (>= 1) per parameter.
TensorLists tensor_lists(const char* op, const std::vector<Tensor>& in,
                         const std::vector<const char*>& names, const std::vector<int64_t>& steps);

// The meta function's checks (floating point parameters on one device; gradients shaped like
// them in their dtype; state in their compute dtype) and its outputs: the tensors of the lists
// `written`, in place.
std::vector<TensorSpec> tensor_lists_meta(const char* op, const std::vector<Tensor>& in,
                                          const std::vector<const char*>& names,
                                          const std::vector<int64_t>& steps,
                                          const std::vector<int>& written);

// A state tensor to update in place on the CPU: itself when contiguous, else a contiguous copy
// that write_back copies into it.
Tensor dense_state(const Tensor& t);
void write_back(const Tensor& t, const Tensor& work);

// The lists' tensors one after another, as the ops take them.
std::vector<Tensor> concat_lists(std::initializer_list<const std::vector<Tensor>*> lists);

}  // namespace kiln

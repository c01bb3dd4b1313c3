#pragma once
// SavedTensor: a tensor kept for backward. It remembers the storage version it was saved at, so
// a later in-place change is reported instead of silently giving wrong gradients, and it keeps
// an op's own outputs without a reference cycle (output -> grad_fn -> saved output).
#include <memory>

#include "kiln/core/tensor.h"

namespace kiln::autograd {

class Node;

class SavedTensor {
 public:
  SavedTensor() = default;
  // `is_output`: t is an output of the node that saves it (kept as a detached alias).
  SavedTensor(const Tensor& t, bool is_output);
  // The tensor, re-attached to `owner` when it was one of owner's outputs; throws if the
  // storage was modified in place since it was saved, or if the graph was freed.
  Tensor unpack(const std::shared_ptr<Node>& owner, const char* who) const;
  bool defined() const { return defined_; }
  void reset() {
    data_ = Tensor();
    released_ = true;
  }
  Tensor& raw() { return data_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool defined_ = false;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
};

}  // namespace kiln::autograd

#pragma once
// Multi-tensor apply for the CUDA backend, as PyTorch's: one launch updates a list of tensors
// (an optimizer's parameters with their gradients and state). Each tensor's addresses, size and
// two scalars travel in a table passed by value as a kernel argument (under the 4 KiB every
// CUDA version accepts), so a CUDA graph captures the launch; blockIdx.y picks the entry and
// the x blocks stride over its elements.
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/backend/cuda/op_util.h"

namespace kiln::cuda {

constexpr int kTensorListEntries = 56;  // 64 bytes each: 3584 of the 4096 bytes of arguments

struct TensorListEntry {
  void* t[5] = {};   // the entry's tensors, dense (the kernel knows their types)
  int64_t n = 0;     // elements of each
  double s[2] = {};  // per-tensor scalars (Adam's bias corrections)
};

// The device side of TensorListEntry and the table, for a kernel's source: `struct Entry` and
// `struct TensorLists { Entry e[...]; }`; a kernel takes (TensorLists lists, int count, ...).
std::string tensor_lists_prelude();

// Launches fn(lists, count, *args...) over `entries`, kTensorListEntries per launch.
void launch_tensor_lists(const std::string& op, int dev, cudaKernel_t fn,
                         const std::vector<TensorListEntry>& entries, std::vector<void*> args);

// An op's inputs as lists of n tensors (list k, tensor i = in[k * n + i]), with the tensors of
// the lists an update writes made dense: data() points at what the kernel reads and writes, and
// finish() copies results back into tensors that were not dense.
class DenseTensorLists {
 public:
  DenseTensorLists(const std::vector<Tensor>& in, int64_t n, int lists,
                   const std::vector<int>& written);
  void* data(int list, int64_t i) const;
  int64_t numel(int64_t i) const { return dense_[i].numel(); }
  void finish() const;

 private:
  const std::vector<Tensor>& in_;
  int64_t n_;
  std::vector<int> written_;
  std::vector<Tensor> dense_;  // [list * n + i]
};

}  // namespace kiln::cuda

#include "kiln/backend/cuda/tensor_lists.h"

#include <algorithm>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"

namespace kiln::cuda {
namespace {

constexpr unsigned kThreads = 256;

struct Table {
  TensorListEntry e[kTensorListEntries];
};
static_assert(sizeof(TensorListEntry) == 64 && sizeof(Table) + 256 <= 4096);

}  // namespace

std::string tensor_lists_prelude() {
  return "struct Entry {\n  void* t[5];\n  int64_t n;\n  double s[2];\n};\n"
         "struct TensorLists {\n  Entry e[" +
         std::to_string(kTensorListEntries) + "];\n};\n";
}

void launch_tensor_lists(const std::string& op, int dev, cudaKernel_t fn,
                         const std::vector<TensorListEntry>& entries, std::vector<void*> args) {
  Table table;
  int count = 0;
  args.insert(args.begin(), {&table, &count});
  for (size_t begin = 0; begin < entries.size(); begin += kTensorListEntries) {
    count = static_cast<int>(std::min<size_t>(kTensorListEntries, entries.size() - begin));
    int64_t longest = 0;
    for (int k = 0; k < count; ++k) {
      table.e[k] = entries[begin + k];
      longest = std::max(longest, table.e[k].n);
    }
    // Enough blocks along x for the longest tensor, but about 16 per multiprocessor in all.
    const int64_t want = (longest + kThreads * 4 - 1) / (kThreads * 4);
    const int64_t cap = std::max<int64_t>(1, int64_t{multiprocessors(dev)} * 16 / count);
    const dim3 grid(static_cast<unsigned>(std::clamp<int64_t>(want, 1, cap)),
                    static_cast<unsigned>(count));
    launch_kernel(op, fn, grid, dim3(kThreads), args.data());
  }
}

DenseTensorLists::DenseTensorLists(const std::vector<Tensor>& in, int64_t n, int lists,
                                   const std::vector<int>& written)
    : in_(in), n_(n), written_(written) {
  dense_.reserve(static_cast<size_t>(lists * n));
  for (int64_t j = 0; j < lists * n; ++j) dense_.push_back(in[j].contiguous());
}

void* DenseTensorLists::data(int list, int64_t i) const { return dense_[list * n_ + i].data_ptr(); }

void DenseTensorLists::finish() const {
  for (int k : written_)
    for (int64_t i = 0; i < n_; ++i) {
      const size_t j = static_cast<size_t>(k * n_ + i);
      if (!dense_[j].is_same(in_[j])) in_[j].copy_(dense_[j]);
    }
}

}  // namespace kiln::cuda

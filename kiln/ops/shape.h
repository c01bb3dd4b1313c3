#pragma once
// Views and shape ops. Views (view, expand, slice, select, permute, squeeze, diagonal, unfold,
// as_strided, ...) share the input's storage; cat, stack, flip, roll, repeat, tile,
// repeat_interleave, tril, triu and pad copy. Basic indexing (x.index(...)) is in indexing.h.
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/indexing.h"

namespace kiln {

// ---- views ----
Tensor view(const Tensor& self, SymIntList size);
Tensor reshape(const Tensor& self, SymIntList size);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& self, int64_t dim, SymIntList sizes);
Tensor expand(const Tensor& self, SymIntList size);
Tensor broadcast_to(const Tensor& self, SymIntList size);
Tensor slice(const Tensor& self, int64_t dim, std::optional<SymInt> start,
             std::optional<SymInt> end, SymInt step = 1);
Tensor narrow(const Tensor& self, int64_t dim, SymInt start, SymInt length);
Tensor select(const Tensor& self, int64_t dim, SymInt index);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& self);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination);
Tensor moveaxis(const Tensor& self, IntArrayRef source, IntArrayRef destination);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, IntArrayRef dims);
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor as_strided(const Tensor& self, SymIntList size, SymIntList stride,
                  std::optional<SymInt> storage_offset = std::nullopt);
// A contiguous copy of self with the elements at the geometry replaced by src (not a view).
Tensor as_strided_scatter(const Tensor& self, const Tensor& src, SymIntList size,
                          SymIntList stride, SymInt storage_offset = 0);

// ---- splitting (views of the input) ----
// chunk(5 elements, 3) gives sizes 2, 2, 1; it can give fewer chunks than asked, as PyTorch.
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, SymInt split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);

// ---- copies ----
// Inputs are promoted to a common dtype; 1-D empty tensors are skipped, as in PyTorch.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor concatenate(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor flip(const Tensor& self, IntArrayRef dims);
// Without dims, the tensor is rolled as if flattened.
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
Tensor repeat(const Tensor& self, SymIntList repeats);
Tensor tile(const Tensor& self, SymIntList reps);
// Without dim, the input is flattened first and the result is 1-D.
Tensor repeat_interleave(const Tensor& self, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt);
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor triu(const Tensor& self, int64_t diagonal = 0);
// pad lists (left, right) pairs starting from the last dim: {1, 2} pads the last dim by 1 before
// and 2 after; {1, 1, 2, 2} also pads the dim before it by 2. mode: "constant" (value, default 0;
// negative amounts crop), "reflect" or "replicate".
Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);
// libtorch's name for constant padding.
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value = 0);

// Sums `self` down to `size` (the reverse of broadcasting), as torch's sum_to_size.
Tensor sum_to_size(const Tensor& self, SymIntList size);

// The strides a view of `sizes` would have over a tensor with (old_sizes, old_strides), or
// nullopt when no such view exists (PyTorch's computeStride).
std::optional<SymShape> view_strides(const SymShape& old_sizes, const SymShape& old_strides,
                                     const SymShape& sizes);
// Replaces one -1 in `size` by what makes the element count equal `numel`.
SymShape infer_size(const char* op, const SymShape& size, const SymInt& numel);

}  // namespace kiln

#pragma once
// Pieces shared by the shape ops: view specs, raw views for kernels, the index-map gather kernel
// that flip/roll/repeat/pad use, and float64 reference helpers for the op-table tests.
#include <functional>
#include <vector>

#include "kiln/ops/meta.h"
#include "kiln/ops/registry.h"

namespace kiln::shape {

// A meta result that views input 0's storage with the given geometry.
TensorSpec view_spec(const Tensor& in, SymShape sizes, SymShape strides, SymInt offset);

// A tensor over `base`'s storage with this geometry, made without dispatch: kernels use it to
// address a part of their (already allocated) outputs.
Tensor raw_view(const Tensor& base, const SymShape& sizes, const SymShape& strides,
                const SymInt& offset);

// Attributes after the first `skip` ones (the forward op's attributes inside a backward op's).
Attrs drop_attrs(const Attrs& a, size_t skip);
// Attributes with `first` put in front.
Attrs prepend_attr(AttrValue first, const Attrs& a);

// One output dim of a gather: the source index for each output index (-1: the fill value) and
// the input's stride along it (0 for dims the input does not have).
struct GatherDim {
  std::vector<int64_t> src;
  int64_t stride = 0;
};
// out[i0, ..., ik] = in[base + sum_d dims[d].src[i_d] * dims[d].stride], or `fill` where any
// src is -1. `out` is contiguous and has in's dtype. Rows are copied in parallel, with memcpy
// for runs that are contiguous in the input.
void gather_copy(const Tensor& out, const Tensor& in, const std::vector<GatherDim>& dims,
                 const Scalar& fill = 0);
// The GatherDim of an input dim that is copied unchanged.
GatherDim identity_dim(int64_t size, int64_t stride);

// Float64 references. `x` is converted to float64 first; `source(out_index, in_index)` fills
// in_index (x.dim() entries) and returns false where the output takes `fill` instead.
using SourceFn = std::function<bool(const std::vector<int64_t>&, std::vector<int64_t>&)>;
Tensor reference_gather(const Tensor& x, const std::vector<int64_t>& out_sizes,
                        const SourceFn& source, double fill = 0);
// The adjoint of a linear index-moving op (a view, pad, ...) computed from its forward
// reference: the forward is run on arange(numel) to learn which input element each output
// element reads, then grad is summed into those elements.
Tensor reference_adjoint(const ReferenceFn& forward, const SymShape& input_sizes,
                         const Attrs& forward_attrs, const Tensor& grad);

// Registers `<forward>_backward(Tensor grad, SymInt[] input_sizes, <forward's attrs>)`, the
// adjoint of the view op `forward`: zeros shaped like the input, with grad added where the view
// reads. Its own backward is the forward view, so double backward works. `overlapping`: the
// view may read an element twice (unfold), so the kernel accumulates instead of copying.
// Samples and the reference are derived from the forward entry's.
void register_view_backward(const char* forward, bool overlapping);

// Concrete sizes of a float64 reference tensor.
std::vector<int64_t> int_sizes(const Tensor& t);
// Flat row-major position of a multi-index.
int64_t flat_index(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes);

}  // namespace kiln::shape

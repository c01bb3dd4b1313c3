#pragma once
// Shared pieces of the pooling and upsampling entries: output sizes, windows, compute dtypes and
// the per-plane parallel loop. Entries work on [N, C, H, W] (2 spatial dims) or [N, C, D, H, W]
// (3); the public functions add and drop the batch dim of unbatched inputs (and the H dim of 1-d
// ones). Kernels see every entry as 3-d: a 2-d entry has a depth of 1. The CPU kernels' plane
// loop is in planes.h, so device backends can include this header.
#include <functional>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::pool {

// PyTorch's pooling_output_shape (ceil_mode drops a last window that starts in the padding).
SymInt output_size(const SymInt& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode);

// The most spatial dims an entry has.
inline constexpr int kMaxSpatial = 3;

// Checks that `input` is [N, C, <spatial dims>] with non-empty planes.
void check_input(const char* op, const Tensor& input, int spatial = 2);

// The shape [1, 2, 5, ...] with `spatial` 5s, which every pooling entry's error samples accept.
std::vector<int64_t> sample_shape(int spatial, int64_t size = 5);

// Error samples of check_input, for an entry whose attributes `a` accept a sample_shape input.
std::vector<OpErrorSample> input_error_samples(const Attrs& a, int spatial = 2);
// Error samples of window and pooled_sizes; attrs(kernel, stride, padding, dilation) builds the
// entry's attributes (with_dilation: whether the entry has a dilation attribute).
using WindowAttrs =
    std::function<Attrs(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                        std::vector<int64_t> padding, std::vector<int64_t> dilation)>;
std::vector<OpErrorSample> window_error_samples(const WindowAttrs& attrs, bool with_dilation,
                                                int spatial = 2);

// The input positions a window covers along one dim: begin, begin + step, ... < end.
struct Span {
  int64_t begin, end, step;
};
// Window o of a (dilated) pooling kernel, clipped to [0, in).
Span pool_span(int64_t o, int64_t in, int64_t kernel, int64_t pad, int64_t stride,
               int64_t dilation);
// Window o of adaptive pooling: [floor(o * in / out), ceil((o + 1) * in / out)).
Span adaptive_span(int64_t o, int64_t in, int64_t out);

// float64 stays float64; every other floating dtype is computed in float32.
ScalarType compute_dtype(ScalarType t);
Tensor to_compute(const Tensor& t);  // contiguous, in compute_dtype(t.dtype())

// Calls f(T{}) with T = float or double for the compute dtype.
template <class F>
void visit_compute(ScalarType ct, F&& f) {
  if (ct == kFloat64) return f(double{});
  f(float{});
}

// Runs body(result) with `result` a contiguous tensor in the compute dtype, then copies it into
// `out` (no copy when out already is one).
void compute_into(Tensor& out, const std::function<void(Tensor&)>& body);

// The list attrs kernel/stride/padding/dilation expanded to one value per spatial dim (stride
// empty: kernel).
struct Window {
  int spatial;
  int64_t kernel[kMaxSpatial], stride[kMaxSpatial], pad[kMaxSpatial], dilation[kMaxSpatial];
};
Window window(const char* op, int spatial, IntArrayRef kernel, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation);
// Output sizes of a pooling window over input [N, C, <spatial dims>], with PyTorch's checks.
SymShape pooled_sizes(const char* op, const Tensor& input, const Window& w, bool ceil_mode);

// The spatial sizes of `t` [N, C, <spatial dims>] as three values, leading 1s for fewer dims.
struct Extent {
  int64_t size[kMaxSpatial];
  int64_t numel() const { return size[0] * size[1] * size[2]; }
};
Extent extent(const Tensor& t);
// The first two dims' product: the number of planes.
int64_t planes(const Tensor& t);

// Runs f on a batched view of `input` with `spatial` spatial dims ([C, ...] gains a batch dim;
// spatial 1: [N, C, L] / [C, L] gain H = 1, for the 2-d entries) and gives each output back in
// the input's rank.
std::vector<Tensor> as_batched(const char* op, const Tensor& input, int spatial,
                               const std::function<std::vector<Tensor>(const Tensor&)>& f);

// Max pooling's gradient pair (pool_max_scatter.cpp), over flat per-plane indices:
// scatter_planes adds grad [N, C, <out>] at `indices` into zeros of input_sizes; gather_planes
// reads x [N, C, <in>] at them.
Tensor scatter_planes(const Tensor& grad, const Tensor& indices, const SymShape& input_sizes);
Tensor gather_planes(const Tensor& x, const Tensor& indices);

}  // namespace kiln::pool

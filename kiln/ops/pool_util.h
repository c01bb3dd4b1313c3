#pragma once
// Shared pieces of the pooling and upsampling entries: output sizes, windows, compute dtypes and
// the per-plane parallel loop. Entries work on [N, C, H, W]; the public functions add and drop
// the batch dim of unbatched inputs (and the H dim of 1-d ones).
#include <functional>
#include <vector>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/ops/registry.h"

namespace kiln::pool {

// PyTorch's pooling_output_shape (ceil_mode drops a last window that starts in the padding).
SymInt output_size(const SymInt& in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode);

// Checks that `input` is [N, C, H, W] with non-empty planes.
void check_input(const char* op, const Tensor& input);

// Error samples of check_input, for an entry whose attributes `a` accept a [1, 2, 5, 5] input.
std::vector<OpErrorSample> input_error_samples(const Attrs& a);
// Error samples of window2d and pooled_sizes; attrs(kernel, stride, padding, dilation) builds the
// entry's attributes (with_dilation: whether the entry has a dilation attribute).
using WindowAttrs =
    std::function<Attrs(std::vector<int64_t> kernel, std::vector<int64_t> stride,
                        std::vector<int64_t> padding, std::vector<int64_t> dilation)>;
std::vector<OpErrorSample> window_error_samples(const WindowAttrs& attrs, bool with_dilation);

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

// f(plane) for each of `planes` planes, in parallel; work_per_plane sizes the chunks.
template <class F>
void for_planes(int64_t planes, int64_t work_per_plane, const F& f) {
  cpu::parallel_for(
      0, planes, std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(work_per_plane, 1)),
      [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) f(p);
      });
}

// The list attrs kernel/stride/padding/dilation expanded to two values (stride empty: kernel).
struct Window2d {
  int64_t kernel[2], stride[2], pad[2], dilation[2];
};
Window2d window2d(const char* op, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation);
// Output sizes of a pooling window over input [N, C, H, W], with PyTorch's checks.
SymShape pooled_sizes(const char* op, const Tensor& input, const Window2d& w, bool ceil_mode);

// Runs f on a 4-D view of `input` ([C, H, W] gains a batch dim; 1-d inputs [N, C, L] / [C, L]
// gain H = 1 when one_d) and gives each output back in the input's rank.
std::vector<Tensor> as_4d(const char* op, const Tensor& input, bool one_d,
                          const std::function<std::vector<Tensor>(const Tensor&)>& f);

}  // namespace kiln::pool

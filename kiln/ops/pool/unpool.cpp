// max_unpool2d/3d: each input value written at its flat per-plane index (from max pooling) into
// zeros of output_size. A scatter over the flattened planes, so the gradient is the gather of the
// output gradient at the indices, as in PyTorch.
#include <string>

#include "kiln/ops/conv.h"
#include "kiln/ops/index.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/pool/util.h"

namespace kiln {
namespace {

Tensor max_unpool(const char* op, int spatial, const Tensor& input, const Tensor& indices,
                  IntArrayRef output_size) {
  KILN_CHECK(indices.dtype() == kInt64, op, ": expected int64 indices, got ", indices.dtype());
  KILN_CHECK(indices.sym_sizes() == input.sym_sizes(), op,
             ": expected indices of the input's shape ", input.sym_sizes(), ", got ",
             indices.sym_sizes());
  KILN_CHECK(static_cast<int>(output_size.size()) == spatial, op, ": expected output_size of ",
             spatial, " values, got ", output_size);
  int64_t plane = 1;
  std::string sizes;
  for (int64_t s : output_size) {
    KILN_CHECK(s > 0, op, ": expected a positive output_size, got ", output_size);
    plane *= s;
    sizes += (sizes.empty() ? "" : "x") + std::to_string(s);
  }
  if (indices.numel() > 0) {
    const int64_t lo = indices.min().item<int64_t>(), hi = indices.max().item<int64_t>();
    KILN_CHECK(lo >= 0 && hi < plane, op, ": found an invalid max index ", lo < 0 ? lo : hi,
               " (output volumes are of size ", sizes, ")");
  }
  const bool batched = input.dim() == spatial + 2;
  return pool::as_batched(op, input, spatial, [&](const Tensor& x) {
    const Tensor idx = batched ? indices : indices.unsqueeze(0);
    std::vector<SymInt> out = {x.sym_size(0), x.sym_size(1)};
    const Tensor flat = x.new_zeros({out[0], out[1], SymInt(plane)});
    for (int64_t s : output_size) out.push_back(s);
    return std::vector<Tensor>{flat.scatter(2, idx.flatten(2), x.flatten(2)).view(out)};
  })[0];
}

}  // namespace

Tensor max_unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  return max_unpool("max_unpool2d", 2, self, indices, output_size);
}

Tensor max_unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef output_size,
                    IntArrayRef stride, IntArrayRef padding) {
  // stride and padding are ATen's signature; the indices alone place the values.
  for (int64_t s : stride)
    KILN_CHECK(s > 0, "max_unpool3d: expected positive stride, got ", stride);
  for (int64_t p : padding)
    KILN_CHECK(p >= 0, "max_unpool3d: expected non-negative padding, got ", padding);
  return max_unpool("max_unpool3d", 3, self, indices, output_size);
}

}  // namespace kiln

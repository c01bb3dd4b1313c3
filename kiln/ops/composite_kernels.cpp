#include "kiln/ops/composite_kernels.h"

#include "kiln/core/grad_mode.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/range.h"
#include "kiln/ops/sort/util.h"

namespace kiln {
namespace {

using Tensors = std::vector<Tensor>;

// select_along_dim(self, indices, dim): a gather.
void select_along_dim(const Tensors& in, Tensors& out, const Attrs& a) {
  const int64_t dim = sorting::along_dim("select_along_dim", in[0], a.i(0));
  out[0].copy_(in[0].gather(dim, in[1]));
}

// value_selecting_backward(grad, indices, dim, sizes): grad added into zeros at the indices.
void value_selecting_backward(const Tensors& in, Tensors& out, const Attrs& a) {
  const char* op = "value_selecting_backward";
  KILN_CHECK(is_floating_point(in[0].dtype()), op, ": not supported for dtype ", in[0].dtype(),
             " (expected a floating dtype)");
  const int64_t dim = sorting::along_dim(op, out[0], a.i(0));
  out[0].zero_();
  out[0].scatter_add_(dim, in[1], in[0]);
}

// dot: products summed, 16-bit floats in float32 as the CPU's loop accumulates them; integer
// sums wrap to the dtype as the CPU's do.
void dot(const Tensors& in, Tensors& out, const Attrs&) {
  const ScalarType dt = in[0].dtype();
  const ScalarType acc = dt == kFloat16 || dt == kBFloat16 ? kFloat32 : dt;
  out[0].copy_(in[0].to(acc).mul(in[1].to(acc)).sum().to(dt));
}

// outer: a column times a row in the output's dtype.
void outer(const Tensors& in, Tensors& out, const Attrs&) {
  const ScalarType dt = out[0].dtype();
  out[0].copy_(in[0].to(dt).unsqueeze(1).mul(in[1].to(dt).unsqueeze(0)));
}

// flip: index_select along each dim with the positions reversed.
void flip(const Tensors& in, Tensors& out, const Attrs& a) {
  Tensor y = in[0];
  for (int64_t d : meta::wrap_dims("flip", a.ints(0), y.dim())) {
    const int64_t n = y.size(d);
    if (n > 1)
      y = y.index_select(d, arange(n - 1, -1, -1, TensorOptions(kInt64).device(y.device())));
  }
  out[0].copy_(y);
}

// roll: along each (shift, dim) pair, the last `shift` positions (mod the size) moved first.
void roll(const Tensors& in, Tensors& out, const Attrs& a) {
  Tensor y = in[0];
  const std::vector<int64_t>& shifts = a.ints(0);
  const std::vector<int64_t>& dims = a.ints(1);
  for (size_t k = 0; k < dims.size() && y.numel() > 0; ++k) {
    const int64_t d = meta::wrap_dim("roll", dims[k], y.dim()), n = y.size(d);
    const int64_t s = ((shifts[k] % n) + n) % n;
    if (s > 0) y = cat({y.narrow(d, n - s, s), y.narrow(d, 0, n - s)}, d);
  }
  out[0].copy_(y);
}

// repeat: x viewed as [1, s0, 1, s1, ...] (leading dims of size 1 added), expanded to
// [r0, s0, r1, s1, ...], which is the output's element order.
void repeat(const Tensors& in, Tensors& out, const Attrs& a) {
  const Tensor& x = in[0];
  const SymShape& repeats = a.shape(0);
  const int64_t lead = static_cast<int64_t>(repeats.size()) - x.dim();
  std::vector<int64_t> ones, expanded;
  for (size_t k = 0; k < repeats.size(); ++k) {
    const int64_t size =
        static_cast<int64_t>(k) < lead ? 1 : x.size(static_cast<int64_t>(k) - lead);
    ones.insert(ones.end(), {1, size});
    expanded.insert(expanded.end(), {repeats[k].guard_int(), size});
  }
  out[0].copy_(x.reshape(ones).expand(expanded).reshape(out[0].sizes()));
}

template <void (*F)(const Tensors&, Tensors&, const Attrs&)>
void without_grad(const Tensors& in, Tensors& out, const Attrs& a) {
  NoGradGuard no_grad;
  F(in, out, a);
}

}  // namespace

const std::vector<std::pair<std::string, KernelFn>>& composite_kernels() {
  static const std::vector<std::pair<std::string, KernelFn>> kernels = {
      {"select_along_dim", without_grad<select_along_dim>},
      {"value_selecting_backward", without_grad<value_selecting_backward>},
      {"dot", without_grad<dot>},
      {"outer", without_grad<outer>},
      {"flip", without_grad<flip>},
      {"roll", without_grad<roll>},
      {"repeat", without_grad<repeat>},
  };
  return kernels;
}

void set_composite_kernels(DeviceType device) {
  for (const auto& [name, kernel] : composite_kernels()) set_kernel(name, device, kernel);
}

}  // namespace kiln

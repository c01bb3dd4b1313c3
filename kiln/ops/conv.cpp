// The convolution entries: `convolution` (forward and transposed, ATen's general form) and
// `convolution_backward_weight`. Both gradients are written with these two entries, so every
// order of derivative is available:
//   conv:        gx = transposed conv(gy, w)          gw = backward_weight(gy, x)
//   transposed:  gx = conv(gy, w)                     gw = backward_weight(x, gy)
//   backward_weight(gy, x) is bilinear:  d gy = conv(x, ggw),  d x = transposed conv(gy, ggw).
#include "kiln/ops/conv.h"
#include "kiln/backend/cpu/conv_geometry.h"
#include "kiln/ops/conv_reference.h"
#include "kiln/ops/conv_util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"

namespace kiln {
namespace {

conv::Params conv_params(const Tensor& input, const Attrs& a) {
  return conv::params("convolution", a, input.dim() - 2);
}

// Runs `compute(result, inputs...)` on contiguous copies in the kernels' compute dtype and leaves
// the result in `out`.
template <class F>
void in_compute_dtype(Tensor& out, const Tensor& a, const Tensor& b, F&& compute) {
  const ScalarType ct = conv::compute_dtype(out.dtype());
  auto prep = [ct](const Tensor& t) { return (t.dtype() == ct ? t : t.to(ct)).contiguous(); };
  Tensor result = out.dtype() == ct && out.is_contiguous() ? out : empty(out.sym_sizes(), ct);
  if (result.numel() > 0) compute(ct, result, prep(a), prep(b));
  if (!result.is_same(out)) out.copy_(result);
}

void convolution_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const conv::Params p = conv_params(in[0], a);
  Tensor& y = out[0];
  in_compute_dtype(
      y, in[0], in[1], [&](ScalarType ct, Tensor& r, const Tensor& x, const Tensor& w) {
        if (x.numel() == 0 || w.numel() == 0) {
          r.zero_();
        } else if (!p.transposed) {
          cpu::conv_forward(conv::geometry(x.sizes().vec(), r.sizes().vec(), w.sizes().vec(), p),
                            ct, x.data_ptr(), w.data_ptr(), r.data_ptr());
        } else {
          cpu::conv_backward_data(
              conv::geometry(r.sizes().vec(), x.sizes().vec(), w.sizes().vec(), p), ct,
              x.data_ptr(), w.data_ptr(), r.data_ptr());
        }
      });
  if (in[2].defined() && y.numel() > 0) {
    std::vector<int64_t> shape(static_cast<size_t>(y.dim() - 1), 1);
    shape[0] = -1;
    y.add_(in[2].view(shape));
  }
}

std::vector<Tensor> convolution_backward(const BackwardContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& w = c.input(1);
  const Tensor& gy = c.grad();
  const conv::Params p = conv_params(x, c.attrs);
  std::vector<Tensor> g(3);
  if (!p.transposed) {
    if (c.needs_grad(0)) g[0] = conv::data_grad(gy, w, x.sizes().vec(), p);
    if (c.needs_grad(1)) g[1] = conv::weight_grad(gy, x, w.sizes().vec(), p);
  } else {
    if (c.needs_grad(0)) g[0] = conv::forward_fit(gy, w, x.sizes().vec(), p);
    if (c.needs_grad(1)) g[1] = conv::weight_grad(x, gy, w.sizes().vec(), p);
  }
  if (c.needs_grad(2)) {
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < gy.dim(); ++d) dims.push_back(d);
    g[2] = gy.sum(dims);
  }
  return g;
}

// convolution_backward_weight(grad_output, input): attrs stride, padding, dilation, groups,
// weight sizes. The geometry is the (non-transposed) convolution from input to grad_output.
conv::Params weight_grad_params(const Tensor& input, const Attrs& a) {
  const Attrs full{a.ints(0), a.ints(1), a.ints(2), false, std::vector<int64_t>{0}, a.i(3)};
  return conv::params("convolution_backward_weight", full, input.dim() - 2);
}

}  // namespace

KILN_REGISTER_OP(convolution)
    .schema(
        "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      KILN_CHECK(in[0].dim() >= 3, "convolution: expected a batched input [N, C, *], got ",
                 in[0].sizes());
      const conv::Params p = conv_params(in[0], a);
      return meta::one_spec(conv::output_sizes("convolution", in[0], in[1], in[2], p),
                            in[0].dtype(), in[0].device());
    })
    .cpu(convolution_kernel)
    .backward(convolution_backward)
    .samples(conv::convolution_samples)
    .reference(conv::convolution_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16})
    .tolerance(1e-4, 1e-4)
    .lowering("extern:convolution");

KILN_REGISTER_OP(convolution_backward_weight)
    .schema(
        "convolution_backward_weight(Tensor grad_output, Tensor input, int[] stride, "
        "int[] padding, int[] dilation, int groups, SymInt[] weight_sizes) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const char* op = "convolution_backward_weight";
      KILN_CHECK(in[0].dim() == in[1].dim() && in[0].dim() >= 3, op,
                 ": expected grad_output and input of the same rank >= 3, got ", in[0].sizes(),
                 " and ", in[1].sizes());
      KILN_CHECK(in[0].dtype() == in[1].dtype(), op, ": grad_output type (", in[0].dtype(),
                 ") and input type (", in[1].dtype(), ") should be the same");
      weight_grad_params(in[1], a);
      return meta::one_spec(a.shape(4), in[1].dtype(), in[1].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const conv::Params p = weight_grad_params(in[1], a);
      in_compute_dtype(out[0], in[0], in[1],
                       [&](ScalarType ct, Tensor& r, const Tensor& gy, const Tensor& x) {
                         if (gy.numel() == 0 || x.numel() == 0) {
                           r.zero_();
                           return;
                         }
                         cpu::conv_backward_weight(
                             conv::geometry(x.sizes().vec(), gy.sizes().vec(), r.sizes().vec(), p),
                             ct, gy.data_ptr(), x.data_ptr(), r.data_ptr());
                       });
    })
    .backward([](const BackwardContext& c) {
      const Tensor& gy = c.input(0);
      const Tensor& x = c.input(1);
      const Tensor& ggw = c.grad();
      const conv::Params p = weight_grad_params(x, c.attrs);
      std::vector<Tensor> g(2);
      if (c.needs_grad(0)) g[0] = conv::forward_fit(x, ggw, gy.sizes().vec(), p);
      if (c.needs_grad(1)) g[1] = conv::data_grad(gy, ggw, x.sizes().vec(), p);
      return g;
    })
    .samples(conv::weight_grad_samples)
    .reference(conv::weight_grad_reference)
    .dtypes({kFloat64, kFloat32})
    .tolerance(1e-4, 1e-4)
    .lowering("extern:convolution_backward_weight");

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  static const OpDef& op = get_op("convolution");
  const bool unbatched = input.dim() == weight.dim() - 1;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  Tensor y = call_op1(
      op, {x, weight, bias},
      {stride.vec(), padding.vec(), dilation.vec(), transposed, output_padding.vec(), groups});
  return unbatched ? y.squeeze(0) : y;
}

}  // namespace kiln

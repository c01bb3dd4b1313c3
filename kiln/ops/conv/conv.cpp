// The convolution entries: `convolution` (forward and transposed, ATen's general form) and
// `convolution_backward_weight`. Both gradients are written with these two entries, so every
// order of derivative is available:
//   conv:        gx = transposed conv(gy, w)          gw = backward_weight(gy, x)
//   transposed:  gx = conv(gy, w)                     gw = backward_weight(x, gy)
//   backward_weight(gy, x) is bilinear:  d gy = conv(x, ggw),  d x = transposed conv(gy, ggw).
#include "kiln/ops/conv.h"
#include "kiln/backend/cpu/conv_geometry.h"
#include "kiln/ops/conv/batching.h"
#include "kiln/ops/conv/reference.h"
#include "kiln/ops/conv/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

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
  if (result.sym_numel() > 0) compute(ct, result, prep(a), prep(b));
  if (!result.is_same(out)) out.copy_(result);
}

void convolution_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const conv::Params p = conv_params(in[0], a);
  Tensor& y = out[0];
  in_compute_dtype(
      y, in[0], in[1], [&](ScalarType ct, Tensor& r, const Tensor& x, const Tensor& w) {
        if (x.sym_numel() == 0 || w.sym_numel() == 0) {
          r.zero_();
        } else if (!p.transposed) {
          cpu::conv_forward(
              conv::geometry(x.sym_sizes().vec(), r.sym_sizes().vec(), w.sym_sizes().vec(), p), ct,
              x.data_ptr(), w.data_ptr(), r.data_ptr());
        } else {
          cpu::conv_backward_data(
              conv::geometry(r.sym_sizes().vec(), x.sym_sizes().vec(), w.sym_sizes().vec(), p), ct,
              x.data_ptr(), w.data_ptr(), r.data_ptr());
        }
      });
  if (in[2].defined() && y.sym_numel() > 0) {
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
    if (c.needs_grad(0)) g[0] = conv::data_grad(gy, w, x.sym_sizes().vec(), p);
    if (c.needs_grad(1)) g[1] = conv::weight_grad(gy, x, w.sym_sizes().vec(), p);
  } else {
    if (c.needs_grad(0)) g[0] = conv::forward_fit(gy, w, x.sym_sizes().vec(), p);
    if (c.needs_grad(1)) g[1] = conv::weight_grad(x, gy, w.sym_sizes().vec(), p);
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

std::vector<OpErrorSample> convolution_error_samples() {
  using V = std::vector<int64_t>;
  auto t = [](V shape, ScalarType dt = kFloat32) { return samples::make(std::move(shape), dt); };
  // stride, padding, dilation, transposed, output_padding, groups
  auto conv = [](V stride, V padding, V dilation, bool transposed, V output_padding,
                 int64_t groups) {
    return Attrs{stride, padding, dilation, transposed, output_padding, groups};
  };
  const Attrs plain = conv({1}, {0}, {1}, false, {0}, 1),
              transposed = conv({1}, {0}, {1}, true, {0}, 1);
  const Tensor x = t({1, 2, 5, 5}), w = t({3, 2, 3, 3});
  return {
      {{t({2, 5}), w, Tensor()}, plain, "got [2, 5]", "unbatched input"},
      {{t({1, 1, 2, 2, 2, 2}), t({1, 1, 1, 1, 1, 1}), Tensor()},
       plain,
       "with 1 to 3 spatial dims, but got input of size [1, 1, 2, 2, 2, 2]",
       "4 spatial dims"},
      {{x, w, Tensor()},
       conv({1, 1, 1}, {0}, {1}, false, {0}, 1),
       "but got stride=[1, 1, 1]",
       "stride of the wrong length"},
      {{x, w, Tensor()}, conv({0}, {0}, {1}, false, {0}, 1), "got stride=[0, 0]", "stride 0"},
      {{x, w, Tensor()},
       conv({1}, {-1}, {1}, false, {0}, 1),
       "got padding=[-1, -1]",
       "negative padding"},
      {{x, w, Tensor()}, conv({1}, {0}, {0}, false, {0}, 1), "got dilation=[0, 0]", "dilation 0"},
      {{x, w, Tensor()},
       conv({1}, {0}, {1}, true, {-1}, 1),
       "got output_padding=[-1, -1]",
       "negative output_padding"},
      {{x, w, Tensor()}, conv({1}, {0}, {1}, false, {0}, 0), "got groups=0", "groups 0"},
      {{x, t({3, 2, 3}), Tensor()},
       plain,
       "but got 3-dimensional weight of size [3, 2, 3]",
       "weight rank"},
      {{x, t({3, 2, 3, 3}, kFloat64), Tensor()},
       plain,
       "input type (float32) and weight type (float64)",
       "weight dtype"},
      {{t({1, 2, 5, 5}, kInt64), t({3, 2, 3, 3}, kInt64), Tensor()},
       plain,
       "expected a floating point input, got int64",
       "integer input"},
      {{x, t({3, 1, 3, 3}), Tensor()},
       conv({1}, {0}, {1}, false, {0}, 2),
       "given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of "
       "size [3, 1, 3, 3]",
       "groups do not divide the output channels"},
      {{t({1, 4, 5, 5}), w, Tensor()},
       plain,
       "expected input [1, 4, 5, 5] to have 2 channels, but got 4 channels",
       "channels"},
      {{t({1, 4, 5, 5}), t({2, 3, 3, 3}), Tensor()},
       transposed,
       "expected input [1, 4, 5, 5] to have 2 channels, but got 4 channels",
       "transposed: channels"},
      {{t({1, 3, 5, 5}), t({3, 1, 3, 3}), Tensor()},
       conv({1}, {0}, {1}, true, {0}, 2),
       "given groups=2, expected weight to be divisible by 2 at dimension 0",
       "transposed: groups do not divide the input channels"},
      {{x, w, t({4})},
       plain,
       "expected bias to be 1-dimensional with 3 elements, but got bias of size [4]",
       "bias size"},
      {{x, w, t({3}, kFloat64)},
       plain,
       "input type (float32) and bias type (float64)",
       "bias dtype"},
      {{t({1, 2, 5, 5}), t({2, 3, 3, 3}), Tensor()},
       conv({1}, {0}, {1}, true, {1}, 1),
       "output_padding=[1, 1], stride=[1, 1], dilation=[1, 1]",
       "transposed: output_padding too large"},
      {{t({1, 2, 1, 1}), t({2, 3, 1, 1}), Tensor()},
       conv({1}, {1}, {1}, true, {0}, 1),
       "calculated output size -1 at spatial dim 0 is too small",
       "transposed: empty output"},
      {{t({1, 2, 2, 2}), w, Tensor()},
       plain,
       "padded input size per channel: (2 x 2). Kernel size: (3 x 3)",
       "kernel larger than the input"},
      {{x, w, Tensor()},
       conv({2}, {0}, {1}, false, {1}, 1),
       "only supported for transposed convolutions, got output_padding=[1, 1]",
       "output_padding without transposed"},
  };
}

std::vector<OpErrorSample> weight_grad_error_samples() {
  const Attrs a{std::vector<int64_t>{1}, std::vector<int64_t>{0}, std::vector<int64_t>{1},
                int64_t{1}, SymShape{3, 2, 3, 3}};
  const Tensor gy = samples::make({1, 3, 3, 3}, kFloat32),
               x = samples::make({1, 2, 5, 5}, kFloat32);
  return {
      {{gy, samples::make({2, 5, 5}, kFloat32)}, a, "got [1, 3, 3, 3] and [2, 5, 5]", "ranks"},
      {{gy, x.to(kFloat64)}, a, "grad_output type (float32) and input type (float64)", "dtypes"},
      {{gy, x},
       {std::vector<int64_t>{0}, std::vector<int64_t>{0}, std::vector<int64_t>{1}, int64_t{1},
        SymShape{3, 2, 3, 3}},
       "got stride=[0, 0]",
       "stride 0"},
  };
}

}  // namespace

KILN_REGISTER_OP(convolution)
    .schema(
        "convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
        "int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      KILN_CHECK(in[0].dim() >= 3, "convolution: expected a batched input [N, C, *], got ",
                 in[0].sym_sizes());
      const conv::Params p = conv_params(in[0], a);
      return meta::one_spec(conv::output_sizes("convolution", in[0], in[1], in[2], p),
                            in[0].dtype(), in[0].device());
    })
    .cpu(convolution_kernel)
    .save_inputs({0, 1})  // input and weight, not the bias
    .backward(convolution_backward)
    .batch_rule(conv::convolution_batch_rule)
    .samples(conv::convolution_samples)
    .error_samples(convolution_error_samples)
    .reference(conv::convolution_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16, kFloat16})
    .tolerance(1e-4, 1e-4)
    .lowering("extern:convolution");

KILN_REGISTER_OP(convolution_backward_weight)
    .schema(
        "convolution_backward_weight(Tensor grad_output, Tensor input, int[] stride, "
        "int[] padding, int[] dilation, int groups, SymInt[] weight_sizes) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const char* op = "convolution_backward_weight";
      KILN_CHECK(in[0].dim() == in[1].dim() && in[0].dim() >= 3, op,
                 ": expected grad_output and input of the same rank >= 3, got ", in[0].sym_sizes(),
                 " and ", in[1].sym_sizes());
      KILN_CHECK(in[0].dtype() == in[1].dtype(), op, ": grad_output type (", in[0].dtype(),
                 ") and input type (", in[1].dtype(), ") should be the same");
      weight_grad_params(in[1], a);
      return meta::one_spec(a.shape(4), in[1].dtype(), in[1].device());
    })
    .batch_rule(conv::backward_weight_batch_rule)
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const conv::Params p = weight_grad_params(in[1], a);
      in_compute_dtype(
          out[0], in[0], in[1], [&](ScalarType ct, Tensor& r, const Tensor& gy, const Tensor& x) {
            if (gy.sym_numel() == 0 || x.sym_numel() == 0) {
              r.zero_();
              return;
            }
            cpu::conv_backward_weight(
                conv::geometry(x.sym_sizes().vec(), gy.sym_sizes().vec(), r.sym_sizes().vec(), p),
                ct, gy.data_ptr(), x.data_ptr(), r.data_ptr());
          });
    })
    .backward([](const BackwardContext& c) {
      const Tensor& gy = c.input(0);
      const Tensor& x = c.input(1);
      const Tensor& ggw = c.grad();
      const conv::Params p = weight_grad_params(x, c.attrs);
      std::vector<Tensor> g(2);
      if (c.needs_grad(0)) g[0] = conv::forward_fit(x, ggw, gy.sym_sizes().vec(), p);
      if (c.needs_grad(1)) g[1] = conv::data_grad(gy, ggw, x.sym_sizes().vec(), p);
      return g;
    })
    .samples(conv::weight_grad_samples)
    .error_samples(weight_grad_error_samples)
    .reference(conv::weight_grad_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16, kFloat16})
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

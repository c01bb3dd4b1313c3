// pad (constant, reflect, replicate; PyTorch's pad list order, last dim first) and the adjoint
// of the reflect/replicate modes, pad_backward.
#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

using V = std::vector<int64_t>;
enum class PadMode { Constant, Reflect, Replicate };

PadMode pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  KILN_FAIL("pad: unsupported padding mode '", mode,
            "'; expected 'constant', 'reflect' or 'replicate'");
}

// The input index output index i of a padded dim reads (-1: the constant).
int64_t pad_source(PadMode mode, int64_t i, int64_t left, int64_t n) {
  int64_t j = i - left;
  switch (mode) {
    case PadMode::Constant:
      return j >= 0 && j < n ? j : -1;
    case PadMode::Reflect:
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
      return j;
    case PadMode::Replicate:
      return std::clamp<int64_t>(j, 0, n - 1);
  }
  return -1;
}

// Checks pad and mode against the input's shape; returns the padded shape. attrs: pad, mode,
// value.
SymShape padded_sizes(const Tensor& x, const Attrs& a) {
  const V& pad = a.ints(0);
  const PadMode mode = pad_mode(a.str(1));
  const int64_t nd = x.dim();
  KILN_CHECK(pad.size() % 2 == 0, "pad: Padding length must be divisible by 2, but got ",
             pad.size());
  KILN_CHECK(static_cast<int64_t>(pad.size()) <= 2 * nd,
             "pad: Padding length should be less than "
             "or equal to two times the input dimension but got padding length ",
             pad.size(), " and input of dimension ", nd);
  KILN_CHECK(mode == PadMode::Constant || a.is_none(2), "pad: Padding mode \"", a.str(1),
             "\" doesn't take in value argument");
  SymShape sizes = x.sym_sizes();
  for (size_t j = 0; j < pad.size() / 2; ++j) {
    const int64_t d = nd - 1 - static_cast<int64_t>(j);
    const int64_t l = pad[2 * j], r = pad[2 * j + 1];
    const SymInt n = x.sym_size(d);
    if (mode == PadMode::Constant) {
      KILN_CHECK(n + l + r >= 0, "pad: The input size ", n, ", plus negative padding ", l, " and ",
                 r, " resulted in a negative output size, which is invalid. Check dimension ", d,
                 " of your input.");
    } else {
      KILN_CHECK(l >= 0 && r >= 0, "pad: negative padding (", l, ", ", r,
                 ") is only supported in constant mode");
      KILN_CHECK(n > 0 || (l == 0 && r == 0), "pad: ", a.str(1), " padding needs a non-empty ",
                 "dimension, but dimension ", d, " of input ", x.sym_sizes(), " is empty");
      KILN_CHECK(mode != PadMode::Reflect || (l < n && r < n),
                 "pad: Padding size should be less "
                 "than the corresponding input dimension, but got: padding (",
                 l, ", ", r, ") at dimension ", d, " of input ", x.sym_sizes());
    }
    sizes[d] = n + l + r;
  }
  return sizes;
}

// Per-dim source indices for the output of pad.
std::vector<shape::GatherDim> pad_dims(const Tensor& x, const V& pad, PadMode mode) {
  const int64_t nd = x.dim();
  std::vector<shape::GatherDim> dims;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t n = x.sym_size(d).guard_int();
    const int64_t j = nd - 1 - d;  // pad pair index of this dim
    shape::GatherDim g = shape::identity_dim(n, x.sym_stride(d).guard_int());
    if (2 * j + 1 < static_cast<int64_t>(pad.size())) {
      const int64_t l = pad[2 * j], r = pad[2 * j + 1];
      g.src.resize(std::max<int64_t>(n + l + r, 0));
      for (int64_t i = 0; i < static_cast<int64_t>(g.src.size()); ++i)
        g.src[i] = pad_source(mode, i, l, n);
    }
    dims.push_back(std::move(g));
  }
  return dims;
}

std::vector<Tensor> pad_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor& x = in[0];
  const V& pad = a.ints(0);
  const PadMode mode = pad_mode(a.str(1));
  const V xs = x.sym_sizes().vec();
  const V osz = SymIntArrayRef(padded_sizes(x, a)).vec();
  const int64_t nd = x.dim();
  return {shape::reference_gather(
      x, osz,
      [&](const V& o, V& i) {
        i = o;
        for (size_t j = 0; j < pad.size() / 2; ++j) {
          const int64_t d = nd - 1 - static_cast<int64_t>(j), n = xs[d];
          int64_t k = o[d] - pad[2 * j];
          if (mode == PadMode::Constant && (k < 0 || k >= n)) return false;
          while (mode == PadMode::Reflect && (k < 0 || k >= n)) k = k < 0 ? -k : 2 * n - 2 - k;
          if (mode == PadMode::Replicate) k = k < 0 ? 0 : (k >= n ? n - 1 : k);
          i[d] = k;
        }
        return true;
      },
      a.opt_f(2).value_or(0.0))};
}

// grad summed into the input elements each padded element was read from.
void pad_backward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& o = out[0];
  cpu::fill(o, 0);
  const Tensor g = in[0].contiguous();
  if (g.sym_numel() == 0) return;
  const std::vector<shape::GatherDim> dims = pad_dims(o, a.ints(1), pad_mode(a.str(2)));
  const V gs = g.sym_sizes().vec();
  const int64_t nd = g.dim(), n = g.sym_numel().guard_int();
  cpu::visit_floating(g.dtype(), "pad_backward", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    const T* gp = static_cast<const T*>(g.data_ptr());
    T* op = static_cast<T*>(o.data_ptr());
    V idx(nd, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t pos = 0;
      for (int64_t d = 0; d < nd; ++d) pos += dims[d].src[idx[d]] * dims[d].stride;
      op[pos] = static_cast<T>(static_cast<C>(op[pos]) + static_cast<C>(gp[i]));
      for (int64_t d = nd - 1; d >= 0; --d) {
        if (++idx[d] < gs[d]) break;
        idx[d] = 0;
      }
    }
  });
}

std::vector<OpSample> pad_samples(ScalarType dt) {
  using samples::make;
  using M = std::monostate;
  const std::string c = "constant", f = "reflect", r = "replicate";
  return {{{make({3, 4}, dt)}, {V{1, 2}, c, 0.5}, "constant last dim"},
          {{make({2, 3, 4}, dt)}, {V{1, 1, 2, 0}, c, M{}}, "constant two dims"},
          {{make({3, 5}, dt)}, {V{-1, 2}, c, M{}}, "constant crop"},
          {{make({2, 0}, dt)}, {V{1, 1}, c, 2.0}, "constant of empty dim"},
          {{make({2, 5}, dt)}, {V{2, 3}, f, M{}}, "reflect"},
          {{make({2, 3, 4}, dt)}, {V{1, 2, 2, 1}, f, M{}}, "reflect two dims"},
          {{make({4, 5}, dt, -3, 3, true)}, {V{1, 1, 1, 1}, f, M{}}, "reflect non-contiguous"},
          {{make({2, 4}, dt)}, {V{3, 1}, r, M{}}, "replicate"},
          {{make({2, 3, 4}, dt)}, {V{1, 0, 2, 2}, r, M{}}, "replicate two dims"},
          {{make({0, 3}, dt)}, {V{1, 1}, r, M{}}, "replicate zero-size batch"}};
}

}  // namespace

KILN_REGISTER_OP(pad)
    .schema("pad(Tensor self, int[] pad, str mode=\"constant\", float? value=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return meta::one_spec(padded_sizes(in[0], a), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      shape::gather_copy(out[0], in[0], pad_dims(in[0], a.ints(0), pad_mode(a.str(1))),
                         a.opt_f(2).value_or(0.0));
    })
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      const V& pad = c.attrs.ints(0);
      if (pad_mode(c.attrs.str(1)) == PadMode::Constant) {
        V negated = pad;
        for (auto& p : negated) p = -p;
        return std::vector<Tensor>{kiln::pad(c.grad(), negated)};
      }
      static const OpDef& back = get_op("pad_backward");
      return std::vector<Tensor>{call_op1(
          back, {c.grad()}, {c.input(0).sym_sizes(), pad, c.attrs.str(1), std::monostate{}})};
    })
    .samples(pad_samples)
    .error_samples([] {
      using samples::make;
      const std::monostate none;
      auto at = [](V pad, const char* mode, AttrValue value) {
        return Attrs{std::move(pad), std::string(mode), std::move(value)};
      };
      const Tensor x = make({2, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, at({1, 1}, "circular", none), "unsupported padding mode 'circular'", "mode"},
          {{x},
           at({1}, "constant", none),
           "Padding length must be divisible by 2, but got 1",
           "odd length"},
          {{make({3}, kFloat32)},
           at({1, 1, 1, 1}, "constant", none),
           "but got padding length 4 and input of dimension 1",
           "too long"},
          {{x},
           at({1, 1}, "reflect", 0.5),
           "Padding mode \"reflect\" doesn't take in value "
           "argument",
           "reflect with a value"},
          {{x},
           at({-3, -1}, "constant", none),
           "The input size 3, plus negative padding -3 and -1 resulted in a negative output size",
           "negative size"},
          {{x},
           at({-1, 0}, "replicate", none),
           "negative padding (-1, 0) is only supported in constant mode",
           "negative replicate"},
          {{make({2, 0}, kFloat32)},
           at({1, 1}, "replicate", none),
           "replicate padding needs a non-empty dimension, but dimension 1 of input [2, 0] is "
           "empty",
           "empty dim"},
          {{x},
           at({3, 0}, "reflect", none),
           "but got: padding (3, 0) at dimension 1 of input "
           "[2, 3]",
           "reflect wider than the input"},
      };
    })
    .reference(pad_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64})
    .lowering("extern:pad");

KILN_REGISTER_OP(pad_backward)
    .schema(
        "pad_backward(Tensor grad_output, SymInt[] input_sizes, int[] pad, str mode, "
        "float? value=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& g = in[0];
      KILN_CHECK(pad_mode(a.str(2)) != PadMode::Constant,
                 "pad_backward: constant padding is undone by pad with the negated amounts, not by "
                 "pad_backward (got mode '",
                 a.str(2), "')");
      Tensor probe = empty_meta(a.shape(0), g.dtype(), g.device());
      SymShape expected = padded_sizes(probe, shape::drop_attrs(a, 1));
      KILN_CHECK(g.sym_sizes() == SymIntArrayRef(expected), "pad_backward: grad_output of shape ",
                 g.sym_sizes(), " does not match the padded shape ", SymIntArrayRef(expected));
      return meta::one_spec(a.shape(0), g.dtype(), g.device());
    })
    .cpu(pad_backward_kernel)
    .error_samples([] {
      auto at = [](const char* mode) {
        return Attrs{SymShape{2, 3}, V{1, 1}, std::string(mode), std::monostate{}};
      };
      const Tensor g = samples::make({2, 5}, kFloat32);
      return std::vector<OpErrorSample>{
          {{g}, at("constant"), "not by pad_backward (got mode 'constant')", "constant"},
          {{samples::make({2, 4}, kFloat32)},
           at("reflect"),
           "grad_output of shape [2, 4] does not match the padded shape [2, 5]",
           "grad's shape"},
      };
    })
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{kiln::pad(c.grad(), c.attrs.ints(1), c.attrs.str(2))};
    })
    .samples([](ScalarType dt) {
      std::vector<OpSample> out;
      for (const OpSample& s : pad_samples(dt)) {
        if (s.attrs.str(1) == "constant") continue;
        const Tensor& x = s.inputs[0];
        V gs = SymIntArrayRef(padded_sizes(x, s.attrs)).vec();
        out.push_back(
            {{samples::make(gs, dt)}, shape::prepend_attr(x.sym_sizes(), s.attrs), s.desc});
      }
      return out;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{
          shape::reference_adjoint(pad_reference, a.shape(0), shape::drop_attrs(a, 1), in[0])};
    })
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:pad_backward");

Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  return kiln::pad(self, pad, "constant", value.to_double());
}

Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode,
           std::optional<double> value) {
  static const OpDef& op = get_op("pad");
  return call_op1(op, {self}, {pad.vec(), std::string(mode), opt_attr(value)});
}

}  // namespace kiln

// The registry op `_fused_sgd_` (kiln/optim/fused_sgd.h).
//
// inputs: params[n], grads[n], and with momentum momentum_buffers[n]
// attrs:  weight_decay, momentum, lr, dampening, nesterov, maximize, steps (int[n])
// outputs: the tensors written in place: params (, momentum_buffers)
#include "kiln/optim/fused_sgd.h"

#include "kiln/ops/samples.h"
#include "kiln/optim/fused.h"
#include "kiln/optim/fused_lists.h"

namespace kiln {
namespace {

const std::vector<const char*>& names(bool momentum) {
  static const std::vector<const char*> with{"param", "grad", "momentum_buffer"};
  static const std::vector<const char*> without{"param", "grad"};
  return momentum ? with : without;
}

std::vector<TensorSpec> fused_sgd_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const bool momentum = a.f(1) != 0;
  KILN_CHECK(!a.b(4) || (momentum && a.f(3) == 0),
             "_fused_sgd_: Nesterov momentum requires a momentum and zero dampening, got momentum ",
             a.f(1), " and dampening ", a.f(3));
  return tensor_lists_meta("_fused_sgd_", in, names(momentum), a.ints(6),
                           momentum ? std::vector<int>{0, 2} : std::vector<int>{0});
}

void fused_sgd_cpu(const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
  const double wd = a.f(0), mom = a.f(1), lr = a.f(2), damp = a.f(3);
  const bool nesterov = a.b(4);
  const double sign = a.b(5) ? -1 : 1;
  const TensorLists l = tensor_lists("_fused_sgd_", in, names(mom != 0), a.ints(6));
  NoGradGuard no_grad;
  // Dense copies of momentum buffers that are not dense, alive until written back.
  std::vector<Tensor> buffers(static_cast<size_t>(mom == 0 ? 0 : l.n));
  optim::MultiTensorUpdate update;
  for (int64_t i = 0; i < l.n; ++i) {
    const Tensor &p = in[l.at(0, i)], &g = in[l.at(1, i)];
    // In the parameter's compute dtype, as PyTorch does, so that the loops vectorise. Runs in
    // update.run(): captures by value.
    if (mom == 0) {
      update.add<0>(p, g, {}, [=]<class T>(T* w, const T* gr, auto, int64_t b, int64_t e) {
        const T c_lr = lr, c_sign = sign, c_wd = wd;
        for (int64_t j = b; j < e; ++j) w[j] -= c_lr * (c_sign * gr[j] + c_wd * w[j]);
      });
      continue;
    }
    const bool first = a.ints(6)[i] == 1;
    Tensor& buf = buffers[static_cast<size_t>(i)];
    buf = dense_state(in[l.at(2, i)]);
    update.add<1>(p, g, {&buf}, [=]<class T>(T* w, const T* gr, auto st, int64_t b, int64_t e) {
      T* m = st[0];
      const T c_lr = lr, c_sign = sign, c_wd = wd, c_mom = mom, c_1md = 1 - damp;
      for (int64_t j = b; j < e; ++j) {
        const T d = c_sign * gr[j] + c_wd * w[j];
        const T v = first ? d : c_mom * m[j] + c_1md * d;
        m[j] = v;
        w[j] -= c_lr * (nesterov ? d + c_mom * v : v);
      }
    });
  }
  update.run();
  for (size_t i = 0; i < buffers.size(); ++i)
    write_back(in[l.at(2, static_cast<int64_t>(i))], buffers[i]);
}

// The same step in double precision, written independently of the kernel.
std::vector<Tensor> fused_sgd_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const double wd = a.f(0), mom = a.f(1), lr = a.f(2), damp = a.f(3);
  const TensorLists l = tensor_lists("reference", in, names(mom != 0), a.ints(6));
  std::vector<Tensor> params, buffers;
  for (int64_t i = 0; i < l.n; ++i) {
    const Tensor p = in[l.at(0, i)].to(kFloat64);
    Tensor d = in[l.at(1, i)].to(kFloat64) * (a.b(5) ? -1 : 1) + p * wd;
    if (mom != 0) {
      const Tensor buf = a.ints(6)[i] == 1 ? d : in[l.at(2, i)].to(kFloat64) * mom + d * (1 - damp);
      buffers.push_back(buf);
      d = a.b(4) ? d + buf * mom : buf;
    }
    params.push_back(p - d * lr);
  }
  params.insert(params.end(), buffers.begin(), buffers.end());
  return params;
}

// Parameters of several shapes (a transposed one, a scalar, an empty one), with momentum
// buffers from earlier steps in their compute dtype.
std::vector<OpSample> fused_sgd_samples(ScalarType dt) {
  const ScalarType state = dt == kFloat64 ? kFloat64 : kFloat32;
  auto lists = [&](bool momentum) {
    std::vector<Tensor> p, g, b;
    const std::vector<std::vector<int64_t>> shapes = {{5, 7}, {3, 4}, {}, {0, 2}, {33}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto mk = [&](ScalarType d, double lo, double hi) {
        Tensor t = samples::make(shapes[i], d, lo, hi);
        return i == 1 ? t.t() : t;
      };
      p.push_back(mk(dt, -2, 2)), g.push_back(mk(dt, -1, 1));
      if (momentum) b.push_back(mk(state, -0.5, 0.5));
    }
    return concat_lists({&p, &g, &b});
  };
  using V = std::vector<int64_t>;
  return {
      {lists(false), {0.0, 0.0, 0.1, 0.0, false, false, V{1, 1, 1, 1, 1}}, "plain"},
      {lists(false),
       {0.05, 0.0, 0.1, 0.0, false, true, V{3, 3, 3, 3, 3}},
       "weight decay, maximize"},
      {lists(true),
       {0.0, 0.9, 0.1, 0.0, false, false, V{1, 2, 1, 5, 2}},
       "momentum, first steps and later ones"},
      {lists(true), {0.01, 0.9, 0.05, 0.0, true, false, V{4, 4, 4, 4, 4}}, "nesterov"},
      {lists(true), {0.0, 0.8, 0.1, 0.3, false, false, V{2, 2, 2, 2, 2}}, "dampening"},
  };
}

std::vector<OpErrorSample> fused_sgd_error_samples() {
  const Tensor p = samples::make({3, 2}, kFloat32), g = samples::make({3, 2}, kFloat32);
  using V = std::vector<int64_t>;
  return {
      {{p, g, p.clone()},
       {0.0, 0.0, 0.1, 0.0, false, false, V{1}},
       "expected 2 lists of equal length",
       "a momentum buffer without momentum"},
      {{p, g, p.clone()},
       {0.0, 0.9, 0.1, 0.5, true, false, V{1}},
       "Nesterov momentum requires a momentum and zero dampening",
       "nesterov with dampening"},
      {{p, g.to(kFloat64)},
       {0.0, 0.0, 0.1, 0.0, false, false, V{1}},
       "grad 0 must be float32[3, 2]",
       "a gradient of another dtype"},
  };
}

KILN_REGISTER_OP(_fused_sgd_)
    .schema(
        "_fused_sgd_(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] momentum_buffer_list, *, "
        "float weight_decay, float momentum, float lr, float dampening, bool nesterov, bool "
        "maximize, int[] steps) -> Tensor[]")
    .meta(fused_sgd_meta)
    .cpu(fused_sgd_cpu)
    .inplace()
    .samples(fused_sgd_samples)
    .error_samples(fused_sgd_error_samples)
    .reference(fused_sgd_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16});

}  // namespace

void _fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& momentum_buffers, const std::vector<int64_t>& steps,
                 const FusedSGDOptions& o) {
  static const OpDef& op = get_op("_fused_sgd_");
  call_op(op, concat_lists({&params, &grads, &momentum_buffers}),
          {o.weight_decay, o.momentum, o.lr, o.dampening, o.nesterov, o.maximize, steps});
}

}  // namespace kiln

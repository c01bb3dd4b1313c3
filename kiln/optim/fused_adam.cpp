// The registry ops `_fused_adam_` and `_fused_adamw_` (kiln/optim/fused_adam.h).
//
// inputs: params[n], grads[n], exp_avgs[n], exp_avg_sqs[n], and with amsgrad max_exp_avg_sqs[n]
// attrs:  lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, steps (int[n])
// outputs: the tensors written in place: params, exp_avgs, exp_avg_sqs (, max_exp_avg_sqs)
#include "kiln/optim/fused_adam.h"

#include <array>
#include <cmath>

#include "kiln/ops/meta.h"
#include "kiln/ops/samples.h"
#include "kiln/optim/fused.h"
#include "kiln/optim/fused_lists.h"

namespace kiln {
namespace {

using optim::compute_dtype;

const std::vector<const char*>& names(bool amsgrad) {
  static const std::vector<const char*> with{"param", "grad", "exp_avg", "exp_avg_sq",
                                             "max_exp_avg_sq"};
  static const std::vector<const char*> without(with.begin(), with.end() - 1);
  return amsgrad ? with : without;
}

struct Lists : TensorLists {
  bool amsgrad;
};

// list 0 params, 1 grads, 2 exp_avgs, 3 exp_avg_sqs, 4 max_exp_avg_sqs
Lists lists_of(const char* op, const std::vector<Tensor>& in, const Attrs& a) {
  return {tensor_lists(op, in, names(a.b(5)), a.ints(7)), a.b(5)};
}

std::vector<TensorSpec> fused_adam_meta(const char* op, const std::vector<Tensor>& in,
                                        const Attrs& a) {
  const bool amsgrad = a.b(5);
  return tensor_lists_meta(op, in, names(amsgrad), a.ints(7),
                           amsgrad ? std::vector<int>{0, 2, 3, 4} : std::vector<int>{0, 2, 3});
}

void fused_adam_cpu(const std::vector<Tensor>& in, const Attrs& a, bool decoupled) {
  const Lists l = lists_of(decoupled ? "_fused_adamw_" : "_fused_adam_", in, a);
  const double lr = a.f(0), beta1 = a.f(1), beta2 = a.f(2), wd = a.f(3), eps = a.f(4);
  const double sign = a.b(6) ? -1 : 1;
  NoGradGuard no_grad;
  // Dense copies of state that is not dense (written back after the update), alive until then.
  std::vector<std::array<Tensor, 3>> states(static_cast<size_t>(l.n));
  optim::MultiTensorUpdate update;
  for (int64_t i = 0; i < l.n; ++i) {
    const double t = static_cast<double>(a.ints(7)[i]);
    const double step_size = lr / (1 - std::pow(beta1, t));
    const double inv_sqrt_bc2 = 1 / std::sqrt(1 - std::pow(beta2, t));
    const double decay = decoupled ? 1 - lr * wd : 1;
    const double l2 = decoupled ? 0 : wd;
    std::array<Tensor, 3>& st = states[static_cast<size_t>(i)];
    st[0] = dense_state(in[l.at(2, i)]);
    st[1] = dense_state(in[l.at(3, i)]);
    st[2] = l.amsgrad ? dense_state(in[l.at(4, i)]) : st[1];
    // In the parameter's compute dtype, as PyTorch does, so that the loops vectorise (this
    // file is built with -fno-math-errno for the square roots). Runs in update.run(): captures
    // by value.
    const bool amsgrad = l.amsgrad;
    update.add<3>(
        in[l.at(0, i)], in[l.at(1, i)], {&st[0], &st[1], &st[2]},
        [=]<class T>(T* w, const T* g, auto buf, int64_t b, int64_t e) {
          T *ma = buf[0], *va = buf[1], *vm = buf[2];
          const T c_decay = decay, c_sign = sign, c_l2 = l2, c_step = step_size, c_eps = eps;
          const T c_bc2 = inv_sqrt_bc2, c_beta1 = 1 - beta1, c_beta2 = beta2, c_1mb2 = 1 - beta2;
          auto moments = [&](int64_t i) {
            const T d = c_sign * g[i] + c_l2 * w[i];
            ma[i] += c_beta1 * (d - ma[i]);
            va[i] = c_beta2 * va[i] + c_1mb2 * d * d;
          };
          if (amsgrad) {
            for (int64_t i = b; i < e; ++i) {
              moments(i);
              vm[i] = std::max(vm[i], va[i]);
              w[i] = w[i] * c_decay - c_step * ma[i] / (std::sqrt(vm[i]) * c_bc2 + c_eps);
            }
          } else {
            for (int64_t i = b; i < e; ++i) {
              moments(i);
              w[i] = w[i] * c_decay - c_step * ma[i] / (std::sqrt(va[i]) * c_bc2 + c_eps);
            }
          }
        });
  }
  update.run();
  for (int64_t i = 0; i < l.n; ++i) {
    const std::array<Tensor, 3>& st = states[static_cast<size_t>(i)];
    write_back(in[l.at(2, i)], st[0]);
    write_back(in[l.at(3, i)], st[1]);
    if (l.amsgrad) write_back(in[l.at(4, i)], st[2]);
  }
}

// The same step in double precision, element by element, written independently of the kernel.
std::vector<Tensor> fused_adam_reference(const std::vector<Tensor>& in, const Attrs& a,
                                         bool decoupled) {
  const Lists l = lists_of("reference", in, a);
  const double lr = a.f(0), beta1 = a.f(1), beta2 = a.f(2), wd = a.f(3), eps = a.f(4);
  std::vector<Tensor> out[5];
  for (int64_t i = 0; i < l.n; ++i) {
    Tensor p = in[l.at(0, i)].to(kFloat64).contiguous(), g = in[l.at(1, i)].to(kFloat64);
    Tensor m = in[l.at(2, i)].to(kFloat64).contiguous();
    Tensor v = in[l.at(3, i)].to(kFloat64).contiguous();
    Tensor vmax = l.amsgrad ? in[l.at(4, i)].to(kFloat64).contiguous() : v.clone();
    g = (a.b(6) ? -g : g).contiguous();
    const double t = static_cast<double>(a.ints(7)[i]);
    double *pw = p.data_ptr<double>(), *pm = m.data_ptr<double>(), *pv = v.data_ptr<double>();
    double* px = vmax.data_ptr<double>();
    const double* pg = g.data_ptr<double>();
    for (int64_t j = 0; j < p.numel(); ++j) {
      const double d = decoupled ? pg[j] : pg[j] + wd * pw[j];
      if (decoupled) pw[j] *= 1 - lr * wd;
      pm[j] = beta1 * pm[j] + (1 - beta1) * d;
      pv[j] = beta2 * pv[j] + (1 - beta2) * d * d;
      px[j] = std::max(px[j], pv[j]);
      const double m_hat = pm[j] / (1 - std::pow(beta1, t));
      const double v_hat = (l.amsgrad ? px[j] : pv[j]) / (1 - std::pow(beta2, t));
      pw[j] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
    for (Tensor* r : {&p, &m, &v, &vmax}) *r = r->view(in[l.at(0, i)].sizes());
    out[0].push_back(p), out[2].push_back(m), out[3].push_back(v), out[4].push_back(vmax);
  }
  std::vector<Tensor> all;
  for (int k : {0, 2, 3, 4})
    if (k < 4 || l.amsgrad) all.insert(all.end(), out[k].begin(), out[k].end());
  return all;
}

// Lists of parameters of several shapes (a transposed one, a scalar, an empty one), with state
// from earlier steps; float32 state for 16-bit parameters.
std::vector<OpSample> fused_adam_samples(ScalarType dt) {
  const ScalarType state = dt == kFloat64 ? kFloat64 : kFloat32;
  auto lists = [&](bool amsgrad) {
    const std::vector<std::vector<int64_t>> shapes = {{5, 7}, {4, 3}, {}, {0, 2}, {33}};
    std::vector<Tensor> p, g, m, v, vm;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const bool transposed = i == 1;
      std::vector<int64_t> s = shapes[i];
      if (transposed) std::swap(s[0], s[1]);
      auto mk = [&](ScalarType d, double lo, double hi) {
        Tensor t = samples::make(s, d, lo, hi);
        return transposed ? t.t() : t;
      };
      p.push_back(mk(dt, -2, 2)), g.push_back(mk(dt, -1, 1)), m.push_back(mk(state, -0.1, 0.1));
      v.push_back(mk(state, 0, 0.01));
      if (amsgrad) vm.push_back(mk(state, 0, 0.02));
    }
    std::vector<Tensor> all;
    for (auto* l : {&p, &g, &m, &v, &vm}) all.insert(all.end(), l->begin(), l->end());
    return all;
  };
  using V = std::vector<int64_t>;
  return {
      {lists(false), {1e-2, 0.9, 0.999, 0.0, 1e-8, false, false, V{1, 1, 1, 1, 1}}, "first step"},
      {lists(false),
       {1e-2, 0.8, 0.99, 0.1, 1e-6, false, false, V{3, 7, 2, 1, 12}},
       "weight decay, steps that differ"},
      {lists(true), {3e-3, 0.9, 0.999, 0.05, 1e-8, true, false, V{2, 2, 2, 2, 2}}, "amsgrad"},
      {lists(false), {1e-2, 0.9, 0.999, 0.0, 1e-8, false, true, V{4, 4, 4, 4, 4}}, "maximize"},
  };
}

std::vector<OpErrorSample> fused_adam_error_samples() {
  const Tensor p = samples::make({3, 2}, kFloat32), g = samples::make({3, 2}, kFloat32);
  const Attrs a{1e-3, 0.9, 0.999, 0.0, 1e-8, false, false, std::vector<int64_t>{1}};
  return {
      {{p, g, p.clone()}, a, "expected 4 lists of equal length", "three lists"},
      {{p, g, p.clone(), p.clone()},
       Attrs{1e-3, 0.9, 0.999, 0.0, 1e-8, false, false, std::vector<int64_t>{1, 1}},
       "expected 1 step counts, one per parameter, got 2",
       "steps"},
      {{p, samples::make({2, 3}, kFloat32), p.clone(), p.clone()},
       a,
       "grad 0 must be float32[3, 2]",
       "a grad of another shape"},
      {{p, g, p.to(kFloat64), p.clone()},
       a,
       "exp_avg 0 must be float32[3, 2]",
       "state of another dtype"},
      {{p.to(kInt64), g.to(kInt64), p.clone(), p.clone()},
       a,
       "param 0 must be a floating point tensor, got int64",
       "integer params"},
      {{p, g, p.clone(), p.clone()},
       Attrs{1e-3, 0.9, 0.999, 0.0, 1e-8, false, false, std::vector<int64_t>{0}},
       "step counts start at 1, got 0",
       "step 0"},
  };
}

OpDef& register_fused_adam(const char* name, bool decoupled) {
  return register_op(name)
      .schema(std::string(name) +
              "(Tensor(a!)[] self, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] "
              "exp_avg_sqs, Tensor(d!)[] max_exp_avg_sqs, *, float lr, float beta1, float beta2, "
              "float weight_decay, float eps, bool amsgrad, bool maximize, int[] steps) -> "
              "Tensor[]")
      .meta([name](const std::vector<Tensor>& in, const Attrs& a) {
        return fused_adam_meta(name, in, a);
      })
      .cpu([decoupled](const std::vector<Tensor>& in, std::vector<Tensor>&, const Attrs& a) {
        fused_adam_cpu(in, a, decoupled);
      })
      .inplace()
      .samples(fused_adam_samples)
      .error_samples(fused_adam_error_samples)
      .reference([decoupled](const std::vector<Tensor>& in, const Attrs& a) {
        return fused_adam_reference(in, a, decoupled);
      })
      .dtypes({kFloat64, kFloat32, kBFloat16});
}

[[maybe_unused]] const OpDef& kAdam = register_fused_adam("_fused_adam_", false);
[[maybe_unused]] const OpDef& kAdamW = register_fused_adam("_fused_adamw_", true);

void call_fused_adam(const OpDef& op, const std::vector<Tensor>& params,
                     const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
                     const std::vector<Tensor>& exp_avg_sqs,
                     const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                     const FusedAdamOptions& o) {
  call_op(op, concat_lists({&params, &grads, &exp_avgs, &exp_avg_sqs, &max_exp_avg_sqs}),
          {o.lr, o.beta1, o.beta2, o.weight_decay, o.eps, o.amsgrad, o.maximize, steps});
}

}  // namespace

void _fused_adam_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                  const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                  const FusedAdamOptions& options) {
  call_fused_adam(kAdam, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, options);
}

void _fused_adamw_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                   const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                   const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                   const FusedAdamOptions& options) {
  call_fused_adam(kAdamW, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, options);
}

}  // namespace kiln

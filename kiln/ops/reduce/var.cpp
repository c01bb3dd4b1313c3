// var, std, var_mean, std_mean with PyTorch's `correction` (divisor max(0, N - correction)).
#include <cmath>
#include <limits>

#include "kiln/backend/cpu/reduce.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// Sum of the elements, and of their squared deviations from `mean`, in double lanes.
template <class T>
struct SumInDouble {
  using C = cpu::compute_t<T>;
  using Lane = double;
  using Acc = double;
  double mean = 0;
  bool squares = false;
  Lane lane_init() const { return 0; }
  Lane fold(Lane a, C v) const {
    const double d = static_cast<double>(v) - mean;
    return squares ? a + d * d : a + static_cast<double>(v);
  }
  Lane merge(Lane a, Lane b) const { return a + b; }
  Acc acc_init() const { return 0; }
  Acc add_lane(Acc a, Lane l) const { return a + l; }
  Acc combine(Acc a, Acc b) const { return a + b; }
};

struct Moments {
  double n = 0, mean = 0, m2 = 0;  // count, mean, sum of squared deviations
};

// Each piece (at most kReduceBlock elements, in cache) takes two passes: its mean, then its
// squared deviations; pieces merge with Chan et al.'s pairwise update. One pass over memory,
// and accurate for data far from zero.
template <class T>
struct VarRuns {
  using Acc = Moments;
  T* var_out;   // var or std (may be null)
  T* mean_out;  // mean (may be null)
  double correction;
  bool take_sqrt;

  Acc init() const { return {}; }
  Acc run(const T* p, int64_t n) const {
    const double mean = cpu::fold_run<T>(SumInDouble<T>{0, false}, p, n) / static_cast<double>(n);
    return {static_cast<double>(n), mean, cpu::fold_run<T>(SumInDouble<T>{mean, true}, p, n)};
  }
  Acc combine(const Acc& a, const Acc& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n, delta = b.mean - a.mean;
    return {n, a.mean + delta * (b.n / n), a.m2 + b.m2 + delta * delta * (a.n * b.n / n)};
  }
  void write(int64_t o, const Acc& a, int64_t n) const {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    double v = a.m2 / std::max(0.0, static_cast<double>(n) - correction);
    if (take_sqrt) v = std::sqrt(v);
    if (var_out) var_out[o] = static_cast<T>(v);
    if (mean_out) mean_out[o] = static_cast<T>(n == 0 ? nan : a.mean);
  }
};

struct VarArgs {
  std::vector<int64_t> dims;
  double correction;
  bool keepdim;
};
VarArgs var_args(const char* op, const Tensor& x, const Attrs& a) {
  return {reduce::reduced_dims(op, a.ints(0), x.dim()), a.f(1), a.b(2)};
}

// d var / d x = 2 (x - mean) / (N - correction).
Tensor var_backward(const Tensor& grad, const Tensor& x, const VarArgs& v) {
  const double n = static_cast<double>(reduce::reduced_count(x, v.dims));
  Tensor g = reduce::with_kept_dims(grad, x, v.dims, v.keepdim);
  return g * (x - x.mean(v.dims, true)) * (2 / (n - v.correction));
}

// d std = d var / (2 std), with 0 where std is 0 (PyTorch's subgradient).
Tensor std_to_var_grad(const Tensor& grad, const Tensor& std) {
  return (grad / (std * 2)).masked_fill(std.eq(0), 0);
}

void register_var(const char* op, bool take_sqrt, bool with_mean) {
  std::string outputs = with_mean ? "(Tensor, Tensor)" : "Tensor";
  OpDef& def = register_op(op);
  def.schema(std::string(op) +
             "(Tensor self, int[] dim=[], float correction=1, bool keepdim=False) -> " + outputs)
      .meta([op, with_mean](const std::vector<Tensor>& in, const Attrs& a) {
        const Tensor& x = in[0];
        KILN_CHECK(is_floating_point(x.dtype()), op,
                   ": std and var only support floating point and complex dtypes (got ", x.dtype(),
                   ")");
        VarArgs v = var_args(op, x, a);
        TensorSpec s =
            meta::spec(reduce::reduced_shape(x, v.dims, v.keepdim), x.dtype(), x.device());
        return with_mean ? std::vector<TensorSpec>{s, s} : std::vector<TensorSpec>{s};
      })
      .cpu([op, take_sqrt, with_mean](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                      const Attrs& a) {
        VarArgs v = var_args(op, in[0], a);
        cpu::visit_floating(in[0].dtype(), op, [&](auto tag) {
          using T = decltype(tag);
          T* mean_out = with_mean ? out[1].data_ptr<T>() : nullptr;
          cpu::reduce_runs<T>(in[0], v.dims,
                              VarRuns<T>{out[0].data_ptr<T>(), mean_out, v.correction, take_sqrt});
        });
      })
      .save_inputs({0})
      .backward([op, take_sqrt, with_mean](const BackwardContext& c) {
        const Tensor& x = c.input(0);
        VarArgs v = var_args(op, x, c.attrs);
        Tensor g = take_sqrt ? std_to_var_grad(c.grad(0), c.output(0)) : c.grad(0);
        Tensor result = var_backward(g, x, v);
        if (with_mean) {
          const double n = static_cast<double>(reduce::reduced_count(x, v.dims));
          result = result + reduce::expand_back(c.grad(1), x, v.dims, v.keepdim) * (1 / n);
        }
        return std::vector<Tensor>{result};
      })
      .samples([](ScalarType dt) {
        using V = std::vector<int64_t>;
        auto s = reduce::samples(dt, {}, [](const V& dims, bool keepdim) {
          return Attrs{dims, 1.0, keepdim};
        });
        s.push_back({{samples::make({3, 4}, dt)}, {V{1}, 0.0, false}, "correction 0"});
        s.push_back({{samples::make({3, 4}, dt)}, {V{0}, 2.0, true}, "correction 2"});
        s.push_back({{samples::make({3, 4}, dt)}, {V{}, 0.5, false}, "correction 0.5"});
        s.push_back({{samples::make({2, 5}, dt, 1000, 1001)}, {V{1}, 1.0, false}, "far from 0"});
        // Finite differences of NaN (N <= correction) cannot be compared.
        for (auto& x : s) {
          const Tensor& t = x.inputs[0];
          auto dims = reduce::reduced_dims("var", x.attrs.ints(0), t.dim());
          if (reduce::reduced_count(t, dims) <= x.attrs.f(1)) x.check_grad = false;
        }
        return s;
      })
      .error_samples([] {
        using V = std::vector<int64_t>;
        auto s = reduce::error_samples({}, [](const V& dims, bool keepdim) {
          return Attrs{dims, 1.0, keepdim};
        });
        s.push_back({{samples::make({3}, kInt64)},
                     {V{}, 1.0, false},
                     "only support floating point and complex dtypes (got int64)",
                     "integers"});
        return s;
      })
      .reference([op, take_sqrt, with_mean](const std::vector<Tensor>& in, const Attrs& a) {
        VarArgs v = var_args(op, in[0], a);
        std::vector<Tensor> out;
        out.push_back(reduce::reference(in[0], v.dims, v.keepdim, [&](const auto& xs) {
          double mean = 0, m2 = 0;
          for (double x : xs) mean += x / static_cast<double>(xs.size());
          for (double x : xs) m2 += (x - mean) * (x - mean);
          double var = m2 / std::max(0.0, static_cast<double>(xs.size()) - v.correction);
          return take_sqrt ? std::sqrt(var) : var;
        }));
        if (with_mean) {
          out.push_back(reduce::reference(in[0], v.dims, v.keepdim, [](const auto& xs) {
            double s = 0;
            for (double x : xs) s += x;
            return s / static_cast<double>(xs.size());
          }));
        }
        return out;
      })
      .dtypes(reduce::kFloatDtypes)
      .lowering(std::string("reduction:") + op);
  if (take_sqrt) def.save_outputs({0});  // std's backward divides by the result
}

[[maybe_unused]] const bool registered = [] {
  register_var("var", false, false);
  register_var("std", true, false);
  register_var("var_mean", false, true);
  register_var("std_mean", true, true);
  return true;
}();

Attrs var_attrs(OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim) {
  return {dim ? dim->vec() : std::vector<int64_t>{}, correction ? correction->to_double() : 1.0,
          keepdim};
}

std::vector<Tensor> call_var(const char* name, const Tensor& self, OptionalIntArrayRef dim,
                             const std::optional<Scalar>& correction, bool keepdim) {
  return call_op(get_op(name), {self}, var_attrs(dim, correction, keepdim));
}

detail::TensorPair pair_of(std::vector<Tensor> out) { return {out[0], out[1]}; }

}  // namespace

Tensor var(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction,
           bool keepdim) {
  return call_var("var", self, dim, correction, keepdim)[0];
}
Tensor std(const Tensor& self, OptionalIntArrayRef dim, const std::optional<Scalar>& correction,
           bool keepdim) {
  return call_var("std", self, dim, correction, keepdim)[0];
}
detail::TensorPair var_mean(const Tensor& self, OptionalIntArrayRef dim,
                            const std::optional<Scalar>& correction, bool keepdim) {
  return pair_of(call_var("var_mean", self, dim, correction, keepdim));
}
detail::TensorPair std_mean(const Tensor& self, OptionalIntArrayRef dim,
                            const std::optional<Scalar>& correction, bool keepdim) {
  return pair_of(call_var("std_mean", self, dim, correction, keepdim));
}

// The unbiased and one-dim forms, in terms of the correction form above.
#define KILN_DEFINE_VAR_FORMS(R, name)                                               \
  R name(const Tensor& self, bool unbiased) {                                        \
    return name(self, std::nullopt, Scalar(unbiased ? 1 : 0), false);                \
  }                                                                                  \
  R name(const Tensor& self, OptionalIntArrayRef dim, bool unbiased, bool keepdim) { \
    return name(self, dim, Scalar(unbiased ? 1 : 0), keepdim);                       \
  }                                                                                  \
  R name(const Tensor& self, int dim) {                                              \
    const int64_t d = dim;                                                           \
    return name(self, IntArrayRef(d), std::nullopt, false);                          \
  }
KILN_DEFINE_VAR_FORMS(Tensor, var)
KILN_DEFINE_VAR_FORMS(Tensor, std)
KILN_DEFINE_VAR_FORMS(detail::TensorPair, var_mean)
KILN_DEFINE_VAR_FORMS(detail::TensorPair, std_mean)
#undef KILN_DEFINE_VAR_FORMS

#define KILN_DEFINE_VAR_METHODS(name)                                                   \
  Tensor Tensor::name(bool unbiased) const { return kiln::name(*this, unbiased); }      \
  Tensor Tensor::name(OptionalIntArrayRef dim, bool unbiased, bool keepdim) const {     \
    return kiln::name(*this, dim, unbiased, keepdim);                                   \
  }                                                                                     \
  Tensor Tensor::name(OptionalIntArrayRef dim, const std::optional<Scalar>& correction, \
                      bool keepdim) const {                                             \
    return kiln::name(*this, dim, correction, keepdim);                                 \
  }                                                                                     \
  Tensor Tensor::name(int dim) const { return kiln::name(*this, dim); }
KILN_DEFINE_VAR_METHODS(var)
KILN_DEFINE_VAR_METHODS(std)
#undef KILN_DEFINE_VAR_METHODS

}  // namespace kiln

// norm (vector p-norms over any dims) and logsumexp.
#include <cmath>
#include <limits>

#include "kiln/backend/cpu/reduce.h"
#include "kiln/backend/cpu/reduce_float_runs.h"
#include "kiln/backend/cpu/reduce_math.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class NormKind { Zero, One, Two, Inf, NegInf, General };

NormKind norm_kind(double p) {
  if (p == 0) return NormKind::Zero;
  if (p == 1) return NormKind::One;
  if (p == 2) return NormKind::Two;
  if (p == kInf) return NormKind::Inf;
  if (p == -kInf) return NormKind::NegInf;
  return NormKind::General;
}

// Sums of |x|^p (in float lanes and a double total for float types) or max / min of |x|.
template <class T, NormKind K>
struct NormReducer {
  using C = cpu::compute_t<T>;
  static constexpr bool kAdds = K != NormKind::Inf && K != NormKind::NegInf;
  using Lane = C;
  using Acc = std::conditional_t<kAdds, double, C>;
  T* out;
  double p;

  template <class A>
  static A pick(A a, A m) {
    const A best = (K == NormKind::Inf ? m > a : m < a) ? m : a;  // vectorises (see amax)
    return m != m ? m : best;
  }
  Lane lane_init() const {
    return K == NormKind::NegInf ? std::numeric_limits<C>::infinity() : C(0);
  }
  Lane fold(Lane a, C v) const {
    const C m = std::abs(v);
    if constexpr (K == NormKind::Zero)
      return a + (v != C(0) ? C(1) : C(0));
    else if constexpr (K == NormKind::One)
      return a + m;
    else if constexpr (K == NormKind::Two)
      return a + v * v;
    else if constexpr (K == NormKind::General)
      return a + static_cast<C>(std::pow(m, static_cast<C>(p)));
    else
      return pick(a, m);
  }
  Lane merge(Lane a, Lane b) const {
    if constexpr (kAdds)
      return a + b;
    else
      return pick(a, b);
  }
  Acc acc_init() const { return static_cast<Acc>(lane_init()); }
  Acc add_lane(Acc a, Lane l) const {
    if constexpr (kAdds)
      return a + l;
    else
      return pick(a, l);
  }
  Acc combine(Acc a, Acc b) const {
    if constexpr (kAdds)
      return a + b;
    else
      return pick(a, b);
  }
  void write(int64_t o, Acc a, int64_t) const {
    if constexpr (K == NormKind::Two)
      out[o] = static_cast<T>(std::sqrt(a));
    else if constexpr (K == NormKind::General)
      out[o] = static_cast<T>(std::pow(a, 1 / p));
    else
      out[o] = static_cast<T>(a);
  }
};

template <class T, NormKind K>
void norm_as(const Tensor& x, const std::vector<int64_t>& dims, const Tensor& out, double p) {
  cpu::reduce_elementwise<T>(x, dims, NormReducer<T, K>{out.data_ptr<T>(), p});
}

struct NormArgs {
  double p;
  std::vector<int64_t> dims;
  bool keepdim;
};
NormArgs norm_args(const Tensor& x, const Attrs& a) {
  return {a.f(0), reduce::reduced_dims("norm", a.ints(1), x.dim()), a.b(2)};
}

// PyTorch's norm_backward: a subgradient of 0 where the norm (or |x| for p < 1) is 0, and the
// inf-norms' gradient split evenly among the elements of largest (smallest) magnitude.
Tensor norm_backward(const Tensor& grad, const Tensor& x, const Tensor& result, const NormArgs& a) {
  const double p = a.p;
  if (p == 0) return zeros_like(x);
  Tensor g = reduce::with_kept_dims(grad, x, a.dims, a.keepdim);
  Tensor r = reduce::with_kept_dims(result, x, a.dims, a.keepdim);
  if (p == 1) return x.sign() * g;
  // Where the norm is 0 the quotient is masked to 0, and so is its own gradient: dividing by 1
  // there keeps the double backward (forward mode) free of 0/0.
  const Tensor zero = r.eq(0);
  const Tensor safe_r = r.masked_fill(zero, 1);
  if (p == 2) return x * (g / safe_r).masked_fill(zero, 0);
  if (std::isinf(p)) {
    Tensor hit = x.abs().eq(r);
    return x.sign() * (g / hit.sum(a.dims, true)) * hit;
  }
  if (p < 1) {
    return x.sign() * x.abs().pow(p - 1).masked_fill(x.eq(0), 0) * g * r.pow(1 - p);
  }
  Tensor scale = (g / safe_r.pow(p - 1)).masked_fill(zero, 0);
  if (p < 2) return x.sign() * x.abs().pow(p - 1) * scale;
  return x * x.abs().pow(p - 2) * scale;
}

std::vector<OpSample> norm_samples(ScalarType dt) {
  using V = std::vector<int64_t>;
  auto s = reduce::samples(dt, {}, [](const V& dims, bool keepdim) {
    return Attrs{2.0, dims, keepdim, std::monostate{}};
  });
  Tensor zero_row = tensor({{0.0, 0.0, 0.0}, {1.5, -2.0, 0.5}}, TensorOptions(kFloat64)).to(dt);
  for (double p : {1.0, kInf, -kInf, 0.0, 3.0, 0.5, 1.5, -1.5}) {
    std::string name = "p=" + std::to_string(p);
    s.push_back({{samples::make({3, 4}, dt)}, {p, V{1}, false, std::monostate{}}, name});
    s.push_back({{samples::make({2, 3, 4}, dt)}, {p, V{0, 2}, true, std::monostate{}}, name});
    if (p >= 0) s.push_back({{zero_row}, {p, V{1}, false, std::monostate{}}, name + " zero row"});
  }
  s.push_back({{samples::make({3, 4}, dt)}, {2.0, V{1}, false, kFloat64}, "dtype float64"});
  return s;
}

Tensor norm_reference(const Tensor& x, const NormArgs& a) {
  const double p = a.p;
  return reduce::reference(x, a.dims, a.keepdim, [p](const std::vector<double>& v) {
    if (std::isinf(p)) {
      double m = p > 0 ? 0 : kInf;
      for (double e : v) m = p > 0 ? std::max(m, std::abs(e)) : std::min(m, std::abs(e));
      return m;
    }
    double s = 0;
    for (double e : v) s += p == 0 ? (e != 0) : std::pow(std::abs(e), p);
    return p == 0 ? s : std::pow(s, 1 / p);
  });
}

// ---- logsumexp ----

// Per piece: its max m and sum of exp(x - m); pieces merge by rescaling to the larger max.
template <class T>
struct LogSumExpRuns {
  struct Acc {
    double m, s;
  };
  T* out;

  Acc init() const { return {-kInf, 0}; }
  Acc run(const T* p, int64_t n) const {
    using C = cpu::compute_t<T>;
    int64_t i = 0;
    double m, s = 0;
    if constexpr (std::is_same_v<C, float>) {
      float mf = -INFINITY;
      if (!cpu::extreme_of_run<true>(p, n, mf))
        for (; i < n; ++i) mf = cpu::max_nan(mf, static_cast<float>(p[i]));
      if (!std::isfinite(mf)) return {mf, 0};
      cpu::fvec sv = cpu::splat(0);
      for (i = 0; i + cpu::kVec <= n; i += cpu::kVec) sv += cpu::exp_vec(cpu::load_vec(p + i) - mf);
      s = cpu::hsum(sv);
      for (; i < n; ++i) s += cpu::exp_scalar(static_cast<float>(p[i]) - mf);
      m = mf;
    } else {
      m = -kInf;
      for (; i < n; ++i) m = cpu::max_nan(m, static_cast<double>(p[i]));
      if (!std::isfinite(m)) return {m, 0};
      for (i = 0; i < n; ++i) s += std::exp(static_cast<double>(p[i]) - m);
    }
    return {m, s};
  }
  Acc combine(const Acc& a, const Acc& b) const {
    if (std::isnan(a.m) || std::isnan(b.m)) return {a.m + b.m, 0};
    if (a.m == -kInf) return b;
    if (b.m == -kInf) return a;
    if (a.m == kInf || b.m == kInf) return {kInf, 0};
    const double m = std::max(a.m, b.m);
    return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
  }
  // +-inf and NaN maxima decide the result alone (all -inf: -inf; any +inf: +inf).
  void write(int64_t o, const Acc& a, int64_t) const {
    out[o] = static_cast<T>(std::isfinite(a.m) ? a.m + std::log(a.s) : a.m);
  }
};

}  // namespace

KILN_REGISTER_OP(norm)
    .schema(
        "norm(Tensor self, float p=2, int[] dim=[], bool keepdim=False, ScalarType? dtype=None) -> "
        "Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      KILN_CHECK(is_floating_point(x.dtype()),
                 "norm: Expected a floating point or complex tensor as input. Got ", x.dtype());
      auto dt = a.opt_dtype(3);
      KILN_CHECK(!dt || is_floating_point(*dt),
                 "norm: the dtype argument must be a floating point dtype, got ", *dt);
      NormArgs n = norm_args(x, a);
      if (n.p < 0 || std::isinf(n.p)) {
        for (int64_t d : n.dims) {
          auto size = x.sym_size(d).maybe_int();
          KILN_CHECK(!size || *size != 0, "norm: cannot compute the ", n.p,
                     " norm on an empty tensor because the operation does not have an identity "
                     "(dim ",
                     d, " of the input ", x.sym_sizes(), " is empty)");
        }
      }
      return meta::one_spec(reduce::reduced_shape(x, n.dims, n.keepdim), dt ? *dt : x.dtype(),
                            x.device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      NormArgs n = norm_args(in[0], a);
      const ScalarType dt = out[0].dtype();
      Tensor x = in[0].dtype() == dt ? in[0] : in[0].to(dt);
      cpu::visit_floating(dt, "norm", [&](auto tag) {
        using T = decltype(tag);
        switch (norm_kind(n.p)) {
          case NormKind::Zero:
            return norm_as<T, NormKind::Zero>(x, n.dims, out[0], n.p);
          case NormKind::One:
            return norm_as<T, NormKind::One>(x, n.dims, out[0], n.p);
          case NormKind::Two:
            return norm_as<T, NormKind::Two>(x, n.dims, out[0], n.p);
          case NormKind::Inf:
            return norm_as<T, NormKind::Inf>(x, n.dims, out[0], n.p);
          case NormKind::NegInf:
            return norm_as<T, NormKind::NegInf>(x, n.dims, out[0], n.p);
          case NormKind::General:
            return norm_as<T, NormKind::General>(x, n.dims, out[0], n.p);
        }
      });
    })
    .save_outputs(/*inputs_too=*/true)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      return std::vector<Tensor>{norm_backward(c.grad(), x, c.output(), norm_args(x, c.attrs))};
    })
    .samples(norm_samples)
    .error_samples([] {
      using V = std::vector<int64_t>;
      const std::monostate none;
      auto s = reduce::error_samples({}, [none](const V& dims, bool keepdim) {
        return Attrs{2.0, dims, keepdim, none};
      });
      s.push_back({{samples::make({3}, kInt64)},
                   {2.0, V{}, false, none},
                   "Expected a floating point or complex tensor as input. Got int64",
                   "integers"});
      s.push_back({{samples::make({3}, kFloat32)},
                   {2.0, V{}, false, kInt64},
                   "the dtype argument must be a floating point dtype, got int64",
                   "integer dtype"});
      s.push_back({{samples::make({0, 3}, kFloat32)},
                   {INFINITY, V{0}, false, none},
                   "cannot compute the inf norm on an empty tensor because the operation does not "
                   "have an identity (dim 0 of the input [0, 3] is empty)",
                   "inf norm of an empty dim"});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      return std::vector<Tensor>{norm_reference(in[0], norm_args(in[0], a))};
    })
    .dtypes(reduce::kFloatDtypes)
    .lowering("reduction:norm");

KILN_REGISTER_OP(logsumexp)
    .schema("logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      auto dims = reduce::reduced_dims("logsumexp", a.ints(0), x.dim());
      return meta::one_spec(reduce::reduced_shape(x, dims, a.b(1)), meta::to_float_dtype(x.dtype()),
                            x.device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      auto dims = reduce::reduced_dims("logsumexp", a.ints(0), in[0].dim());
      const ScalarType dt = out[0].dtype();
      Tensor x = in[0].dtype() == dt ? in[0] : in[0].to(dt);
      cpu::visit_floating(dt, "logsumexp", [&](auto tag) {
        using T = decltype(tag);
        cpu::reduce_runs<T>(x, dims, LogSumExpRuns<T>{out[0].data_ptr<T>()});
      });
    })
    .save_outputs(/*inputs_too=*/true)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      auto dims = reduce::reduced_dims("logsumexp", c.attrs.ints(0), x.dim());
      Tensor g = reduce::with_kept_dims(c.grad(), x, dims, c.attrs.b(1));
      Tensor r = reduce::with_kept_dims(c.output(), x, dims, c.attrs.b(1));
      return std::vector<Tensor>{g * (x - r).exp()};
    })
    .samples([](ScalarType dt) {
      using V = std::vector<int64_t>;
      auto s = reduce::samples(dt, {}, [](const V& dims, bool keepdim) {
        return Attrs{dims, keepdim};
      });
      if (is_floating_point(dt)) {
        const double inf = kInf;
        s.push_back(
            {{tensor({{-inf, 2.0, 3.0}, {0.5, -inf, -1.0}}, TensorOptions(kFloat64)).to(dt)},
             {V{1}, false},
             "some -inf"});
        OpSample special{
            {tensor({{-inf, -inf, -inf}, {1.0, inf, 2.0}}, TensorOptions(kFloat64)).to(dt)},
            {V{1}, false},
            "all -inf, +inf"};
        special.check_grad = false;  // NaN gradients, as PyTorch's
        s.push_back(special);
        s.push_back({{samples::make({2, 3}, dt, 1000, 1010)}, {V{1}, true}, "large values"});
      }
      return s;
    })
    .error_samples([] {
      return reduce::error_samples({}, [](const std::vector<int64_t>& dims, bool keepdim) {
        return Attrs{dims, keepdim};
      });
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dims = reduce::reduced_dims("logsumexp", a.ints(0), in[0].dim());
      return std::vector<Tensor>{reduce::reference(in[0], dims, a.b(1), [](const auto& v) {
        double m = -kInf;
        for (double e : v) m = std::isnan(e) || e > m ? e : m;
        if (!std::isfinite(m)) return m;
        double s = 0;
        for (double e : v) s += std::exp(e - m);
        return m + std::log(s);
      })};
    })
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64})
    .lowering("reduction:logsumexp");

namespace {
const OpDef& op_norm() {
  static const OpDef& op = get_op("norm");
  return op;
}
}  // namespace

Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim) {
  return call_op1(op_norm(), {self},
                  {p ? p->to_double() : 2.0, dim.vec(), keepdim, std::monostate{}});
}
Tensor norm(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim,
            ScalarType dtype) {
  return call_op1(op_norm(), {self}, {p ? p->to_double() : 2.0, dim.vec(), keepdim, dtype});
}
Tensor norm(const Tensor& self, const Scalar& p) {
  return norm(self, std::optional<Scalar>(p), IntArrayRef{}, false);
}
Tensor frobenius_norm(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return norm(self, std::optional<Scalar>(2), dim, keepdim);
}
Tensor detail::named_norm(const Tensor& self, std::string_view p, IntArrayRef dim, bool keepdim) {
  KILN_CHECK(p == "fro", "norm: unsupported norm type '", p,
             "' (expected a number or \"fro\"; the nuclear norm is a matrix norm)");
  return frobenius_norm(self, dim, keepdim);
}
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  static const OpDef& op = get_op("logsumexp");
  return call_op1(op, {self}, {dim.vec(), keepdim});
}

Tensor Tensor::norm(const Scalar& p) const { return kiln::norm(*this, p); }
Tensor Tensor::norm(const Scalar& p, IntArrayRef dim, bool keepdim) const {
  return kiln::norm(*this, std::optional<Scalar>(p), dim, keepdim);
}
Tensor Tensor::norm(const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim,
                    ScalarType dtype) const {
  return kiln::norm(*this, p, dim, keepdim, dtype);
}
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const {
  return kiln::logsumexp(*this, dim, keepdim);
}

}  // namespace kiln

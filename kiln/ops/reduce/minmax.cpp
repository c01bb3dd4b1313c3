// amax, amin, max, min (full, and per dim with indices), argmax, argmin.
#include <cmath>
#include <limits>

#include "kiln/backend/cpu/reduce.h"
#include "kiln/backend/cpu/reduce_arg.h"
#include "kiln/backend/cpu/reduce_float_runs.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// Max (kMax) or min with NaN propagation, in the compute type (bool as uint8).
template <class T, bool kMax>
struct ExtremeReducer {
  using C = cpu::compute_t<T>;
  using Lane = std::conditional_t<std::is_same_v<C, bool>, uint8_t, C>;
  using Acc = Lane;
  T* out;

  // Written so that it vectorises to max/min then a NaN blend that is off the dependency chain.
  static Lane pick(Lane a, Lane v) {
    const Lane m = (kMax ? v > a : v < a) ? v : a;
    return v != v ? v : m;
  }
  Lane lane_init() const {
    if constexpr (std::is_floating_point_v<Lane>) {
      return kMax ? -std::numeric_limits<Lane>::infinity() : std::numeric_limits<Lane>::infinity();
    } else {
      return kMax ? std::numeric_limits<Lane>::lowest() : std::numeric_limits<Lane>::max();
    }
  }
  Lane fold(Lane a, C v) const { return pick(a, static_cast<Lane>(v)); }
  Acc fold_contiguous(const T* p, int64_t n) const {
    if constexpr (std::is_same_v<C, float>) {
      float result;
      if (cpu::extreme_of_run<kMax>(p, n, result)) return result;
    }
    return cpu::fold_run_lanes<T>(*this, p, n);
  }
  Lane merge(Lane a, Lane b) const { return pick(a, b); }
  Acc acc_init() const { return lane_init(); }
  Acc add_lane(Acc a, Lane l) const { return pick(a, l); }
  Acc combine(Acc a, Acc b) const { return pick(a, b); }
  void write(int64_t o, Acc a, int64_t) const { out[o] = static_cast<T>(a); }
};

template <bool kMax>
void extreme_kernel(const char* op, const Tensor& x, const std::vector<int64_t>& dims,
                    const Tensor& out) {
  cpu::visit_all(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::reduce_elementwise<T>(x, dims, ExtremeReducer<T, kMax>{out.data_ptr<T>()});
  });
}

// The gradient of an extreme value split evenly among the elements equal to it (NaN results
// go to the NaN elements).
Tensor distribute_evenly(const Tensor& grad, const Tensor& x, const Tensor& result,
                         const std::vector<int64_t>& dims, bool keepdim) {
  Tensor g = reduce::with_kept_dims(grad, x, dims, keepdim);
  Tensor r = reduce::with_kept_dims(result, x, dims, keepdim);
  Tensor hit = x.eq(r).logical_or(x.isnan().logical_and(r.isnan()));
  return g * hit / hit.sum(dims, true);
}

// amax / amin: attrs (dims, keepdim). max / min: no attrs (all dims).
MetaFn extreme_meta(const char* op, bool has_dims) {
  return [op, has_dims](const std::vector<Tensor>& in, const Attrs& a) {
    std::vector<int64_t> given = has_dims ? a.ints(0) : std::vector<int64_t>{};
    auto dims = reduce::reduced_dims(op, given, in[0].dim());
    reduce::check_nonempty(op, in[0], dims, !given.empty());
    bool keepdim = has_dims && a.b(1);
    return meta::one_spec(reduce::reduced_shape(in[0], dims, keepdim), in[0].dtype(),
                          in[0].device());
  };
}

template <bool kMax>
void register_extreme(const char* op, bool has_dims) {
  auto dims_of = [op, has_dims](const Tensor& x, const Attrs& a) {
    return reduce::reduced_dims(op, has_dims ? a.ints(0) : std::vector<int64_t>{}, x.dim());
  };
  register_op(op)
      .schema(has_dims
                  ? std::string(op) + "(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor"
                  : std::string(op) + "(Tensor self) -> Tensor")
      .meta(extreme_meta(op, has_dims))
      .cpu([op, dims_of](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        extreme_kernel<kMax>(op, in[0], dims_of(in[0], a), out[0]);
      })
      .save_outputs(/*inputs_too=*/true)
      .backward([dims_of, has_dims](const BackwardContext& c) {
        const Tensor& x = c.input(0);
        bool keepdim = has_dims && c.attrs.b(1);
        return std::vector<Tensor>{
            distribute_evenly(c.grad(), x, c.output(), dims_of(x, c.attrs), keepdim)};
      })
      .samples([has_dims](ScalarType dt) {
        reduce::SampleOptions opt;
        opt.empty_reduce = false;
        auto s = reduce::samples(dt, opt, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims, keepdim};
        });
        if (!has_dims) {  // max() / min(): every sample reduces all dims
          std::vector<OpSample> full;
          for (auto& x : s)
            if (x.inputs[0].sym_numel() > 0) full.push_back({x.inputs, {}, x.desc});
          return full;
        }
        return s;
      })
      .error_samples([has_dims] {
        reduce::SampleOptions opt;
        opt.empty_reduce = false;
        auto s = reduce::error_samples(opt, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims, keepdim};
        });
        if (has_dims) return s;
        std::vector<OpErrorSample> full;  // max() / min(): only an empty input fails
        for (auto& x : s)
          if (x.inputs[0].sym_numel() == 0 && x.attrs.ints(0).empty())
            full.push_back({x.inputs, {}, x.expected, x.desc});
        return full;
      })
      .reference([dims_of, has_dims](const std::vector<Tensor>& in, const Attrs& a) {
        bool keepdim = has_dims && a.b(1);
        return std::vector<Tensor>{
            reduce::reference(in[0], dims_of(in[0], a), keepdim, [](const auto& v) {
              double m = v[0];
              for (double x : v)
                if (std::isnan(x) || (kMax ? x > m : x < m)) m = x;
              return m;
            })};
      })
      .dtypes(reduce::kAllDtypes)
      .lowering(std::string("reduction:") + (kMax ? "max" : "min"));
}

[[maybe_unused]] const bool registered_extremes = [] {
  register_extreme<true>("amax", true);
  register_extreme<false>("amin", true);
  register_extreme<true>("max", false);
  register_extreme<false>("min", false);
  return true;
}();

// ---- max(dim) / min(dim) and argmax / argmin ----

template <bool kMax>
void arg_kernel(const char* op, const Tensor& x, int64_t dim, const Tensor* values,
                const Tensor& indices) {
  cpu::visit_all(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    cpu::arg_reduce<T, kMax>(x, dim, values ? values->data_ptr<T>() : nullptr,
                             indices.data_ptr<int64_t>());
  });
}

// max(dim)'s gradient goes to the returned index only.
Tensor index_backward(const Tensor& grad, const Tensor& x, const Tensor& indices, int64_t dim,
                      bool keepdim) {
  if (x.dim() == 0) return grad;
  SymShape shape(x.dim(), SymInt(1));
  shape[dim] = x.sym_size(dim);
  Tensor pos =
      arange(x.sym_size(dim).guard_int(), TensorOptions(kInt64).device(x.device())).reshape(shape);
  Tensor g = reduce::with_kept_dims(grad, x, {dim}, keepdim);
  Tensor idx = reduce::with_kept_dims(indices, x, {dim}, keepdim);
  return g * pos.eq(idx);
}

template <bool kMax>
void register_extreme_dim(const char* op) {
  register_op(op)
      .schema(std::string(kMax ? "max" : "min") +
              ".dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
      .meta([op](const std::vector<Tensor>& in, const Attrs& a) {
        const int64_t dim = meta::wrap_dim(op, a.i(0), in[0].dim());
        std::vector<int64_t> dims =
            in[0].dim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim};
        reduce::check_nonempty(op, in[0], dims, true);
        SymShape shape = reduce::reduced_shape(in[0], dims, a.b(1));
        return std::vector<TensorSpec>{meta::spec(shape, in[0].dtype(), in[0].device()),
                                       meta::spec(shape, kInt64, in[0].device())};
      })
      .cpu([op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        const int64_t dim = in[0].dim() == 0 ? 0 : meta::wrap_dim(op, a.i(0), in[0].dim());
        arg_kernel<kMax>(op, in[0], dim, &out[0], out[1]);
      })
      .save_outputs({1})  // the indices
      .backward([op](const BackwardContext& c) {
        const Tensor& x = c.input(0);
        const int64_t dim = x.dim() == 0 ? 0 : meta::wrap_dim(op, c.attrs.i(0), x.dim());
        return std::vector<Tensor>{index_backward(c.grad(0), x, c.output(1), dim, c.attrs.b(1))};
      })
      .samples([](ScalarType dt) {
        reduce::SampleOptions opt;
        opt.empty_reduce = false;
        opt.multi_dim = false;
        opt.full = false;
        return reduce::samples(dt, opt, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims.at(0), keepdim};
        });
      })
      .error_samples([] {
        reduce::SampleOptions opt;
        opt.empty_reduce = false;
        opt.multi_dim = false;
        opt.full = false;
        return reduce::error_samples(opt, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims.at(0), keepdim};
        });
      })
      .reference([op](const std::vector<Tensor>& in, const Attrs& a) {
        auto dims = reduce::reduced_dims(op, {a.i(0)}, in[0].dim());
        std::vector<Tensor> out;
        for (bool want_index : {false, true}) {
          out.push_back(reduce::reference(in[0], dims, a.b(1), [want_index](const auto& v) {
            size_t at = 0;
            for (size_t i = 1; i < v.size(); ++i)
              if ((std::isnan(v[i]) && !std::isnan(v[at])) || (kMax ? v[i] > v[at] : v[i] < v[at]))
                at = i;
            return want_index ? static_cast<double>(at) : v[at];
          }));
        }
        return out;
      })
      .dtypes(reduce::kAllDtypes)
      .lowering(std::string("reduction:arg") + (kMax ? "max" : "min"));
}

template <bool kMax>
void register_arg(const char* op) {
  register_op(op)
      .schema(std::string(op) + "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor")
      .meta([op](const std::vector<Tensor>& in, const Attrs& a) {
        const Tensor& x = in[0];
        auto dim = a.opt_i(0);
        std::vector<int64_t> dims = reduce::reduced_dims(
            op, dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{}, x.dim());
        reduce::check_nonempty(op, x, dims, dim.has_value());
        return meta::one_spec(reduce::reduced_shape(x, dims, a.b(1)), kInt64, x.device());
      })
      .cpu([op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
        const Tensor& x = in[0];
        auto dim = a.opt_i(0);
        if (dim && x.dim() > 0) {
          arg_kernel<kMax>(op, x, meta::wrap_dim(op, *dim, x.dim()), nullptr, out[0]);
          return;
        }
        // No dim: the index into the flattened (row-major) tensor.
        Tensor flat = x.contiguous().reshape({x.sym_numel()});
        arg_kernel<kMax>(op, flat, 0, nullptr, out[0]);
      })
      .samples([](ScalarType dt) {
        reduce::SampleOptions opt;
        opt.empty_reduce = false;
        opt.multi_dim = false;
        return reduce::samples(dt, opt, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims.empty() ? AttrValue(std::monostate{}) : AttrValue(dims[0]), keepdim};
        });
      })
      .error_samples([] {
        reduce::SampleOptions opt;
        opt.empty_reduce = false;
        opt.multi_dim = false;
        return reduce::error_samples(opt, [](const std::vector<int64_t>& dims, bool keepdim) {
          return Attrs{dims.empty() ? AttrValue(std::monostate{}) : AttrValue(dims[0]), keepdim};
        });
      })
      .reference([op](const std::vector<Tensor>& in, const Attrs& a) {
        auto dim = a.opt_i(0);
        auto dims = reduce::reduced_dims(
            op, dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{}, in[0].dim());
        return std::vector<Tensor>{reduce::reference(in[0], dims, a.b(1), [](const auto& v) {
          size_t at = 0;
          for (size_t i = 1; i < v.size(); ++i)
            if ((std::isnan(v[i]) && !std::isnan(v[at])) || (kMax ? v[i] > v[at] : v[i] < v[at]))
              at = i;
          return static_cast<double>(at);
        })};
      })
      .dtypes(reduce::kNumericDtypes)
      .lowering(std::string("reduction:") + op);
}

[[maybe_unused]] const bool registered_args = [] {
  register_extreme_dim<true>("max_dim");
  register_extreme_dim<false>("min_dim");
  register_arg<true>("argmax");
  register_arg<false>("argmin");
  return true;
}();

const OpDef& op_named(const char* name) { return get_op(name); }

}  // namespace

Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  static const OpDef& op = op_named("amax");
  return call_op1(op, {self}, {dim.vec(), keepdim});
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  static const OpDef& op = op_named("amin");
  return call_op1(op, {self}, {dim.vec(), keepdim});
}
Tensor max(const Tensor& self) {
  static const OpDef& op = op_named("max");
  return call_op1(op, {self}, {});
}
Tensor min(const Tensor& self) {
  static const OpDef& op = op_named("min");
  return call_op1(op, {self}, {});
}
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  static const OpDef& op = op_named("max_dim");
  auto out = call_op(op, {self}, {dim, keepdim});
  return {out[0], out[1]};
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  static const OpDef& op = op_named("min_dim");
  auto out = call_op(op, {self}, {dim, keepdim});
  return {out[0], out[1]};
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const OpDef& op = op_named("argmax");
  return call_op1(op, {self}, {opt_attr(dim), keepdim});
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const OpDef& op = op_named("argmin");
  return call_op1(op, {self}, {opt_attr(dim), keepdim});
}

Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return kiln::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return kiln::amin(*this, dim, keepdim); }
Tensor Tensor::max() const { return kiln::max(*this); }
Tensor Tensor::min() const { return kiln::min(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return kiln::max(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return kiln::min(*this, dim, keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return kiln::argmin(*this, dim, keepdim);
}

}  // namespace kiln

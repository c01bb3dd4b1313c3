// sum and mean.
#include "kiln/backend/cpu/reduce.h"
#include "kiln/backend/cpu/reduce_float_runs.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// Floating types add in float lanes (double for float64) whose blocks are summed in double;
// integers add in int64.
template <class T>
struct SumReducer {
  using C = cpu::compute_t<T>;
  static constexpr bool kFloat = std::is_floating_point_v<C>;
  using Lane = std::conditional_t<kFloat, C, int64_t>;
  using Acc = std::conditional_t<kFloat, double, int64_t>;
  T* out;
  bool mean;

  Lane lane_init() const { return 0; }
  Lane fold(Lane a, C v) const { return a + v; }
  Lane merge(Lane a, Lane b) const { return a + b; }
  Acc acc_init() const { return 0; }
  Acc add_lane(Acc a, Lane l) const { return a + l; }
  Acc combine(Acc a, Acc b) const { return a + b; }
  Acc fold_contiguous(const T* p, int64_t n) const {
    if constexpr (std::is_same_v<C, float>) {
      double total;
      if (cpu::sum_of_run(p, n, total)) return total;
    }
    return cpu::fold_run_lanes<T>(*this, p, n);
  }
  void write(int64_t o, Acc a, int64_t n) const {
    if constexpr (kFloat) {
      out[o] = static_cast<T>(mean ? a / static_cast<double>(n) : a);
    } else {
      out[o] = static_cast<T>(a);
    }
  }
};

KernelFn sum_kernel(const char* op, bool mean) {
  return [op, mean](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    auto dims = reduce::reduced_dims(op, a.ints(0), in[0].dim());
    const ScalarType dt = out[0].dtype();
    Tensor x = in[0].dtype() == dt ? in[0] : in[0].to(dt);
    cpu::visit_numeric(dt, op, [&](auto tag) {
      using T = decltype(tag);
      cpu::reduce_elementwise<T>(x, dims, SumReducer<T>{out[0].data_ptr<T>(), mean});
    });
  };
}

// sum's dtype: integers (and bool) accumulate in int64 unless a dtype is given, as PyTorch.
ScalarType sum_dtype(ScalarType in, std::optional<ScalarType> requested) {
  if (requested) return *requested;
  return is_integral(in, /*include_bool=*/true) ? kInt64 : in;
}

ScalarType mean_dtype(ScalarType in, std::optional<ScalarType> requested) {
  if (requested) {
    KILN_CHECK(is_floating_point(*requested),
               "mean: could not infer output dtype. Optional dtype must be either a floating "
               "point or complex dtype. Got: ",
               *requested);
    return *requested;
  }
  KILN_CHECK(is_floating_point(in),
             "mean: could not infer output dtype. Input dtype must be either a floating point "
             "or complex dtype. Got: ",
             in);
  return in;
}

MetaFn sum_meta(const char* op, ScalarType (*dtype)(ScalarType, std::optional<ScalarType>)) {
  return [op, dtype](const std::vector<Tensor>& in, const Attrs& a) {
    auto dims = reduce::reduced_dims(op, a.ints(0), in[0].dim());
    ScalarType dt = dtype(in[0].dtype(), a.opt_dtype(2));
    return meta::one_spec(reduce::reduced_shape(in[0], dims, a.b(1)), dt, in[0].device());
  };
}

Attrs sum_attrs(const std::vector<int64_t>& dims, bool keepdim) {
  return {dims, keepdim, std::monostate{}};
}

std::vector<OpSample> sum_samples(ScalarType dt, bool integer_needs_dtype) {
  using V = std::vector<int64_t>;
  auto s = reduce::samples(dt, {}, sum_attrs);
  s.push_back({{samples::make({3, 4}, dt)}, {V{1}, false, kFloat64}, "dtype float64"});
  if (integer_needs_dtype) {
    s.push_back({{samples::make({3, 4}, kInt32)}, {V{0}, true, kFloat64}, "int32 with dtype"});
  }
  return s;
}

ReferenceFn sum_reference(bool mean) {
  return [mean](const std::vector<Tensor>& in, const Attrs& a) {
    auto dims = reduce::reduced_dims("sum", a.ints(0), in[0].dim());
    return std::vector<Tensor>{reduce::reference(in[0], dims, a.b(1), [mean](const auto& v) {
      double s = 0;
      for (double x : v) s += x;
      return mean ? s / static_cast<double>(v.size()) : s;
    })};
  };
}

}  // namespace

KILN_REGISTER_OP(sum)
    .schema("sum(Tensor self, int[] dim=[], bool keepdim=False, ScalarType? dtype=None) -> Tensor")
    .meta(sum_meta("sum", sum_dtype))
    .cpu(sum_kernel("sum", false))
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      auto dims = reduce::reduced_dims("sum", c.attrs.ints(0), x.dim());
      return std::vector<Tensor>{reduce::expand_back(c.grad(), x, dims, c.attrs.b(1))};
    })
    .samples([](ScalarType dt) { return sum_samples(dt, false); })
    .error_samples([] {
      auto s = reduce::error_samples({}, sum_attrs);
      s.push_back({{samples::make({3}, kFloat32)},
                   {std::vector<int64_t>{}, false, kBool},
                   "not supported for dtype bool",
                   "dtype bool",
                   /*in_meta=*/false});
      return s;
    })
    .reference(sum_reference(false))
    .dtypes(reduce::kAllDtypes)
    .lowering("reduction:sum");

KILN_REGISTER_OP(mean)
    .schema("mean(Tensor self, int[] dim=[], bool keepdim=False, ScalarType? dtype=None) -> Tensor")
    .meta(sum_meta("mean", mean_dtype))
    .cpu(sum_kernel("mean", true))
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      auto dims = reduce::reduced_dims("mean", c.attrs.ints(0), x.dim());
      const double n = static_cast<double>(reduce::reduced_count(x, dims));
      return std::vector<Tensor>{reduce::expand_back(c.grad(), x, dims, c.attrs.b(1)) * (1 / n)};
    })
    .samples([](ScalarType dt) { return sum_samples(dt, true); })
    .error_samples([] {
      auto s = reduce::error_samples({}, sum_attrs);
      s.push_back({{samples::make({3}, kInt64)},
                   sum_attrs({}, false),
                   "Input dtype must be either a floating point or complex dtype. Got: int64",
                   "integers"});
      s.push_back({{samples::make({3}, kFloat32)},
                   {std::vector<int64_t>{}, false, kInt64},
                   "Optional dtype must be either a floating point or complex dtype. Got: int64",
                   "integer dtype"});
      return s;
    })
    .reference(sum_reference(true))
    .dtypes(reduce::kFloatDtypes)
    .lowering("reduction:mean");

namespace {
const OpDef& op_sum() {
  static const OpDef& op = get_op("sum");
  return op;
}
const OpDef& op_mean() {
  static const OpDef& op = get_op("mean");
  return op;
}
}  // namespace

Tensor sum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
           std::optional<ScalarType> dtype) {
  return call_op1(op_sum(), {self},
                  {dim ? dim->vec() : std::vector<int64_t>{}, keepdim, opt_attr(dtype)});
}
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) {
  return sum(self, {}, false, dtype);
}
Tensor mean(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  return call_op1(op_mean(), {self},
                  {dim ? dim->vec() : std::vector<int64_t>{}, keepdim, opt_attr(dtype)});
}
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) {
  return mean(self, {}, false, dtype);
}

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return kiln::sum(*this, dtype); }
Tensor Tensor::sum(OptionalIntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return kiln::mean(*this, dtype); }
Tensor Tensor::mean(OptionalIntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::mean(*this, dim, keepdim, dtype);
}

}  // namespace kiln

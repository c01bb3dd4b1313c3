// cumsum and cumprod along one dim.
#include "kiln/backend/cpu/reduce_scan.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// Integers (and bool) accumulate in int64 unless a dtype is given, as PyTorch.
ScalarType scan_dtype(ScalarType in, std::optional<ScalarType> requested) {
  if (requested) return *requested;
  return is_integral(in, /*include_bool=*/true) ? kInt64 : in;
}

int64_t scan_dim(const char* op, const Tensor& x, const Attrs& a) {
  return x.dim() == 0 ? 0 : meta::wrap_dim(op, a.i(0), x.dim());
}

template <bool kProd>
KernelFn scan_kernel(const char* op) {
  return [op](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const ScalarType dt = out[0].dtype();
    const int64_t dim = scan_dim(op, in[0], a);
    Tensor x = (in[0].dtype() == dt ? in[0] : in[0].to(dt)).contiguous();
    cpu::visit_numeric(dt, op, [&](auto tag) {
      using T = decltype(tag);
      using Acc = std::conditional_t<std::is_floating_point_v<cpu::compute_t<T>>, double, int64_t>;
      T* o = out[0].data_ptr<T>();
      if constexpr (kProd) {
        cpu::scan<T>(x, dim, o, Acc(1), [](Acc acc, Acc v) { return acc * v; });
      } else {
        cpu::scan<T>(x, dim, o, Acc(0), [](Acc acc, Acc v) { return acc + v; });
      }
    });
  };
}

// sum over positions j >= i along dim.
Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  return t.sum(IntArrayRef(dim), true) - t.cumsum(dim) + t;
}

// d out_j / d x_i = prod_{l <= j, l != i} x_l. Before a slice's first zero that is out_j / x_i;
// at the first zero it is the running product with that zero taken as 1; after it, 0.
Tensor cumprod_backward(const Tensor& grad, const Tensor& x, const Tensor& out, int64_t dim) {
  if (x.dim() == 0) return grad;
  Tensor zero = x.eq(0);
  Tensor zeros_so_far = zero.cumsum(dim);
  Tensor first_zero = zero.logical_and(zeros_so_far.eq(1));
  Tensor before = reverse_cumsum(grad * out, dim) / x.masked_fill(zero, 1);
  Tensor at_first = reverse_cumsum(grad * x.masked_fill(first_zero, 1).cumprod(dim), dim);
  return before.where(zeros_so_far.eq(0), at_first.masked_fill(first_zero.logical_not(), 0));
}

std::vector<OpSample> scan_samples(ScalarType dt, double low, double high) {
  auto mk = [&](std::vector<int64_t> shape, bool noncontiguous = false) {
    return samples::make(std::move(shape), dt, low, high, noncontiguous);
  };
  std::vector<OpSample> s = {
      {{mk({3, 4})}, {int64_t{1}, std::monostate{}}, "dim 1"},
      {{mk({3, 4})}, {int64_t{0}, std::monostate{}}, "dim 0"},
      {{mk({2, 3, 4})}, {int64_t{1}, std::monostate{}}, "middle dim"},
      {{mk({4, 5}, true)}, {int64_t{-1}, std::monostate{}}, "non-contiguous"},
      {{mk({5, 4}).t()}, {int64_t{1}, std::monostate{}}, "transposed"},
      {{mk({3, 70})}, {int64_t{1}, std::monostate{}}, "long rows"},
      {{mk({})}, {int64_t{0}, std::monostate{}}, "0-dim"},
      {{mk({0, 3})}, {int64_t{0}, std::monostate{}}, "zero-size"},
      {{mk({3, 4})}, {int64_t{1}, kFloat64}, "dtype float64"},
  };
  return s;
}

template <bool kProd>
ReferenceFn scan_reference(const char* op) {
  return [op](const std::vector<Tensor>& in, const Attrs& a) {
    return std::vector<Tensor>{
        reduce::reference_along(in[0], scan_dim(op, in[0], a), [](const auto& v) {
          std::vector<double> r(v.size());
          double acc = kProd ? 1 : 0;
          for (size_t i = 0; i < v.size(); ++i) r[i] = acc = kProd ? acc * v[i] : acc + v[i];
          return r;
        })};
  };
}

MetaFn scan_meta(const char* op) {
  return [op](const std::vector<Tensor>& in, const Attrs& a) {
    scan_dim(op, in[0], a);
    return meta::one_spec(in[0].sym_sizes(), scan_dtype(in[0].dtype(), a.opt_dtype(1)),
                          in[0].device());
  };
}

std::vector<OpErrorSample> scan_error_samples() {
  reduce::SampleOptions opt;
  opt.multi_dim = false;
  opt.full = false;
  auto s = reduce::error_samples(opt, [](const std::vector<int64_t>& dims, bool) {
    return Attrs{dims.at(0), std::monostate{}};
  });
  s.push_back({{samples::make({3}, kFloat32)},
               {int64_t{0}, kBool},
               "not supported for dtype bool",
               "dtype bool",
               /*in_meta=*/false});
  return s;
}

}  // namespace

KILN_REGISTER_OP(cumsum)
    .schema("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
    .meta(scan_meta("cumsum"))
    .cpu(scan_kernel<false>("cumsum"))
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      if (x.dim() == 0) return std::vector<Tensor>{c.grad()};
      return std::vector<Tensor>{reverse_cumsum(c.grad(), scan_dim("cumsum", x, c.attrs))};
    })
    .samples([](ScalarType dt) { return scan_samples(dt, -3, 3); })
    .error_samples(scan_error_samples)
    .reference(scan_reference<false>("cumsum"))
    .dtypes(reduce::kAllDtypes)
    .lowering("scan:sum");

KILN_REGISTER_OP(cumprod)
    .schema("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
    .meta(scan_meta("cumprod"))
    .cpu(scan_kernel<true>("cumprod"))
    .save_outputs(/*inputs_too=*/true)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      return std::vector<Tensor>{
          cumprod_backward(c.grad(), x, c.output(), scan_dim("cumprod", x, c.attrs))};
    })
    .samples([](ScalarType dt) {
      auto s = scan_samples(dt, -2, 2);
      Tensor z = tensor({{1.5, 0.0, 2.0, -1.0, 0.5},
                         {0.0, 2.0, 0.0, 3.0, 1.0},
                         {2.0, -1.0, 0.5, 1.5, 0.0},
                         {0.5, 1.5, -2.0, 1.0, 2.0}},
                        TensorOptions(kFloat64))
                     .to(dt);
      s.push_back({{z}, {int64_t{1}, std::monostate{}}, "zeros along rows"});
      s.push_back({{z}, {int64_t{0}, std::monostate{}}, "zeros along columns"});
      return s;
    })
    .error_samples(scan_error_samples)
    .reference(scan_reference<true>("cumprod"))
    .dtypes(reduce::kNumericDtypes)
    .lowering("scan:prod");

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpDef& op = get_op("cumsum");
  return call_op1(op, {self}, {dim, opt_attr(dtype)});
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpDef& op = get_op("cumprod");
  return call_op1(op, {self}, {dim, opt_attr(dtype)});
}
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::cumprod(*this, dim, dtype);
}

}  // namespace kiln

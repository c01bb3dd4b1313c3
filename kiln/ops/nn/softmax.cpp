// softmax and log_softmax along one dim (fused CPU kernel; backward written with Kiln ops).
#include <cmath>

#include "kiln/backend/cpu/reduce_softmax.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

int64_t softmax_dim(const char* op, const Tensor& x, const Attrs& a) {
  return x.dim() == 0 ? 0 : meta::wrap_dim(op, a.i(0), x.dim());
}

MetaFn softmax_meta(const char* op) {
  return [op](const std::vector<Tensor>& in, const Attrs& a) {
    const Tensor& x = in[0];
    softmax_dim(op, x, a);
    auto requested = a.opt_dtype(1);
    ScalarType dt = requested ? *requested : x.dtype();
    KILN_CHECK(is_floating_point(dt), op, ": expected a floating point input or dtype, got ", dt,
               " (pass dtype= to compute an integer tensor in a floating type)");
    return meta::one_spec(x.sym_sizes(), dt, x.device());
  };
}

KernelFn softmax_kernel(const char* op, bool log) {
  return [op, log](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const ScalarType dt = out[0].dtype();
    Tensor x = (in[0].dtype() == dt ? in[0] : in[0].to(dt)).contiguous();
    cpu::softmax(out[0], x, softmax_dim(op, in[0], a), log);
  };
}

std::vector<OpSample> softmax_samples(ScalarType dt, bool log) {
  auto mk = [&](std::vector<int64_t> shape, double low = -3, double high = 3,
                bool noncontiguous = false) {
    return samples::make(std::move(shape), dt, low, high, noncontiguous);
  };
  const double inf = INFINITY;
  const std::monostate none;
  std::vector<OpSample> s = {
      {{mk({3, 4})}, {int64_t{1}, none}, "dim 1"},
      {{mk({3, 4})}, {int64_t{0}, none}, "dim 0"},
      {{mk({2, 3, 4})}, {int64_t{1}, none}, "middle dim"},
      {{mk({4, 5}, -3, 3, true)}, {int64_t{-1}, none}, "non-contiguous"},
      {{mk({5, 4}).t()}, {int64_t{1}, none}, "transposed"},
      {{mk({3, 70})}, {int64_t{1}, none}, "long rows"},
      {{mk({70, 3})}, {int64_t{0}, none}, "long columns"},
      {{mk({2, 5}, 1000, 1010)}, {int64_t{1}, none}, "large values"},
      {{tensor({{-inf, 1.0, 2.0}, {0.5, -inf, -inf}}, TensorOptions(kFloat64)).to(dt)},
       {int64_t{1}, none},
       "-inf entries"},
      {{mk({})}, {int64_t{0}, none}, "0-dim"},
      {{mk({0, 3})}, {int64_t{1}, none}, "zero-size"},
      {{mk({3, 4})}, {int64_t{1}, kFloat64}, "dtype float64"},
  };
  // log_softmax is -inf there, so finite differences of the objective are not defined.
  if (log) s[8].check_grad = false;
  return s;
}

ReferenceFn softmax_reference(const char* op, bool log) {
  return [op, log](const std::vector<Tensor>& in, const Attrs& a) {
    return std::vector<Tensor>{
        reduce::reference_along(in[0], softmax_dim(op, in[0], a), [log](const auto& v) {
          double m = -INFINITY, s = 0;
          for (double e : v) m = std::max(m, e);
          for (double e : v) s += std::exp(e - m);
          std::vector<double> r;
          for (double e : v) r.push_back(log ? e - m - std::log(s) : std::exp(e - m) / s);
          return r;
        })};
  };
}

std::vector<OpErrorSample> softmax_error_samples() {
  const Tensor x = samples::make({3, 4}, kFloat32);
  const std::monostate none;
  return {
      {{x}, {int64_t{2}, none}, "expected to be in range of [-2, 1], but got 2", "dim"},
      {{x.to(kInt64)},
       {int64_t{1}, none},
       "expected a floating point input or dtype, got int64",
       "integers"},
      {{x},
       {int64_t{1}, kInt32},
       "expected a floating point input or dtype, got int32",
       "integer dtype"},
  };
}

}  // namespace

KILN_REGISTER_OP(softmax)
    .schema("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
    .meta(softmax_meta("softmax"))
    .cpu(softmax_kernel("softmax", false))
    .save_outputs()
    .backward([](const BackwardContext& c) {
      // d x = y * (g - sum(g * y)) along dim
      const Tensor& y = c.output();
      if (y.dim() == 0) return std::vector<Tensor>{c.grad() * 0};
      const int64_t dim = softmax_dim("softmax", y, c.attrs);
      Tensor gy = c.grad() * y;
      return std::vector<Tensor>{gy - y * gy.sum(IntArrayRef(dim), true)};
    })
    .samples([](ScalarType dt) { return softmax_samples(dt, false); })
    .error_samples(softmax_error_samples)
    .reference(softmax_reference("softmax", false))
    .dtypes(reduce::kFloatDtypes)
    .lowering("reduction:softmax");

KILN_REGISTER_OP(log_softmax)
    .schema("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
    .meta(softmax_meta("log_softmax"))
    .cpu(softmax_kernel("log_softmax", true))
    .save_outputs()
    .backward([](const BackwardContext& c) {
      // d x = g - exp(y) * sum(g) along dim
      const Tensor& y = c.output();
      if (y.dim() == 0) return std::vector<Tensor>{c.grad() * 0};
      const int64_t dim = softmax_dim("log_softmax", y, c.attrs);
      return std::vector<Tensor>{c.grad() - y.exp() * c.grad().sum(IntArrayRef(dim), true)};
    })
    .samples([](ScalarType dt) { return softmax_samples(dt, true); })
    .error_samples(softmax_error_samples)
    .reference(softmax_reference("log_softmax", true))
    .dtypes(reduce::kFloatDtypes)
    .lowering("reduction:log_softmax");

Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpDef& op = get_op("softmax");
  return call_op1(op, {self}, {dim, opt_attr(dtype)});
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  static const OpDef& op = get_op("log_softmax");
  return call_op1(op, {self}, {dim, opt_attr(dtype)});
}
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::softmax(*this, dim, dtype);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return kiln::log_softmax(*this, dim, dtype);
}

}  // namespace kiln

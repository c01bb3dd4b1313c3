// sum: the reduction pattern other reductions follow.
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce_util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// sum's dtype: integers (and bool) accumulate in int64 unless a dtype is given, as PyTorch.
ScalarType sum_dtype(ScalarType in, std::optional<ScalarType> requested) {
  if (requested) return *requested;
  return is_integral(in, /*include_bool=*/true) ? kInt64 : in;
}

std::vector<OpSample> reduce_samples(ScalarType dt) {
  using V = std::vector<int64_t>;
  return {
      {{samples::make({3, 4}, dt)}, {V{}, false, std::monostate{}}, "all"},
      {{samples::make({3, 4}, dt)}, {V{1}, false, std::monostate{}}, "dim 1"},
      {{samples::make({3, 4}, dt)}, {V{0}, true, std::monostate{}}, "dim 0 keepdim"},
      {{samples::make({2, 3, 4}, dt)}, {V{0, 2}, false, std::monostate{}}, "dims 0,2"},
      {{samples::make({4, 5}, dt, -3, 3, true)}, {V{-1}, false, std::monostate{}}, "non-contiguous"},
      {{samples::make({}, dt)}, {V{}, false, std::monostate{}}, "0-dim"},
      {{samples::make({0, 3}, dt)}, {V{0}, false, std::monostate{}}, "empty"},
  };
}

}  // namespace

KILN_REGISTER_OP(sum)
    .schema("sum(Tensor self, int[] dim=[], bool keepdim=False, ScalarType? dtype=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dims = reduce::reduced_dims("sum", a.ints(0), in[0].dim());
      return std::vector<TensorSpec>{
          meta::spec(reduce::reduced_shape(in[0], dims, a.b(1)),
                     sum_dtype(in[0].dtype(), a.opt_dtype(2)), in[0].device())};
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      auto dims = reduce::reduced_dims("sum", a.ints(0), in[0].dim());
      const ScalarType dt = out[0].dtype();
      Tensor x = in[0].dtype() == dt ? in[0] : in[0].to(dt);
      cpu::visit_numeric(dt, "sum", [&](auto tag) {
        using T = decltype(tag);
        using Acc = std::conditional_t<std::is_floating_point_v<cpu::compute_t<T>>, double, cpu::compute_t<T>>;
        reduce::rows<T, T>(out[0], x, dims, Acc(0), [](Acc acc, auto v) { return acc + static_cast<Acc>(v); },
                           [](Acc acc, int64_t) { return acc; });
      });
    })
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      auto dims = reduce::reduced_dims("sum", c.attrs.ints(0), x.dim());
      Tensor g = c.grad();
      if (!c.attrs.b(1)) g = g.view(reduce::reduced_shape(x, dims, true));
      return std::vector<Tensor>{g.expand(x.sym_sizes())};
    })
    .samples(reduce_samples)
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor x = in[0].to(kFloat64);
      auto dims = reduce::reduced_dims("sum", a.ints(0), x.dim());
      Tensor out = zeros(reduce::reduced_shape(x, dims, a.b(1)), kFloat64);
      Tensor xc = x.contiguous();
      auto sizes = x.sizes().vec();
      std::vector<int64_t> kept;
      for (const SymInt& v : reduce::reduced_shape(x, dims, true)) kept.push_back(v.guard_int());
      auto ostr = contiguous_strides(kept);
      const int64_t n = x.numel();
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, o = 0;
        for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
          int64_t idx = rem % sizes[d];
          rem /= sizes[d];
          if (std::find(dims.begin(), dims.end(), d) == dims.end()) o += idx * ostr[d];
        }
        out.data_ptr<double>()[o] += xc.data_ptr<double>()[i];
      }
      return std::vector<Tensor>{out};
    })
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64, kInt32})
    .lowering("reduction:sum");

Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  static const OpDef& op = get_op("sum");
  return call_op1(op, {self}, {dim.vec(), keepdim, opt_attr(dtype)});
}
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) { return sum(self, {}, false, dtype); }

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return kiln::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::sum(*this, dim, keepdim, dtype);
}

}  // namespace kiln

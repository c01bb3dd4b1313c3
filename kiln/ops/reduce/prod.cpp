// prod over any set of dims (the public API has PyTorch's full and one-dim forms).
#include "kiln/backend/cpu/reduce.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/reduce/util.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// Floating types multiply in double (long products lose too much in float); integers in int64.
template <class T>
struct ProdReducer {
  using C = cpu::compute_t<T>;
  static constexpr bool kFloat = std::is_floating_point_v<C>;
  using Lane = std::conditional_t<kFloat, double, int64_t>;
  using Acc = Lane;
  T* out;

  Lane lane_init() const { return 1; }
  Lane fold(Lane a, C v) const { return a * static_cast<Lane>(v); }
  Lane merge(Lane a, Lane b) const { return a * b; }
  Acc acc_init() const { return 1; }
  Acc add_lane(Acc a, Lane l) const { return a * l; }
  Acc combine(Acc a, Acc b) const { return a * b; }
  void write(int64_t o, Acc a, int64_t) const { out[o] = static_cast<T>(a); }
};

const OpDef& op_prod() {
  static const OpDef& op = get_op("prod");
  return op;
}

// The product of every element of each slice but one, without dividing by zero: r / x where
// the slice has no zero; at the zero of a slice with exactly one zero, the product of the rest;
// zero everywhere else.
Tensor prod_backward(const Tensor& grad, const Tensor& x, const Tensor& result,
                     const std::vector<int64_t>& dims, bool keepdim) {
  if (x.sym_numel() == 0) return zeros_like(x);
  Tensor g = reduce::with_kept_dims(grad, x, dims, keepdim);
  Tensor r = reduce::with_kept_dims(result, x, dims, keepdim);
  Tensor zero = x.eq(0);
  Tensor x_safe = x.masked_fill(zero, 1);
  Tensor zeros_per_slice = zero.sum(dims, true);
  Tensor rest = call_op1(op_prod(), {x_safe}, {dims, true, std::monostate{}});
  Tensor at_zero = rest.masked_fill(zeros_per_slice.ne(1), 0);
  return g * (r / x_safe).where(zero.logical_not(), at_zero);
}

}  // namespace

KILN_REGISTER_OP(prod)
    .schema("prod(Tensor self, int[] dim=[], bool keepdim=False, ScalarType? dtype=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dims = reduce::reduced_dims("prod", a.ints(0), in[0].dim());
      auto req = a.opt_dtype(2);
      ScalarType dt = req ? *req : is_integral(in[0].dtype(), true) ? kInt64 : in[0].dtype();
      return meta::one_spec(reduce::reduced_shape(in[0], dims, a.b(1)), dt, in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      auto dims = reduce::reduced_dims("prod", a.ints(0), in[0].dim());
      const ScalarType dt = out[0].dtype();
      Tensor x = in[0].dtype() == dt ? in[0] : in[0].to(dt);
      cpu::visit_numeric(dt, "prod", [&](auto tag) {
        using T = decltype(tag);
        cpu::reduce_elementwise<T>(x, dims, ProdReducer<T>{out[0].data_ptr<T>()});
      });
    })
    .save_outputs(/*inputs_too=*/true)
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      auto dims = reduce::reduced_dims("prod", c.attrs.ints(0), x.dim());
      return std::vector<Tensor>{prod_backward(c.grad(), x, c.output(), dims, c.attrs.b(1))};
    })
    .samples([](ScalarType dt) {
      using V = std::vector<int64_t>;
      reduce::SampleOptions opt;
      opt.low = -2;
      opt.high = 2;
      auto s = reduce::samples(dt, opt, [](const V& dims, bool keepdim) {
        return Attrs{dims, keepdim, std::monostate{}};
      });
      // Rows with no zero, one zero and two zeros; the full product has several zeros.
      Tensor z = tensor({{1.5, 0.0, 2.0, -1.0}, {0.0, 0.0, 3.0, 1.0}, {2.0, -1.0, 0.5, 1.5}},
                        TensorOptions(kFloat64))
                     .to(dt);
      s.push_back({{z}, {V{1}, false, std::monostate{}}, "zeros per row"});
      s.push_back({{z}, {V{}, false, std::monostate{}}, "zeros in full product"});
      s.push_back({{z.narrow(0, 0, 1)}, {V{}, false, std::monostate{}}, "one zero"});
      s.push_back({{samples::make({3, 4}, dt, -2, 2)}, {V{1}, false, kFloat64}, "dtype float64"});
      return s;
    })
    .error_samples([] {
      using V = std::vector<int64_t>;
      auto s = reduce::error_samples({}, [](const V& dims, bool keepdim) {
        return Attrs{dims, keepdim, std::monostate{}};
      });
      s.push_back({{samples::make({3}, kFloat32)},
                   {V{}, false, kBool},
                   "not supported for dtype bool",
                   "dtype bool",
                   /*in_meta=*/false});
      return s;
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      auto dims = reduce::reduced_dims("prod", a.ints(0), in[0].dim());
      return std::vector<Tensor>{reduce::reference(in[0], dims, a.b(1), [](const auto& v) {
        double p = 1;
        for (double x : v) p *= x;
        return p;
      })};
    })
    .dtypes(reduce::kNumericDtypes)
    .lowering("reduction:prod");

Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
  return call_op1(op_prod(), {self}, {std::vector<int64_t>{}, false, opt_attr(dtype)});
}
Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return call_op1(op_prod(), {self}, {std::vector<int64_t>{dim}, keepdim, opt_attr(dtype)});
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return kiln::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return kiln::prod(*this, dim, keepdim, dtype);
}

}  // namespace kiln

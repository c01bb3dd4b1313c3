// squeeze and unsqueeze: views that remove or insert size-1 dims.
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

// Which dims squeeze removes: size-1 dims among `dims` (all dims when none are given).
std::vector<bool> squeezed_dims(const Tensor& x, const Attrs& a) {
  const int64_t nd = x.dim();
  std::vector<bool> drop(nd, false);
  if (nd == 0) {
    if (!a.is_none(0)) meta::wrap_dims("squeeze", a.ints(0), nd);  // range check only
    return drop;
  }
  if (a.is_none(0)) {
    for (int64_t d = 0; d < nd; ++d) drop[d] = x.sym_size(d) == 1;
  } else {
    for (int64_t d : meta::wrap_dims("squeeze", a.ints(0), nd)) drop[d] = x.sym_size(d) == 1;
  }
  return drop;
}

}  // namespace

KILN_REGISTER_OP(squeeze)
    .schema("squeeze(Tensor(a) self, int[]? dim=None) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      std::vector<bool> drop = squeezed_dims(x, a);
      SymShape sizes, strides;
      for (int64_t d = 0; d < x.dim(); ++d) {
        if (drop[d]) continue;
        sizes.push_back(x.sym_size(d));
        strides.push_back(x.sym_stride(d));
      }
      return std::vector<TensorSpec>{shape::view_spec(x, sizes, strides, x.sym_storage_offset())};
    })
    .view()
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().reshape(c.input(0).sym_sizes())};
    })
    .samples([](ScalarType dt) {
      using V = std::vector<int64_t>;
      using M = std::monostate;
      return std::vector<OpSample>{
          {{samples::make({3, 1, 4, 1}, dt)}, {M{}}, "all"},
          {{samples::make({3, 1, 4, 1}, dt)}, {V{1}}, "one dim"},
          {{samples::make({3, 1, 4, 1}, dt)}, {V{-1, 0}}, "dims, one not size 1"},
          {{samples::make({1, 1}, dt)}, {M{}}, "to 0-dim"},
          {{samples::make({}, dt)}, {V{0}}, "0-dim"},
          {{samples::make({1, 5}, dt, -3, 3, true)}, {M{}}, "non-contiguous"},
          {{samples::make({0, 1}, dt)}, {M{}}, "zero-size"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      std::vector<bool> drop = squeezed_dims(x, a);
      std::vector<int64_t> osz;
      for (int64_t d = 0; d < x.dim(); ++d)
        if (!drop[d]) osz.push_back(x.sym_size(d).guard_int());
      return std::vector<Tensor>{shape::reference_gather(
          x, osz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            i.assign(x.dim(), 0);
            size_t k = 0;
            for (int64_t d = 0; d < x.dim(); ++d)
              if (!drop[d]) i[d] = o[k++];
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .error_samples([] {
      using V = std::vector<int64_t>;
      const Tensor x = samples::make({3, 1}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {V{2}}, "expected to be in range of [-2, 1], but got 2", "dim"},
          {{x}, {V{1, -1}}, "dim 1 appears multiple times in the list of dims", "repeated dim"},
      };
    })
    .lowering("view");

KILN_REGISTER_OP(unsqueeze)
    .schema("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t nd = x.dim();
      const int64_t d = meta::wrap_dim("unsqueeze", a.i(0), nd + 1);
      SymShape sizes = x.sym_sizes(), strides = x.sym_strides();
      SymInt stride = d >= nd ? SymInt(1) : sizes[d] * strides[d];
      sizes.insert(sizes.begin() + d, SymInt(1));
      strides.insert(strides.begin() + d, stride);
      return std::vector<TensorSpec>{shape::view_spec(x, sizes, strides, x.sym_storage_offset())};
    })
    .view()
    .backward([](const BackwardContext& c) {
      const int64_t d = meta::wrap_dim("unsqueeze", c.attrs.i(0), c.input(0).dim() + 1);
      return std::vector<Tensor>{c.grad().squeeze(IntArrayRef(d))};
    })
    .samples([](ScalarType dt) {
      using I = int64_t;
      return std::vector<OpSample>{
          {{samples::make({3, 4}, dt)}, {I{0}}, "front"},
          {{samples::make({3, 4}, dt)}, {I{1}}, "middle"},
          {{samples::make({3, 4}, dt)}, {I{-1}}, "back"},
          {{samples::make({}, dt)}, {I{0}}, "0-dim"},
          {{samples::make({4, 5}, dt, -3, 3, true)}, {I{1}}, "non-contiguous"},
          {{samples::make({0, 2}, dt)}, {I{2}}, "zero-size"}};
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{{{samples::make({3, 4}, kFloat32)},
                                         {int64_t{3}},
                                         "expected to be in range of [-3, 2], but got 3",
                                         "dim"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t d = a.i(0) < 0 ? a.i(0) + x.dim() + 1 : a.i(0);
      std::vector<int64_t> osz = x.sym_sizes().vec();
      osz.insert(osz.begin() + d, 1);
      return std::vector<Tensor>{shape::reference_gather(
          x, osz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            i.assign(o.begin(), o.end());
            i.erase(i.begin() + d);
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("view");

Tensor squeeze(const Tensor& self) {
  static const OpDef& op = get_op("squeeze");
  return call_op1(op, {self}, {std::monostate{}});
}
Tensor squeeze(const Tensor& self, IntArrayRef dims) {
  static const OpDef& op = get_op("squeeze");
  return call_op1(op, {self}, {dims.vec()});
}
Tensor unsqueeze(const Tensor& self, int64_t dim) {
  static const OpDef& op = get_op("unsqueeze");
  return call_op1(op, {self}, {dim});
}

Tensor Tensor::squeeze() const { return kiln::squeeze(*this); }
Tensor Tensor::squeeze(IntArrayRef dims) const { return kiln::squeeze(*this, dims); }
Tensor Tensor::unsqueeze(int64_t dim) const { return kiln::unsqueeze(*this, dim); }

}  // namespace kiln

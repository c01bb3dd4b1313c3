// diagonal and unfold: views that fold two dims into one (diagonal) or split one dim into
// overlapping windows (unfold), with their adjoints diagonal_backward and unfold_backward.
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

std::vector<Tensor> backward_via(const char* name, const BackwardContext& c) {
  return std::vector<Tensor>{
      call_op1(get_op(name), {c.grad()}, shape::prepend_attr(c.input(0).sym_sizes(), c.attrs))};
}

}  // namespace

KILN_REGISTER_OP(diagonal)
    .schema("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t offset = a.i(0);
      const int64_t d1 = meta::wrap_dim("diagonal", a.i(1), x.dim());
      const int64_t d2 = meta::wrap_dim("diagonal", a.i(2), x.dim());
      KILN_CHECK(d1 != d2, "diagonal: dimensions cannot be identical ", a.i(1), ", ", a.i(2));
      const SymInt n1 = x.sym_size(d1), n2 = x.sym_size(d2);
      SymInt diag = offset >= 0 ? sym_min(n1, n2 - offset) : sym_min(n1 + offset, n2);
      diag = sym_max(diag, 0);
      SymInt storage_offset = x.sym_storage_offset();
      if (diag != 0) {
        storage_offset = offset >= 0 ? storage_offset + offset * x.sym_stride(d2)
                                     : storage_offset - offset * x.sym_stride(d1);
      }
      SymShape sizes, strides;
      for (int64_t d = 0; d < x.dim(); ++d) {
        if (d == d1 || d == d2) continue;
        sizes.push_back(x.sym_size(d));
        strides.push_back(x.sym_stride(d));
      }
      sizes.push_back(diag);
      strides.push_back(x.sym_stride(d1) + x.sym_stride(d2));
      return std::vector<TensorSpec>{shape::view_spec(x, sizes, strides, storage_offset)};
    })
    .view()
    .backward([](const BackwardContext& c) { return backward_via("diagonal_backward", c); })
    .samples([](ScalarType dt) {
      using I = int64_t;
      return std::vector<OpSample>{
          {{samples::make({3, 4}, dt)}, {I{0}, I{0}, I{1}}, "main"},
          {{samples::make({3, 4}, dt)}, {I{1}, I{0}, I{1}}, "above"},
          {{samples::make({4, 3}, dt)}, {I{-2}, I{0}, I{1}}, "below"},
          {{samples::make({2, 3, 4}, dt)}, {I{1}, I{2}, I{0}}, "3d swapped dims"},
          {{samples::make({4, 5}, dt, -3, 3, true)}, {I{-1}, I{-1}, I{-2}}, "non-contiguous"},
          {{samples::make({3, 3}, dt)}, {I{5}, I{0}, I{1}}, "empty"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t nd = x.dim(), offset = a.i(0);
      const int64_t d1 = a.i(1) < 0 ? a.i(1) + nd : a.i(1), d2 = a.i(2) < 0 ? a.i(2) + nd : a.i(2);
      const std::vector<int64_t> xs = x.sym_sizes().vec();
      std::vector<int64_t> osz, kept;
      for (int64_t d = 0; d < nd; ++d) {
        if (d == d1 || d == d2) continue;
        osz.push_back(xs[d]);
        kept.push_back(d);
      }
      const int64_t r1 = offset < 0 ? -offset : 0, c2 = offset > 0 ? offset : 0;
      osz.push_back(std::max<int64_t>(0, std::min(xs[d1] - r1, xs[d2] - c2)));
      return std::vector<Tensor>{shape::reference_gather(
          x, osz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            i.assign(nd, 0);
            for (size_t k = 0; k < kept.size(); ++k) i[kept[k]] = o[k];
            i[d1] = o.back() + r1;
            i[d2] = o.back() + c2;
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .error_samples([] {
      using I = int64_t;
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {I{0}, I{0}, I{2}}, "expected to be in range of [-2, 1], but got 2", "dim2"},
          {{x}, {I{0}, I{1}, I{-1}}, "dimensions cannot be identical 1, -1", "identical dims"},
      };
    })
    .lowering("view");

KILN_REGISTER_OP(unfold)
    .schema("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t d = meta::wrap_dim("unfold", a.i(0), x.dim());
      const int64_t size = a.i(1), step = a.i(2);
      const SymInt max_size = x.dim() == 0 ? SymInt(1) : x.sym_size(d);
      KILN_CHECK(size >= 0, "unfold: size is ", size, " but must be >= 0");
      KILN_CHECK(size <= max_size, "unfold: maximum size for tensor at dimension ", d, " is ",
                 max_size, " but size is ", size);
      KILN_CHECK(step > 0, "unfold: step is ", step, " but must be > 0");
      SymShape sizes = x.sym_sizes(), strides = x.sym_strides();
      SymInt inner_stride = 1;
      if (x.dim() > 0) {
        inner_stride = x.sym_stride(d);
        sizes[d] = (max_size - size) / step + 1;
        strides[d] = strides[d] * step;
      }
      sizes.push_back(size);
      strides.push_back(inner_stride);
      return std::vector<TensorSpec>{shape::view_spec(x, sizes, strides, x.sym_storage_offset())};
    })
    .view()
    .backward([](const BackwardContext& c) { return backward_via("unfold_backward", c); })
    .samples([](ScalarType dt) {
      using I = int64_t;
      return std::vector<OpSample>{
          {{samples::make({8}, dt)}, {I{0}, I{3}, I{3}}, "disjoint windows"},
          {{samples::make({8}, dt)}, {I{0}, I{3}, I{1}}, "overlapping windows"},
          {{samples::make({3, 7}, dt)}, {I{1}, I{2}, I{3}}, "with gaps"},
          {{samples::make({5, 4}, dt)}, {I{0}, I{5}, I{1}}, "one window"},
          {{samples::make({4, 6}, dt, -3, 3, true)}, {I{-1}, I{4}, I{2}}, "non-contiguous"},
          {{samples::make({}, dt)}, {I{0}, I{1}, I{1}}, "0-dim"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const int64_t nd = x.dim();
      const int64_t d = nd == 0 ? 0 : (a.i(0) < 0 ? a.i(0) + nd : a.i(0));
      const int64_t size = a.i(1), step = a.i(2);
      std::vector<int64_t> osz = x.sym_sizes().vec();
      if (nd > 0) osz[d] = (osz[d] - size) / step + 1;
      osz.push_back(size);
      return std::vector<Tensor>{shape::reference_gather(
          x, osz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            i.assign(o.begin(), o.end() - 1);
            if (nd > 0) i[d] = o[d] * step + o.back();
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .error_samples([] {
      using I = int64_t;
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {I{2}, I{1}, I{1}}, "expected to be in range of [-2, 1], but got 2", "dim"},
          {{x}, {I{1}, I{-1}, I{1}}, "size is -1 but must be >= 0", "negative size"},
          {{x},
           {I{1}, I{5}, I{1}},
           "maximum size for tensor at dimension 1 is 4 but size is 5",
           "size too large"},
          {{x}, {I{1}, I{2}, I{0}}, "step is 0 but must be > 0", "step 0"},
      };
    })
    .lowering("view");

[[maybe_unused]] static const bool kDiagonalBackward =
    (shape::register_view_backward("diagonal", false), true);
[[maybe_unused]] static const bool kUnfoldBackward =
    (shape::register_view_backward("unfold", true), true);

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  static const OpDef& op = get_op("diagonal");
  return call_op1(op, {self}, {offset, dim1, dim2});
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return kiln::diagonal(*this, offset, dim1, dim2);
}
Tensor Tensor::unfold(int64_t dimension, int64_t size, int64_t step) const {
  static const OpDef& op = get_op("unfold");
  return call_op1(op, {*this}, {dimension, size, step});
}

}  // namespace kiln

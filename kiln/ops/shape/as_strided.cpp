// as_strided (a view with explicit geometry over the input's storage) and its adjoint
// as_strided_backward.
//
// Note [as_strided gradient]
// as_strided reads storage positions, so its gradient is computed in storage space: the
// gradient of each output element is added at the storage position that element reads (several
// outputs may read one position), then each input element takes the sum at its own position,
// divided by the number of input elements sharing that position (an input with overlapping
// memory, e.g. expanded, shares the gradient equally, as PyTorch does). as_strided_backward is
// written for any pair of geometries (src: the gradient's, dst: the result's) with the count
// taken over dst or over src; swapping the geometries and the count gives its adjoint, which is
// its backward, so higher-order gradients work.
#include <map>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

struct Geometry {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
};

Geometry geometry(const Attrs& a, size_t first) {
  return {SymIntArrayRef(a.shape(first)).vec(), SymIntArrayRef(a.shape(first + 1)).vec(),
          a.i(first + 2)};
}

// Calls f(flat_index, storage_position) for each element of the geometry in row-major order.
template <class F>
void for_each_position(const Geometry& g, F f) {
  int64_t n = 1;
  for (int64_t s : g.sizes) n *= s;
  const int64_t nd = static_cast<int64_t>(g.sizes.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, pos = g.offset;
    for (int64_t d = nd - 1; d >= 0; --d) {
      pos += (rem % g.sizes[d]) * g.strides[d];
      rem /= g.sizes[d];
    }
    f(i, pos);
  }
}

void check_geometry(const char* op, const SymShape& size, const SymShape& stride) {
  KILN_CHECK(size.size() == stride.size(), op, ": mismatch in length of strides and shape (got ",
             size.size(), " sizes and ", stride.size(), " strides)");
  for (size_t d = 0; d < size.size(); ++d)
    KILN_CHECK(size[d] >= 0 && stride[d] >= 0, op, ": negative size or stride in size ",
               SymIntArrayRef(size), ", stride ", SymIntArrayRef(stride));
}

// The count over `count_geom` of each storage position, and the gradient summed by position.
void as_strided_backward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out,
                                const Attrs& a) {
  const Geometry src = geometry(a, 0), dst = geometry(a, 3);
  const bool divide_by_dst = a.b(6);
  Tensor g = in[0].contiguous();
  std::map<int64_t, double> sums;
  std::map<int64_t, int64_t> counts;
  cpu::visit_floating(g.dtype(), "as_strided_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* gp = g.sym_numel() > 0 ? static_cast<const T*>(g.data_ptr()) : nullptr;
    for_each_position(src, [&](int64_t i, int64_t pos) {
      sums[pos] += static_cast<double>(static_cast<cpu::compute_t<T>>(gp[i]));
    });
    for_each_position(divide_by_dst ? dst : src, [&](int64_t, int64_t pos) { ++counts[pos]; });
    T* op = out[0].sym_numel() > 0 ? static_cast<T*>(out[0].data_ptr()) : nullptr;
    for_each_position(dst, [&](int64_t i, int64_t pos) {
      auto s = sums.find(pos);
      auto c = counts.find(pos);
      double v = s == sums.end() || c == counts.end() ? 0.0 : s->second / c->second;
      op[i] = static_cast<T>(v);
    });
  });
}

Attrs backward_attrs(const SymShape& src_size, const SymShape& src_stride, SymInt src_offset,
                     const SymShape& dst_size, const SymShape& dst_stride, SymInt dst_offset,
                     bool divide_by_dst) {
  return {src_size,     src_stride, std::move(src_offset),
          dst_size,     dst_stride, std::move(dst_offset),
          divide_by_dst};
}

}  // namespace

KILN_REGISTER_OP(as_strided)
    .schema(
        "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
        "-> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      const SymShape& size = a.shape(0);
      const SymShape& stride = a.shape(1);
      check_geometry("as_strided", size, stride);
      SymInt offset = a.is_none(2) ? x.sym_storage_offset() : a.sym(2);
      KILN_CHECK(offset >= 0, "as_strided: negative storage offset ", offset);
      if (!x.is_meta()) {
        SymInt extent = offset + 1;
        bool empty = false;
        for (size_t d = 0; d < size.size(); ++d) {
          if (size[d] == 0) empty = true;
          extent = extent + (size[d] - 1) * stride[d];
        }
        int64_t capacity = static_cast<int64_t>(x.impl()->storage()->nbytes() / x.element_size());
        KILN_CHECK(empty || extent <= capacity, "as_strided: storage size of ", capacity,
                   " elements is too small for size ", SymIntArrayRef(size), ", stride ",
                   SymIntArrayRef(stride), " and offset ", offset);
      }
      return std::vector<TensorSpec>{shape::view_spec(x, size, stride, offset)};
    })
    .view()
    .backward([](const BackwardContext& c) {
      static const OpDef& back = get_op("as_strided_backward");
      const Tensor& x = c.input(0);
      SymInt offset = c.attrs.is_none(2) ? x.sym_storage_offset() : c.attrs.sym(2);
      return std::vector<Tensor>{
          call_op1(back, {c.grad()},
                   backward_attrs(c.attrs.shape(0), c.attrs.shape(1), offset, x.sym_sizes(),
                                  x.sym_strides(), x.sym_storage_offset(), true))};
    })
    .samples([](ScalarType dt) {
      using S = SymShape;
      return std::vector<OpSample>{
          {{samples::make({12}, dt)}, {S{3, 2}, S{4, 1}, SymInt(1)}, "strided"},
          {{samples::make({3, 4}, dt)}, {S{2, 2}, S{1, 2}, std::monostate{}}, "transposed"},
          {{samples::make({5}, dt)}, {S{3, 3}, S{1, 1}, SymInt(0)}, "overlapping windows"},
          {{samples::make({4}, dt)}, {S{2, 4}, S{0, 1}, std::monostate{}}, "broadcast"},
          {{samples::make({6}, dt)}, {S{}, S{}, SymInt(4)}, "0-dim"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      // Reads the storage of the input (the samples are contiguous at offset 0).
      std::vector<int64_t> sz = SymIntArrayRef(a.shape(0)).vec();
      std::vector<int64_t> st = SymIntArrayRef(a.shape(1)).vec();
      const int64_t off = a.is_none(2) ? 0 : a.i(2);
      return std::vector<Tensor>{shape::reference_gather(
          in[0].flatten(), sz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            int64_t pos = off;
            for (size_t d = 0; d < o.size(); ++d) pos += o[d] * st[d];
            i.assign(1, pos);
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .error_samples([] {
      using S = SymShape;
      const Tensor x = samples::make({12}, kFloat32);
      const std::monostate none;
      return std::vector<OpErrorSample>{
          {{x},
           {S{3, 2}, S{1}, none},
           "mismatch in length of strides and shape (got 2 sizes and 1 "
           "strides)",
           "lengths"},
          {{x},
           {S{3, 2}, S{-1, 1}, none},
           "negative size or stride in size [3, 2], stride [-1, 1]",
           "negative stride"},
          {{x}, {S{3}, S{1}, SymInt(-1)}, "negative storage offset -1", "negative offset"},
          {{x},
           {S{3, 4}, S{4, 1}, SymInt(2)},
           "storage size of 12 elements is too small for size [3, 4], stride [4, 1] and offset 2",
           "past the storage",
           /*in_meta=*/false},
      };
    })
    .lowering("view");

KILN_REGISTER_OP(as_strided_backward)
    .schema(
        "as_strided_backward(Tensor grad_output, SymInt[] src_size, SymInt[] src_stride, "
        "SymInt src_offset, SymInt[] dst_size, SymInt[] dst_stride, SymInt dst_offset, "
        "bool divide_by_dst) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      check_geometry("as_strided_backward", a.shape(0), a.shape(1));
      check_geometry("as_strided_backward", a.shape(3), a.shape(4));
      KILN_CHECK(in[0].sym_sizes() == SymIntArrayRef(a.shape(0)),
                 "as_strided_backward: grad_output ", "of shape ", in[0].sym_sizes(),
                 " does not match the view's shape ", SymIntArrayRef(a.shape(0)));
      return meta::one_spec(a.shape(3), in[0].dtype(), in[0].device());
    })
    .cpu(as_strided_backward_kernel)
    .error_samples([] {
      using S = SymShape;
      return std::vector<OpErrorSample>{
          {{samples::make({3, 2}, kFloat32)},
           backward_attrs(S{3, 2}, S{1}, 0, S{12}, S{1}, 0, true),
           "mismatch in length of strides and shape (got 2 sizes and 1 strides)",
           "lengths"},
          {{samples::make({3, 3}, kFloat32)},
           backward_attrs(S{3, 2}, S{4, 1}, 0, S{12}, S{1}, 0, true),
           "grad_output of shape [3, 3] does not match the view's shape [3, 2]",
           "grad's shape"},
      };
    })
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      const Attrs& a = c.attrs;
      return std::vector<Tensor>{
          call_op1(get_op("as_strided_backward"), {c.grad()},
                   backward_attrs(a.shape(3), a.shape(4), a.sym(5), a.shape(0), a.shape(1),
                                  a.sym(2), !a.b(6)))};
    })
    .samples([](ScalarType dt) {
      using S = SymShape;
      auto sample = [&](std::vector<int64_t> g, Attrs a, const char* desc) {
        return OpSample{{samples::make(std::move(g), dt)}, std::move(a), desc};
      };
      return std::vector<OpSample>{
          sample({3, 2}, backward_attrs(S{3, 2}, S{4, 1}, 1, S{12}, S{1}, 0, true), "strided"),
          sample({3, 3}, backward_attrs(S{3, 3}, S{1, 1}, 0, S{5}, S{1}, 0, true),
                 "overlapping view"),
          sample({4}, backward_attrs(S{4}, S{1}, 0, S{2, 4}, S{0, 1}, 0, true),
                 "overlapping input"),
          sample({2, 4}, backward_attrs(S{2, 4}, S{0, 1}, 0, S{4}, S{1}, 0, false),
                 "count over src"),
          sample({2, 3}, backward_attrs(S{2, 3}, S{3, 1}, 2, S{3, 2}, S{1, 3}, 1, true),
                 "transposed, offsets")};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const Geometry src = geometry(a, 0), dst = geometry(a, 3);
      Tensor g = in[0].to(kFloat64).contiguous();
      Tensor out = zeros(dst.sizes, kFloat64);
      double* o = out.data_ptr<double>();
      // For each result element: the sum over gradient elements at its position, divided by
      // how many elements of the counted geometry share it.
      for_each_position(dst, [&](int64_t i, int64_t pos) {
        double sum = 0;
        int64_t count = 0;
        for_each_position(src, [&](int64_t j, int64_t p) {
          if (p == pos) sum += g.data_ptr<double>()[j];
        });
        for_each_position(a.b(6) ? dst : src, [&](int64_t, int64_t p) { count += p == pos; });
        o[i] = count ? sum / static_cast<double>(count) : 0.0;
      });
      return std::vector<Tensor>{out};
    })
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:as_strided_backward");

Tensor as_strided(const Tensor& self, SymIntList size, SymIntList stride,
                  std::optional<SymInt> storage_offset) {
  static const OpDef& op = get_op("as_strided");
  return call_op1(op, {self},
                  {std::move(size).get(), std::move(stride).get(), opt_attr(storage_offset)});
}

Tensor Tensor::as_strided(SymIntList size, SymIntList stride,
                          std::optional<SymInt> storage_offset) const {
  return kiln::as_strided(*this, std::move(size), std::move(stride), std::move(storage_offset));
}

}  // namespace kiln

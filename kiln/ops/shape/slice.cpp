// slice and select (views along one dim), their adjoints slice_backward/select_backward, and
// narrow built on slice.
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

using shape::view_spec;

// Slice bounds clamped into [0, size] as Python does; comparisons on symbolic sizes guard.
std::pair<SymInt, SymInt> slice_bounds(const SymInt& size, const Attrs& a) {
  SymInt start = 0, end = size;
  if (!a.is_none(1)) {
    start = a.sym(1);
    if (start < 0) start = start + size;
    if (start < 0) {
      start = 0;
    } else if (start > size) {
      start = size;
    }
  }
  if (!a.is_none(2)) {
    end = a.sym(2);
    if (end < 0) end = end + size;
    if (end < start) {
      end = start;
    } else if (end > size) {
      end = size;
    }
  }
  return {start, end};
}

}  // namespace

KILN_REGISTER_OP(slice)
    .schema(
        "slice(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> "
        "Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      KILN_CHECK(x.dim() > 0, "slice: cannot be applied to a 0-dim tensor.");
      int64_t dim = meta::wrap_dim("slice", a.i(0), x.dim());
      SymInt step = a.sym(3);
      KILN_CHECK(step > 0, "slice: slice step must be positive, got ", step);
      auto [start, end] = slice_bounds(x.sym_size(dim), a);
      SymShape sizes = x.sym_sizes(), strides = x.sym_strides();
      sizes[dim] = (end - start + step - 1) / step;
      strides[dim] = strides[dim] * step;
      return std::vector<TensorSpec>{
          view_spec(x, sizes, strides, x.sym_storage_offset() + start * x.sym_stride(dim))};
    })
    .view()
    .error_samples([] {
      using M = std::monostate;
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{samples::make({}, kFloat32)},
           {int64_t{0}, M{}, M{}, SymInt(1)},
           "cannot be applied to a 0-dim tensor",
           "0-dim input"},
          {{x},
           {int64_t{2}, M{}, M{}, SymInt(1)},
           "expected to be in range of [-2, 1], but got 2",
           "dim"},
          {{x}, {int64_t{0}, M{}, M{}, SymInt(0)}, "slice step must be positive, got 0", "step 0"},
      };
    })
    .backward([](const BackwardContext& c) {
      static const OpDef& back = get_op("slice_backward");
      return std::vector<Tensor>{
          call_op1(back, {c.grad()}, shape::prepend_attr(c.input(0).sym_sizes(), c.attrs))};
    })
    .samples([](ScalarType dt) {
      using M = std::monostate;
      return std::vector<OpSample>{
          {{samples::make({6, 4}, dt)}, {int64_t{0}, SymInt(1), SymInt(5), SymInt(2)}, "step 2"},
          {{samples::make({6, 4}, dt)}, {int64_t{1}, SymInt(-3), M{}, SymInt(1)}, "negative start"},
          {{samples::make({6, 4}, dt)},
           {int64_t{-1}, SymInt(2), SymInt(100), SymInt(1)},
           "clamped end"},
          {{samples::make({6, 4}, dt)}, {int64_t{0}, SymInt(4), SymInt(2), SymInt(1)}, "empty"},
          {{samples::make({5, 7}, dt, -3, 3, true)},
           {int64_t{1}, M{}, SymInt(-1), SymInt(3)},
           "non-contiguous"},
          {{samples::make({2, 5, 3}, dt)},
           {int64_t{1}, SymInt(-100), SymInt(-2), SymInt(1)},
           "3d clamped start"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor x = in[0];
      int64_t dim = a.i(0) < 0 ? a.i(0) + x.dim() : a.i(0);
      const int64_t n = x.sym_size(dim).guard_int(), step = a.i(3);
      int64_t start = a.is_none(1) ? 0 : a.i(1), end = a.is_none(2) ? n : a.i(2);
      if (start < 0) start += n;
      if (end < 0) end += n;
      start = std::clamp<int64_t>(start, 0, n);
      end = std::clamp<int64_t>(end, start, n);
      std::vector<int64_t> osz = x.sym_sizes().vec();
      osz[dim] = (end - start + step - 1) / step;
      return std::vector<Tensor>{shape::reference_gather(
          x, osz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            i = o;
            i[dim] = start + o[dim] * step;
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("view");

KILN_REGISTER_OP(select)
    .schema("select(Tensor(a) self, int dim, SymInt index) -> Tensor(a)")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      KILN_CHECK(x.dim() > 0, "select: cannot be applied to a 0-dim tensor.");
      int64_t dim = meta::wrap_dim("select", a.i(0), x.dim());
      SymInt size = x.sym_size(dim), index = a.sym(1);
      KILN_CHECK(index >= -size && index < size, "select: index ", index,
                 " out of range for tensor of size ", x.sym_sizes(), " at dimension ", dim);
      if (index < 0) index = index + size;
      SymShape sizes = x.sym_sizes(), strides = x.sym_strides();
      sizes.erase(sizes.begin() + dim);
      strides.erase(strides.begin() + dim);
      return std::vector<TensorSpec>{
          view_spec(x, sizes, strides, x.sym_storage_offset() + index * x.sym_stride(dim))};
    })
    .view()
    .error_samples([] {
      const Tensor x = samples::make({2, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{samples::make({}, kFloat32)},
           {int64_t{0}, SymInt(0)},
           "cannot be applied to a 0-dim tensor",
           "0-dim input"},
          {{x}, {int64_t{2}, SymInt(0)}, "expected to be in range of [-2, 1], but got 2", "dim"},
          {{x},
           {int64_t{1}, SymInt(3)},
           "index 3 out of range for tensor of size [2, 3] at dimension 1",
           "index"},
      };
    })
    .backward([](const BackwardContext& c) {
      static const OpDef& back = get_op("select_backward");
      return std::vector<Tensor>{
          call_op1(back, {c.grad()}, shape::prepend_attr(c.input(0).sym_sizes(), c.attrs))};
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          {{samples::make({3, 4}, dt)}, {int64_t{0}, SymInt(1)}, "row"},
          {{samples::make({3, 4}, dt)}, {int64_t{1}, SymInt(-1)}, "last column"},
          {{samples::make({2, 3, 4}, dt)}, {int64_t{-2}, SymInt(2)}, "3d middle dim"},
          {{samples::make({5}, dt)}, {int64_t{0}, SymInt(3)}, "to 0-dim"},
          {{samples::make({4, 5}, dt, -3, 3, true)}, {int64_t{1}, SymInt(2)}, "non-contiguous"},
          {{samples::make({3, 0}, dt)}, {int64_t{0}, SymInt(2)}, "zero-size"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      int64_t dim = a.i(0) < 0 ? a.i(0) + x.dim() : a.i(0);
      int64_t index = a.i(1) < 0 ? a.i(1) + x.sym_size(dim).guard_int() : a.i(1);
      std::vector<int64_t> osz = x.sym_sizes().vec();
      osz.erase(osz.begin() + dim);
      return std::vector<Tensor>{shape::reference_gather(
          x, osz, [&](const std::vector<int64_t>& o, std::vector<int64_t>& i) {
            i.assign(o.begin(), o.end());
            i.insert(i.begin() + dim, index);
            return true;
          })};
    })
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("view");

[[maybe_unused]] static const bool kSliceBackward =
    (shape::register_view_backward("slice", false), true);
[[maybe_unused]] static const bool kSelectBackward =
    (shape::register_view_backward("select", false), true);

Tensor slice(const Tensor& self, int64_t dim, std::optional<SymInt> start,
             std::optional<SymInt> end, SymInt step) {
  static const OpDef& op = get_op("slice");
  return call_op1(op, {self}, {dim, opt_attr(start), opt_attr(end), std::move(step)});
}

Tensor select(const Tensor& self, int64_t dim, SymInt index) {
  static const OpDef& op = get_op("select");
  return call_op1(op, {self}, {dim, std::move(index)});
}

Tensor narrow(const Tensor& self, int64_t dim, SymInt start, SymInt length) {
  KILN_CHECK(self.dim() > 0, "narrow: cannot be applied to a 0-dim tensor.");
  int64_t d = meta::wrap_dim("narrow", dim, self.dim());
  SymInt size = self.sym_size(d);
  KILN_CHECK(length >= 0, "narrow: length must be non-negative, got ", length);
  KILN_CHECK(start >= -size && start <= size,
             "narrow: start out of range (expected to be in range of [", -size, ", ", size,
             "], but got ", start, ")");
  if (start < 0) start = start + size;
  KILN_CHECK(start + length <= size, "narrow: start (", start, ") + length (", length,
             ") exceeds dimension size (", size, ").");
  return slice(self, d, start, start + length, 1);
}

Tensor Tensor::slice(int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end,
                     SymInt step) const {
  return kiln::slice(*this, dim, std::move(start), std::move(end), std::move(step));
}
Tensor Tensor::select(int64_t dim, SymInt index) const {
  return kiln::select(*this, dim, std::move(index));
}
Tensor Tensor::narrow(int64_t dim, SymInt start, SymInt length) const {
  return kiln::narrow(*this, dim, std::move(start), std::move(length));
}

}  // namespace kiln

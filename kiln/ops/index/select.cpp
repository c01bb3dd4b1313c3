// index_select, index_add, index_copy, index_fill: a 1-D index along one dim. Each runs the
// gather/scatter kernels with the index expanded over the other dims (stride 0), so dim 0 on
// rows of contiguous data takes the row path (Note [Row path] in backend/cpu/scatter.h).
#include "kiln/backend/cpu/scatter.h"
#include "kiln/ops/index.h"
#include "kiln/ops/index/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {
using index_ops::f64;
using index_ops::i64;
using index_ops::kMoveDtypes;
using index_ops::sample_index;
using samples::make;

int64_t wrap(const char* op, int64_t dim, const Tensor& self) {
  return meta::wrap_dim(op, dim, std::max<int64_t>(self.dim(), 1));
}
SymInt size_at(const Tensor& t, int64_t d) { return t.dim() == 0 ? SymInt(1) : t.sym_size(d); }
// A 0-dim tensor seen as 1-D (a view; kernels index dim 0 of it).
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }
std::vector<int64_t> sizes_of(const Tensor& t) { return as_1d(t).sym_sizes().vec(); }

void check_index(const char* op, const Tensor& index) {
  KILN_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
             ": Expected dtype int32/int64 for index, but got ", index.dtype());
  KILN_CHECK(index.dim() <= 1, op, ": Index is supposed to be a vector, but got a tensor of shape ",
             index.sym_sizes());
}

std::vector<TensorSpec> index_select_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &self = in[0], &index = in[1];
  const int64_t dim = wrap("index_select", a.i(0), self);
  check_index("index_select", index);
  SymShape sizes = self.sym_sizes();
  if (self.dim() > 0)
    sizes[dim] = index.sym_numel();
  else
    KILN_CHECK(index.sym_numel() == 1, "index_select: Index to scalar can have only 1 value, got ",
               index.sym_numel(), " value(s)");
  return {meta::spec(sizes, self.dtype(), self.device())};
}

void index_select_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& self = in[0];
  const int64_t dim = wrap("index_select", a.i(0), self);
  Tensor idx = index_ops::checked_index_1d("index_select", in[1], dim,
                                           size_at(self, dim).guard_int(), false);
  if (out[0].sym_numel() == 0) return;
  Tensor o = as_1d(out[0]);
  cpu::gather(o, as_1d(self), dim, index_ops::expand_index(idx, sizes_of(o), dim));
}

// index_add / index_copy: source has self's shape but index.sym_numel() along dim.
MetaFn index_source_meta(const char* op) {
  return [op](const std::vector<Tensor>& in, const Attrs& a) {
    const Tensor &self = in[0], &index = in[1], &source = in[2];
    const int64_t dim = wrap(op, a.i(0), self);
    check_index(op, index);
    KILN_CHECK(self.dtype() == source.dtype(), op, ": self (", self.dtype(), ") and source (",
               source.dtype(), ") must have the same scalar type");
    KILN_CHECK(std::max<int64_t>(self.dim(), 1) == std::max<int64_t>(source.dim(), 1), op,
               ": source ", source.sym_sizes(), " and self ", self.sym_sizes(),
               " must have the same number of dimensions");
    KILN_CHECK(size_at(source, dim) == index.sym_numel(), op, ": Number of indices (",
               index.sym_numel(), ") should be equal to source.size(dim) (", size_at(source, dim),
               ")");
    for (int64_t d = 0; d < self.dim(); ++d) {
      KILN_CHECK(d == dim || self.sym_size(d) == source.sym_size(d), op, ": source ",
                 source.sym_sizes(), " and self ", self.sym_sizes(),
                 " must match in every dim but ", dim);
    }
    return meta::one_spec(self.sym_sizes(), self.dtype(), self.device());
  };
}

KernelFn index_source_kernel(const char* op, cpu::ScatterOp reduce) {
  return [op, reduce](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const Tensor& self = in[0];
    const int64_t dim = wrap(op, a.i(0), self);
    Tensor idx = index_ops::checked_index_1d(op, in[1], dim, size_at(self, dim).guard_int(), false);
    Tensor source = in[2];
    if (reduce == cpu::ScatterOp::Sum && !(a.scalar(1).to<double>() == 1))
      source = (source * a.scalar(1)).to(self.dtype());
    Tensor target = index_ops::scatter_target(out[0], self);
    cpu::scatter(op, as_1d(target), dim, index_ops::expand_index(idx, sizes_of(source), dim),
                 as_1d(source), 0, reduce, true);
    index_ops::finish_output(out[0], target);
  };
}

std::vector<TensorSpec> index_fill_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &self = in[0], &index = in[1], &value = in[2];
  wrap("index_fill", a.i(0), self);
  check_index("index_fill", index);
  KILN_CHECK(value.dim() == 0,
             "index_fill: only supports a 0-dimensional value tensor, but got a tensor of shape ",
             value.sym_sizes());
  return {meta::spec(self.sym_sizes(), self.dtype(), self.device())};
}

void index_fill_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& self = in[0];
  const int64_t dim = wrap("index_fill", a.i(0), self);
  Tensor idx =
      index_ops::checked_index_1d("index_fill", in[1], dim, size_at(self, dim).guard_int(), true);
  const Scalar value = in[2].item();
  Tensor target = index_ops::scatter_target(out[0], self);
  cpu::scatter("index_fill", as_1d(target), dim,
               index_ops::expand_index(idx, sizes_of(target), dim), Tensor(), value,
               cpu::ScatterOp::Assign, true);
  index_ops::finish_output(out[0], target);
}

// ---- float64 references: loops over the positions along dim ----

// Calls f(out_flat, in_flat) for every element of a tensor of `sizes` whose coordinate along dim
// is `from`, with the matching element whose coordinate is `to` in a tensor of `to_sizes`.
template <class F>
void for_slice(const std::vector<int64_t>& sizes, const std::vector<int64_t>& to_sizes, int64_t dim,
               int64_t from, int64_t to, F f) {
  std::vector<int64_t> slice = sizes;
  slice[dim] = 1;
  int64_t n = 1;
  for (int64_t s : slice) n *= s;
  for (int64_t flat = 0; flat < n; ++flat) {
    std::vector<int64_t> c = index_ops::unravel(flat, slice);
    c[dim] = from;
    const int64_t a = index_ops::ravel(c, sizes);
    c[dim] = to;
    f(a, index_ops::ravel(c, to_sizes));
  }
}

std::vector<Tensor> index_select_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const int64_t dim = wrap("index_select", a.i(0), in[0]);
  Tensor x = f64(as_1d(in[0])), ix = i64(in[1]).reshape({-1});
  std::vector<int64_t> osz = x.sym_sizes().vec();
  osz[dim] = ix.sym_numel();
  Tensor out = zeros(osz, kFloat64);
  for (int64_t k = 0; k < ix.sym_numel(); ++k)
    for_slice(osz, x.sym_sizes().vec(), dim, k, ix.data_ptr<int64_t>()[k],
              [&](int64_t o, int64_t i) { out.data_ptr<double>()[o] = x.data_ptr<double>()[i]; });
  return {in[0].dim() == 0 ? out.reshape(in[0].sym_sizes()) : out};
}

ReferenceFn index_source_reference(bool add) {
  return [add](const std::vector<Tensor>& in, const Attrs& a) {
    const int64_t dim = wrap("index_add", a.i(0), in[0]);
    Tensor out = f64(as_1d(in[0])), src = f64(as_1d(in[2])), ix = i64(in[1]).reshape({-1});
    const double alpha = add ? a.scalar(1).to<double>() : 1;
    for (int64_t k = 0; k < ix.sym_numel(); ++k)
      for_slice(src.sym_sizes().vec(), out.sym_sizes().vec(), dim, k, ix.data_ptr<int64_t>()[k],
                [&](int64_t s, int64_t o) {
                  double& dst = out.data_ptr<double>()[o];
                  dst = add ? dst + alpha * src.data_ptr<double>()[s] : src.data_ptr<double>()[s];
                });
    return std::vector<Tensor>{out.view(in[0].sym_sizes())};
  };
}

std::vector<Tensor> index_fill_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const int64_t dim = wrap("index_fill", a.i(0), in[0]);
  Tensor out = f64(as_1d(in[0])), ix = i64(in[1]).reshape({-1});
  const double value = f64(in[2]).item<double>();
  const int64_t size = out.sym_size(dim).guard_int();
  for (int64_t k = 0; k < ix.sym_numel(); ++k) {
    int64_t to = ix.data_ptr<int64_t>()[k];
    if (to < 0) to += size;
    for_slice(out.sym_sizes().vec(), out.sym_sizes().vec(), dim, to, to,
              [&](int64_t o, int64_t) { out.data_ptr<double>()[o] = value; });
  }
  return {out.view(in[0].sym_sizes())};
}

// ---- samples ----

std::vector<OpSample> index_select_samples(ScalarType dt) {
  return {
      {{make({5, 3}, dt), sample_index({4}, 5)}, {int64_t{0}}, "dim 0"},
      {{make({3, 5}, dt), sample_index({6}, 5)}, {int64_t{1}}, "dim 1, repeats"},
      {{make({4, 5}, dt, -3, 3, true).t(), sample_index({3}, 4)}, {int64_t{-1}}, "transposed"},
      {{make({6, 16}, dt), sample_index({20}, 6)}, {int64_t{0}}, "rows"},
      {{make({2, 6, 4}, dt), sample_index({3}, 6).to(kInt32)}, {int64_t{1}}, "3-D, int32 index"},
      {{make({}, dt), zeros({}, kInt64)}, {int64_t{0}}, "0-dim"},
      {{make({4, 3}, dt), sample_index({0}, 4)}, {int64_t{0}}, "empty index"},
  };
}

std::vector<OpSample> index_source_samples(ScalarType dt, bool add) {
  auto attrs = [add](int64_t dim, double alpha) {
    return add ? Attrs{dim, Scalar(alpha)} : Attrs{int64_t{dim}};
  };
  // index_copy's gradient is defined only for distinct indices.
  Tensor distinct = tensor({3, 0, 4}, kInt64);
  std::vector<OpSample> s = {
      {{make({5, 3}, dt), distinct, make({3, 3}, dt)}, attrs(0, 1), "dim 0"},
      {{make({3, 5}, dt), distinct, make({3, 3}, dt)}, attrs(1, 2), "dim 1"},
      {{make({5, 4}, dt, -3, 3, true), distinct, make({4, 3}, dt).t()},
       attrs(0, 1),
       "non-contiguous"},
      {{make({6, 16}, dt), tensor({5, 1, 2, 0}, kInt64), make({4, 16}, dt)}, attrs(0, 1), "rows"},
      {{make({}, dt), zeros({}, kInt64), make({}, dt)}, attrs(0, 1), "0-dim"},
      {{make({4, 3}, dt), sample_index({0}, 4), make({0, 3}, dt)}, attrs(0, 1), "empty index"},
  };
  if (add) {
    s.push_back({{make({6, 16}, dt), sample_index({40}, 6), make({40, 16}, dt)},
                 attrs(0, 1),
                 "rows, repeated indices"});
    s.push_back({{make({5}, dt), sample_index({9}, 5), make({9}, dt)},
                 attrs(0, 1),
                 "vector, repeated indices"});
  }
  return s;
}

std::vector<OpSample> index_fill_samples(ScalarType dt) {
  return {
      {{make({5, 3}, dt), tensor({4, -1, 0}, kInt64), wrapped_scalar(2)},
       {int64_t{0}},
       "number value, negative index"},
      {{make({3, 5}, dt), sample_index({2}, 5), make({}, dt)}, {int64_t{1}}, "0-dim tensor value"},
      {{make({5, 4}, dt, -3, 3, true).t(), sample_index({2}, 5), make({}, dt)},
       {int64_t{1}},
       "transposed"},
      {{make({}, dt), zeros({}, kInt64), make({}, dt)}, {int64_t{0}}, "0-dim"},
  };
}

// The checks every entry with a dim and a 1-D index makes; `rest` are its other inputs.
std::vector<OpErrorSample> index_error_samples(std::vector<Tensor> rest, const Attrs& dim0,
                                               const Attrs& dim2) {
  auto with = [&](Tensor index) {
    std::vector<Tensor> in{make({3, 4}, kFloat32), std::move(index)};
    in.insert(in.end(), rest.begin(), rest.end());
    return in;
  };
  return {
      {with(tensor({0, 1}, kInt64)), dim2, "expected to be in range of [-2, 1], but got 2", "dim"},
      {with(tensor({0., 1.})), dim0, "for index, but got float32", "float index"},
      {with(tensor({{0, 1}}, kInt64)), dim0, "but got a tensor of shape [1, 2]", "2-D index"},
      {with(tensor({0, 3}, kInt64)), dim0, "index 3 is out of bounds for dimension 0 with size 3",
       "index out of range", /*in_meta=*/false},
  };
}

std::vector<OpErrorSample> index_source_error_samples(bool add) {
  auto attrs = [add](int64_t dim) { return add ? Attrs{dim, Scalar(1)} : Attrs{dim}; };
  const Tensor self = make({3, 4}, kFloat32), index = tensor({0, 2}, kInt64);
  std::vector<OpErrorSample> s = index_error_samples({make({2, 4}, kFloat32)}, attrs(0), attrs(2));
  s.insert(s.end(), {
                        {{self, index, make({2, 4}, kFloat64)},
                         attrs(0),
                         "self (float32) and source (float64) must have the same scalar type",
                         "dtype"},
                        {{self, index, make({2, 4, 1}, kFloat32)},
                         attrs(0),
                         "source [2, 4, 1] and self [3, 4] must have the same number of dimensions",
                         "rank"},
                        {{self, index, make({3, 4}, kFloat32)},
                         attrs(0),
                         "Number of indices (2) should be equal to source.size(dim) (3)",
                         "count"},
                        {{self, index, make({2, 5}, kFloat32)},
                         attrs(0),
                         "source [2, 5] and self [3, 4] must match in every dim but 0",
                         "other dims"},
                    });
  if (add)
    s.push_back({{self.to(kBool), index, make({2, 4}, kBool)},
                 attrs(0),
                 "reductions are not supported for dtype bool",
                 "bool",
                 /*in_meta=*/false});
  return s;
}

}  // namespace

KILN_REGISTER_OP(index_select)
    .schema("index_select(Tensor self, int dim, Tensor index) -> Tensor")
    .meta(index_select_meta)
    .cpu(index_select_kernel)
    .save_metadata({0})  // self: its sizes only
    .backward([](const BackwardContext& c) {
      const int64_t dim = wrap("index_select", c.attrs.i(0), c.input(0));
      Tensor z = zeros(c.input(0).sym_sizes(), c.grad().options());
      return std::vector<Tensor>{z.index_add(dim, c.input(1), c.grad()), Tensor()};
    })
    .samples(index_select_samples)
    .error_samples([] {
      auto s = index_error_samples({}, {int64_t{0}}, {int64_t{2}});
      s.push_back({{make({}, kFloat32), tensor({0, 0}, kInt64)},
                   {int64_t{0}},
                   "can have only 1 value, got 2 value(s)",
                   "two indices into a 0-dim tensor"});
      return s;
    })
    .reference(index_select_reference)
    .dtypes(kMoveDtypes)
    .lowering("extern:index_select");

KILN_REGISTER_OP(index_add)
    .schema(
        "index_add(Tensor self, int dim, Tensor index, Tensor source, Scalar alpha=1) -> "
        "Tensor")
    .meta(index_source_meta("index_add"))
    .cpu(index_source_kernel("index_add", cpu::ScatterOp::Sum))
    .save_inputs({0, 1})  // self (for its rank) and the index
    .save_metadata({0})   // self: its sizes only
    .backward([](const BackwardContext& c) {
      const int64_t dim = wrap("index_add", c.attrs.i(0), c.input(0));
      std::vector<Tensor> g(3);
      if (c.needs_grad(0)) g[0] = c.grad();
      if (c.needs_grad(2)) g[2] = c.grad().index_select(dim, c.input(1)) * c.attrs.scalar(1);
      return g;
    })
    .samples([](ScalarType dt) { return index_source_samples(dt, true); })
    .error_samples([] { return index_source_error_samples(true); })
    .reference(index_source_reference(true))
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("extern:index_add");

KILN_REGISTER_OP(index_copy)
    .schema("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor")
    .meta(index_source_meta("index_copy"))
    .cpu(index_source_kernel("index_copy", cpu::ScatterOp::Assign))
    .save_inputs({0, 1})  // self (for its rank) and the index
    .save_metadata({0})   // self: its sizes only
    .backward([](const BackwardContext& c) {
      const int64_t dim = wrap("index_copy", c.attrs.i(0), c.input(0));
      std::vector<Tensor> g(3);
      if (c.needs_grad(0)) g[0] = c.grad().index_fill(dim, c.input(1), Scalar(0));
      if (c.needs_grad(2)) g[2] = c.grad().index_select(dim, c.input(1));
      return g;
    })
    .samples([](ScalarType dt) { return index_source_samples(dt, false); })
    .error_samples([] { return index_source_error_samples(false); })
    .reference(index_source_reference(false))
    .dtypes(kMoveDtypes)
    .lowering("extern:index_copy");

KILN_REGISTER_OP(index_fill)
    .schema("index_fill(Tensor self, int dim, Tensor index, Tensor value) -> Tensor")
    .meta(index_fill_meta)
    .cpu(index_fill_kernel)
    .save_inputs({0, 1})  // self (for its rank) and the index
    .save_metadata({0})   // self: its sizes only
    .backward([](const BackwardContext& c) {
      const int64_t dim = wrap("index_fill", c.attrs.i(0), c.input(0));
      std::vector<Tensor> g(3);
      if (c.needs_grad(0)) g[0] = c.grad().index_fill(dim, c.input(1), Scalar(0));
      // Each filled position counts once, even when the index repeats it.
      if (c.needs_grad(2))
        g[2] = (c.grad() * zeros_like(c.grad()).index_fill(dim, c.input(1), Scalar(1))).sum();
      return g;
    })
    .samples(index_fill_samples)
    .error_samples([] {
      auto s = index_error_samples({make({}, kFloat32)}, {int64_t{0}}, {int64_t{2}});
      s.back().expected = "index 3 is out of bounds for dimension 0 with size 3 (valid range: -3";
      s.push_back({{make({3, 4}, kFloat32), tensor({0}, kInt64), make({2}, kFloat32)},
                   {int64_t{0}},
                   "0-dimensional value tensor, but got a tensor of shape [2]",
                   "value of one dimension"});
      return s;
    })
    .reference(index_fill_reference)
    .dtypes(kMoveDtypes)
    .lowering("extern:index_fill");

namespace {
[[maybe_unused]] const bool kInplaceRegistered =
    index_ops::register_inplace({"index_add", "index_copy", "index_fill"});
}  // namespace

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  KILN_INDEX_OP(op, "index_select");
  return call_op1(op, {self, index}, {dim});
}
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  KILN_INDEX_OP(op, "index_add");
  return call_op1(op, {self, index, source}, {dim, alpha});
}
Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  KILN_INDEX_OP(op, "index_copy");
  return call_op1(op, {self, index, source}, {dim});
}
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  KILN_INDEX_OP(op, "index_fill");
  return call_op1(op, {self, index, value}, {dim});
}
Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill(self, dim, index, wrapped_scalar(value));
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return kiln::index_select(*this, dim, index);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) const {
  return kiln::index_add(*this, dim, index, source, alpha);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                           const Scalar& alpha) const {
  KILN_INDEX_OP(op, "index_add_");
  call_op(op, {const_cast<Tensor&>(*this), index, source}, {dim, alpha});
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return kiln::index_copy(*this, dim, index, source);
}
Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const {
  KILN_INDEX_OP(op, "index_copy_");
  call_op(op, {const_cast<Tensor&>(*this), index, source}, {dim});
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  return kiln::index_fill(*this, dim, index, value);
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Tensor& value) const {
  return kiln::index_fill(*this, dim, index, value);
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const {
  return index_fill_(dim, index, wrapped_scalar(value));
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Tensor& value) const {
  KILN_INDEX_OP(op, "index_fill_");
  call_op(op, {const_cast<Tensor&>(*this), index, value}, {dim});
  return const_cast<Tensor&>(*this);
}

}  // namespace kiln

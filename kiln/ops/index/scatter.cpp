// gather, scatter (tensor src or value, optional reduce), scatter_add and scatter_reduce, with
// their in-place forms. Kernels: kiln/backend/cpu/scatter.h.
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

int64_t rank(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
SymInt size_at(const Tensor& t, int64_t d) { return t.dim() == 0 ? SymInt(1) : t.sym_size(d); }
int64_t wrap(const char* op, int64_t dim, const Tensor& self) {
  return meta::wrap_dim(op, dim, rank(self));
}

// PyTorch's gather/scatter shape rules: same rank; index no larger than src anywhere and no
// larger than self apart from `dim`. An empty index is always accepted.
void check_shapes(const char* op, const Tensor& self, const Tensor& index, const Tensor* src,
                  int64_t dim) {
  KILN_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
             ": expected an int64 or int32 index, got ", index.dtype());
  if (index.sym_numel() == 0) return;
  const std::string src_shape = src ? detail::str_cat(src->sym_sizes()) : "";
  KILN_CHECK(rank(index) == rank(self) && (!src || rank(*src) == rank(self)), op,
             ": Index tensor must have the same number of dimensions as ",
             src ? "self and src tensors" : "input tensor", " (got index ", index.sym_sizes(),
             ", self ", self.sym_sizes(), src ? ", src " : "", src_shape, ")");
  for (int64_t d = 0; d < rank(index); ++d) {
    const SymInt n = size_at(index, d);
    const bool ok = (d == dim || n <= size_at(self, d)) && (!src || n <= size_at(*src, d));
    KILN_CHECK(ok, op, ": Size does not match at dimension ", d, " expected index ",
               index.sym_sizes(), " to be smaller than self ", self.sym_sizes(),
               " apart from dimension ", dim, src ? " and to be smaller size than src " : "",
               src_shape);
  }
}

std::vector<TensorSpec> gather_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &self = in[0], &index = in[1];
  const int64_t dim = wrap("gather", a.i(0), self);
  check_shapes("gather", self, index, nullptr, dim);
  return {meta::spec(index.sym_sizes(), self.dtype(), self.device())};
}

void gather_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& self = in[0];
  const int64_t dim = wrap("gather", a.i(0), self);
  Tensor index = index_ops::as_long("gather", in[1]);
  if (index.sym_numel() == 0) return;
  cpu::check_index_range("gather", index, dim, size_at(self, dim).guard_int(), false);
  cpu::gather(out[0], self, dim, index);
}

// grad (index's shape) padded with zeros to src's shape (src may be larger than index).
Tensor fit_to(const Tensor& g, const Tensor& src) {
  if (g.sym_sizes() == src.sym_sizes()) return g;
  std::vector<int64_t> pad;
  for (int64_t d = g.dim() - 1; d >= 0; --d) {
    pad.push_back(0);
    pad.push_back((src.sym_size(d) - g.sym_size(d)).guard_int());
  }
  return kiln::pad(g, pad);
}

enum class ScatterKind { Src, Value, Add, Reduce };

// The attributes after dim: Src: reduce?; Value: value, reduce?; Add: none; Reduce: reduce,
// include_self.
struct ScatterArgs {
  int64_t dim = 0;
  cpu::ScatterOp op = cpu::ScatterOp::Assign;
  bool include_self = true;
  Scalar value = 0;
  std::string reduce;  // "" when none
};

ScatterArgs scatter_args(const char* name, ScatterKind kind, const Tensor& self, const Attrs& a) {
  ScatterArgs r;
  r.dim = wrap(name, a.i(0), self);
  size_t reduce_at = 0;
  if (kind == ScatterKind::Src) reduce_at = 1;
  if (kind == ScatterKind::Value) {
    r.value = a.scalar(1);
    reduce_at = 2;
  }
  if (kind == ScatterKind::Add) r.op = cpu::ScatterOp::Sum;
  if (kind == ScatterKind::Reduce) {
    r.reduce = a.str(1);
    KILN_CHECK(r.reduce == "sum" || r.reduce == "prod" || r.reduce == "mean" ||
                   r.reduce == "amax" || r.reduce == "amin",
               name, ": reduce argument must be either sum, prod, mean, amax or amin, got ",
               r.reduce);
    r.op = cpu::scatter_op_from_name(name, r.reduce);
    r.include_self = a.b(2);
  }
  if (reduce_at > 0 && !a.is_none(reduce_at)) {
    r.reduce = a.str(reduce_at);
    KILN_CHECK(r.reduce == "add" || r.reduce == "multiply", name,
               ": reduce argument must be either add or multiply, got ", r.reduce);
    r.op = cpu::scatter_op_from_name(name, r.reduce);
  }
  return r;
}

MetaFn scatter_meta(const char* name, ScatterKind kind) {
  return [name, kind](const std::vector<Tensor>& in, const Attrs& a) {
    const Tensor &self = in[0], &index = in[1];
    const ScatterArgs s = scatter_args(name, kind, self, a);
    const Tensor* src = kind == ScatterKind::Value ? nullptr : &in[2];
    if (src) {
      KILN_CHECK(src->dtype() == self.dtype(), name,
                 ": expected self and src of the same dtype, got ", self.dtype(), " and ",
                 src->dtype());
    }
    check_shapes(name, self, index, src, s.dim);
    return meta::one_spec(self.sym_sizes(), self.dtype(), self.device());
  };
}

KernelFn scatter_kernel(const char* name, ScatterKind kind) {
  return [name, kind](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const Tensor& self = in[0];
    const ScatterArgs s = scatter_args(name, kind, self, a);
    Tensor index = index_ops::as_long(name, in[1]);
    // Every index is checked before anything is written.
    cpu::check_index_range(name, index, s.dim, size_at(self, s.dim).guard_int(), false);
    Tensor target = index_ops::scatter_target(out[0], self);
    const Tensor src = kind == ScatterKind::Value ? Tensor() : in[2];
    cpu::scatter(name, target, s.dim, index, src, s.value, s.op, s.include_self);
    index_ops::finish_output(out[0], target);
  };
}

std::vector<Tensor> scatter_backward(const BackwardContext& c, ScatterKind kind) {
  const char* op = kind == ScatterKind::Value ? "scatter_value" : "scatter";
  KILN_CHECK(c.attrs.is_none(kind == ScatterKind::Value ? 2 : 1), op,
             ": derivative for scatter with a reduce argument is not implemented (as PyTorch); "
             "use scatter_reduce");
  const Tensor& index = c.input(1);
  const int64_t dim = wrap("scatter", c.attrs.i(0), c.input(0));
  std::vector<Tensor> g(c.inputs.size());
  if (c.needs_grad(0)) g[0] = c.grad().scatter(dim, index, Scalar(0));
  if (kind == ScatterKind::Src && c.needs_grad(2))
    g[2] = fit_to(c.grad().gather(dim, index), c.input(2));
  return g;
}

std::vector<Tensor> scatter_reduce_backward(const BackwardContext& c) {
  const Tensor &self = c.input(0), &index = c.input(1), &src = c.input(2);
  const Tensor &grad = c.grad(), &result = c.output(0);
  const int64_t dim = wrap("scatter_reduce", c.attrs.i(0), self);
  const std::string& reduce = c.attrs.str(1);
  const bool include_self = c.attrs.b(2);
  Tensor gs, gsrc;
  if (reduce == "sum") {
    gs = grad;
    gsrc = grad.gather(dim, index);
  } else if (reduce == "mean") {
    Tensor n = include_self ? ones_like(grad) : zeros_like(grad);
    n = n.scatter_add(dim, index, ones_like(src, grad.dtype()));
    n = n.masked_fill(n == 0, 1);
    gs = grad / n;
    gsrc = grad.gather(dim, index) / n.gather(dim, index);
  } else if (reduce == "prod") {
    // Exclusive products, computed directly where an element is zero (result / x fails there).
    Tensor masked_self = self.masked_fill(self == 0, 1);
    gs = grad * masked_self.scatter_reduce(dim, index, src, reduce, include_self) / masked_self;
    Tensor src_zero = src == 0;
    Tensor zeros_per_target =
        zeros_like(self).scatter_add(dim, index, src_zero.to(self.dtype())).gather(dim, index);
    Tensor single_zero = src_zero.logical_and(zeros_per_target == 1);
    Tensor masked_src_result =
        self.scatter_reduce(dim, index, src.masked_fill(single_zero, 1), reduce, include_self);
    gsrc = where(single_zero, (grad * masked_src_result).gather(dim, index),
                 (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1));
  } else {  // amax, amin: the gradient is split evenly among the elements equal to the result
    Tensor value = result.gather(dim, index);
    Tensor self_is_result = (self == result).to(grad.dtype());
    if (!include_self) self_is_result = self_is_result.scatter(dim, index, Scalar(0));
    Tensor src_is_result = (src == value).to(grad.dtype());
    Tensor count = self_is_result.scatter_add(dim, index, src_is_result);
    Tensor share = grad / count;
    gs = self_is_result * share;
    gsrc = src_is_result * share.gather(dim, index);
  }
  if (!include_self) gs = gs.scatter(dim, index, Scalar(0));
  std::vector<Tensor> g(3);
  if (c.needs_grad(0)) g[0] = gs;
  if (c.needs_grad(2)) g[2] = fit_to(gsrc, src);
  return g;
}

// ---- float64 references ----

std::vector<int64_t> shape_of(const Tensor& t) {
  return t.dim() == 0 ? std::vector<int64_t>{1} : t.sym_sizes().vec();
}

Tensor reference_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         double value, const std::string& reduce, bool include_self) {
  Tensor out = f64(self);
  Tensor ix = i64(index);
  Tensor s = src.defined() ? f64(src) : Tensor();
  const std::vector<int64_t> osz = shape_of(out), isz = shape_of(ix);
  const std::vector<int64_t> ssz = s.defined() ? shape_of(s) : isz;
  std::vector<std::vector<double>> lists(static_cast<size_t>(out.sym_numel()));
  for (int64_t flat = 0; flat < ix.sym_numel(); ++flat) {
    std::vector<int64_t> c = index_ops::unravel(flat, isz);
    const double v = s.defined() ? s.data_ptr<double>()[index_ops::ravel(c, ssz)] : value;
    c[dim] = ix.data_ptr<int64_t>()[flat];
    lists[index_ops::ravel(c, osz)].push_back(v);
  }
  double* o = out.data_ptr<double>();
  const bool integer = !is_floating_point(self.dtype());
  for (size_t p = 0; p < lists.size(); ++p) {
    if (lists[p].empty()) continue;
    std::vector<double> vals = lists[p];
    if (include_self) vals.insert(vals.begin(), o[p]);
    o[p] = index_ops::reduce_values(vals, reduce, integer);
  }
  return out;
}

std::string reference_reduce(const ScatterArgs& s) {
  if (s.reduce == "add") return "sum";
  if (s.reduce == "multiply") return "prod";
  return s.reduce.empty() ? "assign" : s.reduce;
}

ReferenceFn scatter_reference(const char* name, ScatterKind kind) {
  return [name, kind](const std::vector<Tensor>& in, const Attrs& a) {
    const ScatterArgs s = scatter_args(name, kind, in[0], a);
    const Tensor src = kind == ScatterKind::Value ? Tensor() : in[2];
    std::string reduce = kind == ScatterKind::Add ? "sum" : reference_reduce(s);
    const bool include_self = reduce != "assign" && s.include_self;
    return std::vector<Tensor>{
        reference_scatter(in[0], s.dim, in[1], src, s.value.to<double>(), reduce, include_self)};
  };
}

std::vector<Tensor> gather_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const int64_t dim = wrap("gather", a.i(0), in[0]);
  Tensor x = f64(in[0]), ix = i64(in[1]);
  Tensor out = zeros(in[1].sym_sizes(), kFloat64);
  const std::vector<int64_t> xsz = shape_of(x), isz = shape_of(ix);
  for (int64_t flat = 0; flat < ix.sym_numel(); ++flat) {
    std::vector<int64_t> c = index_ops::unravel(flat, isz);
    c[dim] = ix.data_ptr<int64_t>()[flat];
    out.data_ptr<double>()[flat] = x.data_ptr<double>()[index_ops::ravel(c, xsz)];
  }
  return {out};
}

// ---- samples ----

Tensor rows_index(int64_t edges, int64_t dests, int64_t F) {
  return sample_index({edges}, dests).unsqueeze(1).expand({edges, F});
}

std::vector<OpSample> gather_samples(ScalarType dt) {
  const Attrs d0{int64_t{0}, false}, d1{int64_t{1}, false};
  return {
      {{make({3, 4}, dt), sample_index({2, 4}, 3)}, d0, "dim 0"},
      {{make({3, 4}, dt), sample_index({3, 2}, 4)}, d1, "dim 1, smaller index"},
      {{make({4, 5}, dt, -3, 3, true), sample_index({2, 3}, 4)},
       {int64_t{-2}, false},
       "non-contiguous self"},
      {{make({3, 4}, dt).t(), sample_index({4, 3}, 3).t()}, d1, "transposed"},
      {{make({5}, dt), sample_index({7}, 5)}, d0, "vector, repeated indices"},
      {{make({}, dt), zeros({}, kInt64)}, d0, "0-dim"},
      {{make({3, 4}, dt), sample_index({0, 4}, 3)}, d0, "zero-size index"},
      {{make({6, 16}, dt), rows_index(20, 6, 16)}, d0, "row-wise (expanded) index"},
      {{make({6, 16}, dt), rows_index(20, 6, 16).contiguous()}, d0, "row-wise contiguous index"},
  };
}

// Samples whose index does not repeat along a line (so scatter's gradient is well defined).
std::vector<OpSample> scatter_samples(ScalarType dt, bool with_value) {
  auto third = [&](std::vector<int64_t> shape) -> Tensor {
    return with_value ? Tensor() : make(std::move(shape), dt);
  };
  auto inputs = [&](Tensor self, Tensor index, std::vector<int64_t> src_shape) {
    std::vector<Tensor> v{std::move(self), std::move(index)};
    if (!with_value) v.push_back(third(std::move(src_shape)));
    return v;
  };
  auto attrs = [&](int64_t dim) {
    return with_value ? Attrs{dim, Scalar(2), std::monostate{}} : Attrs{dim, std::monostate{}};
  };
  Tensor rows = tensor({5, 0, 7, 2}, kInt64).unsqueeze(1).expand({4, 16});
  return {
      {inputs(make({4, 3}, dt), tensor({{0, 2, 1}, {3, 0, 2}}).to(kInt64), {2, 3}), attrs(0),
       "dim 0"},
      {inputs(make({3, 4}, dt), tensor({{1, 3}, {0, 2}, {3, 0}}).to(kInt64), {3, 2}), attrs(1),
       "dim 1"},
      {inputs(make({4, 3}, dt, -3, 3, true), tensor({{2, 0, 1}}).to(kInt64), {2, 3}), attrs(0),
       "src larger than index, non-contiguous self"},
      {inputs(make({8, 16}, dt), rows, {4, 16}), attrs(0), "row-wise index"},
      {inputs(make({}, dt), zeros({}, kInt64), {}), attrs(0), "0-dim"},
      {inputs(make({4, 3}, dt), sample_index({0, 3}, 4), {0, 3}), attrs(0), "zero-size index"},
  };
}

std::vector<OpSample> with_reduce(std::vector<OpSample> base, size_t at) {
  std::vector<OpSample> out;
  for (const char* r : {"add", "multiply"}) {
    OpSample s = base[0];
    std::vector<AttrValue> v;
    for (size_t i = 0; i < s.attrs.size(); ++i)
      v.push_back(i == at ? AttrValue(std::string(r)) : s.attrs[i]);
    s.attrs = Attrs(std::move(v));
    s.desc += std::string(", reduce ") + r;
    s.check_grad = false;  // PyTorch has no derivative for scatter's reduce argument either
    out.push_back(std::move(s));
  }
  base.insert(base.end(), out.begin(), out.end());
  return base;
}

std::vector<OpSample> scatter_add_samples(ScalarType dt) {
  const Attrs d0{int64_t{0}}, d1{int64_t{1}};
  Tensor rows = rows_index(40, 6, 16);
  return {
      {{make({5}, dt), sample_index({8}, 5), make({8}, dt)}, d0, "vector, repeated indices"},
      {{make({3, 4}, dt), sample_index({3, 6}, 4), make({3, 6}, dt)}, d1, "dim 1"},
      {{make({4, 3}, dt, -3, 3, true), sample_index({2, 3}, 4), make({3, 3}, dt).t()},
       d0,
       "non-contiguous"},
      {{make({6, 16}, dt), rows, make({40, 16}, dt)}, d0, "row-wise index"},
      {{make({6, 16}, dt), rows.contiguous(), make({40, 16}, dt)}, d0, "row-wise contiguous"},
      {{make({}, dt), zeros({}, kInt64), make({}, dt)}, d0, "0-dim"},
      {{make({4, 3}, dt), sample_index({0, 3}, 4), make({0, 3}, dt)}, d0, "zero-size index"},
  };
}

std::vector<OpSample> scatter_reduce_samples(ScalarType dt) {
  std::vector<OpSample> out;
  Tensor rows = rows_index(40, 6, 16);
  for (const char* r : {"sum", "prod", "mean", "amax", "amin"}) {
    for (bool self : {true, false}) {
      const std::string tag = std::string(r) + (self ? "" : ", without self");
      auto attrs = [&](int64_t dim) { return Attrs{dim, std::string(r), self}; };
      out.push_back(
          {{make({5}, dt), sample_index({8}, 5), make({8}, dt)}, attrs(0), "vector, " + tag});
      out.push_back({{make({3, 4}, dt), sample_index({3, 6}, 4), make({3, 6}, dt)},
                     attrs(1),
                     "dim 1, " + tag});
      out.push_back({{make({6, 16}, dt), rows, make({40, 16}, dt)}, attrs(0), "row-wise, " + tag});
    }
  }
  return out;
}

const std::vector<ScalarType> kReduceDtypes = {kFloat64, kFloat32, kInt64};

// The attributes of each kind (as scatter_args reads them) with dim and the reduction name.
Attrs kind_attrs(ScatterKind kind, int64_t dim, const char* reduce) {
  const AttrValue r = reduce ? AttrValue(std::string(reduce)) : AttrValue(std::monostate{});
  switch (kind) {
    case ScatterKind::Src:
      return {dim, r};
    case ScatterKind::Value:
      return {dim, Scalar(2), r};
    case ScatterKind::Add:
      return {dim};
    case ScatterKind::Reduce:
      break;
  }
  return {dim, std::string(reduce ? reduce : "sum"), true};
}

std::vector<OpErrorSample> scatter_error_samples(ScatterKind kind) {
  const bool has_src = kind != ScatterKind::Value;
  const Tensor self = make({3, 4}, kFloat32);
  auto in = [&](Tensor index, Tensor src) {
    std::vector<Tensor> v{self, std::move(index)};
    if (has_src) v.push_back(std::move(src));
    return v;
  };
  const Tensor index = tensor({{0, 2}}, kInt64), src = make({3, 4}, kFloat32);
  const Attrs plain = kind_attrs(kind, 0, nullptr);
  std::vector<OpErrorSample> s = {
      {in(index, src), kind_attrs(kind, 2, nullptr),
       "expected to be in range of [-2, 1], but got 2", "dim"},
      {in(tensor({{0., 2.}}), src), plain, "expected an int64 or int32 index, got float32",
       "float index"},
      {in(tensor({0, 2}, kInt64).view({1, 1, 2}), src), plain,
       has_src ? "(got index [1, 1, 2], self [3, 4], src [3, 4])"
               : "(got index [1, 1, 2], self [3, 4])",
       "rank"},
      {in(sample_index({2, 5}, 3), src), plain,
       "expected index [2, 5] to be smaller than self [3, 4] apart from dimension 0", "sizes"},
      {in(tensor({{0, 3}}, kInt64), src), plain,
       "index 3 is out of bounds for dimension 0 with size 3", "index out of range",
       /*in_meta=*/false},
  };
  if (has_src) {
    s.push_back({in(index, make({3, 4}, kFloat64)), plain,
                 "expected self and src of the same dtype, got float32 and float64", "src dtype"});
    s.push_back({in(index, make({3, 1}, kFloat32)), plain, "and to be smaller size than src [3, 1]",
                 "src smaller than index"});
  }
  if (kind == ScatterKind::Add || kind == ScatterKind::Reduce) {
    s.push_back({{make({3, 4}, kBool), index, make({3, 4}, kBool)},
                 plain,
                 "reductions are not supported for dtype bool",
                 "bool",
                 /*in_meta=*/false});
  }
  if (kind == ScatterKind::Reduce) {
    s.push_back({in(index, src), kind_attrs(kind, 0, "add"),
                 "reduce argument must be either sum, prod, mean, amax or amin, got add",
                 "reduce"});
  } else if (kind != ScatterKind::Add) {
    s.push_back({in(index, src), kind_attrs(kind, 0, "sum"),
                 "reduce argument must be either add or multiply, got sum", "reduce"});
  }
  return s;
}

}  // namespace

KILN_REGISTER_OP(gather)
    .schema("gather(Tensor self, int dim, Tensor index, bool sparse_grad=False) -> Tensor")
    .meta(gather_meta)
    .cpu(gather_kernel)
    .save_metadata({0})  // self: its sizes only
    .backward([](const BackwardContext& c) {
      const int64_t dim = wrap("gather", c.attrs.i(0), c.input(0));
      Tensor z = zeros(c.input(0).sym_sizes(), c.grad().options());
      return std::vector<Tensor>{z.scatter_add(dim, c.input(1), c.grad()), Tensor()};
    })
    .samples(gather_samples)
    .error_samples([] {
      const Tensor x = make({3, 4}, kFloat32);
      const Attrs d0{int64_t{0}, false};
      return std::vector<OpErrorSample>{
          {{x, sample_index({2, 2, 2}, 3)}, d0, "(got index [2, 2, 2], self [3, 4])", "rank"},
          {{x, sample_index({2, 5}, 3)},
           d0,
           "index [2, 5] to be smaller than self [3, 4]",
           "index larger than self"},
          {{x, make({2, 4}, kFloat32)},
           d0,
           "expected an int64 or int32 index, got float32",
           "float index"},
          {{x, sample_index({2, 4}, 3)}, {int64_t{2}, false}, "[-2, 1], but got 2", "dim"},
          {{x, tensor({{0, 3}}).to(kInt64)},
           d0,
           "index 3 is out of bounds for dimension 0 with size 3",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference(gather_reference)
    .dtypes(kMoveDtypes)
    .lowering("extern:gather");

KILN_REGISTER_OP(scatter)
    .schema("scatter(Tensor self, int dim, Tensor index, Tensor src, str? reduce=None) -> Tensor")
    .meta(scatter_meta("scatter", ScatterKind::Src))
    .cpu(scatter_kernel("scatter", ScatterKind::Src))
    .backward([](const BackwardContext& c) { return scatter_backward(c, ScatterKind::Src); })
    .samples([](ScalarType dt) { return with_reduce(scatter_samples(dt, false), 1); })
    .error_samples([] { return scatter_error_samples(ScatterKind::Src); })
    .reference(scatter_reference("scatter", ScatterKind::Src))
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("extern:scatter");

KILN_REGISTER_OP(scatter_value)
    .schema(
        "scatter_value(Tensor self, int dim, Tensor index, Scalar value, str? reduce=None) "
        "-> Tensor")
    .meta(scatter_meta("scatter_value", ScatterKind::Value))
    .cpu(scatter_kernel("scatter_value", ScatterKind::Value))
    .backward([](const BackwardContext& c) { return scatter_backward(c, ScatterKind::Value); })
    .samples([](ScalarType dt) { return with_reduce(scatter_samples(dt, true), 2); })
    .error_samples([] { return scatter_error_samples(ScatterKind::Value); })
    .reference(scatter_reference("scatter_value", ScatterKind::Value))
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("extern:scatter_value");

KILN_REGISTER_OP(scatter_add)
    .schema("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")
    .meta(scatter_meta("scatter_add", ScatterKind::Add))
    .cpu(scatter_kernel("scatter_add", ScatterKind::Add))
    .backward([](const BackwardContext& c) {
      const int64_t dim = wrap("scatter_add", c.attrs.i(0), c.input(0));
      std::vector<Tensor> g(3);
      if (c.needs_grad(0)) g[0] = c.grad();
      if (c.needs_grad(2)) g[2] = fit_to(c.grad().gather(dim, c.input(1)), c.input(2));
      return g;
    })
    .samples(scatter_add_samples)
    .error_samples([] { return scatter_error_samples(ScatterKind::Add); })
    .reference(scatter_reference("scatter_add", ScatterKind::Add))
    .dtypes(kReduceDtypes)
    .lowering("extern:scatter_add");

KILN_REGISTER_OP(scatter_reduce)
    .schema(
        "scatter_reduce(Tensor self, int dim, Tensor index, Tensor src, str reduce, "
        "bool include_self=True) -> Tensor")
    .meta(scatter_meta("scatter_reduce", ScatterKind::Reduce))
    .cpu(scatter_kernel("scatter_reduce", ScatterKind::Reduce))
    .backward(scatter_reduce_backward)
    .save_outputs(/*inputs_too=*/true)
    .samples(scatter_reduce_samples)
    .error_samples([] { return scatter_error_samples(ScatterKind::Reduce); })
    .reference(scatter_reference("scatter_reduce", ScatterKind::Reduce))
    .dtypes(kReduceDtypes)
    .lowering("extern:scatter_reduce");

namespace {
[[maybe_unused]] const bool kInplaceRegistered =
    index_ops::register_inplace({"scatter", "scatter_value", "scatter_add", "scatter_reduce"});

Attrs reduce_attr(int64_t dim, const std::string* reduce) {
  return Attrs{dim, reduce ? AttrValue(*reduce) : AttrValue(std::monostate{})};
}
Attrs value_attrs(int64_t dim, const Scalar& value, const std::string* reduce) {
  return Attrs{dim, value, reduce ? AttrValue(*reduce) : AttrValue(std::monostate{})};
}
}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  KILN_INDEX_OP(op, "gather");
  return call_op1(op, {self, index}, {dim, sparse_grad});
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  KILN_INDEX_OP(op, "scatter");
  return call_op1(op, {self, index, src}, reduce_attr(dim, nullptr));
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  KILN_INDEX_OP(op, "scatter_value");
  return call_op1(op, {self, index}, value_attrs(dim, value, nullptr));
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
               const std::string& reduce) {
  KILN_INDEX_OP(op, "scatter");
  return call_op1(op, {self, index, src}, reduce_attr(dim, &reduce));
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
               const std::string& reduce) {
  KILN_INDEX_OP(op, "scatter_value");
  return call_op1(op, {self, index}, value_attrs(dim, value, &reduce));
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  KILN_INDEX_OP(op, "scatter_add");
  return call_op1(op, {self, index, src}, {dim});
}
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self) {
  KILN_INDEX_OP(op, "scatter_reduce");
  return call_op1(op, {self, index, src}, {dim, reduce, include_self});
}

Tensor Tensor::gather(int64_t dim, const Tensor& index, bool sparse_grad) const {
  return kiln::gather(*this, dim, index, sparse_grad);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return kiln::scatter(*this, dim, index, value);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src,
                       const std::string& reduce) const {
  return kiln::scatter(*this, dim, index, src, reduce);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value,
                       const std::string& reduce) const {
  return kiln::scatter(*this, dim, index, value, reduce);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  KILN_INDEX_OP(op, "scatter_");
  call_op(op, {const_cast<Tensor&>(*this), index, src}, reduce_attr(dim, nullptr));
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
  KILN_INDEX_OP(op, "scatter_value_");
  call_op(op, {const_cast<Tensor&>(*this), index}, value_attrs(dim, value, nullptr));
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src,
                         const std::string& reduce) const {
  KILN_INDEX_OP(op, "scatter_");
  call_op(op, {const_cast<Tensor&>(*this), index, src}, reduce_attr(dim, &reduce));
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value,
                         const std::string& reduce) const {
  KILN_INDEX_OP(op, "scatter_value_");
  call_op(op, {const_cast<Tensor&>(*this), index}, value_attrs(dim, value, &reduce));
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return kiln::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  KILN_INDEX_OP(op, "scatter_add_");
  call_op(op, {const_cast<Tensor&>(*this), index, src}, {dim});
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                              const std::string& reduce, bool include_self) const {
  return kiln::scatter_reduce(*this, dim, index, src, reduce, include_self);
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                                const std::string& reduce, bool include_self) const {
  KILN_INDEX_OP(op, "scatter_reduce_");
  call_op(op, {const_cast<Tensor&>(*this), index, src}, {dim, reduce, include_self});
  return const_cast<Tensor&>(*this);
}

}  // namespace kiln

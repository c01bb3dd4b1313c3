// Advanced indexing: the ops `index` (x[i0, i1, ...] with index tensors per dim) and
// `index_put` (x[i0, ...] = v, optionally accumulating), and the public functions that first
// apply basic indices as views (indexing.h's split_index).
//
// Note [Advanced index layout]: the index tensors broadcast to a shape B. When the indexed dims
// are adjacent, B replaces them in place; otherwise B goes first, followed by the other dims
// (PyTorch's and NumPy's rule). The kernels permute the indexed dims together (to the front in
// the second case), read them as one dim of their combined size, and turn the index tensors
// into one linear index along it, so both ops are a gather/scatter with a 1-D index
// (backend/cpu/scatter.h).
#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/scatter.h"
#include "kiln/ops/index.h"
#include "kiln/ops/index/util.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {
using samples::make;

struct AdvancedPlan {
  std::vector<int64_t> dims;  // the indexed dims of self
  SymShape broadcast;         // B
  bool adjacent = true;
  SymShape result;
  std::vector<int64_t> perm;  // self's dims with the indexed ones together
  int64_t first = 0;          // where the indexed dims start after perm
};

AdvancedPlan make_plan(const char* op, const Tensor& self, const Tensor* idx, size_t n) {
  AdvancedPlan p;
  std::vector<SymShape> shapes;
  KILN_CHECK(static_cast<int64_t>(n) <= self.dim(), op,
             ": too many indices for tensor of dimension ", self.dim(), " (got ", n, ")");
  for (size_t d = 0; d < n; ++d) {
    if (!idx[d].defined()) continue;
    KILN_CHECK(idx[d].dtype() == kInt64 || idx[d].dtype() == kInt32, op,
               ": tensors used as indices must be long or int tensors, got ", idx[d].dtype());
    p.dims.push_back(static_cast<int64_t>(d));
    shapes.push_back(idx[d].sym_sizes());
  }
  KILN_CHECK(!p.dims.empty(), op, ": expected at least one index tensor");
  p.broadcast = meta::broadcast_shapes(op, shapes);
  p.adjacent = p.dims.back() - p.dims.front() + 1 == static_cast<int64_t>(p.dims.size());
  const SymShape sizes = self.sym_sizes();
  if (p.adjacent) {
    p.first = p.dims.front();
    for (int64_t d = 0; d < self.dim(); ++d) p.perm.push_back(d);
    p.result.assign(sizes.begin(), sizes.begin() + p.first);
    p.result.insert(p.result.end(), p.broadcast.begin(), p.broadcast.end());
    p.result.insert(p.result.end(), sizes.begin() + p.dims.back() + 1, sizes.end());
  } else {
    p.perm = p.dims;
    p.result = p.broadcast;
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (std::find(p.dims.begin(), p.dims.end(), d) != p.dims.end()) continue;
      p.perm.push_back(d);
      p.result.push_back(sizes[d]);
    }
  }
  return p;
}

// The linear position in the indexed dims (row-major over their sizes) of each element of B;
// every index is checked first (negatives count from the end).
Tensor linear_index(const char* op, const Tensor& self, const Tensor* idx, const AdvancedPlan& p) {
  int64_t numel = 1;
  for (const SymInt& s : p.broadcast) numel *= s.guard_int();
  Tensor linear = zeros({numel}, kInt64);
  int64_t* l = linear.data_ptr<int64_t>();
  for (int64_t d : p.dims) {
    const int64_t size = self.sym_size(d).guard_int();
    cpu::check_index_range(op, idx[d], d, size, true);
    Tensor v = index_ops::as_long(op, idx[d]).expand(p.broadcast).contiguous();
    const int64_t* pv = v.data_ptr<int64_t>();
    for (int64_t i = 0; i < numel; ++i) l[i] = l[i] * size + (pv[i] < 0 ? pv[i] + size : pv[i]);
  }
  return linear;
}

// x (already permuted) with dims [first, first + k) read as one.
std::vector<int64_t> merged_sizes(const Tensor& x, int64_t first, int64_t k) {
  std::vector<int64_t> s(x.sym_sizes().vec());
  int64_t merged = 1;
  for (int64_t d = first; d < first + k; ++d) merged *= s[d];
  s.erase(s.begin() + first, s.begin() + first + k);
  s.insert(s.begin() + first, merged);
  return s;
}
// The result's shape with the B dims read as one dim of `rows` elements.
std::vector<int64_t> result_rows(const AdvancedPlan& p, int64_t rows) {
  const size_t b = p.broadcast.size(), first = static_cast<size_t>(p.first);
  std::vector<int64_t> s;
  for (size_t d = 0; d < first; ++d) s.push_back(p.result[d].guard_int());
  s.push_back(rows);
  for (size_t d = first + b; d < p.result.size(); ++d) s.push_back(p.result[d].guard_int());
  return s;
}
Tensor as_shape(const Tensor& t, const std::vector<int64_t>& s) {
  return t.reshape(SymShape(s.begin(), s.end()));
}

void index_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const Tensor& self = in[0];
  const AdvancedPlan p = make_plan("index", self, in.data() + 1, in.size() - 1);
  Tensor linear = linear_index("index", self, in.data() + 1, p);
  if (out[0].sym_numel() == 0) return;
  const int64_t k = static_cast<int64_t>(p.dims.size());
  Tensor x = self.permute(p.perm);
  x = as_shape(x, merged_sizes(x, p.first, k));
  Tensor o = as_shape(out[0], result_rows(p, linear.sym_numel()));
  cpu::gather(o, x, p.first, index_ops::expand_index(linear, o.sym_sizes().vec(), p.first));
}

void index_put_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor &self = in[0], &values = in[1];
  const AdvancedPlan p = make_plan("index_put", self, in.data() + 2, in.size() - 2);
  Tensor linear = linear_index("index_put", self, in.data() + 2, p);  // before any write
  Tensor target = index_ops::scatter_target(out[0], self);
  if (linear.sym_numel() == 0 || target.sym_numel() == 0)
    return index_ops::finish_output(out[0], target);
  const int64_t k = static_cast<int64_t>(p.dims.size());
  Tensor x = target.permute(p.perm);
  Tensor work = p.adjacent ? x : x.contiguous();  // adjacent dims of a contiguous tensor merge
  Tensor xr = as_shape(work, merged_sizes(work, p.first, k));
  Tensor v = values.to(self.dtype()).expand(p.result).contiguous();
  v = as_shape(v, result_rows(p, linear.sym_numel()));
  cpu::scatter("index_put", xr, p.first,
               index_ops::expand_index(linear, v.sym_sizes().vec(), p.first), v, 0,
               a.b(0) ? cpu::ScatterOp::Sum : cpu::ScatterOp::Assign, true);
  if (!p.adjacent) cpu::copy(x, work);
  index_ops::finish_output(out[0], target);
}

std::vector<Tensor> tail(const std::vector<Tensor>& v, size_t from) {
  return std::vector<Tensor>(v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
}

// The saved inputs from `from` on (the indices), read through the context.
std::vector<Tensor> saved_tail(const BackwardContext& c, size_t from) {
  std::vector<Tensor> out;
  for (size_t i = from; i < c.inputs.size(); ++i) out.push_back(c.input(i));
  return out;
}

const OpDef& index_op() {
  static const OpDef& op = get_op("index");
  return op;
}
const OpDef& index_put_op() {
  static const OpDef& op = get_op("index_put");
  return op;
}

Tensor call_index(const Tensor& self, const std::vector<Tensor>& idx) {
  std::vector<Tensor> in{self};
  in.insert(in.end(), idx.begin(), idx.end());
  return call_op1(index_op(), in, {});
}
Tensor call_index_put(const OpDef& op, const Tensor& self, const Tensor& values,
                      const std::vector<Tensor>& idx, bool accumulate) {
  std::vector<Tensor> in{self, values};
  in.insert(in.end(), idx.begin(), idx.end());
  return call_op1(op, in, {accumulate});
}

// ---- references and samples ----

// For each element of the result, the flat position in self it reads (naive loops).
std::vector<int64_t> reference_sources(const Tensor& self, const std::vector<Tensor>& idx,
                                       const AdvancedPlan& p) {
  std::vector<Tensor> ix(idx.size());
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d].defined()) ix[d] = index_ops::i64(idx[d].expand(p.broadcast));
  std::vector<int64_t> rs, ss = self.sym_sizes().vec(), bs;
  for (const SymInt& s : p.result) rs.push_back(s.guard_int());
  for (const SymInt& s : p.broadcast) bs.push_back(s.guard_int());
  int64_t n = 1;
  for (int64_t s : rs) n *= s;
  const int64_t nb = static_cast<int64_t>(bs.size());
  std::vector<int64_t> sources;
  for (int64_t flat = 0; flat < n; ++flat) {
    std::vector<int64_t> c = index_ops::unravel(flat, rs);
    const int64_t at = p.adjacent ? p.dims.front() : 0;
    std::vector<int64_t> b(c.begin() + at, c.begin() + at + nb);
    std::vector<int64_t> rest(c.begin(), c.begin() + at);
    rest.insert(rest.end(), c.begin() + at + nb, c.end());
    std::vector<int64_t> src(ss.size());
    size_t next = 0;
    for (size_t d = 0; d < ss.size(); ++d) {
      if (d < idx.size() && idx[d].defined()) {
        int64_t v = ix[d].data_ptr<int64_t>()[index_ops::ravel(b, bs)];
        src[d] = v < 0 ? v + ss[d] : v;
      } else {
        src[d] = rest[next++];
      }
    }
    sources.push_back(index_ops::ravel(src, ss));
  }
  return sources;
}

std::vector<Tensor> index_reference(const std::vector<Tensor>& in, const Attrs&) {
  const AdvancedPlan p = make_plan("index", in[0], in.data() + 1, in.size() - 1);
  Tensor x = index_ops::f64(in[0]);
  Tensor out = zeros(p.result, kFloat64);
  std::vector<int64_t> src = reference_sources(in[0], tail(in, 1), p);
  for (size_t i = 0; i < src.size(); ++i) out.data_ptr<double>()[i] = x.data_ptr<double>()[src[i]];
  return {out};
}

std::vector<Tensor> index_put_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const AdvancedPlan p = make_plan("index_put", in[0], in.data() + 2, in.size() - 2);
  Tensor out = index_ops::f64(in[0]).clone();
  Tensor v = index_ops::f64(in[1].expand(p.result));
  std::vector<int64_t> dst = reference_sources(in[0], tail(in, 2), p);
  for (size_t i = 0; i < dst.size(); ++i) {
    double& o = out.data_ptr<double>()[dst[i]];
    o = a.b(0) ? o + v.data_ptr<double>()[i] : v.data_ptr<double>()[i];
  }
  return {out};
}

Tensor ix(std::initializer_list<int64_t> v) { return tensor(v, kInt64); }

std::vector<OpSample> index_samples(ScalarType dt) {
  const Tensor none;
  return {
      {{make({5, 4}, dt), ix({3, 0, -1})}, {}, "dim 0, negative"},
      {{make({3, 5}, dt), none, ix({4, 1}).view({2, 1})}, {}, "dim 1, 2-D index"},
      {{make({4, 3, 5}, dt), ix({1, 3}), none, ix({0, 4})}, {}, "separated: index dims first"},
      {{make({4, 3, 5}, dt), none, ix({2, 0}).view({2, 1}), ix({1, 4, 0})},
       {},
       "adjacent, broadcast"},
      {{make({5, 4}, dt, -3, 3, true).t(), ix({1, 1, 2}).to(kInt32)}, {}, "transposed, int32"},
      {{make({6, 16}, dt), index_ops::sample_index({20}, 6)}, {}, "rows"},
      {{make({4, 3}, dt), ix({}).view({0})}, {}, "empty index"},
  };
}

std::vector<OpSample> index_put_samples(ScalarType dt) {
  const Tensor none;
  std::vector<OpSample> s = {
      {{make({5, 4}, dt), make({3, 4}, dt), ix({3, 0, -1})}, {false}, "dim 0"},
      {{make({3, 5}, dt), make({2}, dt), none, ix({4, 1})}, {false}, "dim 1, broadcast values"},
      {{make({4, 3, 5}, dt), make({2, 3}, dt), ix({1, 3}), none, ix({0, 4})}, {false}, "separated"},
      {{make({5, 4}, dt, -3, 3, true), make({}, dt), ix({2, 0})},
       {false},
       "non-contiguous self, 0-dim value"},
      {{make({5, 4}, dt), make({6, 4}, dt), ix({1, 3, 1, 1, 0, 3})}, {true}, "accumulate"},
      {{make({4, 3, 5}, dt), make({4, 3}, dt), ix({1, 3, 1, 3}), none, ix({0, 4, 0, 2})},
       {true},
       "separated, accumulate"},
      {{make({6, 16}, dt), make({40, 16}, dt), index_ops::sample_index({40}, 6)},
       {true},
       "rows, accumulate"},
  };
  return s;
}

// The checks of the index tensors, for `index` (before: none) and `index_put` (before: values).
std::vector<OpErrorSample> index_error_samples(const std::vector<Tensor>& before, const Attrs& a) {
  auto in = [&](std::vector<Tensor> idx) {
    std::vector<Tensor> v{make({5, 4}, kFloat32)};
    v.insert(v.end(), before.begin(), before.end());
    v.insert(v.end(), idx.begin(), idx.end());
    return v;
  };
  return {
      {in({ix({0}), ix({0}), ix({0})}), a, "too many indices for tensor of dimension 2 (got 3)",
       "too many"},
      {in({tensor({0., 1.})}), a, "must be long or int tensors, got float32", "float index"},
      {in({Tensor()}), a, "expected at least one index tensor", "no index"},
      {in({ix({0, 1}), ix({0, 1, 2})}), a, "shapes [2] and [3] cannot be broadcast together",
       "indices that do not broadcast"},
      {in({ix({5})}), a, "index 5 is out of bounds for dimension 0 with size 5",
       "index out of range", /*in_meta=*/false},
  };
}

}  // namespace

KILN_REGISTER_OP(index)
    .schema("index(Tensor self, Tensor?[] indices) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      const AdvancedPlan p = make_plan("index", in[0], in.data() + 1, in.size() - 1);
      return meta::one_spec(p.result, in[0].dtype(), in[0].device());
    })
    .cpu(index_kernel)
    .save_metadata({0})  // self: its sizes only
    .backward([](const BackwardContext& c) {
      Tensor z = zeros(c.input(0).sym_sizes(), c.grad().options());
      std::vector<Tensor> g(c.inputs.size());
      g[0] = call_index_put(index_put_op(), z, c.grad(), saved_tail(c, 1), true);
      return g;
    })
    .samples(index_samples)
    .error_samples([] { return index_error_samples({}, {}); })
    .reference(index_reference)
    .dtypes({kFloat64, kFloat32, kInt64, kBool})
    .lowering("extern:index");

[[maybe_unused]] static OpDef& index_put_def =
    register_op("index_put")
        .schema(
            "index_put(Tensor self, Tensor values, Tensor?[] indices, bool accumulate=False) -> "
            "Tensor")
        .meta([](const std::vector<Tensor>& in, const Attrs&) {
          const Tensor &self = in[0], &values = in[1];
          const AdvancedPlan p = make_plan("index_put", self, in.data() + 2, in.size() - 2);
          KILN_CHECK(values.dtype() == self.dtype(),
                     "index_put: Index put requires the source and ",
                     "destination dtypes match, got ", self.dtype(), " for the destination and ",
                     values.dtype(), " for the source.");
          const SymShape b = meta::broadcast_shapes("index_put", {p.result, values.sym_sizes()});
          KILN_CHECK(SymIntArrayRef(b) == SymIntArrayRef(p.result),
                     "index_put: shape mismatch: ", "value tensor of shape ", values.sym_sizes(),
                     " cannot be broadcast to indexing ", "result of shape ",
                     SymIntArrayRef(p.result));
          return meta::one_spec(self.sym_sizes(), self.dtype(), self.device());
        })
        .cpu(index_put_kernel)
        .backward([](const BackwardContext& c) {
          const std::vector<Tensor> idx = saved_tail(c, 2);
          std::vector<Tensor> g(c.inputs.size());
          if (c.needs_grad(0)) {
            g[0] = c.attrs.b(0) ? c.grad()
                                : call_index_put(index_put_op(), c.grad(),
                                                 zeros({}, c.grad().options()), idx, false);
          }
          if (c.needs_grad(1)) g[1] = call_index(c.grad(), idx);
          return g;
        })
        .samples(index_put_samples)
        .error_samples([] {
          auto s = index_error_samples({make({}, kFloat32)}, {false});
          const Tensor self = make({5, 4}, kFloat32), i = ix({0, 2});
          s.push_back({{self, make({2, 4}, kFloat64), i},
                       {false},
                       "got float32 for the destination and float64 for the source",
                       "dtype"});
          s.push_back({{self, make({3, 4}, kFloat32), i},
                       {false},
                       "shapes [2, 4] and [3, 4] cannot be broadcast together",
                       "values of [3, 4]"});
          s.push_back({{self, make({2, 1, 4}, kFloat32), i},
                       {false},
                       "value tensor of shape [2, 1, 4] cannot be broadcast to indexing result of "
                       "shape [2, 4]",
                       "values of [2, 1, 4]"});
          s.push_back({{self.to(kBool), make({2, 4}, kBool), i},
                       {true},
                       "reductions are not supported for dtype bool",
                       "accumulate bool",
                       /*in_meta=*/false});
          return s;
        })
        .reference(index_put_reference)
        .dtypes({kFloat64, kFloat32, kInt64})
        .lowering("extern:index_put");

// Its backward reads only the indices (inputs 2 on), not self or the values.
[[maybe_unused]] static const bool index_put_saves_indices =
    (index_put_def.saved_inputs = ~uint64_t{0} << 2, true);

namespace {
[[maybe_unused]] const bool kInplaceRegistered = index_ops::register_inplace({"index_put"});
}  // namespace

Tensor index(const Tensor& self, const std::vector<indexing::TensorIndex>& indices) {
  indexing::SplitIndex s = indexing::split_index(self, indices);
  if (s.indices.empty()) return s.view;
  return call_index(s.view, s.indices);
}

Tensor& index_put_(Tensor& self, const std::vector<indexing::TensorIndex>& indices,
                   const Tensor& values, bool accumulate) {
  KILN_CHECK(!(GradMode::is_enabled() && self.requires_grad() && self.is_leaf()),
             "index_put_: a leaf Variable that requires grad is being used in an in-place "
             "operation.");
  indexing::SplitIndex s = indexing::split_index(self, indices, "index_put_");
  if (s.indices.empty()) {
    // As PyTorch: leading size-1 dims of the value that the target lacks are dropped.
    Tensor v = values;
    while (v.dim() > s.view.dim() && v.sym_size(0) == 1) v = v.select(0, 0);
    if (accumulate) {
      s.view.add_(v);
    } else {
      s.view.copy_(v);
    }
    return self;
  }
  static const OpDef& op = get_op("index_put_");
  Tensor v = values.dtype() == self.dtype() ? values : values.to(self.dtype());
  call_index_put(op, s.view, v, s.indices, accumulate);
  return self;
}

Tensor index_put(const Tensor& self, const std::vector<indexing::TensorIndex>& indices,
                 const Tensor& values, bool accumulate) {
  indexing::SplitIndex s = indexing::split_index(self, indices, "index_put");
  Tensor v = values.dtype() == self.dtype() ? values : values.to(self.dtype());
  if (!s.indices.empty() && s.view.is_same(self))
    return call_index_put(index_put_op(), self, v, s.indices, accumulate);
  Tensor out = self.clone();
  index_put_(out, indices, v, accumulate);
  return out;
}

}  // namespace kiln

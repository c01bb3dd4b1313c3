// cat (with PyTorch's type promotion and legacy-empty skipping) and stack built on it.
#include <cstring>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

// PyTorch skips 1-D tensors with 0 elements in cat, whatever the other tensors' shapes.
bool legacy_empty(const Tensor& t) { return t.dim() == 1 && t.sym_size(0).maybe_int() == 0; }

const Tensor* first_concatenated(const std::vector<Tensor>& in) {
  for (const auto& t : in)
    if (!legacy_empty(t)) return &t;
  return nullptr;
}

std::vector<TensorSpec> cat_meta(const std::vector<Tensor>& in, const Attrs& a) {
  KILN_CHECK(!in.empty(), "cat: expected a non-empty list of Tensors");
  ScalarType dtype = in[0].dtype();
  for (size_t i = 0; i < in.size(); ++i) {
    KILN_CHECK(in[i].dim() > 0, "cat: zero-dimensional tensor (at position ", i,
               ") cannot be concatenated");
    dtype = promote_types(dtype, in[i].dtype());
  }
  const Tensor* ref = first_concatenated(in);
  if (!ref) return {meta::spec(SymShape{0}, dtype, in[0].device())};
  const int64_t dim = meta::wrap_dim("cat", a.i(0), ref->dim());
  SymShape sizes = ref->sym_sizes();
  sizes[dim] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (legacy_empty(t)) continue;
    KILN_CHECK(t.dim() == ref->dim(), "cat: Tensors must have same number of dimensions: got ",
               ref->dim(), " and ", t.dim(), " (shapes ", ref->sym_sizes(), " and ", t.sym_sizes(),
               " for tensor number ", i, ")");
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      KILN_CHECK(t.sym_size(d) == ref->sym_size(d),
                 "cat: Sizes of tensors must match except in dimension ", dim, ". Expected size ",
                 ref->sym_size(d), " but got size ", t.sym_size(d), " for tensor number ", i,
                 " in the list.");
    }
    sizes[dim] = sizes[dim] + t.sym_size(dim);
  }
  return {meta::spec(sizes, dtype, ref->device())};
}

// One input copied by memcpy: `bytes` per outer row, at `dst_offset` bytes into each row.
struct Block {
  const char* src;
  int64_t bytes, dst_offset;
};

void cat_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& o = out[0];
  if (o.sym_numel() == 0) return;
  const int64_t dim = meta::wrap_dim("cat", a.i(0), o.dim());
  const std::vector<int64_t> osz = o.sym_sizes().vec();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= osz[d];
  for (int64_t d = dim + 1; d < o.dim(); ++d) inner *= osz[d];
  const int64_t es = static_cast<int64_t>(o.element_size());
  const int64_t row_bytes = osz[dim] * inner * es;
  char* base = static_cast<char*>(o.data_ptr());
  std::vector<Block> blocks;
  int64_t along = 0;  // elements of dim `dim` filled so far
  for (const Tensor& t : in) {
    if (legacy_empty(t)) continue;
    const int64_t n = t.sym_size(dim).guard_int();
    if (n == 0) continue;
    if (t.dtype() == o.dtype() && t.is_contiguous()) {
      blocks.push_back(
          {static_cast<const char*>(t.data_ptr()), n * inner * es, along * inner * es});
    } else {  // converts the dtype or gathers a strided input
      SymShape sizes = o.sym_sizes();
      sizes[dim] = n;
      cpu::copy(shape::raw_view(o, sizes, o.sym_strides(), along * inner), t);
    }
    along += n;
  }
  constexpr int64_t kMinBytesPerTask = 1 << 16;
  if (outer == 1) {
    for (const Block& b : blocks) {
      cpu::parallel_for(0, b.bytes, kMinBytesPerTask * 4, [&](int64_t s, int64_t e) {
        std::memcpy(base + b.dst_offset + s, b.src + s, e - s);
      });
    }
    return;
  }
  cpu::parallel_for(
      0, outer, std::max<int64_t>(1, kMinBytesPerTask / std::max<int64_t>(row_bytes, 1)),
      [&](int64_t s, int64_t e) {
        for (int64_t r = s; r < e; ++r)
          for (const Block& b : blocks)
            std::memcpy(base + r * row_bytes + b.dst_offset, b.src + r * b.bytes, b.bytes);
      });
}

std::vector<OpSample> cat_samples(ScalarType dt) {
  using samples::make;
  const ScalarType other = dt == kInt64 ? kInt32 : kInt64;
  return {
      {{make({2, 3}, dt), make({4, 3}, dt)}, {int64_t{0}}, "dim 0"},
      {{make({2, 3}, dt), make({2, 1}, dt), make({2, 4}, dt)}, {int64_t{-1}}, "three, last dim"},
      {{make({3, 4}, dt, -3, 3, true), make({2, 3}, dt).t()}, {int64_t{1}}, "non-contiguous"},
      {{make({2, 3}, dt), make({1, 3}, other)}, {int64_t{0}}, "type promotion"},
      {{make({0}, dt), make({2, 3}, dt)}, {int64_t{1}}, "legacy empty skipped"},
      {{make({0, 3}, dt), make({2, 3}, dt)}, {int64_t{0}}, "zero-size"},
      {{make({3}, dt), make({5}, dt)}, {int64_t{0}}, "vectors"},
      {{make({2, 3, 2}, dt)}, {int64_t{1}}, "single"}};
}

std::vector<Tensor> cat_reference(const std::vector<Tensor>& in, const Attrs& a) {
  std::vector<Tensor> xs;
  for (const auto& t : in)
    if (!legacy_empty(t)) xs.push_back(t.to(kFloat64).contiguous());
  if (xs.empty()) return {zeros({0}, kFloat64)};
  const int64_t nd = xs[0].dim(), dim = a.i(0) < 0 ? a.i(0) + nd : a.i(0);
  std::vector<int64_t> osz = shape::int_sizes(xs[0]), starts;
  osz[dim] = 0;
  for (const auto& x : xs) {
    starts.push_back(osz[dim]);
    osz[dim] += x.sym_size(dim).guard_int();
  }
  Tensor out = zeros(osz, kFloat64);
  std::vector<int64_t> idx(nd);
  for (int64_t flat = 0; flat < out.sym_numel(); ++flat) {
    int64_t rem = flat;
    for (int64_t d = nd - 1; d >= 0; --d) {
      idx[d] = rem % osz[d];
      rem /= osz[d];
    }
    size_t k = starts.size() - 1;
    while (idx[dim] < starts[k]) --k;
    std::vector<int64_t> src = idx;
    src[dim] -= starts[k];
    out.data_ptr<double>()[flat] =
        xs[k].data_ptr<double>()[shape::flat_index(src, shape::int_sizes(xs[k]))];
  }
  return {out};
}

}  // namespace

KILN_REGISTER_OP(cat)
    .schema("cat(Tensor[] tensors, int dim=0) -> Tensor")
    .meta(cat_meta)
    .cpu(cat_kernel)
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      std::vector<Tensor> grads(c.inputs.size());
      const Tensor& g = c.grad();
      if (g.dim() == 0 || g.sym_numel() == 0) {
        for (size_t i = 0; i < grads.size(); ++i)
          if (c.needs_grad(i)) grads[i] = zeros_like(c.input(i), g.dtype());
        return grads;
      }
      const int64_t dim = meta::wrap_dim("cat", c.attrs.i(0), g.dim());
      SymInt offset = 0;
      for (size_t i = 0; i < grads.size(); ++i) {
        const Tensor& t = c.input(i);
        if (legacy_empty(t)) continue;
        const SymInt n = t.sym_size(dim);
        if (c.needs_grad(i)) grads[i] = g.narrow(dim, offset, n);
        offset = offset + n;
      }
      return grads;
    })
    .samples(cat_samples)
    .error_samples([] {
      using samples::make;
      const Tensor x = make({2, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{}, {int64_t{0}}, "expected a non-empty list of Tensors", "no tensors"},
          {{x, make({}, kFloat32)},
           {int64_t{0}},
           "zero-dimensional tensor (at position 1)",
           "0-dim tensor"},
          {{x, make({2, 3, 1}, kFloat32)},
           {int64_t{0}},
           "got 2 and 3 (shapes [2, 3] and [2, 3, 1] for tensor number 1)",
           "ranks"},
          {{x, make({2, 4}, kFloat32)},
           {int64_t{0}},
           "Expected size 3 but got size 4 for tensor number 1",
           "sizes"},
          {{x, x}, {int64_t{2}}, "expected to be in range of [-2, 1], but got 2", "dim"},
      };
    })
    .reference(cat_reference)
    .dtypes({kFloat64, kFloat32, kInt64, kBool})
    .lowering("extern:cat");

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  static const OpDef& op = get_op("cat");
  return call_op1(op, tensors, {dim});
}
Tensor concat(const std::vector<Tensor>& tensors, int64_t dim) { return cat(tensors, dim); }
Tensor concatenate(const std::vector<Tensor>& tensors, int64_t dim) { return cat(tensors, dim); }

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "stack: expects a non-empty TensorList");
  const int64_t d = meta::wrap_dim("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].sym_sizes() == tensors[0].sym_sizes(),
               "stack: expects each tensor to be equal size, but got ", tensors[0].sym_sizes(),
               " at entry 0 and ", tensors[i].sym_sizes(), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(d));
  }
  return cat(parts, d);
}

}  // namespace kiln

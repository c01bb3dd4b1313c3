// Copies that move elements: flip, roll, repeat, repeat_interleave (gathers through per-dim
// index maps, see shape::gather_copy), and tril/triu (a copy with a zeroed triangle).
#include <cstring>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln {
namespace {

using shape::GatherDim;
using V = std::vector<int64_t>;
const std::vector<ScalarType> kCopyDtypes = {kFloat64, kFloat32, kBFloat16, kInt64, kBool};

// Every dim of x copied unchanged; callers then edit the dims they move.
std::vector<GatherDim> identity_dims(const Tensor& x) {
  std::vector<GatherDim> dims;
  for (int64_t d = 0; d < x.dim(); ++d)
    dims.push_back(shape::identity_dim(x.sym_size(d).guard_int(), x.sym_stride(d).guard_int()));
  return dims;
}

int64_t positive_mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// Total shift per dim (roll accepts a dim more than once).
std::vector<int64_t> roll_shifts(const char* op, const Tensor& x, const Attrs& a) {
  const V& shifts = a.ints(0);
  const V& dims = a.ints(1);
  KILN_CHECK(!dims.empty(), op, ": expects at least one dim (roll without dims flattens first)");
  KILN_CHECK(shifts.size() == dims.size(), op,
             ": shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  std::vector<int64_t> total(std::max<int64_t>(x.dim(), 1), 0);
  for (size_t k = 0; k < dims.size(); ++k) total[meta::wrap_dim(op, dims[k], x.dim())] += shifts[k];
  return total;
}

// Shapes of repeat: repeats has at least x.dim() entries; x is aligned to the trailing ones.
SymShape repeat_sizes(const Tensor& x, const SymShape& r) {
  KILN_CHECK(static_cast<int64_t>(r.size()) >= x.dim(),
             "repeat: Number of dimensions of repeat dims (", r.size(),
             ") can not be smaller than number of dimensions of tensor (", x.dim(), ")");
  const int64_t lead = static_cast<int64_t>(r.size()) - x.dim();
  SymShape sizes;
  for (size_t k = 0; k < r.size(); ++k) {
    KILN_CHECK(r[k] >= 0, "repeat: Trying to create tensor with negative dimension ", r[k], ": ",
               SymIntArrayRef(r));
    sizes.push_back((static_cast<int64_t>(k) < lead ? SymInt(1) : x.sym_size(k - lead)) * r[k]);
  }
  return sizes;
}

std::vector<TensorSpec> same_shape(const Tensor& x) {
  return {meta::spec(x.sym_sizes(), x.dtype(), x.device())};
}

KernelFn triangle_kernel(bool upper) {
  return [upper](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const Tensor& o = out[0];
    cpu::copy(o, in[0]);
    const int64_t m = o.sym_size(-2).guard_int(), n = o.sym_size(-1).guard_int(), k = a.i(0);
    if (m == 0 || n == 0) return;
    const int64_t rows = o.sym_numel().guard_int() / n;
    const int64_t es = static_cast<int64_t>(o.element_size());
    char* base = static_cast<char*>(o.data_ptr());
    cpu::parallel_for(0, rows, std::max<int64_t>(1, cpu::kParallelGrain / n),
                      [&](int64_t b, int64_t e) {
                        for (int64_t r = b; r < e; ++r) {
                          const int64_t i = r % m;
                          // tril keeps j <= i + k; triu keeps j >= i + k. All-zero bytes are 0 in
                          // every dtype.
                          int64_t lo = upper ? 0 : std::clamp<int64_t>(i + k + 1, 0, n);
                          int64_t hi = upper ? std::clamp<int64_t>(i + k, 0, n) : n;
                          if (hi > lo) std::memset(base + (r * n + lo) * es, 0, (hi - lo) * es);
                        }
                      });
  };
}

ReferenceFn triangle_reference(bool upper) {
  return [upper](const std::vector<Tensor>& in, const Attrs& a) {
    const int64_t k = a.i(0), nd = in[0].dim();
    return std::vector<Tensor>{
        shape::reference_gather(in[0], in[0].sym_sizes().vec(), [&](const V& o, V& i) {
          i = o;
          const int64_t diff = o[nd - 1] - o[nd - 2];
          return upper ? diff >= k : diff <= k;
        })};
  };
}

std::vector<OpSample> triangle_samples(ScalarType dt) {
  using samples::make;
  using I = int64_t;
  return {{{make({4, 5}, dt)}, {I{0}}, "main"},
          {{make({4, 5}, dt)}, {I{1}}, "above"},
          {{make({5, 4}, dt)}, {I{-2}}, "below"},
          {{make({2, 3, 4}, dt)}, {I{0}}, "batched"},
          {{make({4, 5}, dt, -3, 3, true)}, {I{-1}}, "non-contiguous"},
          {{make({3, 3}, dt)}, {I{10}}, "far diagonal"},
          {{make({0, 3}, dt)}, {I{0}}, "zero-size"}};
}

std::vector<TensorSpec> triangle_meta(const char* op, const std::vector<Tensor>& in) {
  KILN_CHECK(in[0].dim() >= 2, op, ": input tensor must have at least 2 dimensions, got shape ",
             in[0].sym_sizes());
  return same_shape(in[0]);
}

}  // namespace

KILN_REGISTER_OP(flip)
    .schema("flip(Tensor self, int[] dims) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      meta::wrap_dims("flip", a.ints(0), in[0].dim());
      return same_shape(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      std::vector<GatherDim> dims = identity_dims(in[0]);
      for (int64_t d : meta::wrap_dims("flip", a.ints(0), in[0].dim()))
        std::reverse(dims[d].src.begin(), dims[d].src.end());
      shape::gather_copy(out[0], in[0], dims);
    })
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().flip(c.attrs.ints(0))};
    })
    .samples([](ScalarType dt) {
      using samples::make;
      return std::vector<OpSample>{{{make({3, 4}, dt)}, {V{0}}, "rows"},
                                   {{make({3, 4}, dt)}, {V{0, 1}}, "both"},
                                   {{make({3, 4}, dt)}, {V{-1}}, "columns"},
                                   {{make({2, 3, 4}, dt)}, {V{0, 2}}, "3d"},
                                   {{make({4, 5}, dt, -3, 3, true)}, {V{1}}, "non-contiguous"},
                                   {{make({}, dt)}, {V{}}, "0-dim"},
                                   {{make({0, 3}, dt)}, {V{1}}, "zero-size"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const V sizes = in[0].sym_sizes().vec();
      const V dims = meta::wrap_dims("flip", a.ints(0), in[0].dim());
      return std::vector<Tensor>{shape::reference_gather(in[0], sizes, [&](const V& o, V& i) {
        i = o;
        for (int64_t d : dims) i[d] = sizes[d] - 1 - o[d];
        return true;
      })};
    })
    .dtypes(kCopyDtypes)
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {V{2}}, "expected to be in range of [-2, 1], but got 2", "dim"},
          {{x}, {V{1, -1}}, "dim 1 appears multiple times in the list of dims", "repeated dim"},
      };
    })
    .lowering("extern:flip");

KILN_REGISTER_OP(roll)
    .schema("roll(Tensor self, int[] shifts, int[] dims) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      roll_shifts("roll", in[0], a);
      return same_shape(in[0]);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      std::vector<GatherDim> dims = identity_dims(in[0]);
      const V shifts = roll_shifts("roll", in[0], a);
      for (size_t d = 0; d < dims.size(); ++d) {
        const int64_t n = static_cast<int64_t>(dims[d].src.size());
        for (int64_t i = 0; i < n; ++i) dims[d].src[i] = positive_mod(i - shifts[d], n);
      }
      shape::gather_copy(out[0], in[0], dims);
    })
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      V negated = c.attrs.ints(0);
      for (auto& s : negated) s = -s;
      return std::vector<Tensor>{c.grad().roll(negated, c.attrs.ints(1))};
    })
    .samples([](ScalarType dt) {
      using samples::make;
      return std::vector<OpSample>{
          {{make({5}, dt)}, {V{2}, V{0}}, "vector"},
          {{make({3, 4}, dt)}, {V{1, -1}, V{0, 1}}, "two dims"},
          {{make({3, 4}, dt)}, {V{7}, V{1}}, "shift beyond size"},
          {{make({2, 3, 4}, dt)}, {V{1, 1}, V{-2, 1}}, "same dim twice"},
          {{make({4, 5}, dt, -3, 3, true)}, {V{2}, V{1}}, "non-contiguous"},
          {{make({0, 3}, dt)}, {V{1}, V{0}}, "zero-size"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const V sizes = in[0].sym_sizes().vec();
      const V& shifts = a.ints(0);
      const V& dims = a.ints(1);
      return std::vector<Tensor>{shape::reference_gather(in[0], sizes, [&](const V& o, V& i) {
        i = o;
        for (size_t k = 0; k < dims.size(); ++k) {
          const int64_t d = dims[k] < 0 ? dims[k] + in[0].dim() : dims[k];
          i[d] = positive_mod(i[d] - shifts[k], sizes[d]);
        }
        return true;
      })};
    })
    .dtypes(kCopyDtypes)
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {V{1}, V{}}, "expects at least one dim", "no dims"},
          {{x},
           {V{1, 2}, V{0}},
           "shifts and dimensions must align. shifts: 2, dims:1",
           "more shifts than dims"},
          {{x}, {V{1}, V{2}}, "expected to be in range of [-2, 1], but got 2", "dim"},
      };
    })
    .lowering("extern:roll");

KILN_REGISTER_OP(repeat)
    .schema("repeat(Tensor self, SymInt[] repeats) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      return meta::one_spec(repeat_sizes(in[0], a.shape(0)), in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const Tensor& x = in[0];
      const V r = SymIntArrayRef(a.shape(0)).vec();
      const int64_t lead = static_cast<int64_t>(r.size()) - x.dim();
      std::vector<GatherDim> dims(r.size());
      for (int64_t k = 0; k < static_cast<int64_t>(r.size()); ++k) {
        const int64_t n = k < lead ? 1 : x.sym_size(k - lead).guard_int();
        dims[k].stride = k < lead ? 0 : x.sym_stride(k - lead).guard_int();
        dims[k].src.resize(n * r[k]);
        for (int64_t i = 0; i < n * r[k]; ++i) dims[k].src[i] = i % n;
      }
      shape::gather_copy(out[0], x, dims);
    })
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      // grad viewed as [r0, n0, r1, n1, ...] and summed over the repeat dims.
      const Tensor& x = c.input(0);
      const SymShape& r = c.attrs.shape(0);
      const int64_t lead = static_cast<int64_t>(r.size()) - x.dim();
      SymShape split;
      V summed;
      for (int64_t k = 0; k < static_cast<int64_t>(r.size()); ++k) {
        summed.push_back(static_cast<int64_t>(split.size()));
        split.push_back(r[k]);
        if (k >= lead) split.push_back(x.sym_size(k - lead));
      }
      if (summed.empty()) return std::vector<Tensor>{c.grad()};
      return std::vector<Tensor>{c.grad().reshape(split).sum(summed).reshape(x.sym_sizes())};
    })
    .samples([](ScalarType dt) {
      using samples::make;
      using S = SymShape;
      return std::vector<OpSample>{{{make({2, 3}, dt)}, {S{2, 2}}, "both dims"},
                                   {{make({3}, dt)}, {S{2, 1, 2}}, "new leading dims"},
                                   {{make({2, 1, 3}, dt)}, {S{1, 4, 1}}, "size-1 dim"},
                                   {{make({3, 4}, dt, -3, 3, true)}, {S{2, 1}}, "non-contiguous"},
                                   {{make({}, dt)}, {S{3, 2}}, "0-dim"},
                                   {{make({2, 3}, dt)}, {S{0, 1}}, "zero repeats"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const V xs = in[0].sym_sizes().vec();
      const V osz = SymIntArrayRef(repeat_sizes(in[0], a.shape(0))).vec();
      const size_t lead = osz.size() - xs.size();
      return std::vector<Tensor>{shape::reference_gather(in[0], osz, [&](const V& o, V& i) {
        i.assign(xs.size(), 0);
        for (size_t d = 0; d < xs.size(); ++d) i[d] = o[d + lead] % xs[d];
        return true;
      })};
    })
    .dtypes(kCopyDtypes)
    .error_samples([] {
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x},
           {SymShape{2}},
           "Number of dimensions of repeat dims (1) can not be smaller than "
           "number of dimensions of tensor (2)",
           "too few repeats"},
          {{x},
           {SymShape{2, -1}},
           "Trying to create tensor with negative dimension -1: [2, -1]",
           "negative repeat"},
      };
    })
    .lowering("extern:repeat");

KILN_REGISTER_OP(repeat_interleave)
    .schema("repeat_interleave(Tensor self, int repeats, int dim) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      KILN_CHECK(a.i(0) >= 0, "repeat_interleave: repeats can not be negative, got ", a.i(0));
      KILN_CHECK(x.dim() > 0,
                 "repeat_interleave: expects a tensor with at least one dimension, got a 0-dim "
                 "tensor (flatten first, as repeat_interleave without dim does)");
      const int64_t d = meta::wrap_dim("repeat_interleave", a.i(1), x.dim());
      SymShape sizes = x.sym_sizes();
      sizes[d] = sizes[d] * a.i(0);
      return meta::one_spec(sizes, x.dtype(), x.device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      std::vector<GatherDim> dims = identity_dims(in[0]);
      const int64_t r = a.i(0), d = meta::wrap_dim("repeat_interleave", a.i(1), in[0].dim());
      const int64_t n = static_cast<int64_t>(dims[d].src.size());
      dims[d].src.resize(n * r);
      for (int64_t i = 0; i < n * r; ++i) dims[d].src[i] = i / r;
      shape::gather_copy(out[0], in[0], dims);
    })
    .save_metadata()  // the inputs' sizes only
    .backward([](const BackwardContext& c) {
      const Tensor& x = c.input(0);
      const int64_t d = meta::wrap_dim("repeat_interleave", c.attrs.i(1), x.dim());
      SymShape split = x.sym_sizes();
      split.insert(split.begin() + d + 1, SymInt(c.attrs.i(0)));
      return std::vector<Tensor>{c.grad().reshape(split).sum(V{d + 1})};
    })
    .samples([](ScalarType dt) {
      using samples::make;
      using I = int64_t;
      return std::vector<OpSample>{
          {{make({3}, dt)}, {I{2}, I{0}}, "vector"},
          {{make({2, 3}, dt)}, {I{3}, I{1}}, "columns"},
          {{make({2, 3}, dt)}, {I{2}, I{-2}}, "rows"},
          {{make({3, 4}, dt, -3, 3, true)}, {I{2}, I{1}}, "non-contiguous"},
          {{make({2, 3}, dt)}, {I{0}, I{0}}, "zero repeats"},
          {{make({0, 2}, dt)}, {I{2}, I{1}}, "zero-size"}};
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const int64_t r = a.i(0), d = a.i(1) < 0 ? a.i(1) + in[0].dim() : a.i(1);
      V osz = in[0].sym_sizes().vec();
      osz[d] *= r;
      return std::vector<Tensor>{shape::reference_gather(in[0], osz, [&](const V& o, V& i) {
        i = o;
        i[d] = o[d] / r;
        return true;
      })};
    })
    .dtypes(kCopyDtypes)
    .error_samples([] {
      using I = int64_t;
      const Tensor x = samples::make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {I{-1}, I{0}}, "repeats can not be negative, got -1", "negative repeats"},
          {{samples::make({}, kFloat32)}, {I{2}, I{0}}, "got a 0-dim tensor", "0-dim input"},
          {{x}, {I{2}, I{2}}, "expected to be in range of [-2, 1], but got 2", "dim"},
      };
    })
    .lowering("extern:repeat_interleave");

KILN_REGISTER_OP(tril)
    .schema("tril(Tensor self, int diagonal=0) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) { return triangle_meta("tril", in); })
    .cpu(triangle_kernel(false))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().tril(c.attrs.i(0))};
    })
    .samples(triangle_samples)
    .reference(triangle_reference(false))
    .dtypes(kCopyDtypes)
    .error_samples([] {
      return std::vector<OpErrorSample>{{{samples::make({3}, kFloat32)},
                                         {int64_t{0}},
                                         "at least 2 dimensions, got shape [3]",
                                         "vector"}};
    })
    .lowering("extern:tril");

KILN_REGISTER_OP(triu)
    .schema("triu(Tensor self, int diagonal=0) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) { return triangle_meta("triu", in); })
    .cpu(triangle_kernel(true))
    .save_inputs({})  // the backward reads no input
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{c.grad().triu(c.attrs.i(0))};
    })
    .samples(triangle_samples)
    .reference(triangle_reference(true))
    .dtypes(kCopyDtypes)
    .error_samples([] {
      return std::vector<OpErrorSample>{{{samples::make({3}, kFloat32)},
                                         {int64_t{0}},
                                         "at least 2 dimensions, got shape [3]",
                                         "vector"}};
    })
    .lowering("extern:triu");

Tensor flip(const Tensor& self, IntArrayRef dims) {
  static const OpDef& op = get_op("flip");
  return call_op1(op, {self}, {dims.vec()});
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  static const OpDef& op = get_op("roll");
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1, "roll: shifts must have one entry when no dims are given, got ",
               shifts.size());
    return call_op1(op, {self.flatten()}, {shifts.vec(), V{0}}).view(self.sym_sizes());
  }
  return call_op1(op, {self}, {shifts.vec(), dims.vec()});
}

Tensor repeat(const Tensor& self, SymIntList repeats) {
  static const OpDef& op = get_op("repeat");
  return call_op1(op, {self}, {std::move(repeats).get()});
}

Tensor tile(const Tensor& self, SymIntList reps) {
  SymShape r = std::move(reps).get();
  while (static_cast<int64_t>(r.size()) < self.dim()) r.insert(r.begin(), SymInt(1));
  return repeat(self, std::move(r));
}

Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim) {
  static const OpDef& op = get_op("repeat_interleave");
  if (!dim) return call_op1(op, {self.flatten()}, {repeats, int64_t{0}});
  return call_op1(op, {self}, {repeats, *dim});
}

Tensor tril(const Tensor& self, int64_t diagonal) {
  static const OpDef& op = get_op("tril");
  return call_op1(op, {self}, {diagonal});
}
Tensor triu(const Tensor& self, int64_t diagonal) {
  static const OpDef& op = get_op("triu");
  return call_op1(op, {self}, {diagonal});
}

Tensor Tensor::flip(IntArrayRef dims) const { return kiln::flip(*this, dims); }
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  return kiln::roll(*this, shifts, dims);
}
Tensor Tensor::repeat(SymIntList repeats) const { return kiln::repeat(*this, std::move(repeats)); }
Tensor Tensor::tile(SymIntList reps) const { return kiln::tile(*this, std::move(reps)); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return kiln::repeat_interleave(*this, repeats, dim);
}
Tensor Tensor::tril(int64_t diagonal) const { return kiln::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return kiln::triu(*this, diagonal); }

}  // namespace kiln

// Ops whose index is a mask or a flat position: nonzero (and where(cond)), masked_select,
// masked_scatter, take, put, take_along_dim, one_hot.
#include <algorithm>
#include <cstring>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/parallel.h"
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
using index_ops::sample_index;
using samples::make;

// Flat (row-major) positions of the true elements of a bool tensor, found in parallel chunks.
std::vector<int64_t> true_positions(const Tensor& mask) {
  Tensor m = mask.contiguous();
  const bool* p = m.data_ptr<bool>();
  const int64_t n = m.sym_numel();
  const int64_t chunk = 1 << 16, chunks = (n + chunk - 1) / chunk;
  std::vector<int64_t> counts(static_cast<size_t>(chunks) + 1, 0);
  cpu::parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t k = 0;
      for (int64_t i = c * chunk, end = std::min(n, i + chunk); i < end; ++i) k += p[i];
      counts[c + 1] = k;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) counts[c + 1] += counts[c];
  std::vector<int64_t> pos(static_cast<size_t>(counts[chunks]));
  cpu::parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t at = counts[c];
      for (int64_t i = c * chunk, end = std::min(n, i + chunk); i < end; ++i)
        if (p[i]) pos[at++] = i;
    }
  });
  return pos;
}

Tensor long_tensor(const std::vector<int64_t>& v) {
  Tensor t = empty({static_cast<int64_t>(v.size())}, kInt64);
  if (!v.empty()) std::memcpy(t.data_ptr<int64_t>(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

std::vector<TensorSpec> dynamic_meta(const char* op) {
  KILN_FAIL(op, ": the output's size depends on the input's values, so it has no meta shape");
}

// ---- nonzero ----

void nonzero_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const Tensor& x = in[0];
  const std::vector<int64_t> pos = true_positions(x.ne(0));
  const int64_t nd = x.dim(), n = static_cast<int64_t>(pos.size());
  Tensor r = empty({n, nd}, kInt64);
  const std::vector<int64_t> sizes = x.sym_sizes().vec();
  int64_t* o = r.data_ptr<int64_t>();
  cpu::parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t rem = pos[i];
      for (int64_t d = nd - 1; d >= 0; --d) {
        o[i * nd + d] = rem % sizes[d];
        rem /= sizes[d];
      }
    }
  });
  out = {r};
}

std::vector<Tensor> nonzero_reference(const std::vector<Tensor>& in, const Attrs&) {
  Tensor x = f64(in[0]);
  const std::vector<int64_t> sizes = x.sym_sizes().vec();
  std::vector<int64_t> coords;
  int64_t n = 0;
  for (int64_t flat = 0; flat < x.sym_numel(); ++flat) {
    if (x.data_ptr<double>()[flat] == 0) continue;
    for (int64_t c : index_ops::unravel(flat, sizes)) coords.push_back(c);
    ++n;
  }
  return {long_tensor(coords).view({n, x.dim()})};
}

std::vector<OpSample> nonzero_samples(ScalarType dt) {
  Tensor sparse = make({4, 5}, dt, -3, 3).mul(make({4, 5}, dt, 0, 2).gt(1).to(dt));
  return {
      {{sparse}, {}, "matrix with zeros"},
      {{make({3, 4}, dt, -3, 3, true)}, {}, "non-contiguous"},
      {{make({2, 3, 2}, kBool)}, {}, "bool 3-D"},
      {{make({}, dt, 1, 2)}, {}, "0-dim"},
      {{zeros({3}, dt)}, {}, "all zero"},
      {{make({0, 2}, dt)}, {}, "zero-size"},
  };
}

// ---- masked_select / masked_scatter ----

SymShape mask_shape(const char* op, const Tensor& self, const Tensor& mask) {
  KILN_CHECK(mask.dtype() == kBool, op, ": expected BoolTensor for mask, got ", mask.dtype());
  return meta::broadcast_shapes(op, {self.sym_sizes(), mask.sym_sizes()});
}

void masked_select_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const SymShape shape = mask_shape("masked_select", in[0], in[1]);
  Tensor x = in[0].expand(shape).contiguous().reshape({-1});
  Tensor pos = long_tensor(true_positions(in[1].expand(shape)));
  Tensor r = empty({pos.sym_numel()}, in[0].dtype());
  if (pos.sym_numel() > 0) cpu::gather(r, x, 0, pos);
  out = {r};
}

std::vector<Tensor> masked_select_reference(const std::vector<Tensor>& in, const Attrs&) {
  const SymShape shape = mask_shape("masked_select", in[0], in[1]);
  Tensor x = f64(in[0].expand(shape)), m = f64(in[1].expand(shape));
  std::vector<double> v;
  for (int64_t i = 0; i < x.sym_numel(); ++i)
    if (m.data_ptr<double>()[i] != 0) v.push_back(x.data_ptr<double>()[i]);
  return {tensor(v, kFloat64)};
}

std::vector<TensorSpec> masked_scatter_meta(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor &self = in[0], &source = in[2];
  KILN_CHECK(self.dtype() == source.dtype(), "masked_scatter: expected self and source to have ",
             "same dtypes but got ", self.dtype(), " and ", source.dtype());
  return {meta::spec(mask_shape("masked_scatter", self, in[1]), self.dtype(), self.device())};
}

void masked_scatter_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const Tensor &self = in[0], &source = in[2];
  Tensor pos = long_tensor(true_positions(in[1].expand(out[0].sym_sizes())));
  KILN_CHECK(pos.sym_numel() <= source.sym_numel(),
             "masked_scatter: Number of elements of source (", source.sym_numel(),
             ") < number of ones in mask (", pos.sym_numel(), ")");
  Tensor target = index_ops::scatter_target(out[0], self.expand(out[0].sym_sizes()));
  Tensor values = source.reshape({-1}).narrow(0, 0, pos.sym_numel());
  cpu::scatter("masked_scatter", target.view({-1}), 0, pos, values, 0, cpu::ScatterOp::Assign,
               true);
  index_ops::finish_output(out[0], target);
}

std::vector<Tensor> masked_scatter_reference(const std::vector<Tensor>& in, const Attrs&) {
  const SymShape shape = mask_shape("masked_scatter", in[0], in[1]);
  Tensor out = f64(in[0].expand(shape)).clone(), m = f64(in[1].expand(shape)), s = f64(in[2]);
  int64_t next = 0;
  for (int64_t i = 0; i < out.sym_numel(); ++i)
    if (m.data_ptr<double>()[i] != 0) out.data_ptr<double>()[i] = s.data_ptr<double>()[next++];
  return {out};
}

std::vector<OpSample> masked_samples(ScalarType dt, bool with_source) {
  auto in = [&](Tensor self, Tensor mask, std::vector<int64_t> source) {
    std::vector<Tensor> v{std::move(self), std::move(mask)};
    if (with_source) v.push_back(make(std::move(source), dt));
    return v;
  };
  return {
      {in(make({3, 4}, dt), make({3, 4}, kBool), {12}), {}, "same shape"},
      {in(make({3, 4}, dt), make({4}, kBool), {3, 5}), {}, "broadcast mask, larger source"},
      {in(make({4}, dt), make({3, 4}, kBool), {2, 6}), {}, "mask broadcasts self"},
      {in(make({4, 3}, dt, -3, 3, true).t(), make({3, 4}, kBool), {12}), {}, "transposed"},
      {in(make({}, dt), make({}, kBool), {1}), {}, "0-dim"},
      {in(make({0, 4}, dt), make({4}, kBool), {0}), {}, "zero-size"},
  };
}

// ---- take / put ----

// index (any shape) as a flat int64 position in [0, n), negatives counted from the end.
Tensor flat_positions(const char* op, const Tensor& index, int64_t n) {
  return index_ops::checked_index_1d(op, index_ops::as_long(op, index).reshape({-1}), 0, n, true);
}

void take_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs&) {
  const Tensor& self = in[0];
  Tensor pos = flat_positions("take", in[1], self.sym_numel().guard_int());
  if (pos.sym_numel() == 0) return;
  cpu::gather(out[0].view({-1}), self.contiguous().reshape({-1}), 0, pos);
}

std::vector<Tensor> take_reference(const std::vector<Tensor>& in, const Attrs&) {
  Tensor x = f64(in[0]).reshape({-1}), ix = i64(in[1]);
  Tensor out = zeros(in[1].sym_sizes(), kFloat64);
  for (int64_t i = 0; i < ix.sym_numel(); ++i) {
    int64_t k = ix.data_ptr<int64_t>()[i];
    if (k < 0) k += x.sym_numel().guard_int();
    out.data_ptr<double>()[i] = x.data_ptr<double>()[k];
  }
  return {out};
}

std::vector<TensorSpec> put_meta(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor &self = in[0], &index = in[1], &source = in[2];
  KILN_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
             "put: Expected a long tensor for index, but got ", index.dtype());
  KILN_CHECK(self.dtype() == source.dtype(), "put: self and source expected to have the ",
             "same dtype, but got self.dtype = ", self.dtype(),
             " and source.dtype = ", source.dtype());
  KILN_CHECK(index.sym_numel() == source.sym_numel(), "put: Expected source and index to have the ",
             "same number of elements, but got source.numel() = ", source.sym_numel(),
             ", index.numel() = ", index.sym_numel());
  return {meta::spec(self.sym_sizes(), self.dtype(), self.device())};
}

void put_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor& self = in[0];
  Tensor pos = flat_positions("put", in[1], self.sym_numel().guard_int());
  Tensor target = index_ops::scatter_target(out[0], self);
  if (pos.sym_numel() > 0) {
    cpu::scatter("put", target.view({-1}), 0, pos, in[2].reshape({-1}), 0,
                 a.b(0) ? cpu::ScatterOp::Sum : cpu::ScatterOp::Assign, true);
  }
  index_ops::finish_output(out[0], target);
}

std::vector<Tensor> put_reference(const std::vector<Tensor>& in, const Attrs& a) {
  Tensor out = f64(in[0]).clone(), ix = i64(in[1]), s = f64(in[2]);
  const int64_t n = out.sym_numel().guard_int();
  for (int64_t i = 0; i < ix.sym_numel(); ++i) {
    int64_t k = ix.data_ptr<int64_t>()[i];
    if (k < 0) k += n;
    double& dst = out.data_ptr<double>()[k];
    dst = a.b(0) ? dst + s.data_ptr<double>()[i] : s.data_ptr<double>()[i];
  }
  return {out};
}

std::vector<OpSample> take_samples(ScalarType dt) {
  return {
      {{make({3, 4}, dt), tensor({{0, 11}, {-1, 5}, {7, 7}}).to(kInt64)}, {}, "matrix index"},
      {{make({4, 3}, dt, -3, 3, true).t(), sample_index({5}, 12)}, {}, "transposed self"},
      {{make({}, dt), zeros({}, kInt64)}, {}, "0-dim"},
      {{make({3}, dt), sample_index({0}, 3)}, {}, "empty index"},
  };
}

std::vector<OpSample> put_samples(ScalarType dt) {
  std::vector<OpSample> s;
  for (bool acc : {false, true}) {
    const std::string tag = acc ? ", accumulate" : "";
    s.push_back({{make({3, 4}, dt), tensor({{0, 11}, {-2, 5}}).to(kInt64), make({2, 2}, dt)},
                 {acc},
                 "matrix index" + tag});
    s.push_back({{make({3, 4}, dt, -3, 3, true), tensor({1, 6, 3}, kInt64), make({3}, dt)},
                 {acc},
                 "non-contiguous" + tag});
    s.push_back({{make({}, dt), zeros({}, kInt64), make({}, dt)}, {acc}, "0-dim" + tag});
  }
  s.push_back({{make({5}, dt), tensor({1, 3, 1, 1}, kInt64), make({4}, dt)},
               {true},
               "repeated, accumulate"});
  return s;
}

// ---- one_hot ----

std::vector<TensorSpec> one_hot_meta(const std::vector<Tensor>& in, const Attrs& a) {
  KILN_CHECK(in[0].dtype() == kInt64,
             "one_hot: is only applicable to index tensor of type int64, got ", in[0].dtype());
  KILN_CHECK(a.i(0) >= 0, "one_hot: num_classes must be non-negative, got ", a.i(0));
  SymShape sizes = in[0].sym_sizes();
  sizes.push_back(a.i(0));
  return {meta::spec(sizes, kInt64, in[0].device())};
}

void one_hot_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const int64_t classes = a.i(0);
  Tensor idx = in[0].contiguous();
  const int64_t* p = idx.data_ptr<int64_t>();
  const int64_t n = idx.sym_numel();
  for (int64_t i = 0; i < n; ++i) {
    KILN_CHECK(p[i] >= 0, "one_hot: Class values must be non-negative (got ", p[i], ")");
    KILN_CHECK(p[i] < classes, "one_hot: Class values must be smaller than num_classes (got ", p[i],
               ", num_classes ", classes, ")");
  }
  int64_t* o = out[0].data_ptr<int64_t>();
  std::fill(o, o + n * classes, int64_t{0});
  for (int64_t i = 0; i < n; ++i) o[i * classes + p[i]] = 1;
}

std::vector<Tensor> one_hot_reference(const std::vector<Tensor>& in, const Attrs& a) {
  Tensor ix = i64(in[0]);
  SymShape sizes = in[0].sym_sizes();
  sizes.push_back(a.i(0));
  Tensor out = zeros(sizes, kFloat64);
  for (int64_t i = 0; i < ix.sym_numel(); ++i)
    out.data_ptr<double>()[i * a.i(0) + ix.data_ptr<int64_t>()[i]] = 1;
  return {out};
}

// The mask checks of masked_select (with_source false) and masked_scatter.
std::vector<OpErrorSample> masked_error_samples(bool with_source) {
  auto in = [&](Tensor mask) {
    std::vector<Tensor> v{make({3, 4}, kFloat32), std::move(mask)};
    if (with_source) v.push_back(make({12}, kFloat32));
    return v;
  };
  return {
      {in(make({3, 4}, kFloat32)), {}, "expected BoolTensor for mask, got float32", "float mask"},
      {in(make({3}, kBool)),
       {},
       "shapes [3, 4] and [3] cannot be broadcast together",
       "mask that does not broadcast"},
  };
}

}  // namespace

KILN_REGISTER_OP(nonzero)
    .schema("nonzero(Tensor self) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs&) { return dynamic_meta("nonzero"); })
    .cpu(nonzero_kernel)
    .samples(nonzero_samples)
    .reference(nonzero_reference)
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("extern:nonzero")
    .dynamic();

KILN_REGISTER_OP(masked_select)
    .schema("masked_select(Tensor self, Tensor mask) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      mask_shape("masked_select", in[0], in[1]);
      return dynamic_meta("masked_select");
    })
    .cpu(masked_select_kernel)
    .save_metadata({0})  // self: its sizes only
    .backward([](const BackwardContext& c) {
      const Tensor &self = c.input(0), &mask = c.input(1);
      const SymShape shape = mask_shape("masked_select", self, mask);
      Tensor z = zeros(shape, c.grad().options());
      return std::vector<Tensor>{z.masked_scatter(mask, c.grad()), Tensor()};
    })
    .samples([](ScalarType dt) { return masked_samples(dt, false); })
    .error_samples([] { return masked_error_samples(false); })
    .reference(masked_select_reference)
    .dtypes({kFloat64, kFloat32, kInt64, kBool})
    .lowering("extern:masked_select")
    .dynamic();

KILN_REGISTER_OP(masked_scatter)
    .schema("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor")
    .meta(masked_scatter_meta)
    .cpu(masked_scatter_kernel)
    .save_inputs({1, 2})
    .backward([](const BackwardContext& c) {
      const Tensor &mask = c.input(1), &source = c.input(2), &grad = c.grad();
      std::vector<Tensor> g(3);
      if (c.needs_grad(0)) g[0] = grad.masked_fill(mask, 0);
      if (c.needs_grad(2)) {
        Tensor used = grad.masked_select(mask);
        const SymInt rest = source.sym_numel() - used.sym_numel();
        g[2] = cat({used, zeros({rest}, grad.options())}).view(source.sym_sizes());
      }
      return g;
    })
    .samples([](ScalarType dt) { return masked_samples(dt, true); })
    .error_samples([] {
      auto s = masked_error_samples(true);
      const Tensor self = make({3, 4}, kFloat32), mask = ones({3, 4}, kBool);
      s.push_back({{self, mask, make({12}, kFloat64)},
                   {},
                   "expected self and source to have same dtypes but got float32 and float64",
                   "source dtype"});
      s.push_back({{self, mask, make({5}, kFloat32)},
                   {},
                   "Number of elements of source (5) < number of ones in mask (12)",
                   "source too small",
                   /*in_meta=*/false});
      return s;
    })
    .reference(masked_scatter_reference)
    .dtypes({kFloat64, kFloat32, kInt64, kBool})
    .lowering("extern:masked_scatter");

KILN_REGISTER_OP(take)
    .schema("take(Tensor self, Tensor index) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs&) {
      KILN_CHECK(in[1].dtype() == kInt64 || in[1].dtype() == kInt32,
                 "take: Expected a long tensor for index, but got ", in[1].dtype());
      return meta::one_spec(in[1].sym_sizes(), in[0].dtype(), in[0].device());
    })
    .cpu(take_kernel)
    .save_metadata({0})  // self: its sizes only
    .backward([](const BackwardContext& c) {
      Tensor z = zeros(c.input(0).sym_sizes(), c.grad().options());
      return std::vector<Tensor>{z.put(c.input(1), c.grad(), true), Tensor()};
    })
    .samples(take_samples)
    .error_samples([] {
      const Tensor self = make({3, 4}, kFloat32);
      return std::vector<OpErrorSample>{
          {{self, tensor({1., 2.})},
           {},
           "Expected a long tensor for index, but got float32",
           "float index"},
          {{self, tensor({1, 12}, kInt64)},
           {},
           "index 12 is out of bounds for dimension 0 with size 12",
           "index out of range",
           /*in_meta=*/false},
      };
    })
    .reference(take_reference)
    .dtypes({kFloat64, kFloat32, kInt64, kBool})
    .lowering("extern:take");

KILN_REGISTER_OP(put)
    .schema("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor")
    .meta(put_meta)
    .cpu(put_kernel)
    .save_inputs({1, 2})
    .backward([](const BackwardContext& c) {
      const Tensor &index = c.input(1), &source = c.input(2), &grad = c.grad();
      std::vector<Tensor> g(3);
      if (c.needs_grad(0)) g[0] = c.attrs.b(0) ? grad : grad.put(index, zeros_like(source));
      if (c.needs_grad(2)) g[2] = grad.take(index).reshape(source.sym_sizes());
      return g;
    })
    .samples(put_samples)
    .error_samples([] {
      const Tensor self = make({3, 4}, kFloat32), index = tensor({1, 2}, kInt64);
      const Attrs a{false};
      return std::vector<OpErrorSample>{
          {{self, tensor({1., 2.}), make({2}, kFloat32)},
           a,
           "Expected a long tensor for index, but got float32",
           "float index"},
          {{self, index, make({2}, kFloat64)},
           a,
           "but got self.dtype = float32 and source.dtype = float64",
           "source dtype"},
          {{self, index, make({3}, kFloat32)},
           a,
           "but got source.numel() = 3, index.numel() = 2",
           "source of another size"},
          {{self, tensor({1, -13}, kInt64), make({2}, kFloat32)},
           a,
           "index -13 is out of bounds for dimension 0 with size 12",
           "index out of range",
           /*in_meta=*/false},
          {{self.to(kBool), index, make({2}, kBool)},
           {true},
           "reductions are not supported for dtype bool",
           "accumulate bool",
           /*in_meta=*/false},
      };
    })
    .reference(put_reference)
    .dtypes({kFloat64, kFloat32, kInt64})
    .lowering("extern:put");

KILN_REGISTER_OP(one_hot)
    .schema("one_hot(Tensor self, int num_classes) -> Tensor")
    .meta(one_hot_meta)
    .cpu(one_hot_kernel)
    .samples([](ScalarType) {
      return std::vector<OpSample>{{{tensor({{0, 2}, {1, 1}}).to(kInt64)}, {int64_t{3}}, "matrix"},
                                   {{tensor({4, 0, 2}, kInt64)}, {int64_t{6}}, "more classes"},
                                   {{zeros({}, kInt64)}, {int64_t{2}}, "0-dim"},
                                   {{zeros({0}, kInt64)}, {int64_t{3}}, "empty"}};
    })
    .error_samples([] {
      const Tensor index = tensor({0, 2}, kInt64);
      return std::vector<OpErrorSample>{
          {{index.to(kInt32)}, {int64_t{3}}, "index tensor of type int64, got int32", "int32"},
          {{index}, {int64_t{-2}}, "num_classes must be non-negative, got -2", "num_classes"},
          {{tensor({0, -1}, kInt64)},
           {int64_t{3}},
           "Class values must be non-negative (got -1)",
           "negative class",
           /*in_meta=*/false},
          {{index},
           {int64_t{2}},
           "smaller than num_classes (got 2, num_classes 2)",
           "class too large",
           /*in_meta=*/false},
      };
    })
    .reference(one_hot_reference)
    .dtypes({kInt64})
    .lowering("extern:one_hot");

namespace {
[[maybe_unused]] const bool kInplaceRegistered =
    index_ops::register_inplace({"masked_scatter", "put"});
}  // namespace

Tensor nonzero(const Tensor& self) {
  KILN_INDEX_OP(op, "nonzero");
  return call_op1(op, {self}, {});
}
std::vector<Tensor> nonzero_numpy(const Tensor& self) {
  return unbind(nonzero(self.dim() == 0 ? self.reshape({1}) : self), 1);
}
std::vector<Tensor> nonzero(const Tensor& self, bool as_tuple) {
  return as_tuple ? nonzero_numpy(self) : std::vector<Tensor>{nonzero(self)};
}
std::vector<Tensor> where(const Tensor& condition) { return nonzero_numpy(condition); }

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  KILN_INDEX_OP(op, "masked_select");
  return call_op1(op, {self, mask}, {});
}
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  KILN_INDEX_OP(op, "masked_scatter");
  return call_op1(op, {self, mask, source}, {});
}
Tensor take(const Tensor& self, const Tensor& index) {
  KILN_INDEX_OP(op, "take");
  return call_op1(op, {self, index}, {});
}
Tensor put(const Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  KILN_INDEX_OP(op, "put");
  return call_op1(op, {self, index, source}, {accumulate});
}

Tensor take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  if (!dim) return self.reshape({-1}).gather(0, indices.reshape({-1}));
  KILN_CHECK(self.dim() == indices.dim(), "take_along_dim: input and indices should have the ",
             "same number of dimensions, but got ", self.dim(), " dimensions for input, and ",
             indices.dim(), " dimensions for indices");
  const int64_t d = meta::wrap_dim("take_along_dim", *dim, std::max<int64_t>(self.dim(), 1));
  if (self.dim() == 0) return self.reshape({1}).gather(0, indices.reshape({1})).reshape({});
  SymShape self_sizes = self.sym_sizes(), index_sizes = indices.sym_sizes();
  for (int64_t k = 0; k < self.dim(); ++k) {
    if (k == d) continue;
    const SymShape b = meta::broadcast_shapes(
        "take_along_dim", {SymShape{self.sym_size(k)}, SymShape{indices.sym_size(k)}});
    self_sizes[k] = b[0];
    index_sizes[k] = b[0];
  }
  return self.expand(self_sizes).gather(d, indices.expand(index_sizes));
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  KILN_INDEX_OP(op, "one_hot");
  if (num_classes == -1) {
    KILN_CHECK(self.sym_numel() > 0,
               "one_hot: Can not infer total number of classes from empty tensor.");
    const int64_t low = self.min().item<int64_t>();
    KILN_CHECK(low >= 0, "one_hot: Class values must be non-negative (got ", low, ")");
    num_classes = self.max().item<int64_t>() + 1;
  }
  return call_op1(op, {self}, {num_classes});
}

Tensor Tensor::masked_select(const Tensor& mask) const { return kiln::masked_select(*this, mask); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return kiln::masked_scatter(*this, mask, source);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) const {
  KILN_INDEX_OP(op, "masked_scatter_");
  call_op(op, {const_cast<Tensor&>(*this), mask, source}, {});
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::take(const Tensor& index) const { return kiln::take(*this, index); }
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return kiln::take_along_dim(*this, indices, dim);
}
Tensor Tensor::put(const Tensor& index, const Tensor& source, bool accumulate) const {
  return kiln::put(*this, index, source, accumulate);
}
Tensor& Tensor::put_(const Tensor& index, const Tensor& source, bool accumulate) const {
  KILN_INDEX_OP(op, "put_");
  call_op(op, {const_cast<Tensor&>(*this), index, source}, {accumulate});
  return const_cast<Tensor&>(*this);
}
Tensor Tensor::nonzero() const { return kiln::nonzero(*this); }
std::vector<Tensor> Tensor::nonzero_numpy() const { return kiln::nonzero_numpy(*this); }

}  // namespace kiln

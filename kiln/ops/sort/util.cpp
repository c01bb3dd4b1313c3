#include "kiln/ops/sort/util.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln::sorting {

int64_t along_dim(const char* op, const Tensor& x, int64_t dim) {
  return meta::wrap_dim(op, dim, x.dim());
}

SymShape with_dim_size(const Tensor& x, int64_t dim, const SymInt& n) {
  SymShape s = x.sym_sizes();
  if (!s.empty()) s[dim] = n;
  return s;
}

SymInt data_dependent_size(const char* op, const Tensor& x, const SymInt& upper_bound) {
  for (const SymInt& s : x.sym_sizes()) {
    if (ShapeEnv* env = s.env()) return env->create_symbol(upper_bound.hint());
  }
  KILN_FAIL(op, ": the output size depends on the input's values, which a meta tensor of sizes ",
            x.sym_sizes(), " does not have");
}

Tensor select_backward(const Tensor& grad, const Tensor& indices, int64_t dim, const Tensor& x,
                       bool keepdim) {
  if (!grad.defined()) return Tensor();
  static const OpDef& op = get_op("value_selecting_backward");
  Tensor g = grad, idx = indices;
  if (!keepdim && x.dim() > 0) {
    g = g.unsqueeze(dim);
    idx = idx.unsqueeze(dim);
  }
  return call_op1(op, {g, idx}, {dim, x.sym_sizes()});
}

Tensor select_along_dim(const Tensor& x, const Tensor& indices, int64_t dim) {
  static const OpDef& op = get_op("select_along_dim");
  return call_op1(op, {x, indices}, {dim});
}

OpErrorSample dim_error_sample(const DimAttrs& attrs) {
  return {{samples::make({3, 4}, kFloat32)},
          attrs(2, 4),
          "dimension out of range (expected to be in range of [-2, 1], but got 2)",
          "dim out of range"};
}

std::vector<OpSample> along_dim_samples(ScalarType dt, const DimAttrs& attrs, bool zero_size_dim) {
  auto mk = [&](std::vector<int64_t> shape, bool noncontiguous = false) {
    return samples::make(std::move(shape), dt, -3, 3, noncontiguous);
  };
  std::vector<OpSample> s = {
      {{mk({3, 5})}, attrs(1, 5), "dim 1"},
      {{mk({4, 3})}, attrs(0, 4), "dim 0"},
      {{mk({2, 5, 3})}, attrs(1, 5), "middle dim"},
      {{mk({3, 6}, true)}, attrs(-1, 6), "non-contiguous"},
      {{mk({5, 4}).t()}, attrs(1, 5), "transposed"},
      {{mk({2, 90})}, attrs(1, 90), "long rows"},
      {{mk({7})}, attrs(0, 7), "vector"},
      {{mk({})}, attrs(0, 1), "0-dim"},
      {{mk({0, 4})}, attrs(1, 4), "zero-size"},
  };
  if (zero_size_dim) s.push_back({{mk({3, 0})}, attrs(1, 0), "zero-size dim"});
  return s;
}

Tensor tied_values(std::vector<int64_t> shape, ScalarType dtype, int64_t distinct) {
  return samples::make(std::move(shape), kInt64, 0, static_cast<double>(distinct)).to(dtype);
}

std::vector<Tensor> reference_slices(const Tensor& x, int64_t dim, bool keepdim, const SliceFn& f) {
  // Move dim last, so that each slice is a contiguous run of the float64 copy.
  const bool scalar = x.dim() == 0;
  Tensor xd = (scalar ? x.reshape({1}) : x.movedim(dim, int64_t{-1})).to(kFloat64).contiguous();
  const int64_t n = xd.sym_size(-1).guard_int();
  std::vector<int64_t> outer = xd.sym_sizes().vec();
  outer.pop_back();
  int64_t rows_total = 1;
  for (int64_t s : outer) rows_total *= s;
  std::vector<std::vector<double>> flat;  // per output, rows concatenated
  size_t kept = SIZE_MAX;                 // outputs every slice gave
  int64_t m = -1;
  const double* p = xd.data_ptr<double>();
  for (int64_t r = 0; r < rows_total; ++r) {
    std::vector<double> v(p + r * n, p + (r + 1) * n);
    auto outs = f(v);
    if (flat.size() < outs.size()) flat.resize(outs.size());
    kept = std::min(kept, outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      m = static_cast<int64_t>(outs[k].size());
      flat[k].insert(flat[k].end(), outs[k].begin(), outs[k].end());
    }
  }
  if (kept < flat.size()) flat.resize(kept);
  if (rows_total == 0) {  // no rows: outputs follow f on an empty slice's lengths
    auto outs = f(std::vector<double>(n));
    flat.resize(outs.size());
    m = outs.empty() ? 0 : static_cast<int64_t>(outs[0].size());
  }
  std::vector<Tensor> result;
  for (auto& values : flat) {
    std::vector<int64_t> shape = outer;
    shape.push_back(m);
    Tensor t = tensor(values, TensorOptions(kFloat64)).reshape(shape);
    if (scalar) {
      t = t.reshape({});
    } else {
      t = t.movedim(int64_t{-1}, dim);
      if (!keepdim) t = t.squeeze(dim);
    }
    result.push_back(t.contiguous());
  }
  return result;
}

std::vector<int64_t> stable_order(const std::vector<double>& v, bool descending) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  auto less = [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return descending ? less(v[b], v[a]) : less(v[a], v[b]);
  });
  return order;
}

bool has_ties(const std::vector<double>& v) {
  std::vector<int64_t> order = stable_order(v);
  for (size_t i = 1; i < order.size(); ++i) {
    const double a = v[order[i - 1]], b = v[order[i]];
    if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  }
  return false;
}

}  // namespace kiln::sorting

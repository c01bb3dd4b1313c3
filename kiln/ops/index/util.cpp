#include "kiln/ops/index/util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/backend/cpu/copy.h"
#include "kiln/ops/inplace.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape/util.h"

namespace kiln::index_ops {

Tensor as_long(const char* op, const Tensor& index) {
  KILN_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
             ": Expected dtype int32/int64 for index, but got ", index.dtype());
  return index.dtype() == kInt64 ? index : index.to(kInt64);
}

Tensor checked_index_1d(const char* op, const Tensor& index, int64_t dim, int64_t size,
                        bool allow_negative) {
  KILN_CHECK(index.dim() <= 1, op, ": Index is supposed to be a vector, but got a tensor of ",
             index.dim(), " dimensions");
  Tensor idx = as_long(op, index).reshape({index.sym_numel()});
  cpu::check_index_range(op, idx, dim, size, allow_negative);
  if (!allow_negative) return idx;
  Tensor wrapped = idx.contiguous().clone();
  int64_t* p = wrapped.data_ptr<int64_t>();
  for (int64_t i = 0; i < wrapped.sym_numel(); ++i)
    if (p[i] < 0) p[i] += size;
  return wrapped;
}

Tensor expand_index(const Tensor& idx, std::vector<int64_t> sizes, int64_t dim) {
  sizes[dim] = idx.sym_numel();
  SymShape sym(sizes.begin(), sizes.end());
  SymShape strides(sizes.size(), SymInt(0));
  strides[dim] = idx.sym_numel() > 1 ? idx.sym_stride(0) : SymInt(1);
  return shape::raw_view(idx, sym, strides, idx.sym_storage_offset());
}

Tensor scatter_target(const Tensor& out, const Tensor& self) {
  Tensor target = out.is_contiguous() ? out : empty(out.sym_sizes(), out.dtype());
  if (target.sym_numel() > 0 && target.data_ptr() != self.data_ptr()) cpu::copy(target, self);
  return target;
}

void finish_output(const Tensor& out, const Tensor& target) {
  if (target.sym_numel() > 0 && target.data_ptr() != out.data_ptr()) cpu::copy(out, target);
}

bool register_inplace(std::initializer_list<const char*> names) {
  return kiln::register_inplace(names, InplaceKind::Indexed);
}

Tensor f64(const Tensor& t) { return t.detach().to(kFloat64).contiguous(); }
Tensor i64(const Tensor& t) { return t.detach().to(kInt64).contiguous(); }

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& sizes) {
  int64_t flat = 0;
  for (size_t d = 0; d < sizes.size(); ++d) flat = flat * sizes[d] + idx[d];
  return flat;
}

double reduce_values(const std::vector<double>& v, const std::string& reduce, bool integer) {
  if (reduce == "assign") return v.back();
  double r = reduce == "prod" ? 1 : reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : 0;
  for (double x : v) {
    if (reduce == "sum" || reduce == "mean") r += x;
    if (reduce == "prod") r *= x;
    if (reduce == "amax") r = std::max(r, x);
    if (reduce == "amin") r = std::min(r, x);
  }
  if (reduce == "mean") {
    r /= static_cast<double>(v.size());
    if (integer) r = std::floor(r);
  }
  return r;
}

Tensor sample_index(std::vector<int64_t> shape, int64_t high) {
  return samples::make(std::move(shape), kInt64, 0, static_cast<double>(high));
}

}  // namespace kiln::index_ops

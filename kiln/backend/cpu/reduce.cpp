#include "kiln/backend/cpu/reduce.h"

#include <algorithm>
#include <numeric>

#include "kiln/backend/cpu/copy.h"

namespace kiln::cpu {
namespace {

struct Dim {
  int64_t size, stride;
};

bool is_reduced(const std::vector<int64_t>& dims, int64_t d) {
  return std::binary_search(dims.begin(), dims.end(), d);
}

}  // namespace

ReducePlan plan_reduce(const Tensor& x, const std::vector<int64_t>& dims) {
  ReducePlan p;
  std::vector<Dim> kept, red;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t n = x.impl()->sizes()[d];
    const int64_t s = x.impl()->strides()[d];
    if (is_reduced(dims, d)) {
      p.reduced *= n;
      if (n != 1) red.push_back({n, s});
    } else {
      p.outputs *= n;
      if (n != 1) kept.push_back({n, s});
    }
  }
  // Kept dims merge in logical order (the output is row-major over them).
  std::vector<Dim> k;
  for (const Dim& d : kept) {
    if (!k.empty() && k.back().stride == d.size * d.stride) {
      k.back() = {k.back().size * d.size, d.stride};
    } else {
      k.push_back(d);
    }
  }
  // Reduced dims may be folded in any order: merge them by decreasing stride.
  std::stable_sort(red.begin(), red.end(),
                   [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  std::vector<Dim> r;
  for (const Dim& d : red) {
    if (!r.empty() && r.back().stride == d.size * d.stride) {
      r.back() = {r.back().size * d.size, d.stride};
    } else {
      r.push_back(d);
    }
  }
  auto fill = [](const std::vector<Dim>& ds, std::vector<int64_t>& sizes,
                 std::vector<int64_t>& strides) {
    for (const Dim& d : ds) {
      sizes.push_back(d.size);
      strides.push_back(d.stride);
    }
  };
  if (r.empty() || (r.size() == 1 && r[0].stride == 1)) {
    p.kind = ReducePlan::Kind::Inner;
  } else if (!k.empty() && k.back().stride == 1) {
    p.kind = ReducePlan::Kind::Outer;
    p.columns = k.back().size;
    k.pop_back();
    fill(r, p.red_sizes, p.red_strides);
  } else {
    p.kind = ReducePlan::Kind::Copy;
  }
  fill(k, p.kept_sizes, p.kept_strides);
  return p;
}

Tensor reduced_dims_innermost(const Tensor& x, const std::vector<int64_t>& dims) {
  SymShape sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (is_reduced(dims, d)) continue;
    sizes.push_back(x.impl()->sizes()[d]);
    strides.push_back(x.impl()->strides()[d]);
  }
  for (int64_t d : dims) {
    sizes.push_back(x.impl()->sizes()[d]);
    strides.push_back(x.impl()->strides()[d]);
  }
  Tensor permuted(std::make_shared<TensorImpl>(x.impl()->storage(), x.dtype(), sizes, strides,
                                               x.impl()->storage_offset()));
  Tensor out = empty_buffer(sizes, x.dtype(), x.device());
  copy(out, permuted);
  return out;
}

ReducePlan inner_plan_of_copy(const ReducePlan& p) {
  ReducePlan q;
  q.kind = ReducePlan::Kind::Inner;
  q.outputs = p.outputs;
  q.reduced = p.reduced;
  q.kept_sizes = {p.outputs};
  q.kept_strides = {p.reduced};
  return q;
}

}  // namespace kiln::cpu

#include "kiln/ops/reduce/util.h"

#include <algorithm>

#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln::reduce {

const std::vector<ScalarType> kFloatDtypes = {kFloat64, kFloat32, kBFloat16};
const std::vector<ScalarType> kNumericDtypes = {kFloat64, kFloat32, kBFloat16, kInt64, kInt32};
const std::vector<ScalarType> kAllDtypes = {kFloat64, kFloat32, kBFloat16, kInt64, kInt32, kBool};

std::vector<int64_t> reduced_dims(const char* op, const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
  } else {
    out = meta::wrap_dims(op, dims, ndim);
    if (ndim == 0) out.clear();
  }
  std::sort(out.begin(), out.end());
  return out;
}

SymShape reduced_shape(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  SymShape out;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!reduced)
      out.push_back(x.sym_size(d));
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.sym_size(d).guard_int();
  return n;
}

void check_nonempty(const char* op, const Tensor& x, const std::vector<int64_t>& dims,
                    bool dims_given) {
  // Symbolic sizes are not specialised here: a size that is not known to be 0 passes.
  for (int64_t d = 0; d < x.dim(); ++d) {
    auto n = x.sym_size(d).maybe_int();
    if (!n || *n != 0) continue;
    KILN_CHECK(dims_given, op,
               ": Expected reduction dim to be specified for input.numel() == 0. Specify the "
               "reduction dim with the 'dim' argument.");
    KILN_CHECK(std::find(dims.begin(), dims.end(), d) == dims.end(), op,
               ": Expected reduction dim ", d, " to have non-zero size.");
  }
}

Tensor with_kept_dims(const Tensor& t, const Tensor& x, const std::vector<int64_t>& dims,
                      bool keepdim) {
  if (keepdim || dims.empty()) return t;
  return t.reshape(reduced_shape(x, dims, true));
}

Tensor expand_back(const Tensor& t, const Tensor& x, const std::vector<int64_t>& dims,
                   bool keepdim) {
  return with_kept_dims(t, x, dims, keepdim).expand(x.sym_sizes());
}

std::vector<OpSample> samples(ScalarType dt, const SampleOptions& opt, const SampleAttrs& attrs) {
  using V = std::vector<int64_t>;
  std::vector<OpSample> s;
  auto mk = [&](std::vector<int64_t> shape, bool noncontiguous = false) {
    return samples::make(std::move(shape), dt, opt.low, opt.high, noncontiguous);
  };
  auto add = [&](Tensor x, V dims, bool keepdim, std::string desc) {
    if (dims.empty() && !opt.full) return;
    s.push_back({{std::move(x)}, attrs(dims, keepdim), std::move(desc)});
  };
  add(mk({3, 4}), {}, false, "all dims");
  add(mk({3, 4}), {1}, false, "dim 1");
  add(mk({3, 4}), {0}, true, "dim 0 keepdim");
  add(mk({2, 3, 5}), {1}, false, "middle dim");
  if (opt.multi_dim) {
    add(mk({2, 3, 4}), {0, 2}, false, "dims 0,2");
    add(mk({2, 3, 4}), {0, 1}, true, "outer dims keepdim");
  }
  add(mk({4, 5}, true), {-1}, false, "non-contiguous");
  add(mk({5, 4}).t(), {0}, false, "transposed dim 0");
  add(mk({5, 4}).t(), {1}, true, "transposed dim 1");
  const V perm = {2, 0, 1};
  add(mk({2, 3, 4}).permute(perm), opt.multi_dim ? V{0, 1} : V{1}, false, "permuted");
  add(mk({3, 70}), {1}, false, "long rows");
  add(mk({70, 3}), {0}, false, "long columns");
  add(mk({}), {}, false, "0-dim");
  add(mk({}), {0}, true, "0-dim dim 0");
  add(mk({0, 3}), {1}, false, "zero-size output");
  if (opt.empty_reduce) add(mk({0, 3}), {0}, false, "empty reduction");
  return s;
}

std::vector<OpErrorSample> error_samples(const SampleOptions& opt, const SampleAttrs& attrs) {
  const Tensor x = samples::make({3, 4}, kFloat32), empty = samples::make({0, 3}, kFloat32);
  std::vector<OpErrorSample> s = {
      {{x},
       attrs({2}, false),
       "dimension out of range (expected to be in range of [-2, 1], but got 2)",
       "dim out of range"},
  };
  if (opt.multi_dim)
    s.push_back({{x},
                 attrs({1, -1}, false),
                 "dim 1 appears multiple times in the list of dims",
                 "repeated dim"});
  if (!opt.empty_reduce) {
    if (opt.full)
      s.push_back({{empty},
                   attrs({}, false),
                   "Expected reduction dim to be specified for input.numel() == 0",
                   "empty input without dims"});
    s.push_back({{empty},
                 attrs({0}, false),
                 "Expected reduction dim 0 to have non-zero size",
                 "zero-size dim"});
  }
  return s;
}

namespace {
// The flat index, over `keep` (x's sizes with size 1 where masked), of x's element i.
int64_t group_of(int64_t i, const std::vector<int64_t>& sizes, const std::vector<int64_t>& keep) {
  int64_t g = 0, mul = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % sizes[d];
    i /= sizes[d];
    if (keep[d] != 1) g += idx * mul;
    mul *= keep[d];
  }
  return g;
}
}  // namespace

Tensor reference(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim,
                 const std::function<double(const std::vector<double>&)>& f) {
  Tensor xd = x.to(kFloat64).contiguous();
  const std::vector<int64_t> sizes = x.sym_sizes().vec();
  std::vector<int64_t> keep = sizes;
  for (int64_t d : dims) keep[d] = 1;
  int64_t groups = 1;
  for (int64_t n : keep) groups *= n;
  std::vector<std::vector<double>> values(groups);
  const double* p = xd.data_ptr<double>();
  for (int64_t i = 0; i < xd.sym_numel(); ++i) values[group_of(i, sizes, keep)].push_back(p[i]);
  Tensor out = empty(reduced_shape(x, dims, keepdim), kFloat64);
  double* o = out.data_ptr<double>();
  for (int64_t g = 0; g < groups; ++g) o[g] = f(values[g]);
  return out;
}

Tensor reference_along(const Tensor& x, int64_t dim,
                       const std::function<std::vector<double>(const std::vector<double>&)>& f) {
  Tensor xd = x.to(kFloat64).contiguous();
  const std::vector<int64_t> sizes = x.sym_sizes().vec();
  std::vector<int64_t> keep = sizes;
  if (!keep.empty()) keep[dim] = 1;
  int64_t groups = 1;
  for (int64_t n : keep) groups *= n;
  std::vector<std::vector<double>> values(groups);
  std::vector<std::vector<int64_t>> where(groups);
  const double* p = xd.data_ptr<double>();
  for (int64_t i = 0; i < xd.sym_numel(); ++i) {
    const int64_t g = group_of(i, sizes, keep);
    values[g].push_back(p[i]);
    where[g].push_back(i);
  }
  Tensor out = empty(x.sym_sizes(), kFloat64);
  double* o = out.data_ptr<double>();
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<double> r = f(values[g]);
    for (size_t k = 0; k < r.size(); ++k) o[where[g][k]] = r[k];
  }
  return out;
}

}  // namespace kiln::reduce

#include "kiln/ops/index_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/backend/cpu/copy.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/shape_util.h"

namespace kiln::index_ops {

Tensor as_long(const char* op, const Tensor& index) {
  KILN_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
             "(): Expected dtype int32/int64 for index, but got ", index.dtype());
  return index.dtype() == kInt64 ? index : index.to(kInt64);
}

Tensor checked_index_1d(const char* op, const Tensor& index, int64_t dim, int64_t size,
                        bool allow_negative) {
  KILN_CHECK(index.dim() <= 1, op, "(): Index is supposed to be a vector, but got a tensor of ",
             index.dim(), " dimensions");
  Tensor idx = as_long(op, index).reshape({index.numel()});
  cpu::check_index_range(op, idx, dim, size, allow_negative);
  if (!allow_negative) return idx;
  Tensor wrapped = idx.contiguous().clone();
  int64_t* p = wrapped.data_ptr<int64_t>();
  for (int64_t i = 0; i < wrapped.numel(); ++i)
    if (p[i] < 0) p[i] += size;
  return wrapped;
}

Tensor expand_index(const Tensor& idx, std::vector<int64_t> sizes, int64_t dim) {
  sizes[dim] = idx.numel();
  SymShape sym(sizes.begin(), sizes.end());
  SymShape strides(sizes.size(), SymInt(0));
  strides[dim] = idx.numel() > 1 ? idx.stride(0) : SymInt(1);
  return shape::raw_view(idx, sym, strides, idx.storage_offset());
}

Tensor scatter_target(const Tensor& out, const Tensor& self) {
  Tensor target = out.is_contiguous() ? out : empty(out.sym_sizes(), out.dtype());
  if (target.numel() > 0 && target.data_ptr() != self.data_ptr()) cpu::copy(target, self);
  return target;
}

void finish_output(const Tensor& out, const Tensor& target) {
  if (target.numel() > 0 && target.data_ptr() != out.data_ptr()) cpu::copy(out, target);
}

namespace {

bool shares_storage(const std::vector<Tensor>& in) {
  for (size_t k = 1; k < in.size(); ++k)
    if (in[k].defined() && in[k].impl()->storage() == in[0].impl()->storage()) return true;
  return false;
}

bool has_overlap(const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.size(d).guard_int() > 1 && self.stride(d).guard_int() == 0) return true;
  return false;
}

// "scatter(Tensor self, ...) -> Tensor" becomes "scatter_(Tensor(a!) self, ...) -> Tensor(a!)".
std::string inplace_schema(std::string s, const std::string& name) {
  auto replace = [&s](const std::string& from, const std::string& to) {
    size_t at = s.find(from);
    if (at != std::string::npos) s.replace(at, from.size(), to);
  };
  replace(name + "(", name + "_(");
  replace("Tensor self", "Tensor(a!) self");
  replace("-> Tensor", "-> Tensor(a!)");
  return s;
}

void derive_inplace(const OpDef& base) {
  OpDef& d = register_op(base.name + "_");
  const std::string* name = &d.name;
  d.schema(inplace_schema(base.schema_, base.name))
      .meta([&base, name](const std::vector<Tensor>& in, const Attrs& a) {
        const Tensor& self = in.at(0);
        KILN_CHECK(!has_overlap(self), *name,
                   ": unsupported operation: more than one element of the written-to tensor "
                   "refers to a single memory location. Please clone() the tensor before "
                   "performing the operation.");
        TensorSpec s = base.meta_(in, a).at(0);
        KILN_CHECK(SymIntArrayRef(s.sizes) == self.sizes(), *name, ": output with shape ",
                   self.sizes(), " doesn't match the broadcast shape ", SymIntArrayRef(s.sizes));
        s.strides = {};
        s.inplace_of = 0;
        return std::vector<TensorSpec>{s};
      })
      .backward(base.backward_)
      .reference(base.reference_)
      .dtypes(base.dtypes_)
      .lowering("inplace:" + base.name)
      .inplace();
  d.samples([&base](ScalarType dt) {
    std::vector<OpSample> fitting;
    for (OpSample& s : base.samples_(dt))
      if (!s.inputs.at(0).impl()->is_wrapped_number() && !has_overlap(s.inputs[0]) &&
          SymIntArrayRef(base.meta_(s.inputs, s.attrs).at(0).sizes) == s.inputs[0].sizes())
        fitting.push_back(std::move(s));
    return fitting;
  });
  const KernelFn kernel = base.kernels[static_cast<int>(DeviceType::CPU)];
  d.cpu([kernel](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
    const Tensor& self = in[0];
    if (self.is_contiguous() && !shares_storage(in)) return kernel(in, out, a);
    std::vector<Tensor> tmp{empty(self.sym_sizes(), self.dtype())};
    kernel(in, tmp, a);
    cpu::copy(self, tmp[0]);
  });
  d.saves_inputs = base.saves_inputs;
  d.saves_outputs = base.saves_outputs;
  d.atol = base.atol;
  d.rtol = base.rtol;
}

}  // namespace

bool register_inplace(std::initializer_list<const char*> names) {
  for (const char* n : names) derive_inplace(get_op(n));
  return true;
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

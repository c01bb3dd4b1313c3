#include "kiln/ops/meta.h"

#include <algorithm>
#include <sstream>

namespace kiln::meta {

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);
  KILN_CHECK(dim >= -n && dim < n, op, ": dimension out of range (expected to be in range of [", -n,
             ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

std::vector<int64_t> wrap_dims(const char* op, IntArrayRef dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(op, d, ndim);
    KILN_CHECK(std::find(out.begin(), out.end(), w) == out.end(), op, ": dim ", w,
               " appears multiple times in the list of dims");
    out.push_back(w);
  }
  return out;
}

SymShape broadcast_shapes(const char* op, const std::vector<SymShape>& shapes) {
  size_t ndim = 0;
  for (const auto& s : shapes) ndim = std::max(ndim, s.size());
  SymShape out(ndim, SymInt(1));
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto& s = shapes[k];
    size_t off = ndim - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      const SymInt& a = out[off + d];
      const SymInt& b = s[d];
      if (b == 1) continue;
      if (a == 1) {
        out[off + d] = b;
        continue;
      }
      if (!(a == b)) {
        std::string all;
        for (size_t j = 0; j < shapes.size(); ++j) {
          std::ostringstream os;
          os << SymIntArrayRef(shapes[j]);
          all += (j ? " and " : "") + os.str();
        }
        KILN_FAIL(op, ": shapes ", all, " cannot be broadcast together: the size ", a,
                  " must match the size ", b, " at non-singleton dimension ", off + d);
      }
    }
  }
  return out;
}

namespace {
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (is_floating_point(higher)) return higher;
  if (higher == kBool || is_floating_point(lower)) return promote_types(higher, lower);
  if (higher != ScalarType::Undefined) return higher;
  return lower;
}
}  // namespace

ScalarType result_type(const std::vector<Tensor>& tensors) {
  ScalarType dim_r = ScalarType::Undefined, zero_r = ScalarType::Undefined,
             wrapped_r = ScalarType::Undefined;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    ScalarType cur = t.dtype();
    if (t.impl()->is_wrapped_number()) {
      if (is_floating_point(cur)) cur = get_default_dtype();
      wrapped_r = promote_types(wrapped_r, cur);
    } else if (t.dim() > 0) {
      dim_r = promote_types(dim_r, cur);
    } else {
      zero_r = promote_types(zero_r, cur);
    }
  }
  return combine_categories(dim_r, combine_categories(zero_r, wrapped_r));
}

TensorSpec spec(SymShape sizes, ScalarType dtype, Device device) {
  TensorSpec s;
  s.sizes = std::move(sizes);
  s.dtype = dtype;
  s.device = device;
  return s;
}

std::vector<TensorSpec> one_spec(SymShape sizes, ScalarType dtype, Device device) {
  std::vector<TensorSpec> out;  // not `return {spec(...)}`: that copies the spec's sizes again
  out.push_back(spec(std::move(sizes), dtype, device));
  return out;
}

std::vector<TensorSpec> unary(const std::vector<Tensor>& in, const Attrs&) {
  return one_spec(in[0].sym_sizes(), in[0].dtype(), in[0].device());
}
std::vector<TensorSpec> unary_float(const std::vector<Tensor>& in, const Attrs&) {
  return one_spec(in[0].sym_sizes(), to_float_dtype(in[0].dtype()), in[0].device());
}
std::vector<TensorSpec> unary_bool(const std::vector<Tensor>& in, const Attrs&) {
  return one_spec(in[0].sym_sizes(), kBool, in[0].device());
}

namespace {
std::vector<TensorSpec> broadcast_with(const std::vector<Tensor>& in, ScalarType dtype,
                                       const char* op) {
  Device dev = in[0].device();
  const SymShape* first = nullptr;
  bool same = true;  // concrete and equal shapes: the common case, which needs no copies
  for (const auto& t : in) {
    if (!t.defined()) continue;
    const SymShape& s = t.impl()->sym_sizes();
    if (!first) first = &s;
    same = same && !t.impl()->is_symbolic() && s == *first;
    if (t.dim() > 0 || !t.is_cpu()) dev = t.device();
  }
  if (same && first) return one_spec(*first, dtype, dev);
  std::vector<SymShape> shapes;
  for (const auto& t : in)
    if (t.defined()) shapes.push_back(t.sym_sizes());
  return one_spec(broadcast_shapes(op, shapes), dtype, dev);
}
}  // namespace

MetaFn broadcast(const char* op, ResultKind kind) {
  return [op, kind](const std::vector<Tensor>& in, const Attrs&) {
    ScalarType t = result_type(in);
    if (kind == ResultKind::Float) t = to_float_dtype(t);
    if (kind == ResultKind::Bool) t = kBool;
    return broadcast_with(in, t, op);
  };
}

std::vector<TensorSpec> inplace_of(const char* op, const std::vector<Tensor>& in,
                                   ScalarType result) {
  std::vector<SymShape> shapes;
  for (const auto& t : in)
    if (t.defined()) shapes.push_back(t.sym_sizes());
  SymShape b = broadcast_shapes(op, shapes);
  KILN_CHECK(SymIntArrayRef(b) == in[0].sym_sizes(), op, ": output with shape ", in[0].sym_sizes(),
             " doesn't match the broadcast shape ", SymIntArrayRef(b));
  ScalarType self = in[0].dtype();
  // PyTorch's canCast: only a cast to a lower category (float -> int, int -> bool) is refused.
  auto category = [](ScalarType t) { return is_floating_point(t) ? 2 : t == kBool ? 0 : 1; };
  bool ok = category(result) <= category(self);
  KILN_CHECK(ok, op, ": result type ", result, " can't be cast to the desired output type ", self);
  TensorSpec s = spec(in[0].sym_sizes(), self, in[0].device());
  s.inplace_of = 0;
  return {s};
}

}  // namespace kiln::meta

#include "kiln/ops/nn/attention_kernels.h"

#include <cmath>

#include "kiln/ops/nn/attention_util.h"
#include "kiln/ops/ops.h"

namespace kiln::attention {

int64_t size_of(const Tensor& t, int64_t d) { return t.sym_size(d).guard_int(); }

ScalarType compute_dtype(const Tensor& t) { return t.dtype() == kFloat64 ? kFloat64 : kFloat32; }

Tensor with_dense_rows(const Tensor& t) {
  if (t.dtype() == compute_dtype(t) && (t.stride(-1) == 1 || size_of(t, -1) <= 1)) return t;
  return nn_util::as_compute(t);
}

Tensor compute_buffer(const Tensor& out) {
  if (out.dtype() == compute_dtype(out) && (out.dim() == 0 || out.stride(-1) == 1)) return out;
  return empty(out.sym_sizes(), TensorOptions(compute_dtype(out)));
}

Operands::Operands(const Tensor& query, const Tensor& key, const Tensor& value,
                   const Tensor& attn_mask, const Attrs& a)
    : q(with_dense_rows(query)),
      k(with_dense_rows(key)),
      v(with_dense_rows(value)),
      q_len(size_of(query, -2)),
      kv_len(size_of(key, -2)),
      head_dim(size_of(query, -1)),
      value_dim(size_of(value, -1)),
      scale(resolve_scale(query, a)),
      causal(a.b(0)) {
  if (query.dim() >= 3) {
    heads = size_of(query, -3);
    kv_heads = size_of(key, -3);
  }
  int64_t rows = 1;
  for (int64_t d = 0; d < query.dim() - 2; ++d) rows *= size_of(query, d);
  batch = heads == 0 ? 0 : rows / heads;
  if (attn_mask.defined()) {
    const Tensor additive = attn_mask.dtype() == kBool
                                ? full(attn_mask.sym_sizes(), -INFINITY, TensorOptions(q.dtype()))
                                      .masked_fill(attn_mask, 0)
                                : nn_util::as_compute(attn_mask);
    std::vector<int64_t> shape = nn_util::concrete_sizes(query);
    shape.back() = kv_len;
    mask = additive.expand(shape);
  }
}

}  // namespace kiln::attention

#include "kiln/ops/nn/attention_kernels.h"

#include <cmath>

#include "kiln/backend/cpu/amx.h"
#include "kiln/backend/cpu/flash_attention_amx.h"
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

namespace {

Tensor dense_rows(const Tensor& t, bool keep_dtype) {
  if (!keep_dtype) return with_dense_rows(t);
  return t.stride(-1) == 1 || size_of(t, -1) <= 1 ? t : t.contiguous();
}

bool is_bfloat16(const Tensor& t) { return t.defined() && t.dtype() == kBFloat16; }

}  // namespace

cpu::Rows<const uint16_t> bfloat16_rows(const Tensor& t) {
  const cpu::Rows<const BFloat16> r = rows_of<const BFloat16>(t);
  return {reinterpret_cast<const uint16_t*>(r.data), r.offset, r.row_stride};
}

Operands::Operands(const Tensor& query, const Tensor& key, const Tensor& value,
                   const Tensor& attn_mask, const Attrs& a, bool keep_dtype)
    : q(dense_rows(query, keep_dtype)),
      k(dense_rows(key, keep_dtype)),
      v(dense_rows(value, keep_dtype)),
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
    const Tensor additive = attn_mask.dtype() == kBool ? full(attn_mask.sym_sizes(), -INFINITY,
                                                              TensorOptions(compute_dtype(query)))
                                                             .masked_fill(attn_mask, 0)
                                                       : nn_util::as_compute(attn_mask);
    std::vector<int64_t> shape = nn_util::concrete_sizes(query);
    shape.back() = kv_len;
    mask = additive.expand(shape);
  }
}

bool flash_forward_bfloat16(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            const Attrs& a, std::vector<Tensor>& out) {
  if (!is_bfloat16(q) || !is_bfloat16(k) || !is_bfloat16(v) || !cpu::amx_bf16_available())
    return false;
  const Operands o(q, k, v, mask, a, /*keep_dtype=*/true);
  const Tensor result = compute_buffer(out[0]);
  if (!cpu::flash_attention_forward_bf16(o.shape<float>(), bfloat16_rows(o.q), bfloat16_rows(o.k),
                                         bfloat16_rows(o.v), rows_of<float>(result),
                                         out[1].data_ptr<float>()))
    return false;
  nn_util::store(out[0], result);
  return true;
}

bool flash_backward_bfloat16(const std::vector<Tensor>& in, const Tensor& mask, const Attrs& a,
                             bool mask_grad, std::vector<Tensor>& out) {
  const Tensor &grad_out = in[0], &grad_lse = in[1], &q = in[2], &k = in[3], &v = in[4],
               &output = in[5], &lse = in[6];
  if (mask_grad || !is_bfloat16(q) || !is_bfloat16(k) || !is_bfloat16(v) ||
      !is_bfloat16(grad_out) || !is_bfloat16(output) || lse.dtype() != kFloat32 ||
      (grad_lse.defined() && grad_lse.dtype() != kFloat32) || !cpu::amx_bf16_available())
    return false;
  const Operands o(q, k, v, mask, a, /*keep_dtype=*/true);
  const Tensor go = dense_rows(grad_out, true), result = dense_rows(output, true);
  const Tensor lse_dense = lse.contiguous();
  const Tensor grad_lse_dense = grad_lse.defined() ? grad_lse.contiguous() : Tensor();
  std::vector<Tensor> buffers;
  for (size_t i = 0; i < 3; ++i) buffers.push_back(compute_buffer(out[i]));
  if (!cpu::flash_attention_backward_bf16(
          o.shape<float>(), bfloat16_rows(o.q), bfloat16_rows(o.k), bfloat16_rows(o.v),
          bfloat16_rows(go), bfloat16_rows(result), lse_dense.data_ptr<float>(),
          grad_lse_dense.defined() ? grad_lse_dense.data_ptr<float>() : nullptr,
          rows_of<float>(buffers[0]), rows_of<float>(buffers[1]), rows_of<float>(buffers[2])))
    return false;
  for (size_t i = 0; i < 3; ++i) nn_util::store(out[i], buffers[i]);
  return true;
}

}  // namespace kiln::attention

#pragma once
// The flash kernels (kiln/backend/cpu/flash_attention.h) behind registry entries: the inputs as
// the kernel reads them (dense rows in the compute dtype, the mask as additive values expanded
// without a copy), and one forward and one backward driver shared by sdpa's flash backend and
// flex_attention, which adds its tile modification (`make_mod`, called with the compute type's
// tag, returns a std::unique_ptr<cpu::TileMod<T>> or nullptr).
#include <memory>
#include <vector>

#include "kiln/backend/cpu/flash_attention.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/registry.h"

namespace kiln::attention {

int64_t size_of(const Tensor& t, int64_t d);
// float64 stays, other floating dtypes compute in float32.
ScalarType compute_dtype(const Tensor& t);
// t itself where it is in the compute dtype with a dense last dim, else a dense copy.
Tensor with_dense_rows(const Tensor& t);
// A result computed into `out` directly where it is in the compute dtype, else into a buffer.
Tensor compute_buffer(const Tensor& out);

// The rows of t (of T, dense last dim): one offset per index of its leading dims, flattened.
template <class T>
cpu::Rows<T> rows_of(const Tensor& t) {
  cpu::Rows<T> r;
  r.data = t.data_ptr<std::remove_const_t<T>>();
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  const int64_t lead = static_cast<int64_t>(sizes.size()) - 2;
  r.row_stride = lead >= 0 ? strides[lead] : 0;
  int64_t count = 1;
  for (int64_t d = 0; d < lead; ++d) count *= sizes[d];
  r.offset.assign(count, 0);
  for (int64_t n = 0; n < count; ++n)
    for (int64_t d = lead - 1, rest = n; d >= 0; --d) {
      r.offset[n] += rest % sizes[d] * strides[d];
      rest /= sizes[d];
    }
  return r;
}

// The rows of a bfloat16 tensor with a dense last dim, as raw bits (the AMX kernels' operands).
cpu::Rows<const uint16_t> bfloat16_rows(const Tensor& t);

// The kernel's view of query, key, value and mask, with attrs (is_causal, scale?, enable_gqa).
// q, k and v are in the compute dtype, or with `keep_dtype` in their own (dense rows either way);
// the mask is additive, in the compute dtype.
struct Operands {
  Tensor q, k, v, mask;
  int64_t batch = 1, heads = 1, kv_heads = 1, q_len, kv_len, head_dim, value_dim;
  double scale;
  bool causal;

  Operands(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
           const Attrs& a, bool keep_dtype = false);

  // The problem with q, k and v in T.
  template <class T>
  cpu::FlashAttention<T> problem() const {
    cpu::FlashAttention<T> p = shape<T>();
    p.q = rows_of<const T>(q);
    p.k = rows_of<const T>(k);
    p.v = rows_of<const T>(v);
    return p;
  }
  // The problem without q, k and v (the bfloat16 kernels take them apart).
  template <class T>
  cpu::FlashAttention<T> shape() const {
    cpu::FlashAttention<T> p;
    p.batch = batch;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.q_len = q_len;
    p.kv_len = kv_len;
    p.head_dim = head_dim;
    p.value_dim = value_dim;
    p.scale = static_cast<T>(scale);
    p.causal = causal;
    if (mask.defined()) {
      p.mask = rows_of<const T>(mask);
      p.mask_col_stride = mask.stride(-1);
    }
    return p;
  }
};

// sdpa's flash forward for bfloat16 query, key and value on AMX (flash_attention_amx.h); false,
// having done nothing, where that does not apply (other dtypes, no AMX).
bool flash_forward_bfloat16(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            const Attrs& a, std::vector<Tensor>& out);

// Its backward likewise: in and out as flash_backward's; false where that does not apply (also
// when the mask's gradient is wanted).
bool flash_backward_bfloat16(const std::vector<Tensor>& in, const Tensor& mask, const Attrs& a,
                             bool mask_grad, std::vector<Tensor>& out);

inline constexpr auto no_mod = [](auto tag) {
  return std::unique_ptr<cpu::TileMod<decltype(tag)>>();
};

// out = {output, logsumexp}.
template <class MakeMod>
void flash_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                   const Attrs& a, std::vector<Tensor>& out, const char* op,
                   const MakeMod& make_mod) {
  const Operands o(q, k, v, mask, a);
  nn_util::visit_compute(q.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const auto mod = make_mod(tag);
    cpu::FlashAttention<T> p = o.problem<T>();
    p.mod = mod.get();
    const Tensor result = compute_buffer(out[0]);
    cpu::flash_attention_forward(p, rows_of<T>(result), out[1].data_ptr<T>());
    nn_util::store(out[0], result);
  });
}

// in = {grad_out, grad_logsumexp?, query, key, value, output, logsumexp, ...}; out = {grad_query,
// grad_key, grad_value[, grad_scores when mask_grad], ...}.
template <class MakeMod>
void flash_backward(const std::vector<Tensor>& in, const Tensor& mask, const Attrs& a,
                    bool mask_grad, std::vector<Tensor>& out, const char* op,
                    const MakeMod& make_mod) {
  const Operands o(in[2], in[3], in[4], mask, a);
  const Tensor grad_out = with_dense_rows(in[0]), result = with_dense_rows(in[5]);
  const Tensor lse = nn_util::as_compute(in[6]);
  const Tensor grad_lse = in[1].defined() ? nn_util::as_compute(in[1]) : Tensor();
  nn_util::visit_compute(in[2].dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const auto mod = make_mod(tag);
    cpu::FlashAttention<T> p = o.problem<T>();
    p.mod = mod.get();
    std::vector<Tensor> buffers;
    const size_t count = mask_grad ? 4 : 3;  // outputs after these are the caller's
    for (size_t i = 0; i < count; ++i) buffers.push_back(compute_buffer(out[i]));
    const cpu::FlashGradients<T> g{
        rows_of<const T>(grad_out), grad_lse.defined() ? grad_lse.data_ptr<T>() : nullptr,
        rows_of<T>(buffers[0]),     rows_of<T>(buffers[1]),
        rows_of<T>(buffers[2]),     mask_grad ? buffers[3].data_ptr<T>() : nullptr};
    cpu::flash_attention_backward(p, rows_of<const T>(result), lse.data_ptr<T>(), g);
    for (size_t i = 0; i < count; ++i) nn_util::store(out[i], buffers[i]);
  });
}

}  // namespace kiln::attention

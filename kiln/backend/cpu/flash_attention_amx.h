#pragma once
// The flash attention forward and backward of flash_attention.h for bfloat16 inputs on AMX
// (amx.h): the products multiply bfloat16 tiles into float32, the scores, the softmax and the
// gradients' sums stay float32, and the probabilities (and their gradients, dS) are rounded to
// bfloat16 for the products that read them.
#include <cstdint>

#include "kiln/backend/cpu/flash_attention.h"

namespace kiln::cpu {

// The forward of flash_attention_forward<float> (same tiles, causal alignment, mask, GQA, lse
// and fully masked rows) with q, k and v as bfloat16 bits; shape_only gives everything but the
// operands (its q, k and v are unused). Returns false, having done nothing, when AMX is not
// available (amx_bf16_available()) or shape_only.mod is set: the caller then runs the float path.
bool flash_attention_forward_bf16(const FlashAttention<float>& shape_only,
                                  const Rows<const uint16_t>& q, const Rows<const uint16_t>& k,
                                  const Rows<const uint16_t>& v, const Rows<float>& out,
                                  float* lse);

// The gradients of flash_attention_forward_bf16's problem as flash_attention_backward<float>
// computes them (P recomputed from lse, dS = P (dP - delta), causal blocks above the diagonal
// skipped, parallel over key/value heads without atomics), with q, k, v, grad_out and out as
// bfloat16 bits, lse and grad_lse (or null) dense [rows, q_len] floats, and float gradients.
// Returns false, having done nothing, when AMX is not available or shape_only.mod is set: the
// caller then runs the float path (as it does when it needs grad_scores, which this lacks).
bool flash_attention_backward_bf16(const FlashAttention<float>& shape_only,
                                   const Rows<const uint16_t>& q, const Rows<const uint16_t>& k,
                                   const Rows<const uint16_t>& v,
                                   const Rows<const uint16_t>& grad_out,
                                   const Rows<const uint16_t>& out, const float* lse,
                                   const float* grad_lse, const Rows<float>& grad_q,
                                   const Rows<float>& grad_k, const Rows<float>& grad_v);

}  // namespace kiln::cpu

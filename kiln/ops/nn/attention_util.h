#pragma once
// What the scaled-dot-product attention ops share: their input checks, scale and grouped-query
// helpers, and the float64 reference they are tested against. Attributes of every attention
// entry: is_causal, scale?, enable_gqa.
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::attention {

double resolve_scale(const Tensor& q, const Attrs& a);

// Checks query, key, value and mask as PyTorch's scaled_dot_product_attention does, naming `op`;
// returns the attention weights' shape [..., L, S].
SymShape check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& mask, const Attrs& a);

// The output's shape [..., L, Ev].
SymShape output_shape(const Tensor& q, const Tensor& v);

// The math backend's kernel (scaled_dot_product_attention: inputs q, k, v, attn_mask?,
// dropout_noise?; outputs out, weights). It is written with Kiln ops, so a device backend can
// register it as its own kernel.
void math_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a);

// Closed-form float64 attention over naive loops (the dropout noise multiplies the weights):
// the output, the weights and each row's log-sum-exp (-inf for a row that sees no key).
struct Reference {
  Tensor out, probs, lse;
};
Reference reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    const Tensor& noise, const Attrs& a);

// The float64 gradients of out and lse (grad_lse may be undefined): of q, k, v, and of the scores
// (shaped as the weights; a float mask's gradient before reduction to its shape).
struct ReferenceGradients {
  Tensor q, k, v, scores;
};
ReferenceGradients reference_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& mask, const Tensor& grad_out,
                                      const Tensor& grad_lse, const Attrs& a);

}  // namespace kiln::attention

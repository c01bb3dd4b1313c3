#pragma once
// nn::utils: gradient clipping and flattening parameters into one vector.
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::nn::utils {

// Scales all gradients so their joint norm is at most max_norm; returns the norm before
// clipping. norm_type may be infinity. Reading the norm is a synchronisation (a graph break in a
// compiled function); get_total_norm and clip_grads_with_norm_ are its two halves without one.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
// The joint norm of `tensors` as a 0-dim tensor of the first one's dtype (0 when there are
// none), as PyTorch's get_total_norm. error_if_nonfinite reads the norm.
Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0,
                      bool error_if_nonfinite = false);
// Multiplies every gradient by min(1, max_norm / (total_norm + 1e-6)) without reading total_norm.
void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm,
                           const Tensor& total_norm);
// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace kiln::nn::utils

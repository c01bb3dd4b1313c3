#pragma once
// nn::utils: gradient clipping and flattening parameters into one vector.
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::nn::utils {

// Scales all gradients so their joint norm is at most max_norm; returns the norm before
// clipping. norm_type may be infinity.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
// Clamps every gradient element into [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace kiln::nn::utils

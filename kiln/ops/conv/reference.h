#pragma once
// Op-table samples and float64 references (direct loops, independent of the kernels) of the
// convolution entries.
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::conv {

std::vector<OpSample> convolution_samples(ScalarType dtype);
std::vector<Tensor> convolution_reference(const std::vector<Tensor>& in, const Attrs& a);
std::vector<OpSample> weight_grad_samples(ScalarType dtype);
std::vector<Tensor> weight_grad_reference(const std::vector<Tensor>& in, const Attrs& a);

}  // namespace kiln::conv

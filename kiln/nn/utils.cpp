#include "kiln/nn/utils.h"

#include <cmath>
#include <limits>

#include "kiln/autograd/grad_mode.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0;
  double total = 0;
  const bool inf = std::isinf(norm_type);
  for (const Tensor& g : grads) {
    const double n = norm(g.to(kFloat64), norm_type).item<double>();
    total = inf ? std::max(total, n) : total + std::pow(n, norm_type);
  }
  if (!inf) total = std::pow(total, 1 / norm_type);
  KILN_CHECK(!error_if_nonfinite || std::isfinite(total),
             "clip_grad_norm_: the total norm of "
             "order ",
             norm_type, " for gradients from `parameters` is non-finite (", total,
             "), so it cannot be clipped");
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1)
    for (const Tensor& g : grads) g.detach().mul_(coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters)
    if (p.grad().defined()) p.grad().detach().copy_(p.grad().clamp(-clip_value, clip_value));
}

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parameters) flat.push_back(p.reshape({-1}));
  return cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.sym_numel().guard_int();
  KILN_CHECK(vec.dim() == 1 && vec.sym_numel().guard_int() == total,
             "vector_to_parameters: expected a vector of ", total, " elements, got shape ",
             vec.sym_sizes());
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    const int64_t n = p.sym_numel().guard_int();
    p.detach().copy_(vec.slice(0, offset, offset + n).view(p.sym_sizes()));
    offset += n;
  }
}

}  // namespace kiln::nn::utils

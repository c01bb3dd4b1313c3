#include "kiln/nn/utils.h"

#include <cmath>
#include <limits>

#include "kiln/autograd/grad_mode.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::utils {

namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

// In float64 whatever the tensors' dtype, so that the norm of many float32 values keeps its
// digits. Callers make sure `tensors` is not empty.
Tensor total_norm_f64(const std::vector<Tensor>& tensors, double norm_type) {
  std::vector<Tensor> norms;
  for (const Tensor& t : tensors) norms.push_back(norm(t.detach().to(kFloat64), norm_type));
  return norm(stack(norms), norm_type);
}

void check_finite(double total, double norm_type) {
  KILN_CHECK(std::isfinite(total), "clip_grad_norm_: the total norm of order ", norm_type,
             " for gradients from `parameters` is non-finite (", total,
             "), so it cannot be clipped");
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return 0;
  const double total = total_norm_f64(grads, norm_type).item<double>();
  if (error_if_nonfinite) check_finite(total, norm_type);
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1)
    for (const Tensor& g : grads) g.detach().mul_(coef);
  return total;
}

Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type,
                      bool error_if_nonfinite) {
  NoGradGuard no_grad;
  if (tensors.empty()) return zeros({});
  const Tensor total = total_norm_f64(tensors, norm_type).to(tensors[0].dtype());
  if (error_if_nonfinite) check_finite(total.item<double>(), norm_type);
  return total;
}

void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm,
                           const Tensor& total_norm) {
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return;
  const Tensor coef = (max_norm / (total_norm.detach().to(kFloat64) + 1e-6)).clamp_max(1.0);
  for (const Tensor& g : grads) g.detach().mul_(coef.to(g.dtype()));
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

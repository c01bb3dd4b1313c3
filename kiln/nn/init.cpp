#include "kiln/nn/init.h"

#include <cmath>
#include <vector>

#include "kiln/autograd/grad_mode.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::init {
namespace {

int64_t fan(const Tensor& tensor, FanMode mode) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
  return mode == FanMode::FanIn ? fan_in : fan_out;
}

double kaiming_std(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  const int64_t f = fan(tensor, mode);
  KILN_CHECK(f > 0, "kaiming init: cannot initialise a tensor of shape ", tensor.sym_sizes(),
             " (its fan is zero)");
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(f));
}

double xavier_std(const Tensor& tensor, double gain) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
  return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}

// Orthonormalises the columns of the row-major rows x cols matrix `m` (rows >= cols) in place
// with modified Gram-Schmidt: the Q of the QR decomposition whose R has a positive diagonal.
void orthonormalise_columns(std::vector<double>& m, int64_t rows, int64_t cols) {
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double d = 0;
      for (int64_t i = 0; i < rows; ++i) d += m[i * cols + k] * m[i * cols + j];
      for (int64_t i = 0; i < rows; ++i) m[i * cols + j] -= d * m[i * cols + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += m[i * cols + j] * m[i * cols + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < rows; ++i) m[i * cols + j] /= norm;
  }
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::Tanh:
      return 5.0 / 3.0;
    case Nonlinearity::ReLU:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU:
      return std::sqrt(2.0 / (1 + param * param));
    case Nonlinearity::SELU:
      return 3.0 / 4.0;
    default:  // linear, convolutions, sigmoid
      return 1.0;
  }
}

std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
  KILN_CHECK(tensor.dim() >= 2,
             "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
             "(got shape ",
             tensor.sym_sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.sym_size(d).guard_int();
  return {tensor.sym_size(1).guard_int() * receptive, tensor.sym_size(0).guard_int() * receptive};
}

Tensor uniform_(Tensor tensor, double low, double high) {
  NoGradGuard no_grad;
  return tensor.uniform_(low, high);
}

Tensor normal_(Tensor tensor, double mean, double std) {
  NoGradGuard no_grad;
  return tensor.normal_(mean, std);
}

Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b) {
  NoGradGuard no_grad;
  auto cdf = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  Tensor u =
      kiln::empty(tensor.sym_sizes(), TensorOptions(kFloat64)).uniform_(2 * lo - 1, 2 * hi - 1);
  Tensor x = (u.erfinv() * (std * std::sqrt(2.0)) + mean).clamp(Scalar(a), Scalar(b));
  return tensor.copy_(x);
}

Tensor constant_(Tensor tensor, const Scalar& value) {
  NoGradGuard no_grad;
  return tensor.fill_(value);
}

Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0); }
Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1); }

Tensor eye_(Tensor matrix) {
  KILN_CHECK(matrix.dim() == 2, "eye_: only 2-D tensors are supported, got shape ",
             matrix.sym_sizes());
  NoGradGuard no_grad;
  return matrix.copy_(eye(matrix.sym_size(0).guard_int(), matrix.sym_size(1).guard_int(),
                          TensorOptions(matrix.dtype())));
}

Tensor dirac_(Tensor tensor, int64_t groups) {
  const int64_t dims = tensor.dim();
  KILN_CHECK(dims >= 3 && dims <= 5, "dirac_: only 3, 4 or 5-D tensors are supported, got shape ",
             tensor.sym_sizes());
  const int64_t out_per_group = tensor.sym_size(0).guard_int() / groups;
  KILN_CHECK(tensor.sym_size(0).guard_int() % groups == 0, "dirac_: dim 0 (",
             tensor.sym_size(0).guard_int(), ") must be divisible by groups (", groups, ")");
  NoGradGuard no_grad;
  tensor.zero_();
  const int64_t n = std::min(out_per_group, tensor.sym_size(1).guard_int());
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t d = 0; d < n; ++d) {
      Tensor w = tensor.select(0, g * out_per_group + d).select(0, d);
      while (w.dim() > 0) w = w.select(0, w.sym_size(0).guard_int() / 2);
      w.fill_(1);
    }
  }
  return tensor;
}

Tensor xavier_uniform_(Tensor tensor, double gain) {
  const double bound = std::sqrt(3.0) * xavier_std(tensor, gain);
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor xavier_normal_(Tensor tensor, double gain) {
  const double std = xavier_std(tensor, gain);
  return normal_(std::move(tensor), 0, std);
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  const double bound = std::sqrt(3.0) * kaiming_std(tensor, a, mode, nonlinearity);
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanMode mode, Nonlinearity nonlinearity) {
  const double std = kaiming_std(tensor, a, mode, nonlinearity);
  return normal_(std::move(tensor), 0, std);
}

Tensor orthogonal_(Tensor tensor, double gain) {
  KILN_CHECK(tensor.dim() >= 2,
             "orthogonal_: only tensors with 2 or more dimensions are "
             "supported, got shape ",
             tensor.sym_sizes());
  NoGradGuard no_grad;
  const int64_t rows = tensor.sym_size(0).guard_int();
  const int64_t cols = tensor.sym_numel().guard_int() / std::max<int64_t>(rows, 1);
  if (rows == 0 || cols == 0) return tensor;
  // Work on the tall orientation, then transpose back.
  const bool wide = rows < cols;
  const int64_t r = wide ? cols : rows, c = wide ? rows : cols;
  Tensor gauss = kiln::empty({r, c}, TensorOptions(kFloat64)).normal_(0, 1);
  std::vector<double> m(gauss.data_ptr<double>(), gauss.data_ptr<double>() + r * c);
  orthonormalise_columns(m, r, c);
  Tensor q = kiln::tensor(m, TensorOptions(kFloat64)).view({r, c});
  if (wide) q = q.t();
  return tensor.copy_((q * gain).reshape(tensor.sym_sizes()));
}

}  // namespace kiln::nn::init

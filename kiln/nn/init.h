#pragma once
// nn::init: in-place initialisers with PyTorch's names, fan computation and gains. They run
// without recording autograd history and return the tensor they filled.
#include <cstdint>
#include <tuple>

#include "kiln/core/scalar.h"
#include "kiln/core/tensor.h"
#include "kiln/nn/options/modes.h"

namespace kiln {

enum class FanMode { FanIn, FanOut };
inline constexpr FanMode kFanIn = FanMode::FanIn;
inline constexpr FanMode kFanOut = FanMode::FanOut;

}  // namespace kiln

namespace kiln::nn::init {

// The recommended gain for a nonlinearity (param is LeakyReLU's negative slope).
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
// (fan_in, fan_out) of a weight: dims 1 and 0 times the receptive field (dims 2...).
std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
// Normal(mean, std) restricted to [a, b] (inverse-CDF sampling, as PyTorch).
Tensor trunc_normal_(Tensor tensor, double mean = 0, double std = 1, double a = -2, double b = 2);
Tensor constant_(Tensor tensor, const Scalar& value);
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);
Tensor eye_(Tensor matrix);
Tensor dirac_(Tensor tensor, int64_t groups = 1);
Tensor xavier_uniform_(Tensor tensor, double gain = 1);
Tensor xavier_normal_(Tensor tensor, double gain = 1);
Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanMode mode = kFanIn,
                        Nonlinearity nonlinearity = kLeakyReLU);
Tensor kaiming_normal_(Tensor tensor, double a = 0, FanMode mode = kFanIn,
                       Nonlinearity nonlinearity = kLeakyReLU);
// A (semi-)orthogonal matrix from the QR decomposition of a Gaussian matrix, times gain.
Tensor orthogonal_(Tensor tensor, double gain = 1);

}  // namespace kiln::nn::init

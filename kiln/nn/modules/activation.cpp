#include "kiln/nn/modules/activation.h"

#include <ostream>

#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

Tensor selu_fn(const Tensor& x) { return selu(x); }
Tensor silu_fn(const Tensor& x) { return silu(x); }
Tensor mish_fn(const Tensor& x) { return mish(x); }
Tensor tanh_fn(const Tensor& x) { return x.tanh(); }
Tensor sigmoid_fn(const Tensor& x) { return x.sigmoid(); }
Tensor hardsigmoid_fn(const Tensor& x) { return hardsigmoid(x); }
Tensor hardswish_fn(const Tensor& x) { return hardswish(x); }
Tensor logsigmoid_fn(const Tensor& x) { return logsigmoid(x); }
Tensor relu6_fn(const Tensor& x) { return relu6(x); }

std::string_view bool_text(bool b) { return b ? "true" : "false"; }

}  // namespace

#define KILN_DEFINE_ACTIVATION(Name, fn)                                      \
  Tensor Name##Impl::forward(const Tensor& input) const { return fn(input); } \
  void Name##Impl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::" #Name "()"; }
KILN_DEFINE_ACTIVATION(SELU, selu_fn)
KILN_DEFINE_ACTIVATION(SiLU, silu_fn)
KILN_DEFINE_ACTIVATION(Mish, mish_fn)
KILN_DEFINE_ACTIVATION(Tanh, tanh_fn)
KILN_DEFINE_ACTIVATION(Sigmoid, sigmoid_fn)
KILN_DEFINE_ACTIVATION(Hardsigmoid, hardsigmoid_fn)
KILN_DEFINE_ACTIVATION(Hardswish, hardswish_fn)
KILN_DEFINE_ACTIVATION(LogSigmoid, logsigmoid_fn)
KILN_DEFINE_ACTIVATION(ReLU6, relu6_fn)
#undef KILN_DEFINE_ACTIVATION

Tensor ReLUImpl::forward(Tensor input) const {
  return options.inplace() ? relu_(input) : input.relu();
}
void ReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::ReLU(" << (options.inplace() ? "inplace=true" : "") << ")";
}

Tensor LeakyReLUImpl::forward(Tensor input) const {
  return options.inplace() ? leaky_relu_(input, options.negative_slope())
                           : leaky_relu(input, options.negative_slope());
}
void LeakyReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LeakyReLU(negative_slope=" << options.negative_slope()
         << ", inplace=" << bool_text(options.inplace()) << ")";
}

Tensor ELUImpl::forward(Tensor input) const {
  return options.inplace() ? elu_(input, options.alpha()) : elu(input, options.alpha());
}
void ELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::ELU(alpha=" << options.alpha()
         << ", inplace=" << bool_text(options.inplace()) << ")";
}

Tensor GELUImpl::forward(const Tensor& input) const { return gelu(input, options.approximate()); }
void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::GELU(approximate='" << options.approximate() << "')";
}

Tensor SoftplusImpl::forward(const Tensor& input) const {
  return softplus(input, options.beta(), options.threshold());
}
void SoftplusImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold()
         << ")";
}

Tensor HardtanhImpl::forward(Tensor input) const {
  return options.inplace() ? hardtanh_(input, options.min_val(), options.max_val())
                           : hardtanh(input, options.min_val(), options.max_val());
}
void HardtanhImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
         << ")";
}

Tensor SoftmaxImpl::forward(const Tensor& input) const { return input.softmax(options.dim()); }
void SoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Softmax(dim=" << options.dim() << ")";
}

Tensor LogSoftmaxImpl::forward(const Tensor& input) const {
  return input.log_softmax(options.dim());
}
void LogSoftmaxImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LogSoftmax(dim=" << options.dim() << ")";
}

}  // namespace kiln::nn

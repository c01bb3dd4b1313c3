#include "kiln/nn/modules/activation.h"

#include <ostream>

#include "kiln/autograd/grad_mode.h"
#include "kiln/nn/functional/activation.h"
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
Tensor softsign_fn(const Tensor& x) { return functional::softsign(x); }
Tensor tanhshrink_fn(const Tensor& x) { return functional::tanhshrink(x); }

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
KILN_DEFINE_ACTIVATION(Softsign, softsign_fn)
KILN_DEFINE_ACTIVATION(Tanhshrink, tanhshrink_fn)
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

Tensor CELUImpl::forward(const Tensor& input) const {
  return functional::celu(
      input, functional::CELUFuncOptions().alpha(options.alpha()).inplace(options.inplace()));
}
void CELUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::CELU(alpha=" << options.alpha()
         << ", inplace=" << bool_text(options.inplace()) << ")";
}

Tensor SoftshrinkImpl::forward(const Tensor& input) const {
  return functional::softshrink(input, options.lambda());
}
void SoftshrinkImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Softshrink(" << options.lambda() << ")";
}
Tensor HardshrinkImpl::forward(const Tensor& input) const {
  return functional::hardshrink(input, options.lambda());
}
void HardshrinkImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Hardshrink(" << options.lambda() << ")";
}

Tensor ThresholdImpl::forward(const Tensor& input) const {
  return functional::threshold(
      input, functional::ThresholdFuncOptions(options.threshold(), options.value())
                 .inplace(options.inplace()));
}
void ThresholdImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Threshold(threshold=" << options.threshold() << ", value=" << options.value()
         << ", inplace=" << bool_text(options.inplace()) << ")";
}

Tensor SoftminImpl::forward(const Tensor& input) const {
  return functional::softmin(input, options.dim());
}
void SoftminImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Softmin(dim=" << options.dim() << ")";
}

PReLUImpl::PReLUImpl(const PReLUOptions& options_) : options(options_) {
  KILN_CHECK(options.num_parameters() >= 1, "PReLU: num_parameters must be positive, got ",
             options.num_parameters());
  weight = register_parameter("weight", kiln::empty({options.num_parameters()}));
  reset();
}
void PReLUImpl::reset() {
  NoGradGuard no_grad;
  weight.fill_(options.init());
}
Tensor PReLUImpl::forward(const Tensor& input) const { return prelu(input, weight); }
void PReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PReLU(num_parameters=" << options.num_parameters() << ")";
}

Tensor GLUImpl::forward(const Tensor& input) const { return glu(input, options.dim()); }
void GLUImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::GLU(dim=" << options.dim() << ")";
}

Tensor LocalResponseNormImpl::forward(const Tensor& input) const {
  return local_response_norm(input, options.size(), options.alpha(), options.beta(), options.k());
}
void LocalResponseNormImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha()
         << ", beta=" << options.beta() << ", k=" << options.k() << ")";
}

}  // namespace kiln::nn

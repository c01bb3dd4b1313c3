#include "kiln/nn/modules/linear.h"

#include <cmath>
#include <ostream>

#include "kiln/nn/init.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

// PyTorch's default for Linear-like weights: kaiming_uniform_(a = sqrt(5)) on the weight, which
// is U(+-1/sqrt(fan_in)), and the same bound for the bias.
void init_like_linear(Tensor& weight, Tensor& bias, int64_t fan_in) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace

void IdentityImpl::pretty_print(std::ostream& stream) const { stream << "kiln::nn::Identity()"; }

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  KILN_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
             "Linear: in_features and out_features must be non-negative, got ",
             options.in_features(), " and ", options.out_features());
  weight =
      register_parameter("weight", kiln::empty({options.out_features(), options.in_features()}));
  if (options.bias()) bias = register_parameter("bias", kiln::empty({options.out_features()}));
  reset_parameters();
}

void LinearImpl::reset_parameters() { init_like_linear(weight, bias, options.in_features()); }

Tensor LinearImpl::forward(const Tensor& input) const {
  run_forward_pre_hooks(input);
  if (const auto* f = call_override<Tensor(const Tensor&)>()) return (*f)(input);
  return linear(input, weight, bias);
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias() << ")";
}

BilinearImpl::BilinearImpl(const BilinearOptions& options_) : options(options_) {
  weight = register_parameter("weight", kiln::empty({options.out_features(), options.in1_features(),
                                                     options.in2_features()}));
  if (options.bias()) bias = register_parameter("bias", kiln::empty({options.out_features()}));
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options.in1_features()));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) const {
  return bilinear(input1, input2, weight, bias);
}

void BilinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "kiln::nn::Bilinear(in1_features=" << options.in1_features()
         << ", in2_features=" << options.in2_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias() << ")";
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias) {
  KILN_CHECK(weight.dim() == 3, "bilinear: expected a 3-D weight [out, in1, in2], got shape ",
             weight.sym_sizes());
  KILN_CHECK(input1.dim() >= 1 && input1.sym_size(-1) == weight.sym_size(1) && input2.dim() >= 1 &&
                 input2.sym_size(-1) == weight.sym_size(2),
             "bilinear: input1 ", input1.sym_sizes(), " and input2 ", input2.sym_sizes(),
             " do not match the weight's in1/in2 features (weight ", weight.sym_sizes(), ")");
  const SymInt out = weight.sym_size(0), in2 = weight.sym_size(2);
  // (x1 @ W viewed [in1, out*in2]) gives x1^T W[o] per o; contracting with x2 finishes it.
  Tensor w = weight.permute({1, 0, 2}).reshape({weight.sym_size(1), out * in2});
  Tensor t = input1.matmul(w).unflatten(-1, {out, in2});
  Tensor y = (t * input2.unsqueeze(-2)).sum(IntArrayRef{-1});
  return bias.defined() ? y + bias : y;
}

Tensor FlattenImpl::forward(const Tensor& input) const {
  return input.flatten(options.start_dim(), options.end_dim());
}

void FlattenImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Flatten(start_dim=" << options.start_dim()
         << ", end_dim=" << options.end_dim() << ")";
}

Tensor UnflattenImpl::forward(const Tensor& input) const {
  return input.unflatten(options.dim(), SymIntList(options.sizes()));
}

void UnflattenImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::Unflatten(dim=" << options.dim() << ", unflattened_size={";
  for (size_t i = 0; i < options.sizes().size(); ++i)
    stream << (i ? ", " : "") << options.sizes()[i];
  stream << "})";
}

}  // namespace kiln::nn

#include "kiln/nn/modules/normalization.h"

#include <ostream>

#include "kiln/autograd/grad_mode.h"
#include "kiln/nn/init.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/ops.h"

namespace kiln::nn {
namespace {

void print_shape(std::ostream& stream, const std::vector<int64_t>& shape) {
  stream << "[";
  for (size_t i = 0; i < shape.size(); ++i) stream << (i ? ", " : "") << shape[i];
  stream << "]";
}

const char* bool_text(bool b) { return b ? "true" : "false"; }

void check_input_dims(const Tensor& input, int64_t lo, int64_t hi, const char* name) {
  KILN_CHECK(input.dim() >= lo && input.dim() <= hi, name, ": expected ", lo,
             lo == hi ? "" : (std::string(" or ") + std::to_string(hi)).c_str(), "-D input (got ",
             input.dim(), "-D input of shape ", input.sym_sizes(), ")");
}

}  // namespace

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", kiln::empty(options.normalized_shape()));
    if (options.bias()) bias = register_parameter("bias", kiln::empty(options.normalized_shape()));
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) const {
  return layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::LayerNorm(";
  print_shape(stream, options.normalized_shape());
  stream << ", eps=" << options.eps()
         << ", elementwise_affine=" << bool_text(options.elementwise_affine()) << ")";
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& options_) : options(options_) {
  if (options.elementwise_affine())
    weight = register_parameter("weight", kiln::empty(options.normalized_shape()));
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& input) const {
  return rms_norm(input, options.normalized_shape(), weight, options.eps());
}

void RMSNormImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::RMSNorm(";
  print_shape(stream, options.normalized_shape());
  if (options.eps()) stream << ", eps=" << *options.eps();
  stream << ", elementwise_affine=" << bool_text(options.elementwise_affine()) << ")";
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : options(options_) {
  KILN_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0,
             "GroupNorm: num_channels (", options.num_channels(),
             ") must be divisible by num_groups (", options.num_groups(), ")");
  if (options.affine()) {
    weight = register_parameter("weight", kiln::empty({options.num_channels()}));
    bias = register_parameter("bias", kiln::empty({options.num_channels()}));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) const {
  return group_norm(input, options.num_groups(), weight, bias, options.eps());
}

void GroupNormImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::GroupNorm(" << options.num_groups() << ", " << options.num_channels()
         << ", eps=" << options.eps() << ", affine=" << bool_text(options.affine()) << ")";
}

NormBase::NormBase(const BatchNormOptions& options_) : options(options_) {
  const int64_t n = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", kiln::empty({n}));
    bias = register_parameter("bias", kiln::empty({n}));
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({n}));
    running_var = register_buffer("running_var", ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, TensorOptions(kInt64)));
  }
  reset_parameters();
}

void NormBase::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void NormBase::reset_parameters() {
  reset_running_stats();
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

double NormBase::step_momentum() {
  if (!is_training() || !options.track_running_stats()) return options.momentum().value_or(0.0);
  NoGradGuard no_grad;
  num_batches_tracked.add_(1);
  if (options.momentum()) return *options.momentum();
  return 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
}

void NormBase::print_as(std::ostream& stream, const char* name) const {
  stream << "kiln::nn::" << name << "(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << bool_text(options.affine())
         << ", track_running_stats=" << bool_text(options.track_running_stats()) << ")";
}

#define KILN_DEFINE_BATCH_NORM(Name, lo, hi)                                                     \
  Name##Impl::Name##Impl(const BatchNormOptions& options_) : NormBase(options_) {}               \
  Tensor Name##Impl::forward(const Tensor& input) {                                              \
    check_input_dims(input, lo, hi, #Name);                                                      \
    const double momentum = step_momentum();                                                     \
    /* Without running statistics, eval mode also normalises with the batch's. */                \
    const bool use_batch_stats = is_training() || !options.track_running_stats();                \
    const bool update = is_training() && options.track_running_stats();                          \
    return batch_norm(input, weight, bias, use_batch_stats && !update ? Tensor() : running_mean, \
                      use_batch_stats && !update ? Tensor() : running_var, use_batch_stats,      \
                      momentum, options.eps());                                                  \
  }                                                                                              \
  void Name##Impl::pretty_print(std::ostream& stream) const { print_as(stream, #Name); }
KILN_DEFINE_BATCH_NORM(BatchNorm1d, 2, 3)
KILN_DEFINE_BATCH_NORM(BatchNorm2d, 4, 4)
KILN_DEFINE_BATCH_NORM(BatchNorm3d, 5, 5)
#undef KILN_DEFINE_BATCH_NORM

// Instance norm takes batched (N, C, ...) or unbatched (C, ...) inputs.
#define KILN_DEFINE_INSTANCE_NORM(Name, spatial)                                          \
  Name##Impl::Name##Impl(const BatchNormOptions& options_) : NormBase(options_) {}        \
  Tensor Name##Impl::forward(const Tensor& input) {                                       \
    check_input_dims(input, spatial + 1, spatial + 2, #Name);                             \
    const bool unbatched = input.dim() == spatial + 1;                                    \
    Tensor x = unbatched ? input.unsqueeze(0) : input;                                    \
    const double momentum = step_momentum();                                              \
    const bool use_input_stats = is_training() || !options.track_running_stats();         \
    Tensor y = instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, \
                             momentum, options.eps());                                    \
    return unbatched ? y.squeeze(IntArrayRef{0}) : y;                                     \
  }                                                                                       \
  void Name##Impl::pretty_print(std::ostream& stream) const { print_as(stream, #Name); }
KILN_DEFINE_INSTANCE_NORM(InstanceNorm1d, 1)
KILN_DEFINE_INSTANCE_NORM(InstanceNorm2d, 2)
KILN_DEFINE_INSTANCE_NORM(InstanceNorm3d, 3)
#undef KILN_DEFINE_INSTANCE_NORM

}  // namespace kiln::nn

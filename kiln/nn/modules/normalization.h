#pragma once
// Normalisation layers: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d.
#include <optional>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape)  // NOLINT: LayerNorm({64})
      : normalized_shape_(std::move(normalized_shape)) {}
  KILN_ARG(std::vector<int64_t>, normalized_shape);
  KILN_ARG(double, eps) = 1e-5;
  KILN_ARG(bool, elementwise_affine) = true;
  KILN_ARG(bool, bias) = true;
};

class LayerNormImpl : public Module {
  KILN_MODULE_CLONE(LayerNormImpl)
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  LayerNormOptions options;
  Tensor weight, bias;
};
KILN_MODULE(LayerNorm);

struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape)  // NOLINT
      : normalized_shape_(std::move(normalized_shape)) {}
  KILN_ARG(std::vector<int64_t>, normalized_shape);
  KILN_ARG(std::optional<double>, eps) = std::nullopt;
  KILN_ARG(bool, elementwise_affine) = true;
};

class RMSNormImpl : public Module {
  KILN_MODULE_CLONE(RMSNormImpl)
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  RMSNormOptions options;
  Tensor weight;
};
KILN_MODULE(RMSNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  KILN_ARG(int64_t, num_groups);
  KILN_ARG(int64_t, num_channels);
  KILN_ARG(double, eps) = 1e-5;
  KILN_ARG(bool, affine) = true;
};

class GroupNormImpl : public Module {
  KILN_MODULE_CLONE(GroupNormImpl)
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  GroupNormOptions options;
  Tensor weight, bias;
};
KILN_MODULE(GroupNorm);

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  KILN_ARG(int64_t, num_features);
  KILN_ARG(double, eps) = 1e-5;
  // nullopt: running statistics are a cumulative average over all batches.
  KILN_ARG(std::optional<double>, momentum) = 0.1;
  KILN_ARG(bool, affine) = true;
  KILN_ARG(bool, track_running_stats) = true;
};

// The shared body of BatchNorm and InstanceNorm layers: parameters, running-statistics buffers
// (running_mean, running_var, num_batches_tracked) and the momentum rule.
class NormBase : public Module {
 public:
  void reset_running_stats();
  void reset_parameters();
  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 protected:
  explicit NormBase(const BatchNormOptions& options);
  // The momentum for this step (advancing num_batches_tracked in training).
  double step_momentum();
  void print_as(std::ostream& stream, const char* name) const;
};

#define KILN_DECLARE_NORM(Name, Base, Options)                                       \
  class Name##Impl : public Base {                                                   \
    KILN_MODULE_CLONE(Name##Impl)                                                    \
   public:                                                                           \
    explicit Name##Impl(const BatchNormOptions& options);                            \
    explicit Name##Impl(int64_t num_features) : Name##Impl(Options(num_features)) {} \
    Tensor forward(const Tensor& input);                                             \
    void pretty_print(std::ostream& stream) const override;                          \
  };                                                                                 \
  KILN_MODULE(Name)

using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;
KILN_DECLARE_NORM(BatchNorm1d, NormBase, BatchNormOptions);
KILN_DECLARE_NORM(BatchNorm2d, NormBase, BatchNormOptions);
KILN_DECLARE_NORM(BatchNorm3d, NormBase, BatchNormOptions);

// InstanceNorm's defaults differ: no affine parameters and no running statistics.
struct InstanceNormOptions : BatchNormOptions {
  InstanceNormOptions(int64_t num_features) : BatchNormOptions(num_features) {  // NOLINT
    affine(false);
    track_running_stats(false);
  }
};

using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;
KILN_DECLARE_NORM(InstanceNorm1d, NormBase, InstanceNormOptions);
KILN_DECLARE_NORM(InstanceNorm2d, NormBase, InstanceNormOptions);
KILN_DECLARE_NORM(InstanceNorm3d, NormBase, InstanceNormOptions);
#undef KILN_DECLARE_NORM

}  // namespace kiln::nn

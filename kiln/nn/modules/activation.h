#pragma once
// Activation modules: thin modules over the pointwise ops, with libtorch's options.
#include <string>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

// Modules without options: ReLU, Tanh, ... (forward applies the op of the same name).
#define KILN_ACTIVATION_MODULES(_)                                                      \
  _(SELU)                                                                               \
  _(SiLU) _(Mish) _(Tanh) _(Sigmoid) _(Hardsigmoid) _(Hardswish) _(LogSigmoid) _(ReLU6) \
      _(Softsign) _(Tanhshrink)

#define KILN_DECLARE_ACTIVATION(Name)                       \
  class Name##Impl : public Module {                        \
    KILN_MODULE_CLONE(Name##Impl)                           \
   public:                                                  \
    Tensor forward(const Tensor& input) const;              \
    void pretty_print(std::ostream& stream) const override; \
  };                                                        \
  KILN_MODULE(Name);
KILN_ACTIVATION_MODULES(KILN_DECLARE_ACTIVATION)
#undef KILN_DECLARE_ACTIVATION

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT: ReLU(true)
  KILN_ARG(bool, inplace);
};
class ReLUImpl : public Module {
  KILN_MODULE_CLONE(ReLUImpl)
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  Tensor forward(Tensor input) const;
  void pretty_print(std::ostream& stream) const override;
  ReLUOptions options;
};
KILN_MODULE(ReLU);

struct LeakyReLUOptions {
  KILN_ARG(double, negative_slope) = 1e-2;
  KILN_ARG(bool, inplace) = false;
};
class LeakyReLUImpl : public Module {
  KILN_MODULE_CLONE(LeakyReLUImpl)
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(Tensor input) const;
  void pretty_print(std::ostream& stream) const override;
  LeakyReLUOptions options;
};
KILN_MODULE(LeakyReLU);

struct ELUOptions {
  KILN_ARG(double, alpha) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
class ELUImpl : public Module {
  KILN_MODULE_CLONE(ELUImpl)
 public:
  explicit ELUImpl(const ELUOptions& options = {}) : options(options) {}
  Tensor forward(Tensor input) const;
  void pretty_print(std::ostream& stream) const override;
  ELUOptions options;
};
KILN_MODULE(ELU);

struct GELUOptions {
  KILN_ARG(std::string, approximate) = "none";
};
class GELUImpl : public Module {
  KILN_MODULE_CLONE(GELUImpl)
 public:
  explicit GELUImpl(const GELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  GELUOptions options;
};
KILN_MODULE(GELU);

struct SoftplusOptions {
  KILN_ARG(double, beta) = 1.0;
  KILN_ARG(double, threshold) = 20.0;
};
class SoftplusImpl : public Module {
  KILN_MODULE_CLONE(SoftplusImpl)
 public:
  explicit SoftplusImpl(const SoftplusOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  SoftplusOptions options;
};
KILN_MODULE(Softplus);

struct HardtanhOptions {
  KILN_ARG(double, min_val) = -1.0;
  KILN_ARG(double, max_val) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
class HardtanhImpl : public Module {
  KILN_MODULE_CLONE(HardtanhImpl)
 public:
  explicit HardtanhImpl(const HardtanhOptions& options = {}) : options(options) {}
  Tensor forward(Tensor input) const;
  void pretty_print(std::ostream& stream) const override;
  HardtanhOptions options;
};
KILN_MODULE(Hardtanh);

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT: Softmax(1)
  KILN_ARG(int64_t, dim);
};
class SoftmaxImpl : public Module {
  KILN_MODULE_CLONE(SoftmaxImpl)
 public:
  explicit SoftmaxImpl(const SoftmaxOptions& options) : options(options) {}
  explicit SoftmaxImpl(int64_t dim) : options(dim) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  SoftmaxOptions options;
};
KILN_MODULE(Softmax);

using LogSoftmaxOptions = SoftmaxOptions;
class LogSoftmaxImpl : public Module {
  KILN_MODULE_CLONE(LogSoftmaxImpl)
 public:
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options) : options(options) {}
  explicit LogSoftmaxImpl(int64_t dim) : options(dim) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  LogSoftmaxOptions options;
};
KILN_MODULE(LogSoftmax);

struct CELUOptions {
  KILN_ARG(double, alpha) = 1.0;
  KILN_ARG(bool, inplace) = false;
};
class CELUImpl : public Module {
  KILN_MODULE_CLONE(CELUImpl)
 public:
  explicit CELUImpl(const CELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  CELUOptions options;
};
KILN_MODULE(CELU);

// Softshrink and Hardshrink: SoftshrinkOptions(0.5) / HardshrinkOptions(0.5) hold lambda.
struct SoftshrinkOptions {
  SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  KILN_ARG(double, lambda);
};
using HardshrinkOptions = SoftshrinkOptions;
#define KILN_DECLARE_SHRINK(Name)                                                \
  class Name##Impl : public Module {                                             \
    KILN_MODULE_CLONE(Name##Impl)                                                \
   public:                                                                       \
    explicit Name##Impl(const Name##Options& options = {}) : options(options) {} \
    Tensor forward(const Tensor& input) const;                                   \
    void pretty_print(std::ostream& stream) const override;                      \
    Name##Options options;                                                       \
  };                                                                             \
  KILN_MODULE(Name);
KILN_DECLARE_SHRINK(Softshrink)
KILN_DECLARE_SHRINK(Hardshrink)
#undef KILN_DECLARE_SHRINK

struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  KILN_ARG(double, threshold);
  KILN_ARG(double, value);
  KILN_ARG(bool, inplace) = false;
};
class ThresholdImpl : public Module {
  KILN_MODULE_CLONE(ThresholdImpl)
 public:
  ThresholdImpl(double threshold, double value)
      : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  ThresholdOptions options;
};
KILN_MODULE(Threshold);

struct SoftminOptions {
  SoftminOptions(int64_t dim) : dim_(dim) {}  // NOLINT: Softmin(1)
  KILN_ARG(int64_t, dim);
};
class SoftminImpl : public Module {
  KILN_MODULE_CLONE(SoftminImpl)
 public:
  explicit SoftminImpl(const SoftminOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  SoftminOptions options;
};
KILN_MODULE(Softmin);

// x where x > 0, else a * x, with a learnable (one value, or one per channel).
struct PReLUOptions {
  KILN_ARG(int64_t, num_parameters) = 1;
  KILN_ARG(double, init) = 0.25;
};
class PReLUImpl : public Module {
  KILN_MODULE_CLONE(PReLUImpl)
 public:
  explicit PReLUImpl(const PReLUOptions& options = {});
  void reset();  // weight = init
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  PReLUOptions options;
  Tensor weight;
};
KILN_MODULE(PReLU);

struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT: GLU(1)
  KILN_ARG(int64_t, dim);
};
class GLUImpl : public Module {
  KILN_MODULE_CLONE(GLUImpl)
 public:
  explicit GLUImpl(const GLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  GLUOptions options;
};
KILN_MODULE(GLU);

struct LocalResponseNormOptions {
  LocalResponseNormOptions(int64_t size) : size_(size) {}  // NOLINT: LocalResponseNorm(2)
  KILN_ARG(int64_t, size);
  KILN_ARG(double, alpha) = 1e-4;
  KILN_ARG(double, beta) = 0.75;
  KILN_ARG(double, k) = 1.0;
};
class LocalResponseNormImpl : public Module {
  KILN_MODULE_CLONE(LocalResponseNormImpl)
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  LocalResponseNormOptions options;
};
KILN_MODULE(LocalResponseNorm);

}  // namespace kiln::nn

#pragma once
// Activation modules: thin modules over the pointwise ops, with libtorch's options.
#include <string>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

// Modules without options: ReLU, Tanh, ... (forward applies the op of the same name).
#define KILN_ACTIVATION_MODULES(_) \
  _(SELU) _(SiLU) _(Mish) _(Tanh) _(Sigmoid) _(Hardsigmoid) _(Hardswish) _(LogSigmoid) _(ReLU6)

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

}  // namespace kiln::nn

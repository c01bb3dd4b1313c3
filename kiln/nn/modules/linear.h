#pragma once
// Identity, Linear, Bilinear, Flatten and Unflatten.
#include <cstdint>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

class IdentityImpl : public Module {
  KILN_MODULE_CLONE(IdentityImpl)
 public:
  Tensor forward(const Tensor& input) const { return input; }
  void pretty_print(std::ostream& stream) const override;
};
KILN_MODULE(Identity);

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  KILN_ARG(int64_t, in_features);
  KILN_ARG(int64_t, out_features);
  KILN_ARG(bool, bias) = true;
};

// y = x W^T + b, with W [out_features, in_features] and PyTorch's default initialisation
// (kaiming_uniform_ with a = sqrt(5), bias uniform in +-1/sqrt(in_features)).
class LinearImpl : public Module {
  KILN_MODULE_CLONE(LinearImpl)
 public:
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;

  LinearOptions options;
  Tensor weight;
  Tensor bias;
};
KILN_MODULE(Linear);

struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  KILN_ARG(int64_t, in1_features);
  KILN_ARG(int64_t, in2_features);
  KILN_ARG(int64_t, out_features);
  KILN_ARG(bool, bias) = true;
};

// y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o].
class BilinearImpl : public Module {
  KILN_MODULE_CLONE(BilinearImpl)
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& input1, const Tensor& input2) const;
  void pretty_print(std::ostream& stream) const override;

  BilinearOptions options;
  Tensor weight;
  Tensor bias;
};
KILN_MODULE(Bilinear);

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias = {});

struct FlattenOptions {
  KILN_ARG(int64_t, start_dim) = 1;
  KILN_ARG(int64_t, end_dim) = -1;
};

class FlattenImpl : public Module {
  KILN_MODULE_CLONE(FlattenImpl)
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  FlattenOptions options;
};
KILN_MODULE(Flatten);

struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  KILN_ARG(int64_t, dim);
  KILN_ARG(std::vector<int64_t>, sizes);
};

class UnflattenImpl : public Module {
  KILN_MODULE_CLONE(UnflattenImpl)
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes)
      : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(const UnflattenOptions& options) : options(options) {}
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& stream) const override;
  UnflattenOptions options;
};
KILN_MODULE(Unflatten);

}  // namespace kiln::nn

#pragma once
// CosineSimilarity and PairwiseDistance, libtorch's distance modules (kiln::cosine_similarity and
// kiln::pairwise_distance with their options).
#include <ostream>

#include "kiln/core/arg.h"
#include "kiln/nn/module.h"
#include "kiln/nn/module_holder.h"

namespace kiln::nn {

struct CosineSimilarityOptions {
  KILN_ARG(int64_t, dim) = 1;
  KILN_ARG(double, eps) = 1e-8;
};
class CosineSimilarityImpl : public Module {
  KILN_MODULE_CLONE(CosineSimilarityImpl)
 public:
  explicit CosineSimilarityImpl(const CosineSimilarityOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) const;
  void pretty_print(std::ostream& stream) const override;
  CosineSimilarityOptions options;
};
KILN_MODULE(CosineSimilarity);

struct PairwiseDistanceOptions {
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(double, eps) = 1e-6;
  KILN_ARG(bool, keepdim) = false;
};
class PairwiseDistanceImpl : public Module {
  KILN_MODULE_CLONE(PairwiseDistanceImpl)
 public:
  explicit PairwiseDistanceImpl(const PairwiseDistanceOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) const;
  void pretty_print(std::ostream& stream) const override;
  PairwiseDistanceOptions options;
};
KILN_MODULE(PairwiseDistance);

}  // namespace kiln::nn

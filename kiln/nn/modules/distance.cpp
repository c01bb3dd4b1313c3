#include "kiln/nn/modules/distance.h"

#include "kiln/ops/nn.h"

namespace kiln::nn {

Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2) const {
  return cosine_similarity(x1, x2, options.dim(), options.eps());
}
void CosineSimilarityImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::CosineSimilarity(dim=" << options.dim() << ", eps=" << options.eps() << ")";
}

Tensor PairwiseDistanceImpl::forward(const Tensor& x1, const Tensor& x2) const {
  return pairwise_distance(x1, x2, options.p(), options.eps(), options.keepdim());
}
void PairwiseDistanceImpl::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::PairwiseDistance(p=" << options.p() << ", eps=" << options.eps()
         << ", keepdim=" << (options.keepdim() ? "true" : "false") << ")";
}

}  // namespace kiln::nn

// The F:: activations, normalisations and distances with libtorch's FuncOptions, and their
// modules: values from PyTorch 2 (torch.nn.functional on the same inputs).
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

namespace F = functional;

Tensor input() { return tensor({-2.0f, -0.3f, 0.0f, 0.4f, 1.5f}); }

void expect_values(const Tensor& t, const std::vector<float>& expected) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(t[static_cast<int64_t>(i)].item<float>(), expected[i], 1e-6) << "element " << i;
}

TEST(FunctionalActivations, CompositionsMatchPyTorch) {
  expect_values(F::celu(input(), F::CELUFuncOptions().alpha(0.5)),
                {-0.49084219f, -0.22559419f, 0.0f, 0.4f, 1.5f});
  expect_values(F::softsign(input()), {-0.66666669f, -0.23076925f, 0.0f, 0.28571430f, 0.6f});
  expect_values(F::tanhshrink(input()),
                {-1.03597236f, -0.00868738f, 0.0f, 0.02005103f, 0.59485173f});
  expect_values(F::softshrink(input(), 0.5), {-1.5f, 0.0f, 0.0f, 0.0f, 1.0f});
  expect_values(F::hardshrink(input(), F::HardshrinkFuncOptions(0.35)),
                {-2.0f, 0.0f, 0.0f, 0.4f, 1.5f});
  expect_values(F::threshold(input(), F::ThresholdFuncOptions(0.1, 20.0)),
                {20.0f, 20.0f, 20.0f, 0.4f, 1.5f});
  expect_values(F::softmin(input(), 0),
                {0.69495887f, 0.12695752f, 0.09405246f, 0.06304524f, 0.02098594f});
  EXPECT_THROW(F::softshrink(input(), -1.0), Error);
}

TEST(FunctionalActivations, ModulesAndInplaceOptions) {
  expect_values(CELU(CELUOptions().alpha(0.5))->forward(input()),
                {-0.49084219f, -0.22559419f, 0.0f, 0.4f, 1.5f});
  expect_values(Softshrink(0.5)->forward(input()), {-1.5f, 0.0f, 0.0f, 0.0f, 1.0f});
  expect_values(Hardshrink(HardshrinkOptions(0.35))->forward(input()),
                {-2.0f, 0.0f, 0.0f, 0.4f, 1.5f});
  expect_values(Threshold(0.1, 20.0)->forward(input()), {20.0f, 20.0f, 20.0f, 0.4f, 1.5f});
  expect_values(Softmin(0)->forward(input()),
                {0.69495887f, 0.12695752f, 0.09405246f, 0.06304524f, 0.02098594f});
  expect_values(Softsign()->forward(input()),
                {-0.66666669f, -0.23076925f, 0.0f, 0.28571430f, 0.6f});

  Tensor x = input();
  const Tensor y = F::threshold(x, F::ThresholdFuncOptions(0.1, 20.0).inplace(true));
  EXPECT_EQ(x[0].item<float>(), 20.0f);  // written into the input
  EXPECT_TRUE(y.equal(x));
  Tensor z = input();
  F::hardtanh(z, F::HardtanhFuncOptions().min_val(-1).max_val(1).inplace(true));
  EXPECT_EQ(z[0].item<float>(), -1.0f);
  expect_values(F::elu(input(), F::ELUFuncOptions().alpha(2.0)).narrow(0, 3, 2), {0.4f, 1.5f});
  expect_values(F::relu6(tensor({-1.0f, 7.0f})), {0.0f, 6.0f});
}

TEST(FunctionalActivations, GumbelSoftmaxSamplesAreDistributions) {
  manual_seed(0);
  const Tensor logits = randn({4, 6}).requires_grad_();
  const Tensor soft = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(0.5));
  EXPECT_TRUE(allclose(soft.sum(1), ones({4}), 1e-5, 1e-6));
  const Tensor hard = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().hard(true));
  EXPECT_TRUE(hard.sum(1).equal(ones({4})));
  EXPECT_TRUE(((hard == 0) | (hard == 1)).all().item<bool>());
  (hard * arange(6).to(kFloat32)).sum().backward();  // straight-through: a soft gradient
  EXPECT_GT(logits.grad().abs().sum().item<float>(), 0.0f);
}

TEST(FunctionalLayers, NormsDistancesAndShufflesForwardToTheirOps) {
  manual_seed(1);
  const Tensor x = randn({4, 6, 3});
  const Tensor mean = zeros({6}), var = ones({6});
  EXPECT_TRUE(F::batch_norm(x, mean, var, F::BatchNormFuncOptions().eps(0.0)).equal(x));
  EXPECT_TRUE(allclose(F::group_norm(x, F::GroupNormFuncOptions(2)), group_norm(x, 2)));
  EXPECT_TRUE(allclose(F::instance_norm(x), instance_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5)));
  const Tensor a = randn({5, 3}), b = randn({5, 3});
  EXPECT_TRUE(F::cosine_similarity(a, b).equal(cosine_similarity(a, b)));
  EXPECT_TRUE(CosineSimilarity(CosineSimilarityOptions().dim(0))
                  ->forward(a, b)
                  .equal(cosine_similarity(a, b, 0)));
  EXPECT_TRUE(PairwiseDistance(PairwiseDistanceOptions().p(1))
                  ->forward(a, b)
                  .equal(pairwise_distance(a, b, 1)));
  EXPECT_EQ(F::pairwise_distance(a, b, F::PairwiseDistanceFuncOptions().keepdim(true)).sizes(),
            (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(F::pixel_shuffle(randn({1, 8, 2, 2}), 2).sizes(), (std::vector<int64_t>{1, 2, 4, 4}));
  EXPECT_EQ(F::conv_transpose2d(randn({1, 2, 3, 3}), randn({2, 4, 3, 3}),
                                F::ConvTranspose2dFuncOptions().stride({2}))
                .sizes(),
            (std::vector<int64_t>{1, 4, 7, 7}));
  const Tensor kept = F::dropout2d(ones({2, 8, 4, 4}), F::Dropout2dFuncOptions().p(0.5));
  // Whole channels are zeroed or scaled by 2.
  const Tensor per_channel = kept.amax({2, 3});
  EXPECT_TRUE(kept.amin({2, 3}).equal(per_channel));
}

}  // namespace
}  // namespace kiln::nn

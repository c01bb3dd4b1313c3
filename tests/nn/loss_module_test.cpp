// Loss modules (kiln/nn/modules/loss.h) against PyTorch 2.x: for every loss and reduction, the
// value and the gradients of the differentiable inputs (from tests/nn/loss_expected.py), plus
// option defaults, buffers, printing and the functional forms with libtorch's FuncOptions.
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>

#include "kiln/kiln.h"
#include "tests/nn/conv_pool_test_util.h"
#include "tests/nn/loss_expected.h"

namespace kiln {
namespace {

namespace E = loss_expected;
namespace F = nn::functional;
using testing::expect_values;

Tensor make(const std::vector<int64_t>& shape, const std::vector<double>& v) {
  return tensor(v, kFloat64).view(shape);
}
#define INPUT(name) make(E::name##_shape, E::name)
#define CLASSES(name) INPUT(name).to(kInt64)

// sin(0.7 k + 1): the script's weights for a reduction-"none" loss.
Tensor pattern_like(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t k = 0; k < v.size(); ++k) v[k] = std::sin(0.7 * static_cast<double>(k) + 1);
  return tensor(v, kFloat64).view(t.sizes());
}

// Runs loss(reduction, inputs) on copies of `inputs` that require grad where listed, and checks
// the loss and those inputs' gradients against the expected values named
// "<tag>_<reduction>" and "<tag>_<reduction>_grad<i>".
using LossFn = std::function<Tensor(const nn::KLDivReduction&, const std::vector<Tensor>&)>;
void expect_matches(const LossFn& loss, const std::vector<Tensor>& inputs,
                    const std::vector<size_t>& grad_of, const std::vector<double>& value,
                    const std::vector<std::vector<double>>& grads, const nn::KLDivReduction& r,
                    const std::string& tag) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor x = inputs[i].clone();
    for (size_t g : grad_of) {
      if (g == i) x.requires_grad_(true);
    }
    xs.push_back(x);
  }
  Tensor out = loss(r, xs);
  SCOPED_TRACE(tag);
  expect_values(out, value, 1e-10);
  (out.dim() == 0 ? out : (out * pattern_like(out)).sum()).backward();
  for (size_t j = 0; j < grad_of.size(); ++j) {
    SCOPED_TRACE("gradient of input " + std::to_string(grad_of[j]));
    ASSERT_TRUE(xs[grad_of[j]].grad().defined());
    expect_values(xs[grad_of[j]].grad(), grads[j], 1e-10);
  }
}

Reduction plain(const nn::KLDivReduction& r) { return r.reduction(); }

// The three reductions of case `tag`, each with its expected values.
#define EXPECT_LOSS(tag, loss, inputs, ...)                                                        \
  do {                                                                                             \
    expect_matches(loss, inputs, {__VA_ARGS__}, E::tag##_none, GRADS(tag##_none, __VA_ARGS__),     \
                   kNone, #tag "_none");                                                           \
    expect_matches(loss, inputs, {__VA_ARGS__}, E::tag##_mean, GRADS(tag##_mean, __VA_ARGS__),     \
                   kMean, #tag "_mean");                                                           \
    expect_matches(loss, inputs, {__VA_ARGS__}, E::tag##_sum, GRADS(tag##_sum, __VA_ARGS__), kSum, \
                   #tag "_sum");                                                                   \
  } while (0)
#define GRAD_0(c) E::c##_grad0
#define GRAD_1(c) E::c##_grad1
#define GRAD_2(c) E::c##_grad2
#define GRADS_1(c) \
  { GRAD_0(c) }
#define GRADS_2(c) \
  { GRAD_0(c), GRAD_1(c) }
#define GRADS_3(c) \
  { GRAD_0(c), GRAD_1(c), GRAD_2(c) }
#define COUNT(...) COUNT_(__VA_ARGS__, 3, 2, 1)
#define COUNT_(a, b, c, n, ...) n
#define GRADS(c, ...) GRADS_N(COUNT(__VA_ARGS__), c)
#define GRADS_N(n, c) GRADS_N_(n, c)
#define GRADS_N_(n, c) std::vector<std::vector<double>> GRADS_##n(c)

template <class M>
constexpr bool kTakesThree = std::is_invocable_v<decltype(&M::Impl__::forward), typename M::Impl__&,
                                                 const Tensor&, const Tensor&, const Tensor&>;

// A module built with reduction r, called on the inputs.
template <class Module, class Options>
LossFn module_loss(Options options) {
  return [options](const nn::KLDivReduction& r, const std::vector<Tensor>& x) mutable {
    if constexpr (std::is_same_v<Options, nn::KLDivLossOptions>) {
      options.reduction(r);
    } else {
      options.reduction(plain(r));
    }
    Module m(options);
    if constexpr (kTakesThree<Module>) {
      return m(x[0], x[1], x[2]);
    } else {
      return m(x[0], x[1]);
    }
  };
}

TEST(LossModules, RegressionLossesMatchPyTorch) {
  const std::vector<Tensor> xt = {INPUT(x34), INPUT(t34)};
  EXPECT_LOSS(mse, (module_loss<nn::MSELoss>(nn::MSELossOptions())), xt, 0, 1);
  EXPECT_LOSS(l1, (module_loss<nn::L1Loss>(nn::L1LossOptions())), xt, 0, 1);
  EXPECT_LOSS(smooth_l1, (module_loss<nn::SmoothL1Loss>(nn::SmoothL1LossOptions())), xt, 0);
  EXPECT_LOSS(smooth_l1_beta, (module_loss<nn::SmoothL1Loss>(nn::SmoothL1LossOptions().beta(0.5))),
              xt, 0);
  EXPECT_LOSS(huber, (module_loss<nn::HuberLoss>(nn::HuberLossOptions().delta(0.7))), xt, 0);
}

TEST(LossModules, ClassificationLossesMatchPyTorch) {
  const std::vector<Tensor> lc = {INPUT(logits45), CLASSES(class4)};
  const std::vector<Tensor> lc_ignored = {INPUT(logits45), CLASSES(class4_ignored)};
  const Tensor w5 = INPUT(weight5);
  EXPECT_LOSS(cross_entropy, (module_loss<nn::CrossEntropyLoss>(nn::CrossEntropyLossOptions())), lc,
              0);
  EXPECT_LOSS(cross_entropy_options,
              (module_loss<nn::CrossEntropyLoss>(
                  nn::CrossEntropyLossOptions().weight(w5).label_smoothing(0.1))),
              lc, 0);
  EXPECT_LOSS(cross_entropy_ignore,
              (module_loss<nn::CrossEntropyLoss>(nn::CrossEntropyLossOptions().weight(w5))),
              lc_ignored, 0);
  nn::NLLLossOptions nll_options;
  nll_options.weight(w5);
  const LossFn nll = [&](const nn::KLDivReduction& r, const std::vector<Tensor>& x) {
    nn::NLLLoss m(nn::NLLLossOptions(nll_options).reduction(plain(r)));
    return m(x[0].log_softmax(1), x[1]);
  };
  EXPECT_LOSS(nll, nll, lc_ignored, 0);
  EXPECT_LOSS(multi_margin, (module_loss<nn::MultiMarginLoss>(nn::MultiMarginLossOptions())), lc,
              0);
  EXPECT_LOSS(
      multi_margin_options,
      (module_loss<nn::MultiMarginLoss>(nn::MultiMarginLossOptions().p(2).margin(0.7).weight(w5))),
      lc, 0);
}

TEST(LossModules, BinaryAndMultiLabelLossesMatchPyTorch) {
  const Tensor w4 = INPUT(weight4);
  EXPECT_LOSS(bce, (module_loss<nn::BCELoss>(nn::BCELossOptions().weight(w4))),
              (std::vector<Tensor>{INPUT(prob34), INPUT(target01_34)}), 0);
  EXPECT_LOSS(bce_with_logits,
              (module_loss<nn::BCEWithLogitsLoss>(nn::BCEWithLogitsLossOptions().pos_weight(w4))),
              (std::vector<Tensor>{INPUT(x34), INPUT(target01_34)}), 0);
  EXPECT_LOSS(multilabel_margin,
              (module_loss<nn::MultiLabelMarginLoss>(nn::MultiLabelMarginLossOptions())),
              (std::vector<Tensor>{INPUT(x34), CLASSES(multilabel34)}), 0);
  EXPECT_LOSS(
      multilabel_soft_margin,
      (module_loss<nn::MultiLabelSoftMarginLoss>(nn::MultiLabelSoftMarginLossOptions().weight(w4))),
      (std::vector<Tensor>{INPUT(x34), INPUT(labels01_34)}), 0);
  const std::vector<Tensor> x_sign = {INPUT(x34), INPUT(sign34)};
  EXPECT_LOSS(hinge_embedding,
              (module_loss<nn::HingeEmbeddingLoss>(nn::HingeEmbeddingLossOptions().margin(0.5))),
              x_sign, 0);
  EXPECT_LOSS(soft_margin, (module_loss<nn::SoftMarginLoss>(nn::SoftMarginLossOptions())), x_sign,
              0);
}

TEST(LossModules, DistributionLossesMatchPyTorch) {
  const std::vector<Tensor> xt = {INPUT(x34), INPUT(t34)};
  const auto kl = [](bool log_target) -> LossFn {
    return [log_target](const nn::KLDivReduction& r, const std::vector<Tensor>& x) {
      nn::KLDivLoss m(nn::KLDivLossOptions(r).log_target(log_target));
      return m(x[0].log_softmax(1), log_target ? x[1].log_softmax(1) : x[1].softmax(1));
    };
  };
  EXPECT_LOSS(kl_div, kl(false), xt, 0);
  expect_matches(kl(false), xt, {0}, E::kl_div_batchmean, {E::kl_div_batchmean_grad0}, kBatchMean,
                 "kl_div_batchmean");
  EXPECT_LOSS(kl_div_log_target, kl(true), xt, 0);
  EXPECT_LOSS(poisson_nll, (module_loss<nn::PoissonNLLLoss>(nn::PoissonNLLLossOptions())),
              (std::vector<Tensor>{INPUT(x34), INPUT(counts34)}), 0);
  EXPECT_LOSS(
      poisson_nll_full,
      (module_loss<nn::PoissonNLLLoss>(nn::PoissonNLLLossOptions().log_input(false).full(true))),
      (std::vector<Tensor>{INPUT(rate34), INPUT(counts34)}), 0);
  const LossFn ctc = [](const nn::KLDivReduction& r, const std::vector<Tensor>& x) {
    nn::CTCLoss m(nn::CTCLossOptions().reduction(plain(r)));
    return m(x[0].log_softmax(2), x[1].to(kInt64), x[2].to(kInt64), x[3].to(kInt64));
  };
  EXPECT_LOSS(ctc, ctc,
              (std::vector<Tensor>{INPUT(ctc_logits), INPUT(ctc_targets), INPUT(ctc_input_lengths),
                                   INPUT(ctc_target_lengths)}),
              0);
}

TEST(LossModules, EmbeddingLossesMatchPyTorch) {
  EXPECT_LOSS(cosine_embedding,
              (module_loss<nn::CosineEmbeddingLoss>(nn::CosineEmbeddingLossOptions().margin(0.2))),
              (std::vector<Tensor>{INPUT(a43), INPUT(p43), INPUT(sign4)}), 0, 1);
  EXPECT_LOSS(margin_ranking,
              (module_loss<nn::MarginRankingLoss>(nn::MarginRankingLossOptions().margin(0.1))),
              (std::vector<Tensor>{INPUT(r6), INPUT(s6), INPUT(sign6)}), 0, 1);
  const std::vector<Tensor> apn = {INPUT(a43), INPUT(p43), INPUT(n43)};
  EXPECT_LOSS(triplet_margin, (module_loss<nn::TripletMarginLoss>(nn::TripletMarginLossOptions())),
              apn, 0, 1, 2);
  EXPECT_LOSS(triplet_margin_swap,
              (module_loss<nn::TripletMarginLoss>(
                  nn::TripletMarginLossOptions().margin(2.0).p(1.0).swap(true))),
              apn, 0, 1, 2);
}

TEST(LossModules, OptionDefaultsAreLibtorchs) {
  EXPECT_EQ(nn::MSELossOptions().reduction(), kMean);
  EXPECT_EQ(nn::MSELossOptions(kSum).reduction(), kSum);
  EXPECT_EQ(nn::L1LossOptions().reduction(), kMean);
  EXPECT_FALSE(nn::SmoothL1LossOptions().beta().has_value());
  EXPECT_EQ(nn::HuberLossOptions().delta(), 1.0);
  EXPECT_EQ(nn::CrossEntropyLossOptions().ignore_index(), -100);
  EXPECT_EQ(nn::CrossEntropyLossOptions().label_smoothing(), 0.0);
  EXPECT_FALSE(nn::CrossEntropyLossOptions().weight().defined());
  EXPECT_EQ(nn::NLLLossOptions().ignore_index(), -100);
  EXPECT_FALSE(nn::KLDivLossOptions().log_target());
  EXPECT_FALSE(nn::KLDivLossOptions().reduction().is_batch_mean());
  EXPECT_EQ(nn::KLDivLossOptions().reduction().reduction(), kMean);
  EXPECT_TRUE(nn::KLDivLossOptions(kBatchMean).reduction().is_batch_mean());
  EXPECT_EQ(nn::CosineEmbeddingLossOptions().margin(), 0.0);
  EXPECT_EQ(nn::MarginRankingLossOptions().margin(), 0.0);
  const nn::TripletMarginLossOptions triplet;
  EXPECT_EQ(triplet.margin(), 1.0);
  EXPECT_EQ(triplet.p(), 2.0);
  EXPECT_EQ(triplet.eps(), 1e-6);
  EXPECT_FALSE(triplet.swap());
  EXPECT_EQ(nn::HingeEmbeddingLossOptions().margin(), 1.0);
  EXPECT_EQ(nn::MultiMarginLossOptions().p(), 1);
  EXPECT_EQ(nn::MultiMarginLossOptions().margin(), 1.0);
  const nn::PoissonNLLLossOptions poisson;
  EXPECT_TRUE(poisson.log_input());
  EXPECT_FALSE(poisson.full());
  EXPECT_EQ(poisson.eps(), 1e-8);
  EXPECT_EQ(nn::CTCLossOptions().blank(), 0);
  EXPECT_FALSE(nn::CTCLossOptions().zero_infinity());
  EXPECT_EQ(nn::CTCLossOptions().reduction(), kMean);
}

TEST(LossModules, WeightsAreBuffersAndModulesPrintTheirName) {
  nn::CrossEntropyLoss weighted(nn::CrossEntropyLossOptions().weight(INPUT(weight5)));
  ASSERT_EQ(weighted->named_buffers().keys(), std::vector<std::string>{"weight"});
  EXPECT_TRUE(weighted->parameters().empty());
  weighted->to(kFloat32);
  EXPECT_EQ(weighted->weight.scalar_type(), kFloat32);
  EXPECT_TRUE(nn::CrossEntropyLoss()->named_buffers().is_empty());
  nn::BCEWithLogitsLoss bce(nn::BCEWithLogitsLossOptions().pos_weight(INPUT(weight4)));
  EXPECT_EQ(bce->named_buffers().keys(), std::vector<std::string>{"pos_weight"});

  std::ostringstream s;
  s << nn::MSELoss() << "|" << nn::TripletMarginLoss() << "|" << nn::HingeEmbeddingLoss();
  EXPECT_EQ(s.str(),
            "kiln::nn::MSELoss()|kiln::nn::TripletMarginLoss(margin=1, p=2, eps=1e-06, "
            "swap=false)|kiln::nn::HingeEmbeddingLoss(margin=1)");
}

TEST(LossFunctional, TakesTheModuleOptions) {
  const Tensor x = INPUT(x34), t = INPUT(t34);
  expect_values(F::mse_loss(x, t, F::MSELossFuncOptions(kSum)), E::mse_sum, 1e-10);
  expect_values(F::mse_loss(x, t, nn::MSELossOptions().reduction(kNone)), E::mse_none, 1e-10);
  expect_values(F::l1_loss(x, t), E::l1_mean, 1e-10);
  expect_values(F::kl_div(x.log_softmax(1), t.softmax(1), F::KLDivFuncOptions(kBatchMean)),
                E::kl_div_batchmean, 1e-10);
  // Kiln's former string spelling of the KL reduction still works.
  expect_values(F::kl_div(x.log_softmax(1), t.softmax(1), F::KLDivFuncOptions("batchmean")),
                E::kl_div_batchmean, 1e-10);
  expect_values(F::soft_margin_loss(x, INPUT(sign34), F::SoftMarginLossFuncOptions(kSum)),
                E::soft_margin_sum, 1e-10);
  expect_values(F::multilabel_margin_loss(x, CLASSES(multilabel34)), E::multilabel_margin_mean,
                1e-10);
  EXPECT_EQ(testing::error_of([&] {
              F::multi_margin_loss(x, CLASSES(class4));
            }).find("multi_margin_loss"),
            0u);
  EXPECT_NE(testing::error_of([&] {
              F::multi_margin_loss(INPUT(logits45), CLASSES(class4),
                                   F::MultiMarginLossFuncOptions().p(3));
            }).find("p == 1 and p == 2"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(LossModules, TripletMarginWithDistanceLossMatchesPyTorch) {
  const Tensor a = arange(6).to(kFloat32).reshape({2, 3}) / 5 - 0.3;
  const Tensor p = arange(6).to(kFloat32).reshape({2, 3}).flip({1}) / 7;
  const Tensor n = arange(6).to(kFloat32).reshape({2, 3}).pow(2) / 20;
  EXPECT_NEAR(nn::TripletMarginWithDistanceLoss()->forward(a, p, n).item<float>(), 1.07405436f,
              1e-6);
  auto cosine_distance = [](const Tensor& x, const Tensor& y) {
    return 1 - nn::functional::cosine_similarity(x, y);
  };
  const auto options = nn::functional::TripletMarginWithDistanceLossFuncOptions()
                           .distance_function(cosine_distance)
                           .margin(0.5)
                           .swap(true)
                           .reduction(kSum);
  EXPECT_NEAR(nn::functional::triplet_margin_with_distance_loss(a, p, n, options).item<float>(),
              2.29195452f, 1e-6);
  EXPECT_THROW(nn::functional::triplet_margin_with_distance_loss(
                   a, p, n, nn::functional::TripletMarginWithDistanceLossFuncOptions().margin(0)),
               Error);
}

}  // namespace
}  // namespace kiln

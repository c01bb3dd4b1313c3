// nn loss modules and their options, checked against values computed by PyTorch 2 (the
// constants below; python: torch.nn.MSELoss()(input, target) and so on).
#include <torch/torch.h>

int main() {
  int failures = 0;
  auto expect_near = [&](const torch::Tensor& value, double expected, const char* what) {
    const double got = value.item<double>();
    if (std::abs(got - expected) > 1e-4) {
      std::cout << what << ": got " << got << ", expected " << expected << std::endl;
      ++failures;
    }
  };

  torch::Tensor input = torch::tensor({0.5, -1.0, 2.0, 0.0});
  torch::Tensor target = torch::tensor({1.0, -0.5, 1.0, 0.25});
  expect_near(torch::nn::MSELoss()(input, target), 0.390625, "MSELoss");
  expect_near(torch::nn::L1Loss(torch::nn::L1LossOptions().reduction(torch::kSum))(input, target),
              2.25, "L1Loss sum");
  expect_near(torch::nn::SmoothL1Loss()(input, target), 0.1953125, "SmoothL1Loss");
  expect_near(torch::nn::HuberLoss(torch::nn::HuberLossOptions().delta(0.5))(input, target),
              0.1640625, "HuberLoss");

  torch::Tensor logits = torch::tensor({{2.0, 0.5, -1.0}, {0.0, 1.0, 0.0}});
  torch::Tensor classes = torch::tensor({0, 2});
  // -(log_softmax([2, .5, -1])[0] + log_softmax([0, 1, 0])[2]) / 2
  expect_near(torch::nn::CrossEntropyLoss()(logits, classes), 0.8963780, "CrossEntropyLoss");
  expect_near(torch::nn::NLLLoss()(torch::log_softmax(logits, 1), classes), 0.8963780, "NLLLoss");

  torch::Tensor probabilities = torch::tensor({0.9, 0.2, 0.6});
  torch::Tensor labels = torch::tensor({1.0, 0.0, 1.0});
  expect_near(torch::nn::BCELoss()(probabilities, labels), 0.2797766, "BCELoss");
  expect_near(torch::nn::BCEWithLogitsLoss()(torch::logit(probabilities), labels), 0.2797766,
              "BCEWithLogitsLoss");

  torch::Tensor log_q = torch::log(torch::tensor({{0.25, 0.75}}));
  torch::Tensor p = torch::tensor({{0.5, 0.5}});
  expect_near(
      torch::nn::KLDivLoss(torch::nn::KLDivLossOptions().reduction(torch::kBatchMean))(log_q, p),
      0.1438410, "KLDivLoss batchmean");

  std::cout << failures << " failures" << std::endl;
  return failures == 0 ? 0 : 1;
}

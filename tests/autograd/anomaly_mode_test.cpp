// Anomaly mode: the first backward node that returns NaN is named in the error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kiln/kiln.h"

namespace kiln {
namespace {

// sqrt at 0 has an infinite derivative; times the 0 flowing back from `* 0` it gives NaN.
Tensor nan_gradient_graph(const Tensor& x) { return (x.sqrt() * 0).sum(); }

TEST(AnomalyMode, NamesTheNodeThatReturnedNan) {
  const Tensor x = zeros({3}).requires_grad_();
  {
    autograd::DetectAnomalyGuard guard;
    EXPECT_TRUE(autograd::AnomalyMode::is_enabled());
    try {
      nan_gradient_graph(x).backward();
      FAIL() << "backward did not raise";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "Function 'SqrtBackward0' returned nan values in its 0th output.");
    }
  }
  EXPECT_FALSE(autograd::AnomalyMode::is_enabled());
}

TEST(AnomalyMode, OffOrWithoutNanCheckTheGradientIsNan) {
  const Tensor x = zeros({2}).requires_grad_();
  nan_gradient_graph(x).backward();
  EXPECT_TRUE(std::isnan(x.grad()[0].item<float>()));

  const Tensor y = zeros({2}).requires_grad_();
  autograd::DetectAnomalyGuard guard(/*check_nan=*/false);
  EXPECT_FALSE(autograd::AnomalyMode::should_check_nan());
  nan_gradient_graph(y).backward();
  EXPECT_TRUE(std::isnan(y.grad()[1].item<float>()));
}

TEST(AnomalyMode, FiniteGradientsPassUnchanged) {
  autograd::AnomalyMode::set_enabled(true);
  const Tensor x = tensor({1.0f, 4.0f}).requires_grad_();
  x.sqrt().sum().backward();
  autograd::AnomalyMode::set_enabled(false);
  EXPECT_FLOAT_EQ(x.grad()[0].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(x.grad()[1].item<float>(), 0.25f);
}

}  // namespace
}  // namespace kiln

#pragma once
// Options of the loss modules (kiln/nn/modules/loss.h) and of their functional forms
// (kiln/nn/functional/loss.h): as in libtorch, F::MSELossFuncOptions is nn::MSELossOptions, so
//   nn::MSELoss(nn::MSELossOptions().reduction(kiln::kSum))
//   F::mse_loss(x, t, F::MSELossFuncOptions(kiln::kSum))
// take the same object. Fields, names and defaults are libtorch's.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kiln/core/arg.h"
#include "kiln/core/tensor.h"
#include "kiln/ops/nn.h"

namespace kiln {
// libtorch's reduction tags (torch::kMean, torch::kSum, torch::kNone).
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
inline constexpr Reduction kNone = Reduction::None;

namespace enumtype {
struct kBatchMean {};
}  // namespace enumtype
// KLDivLoss's extra reduction (torch::kBatchMean): the sum divided by the batch size.
inline constexpr enumtype::kBatchMean kBatchMean{};
}  // namespace kiln

namespace kiln::nn {

// KLDivLoss's reduction: kNone, kMean, kSum or kBatchMean (or their names, "batchmean", ...).
class KLDivReduction {
 public:
  KLDivReduction(Reduction reduction) : reduction_(reduction) {}  // NOLINT: reduction(kSum)
  KLDivReduction(enumtype::kBatchMean) : batch_mean_(true) {}     // NOLINT
  KLDivReduction(const std::string& name);                        // NOLINT
  KLDivReduction(const char* name) : KLDivReduction(std::string(name)) {}  // NOLINT
  bool is_batch_mean() const { return batch_mean_; }
  // The reduction kl_div applies (Sum for kBatchMean, which then divides by the batch size).
  Reduction reduction() const { return batch_mean_ ? Reduction::Sum : reduction_; }

 private:
  Reduction reduction_ = Reduction::Mean;
  bool batch_mean_ = false;
};

// Options whose only field is the reduction: MSELossOptions(kSum).
#define KILN_REDUCTION_ONLY_OPTIONS(Name)                                               \
  struct Name {                                                                         \
    Name(Reduction reduction = Reduction::Mean) : reduction_(reduction) {} /* NOLINT */ \
    KILN_ARG(Reduction, reduction);                                                     \
  }
KILN_REDUCTION_ONLY_OPTIONS(L1LossOptions);
KILN_REDUCTION_ONLY_OPTIONS(MSELossOptions);
KILN_REDUCTION_ONLY_OPTIONS(SoftMarginLossOptions);
KILN_REDUCTION_ONLY_OPTIONS(MultiLabelMarginLossOptions);
#undef KILN_REDUCTION_ONLY_OPTIONS

struct KLDivLossOptions {
  KLDivLossOptions(KLDivReduction reduction = Reduction::Mean)  // NOLINT
      : reduction_(reduction) {}
  KILN_ARG(KLDivReduction, reduction);
  KILN_ARG(bool, log_target) = false;
};

struct SmoothL1LossOptions {
  SmoothL1LossOptions(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}  // NOLINT
  KILN_ARG(Reduction, reduction);
  KILN_ARG(std::optional<double>, beta) = std::nullopt;  // nullopt: 1.0
};

struct HuberLossOptions {
  HuberLossOptions(Reduction reduction = Reduction::Mean) : reduction_(reduction) {}  // NOLINT
  KILN_ARG(Reduction, reduction);
  KILN_ARG(double, delta) = 1.0;
};

struct BinaryCrossEntropyOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};
using BCELossOptions = BinaryCrossEntropyOptions;

struct BCEWithLogitsLossOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
  KILN_ARG(Tensor, pos_weight) = Tensor();
};
using BinaryCrossEntropyWithLogitsOptions = BCEWithLogitsLossOptions;

struct NLLLossOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(int64_t, ignore_index) = -100;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct CrossEntropyLossOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(int64_t, ignore_index) = -100;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
  KILN_ARG(double, label_smoothing) = 0.0;
};

struct CosineEmbeddingLossOptions {
  KILN_ARG(double, margin) = 0.0;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct MarginRankingLossOptions {
  KILN_ARG(double, margin) = 0;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct TripletMarginLossOptions {
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(double, p) = 2.0;
  KILN_ARG(double, eps) = 1e-6;
  KILN_ARG(bool, swap) = false;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

// distance_function(a, b) gives one distance per row; pairwise_distance (p = 2) when not set.
struct TripletMarginWithDistanceLossOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  KILN_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(bool, swap) = false;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct HingeEmbeddingLossOptions {
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct MultiMarginLossOptions {
  KILN_ARG(int64_t, p) = 1;  // 1 or 2
  KILN_ARG(double, margin) = 1.0;
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct MultiLabelSoftMarginLossOptions {
  KILN_ARG(Tensor, weight) = Tensor();
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct PoissonNLLLossOptions {
  KILN_ARG(bool, log_input) = true;
  KILN_ARG(bool, full) = false;
  KILN_ARG(double, eps) = 1e-8;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
};

struct CTCLossOptions {
  KILN_ARG(int64_t, blank) = 0;
  KILN_ARG(Reduction, reduction) = Reduction::Mean;
  KILN_ARG(bool, zero_infinity) = false;
};

namespace functional {
using L1LossFuncOptions = L1LossOptions;
using MSELossFuncOptions = MSELossOptions;
using SoftMarginLossFuncOptions = SoftMarginLossOptions;
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;
using KLDivFuncOptions = KLDivLossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using BinaryCrossEntropyFuncOptions = BinaryCrossEntropyOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;
using MarginRankingLossFuncOptions = MarginRankingLossOptions;
using TripletMarginLossFuncOptions = TripletMarginLossOptions;
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;
using MultiMarginLossFuncOptions = MultiMarginLossOptions;
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;
using CTCLossFuncOptions = CTCLossOptions;
}  // namespace functional

}  // namespace kiln::nn

#pragma once
// Observers (torch.ao.quantization.observer): they watch the values a tensor takes during
// calibration and choose its quantization parameters. Each is called like a module, returns its
// input unchanged, and records under no_grad.
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/core/qscheme.h"
#include "kiln/core/tensor.h"

namespace kiln::quantization {

struct ObserverOptions {
  KILN_ARG(ScalarType, dtype) = kQUInt8;  // qint8 or quint8
  KILN_ARG(QScheme, qscheme) = kPerTensorAffine;
  // One bit less of range (quint8 [0, 127], qint8 [-64, 63]): PyTorch's x86 activations, for
  // CPUs whose int8 dot product (VPMADDUBSW) saturates int16 without VNNI.
  KILN_ARG(bool, reduce_range) = false;
  KILN_ARG(double, eps) = std::numeric_limits<float>::epsilon();  // the smallest scale
  KILN_ARG(int64_t, ch_axis) = 0;                                 // per-channel observers
  KILN_ARG(double, averaging_constant) = 0.01;                    // moving-average observers
  KILN_ARG(int64_t, bins) = 2048;                                 // HistogramObserver
};

// The scale (float32) and zero point (int64) tensors: 0-dim per tensor, [channels] per channel.
struct QParams {
  Tensor scale, zero_point;
};

class Observer {
 public:
  explicit Observer(ObserverOptions options);
  virtual ~Observer() = default;

  Tensor operator()(const Tensor& x) { return forward(x); }
  Tensor forward(const Tensor& x);
  virtual QParams calculate_qparams() const;

  const ObserverOptions& options() const { return options_; }
  ScalarType dtype() const { return options_.dtype(); }
  QScheme qscheme() const { return options_.qscheme(); }
  int64_t quant_min() const { return quant_min_; }
  int64_t quant_max() const { return quant_max_; }
  // The range seen so far (per channel: [channels] tensors); undefined before any data.
  const Tensor& min_val() const { return min_val_; }
  const Tensor& max_val() const { return max_val_; }

 protected:
  // Updates min_val_/max_val_ from a float32 batch.
  virtual void observe(const Tensor& x) = 0;
  // PyTorch's _calculate_qparams from a range.
  QParams qparams_from(const Tensor& min_val, const Tensor& max_val) const;
  // The per-tensor or per-channel (amin, amax) of x.
  std::pair<Tensor, Tensor> batch_range(const Tensor& x) const;

  ObserverOptions options_;
  int64_t quant_min_, quant_max_;
  Tensor min_val_, max_val_;
};

// The running min and max.
class MinMaxObserver : public Observer {
 public:
  explicit MinMaxObserver(ObserverOptions options = {});

 protected:
  void observe(const Tensor& x) override;
};

// min/max moved towards each batch's by averaging_constant.
class MovingAverageMinMaxObserver : public Observer {
 public:
  explicit MovingAverageMinMaxObserver(ObserverOptions options = {});

 protected:
  void observe(const Tensor& x) override;
};

// The running min and max of each slice along ch_axis (qscheme per_channel_*).
class PerChannelMinMaxObserver : public MinMaxObserver {
 public:
  explicit PerChannelMinMaxObserver(ObserverOptions options = default_options());
  static ObserverOptions default_options() {
    return ObserverOptions().dtype(kQInt8).qscheme(kPerChannelSymmetric);
  }
};

class MovingAveragePerChannelMinMaxObserver : public MovingAverageMinMaxObserver {
 public:
  explicit MovingAveragePerChannelMinMaxObserver(
      ObserverOptions options = PerChannelMinMaxObserver::default_options());
};

// A histogram of the values seen; its range is the one whose quantization error (the L2 norm
// over the histogram's mass) is least, searched by narrowing from the side with less mass to
// drop, as PyTorch's HistogramObserver does. Per tensor only.
class HistogramObserver : public Observer {
 public:
  explicit HistogramObserver(ObserverOptions options = {});
  QParams calculate_qparams() const override;
  const std::vector<double>& histogram() const { return histogram_; }

 protected:
  void observe(const Tensor& x) override;

 private:
  // The quantization error of the range [begin bin, end bin].
  double quantization_error(int64_t begin, int64_t end) const;
  std::vector<double> histogram_;
  double lo_ = 0, hi_ = 0;  // the histogram's range
};

}  // namespace kiln::quantization

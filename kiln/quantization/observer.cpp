#include "kiln/quantization/observer.h"

#include <algorithm>
#include <cmath>

#include "kiln/core/grad_mode.h"
#include "kiln/core/quantizer.h"
#include "kiln/kiln.h"

namespace kiln::quantization {
namespace {

// The observed range of dtype, one bit less with reduce_range.
std::pair<int64_t, int64_t> quant_range(const ObserverOptions& o) {
  KILN_CHECK(o.dtype() == kQInt8 || o.dtype() == kQUInt8,
             "Observer: expected dtype qint8 or quint8, but got ", o.dtype());
  int64_t lo = quant_min_of(o.dtype()), hi = quant_max_of(o.dtype());
  if (o.reduce_range()) {
    lo /= 2;
    hi = o.dtype() == kQUInt8 ? 127 : 63;
  }
  return {lo, hi};
}

}  // namespace

Observer::Observer(ObserverOptions options) : options_(std::move(options)) {
  std::tie(quant_min_, quant_max_) = quant_range(options_);
  KILN_CHECK(options_.eps() > 0, "Observer: expected a positive eps, but got ", options_.eps());
}

Tensor Observer::forward(const Tensor& x) {
  KILN_CHECK(x.defined() && x.is_floating_point(),
             "Observer: expected a floating point tensor, but got ",
             x.defined() ? dtype_name(x.dtype()) : "an undefined tensor");
  if (x.numel() == 0) return x;
  NoGradGuard no_grad;
  observe(x.detach().to(kFloat32));
  return x;
}

std::pair<Tensor, Tensor> Observer::batch_range(const Tensor& x) const {
  if (!is_per_channel(qscheme())) return {x.min(), x.max()};
  const int64_t axis = options_.ch_axis() < 0 ? options_.ch_axis() + x.dim() : options_.ch_axis();
  KILN_CHECK(axis >= 0 && axis < x.dim(), "PerChannelMinMaxObserver: ch_axis ", options_.ch_axis(),
             " is out of range for a tensor of shape ", x.sizes());
  const Tensor rows = x.movedim(axis, 0).flatten(1);
  return {amin(rows, {1}), amax(rows, {1})};
}

QParams Observer::qparams_from(const Tensor& min_val, const Tensor& max_val) const {
  if (!min_val.defined()) {  // nothing observed: torch's default
    return {full({}, 1.0, kFloat32), full({}, int64_t{0}, kInt64)};
  }
  const Tensor lo = min_val.to(kFloat64).clamp_max(0.0), hi = max_val.to(kFloat64).clamp_min(0.0);
  const double qmin = static_cast<double>(quant_min_), qmax = static_cast<double>(quant_max_);
  Tensor scale, zero_point;
  if (is_symmetric(qscheme())) {
    const Tensor bound = maximum(lo.neg(), hi);
    scale = (bound / ((qmax - qmin) / 2)).clamp_min(options_.eps());
    const int64_t mid = dtype() == kQUInt8 ? (quant_min_ + quant_max_ + 1) / 2 : 0;
    zero_point = full(scale.sizes(), mid, kInt64);
  } else {
    scale = ((hi - lo) / (qmax - qmin)).clamp_min(options_.eps());
    zero_point = (qmin - (lo / scale).round()).clamp(qmin, qmax).to(kInt64);
  }
  return {scale.to(kFloat32), zero_point};
}

QParams Observer::calculate_qparams() const { return qparams_from(min_val_, max_val_); }

MinMaxObserver::MinMaxObserver(ObserverOptions options) : Observer(std::move(options)) {}

void MinMaxObserver::observe(const Tensor& x) {
  auto [lo, hi] = batch_range(x);
  min_val_ = min_val_.defined() ? minimum(min_val_, lo) : lo;
  max_val_ = max_val_.defined() ? maximum(max_val_, hi) : hi;
}

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(ObserverOptions options)
    : Observer(std::move(options)) {}

void MovingAverageMinMaxObserver::observe(const Tensor& x) {
  auto [lo, hi] = batch_range(x);
  const double c = options_.averaging_constant();
  min_val_ = min_val_.defined() ? min_val_ + (lo - min_val_) * c : lo;
  max_val_ = max_val_.defined() ? max_val_ + (hi - max_val_) * c : hi;
}

PerChannelMinMaxObserver::PerChannelMinMaxObserver(ObserverOptions options)
    : MinMaxObserver(std::move(options)) {
  KILN_CHECK(is_per_channel(qscheme()),
             "PerChannelMinMaxObserver: expected a per-channel qscheme, "
             "but got ",
             qscheme_name(qscheme()));
}

MovingAveragePerChannelMinMaxObserver::MovingAveragePerChannelMinMaxObserver(
    ObserverOptions options)
    : MovingAverageMinMaxObserver(std::move(options)) {
  KILN_CHECK(is_per_channel(qscheme()),
             "MovingAveragePerChannelMinMaxObserver: expected a "
             "per-channel qscheme, but got ",
             qscheme_name(qscheme()));
}

HistogramObserver::HistogramObserver(ObserverOptions options) : Observer(std::move(options)) {
  KILN_CHECK(!is_per_channel(qscheme()), "HistogramObserver: per-tensor qschemes only, but got ",
             qscheme_name(qscheme()));
  KILN_CHECK(options_.bins() > 0, "HistogramObserver: expected a positive number of bins, got ",
             options_.bins());
  histogram_.assign(options_.bins(), 0.0);
}

void HistogramObserver::observe(const Tensor& x) {
  const Tensor c = x.contiguous();
  const float* p = c.data_ptr<float>();
  const int64_t n = c.numel(), bins = options_.bins();
  const bool first = !min_val_.defined();
  double lo = first ? std::numeric_limits<double>::infinity() : lo_;
  double hi = first ? -std::numeric_limits<double>::infinity() : hi_;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) continue;  // NaN and infinities are not counted
    lo = std::min<double>(lo, p[i]);
    hi = std::max<double>(hi, p[i]);
  }
  if (lo > hi) return;  // nothing finite
  if (first) {
    lo_ = lo;
    hi_ = hi;
  } else if (lo < lo_ || hi > hi_) {
    // A wider range: each old bin's mass moves to the new bin holding the old bin's centre.
    std::vector<double> wider(bins, 0.0);
    const double old_width = (hi_ - lo_) / bins, width = (hi - lo) / bins;
    for (int64_t b = 0; b < bins; ++b) {
      if (histogram_[b] == 0) continue;
      const double centre = lo_ + (b + 0.5) * old_width;
      const int64_t to =
          std::clamp<int64_t>(static_cast<int64_t>((centre - lo) / width), 0, bins - 1);
      wider[to] += histogram_[b];
    }
    histogram_ = std::move(wider);
    lo_ = lo;
    hi_ = hi;
  }
  const double width = (hi_ - lo_) / bins;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(p[i])) continue;
    const int64_t b = width > 0 ? static_cast<int64_t>((p[i] - lo_) / width) : 0;
    histogram_[std::clamp<int64_t>(b, 0, bins - 1)] += 1;
  }
  min_val_ = full({}, lo_, kFloat32);
  max_val_ = full({}, hi_, kFloat32);
}

// The L2 error of quantizing the histogram's mass with 2^bits levels spread over bins
// [begin, end]: each source bin (of uniform density) is split over the destination levels it
// overlaps, and a level's error over [a, b] around its centre is density * (b^3 - a^3) / 3.
double HistogramObserver::quantization_error(int64_t begin, int64_t end) const {
  const int64_t bins = options_.bins();
  const double width = (hi_ - lo_) / bins;
  const int64_t levels = quant_max_of(dtype()) - quant_min_of(dtype()) + 1;
  const double level_width = width * static_cast<double>(end - begin + 1) / levels;
  if (level_width == 0) return 0;
  auto norm = [](double a, double b, double density) {
    return density * (b * b * b - a * a * a) / 3;
  };
  double error = 0;
  for (int64_t b = 0; b < bins; ++b) {
    if (histogram_[b] == 0) continue;
    const double density = histogram_[b] / width;
    const double src_begin = (b - begin) * width, src_end = src_begin + width;
    const double first =
        std::clamp(std::floor(src_begin / level_width), 0.0, static_cast<double>(levels - 1));
    const double last =
        std::clamp(std::floor(src_end / level_width), 0.0, static_cast<double>(levels - 1));
    const double first_centre = (first + 0.5) * level_width;
    const double last_centre = (last + 0.5) * level_width;
    if (first == last) {
      error += norm(src_begin - first_centre, src_end - first_centre, density);
    } else {
      error += norm(src_begin - first_centre, level_width / 2, density);
      error += (last - first - 1) * norm(-level_width / 2, level_width / 2, density);
      error += norm(-level_width / 2, src_end - last_centre, density);
    }
  }
  return error;
}

QParams HistogramObserver::calculate_qparams() const {
  if (!min_val_.defined() || hi_ == lo_) return qparams_from(min_val_, max_val_);
  const int64_t bins = options_.bins();
  double total = 0;
  std::vector<double> cumulative(bins);
  for (int64_t b = 0; b < bins; ++b) cumulative[b] = total += histogram_[b];
  // Narrow [begin, end] a step of mass at a time, from the side that drops fewer bins for it,
  // while the error falls.
  const double step = 1e-5;
  double alpha = 0, beta = 1, best = std::numeric_limits<double>::infinity();
  int64_t begin = 0, end = bins - 1;
  while (alpha < beta) {
    const double next_alpha = alpha + step, next_beta = beta - step;
    int64_t l = begin, r = end;
    while (l < end && cumulative[l] < next_alpha * total) ++l;
    while (r > begin && cumulative[r] > next_beta * total) --r;
    int64_t next_begin = begin, next_end = end;
    if (l - begin > end - r) {
      next_begin = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_begin == begin && next_end == end) continue;
    const double error = quantization_error(next_begin, next_end);
    if (error > best) break;
    best = error;
    begin = next_begin;
    end = next_end;
  }
  const double width = (hi_ - lo_) / bins;
  return qparams_from(full({}, lo_ + width * begin, kFloat64),
                      full({}, lo_ + width * (end + 1), kFloat64));
}

}  // namespace kiln::quantization

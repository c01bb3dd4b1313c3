#include "kiln/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/core/error.h"

namespace kiln::optim {
namespace {

double cosine(double start, double end, double pct) {
  return end + (start - end) / 2 * (1 + std::cos(std::numbers::pi * pct));
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (OptimizerParamGroup& g : optimizer_.param_groups()) {
    if (!g.initial_lr) g.initial_lr = g.options().get_lr();
    base_lrs_.push_back(*g.initial_lr);
  }
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

void LRScheduler::step(int64_t epoch) {
  last_epoch_ = epoch;
  apply();
}

void LRScheduler::apply() {
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size() && i < base_lrs_.size(); ++i)
    groups[i].options().set_lr(lr_at(last_epoch_, base_lrs_[i]));
}

std::vector<double> LRScheduler::get_last_lr() const {
  std::vector<double> out;
  for (const OptimizerParamGroup& g : optimizer_.param_groups())
    out.push_back(g.options().get_lr());
  return out;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  KILN_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  apply();
}

double StepLR::lr_at(int64_t epoch, double base) const {
  return base * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::ranges::sort(milestones_);
  apply();
}

double MultiStepLR::lr_at(int64_t epoch, double base) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  apply();
}

double ExponentialLR::lr_at(int64_t epoch, double base) const {
  return base * std::pow(gamma_, static_cast<double>(epoch));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  KILN_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  apply();
}

double CosineAnnealingLR::lr_at(int64_t epoch, double base) const {
  return cosine(base, eta_min_, static_cast<double>(epoch) / static_cast<double>(t_max_));
}

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0,
                                                         int64_t T_mult, double eta_min)
    : LRScheduler(optimizer), t_0_(T_0), t_mult_(T_mult), eta_min_(eta_min) {
  KILN_CHECK(T_0 > 0, "CosineAnnealingWarmRestarts: T_0 must be positive, got ", T_0);
  KILN_CHECK(T_mult >= 1, "CosineAnnealingWarmRestarts: T_mult must be >= 1, got ", T_mult);
  apply();
}

double CosineAnnealingWarmRestarts::lr_at(int64_t epoch, double base) const {
  int64_t t_cur = epoch, t_i = t_0_;
  while (t_cur >= t_i) {
    t_cur -= t_i;
    t_i *= t_mult_;
  }
  return cosine(base, eta_min_, static_cast<double>(t_cur) / static_cast<double>(t_i));
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer), start_(start_factor), end_(end_factor), total_(total_iters) {
  KILN_CHECK(start_factor > 0 && start_factor <= 1,
             "LinearLR: start_factor must be in (0, 1], "
             "got ",
             start_factor);
  apply();
}

double LinearLR::lr_at(int64_t epoch, double base) const {
  const double progress =
      total_ > 0 ? static_cast<double>(std::min(epoch, total_)) / static_cast<double>(total_) : 1;
  return base * (start_ + (end_ - start_) * progress);
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LRScheduler(optimizer), lambda_(std::move(lr_lambda)) {
  apply();
}

double LambdaLR::lr_at(int64_t epoch, double base) const { return base * lambda_(epoch); }

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
                       OneCycleLROptions options)
    : LRScheduler(optimizer),
      max_lr_(max_lr),
      total_steps_(total_steps),
      options_(std::move(options)) {
  KILN_CHECK(total_steps > 0, "OneCycleLR: total_steps must be positive, got ", total_steps);
  KILN_CHECK(options_.anneal_strategy == "cos" || options_.anneal_strategy == "linear",
             "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '",
             options_.anneal_strategy, "'");
  const double initial = max_lr / options_.div_factor;
  const double min_lr = initial / options_.final_div_factor;
  const double warm_end = options_.pct_start * static_cast<double>(total_steps) - 1;
  const double last = static_cast<double>(total_steps) - 1;
  const double lo = options_.base_momentum, hi = options_.max_momentum;
  if (options_.three_phase) {
    phases_ = {
        {warm_end, initial, max_lr, hi, lo},
        {2 * options_.pct_start * static_cast<double>(total_steps) - 2, max_lr, initial, lo, hi},
        {last, initial, min_lr, hi, hi}};
  } else {
    phases_ = {{warm_end, initial, max_lr, hi, lo}, {last, max_lr, min_lr, lo, hi}};
  }
  // The schedule replaces the base lrs: every group starts at max_lr / div_factor.
  for (OptimizerParamGroup& g : optimizer_.param_groups()) g.initial_lr = initial;
  std::ranges::fill(base_lrs_, initial);
  apply();
  apply_momentum();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  return options_.anneal_strategy == "cos" ? cosine(start, end, pct) : start + (end - start) * pct;
}

template <class Field>
double OneCycleLR::interpolate(int64_t epoch, Field field_start, Field field_end) const {
  double start_step = 0;
  const double step = static_cast<double>(epoch);
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& p = phases_[i];
    if (step <= p.end_step || i + 1 == phases_.size()) {
      const double pct = (step - start_step) / (p.end_step - start_step);
      return anneal(p.*field_start, p.*field_end, pct);
    }
    start_step = p.end_step;
  }
  return phases_.back().*field_end;
}

double OneCycleLR::lr_at(int64_t epoch, double) const {
  KILN_CHECK(epoch <= total_steps_, "OneCycleLR: tried to step ", epoch + 1,
             " times; the schedule has total_steps = ", total_steps_);
  return interpolate(epoch, &Phase::start_lr, &Phase::end_lr);
}

void OneCycleLR::step() {
  LRScheduler::step();
  apply_momentum();
}

// Optimizers with "momentum" (SGD, RMSprop) or "beta1" (the Adam family) have it cycled.
void OneCycleLR::apply_momentum() {
  if (!options_.cycle_momentum) return;
  const double m = interpolate(last_epoch_, &Phase::start_momentum, &Phase::end_momentum);
  for (OptimizerParamGroup& g : optimizer_.param_groups()) {
    std::map<std::string, double> fields = g.options().to_map();
    for (const char* name : {"momentum", "beta1"})
      if (fields.count(name)) fields[name] = m;
    g.options().from_map(fields);
  }
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  KILN_CHECK(options_.mode == "min" || options_.mode == "max",
             "ReduceLROnPlateau: mode must be 'min' or 'max', got '", options_.mode, "'");
  KILN_CHECK(options_.threshold_mode == "rel" || options_.threshold_mode == "abs",
             "ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got '",
             options_.threshold_mode, "'");
  KILN_CHECK(options_.factor < 1, "ReduceLROnPlateau: factor should be < 1.0, got ",
             options_.factor);
  best_ = options_.mode == "min" ? std::numeric_limits<double>::infinity()
                                 : -std::numeric_limits<double>::infinity();
}

namespace {
ReduceLROnPlateauOptions plateau_options(ReduceLROnPlateauScheduler::SchedulerMode mode,
                                         float factor, int patience, double threshold,
                                         ReduceLROnPlateauScheduler::ThresholdMode threshold_mode,
                                         int cooldown, const std::vector<float>& min_lr,
                                         double eps) {
  ReduceLROnPlateauOptions o;
  o.mode = mode == ReduceLROnPlateauScheduler::max ? "max" : "min";
  o.factor = factor;
  o.patience = patience;
  o.threshold = threshold;
  o.threshold_mode = threshold_mode == ReduceLROnPlateauScheduler::abs ? "abs" : "rel";
  o.cooldown = cooldown;
  o.eps = eps;
  if (!min_lr.empty()) {
    KILN_CHECK(std::all_of(min_lr.begin(), min_lr.end(), [&](float v) { return v == min_lr[0]; }),
               "ReduceLROnPlateauScheduler: Kiln takes one min_lr for every param group, got ",
               min_lr.size(), " different values");
    o.min_lr = min_lr[0];
  }
  return o;
}
}  // namespace

ReduceLROnPlateauScheduler::ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode,
                                                       float factor, int patience, double threshold,
                                                       ThresholdMode threshold_mode, int cooldown,
                                                       const std::vector<float>& min_lr, double eps,
                                                       bool /*verbose*/)
    : ReduceLROnPlateau(optimizer, plateau_options(mode, factor, patience, threshold,
                                                   threshold_mode, cooldown, min_lr, eps)) {}

bool ReduceLROnPlateau::is_better(double metric) const {
  const bool rel = options_.threshold_mode == "rel";
  if (options_.mode == "min")
    return metric < (rel ? best_ * (1 - options_.threshold) : best_ - options_.threshold);
  return metric > (rel ? best_ * (1 + options_.threshold) : best_ + options_.threshold);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > options_.patience) {
    for (OptimizerParamGroup& g : optimizer_.param_groups()) {
      const double old_lr = g.options().get_lr();
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
      if (old_lr - new_lr > options_.eps) g.options().set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
}

std::vector<double> ReduceLROnPlateau::get_last_lr() const {
  std::vector<double> out;
  for (const OptimizerParamGroup& g : optimizer_.param_groups())
    out.push_back(g.options().get_lr());
  return out;
}

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  KILN_CHECK(!schedulers_.empty(), "SequentialLR: expects at least one scheduler");
  KILN_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expected ",
             schedulers_.size() - 1, " milestones for ", schedulers_.size(), " schedulers, got ",
             milestones_.size());
  schedulers_.front()->step(0);
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    schedulers_[idx]->step(0);
  } else {
    schedulers_[idx]->step();
  }
}

double SequentialLR::lr_at(int64_t, double base) const { return base; }

}  // namespace kiln::optim

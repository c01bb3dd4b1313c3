#pragma once
// Learning-rate schedules with PyTorch's formulas. Each sets every parameter group's lr from
// its base lr (the lr when the scheduler was made) and the epoch counter:
//   kiln::optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (...) { train(); sched.step(); }
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  // Advances one epoch (or jumps to `epoch`) and writes the new learning rates.
  virtual void step();
  void step(int64_t epoch);
  int64_t last_epoch() const { return last_epoch_; }
  std::vector<double> get_last_lr() const;
  Optimizer& optimizer() { return optimizer_; }

 protected:
  // The lr of a group with base lr `base` at `epoch`.
  virtual double lr_at(int64_t epoch, double base) const = 0;
  // Writes lr_at(last_epoch) into every group; derived constructors call it once at the end.
  void apply();

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  int64_t step_size_;
  double gamma_;
};

class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  double gamma_;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  int64_t t_max_;
  double eta_min_;
};

class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1,
                              double eta_min = 0);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  int64_t t_0_, t_mult_;
  double eta_min_;
};

class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  double start_, end_;
  int64_t total_;
};

class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda);

 protected:
  double lr_at(int64_t epoch, double base) const override;
  std::function<double(int64_t)> lambda_;
};

struct OneCycleLROptions {
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // or "linear"
  bool cycle_momentum = true;
  double base_momentum = 0.85, max_momentum = 0.95;
  double div_factor = 25, final_div_factor = 1e4;
  bool three_phase = false;
};

// Warms the lr up from max_lr / div_factor to max_lr, then anneals it to
// initial / final_div_factor over total_steps; momentum (or Adam's beta1) moves inversely.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps,
             OneCycleLROptions options = {});
  using LRScheduler::step;
  void step() override;

 protected:
  double lr_at(int64_t epoch, double base) const override;

 private:
  struct Phase {
    double end_step;
    double start_lr, end_lr, start_momentum, end_momentum;
  };
  double anneal(double start, double end, double pct) const;
  template <class Field>
  double interpolate(int64_t epoch, Field field_start, Field field_end) const;
  void apply_momentum();

  double max_lr_;
  int64_t total_steps_;
  OneCycleLROptions options_;
  std::vector<Phase> phases_;
};

// Multiplies the lr by `factor` when a metric has stopped improving for `patience` epochs.
struct ReduceLROnPlateauOptions {
  std::string mode = "min";  // or "max"
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // or "abs"
  int64_t cooldown = 0;
  double min_lr = 0;
  double eps = 1e-8;
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  void step(double metric);
  std::vector<double> get_last_lr() const;
  int64_t num_bad_epochs() const { return num_bad_epochs_; }

 private:
  bool is_better(double metric) const;
  Optimizer& optimizer_;
  ReduceLROnPlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

// libtorch's spelling: ReduceLROnPlateauScheduler(optimizer, SchedulerMode::max, 0.5, 3), with
// min_lr one value for every group (libtorch takes one per group; all must be equal here).
class ReduceLROnPlateauScheduler : public ReduceLROnPlateau {
 public:
  enum SchedulerMode { min, max };
  enum ThresholdMode { rel, abs };
  explicit ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode = min,
                                      float factor = 0.1f, int patience = 10,
                                      double threshold = 1e-4, ThresholdMode threshold_mode = rel,
                                      int cooldown = 0, const std::vector<float>& min_lr = {},
                                      double eps = 1e-8, bool verbose = false);
};

// Runs schedulers one after another, switching at the milestones.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  using LRScheduler::step;
  void step() override;

 protected:
  double lr_at(int64_t epoch, double base) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace kiln::optim

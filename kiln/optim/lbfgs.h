#pragma once
// L-BFGS (PyTorch's algorithm without line search): step(closure) runs up to max_iter
// iterations, re-evaluating the loss through the closure. One parameter group only. As in
// PyTorch, the search state lives in the first parameter's state, so state_dict() carries it:
// step = iterations so far, scalars t and h_diag, history d, prev_flat_grad, old_dirs and
// old_steps ([k, numel], float64) and ro ([k]).
#include <deque>
#include <optional>
#include <vector>

#include "kiln/core/arg.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

struct LBFGSOptions : public OptimizerCloneableOptions<LBFGSOptions> {
  LBFGSOptions(double lr = 1) : lr_(lr) {}  // NOLINT
  KILN_ARG(double, lr);
  KILN_ARG(int64_t, max_iter) = 20;
  KILN_ARG(std::optional<int64_t>, max_eval) = std::nullopt;  // max_iter * 5 / 4
  KILN_ARG(double, tolerance_grad) = 1e-7;
  KILN_ARG(double, tolerance_change) = 1e-9;
  KILN_ARG(int64_t, history_size) = 100;

 public:
  template <class F>
  void for_each_field(F&& f) {
    f("lr", lr_), f("max_iter", max_iter_), f("tolerance_grad", tolerance_grad_);
    f("tolerance_change", tolerance_change_), f("history_size", history_size_);
  }
};

class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<Tensor> params, LBFGSOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;

 private:
  using Vec = std::vector<double>;
  Vec flat_grad() const;
  void add_to_params(double t, const Vec& d);
  // Between calls the search state is in the first parameter's ParamState (see above).
  void load_search_state();
  void save_search_state();
  // The iterations of one step(), from the loss and flat gradient at the current point.
  void iterate(const LossClosure& closure, double loss, Vec grad);

  // The curvature history and search state while step() runs.
  int64_t n_iter_ = 0;
  double t_ = 0, h_diag_ = 1;
  Vec d_, prev_flat_grad_;
  std::deque<Vec> old_dirs_, old_steps_;
  std::deque<double> ro_;
  Tensor saved_d_;  // the "d" history tensor the last step saved (unchanged state: no reload)
};

}  // namespace kiln::optim

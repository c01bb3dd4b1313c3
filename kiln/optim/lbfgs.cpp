#include "kiln/optim/lbfgs.h"

#include <algorithm>
#include <cmath>

#include "kiln/autograd/grad_mode.h"
#include "kiln/ops/ops.h"

namespace kiln::optim {
namespace {

using Vec = std::vector<double>;

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double abs_max(const Vec& a) {
  double m = 0;
  for (double x : a) m = std::max(m, std::abs(x));
  return m;
}

void axpy(double alpha, const Vec& x, Vec& y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] += alpha * x[i];
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions defaults)
    : Optimizer({OptimizerParamGroup(std::move(params))},
                std::make_unique<LBFGSOptions>(defaults)) {}

Vec LBFGS::flat_grad() const {
  Vec out;
  for (const Tensor& p : param_groups_[0].params()) {
    const int64_t n = p.numel().guard_int();
    if (!p.grad().defined()) {
      out.insert(out.end(), n, 0.0);
      continue;
    }
    Tensor g = p.grad().to(kFloat64).contiguous();
    out.insert(out.end(), g.data_ptr<double>(), g.data_ptr<double>() + n);
  }
  return out;
}

void LBFGS::add_to_params(double t, const Vec& d) {
  NoGradGuard no_grad;
  size_t offset = 0;
  for (const Tensor& p : param_groups_[0].params()) {
    const int64_t n = p.numel().guard_int();
    Vec chunk(d.begin() + static_cast<std::ptrdiff_t>(offset),
              d.begin() + static_cast<std::ptrdiff_t>(offset + n));
    Tensor update = kiln::tensor(chunk, TensorOptions(kFloat64)).view(p.sizes());
    p.detach().add_(update.to(p.dtype()), t);
    offset += static_cast<size_t>(n);
  }
}

Tensor LBFGS::step(LossClosure closure) {
  KILN_CHECK(param_groups_.size() == 1,
             "LBFGS doesn't support per-parameter options "
             "(parameter groups)");
  KILN_CHECK(closure != nullptr, "LBFGS: step() requires a closure that re-evaluates the loss");
  const auto& o = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  const int64_t max_eval = o.max_eval().value_or(o.max_iter() * 5 / 4);

  Tensor orig_loss = evaluate(closure);
  double loss = orig_loss.item<double>();
  int64_t evals = 1;
  Vec grad = flat_grad();
  if (abs_max(grad) <= o.tolerance_grad()) return orig_loss;

  for (int64_t iter = 1; iter <= o.max_iter(); ++iter) {
    ++n_iter_;
    if (n_iter_ == 1) {
      d_ = grad;
      for (double& x : d_) x = -x;
      old_dirs_.clear(), old_steps_.clear(), ro_.clear();
      h_diag_ = 1;
    } else {
      Vec y = grad, s = d_;
      axpy(-1, prev_flat_grad_, y);
      for (double& x : s) x *= t_;
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(old_dirs_.size()) == o.history_size()) {
          old_dirs_.pop_front(), old_steps_.pop_front(), ro_.pop_front();
        }
        old_dirs_.push_back(y), old_steps_.push_back(s), ro_.push_back(1 / ys);
        h_diag_ = ys / dot(y, y);
      }
      // Two-loop recursion: d = -H grad with the stored curvature pairs.
      const size_t k = old_dirs_.size();
      Vec q = grad, al(k);
      for (double& x : q) x = -x;
      for (size_t i = k; i-- > 0;) {
        al[i] = dot(old_steps_[i], q) * ro_[i];
        axpy(-al[i], old_dirs_[i], q);
      }
      for (double& x : q) x *= h_diag_;
      for (size_t i = 0; i < k; ++i) axpy(al[i] - dot(old_dirs_[i], q) * ro_[i], old_steps_[i], q);
      d_ = std::move(q);
    }
    prev_flat_grad_ = grad;
    const double prev_loss = loss;
    if (n_iter_ == 1) {
      double l1 = 0;
      for (double x : grad) l1 += std::abs(x);
      t_ = std::min(1.0, 1.0 / l1) * o.lr();
    } else {
      t_ = o.lr();
    }
    if (dot(grad, d_) > -o.tolerance_change()) break;

    add_to_params(t_, d_);
    bool converged = false;
    if (iter != o.max_iter()) {
      loss = evaluate(closure).item<double>();
      grad = flat_grad();
      converged = abs_max(grad) <= o.tolerance_grad();
      ++evals;
    }
    if (iter == o.max_iter() || evals >= max_eval || converged) break;
    if (abs_max(d_) * t_ <= o.tolerance_change()) break;
    if (std::abs(loss - prev_loss) < o.tolerance_change()) break;
  }
  return orig_loss;
}

}  // namespace kiln::optim

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

Tensor to_tensor(const Vec& v) { return kiln::tensor(v, TensorOptions(kFloat64)); }

Vec to_vec(const Tensor& t) {
  const Tensor c = t.to(Device(kCPU), kFloat64).contiguous();  // the search runs on the host
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Rows of a [k, n] tensor and back ([0, n] when empty).
Tensor stack_rows(const std::deque<Vec>& rows, size_t n) {
  Vec flat;
  for (const Vec& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return to_tensor(flat).view({static_cast<int64_t>(rows.size()), static_cast<int64_t>(n)});
}
std::deque<Vec> unstack_rows(const Tensor& t) {
  std::deque<Vec> rows;
  for (int64_t i = 0; i < t.size(0); ++i) rows.push_back(to_vec(t[i]));
  return rows;
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions defaults)
    : Optimizer({OptimizerParamGroup(std::move(params))},
                std::make_unique<LBFGSOptions>(defaults)) {}

Vec LBFGS::flat_grad() const {
  Vec out;
  for (const Tensor& p : param_groups_[0].params()) {
    const int64_t n = p.numel();
    if (!p.grad().defined()) {
      out.insert(out.end(), n, 0.0);
      continue;
    }
    Tensor g = p.grad().to(Device(kCPU), kFloat64).contiguous();
    out.insert(out.end(), g.data_ptr<double>(), g.data_ptr<double>() + n);
  }
  return out;
}

void LBFGS::add_to_params(double t, const Vec& d) {
  NoGradGuard no_grad;
  size_t offset = 0;
  for (const Tensor& p : param_groups_[0].params()) {
    const int64_t n = p.numel();
    Vec chunk(d.begin() + static_cast<std::ptrdiff_t>(offset),
              d.begin() + static_cast<std::ptrdiff_t>(offset + n));
    Tensor update = kiln::tensor(chunk, TensorOptions(kFloat64)).view(p.sizes());
    p.detach().add_(update.to(p.device(), p.dtype()), t);
    offset += static_cast<size_t>(n);
  }
}

void LBFGS::load_search_state() {
  const ParamState& s = state_of(param_groups_[0].params().front());
  const Tensor* d = s.history.find("d");
  if (d != nullptr && d->is_same(saved_d_)) return;  // what the last step saved: members agree
  n_iter_ = s.step;
  if (n_iter_ == 0) return;
  auto missing = [&](const char* name) {
    KILN_FAIL("LBFGS: the optimizer state has ", n_iter_, " iterations but no '", name,
              "' (a state_dict of another optimizer?)");
  };
  auto history = [&](const char* name) {
    const Tensor* t = s.history.find(name);
    if (t == nullptr) missing(name);
    return *t;
  };
  auto scalar = [&](const char* name) {
    auto it = s.scalars.find(name);
    if (it == s.scalars.end()) missing(name);
    return it->second;
  };
  t_ = scalar("t");
  h_diag_ = scalar("h_diag");
  d_ = to_vec(history("d"));
  prev_flat_grad_ = to_vec(history("prev_flat_grad"));
  old_dirs_ = unstack_rows(history("old_dirs"));
  old_steps_ = unstack_rows(history("old_steps"));
  const Vec ro = to_vec(history("ro"));
  ro_.assign(ro.begin(), ro.end());
}

void LBFGS::save_search_state() {
  ParamState& s = state_of(param_groups_[0].params().front());
  s.step = n_iter_;
  s.scalars["t"] = t_;
  s.scalars["h_diag"] = h_diag_;
  s.history.clear();
  saved_d_ = to_tensor(d_);
  s.history.insert("d", saved_d_);
  s.history.insert("prev_flat_grad", to_tensor(prev_flat_grad_));
  s.history.insert("old_dirs", stack_rows(old_dirs_, d_.size()));
  s.history.insert("old_steps", stack_rows(old_steps_, d_.size()));
  s.history.insert("ro", to_tensor(Vec(ro_.begin(), ro_.end())));
}

Tensor LBFGS::step(LossClosure closure) {
  KILN_CHECK(param_groups_.size() == 1,
             "LBFGS doesn't support per-parameter options "
             "(parameter groups)");
  KILN_CHECK(closure != nullptr, "LBFGS: step() requires a closure that re-evaluates the loss");
  const auto& o = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  load_search_state();
  if (defer_in_capture("LBFGS::step", closure)) return {};
  Tensor orig_loss = evaluate(closure);
  Vec grad = flat_grad();
  if (abs_max(grad) <= o.tolerance_grad()) return orig_loss;
  iterate(closure, orig_loss.item<double>(), std::move(grad));
  save_search_state();
  return orig_loss;
}

void LBFGS::iterate(const LossClosure& closure, double loss, Vec grad) {
  const auto& o = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  const int64_t max_eval = o.max_eval().value_or(o.max_iter() * 5 / 4);
  int64_t evals = 1;

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
}

}  // namespace kiln::optim

#pragma once
// Anomaly detection for the backward pass, as libtorch's torch::autograd::AnomalyMode and
// DetectAnomalyGuard. While enabled, backward() checks every gradient a node returns and raises
// "Function 'MulBackward0' returned nan values in its 0th output." at the first NaN (with
// check_nan), and an error thrown inside a node's backward is reported with that node's name
// on stderr before it propagates. The switch is process-wide, as libtorch's; checking costs one
// pass over each gradient.
namespace kiln::autograd {

class AnomalyMode {
 public:
  static bool is_enabled();
  static bool should_check_nan();
  static void set_enabled(bool enabled, bool check_nan = true);
};

// Enables anomaly mode for its lifetime and restores the previous setting after.
class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_nan = true);
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_enabled_, prev_check_nan_;
};

}  // namespace kiln::autograd

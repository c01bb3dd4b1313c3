#include "kiln/autograd/anomaly_mode.h"

#include <atomic>

namespace kiln::autograd {
namespace {
std::atomic<bool> enabled{false};
std::atomic<bool> check_nan_enabled{true};
}  // namespace

bool AnomalyMode::is_enabled() { return enabled.load(std::memory_order_relaxed); }
bool AnomalyMode::should_check_nan() { return check_nan_enabled.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool on, bool check_nan) {
  enabled.store(on, std::memory_order_relaxed);
  check_nan_enabled.store(check_nan, std::memory_order_relaxed);
}

DetectAnomalyGuard::DetectAnomalyGuard(bool check_nan)
    : prev_enabled_(AnomalyMode::is_enabled()), prev_check_nan_(AnomalyMode::should_check_nan()) {
  AnomalyMode::set_enabled(true, check_nan);
}

DetectAnomalyGuard::~DetectAnomalyGuard() {
  AnomalyMode::set_enabled(prev_enabled_, prev_check_nan_);
}

}  // namespace kiln::autograd

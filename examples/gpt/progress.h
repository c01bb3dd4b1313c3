#pragma once
// Training progress: a redrawn bar on a terminal, plain periodic lines otherwise.
#include <chrono>
#include <cstdint>
#include <string>

namespace gpt {

class Progress {
 public:
  Progress(int64_t first_step, int64_t total_steps);
  // Reports step (1-based) with its loss and the tokens it processed.
  void update(int64_t step, double loss, int64_t tokens);
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  bool terminal_;
  int64_t first_, total_, tokens_ = 0;
  Clock::time_point start_, last_print_;
};

}  // namespace gpt

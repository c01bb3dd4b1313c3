#include "examples/gpt/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gpt {

Progress::Progress(int64_t first_step, int64_t total_steps)
    : terminal_(isatty(STDOUT_FILENO) != 0),
      first_(first_step),
      total_(total_steps),
      start_(Clock::now()),
      last_print_(start_) {}

void Progress::update(int64_t step, double loss, int64_t tokens) {
  tokens_ += tokens;
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  const bool last = step == total_;
  if (!last && since_print < (terminal_ ? 0.2 : 10.0)) return;
  last_print_ = now;
  const double done = static_cast<double>(step - first_);
  const double left = done > 0 ? elapsed / done * static_cast<double>(total_ - step) : 0;
  const double tok_per_s = elapsed > 0 ? static_cast<double>(tokens_) / elapsed : 0;
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled =
        static_cast<int>(kWidth * static_cast<double>(step) / static_cast<double>(total_));
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::printf("\r[%s] step %lld/%lld  loss %.4f  %.0f tok/s  %.0fs left ", bar.c_str(),
                static_cast<long long>(step), static_cast<long long>(total_), loss, tok_per_s,
                left);
  } else {
    std::printf("step %lld/%lld  loss %.4f  %.0f tok/s  %.0fs left\n", static_cast<long long>(step),
                static_cast<long long>(total_), loss, tok_per_s, left);
  }
  std::fflush(stdout);
}

void Progress::finish() {
  if (terminal_) std::printf("\n");
  std::fflush(stdout);
}

}  // namespace gpt

#pragma once
// parallel_for over [begin, end) with OpenMP; grain is the smallest chunk worth a thread.
#include <algorithm>
#include <cstdint>
#include <exception>

namespace kiln::cpu {

constexpr int64_t kParallelGrain = 32768;
int num_threads();
void set_num_threads(int n);
bool in_parallel_region();

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  int64_t chunks = std::min<int64_t>(num_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  const int64_t step = (n + chunks - 1) / chunks;
  // An exception may not leave an OpenMP region (that terminates the process): the first one
  // thrown (a kernel's argument check) is rethrown after it.
  std::exception_ptr error;
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = begin + c * step;
    int64_t e = std::min(end, b + step);
    if (b >= e) continue;
    try {
      f(b, e);
    } catch (...) {
#pragma omp critical(kiln_parallel_for_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace kiln::cpu

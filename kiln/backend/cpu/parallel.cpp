#include "kiln/backend/cpu/parallel.h"

#include <omp.h>

#include <algorithm>

#include "kiln/core/error.h"
#include "kiln/core/parallel.h"

namespace kiln::cpu {
int num_threads() { return omp_get_max_threads(); }
void set_num_threads(int n) { omp_set_num_threads(n); }
bool in_parallel_region() { return omp_in_parallel(); }
}  // namespace kiln::cpu

namespace kiln {

void parallel_for(int64_t begin, int64_t end, int64_t grain_size,
                  const std::function<void(int64_t, int64_t)>& f) {
  KILN_CHECK(grain_size >= 0, "parallel_for: grain_size must be >= 0, got ", grain_size);
  if (end - begin < grain_size) {
    if (begin < end) f(begin, end);
    return;
  }
  cpu::parallel_for(begin, end, std::max<int64_t>(grain_size, 1), f);
}

bool in_parallel_region() { return cpu::in_parallel_region(); }

int get_thread_num() { return omp_get_thread_num(); }

}  // namespace kiln

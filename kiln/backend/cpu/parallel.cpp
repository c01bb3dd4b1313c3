#include "kiln/backend/cpu/parallel.h"

#include <omp.h>

namespace kiln::cpu {
int num_threads() { return omp_get_max_threads(); }
void set_num_threads(int n) { omp_set_num_threads(n); }
bool in_parallel_region() { return omp_in_parallel(); }
}  // namespace kiln::cpu

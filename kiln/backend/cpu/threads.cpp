#include "kiln/core/threads.h"

#include "kiln/backend/cpu/parallel.h"
#include "kiln/core/error.h"

namespace kiln {

void set_num_threads(int n) {
  KILN_CHECK(n > 0, "set_num_threads: expected a positive number of threads, got ", n);
  cpu::set_num_threads(n);  // OpenBLAS follows at its next call (cpu::sync_blas_threads)
}

int get_num_threads() { return cpu::num_threads(); }

}  // namespace kiln

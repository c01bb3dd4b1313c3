#pragma once
// The CPU pooling kernels' loop over [N, C] planes.
#include <algorithm>
#include <cstdint>

#include "kiln/backend/cpu/parallel.h"

namespace kiln::pool {

// f(plane) for each of `planes` planes, in parallel; work_per_plane sizes the chunks.
template <class F>
void for_planes(int64_t planes, int64_t work_per_plane, const F& f) {
  cpu::parallel_for(
      0, planes, std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(work_per_plane, 1)),
      [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) f(p);
      });
}

}  // namespace kiln::pool

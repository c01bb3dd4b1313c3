#pragma once
// at::parallel_for for user code: f(begin, end) over chunks of [begin, end) on Kiln's CPU threads
// (kiln::set_num_threads). Runs f(begin, end) on the calling thread when the range is under
// grain_size or when called from inside a parallel region, as libtorch's does. An exception
// thrown by f is rethrown on the calling thread. The work runs in libkiln, so the calling program
// needs no OpenMP flags.
#include <cstdint>
#include <functional>

namespace kiln {

void parallel_for(int64_t begin, int64_t end, int64_t grain_size,
                  const std::function<void(int64_t, int64_t)>& f);
// Whether the caller runs inside one of Kiln's parallel regions.
bool in_parallel_region();

}  // namespace kiln

#pragma once
// at::parallel_for for user code: f(begin, end) over chunks of [begin, end) on Kiln's CPU threads
// (kiln::set_num_threads). Runs f(begin, end) on the calling thread when the range is under
// grain_size or when called from inside a parallel region, as libtorch's does. An exception
// thrown by f is rethrown on the calling thread. The work runs in libkiln, so the calling program
// needs no OpenMP flags.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/core/threads.h"

namespace kiln {

void parallel_for(int64_t begin, int64_t end, int64_t grain_size,
                  const std::function<void(int64_t, int64_t)>& f);
// Whether the caller runs inside one of Kiln's parallel regions.
bool in_parallel_region();
// The calling thread's index within the current parallel region (0 outside one).
int get_thread_num();

// at::parallel_reduce: splits [begin, end) into at most get_num_threads() chunks of at least
// grain_size, reduces each with f(chunk_begin, chunk_end, ident) in parallel, then folds the
// partial results in chunk order with combine(a, b), starting from ident.
template <class T, class F, class Combine>
T parallel_reduce(int64_t begin, int64_t end, int64_t grain_size, const T& ident, const F& f,
                  const Combine& combine) {
  if (begin >= end) return ident;
  const int64_t n = end - begin;
  const int64_t by_grain = grain_size > 0 ? (n + grain_size - 1) / grain_size : n;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), by_grain));
  const int64_t chunk = (n + chunks - 1) / chunks;
  std::vector<T> partial(static_cast<size_t>(chunks), ident);
  parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t lo = begin + c * chunk;
      if (lo >= end) continue;
      partial[static_cast<size_t>(c)] = f(lo, std::min(end, lo + chunk), ident);
    }
  });
  T result = ident;
  for (const T& p : partial) result = combine(result, p);
  return result;
}

}  // namespace kiln

#include "kiln/backend/cpu/scatter_rows.h"

#include <atomic>

namespace kiln::cpu {
namespace {

// Whether dims after `dim` of an operand with these strides (over the index's sizes) form one
// contiguous row.
bool row_contiguous(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                    int64_t dim) {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d > dim; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// Rows of a contiguous index whose elements all equal the row's first: their first elements.
bool constant_rows(const int64_t* index, int64_t row_stride, int64_t E, int64_t F,
                   std::vector<int64_t>& idx) {
  std::atomic<bool> constant{true};
  parallel_for(0, E, std::max<int64_t>(1, kParallelGrain / F), [&](int64_t b, int64_t e) {
    bool same = true;
    for (int64_t r = b; r < e && same; ++r) {
      const int64_t* row = index + r * row_stride;
      const int64_t v = row[0];
      for (int64_t f = 1; f < F; ++f) same &= row[f] == v;
      idx[r] = v;
    }
    if (!same) constant.store(false, std::memory_order_relaxed);
  });
  return constant.load();
}

}  // namespace

std::optional<RowPlan> row_plan(const Geometry& ig, const int64_t* index, int64_t dim,
                                const std::vector<const std::vector<int64_t>*>& operands,
                                int64_t dest_rows) {
  const int64_t nd = static_cast<int64_t>(ig.sizes.size());
  for (int64_t d = 0; d < dim; ++d)
    if (ig.sizes[d] != 1) return std::nullopt;
  RowPlan p;
  p.E = ig.sizes[dim];
  for (int64_t d = dim + 1; d < nd; ++d) p.F *= ig.sizes[d];
  // Short rows gain from the row path only when there are many of them (a parallel sort).
  if (p.E == 0 || p.F == 0 || (p.F < 8 && p.E < 65536)) return std::nullopt;
  if (dest_rows > 0 && dest_rows > 4 * p.E + 65536) return std::nullopt;
  for (const std::vector<int64_t>* strides : operands)
    if (!row_contiguous(ig.sizes, *strides, dim)) return std::nullopt;
  p.idx.resize(static_cast<size_t>(p.E));
  bool broadcast = true;
  for (int64_t d = dim + 1; d < nd; ++d)
    if (ig.sizes[d] != 1 && ig.strides[d] != 0) broadcast = false;
  const int64_t row_stride = ig.strides[dim];
  if (broadcast || p.F == 1) {
    for (int64_t r = 0; r < p.E; ++r) p.idx[r] = index[r * row_stride];
    return p;
  }
  if (!row_contiguous(ig.sizes, ig.strides, dim)) return std::nullopt;
  if (!constant_rows(index, row_stride, p.E, p.F, p.idx)) return std::nullopt;
  return p;
}

Buckets bucket_by_destination(const std::vector<int64_t>& idx, int64_t dest_rows) {
  const int64_t E = static_cast<int64_t>(idx.size());
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(num_threads(), E / 16384));
  const int64_t step = (E + chunks - 1) / chunks;
  // hist[c][n]: edges of chunk c sent to n; after the prefix sum, where chunk c writes them.
  std::vector<std::vector<int64_t>> hist(static_cast<size_t>(chunks));
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      std::vector<int64_t>& h = hist[c];
      h.assign(static_cast<size_t>(dest_rows), 0);
      const int64_t end = std::min(E, (c + 1) * step);
      for (int64_t e = c * step; e < end; ++e) ++h[idx[e]];
    }
  });
  Buckets b;
  b.start.resize(static_cast<size_t>(dest_rows) + 1);
  int64_t running = 0;
  for (int64_t n = 0; n < dest_rows; ++n) {
    b.start[n] = running;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t count = hist[c][n];
      hist[c][n] = running;
      running += count;
    }
  }
  b.start[dest_rows] = running;
  b.order.resize(static_cast<size_t>(E));
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      std::vector<int64_t>& h = hist[c];
      const int64_t end = std::min(E, (c + 1) * step);
      for (int64_t e = c * step; e < end; ++e) b.order[h[idx[e]]++] = e;
    }
  });
  return b;
}

std::vector<int64_t> balanced_ranges(const Buckets& b, int64_t dest_rows, int64_t tasks) {
  const int64_t E = b.start[dest_rows];
  tasks = std::max<int64_t>(1, std::min(tasks, dest_rows));
  std::vector<int64_t> ranges(static_cast<size_t>(tasks) + 1);
  ranges[0] = 0;
  for (int64_t t = 1; t < tasks; ++t) {
    const int64_t target = E * t / tasks;
    const int64_t n =
        std::lower_bound(b.start.begin(), b.start.end() - 1, target) - b.start.begin();
    ranges[t] = std::max(ranges[t - 1], n);
  }
  ranges[tasks] = dest_rows;
  return ranges;
}

}  // namespace kiln::cpu

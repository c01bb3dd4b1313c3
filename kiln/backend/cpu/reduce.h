#pragma once
// CPU reduction driver. A reduction of x over a set of dims into a contiguous output is planned
// from x's sizes and strides, without a copy when the layout allows:
//  - Inner: the elements reduced into one output form one contiguous run (reduced dims
//    innermost and dense). Each run is folded in blocks by a loop over several independent
//    accumulators ("lanes") that the compiler vectorises; blocks are then combined in a wider
//    accumulator (float lanes, double total), which keeps sums of millions of float32 values
//    accurate. Parallel over outputs, or within the runs when there are few of them.
//  - Outer: the innermost kept dim is dense (sum over dim 0 of [N, M]): whole input rows are
//    folded into a buffer of accumulators, vectorised along the kept dim.
//  - Copy: anything else; the reduced dims are moved innermost by one contiguous copy.
//
// Two kinds of reducers plug in:
//  - Elementwise (sum, prod, max, norms, ...): types Lane and Acc (never bool), and
//      Lane lane_init(), fold(Lane, compute_t<T>), merge(Lane, Lane);
//      Acc acc_init(), add_lane(Acc, Lane), combine(Acc, Acc);
//      void write(int64_t output_index, Acc, int64_t count);
//    and optionally Acc fold_contiguous(const T*, int64_t n) for a contiguous run (explicit
//    vector code, reduce_float_runs.h); run by reduce_elementwise<T>() on any plan.
//  - Run reducers (var, logsumexp): type Acc, and
//      Acc init(), run(const T* p, int64_t n), combine(Acc, Acc); void write(o, Acc, count);
//    where run() sees contiguous pieces of at most kReduceBlock elements; reduce_runs<T>() uses
//    the Inner plan (copying first when the layout is not Inner).
#include <algorithm>
#include <memory>
#include <vector>

#include "kiln/backend/cpu/loops.h"

namespace kiln::cpu {

// Elements folded into one set of lanes before they are added to the wider accumulator.
constexpr int64_t kReduceBlock = 2048;

struct ReducePlan {
  enum class Kind { Inner, Outer, Copy };
  Kind kind = Kind::Inner;
  int64_t outputs = 1;  // output elements
  int64_t reduced = 1;  // input elements folded into each output
  // Kept dims walked by the outer loop, with input strides (Outer: all but the columns).
  std::vector<int64_t> kept_sizes, kept_strides;
  // Reduced dims with input strides (Outer; Inner has one dense run of `reduced`).
  std::vector<int64_t> red_sizes, red_strides;
  int64_t columns = 1;  // Outer: length of the dense innermost kept block
};

// `dims` must be wrapped, sorted and unique.
ReducePlan plan_reduce(const Tensor& x, const std::vector<int64_t>& dims);
// A contiguous copy of x with the kept dims first (in order) and the reduced dims last.
Tensor reduced_dims_innermost(const Tensor& x, const std::vector<int64_t>& dims);
// The Inner plan of reduced_dims_innermost(x, dims) for a plan of x.
ReducePlan inner_plan_of_copy(const ReducePlan& p);

// Offsets sum(index_d * stride_d) of a row-major walk over `sizes`, from flat position `start`.
class OffsetWalker {
 public:
  OffsetWalker(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
               int64_t start)
      : sizes_(sizes), strides_(strides), index_(sizes.size()) {
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0 && start > 0; --d) {
      index_[d] = start % sizes[d];
      start /= sizes[d];
      offset_ += index_[d] * strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
      offset_ += strides_[d];
      if (++index_[d] < sizes_[d]) return;
      offset_ -= strides_[d] * sizes_[d];
      index_[d] = 0;
    }
  }

 private:
  const std::vector<int64_t>& sizes_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// Independent accumulators per block: eight vector registers of Lane, so that the adds of a
// long run are not serialised on a few registers' latency.
template <class Lane>
constexpr int64_t kLanes = 256 / sizeof(Lane);
template <class Lane>
constexpr int64_t kRegisterLanes = sizeof(Lane) >= 32 ? 1 : 32 / sizeof(Lane);

// Folds p[0, n), n a positive multiple of W, into acc with W independent lanes. The lanes are
// merged pairwise down to one vector register's worth (vectorised halves, unrolled so that each
// has a constant length), then added to acc one by one: merging within a register would go
// through the stack, a store-to-load stall on every run.
template <int64_t W, class T, class R>
typename R::Acc fold_lanes(const R& r, const T* p, int64_t n, typename R::Acc acc) {
  using Lane = typename R::Lane;
  using C = compute_t<T>;
  constexpr int64_t V = std::min(W, kRegisterLanes<Lane>);
  Lane lanes[W];  // started from the first W elements (cheaper than filling, then folding)
  for (int64_t k = 0; k < W; ++k) lanes[k] = r.fold(r.lane_init(), static_cast<C>(p[k]));
  for (int64_t i = W; i < n; i += W)
    for (int64_t k = 0; k < W; ++k) lanes[k] = r.fold(lanes[k], static_cast<C>(p[i + k]));
#pragma GCC unroll 8
  for (int64_t h = W / 2; h >= V; h /= 2)
    for (int64_t k = 0; k < h; ++k) lanes[k] = r.merge(lanes[k], lanes[k + h]);
  for (int64_t k = 0; k < V; ++k) acc = r.add_lane(acc, lanes[k]);
  return acc;
}

// Folds n contiguous elements with an elementwise reducer: blocks of kLanes lanes, then what is
// left in one register's worth of lanes, then in one lane.
template <class T, class R>
typename R::Acc fold_run_lanes(const R& r, const T* p, int64_t n) {
  using Lane = typename R::Lane;
  using C = compute_t<T>;
  constexpr int64_t L = kLanes<Lane>, V = kRegisterLanes<Lane>;
  typename R::Acc acc = r.acc_init();
  int64_t i = 0;
  while (n - i >= L) {
    const int64_t len = std::min<int64_t>(kReduceBlock, (n - i) / L * L);
    acc = fold_lanes<L>(r, p + i, len, acc);
    i += len;
  }
  if (V > 1 && n - i >= V) {
    const int64_t len = (n - i) / V * V;
    acc = fold_lanes<V>(r, p + i, len, acc);
    i += len;
  }
  if (i < n) {
    Lane tail = r.lane_init();
    for (; i < n; ++i) tail = r.fold(tail, static_cast<C>(p[i]));
    acc = r.add_lane(acc, tail);
  }
  return acc;
}

// Folds n contiguous elements: by the reducer's own `Acc fold_contiguous(const T*, int64_t)` where
// it has one (explicit vector code), else by fold_run_lanes.
template <class T, class R>
typename R::Acc fold_run(const R& r, const T* p, int64_t n) {
  if constexpr (requires { r.fold_contiguous(p, n); }) {
    return r.fold_contiguous(p, n);
  } else {
    return fold_run_lanes<T>(r, p, n);
  }
}

// An elementwise reducer seen as a run reducer.
template <class T, class R>
struct LaneRuns {
  const R& r;
  using Acc = typename R::Acc;
  Acc init() const { return r.acc_init(); }
  Acc run(const T* p, int64_t n) const { return fold_run<T>(r, p, n); }
  Acc combine(Acc a, Acc b) const { return r.combine(a, b); }
  void write(int64_t o, Acc a, int64_t n) const { r.write(o, a, n); }
};

inline int reduce_threads() { return in_parallel_region() ? 1 : num_threads(); }

// Inner plan: every output folds one contiguous run of p.reduced elements.
template <class T, class B>
void run_inner(const ReducePlan& p, const T* x, const B& b) {
  using Acc = typename B::Acc;
  const int64_t P = p.outputs, R = p.reduced;
  auto fold_range = [&](const T* run, int64_t n) {
    Acc acc = b.init();
    for (int64_t i = 0; i < n; i += kReduceBlock)
      acc = b.combine(acc, b.run(run + i, std::min(kReduceBlock, n - i)));
    return acc;
  };
  const int threads = reduce_threads();
  if (threads == 1 || P >= 4 * threads || R < 2 * kParallelGrain) {
    // Rows at one stride (a [rows, R] reduction) need no offset walker; short rows need no
    // blocks: per row, only the run itself.
    const bool one_stride = p.kept_sizes.size() <= 1;
    const int64_t stride = p.kept_strides.empty() ? 0 : p.kept_strides[0];
    parallel_for(0, P, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R, 1)),
                 [&](int64_t begin, int64_t end) {
                   if (one_stride && R > 0 && R <= kReduceBlock) {
                     for (int64_t o = begin; o < end; ++o) b.write(o, b.run(x + o * stride, R), R);
                     return;
                   }
                   OffsetWalker w(p.kept_sizes, p.kept_strides, begin);
                   for (int64_t o = begin; o < end; ++o, w.next())
                     b.write(o, fold_range(x + w.offset(), R), R);
                 });
    return;
  }
  // Few long runs: each is split into `parts` pieces folded in parallel, combined in order.
  const int64_t parts = std::min<int64_t>((4 * threads + P - 1) / P, R / kParallelGrain);
  const int64_t piece = (R + parts - 1) / parts;
  std::vector<Acc> partial(P * parts, b.init());
  parallel_for(0, P * parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / parts, start = (item % parts) * piece;
      if (start >= R) continue;
      OffsetWalker w(p.kept_sizes, p.kept_strides, o);
      partial[item] = fold_range(x + w.offset() + start, std::min(piece, R - start));
    }
  });
  for (int64_t o = 0; o < P; ++o) {
    Acc acc = partial[o * parts];
    for (int64_t q = 1; q < parts; ++q) acc = b.combine(acc, partial[o * parts + q]);
    b.write(o, acc, R);
  }
}

// Columns folded together by the Outer plan, and input rows per block of lanes.
constexpr int64_t kReduceColumns = 4096;
constexpr int64_t kReduceRowBlock = 32;

// Outer plan: out[k * columns + j] folds x[kept(k) + red(i) + j] over the reduced positions i.
template <class T, class R>
void run_outer(const ReducePlan& p, const T* x, const R& r) {
  using Lane = typename R::Lane;
  using Acc = typename R::Acc;
  using C = compute_t<T>;
  const int64_t M = p.columns, N = p.reduced, K = p.outputs / M;
  const int64_t chunks = (M + kReduceColumns - 1) / kReduceColumns;
  const int64_t items = K * chunks;
  const int threads = reduce_threads();
  int64_t parts = 1;  // pieces of the reduced range when there are few column chunks
  if (threads > 1 && items < 2 * threads && N * M >= 2 * kParallelGrain)
    parts = std::min<int64_t>((2 * threads + items - 1) / items, N);
  std::vector<Acc> partial(parts > 1 ? items * parts * kReduceColumns : 0);

  auto fold_chunk = [&](int64_t item, Lane* __restrict lanes, Acc* __restrict acc) {
    const int64_t q = item % parts, it = item / parts;
    const int64_t k = it / chunks, j0 = (it % chunks) * kReduceColumns;
    const int64_t w = std::min(kReduceColumns, M - j0);
    const int64_t n0 = q * N / parts, n1 = (q + 1) * N / parts;
    const T* base = x + OffsetWalker(p.kept_sizes, p.kept_strides, k).offset() + j0;
    OffsetWalker rw(p.red_sizes, p.red_strides, n0);
    for (int64_t i = n0; i < n1;) {
      const int64_t begin = i, end = std::min(n1, i + kReduceRowBlock);
      // The block's first row starts the lanes; the first block starts the accumulators, and
      // the last one goes straight to the output.
      const T* __restrict first = base + rw.offset();
      for (int64_t j = 0; j < w; ++j) lanes[j] = r.fold(r.lane_init(), static_cast<C>(first[j]));
      for (++i, rw.next(); i < end; ++i, rw.next()) {
        const T* __restrict row = base + rw.offset();
        for (int64_t j = 0; j < w; ++j) lanes[j] = r.fold(lanes[j], static_cast<C>(row[j]));
      }
      const bool first_block = begin == n0, last_block = end == n1;
      if (last_block && parts == 1) {
        const int64_t o = k * M + j0;
        if (first_block) {
          for (int64_t j = 0; j < w; ++j) r.write(o + j, r.add_lane(r.acc_init(), lanes[j]), N);
        } else {
          for (int64_t j = 0; j < w; ++j) r.write(o + j, r.add_lane(acc[j], lanes[j]), N);
        }
      } else if (first_block) {
        for (int64_t j = 0; j < w; ++j) acc[j] = r.add_lane(r.acc_init(), lanes[j]);
      } else {
        for (int64_t j = 0; j < w; ++j) acc[j] = r.add_lane(acc[j], lanes[j]);
      }
    }
    if (parts > 1) std::copy(acc, acc + w, partial.begin() + item * kReduceColumns);
  };
  const int64_t work = std::min(M, kReduceColumns) * std::max<int64_t>(N / parts, 1);
  parallel_for(0, items * parts, std::max<int64_t>(1, kParallelGrain / work),
               [&](int64_t begin, int64_t end) {
                 const int64_t width = std::min(M, kReduceColumns);
                 std::unique_ptr<Lane[]> lanes(new Lane[width]);
                 std::unique_ptr<Acc[]> acc(new Acc[width]);
                 for (int64_t item = begin; item < end; ++item)
                   fold_chunk(item, lanes.get(), acc.get());
               });
  if (parts == 1) return;
  for (int64_t it = 0; it < items; ++it) {
    const int64_t k = it / chunks, j0 = (it % chunks) * kReduceColumns;
    const int64_t w = std::min(kReduceColumns, M - j0);
    for (int64_t j = 0; j < w; ++j) {
      Acc a = partial[(it * parts) * kReduceColumns + j];
      for (int64_t q = 1; q < parts; ++q)
        a = r.combine(a, partial[(it * parts + q) * kReduceColumns + j]);
      r.write(k * M + j0 + j, a, N);
    }
  }
}

// Reduces x (storage type T) over `dims` (wrapped, sorted, unique) with an elementwise reducer;
// output element o (row-major over the kept dims) goes to r.write(o, ...).
template <class T, class R>
void reduce_elementwise(const Tensor& x, const std::vector<int64_t>& dims, const R& r) {
  const ReducePlan p = plan_reduce(x, dims);
  if (p.outputs == 0) return;
  if (p.reduced == 0) {
    for (int64_t o = 0; o < p.outputs; ++o) r.write(o, r.acc_init(), 0);
    return;
  }
  const T* data = static_cast<const T*>(x.data_ptr());
  switch (p.kind) {
    case ReducePlan::Kind::Inner:
      return run_inner<T>(p, data, LaneRuns<T, R>{r});
    case ReducePlan::Kind::Outer:
      return run_outer<T>(p, data, r);
    case ReducePlan::Kind::Copy: {
      Tensor c = reduced_dims_innermost(x, dims);
      return run_inner<T>(inner_plan_of_copy(p), static_cast<const T*>(c.data_ptr()),
                          LaneRuns<T, R>{r});
    }
  }
}

// Reduces x over `dims` with a run reducer (contiguous runs; copies when the plan is not Inner).
template <class T, class B>
void reduce_runs(const Tensor& x, const std::vector<int64_t>& dims, const B& b) {
  const ReducePlan p = plan_reduce(x, dims);
  if (p.outputs == 0) return;
  if (p.reduced == 0) {
    for (int64_t o = 0; o < p.outputs; ++o) b.write(o, b.init(), 0);
    return;
  }
  if (p.kind == ReducePlan::Kind::Inner)
    return run_inner<T>(p, static_cast<const T*>(x.data_ptr()), b);
  Tensor c = reduced_dims_innermost(x, dims);
  run_inner<T>(inner_plan_of_copy(p), static_cast<const T*>(c.data_ptr()), b);
}

}  // namespace kiln::cpu

#pragma once
// Evaluation of a traced graph over a tile of (query, key) positions: each node is computed once
// per tile over the positions it depends on (a scalar, a row of queries, a row of keys, or the
// whole tile), then the result is broadcast to the tile.
#include <cstdint>
#include <vector>

#include "kiln/ops/nn/flex/expr.h"

namespace kiln::flex {

// A captured tensor as the evaluator reads it: dense values of T and its sizes.
template <class T>
struct Table {
  const T* data;
  std::vector<int64_t> sizes;
};

template <class T>
class TileEvaluator {
 public:
  TileEvaluator(const Graph& g, std::vector<Table<T>> tables, const char* op);

  // out (m x nb) = the graph at batch b, head h, queries i0.., keys j0.., with score the tile of
  // scores (m x nb; unused when the graph does not read it).
  void evaluate(int64_t b, int64_t h, int64_t i0, int64_t m, int64_t j0, int64_t nb, const T* score,
                T* out) const;

 private:
  Graph g_;
  std::vector<Table<T>> tables_;
  std::vector<uint8_t> depends_;  // bit 0: on the query, bit 1: on the key
  const char* op_;
};

}  // namespace kiln::flex

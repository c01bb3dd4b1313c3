#pragma once
// The cases of gnn_vs_torch (the graph neural network ops of issue 3) and the runners both sides
// implement (gnn_kiln.cpp, gnn_torch.cpp). Both sides build their tensors from the same GnnData.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/libtorch/timing.h"

namespace bench {

// A random graph: `edges` edges into `nodes` rows of `features` float32 features.
struct GnnData {
  int64_t edges = 0, nodes = 0, features = 0;
  std::vector<int64_t> index;  // [edges] a row in [0, nodes) per edge
  std::vector<float> src;      // [edges, features] one message per edge
  std::vector<float> table;    // [nodes, features] node features
  // The same number of edges as a [nodes, nodes] CSR matrix with rows in order: crow [nodes + 1],
  // col and values [edges] (columns ascending within a row).
  std::vector<int64_t> crow, col;
  std::vector<float> values;
};

enum class GnnOp {
  ScatterReduce,  // zeros (ones for prod) [nodes, F] .scatter_reduce(0, index [edges, F], src)
  Gather,         // table.gather(0, index [edges, F])
  IndexSelect,    // table.index_select(0, index [edges])
  Sort,           // sort(input, -1) values
  Topk,           // topk(input, k, -1) values
  SparseMm,       // sparse::mm(csr [nodes, nodes], table, reduce)
};

struct GnnCase {
  GnnOp op;
  std::string reduce;  // ScatterReduce and SparseMm
  int64_t k = 0;       // Topk
  // Sort and Topk: the input's values and shape.
  const std::vector<float>* input = nullptr;
  std::vector<int64_t> shape;
};

std::unique_ptr<Runner> make_kiln_gnn_runner(const GnnCase& c, const GnnData& d);
std::unique_ptr<Runner> make_torch_gnn_runner(const GnnCase& c, const GnnData& d);

}  // namespace bench

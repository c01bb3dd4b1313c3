#pragma once
// A flow network and its minimum cut (Dinic's maximum flow), for the partitioner's choice of
// what a training graph saves (partition.h).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace kiln::compiler {

class FlowNetwork {
 public:
  static constexpr int64_t kInfinite = std::numeric_limits<int64_t>::max() / 4;

  explicit FlowNetwork(int nodes) : first_(static_cast<size_t>(nodes), -1) {}
  void add_edge(int from, int to, int64_t capacity);
  // The maximum flow from source to sink (kInfinite when a path has only infinite edges).
  int64_t max_flow(int source, int sink);
  // After max_flow: the nodes the residual network reaches from the source, the source's side
  // of a minimum cut.
  std::vector<char> source_side(int source) const;

 private:
  struct Edge {
    int to;
    int next;  // the next edge leaving the same node, -1 at the end
    int64_t capacity;
  };
  bool levels_from(int source, int sink);
  int64_t push(int node, int sink, int64_t limit);

  std::vector<Edge> edges_;  // an edge and its reverse are neighbours: e and e ^ 1
  std::vector<int> first_;
  std::vector<int> level_, next_edge_;
};

}  // namespace kiln::compiler

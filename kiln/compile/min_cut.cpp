#include "kiln/compile/min_cut.h"

#include <algorithm>
#include <deque>

namespace kiln::compiler {

void FlowNetwork::add_edge(int from, int to, int64_t capacity) {
  edges_.push_back({to, first_[from], capacity});
  first_[from] = static_cast<int>(edges_.size()) - 1;
  edges_.push_back({from, first_[to], 0});
  first_[to] = static_cast<int>(edges_.size()) - 1;
}

// Breadth-first levels over edges with capacity left; whether the sink is reached.
bool FlowNetwork::levels_from(int source, int sink) {
  level_.assign(first_.size(), -1);
  level_[source] = 0;
  std::deque<int> queue{source};
  while (!queue.empty()) {
    const int n = queue.front();
    queue.pop_front();
    for (int e = first_[n]; e >= 0; e = edges_[e].next)
      if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
        level_[edges_[e].to] = level_[n] + 1;
        queue.push_back(edges_[e].to);
      }
  }
  return level_[sink] >= 0;
}

// Pushes up to `limit` from node towards the sink along edges that go one level deeper.
int64_t FlowNetwork::push(int node, int sink, int64_t limit) {
  if (node == sink) return limit;
  for (int& e = next_edge_[node]; e >= 0; e = edges_[e].next) {
    Edge& edge = edges_[e];
    if (edge.capacity <= 0 || level_[edge.to] != level_[node] + 1) continue;
    const int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity));
    if (pushed > 0) {
      edge.capacity -= pushed;
      edges_[e ^ 1].capacity += pushed;
      return pushed;
    }
  }
  return 0;
}

int64_t FlowNetwork::max_flow(int source, int sink) {
  int64_t flow = 0;
  while (levels_from(source, sink)) {
    next_edge_ = first_;
    while (const int64_t pushed = push(source, sink, kInfinite)) {
      if (pushed >= kInfinite) return kInfinite;
      flow += pushed;
    }
  }
  return flow;
}

std::vector<char> FlowNetwork::source_side(int source) const {
  std::vector<char> seen(first_.size(), 0);
  std::vector<int> stack{source};
  seen[source] = 1;
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    for (int e = first_[n]; e >= 0; e = edges_[e].next)
      if (edges_[e].capacity > 0 && !seen[edges_[e].to]) {
        seen[edges_[e].to] = 1;
        stack.push_back(edges_[e].to);
      }
  }
  return seen;
}

}  // namespace kiln::compiler

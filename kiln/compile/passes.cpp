#include "kiln/compile/passes.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

// Every use of value `from` reads `to` instead.
void replace_uses(Graph& g, int from, int to) {
  for (Node& n : g.nodes)
    for (int& id : n.inputs)
      if (id == from) id = to;
  for (int& id : g.outputs)
    if (id == from) id = to;
}

// Drops nodes and renumbers the producer of each node output.
void keep_nodes(Graph& g, const std::vector<bool>& keep) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    for (int id : g.nodes[i].outputs) g.values[id].producer = static_cast<int>(kept.size());
    kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  // A merged value shared by two readers is wrong once either is mutated in place (directly or
  // through a view), and aliasing is not tracked here: graphs with in-place ops are left alone,
  // unless those ops all come last (functionalization's copies back into changed arguments).
  bool inplace_seen = false;
  for (const Node& n : g.nodes) {
    if (inplace_seen && !n.op->is_inplace) return 0;
    inplace_seen = inplace_seen || n.op->is_inplace;
  }
  using Key = std::tuple<const OpDef*, std::vector<int>, std::string>;
  std::map<Key, int> seen;  // key -> node index
  std::vector<bool> keep(g.nodes.size(), true);
  int merged = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.op->is_inplace) continue;
    Key key{n.op, n.inputs, n.attrs.to_string()};
    auto [it, fresh] = seen.emplace(std::move(key), static_cast<int>(i));
    if (fresh) continue;
    const Node& first = g.nodes[it->second];
    for (size_t k = 0; k < n.outputs.size(); ++k) replace_uses(g, n.outputs[k], first.outputs[k]);
    keep[i] = false;
    ++merged;
  }
  keep_nodes(g, keep);
  return merged;
}

int eliminate_dead_code(Graph& g) {
  std::vector<bool> live_value(g.values.size(), false);
  for (int id : g.outputs)
    if (id >= 0) live_value[id] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  int removed = 0;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool live = n.op->is_inplace;
    for (int id : n.outputs) live = live || live_value[id];
    if (!live) {
      ++removed;
      continue;
    }
    keep[i] = true;
    for (int id : n.inputs)
      if (id >= 0) live_value[id] = true;
  }
  keep_nodes(g, keep);
  return removed;
}

PassStats simplify(Graph& graph) {
  PassStats s;
  s.merged = eliminate_common_subexpressions(graph);
  s.removed = eliminate_dead_code(graph);
  return s;
}

}  // namespace kiln::compiler

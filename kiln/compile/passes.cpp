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

int reinplace_input_writes(Graph& g) {
  static const OpDef& scatter = get_op("as_strided_scatter");
  static const OpDef& as_strided = get_op("as_strided");
  static const OpDef& copy = get_op("copy_");
  std::vector<int> content_of(g.values.size(), -1);  // a chain value -> the input it is
  std::vector<char> drop(g.nodes.size(), 0), write(g.nodes.size(), 0);
  int rewritten = 0;
  for (size_t w = 0; w < g.nodes.size(); ++w) {
    const Node& n = g.nodes[w];
    if (n.op != &copy || n.inputs.size() != 2 || n.inputs[0] < 0) continue;
    const int in = n.inputs[0];
    if (g.values[in].kind == Value::Kind::NodeOutput) continue;
    std::vector<int> chain;
    int v = n.inputs[1];
    while (v >= 0 && v != in && g.values[v].kind == Value::Kind::NodeOutput &&
           g.nodes[g.values[v].producer].op == &scatter) {
      chain.push_back(g.values[v].producer);
      v = g.nodes[chain.back()].inputs[0];
    }
    if (v != in || chain.empty()) continue;
    for (int s : chain) {
      write[s] = 1;
      content_of[g.nodes[s].outputs[0]] = in;
    }
    drop[w] = 1;
    content_of[n.outputs[0]] = in;
    g.written_in_place.push_back(in);
    ++rewritten;
  }
  if (rewritten == 0) return 0;
  auto read = [&](int& id) {
    if (id >= 0 && id < static_cast<int>(content_of.size()) && content_of[id] >= 0)
      id = content_of[id];
  };
  std::vector<Node> nodes;
  auto push = [&](Node n) {
    for (int id : n.outputs) g.values[id].producer = static_cast<int>(nodes.size());
    nodes.push_back(std::move(n));
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (drop[i]) continue;
    Node n = std::move(g.nodes[i]);
    for (int& id : n.inputs) read(id);
    if (!write[i]) {
      push(std::move(n));
      continue;
    }
    // out = as_strided_scatter(input, src; geometry) becomes copy_(as_strided(input; geometry),
    // src).
    const Value& input = g.values[n.inputs[0]];
    Value view{Value::Kind::NodeOutput, n.attrs.shape(0), n.attrs.shape(1), input.dtype,
               input.device};
    const int view_id = g.add_value(view);
    const int written_id = g.add_value(view);
    push(Node{&as_strided, {n.inputs[0]}, n.attrs, n.symbolic_attrs, n.grad_enabled, {view_id}});
    push(Node{&copy, {view_id, n.inputs[1]}, {}, false, n.grad_enabled, {written_id}});
  }
  g.nodes = std::move(nodes);
  for (int& id : g.outputs) read(id);
  return rewritten;
}

PassStats simplify(Graph& graph) {
  PassStats s;
  s.merged = eliminate_common_subexpressions(graph);
  s.removed = eliminate_dead_code(graph);
  return s;
}

}  // namespace kiln::compiler

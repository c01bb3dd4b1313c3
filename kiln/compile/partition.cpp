#include "kiln/compile/partition.h"

#include <algorithm>

#include "kiln/compile/min_cut.h"
#include "kiln/core/graph_break.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

// Ops cheap enough to run again in the backward rather than keep their results: pointwise ops
// and views, and reductions that do not shrink their input (softmax, not a sum: keeping a small
// result beats keeping the input it is recomputed from, PyTorch's ban_if_reduction). Extern
// kernels (GEMMs, convolutions, attention, norms) never run twice, nor do random or in-place ops.
bool recomputable(const Graph& joint, const Node& n) {
  const OpDef& op = *n.op;
  if (op.is_random || op.is_inplace || op.dynamic_output || op.cross_device) return false;
  using Kind = lowering::Lowering::Kind;
  switch (op.lowering_.kind) {
    case Kind::Pointwise:
    case Kind::View:
      return true;
    case Kind::Reduction: {
      int64_t in = 0, out = 0;
      for (int id : n.inputs)
        if (id >= 0) in += storage_bytes(joint, id);
      for (int id : n.outputs) out += storage_bytes(joint, id);
      return out * 4 >= in;
    }
    default:
      return false;
  }
}

// Per value: an argument or captured tensor that the forward changes in place (the copy back of
// a functionalized change, or an in-place op on it). The backward runs after the whole forward
// and would read the changed memory: neither it nor a view of it may be saved.
std::vector<char> changed_inputs(const Graph& joint) {
  std::vector<char> changed(joint.values.size(), 0);
  for (const Node& n : joint.nodes)
    if (n.op->is_inplace && !n.inputs.empty() && n.inputs[0] >= 0 &&
        joint.values[n.inputs[0]].kind != Value::Kind::NodeOutput)
      changed[n.inputs[0]] = 1;
  return changed;
}

}  // namespace

int storage_root(const Graph& graph, int value) {
  int id = value;
  while (graph.values[id].kind == Value::Kind::NodeOutput) {
    const Node& producer = graph.nodes[graph.values[id].producer];
    if (!producer.op->is_view || producer.inputs.empty() || producer.inputs[0] < 0) break;
    id = producer.inputs[0];
  }
  return id;
}

int64_t storage_bytes(const Graph& graph, int value) {
  const Value& v = graph.values[storage_root(graph, value)];
  int64_t elements = 1;
  for (const SymInt& s : v.sizes) elements *= s.hint();
  return elements * static_cast<int64_t>(element_size(v.dtype));
}

// The network: value v is an edge in(v) -> out(v) whose capacity is what saving v costs. A value
// the forward must compute (an input, a captured tensor, the result of an op that is not
// recomputed) is fed from the source; a recomputable op's result is fed from its inputs' outs;
// what the backward needs drains to the sink. A minimum cut then crosses only in -> out edges:
// the saved values. Values whose in is on the sink's side are recomputed.
SavePlan plan_saved_values(const Graph& joint, const std::vector<char>& backward_value,
                           const std::vector<int>& needed) {
  const int values = static_cast<int>(joint.values.size());
  auto in = [](int v) { return 2 * v; };
  auto out = [](int v) { return 2 * v + 1; };
  const int source = 2 * values, sink = source + 1;
  FlowNetwork net(sink + 1);

  // Ties (equal bytes) go to the later value: saving it spares the backward a recomputation.
  constexpr int64_t kTieBreakSteps = 16;
  const std::vector<char> changed = changed_inputs(joint);
  for (int v = 0; v < values; ++v) {
    if (backward_value[v]) continue;
    const Value& value = joint.values[v];
    const int64_t bytes = value.kind == Value::Kind::Captured ? 0 : storage_bytes(joint, v);
    const int64_t later = (kTieBreakSteps - 1) * (values - v) / values;
    net.add_edge(
        in(v), out(v),
        changed[storage_root(joint, v)] ? FlowNetwork::kInfinite : bytes * kTieBreakSteps + later);
    const bool computed_by_forward =
        value.kind != Value::Kind::NodeOutput || !recomputable(joint, joint.nodes[value.producer]);
    if (computed_by_forward) {
      net.add_edge(source, in(v), FlowNetwork::kInfinite);
    } else {
      for (int u : joint.nodes[value.producer].inputs)
        if (u >= 0) net.add_edge(out(u), in(v), FlowNetwork::kInfinite);
    }
  }
  for (int v : needed) net.add_edge(out(v), sink, FlowNetwork::kInfinite);
  if (net.max_flow(source, sink) >= FlowNetwork::kInfinite)
    throw GraphBreak(
        "the backward reads a tensor argument or captured tensor that the function changes in "
        "place, after the change");
  const std::vector<char> reached = net.source_side(source);

  // From what the backward needs, back through the recomputed values to the saved ones.
  SavePlan plan;
  plan.recompute.assign(joint.nodes.size(), 0);
  std::vector<char> is_saved(joint.values.size(), 0), visited(joint.values.size(), 0);
  std::vector<int> stack(needed.begin(), needed.end());
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    if (visited[v]) continue;
    visited[v] = 1;
    if (reached[in(v)]) {
      is_saved[v] = 1;
      continue;
    }
    const int producer = joint.values[v].producer;
    plan.recompute[producer] = 1;
    for (int u : joint.nodes[producer].inputs)
      if (u >= 0) stack.push_back(u);
  }
  for (int v = 0; v < values; ++v)
    if (is_saved[v]) plan.saved.push_back(v);
  return plan;
}

}  // namespace kiln::compiler

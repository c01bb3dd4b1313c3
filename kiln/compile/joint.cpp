#include "kiln/compile/joint.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "kiln/autograd/grad_mode.h"
#include "kiln/autograd/op_node.h"
#include "kiln/compile/partition.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

// What the backward trace adds to the graph: gradient inputs and the gradients it computed.
struct BackwardTrace {
  std::vector<int> differentiable_results;
  std::vector<Tensor> grads;  // one per target, undefined where none flowed
  std::vector<int> grad_targets;
};

void accumulate(std::unordered_map<int, Tensor>& grads, int id, const Tensor& g) {
  Tensor& sum = grads[id];
  sum = sum.defined() ? sum + g : g;
}

// Walks the forward's nodes backwards from the results, with a tangent input for each one that
// takes a gradient, and lists the gradient of every input and captured tensor that needs one.
BackwardTrace trace_backward(Tracer& tr, const std::vector<Tensor>& results) {
  const size_t forward_nodes = tr.graph().nodes.size();
  const std::vector<int> inputs = tr.graph().inputs;
  const std::vector<int> captured = tr.graph().captured;
  const std::vector<char> needs_grad = values_needing_grad(tr);

  BackwardTrace bt;
  std::unordered_map<int, Tensor> grads;
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].defined()) continue;
    const int id = tr.id_of(results[k]);
    if (id >= static_cast<int>(needs_grad.size()) || !needs_grad[id]) continue;
    const Tensor& r = results[k];
    const SymShape sizes(r.sym_sizes().begin(), r.sym_sizes().end());
    const Tensor tangent = tr.add_input(sizes, contiguous_strides(sizes), r.dtype(), r.device());
    bt.differentiable_results.push_back(static_cast<int>(k));
    accumulate(grads, id, tangent);
  }
  trace_gradients(tr, needs_grad, forward_nodes, grads);

  const int targets = static_cast<int>(inputs.size() + captured.size());
  for (int t = 0; t < targets; ++t) {
    const int id = t < static_cast<int>(inputs.size()) ? inputs[t] : captured[t - inputs.size()];
    if (!needs_grad[id]) continue;
    auto it = grads.find(id);
    bt.grad_targets.push_back(t);
    bt.grads.push_back(it == grads.end() ? Tensor() : it->second);
  }
  return bt;
}

// An in-place op under no_grad (a leaf changed under NoGradGuard): its result is its input
// tensor, which still requires grad and takes the gradients of later readers.
bool returns_its_input(const Node& n) {
  return n.op->is_inplace && !n.grad_enabled && !n.inputs.empty() && n.inputs[0] >= 0 &&
         !n.outputs.empty();
}

// Copies value `id` of `from` into `to` as a new value of `kind` (producer: `producer`).
int copy_value(const Graph& from, Graph& to, int id, Value::Kind kind, int producer) {
  Value v = from.values[id];
  v.kind = kind;
  v.producer = producer;
  return to.add_value(std::move(v));
}

// Copies node n of `from` into `to`, its inputs mapped through `ids`; outputs not mapped yet (a
// recomputed node's saved outputs already are) map to the copies.
void copy_node(const Node& n, const Graph& from, Graph& to, std::vector<int>& ids) {
  Node copy = n;
  for (int& id : copy.inputs)
    if (id >= 0) id = ids[id];
  const int node_id = static_cast<int>(to.nodes.size());
  for (int& id : copy.outputs) {
    const int joint_id = id;
    id = copy_value(from, to, joint_id, Value::Kind::NodeOutput, node_id);
    if (ids[joint_id] < 0) ids[joint_id] = id;
  }
  to.nodes.push_back(std::move(copy));
}

// Splits the joint graph: nodes that read a gradient (directly or through other such nodes)
// form the backward; the rest, the forward. Of the forward values the backward reads, the
// partitioner (partition.h) chooses which the forward saves and which the backward recomputes,
// each recomputed op placed just before the first backward op that reads it.
TrainingGraphs split(const Graph& joint, size_t forward_inputs, size_t results,
                     const BackwardTrace& bt) {
  std::vector<char> backward_value(joint.values.size(), 0), backward_node(joint.nodes.size(), 0);
  for (size_t i = forward_inputs; i < joint.inputs.size(); ++i) backward_value[joint.inputs[i]] = 1;
  for (size_t i = 0; i < joint.nodes.size(); ++i) {
    const Node& n = joint.nodes[i];
    backward_node[i] = std::any_of(n.inputs.begin(), n.inputs.end(),
                                   [&](int id) { return id >= 0 && backward_value[id]; });
    for (int id : n.outputs) backward_value[id] = backward_node[i];
  }
  // Needed: forward values the backward reads, including gradients computed without one.
  std::vector<int> needed;
  std::vector<char> is_needed(joint.values.size(), 0);
  auto need = [&](int id) {
    if (id >= 0 && !backward_value[id] && !is_needed[id]) {
      is_needed[id] = 1;
      needed.push_back(id);
    }
  };
  for (size_t i = 0; i < joint.nodes.size(); ++i)
    if (backward_node[i])
      for (int id : joint.nodes[i].inputs) need(id);
  for (size_t k = results; k < joint.outputs.size(); ++k) need(joint.outputs[k]);
  const SavePlan plan = plan_saved_values(joint, backward_value, needed);

  TrainingGraphs g;
  g.results = results;
  g.differentiable_results = bt.differentiable_results;
  g.grad_targets = bt.grad_targets;

  // Forward: the joint graph's inputs (before the gradients), captured tensors, forward nodes.
  std::vector<int> fwd(joint.values.size(), -1);
  for (size_t i = 0; i < forward_inputs; ++i) {
    fwd[joint.inputs[i]] =
        copy_value(joint, g.forward, joint.inputs[i], Value::Kind::Input, static_cast<int>(i));
    g.forward.inputs.push_back(fwd[joint.inputs[i]]);
  }
  for (size_t i = 0; i < joint.captured.size(); ++i) {
    fwd[joint.captured[i]] =
        copy_value(joint, g.forward, joint.captured[i], Value::Kind::Captured, static_cast<int>(i));
    g.forward.captured.push_back(fwd[joint.captured[i]]);
  }
  g.forward.captured_tensors = joint.captured_tensors;
  for (size_t i = 0; i < joint.nodes.size(); ++i)
    if (!backward_node[i]) copy_node(joint.nodes[i], joint, g.forward, fwd);
  for (size_t k = 0; k < results; ++k)
    g.forward.outputs.push_back(joint.outputs[k] >= 0 ? fwd[joint.outputs[k]] : -1);
  for (int id : plan.saved) g.forward.outputs.push_back(fwd[id]);

  // Backward: the saved values and the gradients of the results as inputs, then the backward
  // nodes, each preceded by the recomputed ops it reads that have not run yet.
  std::vector<int> bwd(joint.values.size(), -1);
  auto add_input = [&](int id) {
    bwd[id] = copy_value(joint, g.backward, id, Value::Kind::Input,
                         static_cast<int>(g.backward.inputs.size()));
    g.backward.inputs.push_back(bwd[id]);
  };
  for (int id : plan.saved) add_input(id);
  for (size_t i = forward_inputs; i < joint.inputs.size(); ++i) add_input(joint.inputs[i]);
  std::vector<char> recomputed(joint.nodes.size(), 0);
  std::function<void(int)> materialize = [&](int id) {
    if (id < 0 || bwd[id] >= 0) return;
    const int producer = joint.values[id].producer;
    KILN_CHECK(plan.recompute[producer] && !recomputed[producer],
               "compile: internal error: the backward reads a forward value that is neither saved "
               "nor recomputed");
    recomputed[producer] = 1;
    for (int u : joint.nodes[producer].inputs) materialize(u);
    copy_node(joint.nodes[producer], joint, g.backward, bwd);
  };
  for (size_t i = 0; i < joint.nodes.size(); ++i) {
    if (!backward_node[i]) continue;
    for (int id : joint.nodes[i].inputs) materialize(id);
    copy_node(joint.nodes[i], joint, g.backward, bwd);
  }
  for (size_t k = results; k < joint.outputs.size(); ++k) {
    materialize(joint.outputs[k]);
    g.backward.outputs.push_back(joint.outputs[k] >= 0 ? bwd[joint.outputs[k]] : -1);
  }
  g.recomputed_ops = static_cast<int>(std::count(recomputed.begin(), recomputed.end(), 1));
  for (int id : plan.saved)
    if (joint.values[id].kind != Value::Kind::Captured) g.saved_bytes += storage_bytes(joint, id);
  return g;
}

}  // namespace

std::vector<char> values_needing_grad(Tracer& tr) {
  const Graph& g = tr.graph();
  std::vector<char> needs_grad(g.values.size(), 0);
  for (int id : g.inputs) needs_grad[id] = tr.tensor(id).requires_grad();
  for (int id : g.captured) needs_grad[id] = tr.tensor(id).requires_grad();
  for (const Node& n : g.nodes) {
    if (returns_its_input(n)) {
      needs_grad[n.outputs[0]] = needs_grad[n.inputs[0]];
      continue;
    }
    const bool flows = n.grad_enabled && n.op->differentiable() &&
                       std::any_of(n.inputs.begin(), n.inputs.end(),
                                   [&](int id) { return id >= 0 && needs_grad[id]; });
    for (int id : n.outputs) needs_grad[id] = flows && is_floating_point(g.values[id].dtype);
  }
  return needs_grad;
}

// Calls each node's backward formula on the traced tensors as autograd's OpNode would (zeros for
// outputs without a gradient, gradients reduced to the input's shape and dtype), so the tracer
// records the backward as more nodes.
void trace_gradients(Tracer& tr, const std::vector<char>& needs_grad, size_t nodes,
                     std::unordered_map<int, Tensor>& grads) {
  const NoGradGuard no_grad;
  for (size_t i = nodes; i-- > 0;) {
    const Node n = tr.graph().nodes[i];  // a copy: recording appends to the node list
    std::vector<Tensor> out_grads;
    bool any = false;
    for (int id : n.outputs) {
      auto it = grads.find(id);
      out_grads.push_back(it == grads.end() ? Tensor() : it->second);
      any = any || out_grads.back().defined();
    }
    std::vector<bool> needs;
    for (int id : n.inputs)
      needs.push_back(id >= 0 && id < static_cast<int>(needs_grad.size()) && needs_grad[id]);
    if (!any || std::none_of(needs.begin(), needs.end(), [](bool b) { return b; })) continue;
    if (returns_its_input(n)) {
      if (needs[0] && out_grads[0].defined()) accumulate(grads, n.inputs[0], out_grads[0]);
      continue;
    }
    if (!n.grad_enabled || !n.op->differentiable()) continue;
    if (n.op->is_inplace)
      throw GraphBreak(n.op->name + " changes a tensor in place on a gradient's path");
    std::vector<Tensor> ins, outs;
    for (int id : n.inputs) ins.push_back(id >= 0 ? tr.tensor(id) : Tensor());
    for (int id : n.outputs) outs.push_back(tr.tensor(id));
    for (size_t o = 0; o < out_grads.size(); ++o)
      if (!out_grads[o].defined() && is_floating_point(outs[o].dtype()))
        out_grads[o] = zeros(outs[o].sym_sizes(), TensorOptions(outs[o].dtype()));
    const BackwardContext ctx{out_grads, ins, outs, n.attrs, needs};
    std::vector<Tensor> in_grads = n.op->backward_(ctx);
    in_grads.resize(ins.size());
    for (size_t j = 0; j < ins.size(); ++j)
      if (needs[j] && in_grads[j].defined())
        accumulate(
            grads, n.inputs[j],
            autograd::reduce_grad_to(in_grads[j], autograd::InputMeta::of(ins[j]), n.op->name, j));
  }
}

TrainingGraphs trace_training(Tracer& tracer, const std::vector<Tensor>& results) {
  const size_t forward_inputs = tracer.graph().inputs.size();
  const BackwardTrace bt = tracer.run([&] { return trace_backward(tracer, results); });
  std::vector<Tensor> outputs = results;
  outputs.insert(outputs.end(), bt.grads.begin(), bt.grads.end());
  const Graph joint = tracer.finish(outputs);
  return split(joint, forward_inputs, results.size(), bt);
}

}  // namespace kiln::compiler

#include "kiln/compile/replay.h"

#include "kiln/compile/control_flow.h"

#include <optional>

#include "kiln/core/dispatch.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {

Attrs map_sizes(const Attrs& attrs, const std::function<SymInt(const SymInt&)>& f) {
  std::vector<AttrValue> out;
  out.reserve(attrs.size());
  for (size_t i = 0; i < attrs.size(); ++i) {
    const AttrValue& v = attrs[i];
    if (const auto* s = std::get_if<SymInt>(&v)) {
      out.emplace_back(f(*s));
    } else if (const auto* shape = std::get_if<SymShape>(&v)) {
      SymShape c;
      c.reserve(shape->size());
      for (const SymInt& x : *shape) c.push_back(f(x));
      out.emplace_back(std::move(c));
    } else {
      out.push_back(v);
    }
  }
  return Attrs(std::move(out));
}

Attrs concrete_attrs(const Attrs& attrs, std::span<const int64_t> symbols) {
  return map_sizes(attrs, [symbols](const SymInt& s) { return SymInt(s.evaluate(symbols)); });
}

void run_node(const Graph& graph, const Node& n, std::vector<Tensor>& values, const Attrs& attrs,
              std::vector<Tensor>& args) {
  // A NoGradGuard inside the function switched autograd off for some of its ops.
  std::optional<AutoGradMode> grad_mode;
  if (!n.grad_enabled && GradMode::is_enabled()) grad_mode.emplace(false);
  args.clear();
  for (int id : n.inputs) args.push_back(id < 0 ? Tensor() : values[id]);
  std::vector<Tensor> outs = call_op(*n.op, args, attrs);
  KILN_CHECK(outs.size() >= n.outputs.size(), "replay: ", n.op->name, " returned ", outs.size(),
             " outputs where the graph reads ", n.outputs.size());
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const int id = n.outputs[k];
    if (graph.values[id].wrapped_number) outs[k].impl()->set_wrapped_number(true);
    values[id] = std::move(outs[k]);
  }
}

void run_node(const Graph& graph, const Node& n, std::vector<Tensor>& values,
              std::span<const int64_t> symbols, std::vector<Tensor>& args) {
  if (n.symbolic_attrs) {
    run_node(graph, n, values, concrete_attrs(n.attrs, symbols), args);
  } else {
    run_node(graph, n, values, n.attrs, args);
  }
}

std::vector<Tensor> bind_inputs(const Graph& graph, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& captured) {
  std::vector<Tensor> values(graph.values.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) values[graph.inputs[i]] = inputs.at(i);
  for (size_t i = 0; i < graph.captured.size(); ++i) values[graph.captured[i]] = captured.at(i);
  return values;
}

std::vector<Tensor> graph_outputs(const Graph& graph, const std::vector<Tensor>& values) {
  std::vector<Tensor> result;
  result.reserve(graph.outputs.size());
  for (int id : graph.outputs) result.push_back(id < 0 ? Tensor() : values[id]);
  return result;
}

std::vector<Tensor> replay(const Graph& graph, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& captured, std::span<const int64_t> symbols) {
  std::vector<Tensor> values = bind_inputs(graph, inputs, captured);
  std::vector<Tensor> args;
  for (const Node& n : graph.nodes) {
    if (is_control_flow(*n.op)) {
      run_control_flow(graph, n, values, symbols);
    } else {
      run_node(graph, n, values, symbols, args);
    }
  }
  return graph_outputs(graph, values);
}

}  // namespace kiln::compiler

#include "kiln/compile/control_flow.h"

#include <algorithm>

#include "kiln/compile/replay.h"
#include "kiln/compile/tracer.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/registry.h"

// Note [Control-flow nodes]
// A "cond" or "while_loop" node names its two subgraphs by index in Graph::subgraphs. Its inputs
// are [pred,] the operands (the loop's carried values), then the tensors the first subgraph
// captured, then those the second captured; its attributes are (first subgraph, second
// subgraph, number of operands, number of the first's captured tensors), then each output's
// sizes, dtype and device, which are all its meta function needs.

namespace kiln {

namespace compiler {

namespace {

constexpr size_t kSpecsAt = 4;

std::vector<TensorSpec> specs_from_attrs(const std::vector<Tensor>&, const Attrs& a) {
  std::vector<TensorSpec> out;
  for (size_t i = kSpecsAt; i + 3 <= a.size(); i += 3) {
    TensorSpec s;
    s.sizes = a.shape(i);
    s.dtype = a.dtype(i + 1);
    s.device = a.device(i + 2);
    out.push_back(std::move(s));
  }
  return out;
}

OpDef make_op(std::string name) {
  OpDef op;
  op.name = std::move(name);
  op.meta_ = specs_from_attrs;
  return op;
}

bool truth(const Tensor& pred, const char* op) {
  KILN_CHECK(
      pred.defined() && pred.numel() == 1 && pred.dtype() == kBool, op,
      ": the predicate must be a one-element bool tensor, got ",
      pred.defined() ? detail::str_cat(pred.dtype(), pred.sizes()) : std::string("undefined"));
  return pred.item<bool>();
}

bool any_traced(const std::vector<Tensor>& ts) {
  return std::any_of(ts.begin(), ts.end(),
                     [](const Tensor& t) { return t.defined() && t.impl()->is_traced(); });
}

// The tensors `fn` returns must match `like` one by one (dtype, device and sizes).
void check_same(const char* op, const char* what, const std::vector<Value>& got,
                const std::vector<Value>& like, const char* like_what) {
  KILN_CHECK(got.size() == like.size(), op, ": ", what, " returns ", got.size(), " tensors but ",
             like_what, " has ", like.size());
  for (size_t i = 0; i < got.size(); ++i)
    KILN_CHECK(got[i].dtype == like[i].dtype && got[i].device == like[i].device &&
                   same_shape(got[i].sizes, like[i].sizes),
               op, ": ", what, "'s result ", i, " is ", describe_value(got[i]), " but ", like_what,
               "'s is ", describe_value(like[i]));
}

// Captures fn(operands) as a graph over inputs shaped like the operands.
template <class F>
Graph trace_subgraph(Tracer& outer, const char* op, const char* what, F&& fn,
                     const std::vector<Tensor>& operands) {
  Tracer sub(outer.shape_env());
  sub.allow_control_flow(true);
  std::vector<Tensor> ins;
  for (const Tensor& t : operands) {
    KILN_CHECK(t.defined(), op, ": an operand is an undefined tensor");
    SymShape sizes(t.sym_sizes().begin(), t.sym_sizes().end());
    ins.push_back(sub.add_input(sizes, contiguous_strides(sizes), t.dtype(), t.device()));
  }
  std::vector<Tensor> outs = sub.run([&] { return fn(ins); });
  ins.clear();
  Graph g = sub.finish(outs);
  for (const Node& n : g.nodes)
    KILN_CHECK(!n.op->is_inplace, op, ": ", what, " changes a tensor in place (", n.op->name,
               "); branches and loop bodies must not");
  for (int id : g.outputs) KILN_CHECK(id >= 0, op, ": ", what, " returns an undefined tensor");
  return g;
}

std::vector<Value> input_values(const Graph& g) {
  std::vector<Value> out;
  for (int id : g.inputs) out.push_back(g.values[id]);
  return out;
}
std::vector<Value> output_values(const Graph& g) {
  std::vector<Value> out;
  for (int id : g.outputs) out.push_back(g.values[id]);
  return out;
}

// Records the node in `outer`, keeping its subgraphs, and returns its traced outputs.
std::vector<Tensor> record(Tracer& outer, const OpDef& op, std::vector<Tensor> inputs, Graph first,
                           Graph second, size_t operands, const std::vector<Value>& outputs) {
  const size_t first_captured = first.captured.size();
  for (const Tensor& t : first.captured_tensors) inputs.push_back(t);
  for (const Tensor& t : second.captured_tensors) inputs.push_back(t);
  std::vector<AttrValue> attrs{
      int64_t{outer.add_subgraph(std::move(first))}, int64_t{outer.add_subgraph(std::move(second))},
      static_cast<int64_t>(operands), static_cast<int64_t>(first_captured)};
  for (const Value& v : outputs) {
    attrs.emplace_back(v.sizes);
    attrs.emplace_back(v.dtype);
    attrs.emplace_back(v.device);
  }
  return call_op(op, std::move(inputs), Attrs(std::move(attrs)));
}

Tracer* tracer_for(const char* op, const std::vector<Tensor>& values) {
  Tracer* t = Tracer::active();
  if (t == nullptr || !any_traced(values)) return nullptr;
  if (!t->control_flow_allowed())
    throw GraphBreak(std::string(op) +
                     " on traced values: kiln::compile runs the function eagerly here "
                     "(export_program captures it)");
  return t;
}

}  // namespace

const OpDef& cond_op() {
  static const OpDef op = make_op("cond");
  return op;
}
const OpDef& while_loop_op() {
  static const OpDef op = make_op("while_loop");
  return op;
}
const OpDef* control_flow_op(std::string_view name) {
  if (name == "cond") return &cond_op();
  if (name == "while_loop") return &while_loop_op();
  return nullptr;
}
bool is_control_flow(const OpDef& op) { return &op == &cond_op() || &op == &while_loop_op(); }

void run_control_flow(const Graph& graph, const Node& n, std::vector<Tensor>& values,
                      std::span<const int64_t> symbols) {
  const char* name = n.op->name.c_str();
  const Attrs& a = n.attrs;
  const int64_t first = a.i(0), second = a.i(1), operands = a.i(2), first_captured = a.i(3);
  const int64_t subgraphs = static_cast<int64_t>(graph.subgraphs.size());
  KILN_CHECK(0 <= first && first < subgraphs && 0 <= second && second < subgraphs, name,
             ": the node names subgraphs ", first, " and ", second, " of ", subgraphs);
  const bool is_cond = n.op == &cond_op();
  const int64_t lead = is_cond ? 1 : 0;
  const int64_t inputs = static_cast<int64_t>(n.inputs.size());
  // Compared by subtraction: the counts come from a file and may be anything.
  KILN_CHECK(operands >= 0 && first_captured >= 0 && inputs >= lead && operands <= inputs - lead &&
                 first_captured <= inputs - lead - operands,
             name, ": the node's ", inputs, " inputs do not hold ", operands, " operands and ",
             first_captured, " captured tensors");
  auto take = [&](int64_t from, int64_t count) {
    std::vector<Tensor> out;
    for (int64_t k = from; k < from + count; ++k)
      out.push_back(n.inputs[k] < 0 ? Tensor() : values[n.inputs[k]]);
    return out;
  };
  std::vector<Tensor> ops = take(lead, operands);
  const std::vector<Tensor> captured1 = take(lead + operands, first_captured);
  const std::vector<Tensor> captured2 =
      take(lead + operands + first_captured, inputs - lead - operands - first_captured);
  auto run = [&](int64_t index, const std::vector<Tensor>& ins, const std::vector<Tensor>& cap) {
    const Graph& g = *graph.subgraphs[index];
    KILN_CHECK(g.inputs.size() == ins.size() && g.captured.size() == cap.size(), name,
               ": subgraph ", index, " takes ", g.inputs.size(), " inputs and ", g.captured.size(),
               " captured tensors, given ", ins.size(), " and ", cap.size());
    return replay(g, ins, cap, symbols);
  };
  std::vector<Tensor> outs;
  if (is_cond) {
    const bool taken = truth(take(0, 1)[0], name);
    outs = taken ? run(first, ops, captured1) : run(second, ops, captured2);
  } else {
    for (;;) {
      const std::vector<Tensor> p = run(first, ops, captured1);
      KILN_CHECK(p.size() == 1, name, ": the condition returns ", p.size(), " tensors");
      if (!truth(p[0], name)) break;
      std::vector<Tensor> next = run(second, ops, captured2);
      KILN_CHECK(next.size() == ops.size(), name, ": the body returns ", next.size(),
                 " tensors for ", ops.size(), " carried");
      ops = std::move(next);
    }
    outs = std::move(ops);
  }
  KILN_CHECK(outs.size() >= n.outputs.size(), name, " returned ", outs.size(),
             " tensors where the graph reads ", n.outputs.size());
  for (size_t k = 0; k < n.outputs.size(); ++k) values[n.outputs[k]] = std::move(outs[k]);
}

}  // namespace compiler

std::vector<Tensor> cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn,
                         const std::vector<Tensor>& operands) {
  compiler::Tracer* outer = compiler::tracer_for("cond", {pred});
  if (outer == nullptr)
    return compiler::truth(pred, "cond") ? true_fn(operands) : false_fn(operands);
  compiler::Graph t = compiler::trace_subgraph(*outer, "cond", "true_fn", true_fn, operands);
  compiler::Graph f = compiler::trace_subgraph(*outer, "cond", "false_fn", false_fn, operands);
  const std::vector<compiler::Value> outputs = compiler::output_values(t);
  compiler::check_same("cond", "false_fn", compiler::output_values(f), outputs, "true_fn");
  std::vector<Tensor> inputs{pred};
  inputs.insert(inputs.end(), operands.begin(), operands.end());
  return compiler::record(*outer, compiler::cond_op(), std::move(inputs), std::move(t),
                          std::move(f), operands.size(), outputs);
}

std::vector<Tensor> while_loop(const std::function<Tensor(const std::vector<Tensor>&)>& cond_fn,
                               const BranchFn& body_fn, const std::vector<Tensor>& carried) {
  compiler::Tracer* outer = compiler::tracer_for("while_loop", carried);
  if (outer == nullptr) {
    std::vector<Tensor> c = carried;
    while (compiler::truth(cond_fn(c), "while_loop")) {
      std::vector<Tensor> next = body_fn(c);
      KILN_CHECK(next.size() == c.size(), "while_loop: body_fn returns ", next.size(),
                 " tensors for ", c.size(), " carried");
      c = std::move(next);
    }
    return c;
  }
  compiler::Graph c = compiler::trace_subgraph(
      *outer, "while_loop", "cond_fn",
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{cond_fn(in)}; }, carried);
  compiler::Graph b = compiler::trace_subgraph(*outer, "while_loop", "body_fn", body_fn, carried);
  const std::vector<compiler::Value> pred = compiler::output_values(c);
  KILN_CHECK(pred.size() == 1 && pred[0].dtype == kBool,
             "while_loop: cond_fn must return a "
             "one-element bool tensor");
  const std::vector<compiler::Value> like = compiler::input_values(b);
  compiler::check_same("while_loop", "body_fn", compiler::output_values(b), like, "carried");
  return compiler::record(*outer, compiler::while_loop_op(), carried, std::move(c), std::move(b),
                          carried.size(), like);
}

}  // namespace kiln

#include "kiln/compile/tracer.h"

#include <algorithm>

#include "kiln/core/autograd_meta.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

bool is_symbolic_attr(const AttrValue& v) {
  if (const auto* s = std::get_if<SymInt>(&v)) return s->is_symbolic();
  if (const auto* s = std::get_if<SymShape>(&v))
    return std::any_of(s->begin(), s->end(), [](const SymInt& x) { return x.is_symbolic(); });
  return false;
}

Value value_for(const Tensor& t, Value::Kind kind, int producer) {
  const TensorImpl& i = *t.impl();
  return Value{kind,       i.sym_sizes(),         i.sym_strides(), t.dtype(),
               t.device(), i.is_wrapped_number(), producer};
}

}  // namespace

class Tracer::Mode final : public DispatchMode {
 public:
  explicit Mode(Tracer& tracer) : t_(tracer) {}

  std::vector<Tensor> handle(const OpDef& op, const std::vector<Tensor>& inputs,
                             const Attrs& attrs) override {
    if (op.is_random)
      throw GraphBreak(op.name +
                       " draws random numbers, which a graph does not replay the same way");
    if (op.dynamic_output)
      throw GraphBreak(op.name + " makes an output whose size depends on the input's values");
    t_.check_not_sealed(op, inputs);
    for (const Tensor& in : inputs) {
      if (in.defined()) t_.id_of(in);  // a captured tensor is followed from its first read
      t_.refresh(in);
    }
    if (op.is_inplace)
      if (auto outs = t_.functionalize(op, inputs, attrs)) return *std::move(outs);
    return t_.record(op, inputs, attrs);
  }

 private:
  Tracer& t_;
};

thread_local Tracer* Tracer::active_ = nullptr;

int Tracer::add_subgraph(Graph g) {
  graph_.subgraphs.push_back(std::make_shared<const Graph>(std::move(g)));
  return static_cast<int>(graph_.subgraphs.size()) - 1;
}

Tracer::Tracer(ShapeEnv& env) : env_(env), mode_(std::make_shared<Mode>(*this)) {}

Tensor Tracer::add_input(SymShape sizes, SymShape strides, ScalarType dtype, Device device) {
  Tensor t(std::make_shared<TensorImpl>(StorageImpl::meta(device), dtype, std::move(sizes),
                                        std::move(strides), 0));
  t.impl()->set_traced(true);
  const int index = static_cast<int>(graph_.inputs.size());
  const int id = graph_.add_value(value_for(t, Value::Kind::Input, index));
  graph_.inputs.push_back(id);
  ids_[t.impl()] = id;
  seen_.push_back(t);
  traced_[id] = t;
  follow_argument(t, id);
  return t;
}

std::vector<std::weak_ptr<TensorImpl>> Tracer::traced_tensors() const {
  std::vector<std::weak_ptr<TensorImpl>> out;
  for (const Tensor& t : seen_)
    if (t.impl()->is_traced()) out.push_back(t.impl_ptr());
  return out;
}

std::vector<Tensor> Tracer::record(const OpDef& op, const std::vector<Tensor>& inputs,
                                   const Attrs& attrs) {
  Node node;
  node.op = &op;
  node.attrs = attrs;
  node.grad_enabled = GradMode::is_enabled();
  for (size_t i = 0; i < attrs.size(); ++i)
    node.symbolic_attrs = node.symbolic_attrs || is_symbolic_attr(attrs[i]);
  for (const Tensor& in : inputs) {
    const int id = in.defined() ? value_of(in) : -1;
    if (id >= 0 && in.impl()->is_wrapped_number()) graph_.values[id].wrapped_number = true;
    node.inputs.push_back(id);
  }
  env_.set_origin(op.name);
  std::vector<Tensor> outs = run_meta(op, inputs, attrs);
  note_storage(inputs, outs);
  env_.set_origin("user code after " + op.name);
  const int node_id = static_cast<int>(graph_.nodes.size());
  // Autograd does not run in a capture (this mode sits above it), but the function may ask
  // requires_grad() of what it computed: answer as eager would.
  const bool grad_flows = GradMode::is_enabled() && op.differentiable() &&
                          std::any_of(inputs.begin(), inputs.end(), [](const Tensor& in) {
                            return in.defined() && in.requires_grad();
                          });
  for (const Tensor& out : outs) {
    const int id = graph_.add_value(value_for(out, Value::Kind::NodeOutput, node_id));
    node.outputs.push_back(id);
    // An in-place op returns its input itself; a captured tensor stays readable after it.
    const bool is_input = std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& in) {
      return in.defined() && in.impl() == out.impl();
    });
    if (!is_input) {
      out.impl()->set_traced(true);
      if (grad_flows && is_floating_point(out.dtype()))
        out.impl()->ensure_autograd_meta().requires_grad = true;
    }
    ids_[out.impl()] = id;
    seen_.push_back(out);
    traced_[id] = out;
  }
  graph_.nodes.push_back(std::move(node));
  return outs;
}

// A tensor the trace has not seen is one the function captured (a module's parameter or buffer,
// a tensor from a closure): a graph input read at each call, not a constant.
int Tracer::value_of(const Tensor& t) {
  auto it = ids_.find(t.impl());
  if (it != ids_.end()) return it->second;
  const int index = static_cast<int>(graph_.captured.size());
  const int id = graph_.add_value(value_for(t, Value::Kind::Captured, index));
  graph_.captured.push_back(id);
  graph_.captured_tensors.push_back(t);
  ids_[t.impl()] = id;
  follow_captured(t, id);
  return id;
}

void Tracer::check_not_sealed(const OpDef& op, const std::vector<Tensor>& inputs) {
  if (sealed_by_.empty()) return;
  for (const Tensor& in : inputs) {
    if (!in.defined()) continue;
    auto it = ids_.find(in.impl());
    int id = it == ids_.end() ? -1 : it->second;
    while (id >= 0 && graph_.values[id].kind == Value::Kind::NodeOutput &&
           graph_.nodes[graph_.values[id].producer].op->is_view)
      id = graph_.nodes[graph_.values[id].producer].inputs[0];
    if (id < 0 || graph_.values[id].kind == Value::Kind::Captured)
      throw GraphBreak(op.name + " reads a captured tensor after " + sealed_by_ +
                       ", which the graph runs after the call");
  }
}

Tensor Tracer::tensor(int id) {
  const Value& v = graph_.values.at(id);
  const Tensor& t =
      v.kind == Value::Kind::Captured ? graph_.captured_tensors.at(v.producer) : traced_.at(id);
  auto it = ids_.find(t.impl());
  if (it != ids_.end() && it->second == id) return t;
  // The tensor was changed in place since (functionalized: it now reads a newer value): a
  // stand-in of its own reads this one.
  Tensor& stand_in = stand_ins_[id];
  if (!stand_in.defined()) {
    stand_in = Tensor(
        std::make_shared<TensorImpl>(StorageImpl::meta(v.device), v.dtype, v.sizes, v.strides, 0));
    stand_in.impl()->set_traced(true);
    stand_in.impl()->set_wrapped_number(v.wrapped_number);
    if (t.requires_grad()) stand_in.impl()->ensure_autograd_meta().requires_grad = true;
    ids_[stand_in.impl()] = id;
  }
  return stand_in;
}

Graph Tracer::finish(const std::vector<Tensor>& outputs) {
  // Returned views are recomputed from their base's final value before that is copied into a
  // changed argument: as_strided's offset is absolute, and the caller's tensor may not start
  // its storage (a returned view of a changed argument therefore does not alias it).
  for (const Tensor& t : outputs) refresh(t);
  write_back_inputs();
  for (const Tensor& t : outputs) graph_.outputs.push_back(t.defined() ? value_of(t) : -1);
  return std::move(graph_);
}

}  // namespace kiln::compiler

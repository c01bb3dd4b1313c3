// The autograd methods of kiln::Tensor.
#include "kiln/autograd/engine.h"
#include "kiln/autograd/node.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/core/error.h"
#include "kiln/core/graph_break.h"
#include "kiln/core/tensor.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {
const Tensor& undefined_tensor() {
  static const Tensor t;
  return t;
}
const std::shared_ptr<autograd::Node>& null_node() {
  static const std::shared_ptr<autograd::Node> n;
  return n;
}
}  // namespace

bool Tensor::requires_grad() const {
  const AutogradMeta* m = checked()->autograd_meta();
  return m && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool r) const {
  AutogradMeta* m = checked()->autograd_meta();
  KILN_CHECK(r || !(m && m->grad_fn),
             "requires_grad_: you can only change requires_grad flags of leaf variables. If you "
             "want to use a computed variable in a subgraph that doesn't require differentiation "
             "use detach()");
  KILN_CHECK(!r || kiln::is_floating_point(dtype()),
             "requires_grad_: only Tensors of floating point dtype can require gradients (got ",
             dtype(), ")");
  if (r || m) checked()->ensure_autograd_meta().requires_grad = r;
  return const_cast<Tensor&>(*this);
}

// Under a compiled function's capture, .grad is state the graph must read at each call and
// whose changes it must replay: the capture is told of each access.
const Tensor& Tensor::grad() const {
  if (compiler::CaptureContext* c = compiler::capture_context()) c->reading_grad(*this);
  const AutogradMeta* m = checked()->autograd_meta();
  return m ? m->grad : undefined_tensor();
}

Tensor& Tensor::mutable_grad() const {
  if (compiler::CaptureContext* c = compiler::capture_context()) c->writing_grad(*this);
  return checked()->ensure_autograd_meta().grad;
}

void Tensor::set_grad(const Tensor& g) const {
  if (compiler::CaptureContext* c = compiler::capture_context()) c->writing_grad(*this);
  if (g.defined()) {  // the checks of PyTorch's .grad setter
    KILN_CHECK(g.sizes() == sizes(), "set_grad: attempting to assign a gradient of size ",
               g.sizes(), " to a tensor of size ", sizes());
    KILN_CHECK(g.dtype() == dtype(), "set_grad: attempting to assign a gradient with dtype ",
               g.dtype(), " to a tensor with dtype ", dtype());
    KILN_CHECK(g.device() == device(), "set_grad: attempting to assign a gradient on device ",
               g.device(), " to a tensor on device ", device());
  }
  checked()->ensure_autograd_meta().grad = g;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  const AutogradMeta* m = checked()->autograd_meta();
  return m ? m->grad_fn : null_node();
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = checked()->autograd_meta();
  return m ? m->output_nr : 0;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward({*this},
                     gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  static const OpDef& op = get_op("detach");
  checked();
  return call_op1(op, {*this}, {});
}

void Tensor::set_data(const Tensor& new_data) const {
  KILN_CHECK(new_data.defined(), "set_data: the new data is an undefined tensor");
  checked()->shallow_copy_from(*new_data.impl());
}

Tensor& Tensor::detach_() const {
  if (AutogradMeta* m = checked()->autograd_meta()) {
    m->grad_fn.reset();
    m->requires_grad = false;
    m->output_nr = 0;
    m->is_view = false;
  }
  return const_cast<Tensor&>(*this);
}

void Tensor::retain_grad() const {
  KILN_CHECK(requires_grad(),
             "retain_grad: can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf()) return;  // leaves keep .grad anyway
  AutogradMeta& m = checked()->ensure_autograd_meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->add_retains_grad(m.output_nr, impl_ptr());
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = checked()->autograd_meta();
  return m && m->retains_grad;
}

void Tensor::add_grad_hook(std::function<Tensor(const Tensor&)> hook) const {
  KILN_CHECK(requires_grad(),
             "register_hook: cannot register a hook on a tensor that doesn't "
             "require gradient");
  if (is_leaf()) {  // the accumulator may not exist yet: the leaf keeps its hooks
    checked()->ensure_autograd_meta().hooks.push_back(std::move(hook));
    return;
  }
  autograd::Edge e = autograd::gradient_edge(*this);
  e.node->add_pre_hook(e.input_nr, std::move(hook));
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  KILN_CHECK(requires_grad(),
             "register_post_accumulate_grad_hook: cannot register a hook on a tensor that "
             "doesn't require gradient");
  KILN_CHECK(is_leaf(),
             "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be "
             "registered on non-leaf tensors");
  checked()->ensure_autograd_meta().post_accumulate_grad_hooks.push_back(std::move(hook));
}

}  // namespace kiln

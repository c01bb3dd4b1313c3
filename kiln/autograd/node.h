#pragma once
// Node: one step of the backward graph. Edges point at the nodes that produced each input.
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::autograd {

class Node;
struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
  uint32_t input_nr = 0;       // which input slot of `node` this gradient feeds
  bool valid() const { return node != nullptr; }
};

// Shape, dtype and device of a forward input, so its gradient can be checked against them,
// summed and cast back to them.
struct InputMeta {
  SymShape sizes;
  ScalarType dtype = kFloat32;
  Device device;
  static InputMeta of(const Tensor& t) {
    return t.defined() ? InputMeta{t.sym_sizes(), t.dtype(), t.device()} : InputMeta{};
  }
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node();
  // Gradients of this node's outputs in, gradients of its inputs out (one per next edge).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;
  // Drops what the forward saved (after a backward without retain_graph).
  virtual void release_variables() {}

  // Compiled autograd (kiln/compile/compiled_autograd.h) traces a node's backward on stand-ins
  // for what it saved. A node that can be traced returns true, appending the tensors its
  // backward reads besides the gradients (undefined where a slot is empty; unpacking them checks
  // them as apply would) and writing what else its backward depends on (op, attributes, shapes)
  // to `key`. The default: not traceable.
  virtual bool describe_for_trace(std::vector<Tensor>& saved, std::ostream& key);
  // apply, reading these stand-ins for the tensors describe_for_trace gave.
  virtual std::vector<Tensor> apply_traced(std::vector<Tensor>&& grads,
                                           const std::vector<Tensor>& saved);

  const std::vector<Edge>& next_functions() const { return next_edges_; }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  size_t num_outputs() const { return num_outputs_; }
  void set_num_outputs(size_t n) { num_outputs_ = n; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  std::vector<InputMeta>& input_metadata() { return input_meta_; }

  // Hooks on the gradient of one of this node's outputs (tensor hooks, retain_grad); they run
  // before apply and may replace the gradient.
  using TensorHook = std::function<Tensor(const Tensor&)>;
  void add_pre_hook(uint32_t output_nr, TensorHook hook);
  // retain_grad(): the gradient of output `output_nr` is kept in `tensor`'s .grad, after the
  // tensor hooks have run (as PyTorch's retains_grad hooks).
  void add_retains_grad(uint32_t output_nr, std::weak_ptr<TensorImpl> tensor);
  virtual void run_pre_hooks(std::vector<Tensor>& grads) const;
  const std::vector<std::pair<uint32_t, TensorHook>>& pre_hooks() const { return pre_hooks_; }
  const std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>>& retains_grad() const {
    return retains_grad_;
  }

 protected:
  Node();
  std::vector<Edge> next_edges_;
  std::vector<InputMeta> input_meta_;
  size_t num_outputs_ = 1;
  uint64_t sequence_nr_;
  std::vector<std::pair<uint32_t, TensorHook>> pre_hooks_;
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retains_grad_;
};

// Runs a tensor hook on grad, which it may replace (with one of the same type and size).
void run_tensor_hook(const Node::TensorHook& hook, Tensor& grad);
// Adds grad into the .grad of a tensor that retains it (if it is still alive).
void retain_grad_into(const std::weak_ptr<TensorImpl>& tensor, const Tensor& grad);

// Writes gradients into a leaf tensor's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "torch::autograd::AccumulateGrad"; }
  const Tensor& variable() const { return leaf_; }
  void run_pre_hooks(std::vector<Tensor>& grads) const override;  // the leaf's own hooks too

 private:
  Tensor leaf_;
  // Backward passes on several threads may share a leaf: one accumulates (and runs the leaf's
  // post-accumulate hooks) at a time, as in PyTorch. Hooks must be thread-safe themselves.
  std::mutex mutex_;
};

// The gradient edge for a tensor: its grad_fn, or its leaf accumulator when it requires grad.
Edge gradient_edge(const Tensor& t);

}  // namespace kiln::autograd

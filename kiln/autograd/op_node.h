#pragma once
// OpNode: the backward step of one registry op. It keeps what the entry's backward formula needs
// and calls it; the autograd dispatch hook creates one per differentiable op call.
#include "kiln/autograd/node.h"
#include "kiln/autograd/saved_tensor.h"
#include "kiln/ops/registry.h"

namespace kiln::autograd {

class OpNode final : public Node {
 public:
  OpNode(const OpDef& op, Attrs attrs) : op_(op), attrs_(std::move(attrs)) {}
  ~OpNode() override;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  bool describe_for_trace(std::vector<Tensor>& saved, std::ostream& key) override;
  std::vector<Tensor> apply_traced(std::vector<Tensor>&& grads,
                                   const std::vector<Tensor>& saved) override;
  // libtorch's node name for the ATen overload this call corresponds to ("AddBackward0",
  // "SumBackward1"; kiln/autograd/node_name.h).
  std::string name() const override;
  void release_variables() override;

  std::vector<SavedTensor>& saved_inputs() { return saved_inputs_; }
  std::vector<SavedTensor>& saved_outputs() { return saved_outputs_; }
  std::vector<bool>& needs_input_grad() { return needs_input_grad_; }
  // Each output's dtype and device: what a missing output gradient is made as (zeros).
  std::vector<TensorOptions>& output_options() { return output_options_; }
  std::vector<SymShape>& output_sizes() { return output_sizes_; }
  void set_overload(int overload) { overload_ = overload; }

 private:
  // The backward formula on these output gradients and saved inputs and outputs.
  std::vector<Tensor> apply_to(std::vector<Tensor> grads, const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& outputs) const;

  const OpDef& op_;
  Attrs attrs_;
  std::vector<SavedTensor> saved_inputs_;
  std::vector<SavedTensor> saved_outputs_;
  std::vector<bool> needs_input_grad_;
  std::vector<TensorOptions> output_options_;
  std::vector<SymShape> output_sizes_;
  int overload_ = 0;
  bool released_ = false;
};

// Checks the gradient that node `who` computed for its input `index` against that input's
// metadata, as PyTorch's engine does: the device must match and the shape must broadcast to the
// input's; it is summed down to the input's shape (undoing broadcasting) and cast to its dtype.
Tensor reduce_grad_to(const Tensor& grad, const InputMeta& input, const std::string& who,
                      size_t index);

}  // namespace kiln::autograd

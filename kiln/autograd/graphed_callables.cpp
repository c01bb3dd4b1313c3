#include "kiln/autograd/graphed_callables.h"

#include <memory>

#include "kiln/autograd/engine.h"
#include "kiln/autograd/function.h"
#include "kiln/core/cuda.h"
#include "kiln/core/error.h"
#include "kiln/ops/creation.h"

namespace kiln::cuda {
namespace {

constexpr const char* kOp = "make_graphed_callables";

// The two graphs and the memory they read and write.
struct Graphed {
  CUDAGraph forward, backward;
  std::vector<Tensor> inputs;  // the sample arguments, then the parameters
  size_t num_args = 0;
  std::vector<Tensor> outputs;       // the forward graph's outputs, detached
  std::vector<Tensor> grad_outputs;  // per output; undefined where it needs no gradient
  std::vector<Tensor> grad_inputs;   // per input; undefined where it gets none
  bool has_backward = false;
};

std::vector<Tensor> requiring_grad(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts)
    if (t.defined() && t.requires_grad()) out.push_back(t);
  return out;
}

// Gradients of `outputs` (those that require grad, weighted by grad_outputs where given, else
// by uninitialised memory: warm-up) with respect to the inputs that require grad.
std::vector<Tensor> gradients(const std::vector<Tensor>& outputs,
                              const std::vector<Tensor>& grad_outputs,
                              const std::vector<Tensor>& inputs, bool allow_unused) {
  std::vector<Tensor> roots, weights;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].requires_grad()) continue;
    roots.push_back(outputs[i]);
    weights.push_back(grad_outputs.empty() ? empty_like(outputs[i]) : grad_outputs[i]);
  }
  return autograd::grad(roots, requiring_grad(inputs), weights, false, false, allow_unused);
}

// Backward of a replayed forward: the gradients into the backward graph's static inputs, one
// replay, its static gradients out (AccumulateGrad copies them, as they stay the graph's).
class GraphedBackward final : public autograd::CustomNodeBase {
 public:
  explicit GraphedBackward(std::shared_ptr<Graphed> g) : g_(std::move(g)) {}

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    grads = prepare_grads(std::move(grads));
    for (size_t i = 0; i < grads.size(); ++i) {
      const Tensor& dst = g_->grad_outputs[i];
      if (dst.defined() && dst.data_ptr() != grads[i].data_ptr()) dst.copy_(grads[i]);
    }
    g_->backward.replay();
    std::vector<Tensor> out;
    for (const Tensor& t : g_->grad_inputs) out.push_back(t.defined() ? t.detach() : Tensor());
    return map_result(std::move(out));
  }
  std::string name() const override { return "GraphedBackward"; }

 private:
  std::shared_ptr<Graphed> g_;
};

void check_matches(const Tensor& arg, const Tensor& sample, size_t i) {
  KILN_CHECK(arg.defined(), kOp, ": argument ", i, " is undefined");
  KILN_CHECK(arg.sizes() == sample.sizes() && arg.dtype() == sample.dtype() &&
                 arg.device() == sample.device() && arg.requires_grad() == sample.requires_grad(),
             kOp, ": argument ", i, " (", arg.sizes(), ", ", arg.dtype(), ", ", arg.device(),
             arg.requires_grad() ? ", requires grad" : "",
             ") must match the sample argument the graphs were captured with (", sample.sizes(),
             ", ", sample.dtype(), ", ", sample.device(),
             sample.requires_grad() ? ", requires grad" : "", ")");
}

std::vector<Tensor> replay(const std::shared_ptr<Graphed>& g, const std::vector<Tensor>& args) {
  KILN_CHECK(args.size() == g->num_args, kOp, ": expected ", g->num_args,
             " arguments (as the samples), got ", args.size());
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < args.size(); ++i) {
      check_matches(args[i], g->inputs[i], i);
      if (args[i].data_ptr() != g->inputs[i].data_ptr()) g->inputs[i].copy_(args[i]);
    }
    g->forward.replay();
    for (const Tensor& o : g->outputs) outputs.push_back(o.detach());
  }
  if (!g->has_backward) return outputs;
  std::vector<Tensor> inputs = args;
  inputs.insert(inputs.end(), g->inputs.begin() + static_cast<std::ptrdiff_t>(g->num_args),
                g->inputs.end());
  auto node = std::make_shared<GraphedBackward>(g);
  node->finish(inputs, outputs, std::vector<bool>(inputs.size(), true));
  return outputs;
}

}  // namespace

TensorFunction make_graphed_callables(const TensorFunction& fn,
                                      const std::vector<Tensor>& sample_args,
                                      const std::vector<Tensor>& parameters, int num_warmup_iters,
                                      bool allow_unused_input, MempoolId pool) {
  KILN_CHECK(is_available(), kOp, ": no CUDA device is available (is_available() is false)");
  auto g = std::make_shared<Graphed>();
  g->inputs = sample_args;
  g->num_args = sample_args.size();
  g->inputs.insert(g->inputs.end(), parameters.begin(), parameters.end());
  for (size_t i = 0; i < g->inputs.size(); ++i) {
    const Tensor& t = g->inputs[i];
    KILN_CHECK(t.defined() && t.is_cuda(), kOp, ": ",
               i < g->num_args ? "sample argument " : "parameter ",
               i < g->num_args ? i : i - g->num_args, " must be a CUDA tensor, got ",
               t.defined() ? t.device().str() : "an undefined tensor");
    KILN_CHECK(!t.requires_grad() || t.is_leaf(), kOp, ": ",
               i < g->num_args ? "sample argument " : "parameter ",
               i < g->num_args ? i : i - g->num_args,
               " requires grad but is not a leaf; pass a detached tensor with requires_grad_()");
  }
  const std::vector<Tensor> args(g->inputs.begin(),
                                 g->inputs.begin() + static_cast<std::ptrdiff_t>(g->num_args));
  synchronize();
  {
    // Warm-up on a side stream, as PyTorch's: kernels compiled, libraries' handles made.
    StreamGuard side(stream_from_pool());
    for (int i = 0; i < num_warmup_iters; ++i) {
      const std::vector<Tensor> outs = fn(args);
      if (!requiring_grad(outs).empty() && !requiring_grad(g->inputs).empty())
        gradients(outs, {}, g->inputs, allow_unused_input);
    }
  }
  synchronize();
  std::vector<Tensor> outputs;
  {
    graph capture(g->forward, pool);
    outputs = fn(args);
  }
  for (const Tensor& o : outputs)
    g->grad_outputs.push_back(o.requires_grad() ? empty_like(o) : Tensor());
  g->has_backward = !requiring_grad(outputs).empty() && !requiring_grad(g->inputs).empty();
  if (g->has_backward) {
    std::vector<Tensor> grads;
    {
      graph capture(g->backward, g->forward.pool());
      grads = gradients(outputs, g->grad_outputs, g->inputs, allow_unused_input);
    }
    size_t k = 0;
    for (const Tensor& t : g->inputs)
      g->grad_inputs.push_back(t.requires_grad() ? grads[k++] : Tensor());
  }
  for (const Tensor& o : outputs) g->outputs.push_back(o.detach());
  return [g](const std::vector<Tensor>& call_args) { return replay(g, call_args); };
}

}  // namespace kiln::cuda

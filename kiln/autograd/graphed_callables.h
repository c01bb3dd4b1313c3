#pragma once
// torch.cuda.make_graphed_callables: a function's forward and its backward, each captured once
// into a CUDA graph and replayed on every later call, so a small model's step costs two graph
// launches instead of one launch per op.
#include <functional>
#include <vector>

#include "kiln/core/cuda_stream.h"
#include "kiln/core/tensor.h"

namespace kiln::cuda {

using TensorFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Warms fn up on a side stream (num_warmup_iters forward and backward passes), captures its
// forward on sample_args into one graph and the gradients of its outputs with respect to the
// arguments and `parameters` that require grad into another (both in one memory pool, `pool` when
// given), and returns a callable with fn's signature:
//   - a call copies its arguments into the sample arguments (the graph's static inputs) and
//     replays the forward graph. Its outputs are the graph's static outputs: the next call
//     overwrites them, as in PyTorch, so clone what must outlive it;
//   - backward through those outputs replays the backward graph and hands each argument and
//     parameter that required grad its gradient.
// Arguments must match the samples' shapes, dtypes, devices and requires_grad; parameters are
// read in place (an optimizer's in-place step is seen by the next replay). fn must be capturable:
// no host synchronisation, no CPU fallback, no dynamic shapes. With allow_unused_input, arguments
// and parameters fn does not use get no gradient instead of an error.
TensorFunction make_graphed_callables(const TensorFunction& fn,
                                      const std::vector<Tensor>& sample_args,
                                      const std::vector<Tensor>& parameters = {},
                                      int num_warmup_iters = 3, bool allow_unused_input = false,
                                      MempoolId pool = {});

}  // namespace kiln::cuda

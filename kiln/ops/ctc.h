#pragma once
// Connectionist temporal classification loss (torch.nn.functional.ctc_loss).
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/nn.h"

namespace kiln {

// log_probs: (T, N, C) log-probabilities (or unbatched (T, C)). targets: (N, S) padded class
// indices, or the N targets concatenated into one 1-D tensor. input_lengths / target_lengths: N
// lengths each (int tensors). reduction Mean divides each sample's loss by its target length
// (at least 1) and averages over the batch, as PyTorch does. zero_infinity replaces infinite
// losses (inputs too short for their targets) and their gradients by zero.
// The gradient w.r.t. log_probs is PyTorch's: it assumes log_probs come from a log_softmax.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0,
                Reduction reduction = Reduction::Mean, bool zero_infinity = false);
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                IntArrayRef target_lengths, int64_t blank = 0,
                Reduction reduction = Reduction::Mean, bool zero_infinity = false);

}  // namespace kiln

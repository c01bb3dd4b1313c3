#pragma once
// nn::utils::rnn: variable-length batches for the recurrent modules, as libtorch's
// torch::nn::utils::rnn. A PackedSequence holds the steps of every sequence of a batch, time step
// by time step, longest sequences first: data [sum of lengths, *], batch_sizes [T] (int64, how
// many sequences are still running at step t), and the permutation that sorted the batch by
// length (sorted_indices) with its inverse (unsorted_indices), undefined when the batch came
// sorted. Packing and unpacking are compositions of index_select/index_copy, so gradients flow
// through them.
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::nn::utils::rnn {

// The inverse of a permutation (an int64 vector of 0..n-1 in some order).
Tensor invert_permutation(const Tensor& permutation);

class PackedSequence {
 public:
  PackedSequence() = default;
  // unsorted_indices is computed from sorted_indices when not given.
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {},
                          Tensor unsorted_indices = {});

  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }

  // The data moved or converted; batch_sizes stays an int64 CPU tensor, as in libtorch.
  PackedSequence to(const TensorOptions& options) const;
  PackedSequence cpu() const { return to(TensorOptions().device(kCPU)); }
  bool is_cuda() const { return data_.is_cuda(); }
  bool is_pinned() const { return false; }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// input: [T, B, *] (or [B, T, *] with batch_first), lengths: B positive lengths (an int64 or
// integer tensor on the CPU), each at most T. With enforce_sorted, lengths must not increase;
// otherwise the batch is sorted (stably, longest first) and the permutation kept.
PackedSequence pack_padded_sequence(const Tensor& input, Tensor lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

// The inverse of pack_padded_sequence: (padded [T, B, *] or [B, T, *], lengths [B] int64) in the
// batch's original order, steps past a sequence's end set to padding_value. total_length pads T
// up to that many steps (it must be at least the longest sequence).
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence,
                                               bool batch_first = false, double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);

// Stacks sequences [L_i, *] into [max L, N, *] ([N, max L, *] with batch_first), padding each
// on the right (or, with padding_side "left", on the left).
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false,
                    double padding_value = 0.0, std::string_view padding_side = "right");

// pack_padded_sequence(pad_sequence(sequences), their lengths, false, enforce_sorted).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

namespace detail {
// Packs padded [T, B, *] (original batch order) using the batch_sizes and sorted order of
// `like`: the packed form of a module's output for a packed input.
PackedSequence repack_like(const Tensor& padded, const PackedSequence& like);
}  // namespace detail

}  // namespace kiln::nn::utils::rnn

#include "kiln/nn/packed_sequence.h"

#include <algorithm>
#include <numeric>

#include "kiln/core/error.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::utils::rnn {
namespace {

std::vector<int64_t> to_vector(const Tensor& t) {
  const Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// batch_sizes[t]: how many of the (descending) lengths exceed t.
std::vector<int64_t> batch_sizes_of(const std::vector<int64_t>& sorted_lengths) {
  std::vector<int64_t> sizes(static_cast<size_t>(sorted_lengths.front()), 0);
  for (int64_t len : sorted_lengths)
    for (int64_t t = 0; t < len; ++t) ++sizes[static_cast<size_t>(t)];
  return sizes;
}

// Row t * B + order[b] of padded [T, B, *] for every packed step, in packed order.
Tensor packed_rows(const std::vector<int64_t>& batch_sizes, const std::vector<int64_t>& order) {
  const auto batch = static_cast<int64_t>(order.size());
  std::vector<int64_t> rows;
  for (size_t t = 0; t < batch_sizes.size(); ++t)
    for (int64_t b = 0; b < batch_sizes[t]; ++b)
      rows.push_back(static_cast<int64_t>(t) * batch + order[static_cast<size_t>(b)]);
  return tensor(rows);
}

std::vector<int64_t> order_of(const PackedSequence& s, int64_t batch) {
  if (s.sorted_indices().defined()) return to_vector(s.sorted_indices());
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// Packs padded [T, B, *] (original batch order) with the given step counts and sorted order.
Tensor pack_rows(const Tensor& padded, const std::vector<int64_t>& batch_sizes,
                 const std::vector<int64_t>& order) {
  return padded.flatten(0, 1).index_select(0, packed_rows(batch_sizes, order));
}

}  // namespace

Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return {};
  const std::vector<int64_t> p = to_vector(permutation);
  std::vector<int64_t> inverse(p.size(), -1);
  for (size_t i = 0; i < p.size(); ++i) {
    KILN_CHECK(p[i] >= 0 && p[i] < static_cast<int64_t>(p.size()) &&
                   inverse[static_cast<size_t>(p[i])] < 0,
               "invert_permutation: expected a permutation of 0..", p.size() - 1, ", got ",
               permutation);
    inverse[static_cast<size_t>(p[i])] = static_cast<int64_t>(i);
  }
  return tensor(inverse);
}

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices,
                               Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  KILN_CHECK(batch_sizes_.defined() && batch_sizes_.dim() == 1 && !batch_sizes_.is_cuda(),
             "PackedSequence: batch_sizes must be a 1-D CPU tensor");
  if (!unsorted_indices_.defined()) unsorted_indices_ = invert_permutation(sorted_indices_);
}

PackedSequence PackedSequence::to(const TensorOptions& options) const {
  return PackedSequence(data_.to(options), batch_sizes_, sorted_indices_, unsorted_indices_);
}

PackedSequence pack_padded_sequence(const Tensor& input, Tensor lengths, bool batch_first,
                                    bool enforce_sorted) {
  KILN_CHECK(input.dim() >= 2, "pack_padded_sequence: input must be at least 2-D ([T, B, *]), got ",
             input.sizes());
  KILN_CHECK(lengths.dim() == 1 && !lengths.is_cuda() && !is_floating_point(lengths.dtype()),
             "pack_padded_sequence: lengths must be a 1-D integer CPU tensor, got ",
             lengths.dtype(), " of shape ", lengths.sizes(), " on ", lengths.device());
  const Tensor x = batch_first ? input.transpose(0, 1) : input;
  const int64_t steps = x.size(0), batch = x.size(1);
  std::vector<int64_t> len = to_vector(lengths);
  KILN_CHECK(static_cast<int64_t>(len.size()) == batch, "pack_padded_sequence: got ", len.size(),
             " lengths for a batch of ", batch);
  for (int64_t l : len)
    KILN_CHECK(l > 0 && l <= steps, "pack_padded_sequence: every length must be in [1, ", steps,
               "] (the input's time steps), got ", l);
  std::vector<int64_t> order(len.size());
  std::iota(order.begin(), order.end(), 0);
  Tensor sorted_indices;
  if (enforce_sorted) {
    KILN_CHECK(std::is_sorted(len.rbegin(), len.rend()),
               "pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
               "pack_padded_sequence and/or pack_sequence to sidestep this requirement");
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return len[static_cast<size_t>(a)] > len[static_cast<size_t>(b)];
    });
    sorted_indices = tensor(order);
  }
  std::vector<int64_t> sorted(len.size());
  for (size_t i = 0; i < order.size(); ++i) sorted[i] = len[static_cast<size_t>(order[i])];
  const std::vector<int64_t> sizes = batch_sizes_of(sorted);
  return PackedSequence(pack_rows(x, sizes, order), tensor(sizes), sorted_indices);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first,
                                               double padding_value,
                                               std::optional<int64_t> total_length) {
  const std::vector<int64_t> sizes = to_vector(sequence.batch_sizes());
  KILN_CHECK(!sizes.empty(), "pad_packed_sequence: the sequence has no time steps");
  const int64_t max_steps = static_cast<int64_t>(sizes.size()), batch = sizes.front();
  const int64_t steps = total_length.value_or(max_steps);
  KILN_CHECK(steps >= max_steps, "pad_packed_sequence: Expected total_length to be at least ",
             max_steps, " (the length of the longest sequence), got ", steps);
  const std::vector<int64_t> order = order_of(sequence, batch);
  const Tensor& data = sequence.data();
  std::vector<int64_t> shape{steps * batch};
  for (int64_t d = 1; d < data.dim(); ++d) shape.push_back(data.size(d));
  Tensor padded =
      full(shape, padding_value, data.options()).index_copy(0, packed_rows(sizes, order), data);
  shape.front() = batch;
  shape.insert(shape.begin(), steps);
  padded = padded.view(shape);

  std::vector<int64_t> lengths(static_cast<size_t>(batch), 0);
  for (int64_t s : sizes)
    for (int64_t b = 0; b < s; ++b) ++lengths[static_cast<size_t>(order[static_cast<size_t>(b)])];
  if (batch_first) padded = padded.transpose(0, 1);
  return {padded, tensor(lengths)};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    std::string_view padding_side) {
  KILN_CHECK(!sequences.empty(), "pad_sequence: received an empty list of sequences");
  KILN_CHECK(padding_side == "right" || padding_side == "left",
             "pad_sequence: padding_side must be \"left\" or \"right\", got \"", padding_side,
             "\"");
  int64_t longest = 0;
  for (const Tensor& s : sequences) {
    KILN_CHECK(s.dim() >= 1, "pad_sequence: every sequence must be at least 1-D");
    longest = std::max(longest, s.size(0));
  }
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences) {
    const int64_t missing = longest - s.size(0);
    if (missing == 0) {
      padded.push_back(s);
      continue;
    }
    std::vector<int64_t> fill_shape = s.sizes().vec();
    fill_shape.front() = missing;
    Tensor fill = full(fill_shape, padding_value, s.options());
    padded.push_back(padding_side == "right" ? cat({s, fill}, 0) : cat({fill, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) {
    KILN_CHECK(s.dim() >= 1, "pack_sequence: every sequence must be at least 1-D");
    lengths.push_back(s.size(0));
  }
  return pack_padded_sequence(pad_sequence(sequences), tensor(lengths), false, enforce_sorted);
}

namespace detail {
PackedSequence repack_like(const Tensor& padded, const PackedSequence& like) {
  const std::vector<int64_t> sizes = to_vector(like.batch_sizes());
  return PackedSequence(pack_rows(padded, sizes, order_of(like, padded.size(1))),
                        like.batch_sizes(), like.sorted_indices(), like.unsorted_indices());
}
}  // namespace detail

}  // namespace kiln::nn::utils::rnn

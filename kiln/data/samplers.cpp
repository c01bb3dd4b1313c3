#include "kiln/data/samplers.h"

#include <algorithm>
#include <limits>

#include "kiln/core/error.h"
#include "kiln/ops/random.h"

namespace kiln::data::samplers {
namespace {

std::optional<std::vector<size_t>> take(const std::vector<size_t>* indices, size_t size,
                                        size_t& index, size_t batch_size) {
  KILN_CHECK(batch_size > 0, "Sampler::next: batch_size must be positive");
  if (index >= size) return std::nullopt;
  size_t n = std::min(batch_size, size - index);
  std::vector<size_t> batch(n);
  for (size_t i = 0; i < n; ++i) batch[i] = indices ? (*indices)[index + i] : index + i;
  index += n;
  return batch;
}

uint64_t seed_from_default_generator() {
  Tensor draw = kiln::randint(0, std::numeric_limits<int64_t>::max(), {1}, TensorOptions(kInt64));
  return static_cast<uint64_t>(draw.data_ptr<int64_t>()[0]);
}

}  // namespace

std::vector<size_t> random_permutation(size_t n, Generator& generator) {
  Tensor perm = kiln::randperm(static_cast<int64_t>(n), &generator, TensorOptions(kInt64));
  const int64_t* p = perm.data_ptr<int64_t>();
  return std::vector<size_t>(p, p + n);
}

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  return take(nullptr, size_, index_, batch_size);
}

RandomSampler::RandomSampler(int64_t size, ScalarType /*index_dtype*/)
    : RandomSampler(size, seed_from_default_generator()) {}

RandomSampler::RandomSampler(int64_t size, uint64_t seed) : generator_(seed) {
  KILN_CHECK(size >= 0, "RandomSampler: size must be non-negative, got ", size);
  indices_.resize(static_cast<size_t>(size));
  reset();
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  indices_ = random_permutation(new_size ? *new_size : indices_.size(), generator_);
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return take(&indices_, indices_.size(), index_, batch_size);
}

DistributedSampler::DistributedSampler(size_t size, size_t num_replicas, size_t rank,
                                       bool allow_duplicates)
    : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
  KILN_CHECK(num_replicas > 0, "DistributedSampler: num_replicas must be positive, got 0");
  KILN_CHECK(rank < num_replicas, "DistributedSampler: rank ", rank,
             " is out of range for num_replicas ", num_replicas);
}

size_t DistributedSampler::local_sample_count() const {
  return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
}

void DistributedSampler::take_share(const std::vector<size_t>& order) {
  const size_t count = local_sample_count();
  indices_.resize(count);
  for (size_t i = 0; i < count; ++i) indices_[i] = order[(rank_ * count + i) % order.size()];
  index_ = 0;
}

std::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  return take(&indices_, indices_.size(), index_, batch_size);
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  reset();
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  Generator generator(epoch_);
  take_share(random_permutation(size_, generator));
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas,
                                                           size_t rank, bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  reset();
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  std::vector<size_t> order(size_);
  for (size_t i = 0; i < size_; ++i) order[i] = i;
  take_share(order);
}

}  // namespace kiln::data::samplers

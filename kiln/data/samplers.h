#pragma once
// Samplers, as torch::data::samplers: they hand the DataLoader the indices of each batch.
// RandomSampler draws a new permutation every epoch from its own generator, so a seed makes the
// whole sequence of epochs reproducible; without a seed it starts from a seed drawn from the
// default CPU generator (reproducible after kiln::manual_seed, as libtorch's).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/core/dtype.h"
#include "kiln/core/generator.h"

namespace kiln::data::samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  // Starts a new epoch (over `new_size` examples when given).
  virtual void reset(std::optional<size_t> new_size) = 0;
  // The next batch of at most `batch_size` indices, or nullopt when the epoch is over.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

class RandomSampler : public Sampler<> {
 public:
  // index_dtype is accepted for libtorch compatibility (indices are always size_t here).
  explicit RandomSampler(int64_t size, ScalarType index_dtype = kInt64);
  RandomSampler(int64_t size, uint64_t seed);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  Generator generator_;
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// A random permutation of 0..n-1 drawn from `generator` (shared by RandomSampler and random_split).
std::vector<size_t> random_permutation(size_t n, Generator& generator);

}  // namespace kiln::data::samplers

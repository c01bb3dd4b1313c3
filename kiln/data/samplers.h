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

// The share of `size` examples that replica `rank` of `num_replicas` sees in an epoch, as
// libtorch's DistributedSampler: ceil(size / num_replicas) indices when allow_duplicates (the
// last replicas wrap around to the start, so every replica gets the same count and every example
// is seen), floor(size / num_replicas) otherwise (the remainder is left out).
class DistributedSampler : public Sampler<> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                     bool allow_duplicates = true);
  // The epoch seeds DistributedRandomSampler's permutation, so all replicas agree on it.
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 protected:
  size_t local_sample_count() const;
  // This replica's indices from an epoch's ordering of all examples.
  void take_share(const std::vector<size_t>& order);

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  bool allow_duplicates_;
  size_t epoch_ = 0;
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// Each epoch shuffles all examples with a generator seeded by the epoch, then takes this
// replica's share. Call set_epoch(e) before each epoch to see a new order.
class DistributedRandomSampler : public DistributedSampler {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                           bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
};

// This replica's share of the examples in order: rank r sees a contiguous run.
class DistributedSequentialSampler : public DistributedSampler {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                               bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
};

// A random permutation of 0..n-1 drawn from `generator` (shared by RandomSampler and random_split).
std::vector<size_t> random_permutation(size_t n, Generator& generator);

}  // namespace kiln::data::samplers

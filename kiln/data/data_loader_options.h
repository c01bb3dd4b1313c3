#pragma once
// DataLoaderOptions, as torch::data::DataLoaderOptions: DataLoaderOptions().batch_size(64)
// .workers(2).drop_last(true). Each setter returns the options; the same name without an
// argument reads the value.
#include <chrono>
#include <cstddef>
#include <optional>

namespace kiln::data {

#define KILN_DATA_LOADER_ARG(T, name, init)          \
 public:                                             \
  DataLoaderOptions& name(const T& value) {          \
    name##_ = value;                                 \
    return *this;                                    \
  }                                                  \
  const T& name() const noexcept { return name##_; } \
                                                     \
 private:                                            \
  T name##_ = init;

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  /* implicit */ DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}  // NOLINT

  // Examples per batch.
  KILN_DATA_LOADER_ARG(size_t, batch_size, 1)
  // Threads that load batches ahead of the consumer (0: the consumer loads each batch itself).
  KILN_DATA_LOADER_ARG(size_t, workers, 0)
  // Batches requested ahead at most (the bounded prefetch queue); default 2 * workers.
  KILN_DATA_LOADER_ARG(std::optional<size_t>, max_jobs, std::nullopt)
  // Drop the last batch of an epoch when it has fewer than batch_size examples.
  KILN_DATA_LOADER_ARG(bool, drop_last, false)
  // With workers, how long to wait for a batch before raising an error (no limit when unset).
  KILN_DATA_LOADER_ARG(std::optional<std::chrono::milliseconds>, timeout, std::nullopt)
  // Batches always arrive in sampler order here; false is accepted for libtorch's signature.
  KILN_DATA_LOADER_ARG(bool, enforce_ordering, true)
  // Copy each batch's CPU tensors into pinned memory (Tensor::pin_memory) as it is loaded, by
  // the workers when there are some, as PyTorch's DataLoader(pin_memory=True).
  KILN_DATA_LOADER_ARG(bool, pin_memory, false)

 public:
  size_t effective_max_jobs() const {
    return max_jobs_.value_or(2 * workers_) > 0 ? max_jobs_.value_or(2 * workers_) : 1;
  }
};

#undef KILN_DATA_LOADER_ARG

}  // namespace kiln::data

#pragma once
// What DataLoaderOptions::pin_memory does to a batch: its CPU tensors (an Example's data and
// target, a tensor, or each element of a vector of them) are copied into pinned host memory, so
// that `batch.data.to(kCUDA, /*non_blocking=*/true)` does not wait for the device. Other batch
// types pass unchanged.
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/data/example.h"

namespace kiln::data {

inline Tensor pin_batch(Tensor t) { return t.defined() && t.is_cpu() ? t.pin_memory() : t; }

template <typename T>
std::vector<T> pin_batch(std::vector<T> batch) {
  for (T& element : batch) element = pin_batch(std::move(element));
  return batch;
}

template <typename Data, typename Target>
Example<Data, Target> pin_batch(Example<Data, Target> e) {
  e.data = pin_batch(std::move(e.data));
  if constexpr (!std::is_void_v<Target>) e.target = pin_batch(std::move(e.target));
  return e;
}

template <typename Batch>
Batch pin_batch(Batch batch) {
  return batch;
}

}  // namespace kiln::data

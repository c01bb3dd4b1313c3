#pragma once
// kiln::data::Example: one (data, target) pair, as torch::data::Example. Example<T, NoTarget>
// (TensorExample) holds data only.
#include <utility>

#include "kiln/core/tensor.h"

namespace kiln::data {

namespace example {
using NoTarget = void;
}  // namespace example

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;

  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}

  Data data;
  Target target;
};

template <typename Data>
struct Example<Data, example::NoTarget> {
  using DataType = Data;
  using TargetType = example::NoTarget;

  Example() = default;
  /* implicit */ Example(Data data) : data(std::move(data)) {}  // NOLINT

  operator Data&() { return data; }              // NOLINT
  operator const Data&() const { return data; }  // NOLINT

  Data data;
};

using TensorExample = Example<Tensor, example::NoTarget>;

}  // namespace kiln::data

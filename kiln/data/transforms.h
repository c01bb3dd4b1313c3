#pragma once
// Transforms, as torch::data::transforms: a BatchTransform maps a whole batch; a Transform maps
// each example of a batch; a Collation (Stack<>) turns a vector of examples into one example of
// stacked tensors; TensorTransform/Normalize/TensorLambda change the data tensor of each example.
#include <functional>
#include <utility>
#include <vector>

#include "kiln/data/example.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/shape.h"

namespace kiln::data::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;

  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;

  virtual OutputType apply(InputType input) = 0;

  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output;
    output.reserve(input_batch.size());
    for (auto& input : input_batch) output.push_back(apply(std::move(input)));
    return output;
  }
};

// A BatchTransform whose output is one batch made from a vector of examples.
template <typename BatchType, typename T = std::vector<BatchType>>
using Collation = BatchTransform<T, BatchType>;

template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  Output apply_batch(Input input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  Output apply(Input input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// Stack<Example<>>: stacks data and targets along a new first dimension.
template <typename T = Example<>>
struct Stack;

template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& e : examples) {
      data.push_back(std::move(e.data));
      targets.push_back(std::move(e.target));
    }
    return {kiln::stack(data), kiln::stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& e : examples) data.push_back(std::move(e.data));
    return kiln::stack(data);
  }
};

// Transforms the data tensor of every example and keeps the target.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// (data - mean) / stddev; per-channel when given lists (broadcast over the first dimension of
// each example, e.g. channels of a [C, H, W] image).
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(double mean, double stddev)
      : mean(kiln::tensor({mean}, kFloat)), stddev(kiln::tensor({stddev}, kFloat)) {}
  Normalize(const std::vector<double>& mean, const std::vector<double>& stddev)
      : mean(kiln::tensor(mean, kFloat).reshape({-1, 1, 1})),
        stddev(kiln::tensor(stddev, kFloat).reshape({-1, 1, 1})) {}

  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;
};

}  // namespace kiln::data::transforms

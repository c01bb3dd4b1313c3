#pragma once
// Factories, copies and conversions: empty, zeros, ones, full, tensor, from_blob, *_like, clone,
// to, contiguous, copy_, fill_.
#include <functional>
#include <initializer_list>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

Tensor empty(SymIntList size, const TensorOptions& options = {});
Tensor empty_strided(SymIntList size, SymIntList stride, const TensorOptions& options = {});
Tensor zeros(SymIntList size, const TensorOptions& options = {});
Tensor ones(SymIntList size, const TensorOptions& options = {});
Tensor full(SymIntList size, const Scalar& fill_value, const TensorOptions& options = {});
Tensor empty_like(const Tensor& t, const TensorOptions& options = {});
Tensor zeros_like(const Tensor& t, const TensorOptions& options = {});
Tensor ones_like(const Tensor& t, const TensorOptions& options = {});
Tensor full_like(const Tensor& t, const Scalar& fill_value, const TensorOptions& options = {});
// A 0-dim tensor holding `s` (float values get the default dtype unless options say otherwise).
Tensor scalar_tensor(const Scalar& s, const TensorOptions& options = {});
// A 0-dim "wrapped number" tensor: how ops receive Python-style numbers (see TensorImpl).
Tensor wrapped_scalar(const Scalar& s);

// kiln::tensor({1.0, 2.0}), kiln::tensor({{1, 2}, {3, 4}}, kFloat): copies the values.
// Without a dtype, floats give the default dtype, integers int64, bools bool (as torch.tensor).
Tensor tensor(const std::vector<double>& values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<float> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<int> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<int64_t> values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<bool> values, const TensorOptions& options = {});
Tensor tensor(const std::vector<float>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<int64_t>& values, const TensorOptions& options = {});
Tensor tensor(const std::vector<int>& values, const TensorOptions& options = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows,
              const TensorOptions& options = {});
Tensor tensor(std::initializer_list<std::initializer_list<int>> rows,
              const TensorOptions& options = {});
// Three and four levels: tensor({{{1, 2}, {3, 4}}}) is [1, 2, 2].
template <class T>
using NestedList3 = std::initializer_list<std::initializer_list<std::initializer_list<T>>>;
template <class T>
using NestedList4 = std::initializer_list<NestedList3<T>>;
Tensor tensor(NestedList3<double> planes, const TensorOptions& options = {});
Tensor tensor(NestedList3<int> planes, const TensorOptions& options = {});
Tensor tensor(NestedList4<double> blocks, const TensorOptions& options = {});
Tensor tensor(NestedList4<int> blocks, const TensorOptions& options = {});
Tensor tensor(double value, const TensorOptions& options = {});
Tensor tensor(int64_t value, const TensorOptions& options = {});
Tensor tensor(int value, const TensorOptions& options = {});

// Wraps memory the caller owns (no copy). `deleter`, if given, runs when the tensor dies.
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides,
                 const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& options = {});

Tensor clone(const Tensor& t);
// t itself when it already has `format`'s layout, else a copy in it (ops/memory_format.cpp).
Tensor contiguous(const Tensor& t, MemoryFormat format = MemoryFormat::Contiguous);
Tensor to(const Tensor& t, ScalarType dtype);
// non_blocking: see Tensor::copy_. A non-blocking copy from a device to the CPU lands in pinned
// memory (as PyTorch's), when the device's backend has it and no gradient is recorded.
Tensor to(const Tensor& t, Device device, ScalarType dtype, bool non_blocking = false);
Tensor& copy_(Tensor& self, const Tensor& src, bool non_blocking = false);
Tensor& fill_(Tensor& self, const Scalar& value);
Tensor& zero_(Tensor& self);

}  // namespace kiln

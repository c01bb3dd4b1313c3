#pragma once
// vmap over a function of a list of tensors: what kiln::func::vmap (func.h) calls once it has
// flattened the arguments.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::func {

// What vmap does with random ops: "error" refuses them, "same" draws one value for the whole
// batch, "different" draws one per batch element (PyTorch's randomness= argument).
enum class Randomness { Error, Same, Different };
Randomness parse_randomness(const std::string& name);

// The ops that ran through the loop fallback in this process, first seen first.
std::vector<std::string> vmap_fallback_ops();

namespace detail {

using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// f over the batch of `inputs`: input i is batched along in_dims[i] (nullopt: the same for every
// element); output j gets its batch at out_dims[j] (one value: every output's).
std::vector<Tensor> vmap_flat(const FlatFn& f, const std::vector<Tensor>& inputs,
                              const std::vector<std::optional<int64_t>>& in_dims,
                              const std::vector<int64_t>& out_dims, Randomness randomness,
                              std::optional<int64_t> chunk_size);

}  // namespace detail
}  // namespace kiln::func

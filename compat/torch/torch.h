#pragma once
// libtorch compatibility: with Kiln's compat/ directory on the include path, a program written
// for libtorch that includes <torch/torch.h> and spells names torch::..., at::... or c10::...
// compiles against Kiln unchanged, for everything Kiln implements.
//
// Note [Compat namespaces]: torch, at and c10 are real namespaces holding `using namespace kiln`,
// not aliases of kiln. So torch::X finds kiln::X (and torch::autograd finds kiln::autograd),
// and a top-level libtorch name Kiln lacks can be added to torch/at/c10 directly. Sub-namespaces
// (torch::autograd, torch::indexing, torch::nn, ...) must NOT be declared here: after
// `using namespace torch;`, a call `autograd::grad(...)` would see both torch::autograd and
// kiln::autograd and be ambiguous. A libtorch name that belongs in a sub-namespace and that
// Kiln spells differently is added to the matching kiln namespace in torch/detail/aliases.h.
// The C++ standard headers libtorch's <torch/torch.h> brings in, so that a program using
// std::cout, std::sort, std::chrono, std::setprecision, std::accumulate or assert with only
// <torch/torch.h> compiles here too.
#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cassert>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <stack>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/kiln.h"
#include "torch/detail/aliases.h"
#include "torch/detail/c10_util.h"
#include "torch/detail/context.h"
#include "torch/detail/dispatch.h"
#include "torch/detail/macros.h"

// libtorch's macros for module holders and option fields.
#define TORCH_MODULE(Name) KILN_MODULE(Name)
#define TORCH_MODULE_IMPL(Name, Impl) KILN_MODULE_IMPL(Name, Impl)
#define TORCH_ARG(T, name) KILN_ARG(T, name)

namespace torch {
using namespace ::kiln;
using ::c10::InferenceMode;
using ::c10::str;
// torch/types.h: torch::optional is std::optional.
using std::nullopt;
using std::optional;
// torch/types.h: the short dtype names.
constexpr Dtype kU8 = kUInt8;
constexpr Dtype kI8 = kInt8;
constexpr Dtype kI16 = kInt16;
constexpr Dtype kI32 = kInt32;
constexpr Dtype kI64 = kInt64;
constexpr Dtype kF16 = kFloat16;
constexpr Dtype kBF16 = kBFloat16;
constexpr Dtype kF32 = kFloat32;
constexpr Dtype kF64 = kFloat64;
}  // namespace torch

namespace at {
using namespace ::kiln;
using ::c10::InferenceMode;
using ::c10::irange;
using ::c10::str;
}  // namespace at

namespace c10 {
using namespace ::kiln;
// c10::optional and c10::nullopt are std::optional and std::nullopt in current libtorch.
using std::nullopt;
using std::optional;
}  // namespace c10

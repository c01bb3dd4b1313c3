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
#include <optional>

#include "kiln/kiln.h"
#include "torch/detail/aliases.h"

// libtorch's macros for module holders and option fields.
#define TORCH_MODULE(Name) KILN_MODULE(Name)
#define TORCH_MODULE_IMPL(Name, Impl) KILN_MODULE_IMPL(Name, Impl)
#define TORCH_ARG(T, name) KILN_ARG(T, name)

namespace torch {
using namespace ::kiln;
}  // namespace torch

namespace at {
using namespace ::kiln;
}  // namespace at

namespace c10 {
using namespace ::kiln;
// c10::optional and c10::nullopt are std::optional and std::nullopt in current libtorch.
using std::nullopt;
using std::optional;
}  // namespace c10

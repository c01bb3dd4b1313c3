#pragma once
// libtorch names in sub-namespaces that Kiln spells differently, added to the kiln namespace
// they belong to. Only the compat headers include this file (see Note [Compat namespaces] in
// compat/torch/torch.h).
#include "kiln/kiln.h"

namespace kiln::autograd {
// libtorch's Variable is a Tensor; tensor_list and variable_list are the same type.
using Variable = ::kiln::Tensor;
using tensor_list = variable_list;
using ::kiln::GradMode;
}  // namespace kiln::autograd

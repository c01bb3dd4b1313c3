#pragma once
// libtorch's names for the backward nodes of registry ops: "AddBackward0", "SumBackward1",
// "NativeBatchNormBackward0". PyTorch's code generator names each node after the ATen op whose
// derivative it implements, in CamelCase, followed by "Backward" and the index of the overload
// in derivatives.yaml; Kiln derives the same from its own op name and the call's arguments.
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::autograd {

// "max_pool2d_with_indices" -> "MaxPool2DWithIndices", "_to_copy" -> "ToCopy" (PyTorch's rule:
// every '_'-separated part in Python's str.title() form).
std::string camel_case(std::string_view aten_name);

// The overload of the ATen op that this call of `op` stands for: 1 for the Scalar overloads
// that C++ calls with a number operand pick (`a * 2` -> MulBackward1), the dim overloads of the
// reductions (`a.sum(1)` -> SumBackward1, `a.max()` -> MaxBackward1), 0 otherwise.
int backward_overload(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

// "<CamelCase ATen name>Backward<overload>".
std::string backward_node_name(const OpDef& op, int overload);

}  // namespace kiln::autograd

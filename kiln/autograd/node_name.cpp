#include "kiln/autograd/node_name.h"

#include <cctype>
#include <string_view>
#include <unordered_map>

namespace kiln::autograd {
namespace {

// Kiln ops whose backward PyTorch files under another ATen op's name (Kiln names the op after
// the public function, ATen after the native kernel that carries the derivative).
std::string_view aten_name(std::string_view kiln_name) {
  static const std::unordered_map<std::string_view, std::string_view> renamed{
      {"batch_norm", "native_batch_norm"},
      {"layer_norm", "native_layer_norm"},
      {"group_norm", "native_group_norm"},
      {"norm", "linalg_vector_norm"},
      {"relu6", "hardtanh"},
      {"max_dim", "max"},
      {"min_dim", "min"},
      {"median_dim", "median"},
      {"scatter_value", "scatter"},
      {"sparse_csr_mm", "mm"},
      {"convolution_backward_weight", "convolution_backward"},
  };
  auto it = renamed.find(kiln_name);
  return it == renamed.end() ? kiln_name : it->second;
}

// The in-place variant's node carries its base op's name (`x.mul_(2)` -> MulBackward1).
std::string_view base_name(std::string_view name) {
  if (name.size() > 1 && name.back() == '_') name.remove_suffix(1);
  return name;
}

bool is_number(const Tensor& t) { return t.defined() && t.impl()->is_wrapped_number(); }

}  // namespace

std::string camel_case(std::string_view aten_name) {
  std::string out;
  bool after_letter = false;
  for (char c : aten_name) {
    if (c == '_') {
      after_letter = false;
      continue;
    }
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    out += letter ? static_cast<char>(after_letter ? std::tolower(c) : std::toupper(c)) : c;
    after_letter = letter;
  }
  return out;
}

int backward_overload(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  const std::string_view name = base_name(op.name);
  // Full reductions and their dim overloads, in derivatives.yaml's order.
  if (name == "sum" || name == "mean") return attrs.size() > 0 && !attrs.ints(0).empty() ? 1 : 0;
  if (name == "max" || name == "min") return 1;  // max() is listed after max.dim
  if (name == "median_dim") return 1;            // median.dim after median()
  if (name == "pow") {                           // pow.Tensor_Scalar, pow.Tensor_Tensor, pow.Scalar
    if (inputs.size() > 1 && is_number(inputs[1])) return 0;
    return inputs.size() > 0 && is_number(inputs[0]) ? 2 : 1;
  }
  if (name == "clamp")  // clamp.Scalar when a bound is a number, else clamp.Tensor
    return (inputs.size() > 1 && is_number(inputs[1])) ||
           (inputs.size() > 2 && is_number(inputs[2]));
  if (name == "div" && attrs.size() > 0 && !attrs.is_none(0))  // div.Tensor_mode, div.Scalar_mode
    return inputs.size() > 1 && is_number(inputs[1]) ? 3 : 2;
  // Binary ops called with a C++ number pick the .Scalar overload, listed second. (libtorch's
  // `1 - a` builds a tensor from the 1 first, so only a number as the second operand counts.)
  return inputs.size() > 1 && is_number(inputs[1]) ? 1 : 0;
}

std::string backward_node_name(const OpDef& op, int overload) {
  return camel_case(aten_name(base_name(op.name))) + "Backward" + std::to_string(overload);
}

}  // namespace kiln::autograd

#pragma once
// The graph kiln::compile captures: registry ops over values, in the order the function ran them
// (ARCHITECTURE.md §7). Values are numbered; each is a graph input, a tensor the function
// captured (a module's parameter, a tensor from its closure), or an output of one node.
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/attrs.h"

namespace kiln {
struct OpDef;
}

namespace kiln::compiler {

// Two symbolic shapes that are the same expressions, dim by dim (no guard recorded).
bool same_shape(const SymShape& a, const SymShape& b);
// Row-major strides of `sizes` agree with `strides` wherever they matter (size > 1); empty
// strides are contiguous.
bool is_contiguous(const SymShape& sizes, const SymShape& strides);

struct Value {
  enum class Kind { Input, Captured, NodeOutput };
  Kind kind = Kind::NodeOutput;
  SymShape sizes, strides;
  ScalarType dtype = ScalarType::Undefined;
  Device device;
  // A 0-dim tensor made from a C++ number: it takes part in type promotion by category only, so
  // replays must mark it as eager did.
  bool wrapped_number = false;
  int producer = -1;  // the node (NodeOutput) or the input / captured index
};

struct Node {
  const OpDef* op = nullptr;
  std::vector<int> inputs;  // value ids; -1 for an undefined tensor argument
  Attrs attrs;
  bool symbolic_attrs = false;  // some attribute holds a symbolic size: evaluate it per call
  bool grad_enabled = true;     // grad mode when the function called it (NoGradGuard inside fn)
  std::vector<int> outputs;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;    // the flattened tensor arguments, in order
  std::vector<int> captured;  // values read from captured_tensors
  std::vector<Tensor> captured_tensors;
  std::vector<int> outputs;  // the flattened results
  // Inputs and captured tensors the graph writes through views at offsets from the start of
  // their storage (reinplace_input_writes): each must start its storage.
  std::vector<int> written_in_place;
  // The branches and loop bodies of control-flow nodes (control_flow.h), which name them by
  // index in their attributes.
  std::vector<std::shared_ptr<const Graph>> subgraphs;

  int add_value(Value v);
  // One line per node: "%3 = mul(%1, %2) : float32[s0, 4]".
  std::string str() const;
};

// "float32[s0, 4]"
std::string describe_value(const Value& v);

}  // namespace kiln::compiler

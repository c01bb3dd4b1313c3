#include "kiln/compile/graph.h"

#include <algorithm>
#include <sstream>

#include "kiln/ops/registry.h"

namespace kiln::compiler {

bool same_shape(const SymShape& a, const SymShape& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](const SymInt& x, const SymInt& y) { return x.same_as(y); });
}

bool is_contiguous(const SymShape& sizes, const SymShape& strides) {
  if (strides.empty()) return true;
  if (strides.size() != sizes.size()) return false;
  SymInt expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d].maybe_int() != 1 && !strides[d].same_as(expected)) return false;
    expected = expected * sizes[d];
  }
  return true;
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

std::string describe_value(const Value& v) {
  std::ostringstream os;
  os << v.dtype << SymIntArrayRef(v.sizes);
  if (v.wrapped_number) os << " (number)";
  return os.str();
}

std::string Graph::str() const {
  std::ostringstream os;
  auto name = [](int id) { return id < 0 ? std::string("None") : "%" + std::to_string(id); };
  for (size_t i = 0; i < inputs.size(); ++i)
    os << name(inputs[i]) << " = input " << i << " : " << describe_value(values[inputs[i]]) << "\n";
  for (size_t i = 0; i < captured.size(); ++i)
    os << name(captured[i]) << " = captured " << i << " : " << describe_value(values[captured[i]])
       << "\n";
  for (const Node& n : nodes) {
    for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << name(n.outputs[k]);
    os << " = " << n.op->name << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << name(n.inputs[k]);
    if (n.attrs.size() > 0) os << (n.inputs.empty() ? "" : "; ") << n.attrs.to_string();
    os << ")";
    if (!n.grad_enabled) os << " [no grad]";
    if (!n.outputs.empty()) {
      os << " : ";
      for (size_t k = 0; k < n.outputs.size(); ++k)
        os << (k ? ", " : "") << describe_value(values[n.outputs[k]]);
    }
    os << "\n";
  }
  os << "return";
  for (size_t k = 0; k < outputs.size(); ++k) os << (k ? ", " : " ") << name(outputs[k]);
  os << "\n";
  return os.str();
}

}  // namespace kiln::compiler

#include "kiln/func/schema_dims.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/core/dispatch.h"
#include "kiln/func/batching_rules.h"
#include "kiln/ops/meta.h"

namespace kiln::func::detail {
namespace {

// What one attribute is to the rule.
enum class ArgRole { Other, Dim, DimList, DimListAllWhenEmpty, Size };

struct DimsSpec {
  bool applies = false;
  std::vector<ArgRole> attrs;  // one per attribute, in schema order
};

// Ops of one tensor with no dim argument whose result has the input's shape, element for element.
bool is_shape_preserving(const std::string& name) {
  static const char* const kNames[] = {"detach",     "clone",     "contiguous", "_to_copy", "alias",
                                       "zeros_like", "ones_like", "empty_like", "full_like"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

bool is_dim_name(const std::string& n) {
  return n == "dim" || n == "dims" || n == "dim0" || n == "dim1" || n == "dim2" ||
         n == "dimension" || n == "start_dim" || n == "end_dim";
}

// "sum(Tensor self, int[] dim=[], bool keepdim=False, ScalarType? dtype=None) -> Tensor"
DimsSpec parse(const OpDef& op) {
  DimsSpec spec;
  const std::string& s = op.schema_;
  const size_t open = s.find('('), close = s.find(") ->");
  if (open == std::string::npos || close == std::string::npos) return spec;
  std::vector<std::string> args;
  int depth = 0;
  std::string cur;
  for (size_t i = open + 1; i < close; ++i) {
    const char ch = s[i];
    if (ch == '(' || ch == '[') ++depth;
    if (ch == ')' || ch == ']') --depth;
    if (ch == ',' && depth == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  int tensors = 0;
  bool moves_something = false;
  for (std::string a : args) {
    while (!a.empty() && a.front() == ' ') a.erase(a.begin());
    if (a == "*" || a.empty()) continue;
    const size_t space = a.find(' ');
    if (space == std::string::npos) return spec;
    const std::string type = a.substr(0, space);
    std::string name = a.substr(space + 1);
    std::string deflt;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      deflt = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (type.rfind("Tensor", 0) == 0) {
      if (type.find("[]") != std::string::npos) return spec;  // a list of tensors
      ++tensors;
      continue;
    }
    ArgRole role = ArgRole::Other;
    const bool is_list = type.rfind("int[", 0) == 0;
    if (is_dim_name(name) && (type == "int" || is_list)) {
      if (type == "int")
        role = ArgRole::Dim;
      else  // an empty `dim` list reduces every dim; empty `dims` (flip, roll) are literal
        role = name == "dim" ? ArgRole::DimListAllWhenEmpty : ArgRole::DimList;
      moves_something = true;
    } else if (name == "size" && (type == "SymInt[]" || type == "int[]")) {
      role = ArgRole::Size;
      moves_something = true;
    } else if (type == "int?" && is_dim_name(name)) {
      role = ArgRole::Dim;  // None (flatten everything) is left to the loop
      moves_something = true;
    } else if (type.find("SymInt[]") != std::string::npos ||
               type.find("int[]") != std::string::npos) {
      return spec;  // other sizes or strides (as_strided): their meaning is not the dims'
    }
    spec.attrs.push_back(role);
  }
  spec.applies = tensors == 1 && !op.is_random && !op.dynamic_output && !op.is_inplace &&
                 (moves_something || is_shape_preserving(op.name));
  return spec;
}

const DimsSpec& spec_of(const OpDef& op) {
  thread_local std::unordered_map<const OpDef*, DimsSpec> specs;  // parsed once per thread
  auto it = specs.find(&op);
  if (it == specs.end()) it = specs.emplace(&op, parse(op)).first;
  return it->second;
}

}  // namespace

bool dims_rule_applies(const OpDef& op) { return spec_of(op).applies; }

std::optional<BatchResult> dims_rule(const OpDef& op, const BatchCall& c) {
  const DimsSpec& spec = spec_of(op);
  const int64_t rank = logical_rank(c.values.at(0), c.bdims.at(0));
  Tensor self = c.batch_in_front(0);
  // unsqueeze's dim counts the new dim; a 0-dim tensor takes dim 0 and -1 as PyTorch does, but
  // those cannot name a physical dim past the batch.
  const int64_t dim_range = op.name == "unsqueeze" ? rank + 1 : rank;
  const bool takes_dims = std::any_of(spec.attrs.begin(), spec.attrs.end(), [](ArgRole r) {
    return r == ArgRole::Dim || r == ArgRole::DimList || r == ArgRole::DimListAllWhenEmpty;
  });
  if (dim_range == 0 && takes_dims) return std::nullopt;
  auto shift = [&](int64_t d) { return meta::wrap_dim(op.name.c_str(), d, dim_range) + 1; };
  std::vector<AttrValue> attrs;
  for (size_t i = 0; i < c.attrs.size(); ++i) {
    const ArgRole role = i < spec.attrs.size() ? spec.attrs[i] : ArgRole::Other;
    switch (role) {
      case ArgRole::Other:
        attrs.push_back(c.attrs[i]);
        break;
      case ArgRole::Dim:
        if (c.attrs.is_none(i)) return std::nullopt;
        attrs.emplace_back(shift(c.attrs.i(i)));
        break;
      case ArgRole::DimList:
      case ArgRole::DimListAllWhenEmpty: {
        std::vector<int64_t> dims;
        if (!c.attrs.is_none(i)) dims = c.attrs.ints(i);
        if (dims.empty() && role == ArgRole::DimListAllWhenEmpty)
          for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
        else if (dims.empty() && op.name == "roll")
          return std::nullopt;  // roll of the flattened tensor
        for (int64_t& d : dims) d = shift(d);
        if (op.name == "permute") dims.insert(dims.begin(), 0);
        attrs.emplace_back(std::move(dims));
        break;
      }
      case ArgRole::Size: {
        SymShape size = c.attrs.shape(i);
        if (op.name == "expand")  // new leading dims go between the batch and the old ones
          for (int64_t d = rank; d < static_cast<int64_t>(size.size()); ++d)
            self = self.unsqueeze(1);
        size.insert(size.begin(), SymInt(c.batch_size));
        attrs.emplace_back(std::move(size));
        break;
      }
    }
  }
  std::vector<Tensor> args = c.values;
  args[0] = self;
  std::vector<Tensor> outs = call_op(op, std::move(args), Attrs(std::move(attrs)));
  return BatchResult{outs, std::vector<std::optional<int64_t>>(outs.size(), int64_t{0})};
}

}  // namespace kiln::func::detail

#pragma once
// Guards: what a later call must match to reuse a captured graph (ARCHITECTURE.md §7), and the
// traced stand-ins for one call's arguments, made by the same decisions (which dims are
// symbolic, which sizes share a symbol).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compile/args.h"
#include "kiln/compile/dynamic.h"
#include "kiln/compile/graph.h"
#include "kiln/core/symint.h"

namespace kiln::compiler {

class Tracer;

struct DimGuard {
  int64_t size = 0;  // the size when static
  int symbol = -1;   // >= 0: the symbol this dim's size gives a value to
};

struct TensorGuard {
  std::string where;  // "args[0]", "args[1][2]", "captured[3]"
  bool defined = true;
  ScalarType dtype = ScalarType::Undefined;
  Device device;
  bool requires_grad = false;
  bool wrapped_number = false;
  std::vector<DimGuard> dims;
  bool contiguous = true;
  std::vector<int64_t> strides;  // the exact strides, when not contiguous
};

// A .grad the function read before setting it: defined or not, as at the capture.
struct GradGuard {
  std::string where;  // "captured[2].grad"
  Tensor leaf;
  bool defined = false;
};

struct ArgGuard {
  size_t kind = 0;           // Arg's variant index
  std::vector<int> tensors;  // indices into Guards::tensors (one, or one per list element)
  Arg value;                 // numbers and flags: the value a call must pass
};

class Guards {
 public:
  std::vector<ArgGuard> args;
  std::vector<TensorGuard> tensors;  // the arguments' tensors, flattened
  std::vector<TensorGuard> captured;
  std::vector<GradGuard> grads;
  bool grad_mode = true;
  ScalarType default_dtype = kFloat32;  // factories and numbers took it at capture
  const ShapeEnv* env = nullptr;

  // Whether a call with these arguments may reuse the graph; on success `symbols` holds the
  // symbols' values, on failure `why` says which guard failed ("args[0].size(0): expected 8,
  // got 16").
  bool check(const std::vector<Arg>& args, const std::vector<Tensor>& captured,
             std::vector<int64_t>& symbols, std::string* why) const;
  std::string str() const;  // one guard per line
};

// Which sizes are symbolic: every one (dynamic = true), none (false), or (unset) the dims that
// changed between calls, as (flat tensor index, dim).
struct DynamicPolicy {
  std::optional<bool> dynamic;
  std::set<std::pair<int, int>> changed;
  // Marks the function's owner gives dims, as (flat tensor index, dim), over the tensors' own
  // (an exported program's fixed and dynamic dims).
  std::map<std::pair<int, int>, DimMark> marks;
};

// The traced arguments for one capture, and the argument guards (captured tensors are added by
// finish_guards once the trace has found them).
std::vector<Arg> make_traced_args(const std::vector<Arg>& args, const DynamicPolicy& policy,
                                  ShapeEnv& env, Tracer& tracer, Guards& guards);
void finish_guards(Guards& guards, const Graph& graph, const ShapeEnv& env);

// The tensors of the arguments, flattened in the order of Guards::tensors (undefined ones
// included: they are not graph inputs).
std::vector<Tensor> flat_tensors(const std::vector<Arg>& args);

}  // namespace kiln::compiler

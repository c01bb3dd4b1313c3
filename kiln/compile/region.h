#pragma once
// Regional compilation (PyTorch's `module.compile()` on repeated blocks): every module of one
// type compiled with the same options shares one compiled function, whose graphs read the
// calling module's own parameters and buffers. N identical transformer blocks therefore cost one
// capture and one build, and later calls of any of them are cache hits.
//
// kiln::nn::Module::compile() switches a module to this; ModuleHolder's call operator then comes
// here. kiln/compile does not depend on kiln/nn: the holder describes its module in a
// RegionModule.
#include <functional>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "kiln/compile/args.h"
#include "kiln/compile/options.h"

namespace kiln::compiler {

// Forwards whose arguments and result kiln::compile can pass (args.h).
template <class T>
concept RegionArg = std::is_same_v<std::decay_t<T>, Tensor> ||
    std::is_same_v<std::decay_t<T>, std::vector<Tensor>> || std::is_arithmetic_v<std::decay_t<T>> ||
    std::is_same_v<std::decay_t<T>, Scalar>;
template <class R>
concept RegionResult =
    std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>> || is_tuple<R>::value;

struct RegionModule {
  const void* identity = nullptr;  // the module object
  bool training = false;           // train() and eval() get separate graphs
  std::type_index type = typeid(void);
  std::string type_name;
  // Its parameters and buffers by qualified name, as they are at this call.
  std::function<std::vector<std::pair<std::string, Tensor>>()> named_tensors;
  // Its forward on flattened arguments and results.
  std::function<std::vector<Tensor>(const std::vector<Arg>&)> forward;
};

std::vector<Tensor> call_region(const RegionModule& module, const CompileOptions& options,
                                const std::vector<Arg>& args);

// Graphs captured so far by the regions of this module type (one per distinct set of options).
int region_compilations(std::type_index type);

}  // namespace kiln::compiler

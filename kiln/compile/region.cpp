#include "kiln/compile/region.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>

#include "kiln/compile/compile.h"

namespace kiln::compiler {
namespace {

// The module whose call is running on this thread (regions nest: a compiled block may call a
// compiled submodule).
thread_local const RegionModule* t_current = nullptr;

class CurrentModule {
 public:
  explicit CurrentModule(const RegionModule& m) : saved_(t_current) { t_current = &m; }
  ~CurrentModule() { t_current = saved_; }
  CurrentModule(const CurrentModule&) = delete;
  CurrentModule& operator=(const CurrentModule&) = delete;

 private:
  const RegionModule* saved_;
};

// Where a graph's captured tensors sit in the module it was traced on: a parameter or buffer's
// name, or, for a tensor the module does not own (a constant of the forward), that tensor and
// the module it belongs with.
struct Place {
  std::string name;  // empty: not a parameter or buffer
  Tensor tensor;
  const void* owner = nullptr;
};

class ModuleTensors final : public CapturedSource {
 public:
  FlatFn bind(const FlatFn&) const override { return t_current->forward; }
  std::shared_ptr<const void> locate(const std::vector<Tensor>& captured) override {
    const auto named = t_current->named_tensors();
    auto places = std::make_shared<std::vector<Place>>();
    for (const Tensor& t : captured) {
      Place p;
      for (const auto& [name, owned] : named)
        if (owned.is_same(t)) {
          p.name = name;
          break;
        }
      if (p.name.empty()) p.tensor = t, p.owner = t_current->identity;
      places->push_back(std::move(p));
    }
    return places;
  }

  bool find(const void* places, std::vector<Tensor>& out, std::string* why) override {
    const auto& wanted = *static_cast<const std::vector<Place>*>(places);
    const auto named = t_current->named_tensors();
    out.clear();
    for (size_t i = 0; i < wanted.size(); ++i) {
      const Place& p = wanted[i];
      if (p.name.empty()) {
        if (p.owner != t_current->identity) {
          *why = "captured[" + std::to_string(i) + "] is a tensor another " + t_current->type_name +
                 " read that is not one of its parameters or buffers, so this module needs its "
                 "own graph";
          return false;
        }
        out.push_back(p.tensor);
        continue;
      }
      const auto it = std::find_if(named.begin(), named.end(),
                                   [&](const auto& n) { return n.first == p.name; });
      if (it == named.end()) {
        *why = "this " + t_current->type_name + " has no parameter or buffer \"" + p.name + "\"";
        return false;
      }
      out.push_back(it->second);
    }
    return true;
  }
};

std::string options_key(const CompileOptions& o) {
  std::ostringstream key;
  key << o.backend() << '|' << o.mode() << '|' << (o.dynamic() ? (*o.dynamic() ? 1 : 0) : -1) << '|'
      << o.fullgraph() << '|' << o.recompile_limit() << '|' << o.name();
  return key.str();
}

std::mutex g_mu;
// Never destroyed: its graphs hold tensors, which must not be freed after the allocator at exit.
auto& g_regions = *new std::map<std::tuple<std::type_index, bool, std::string>,
                                std::shared_ptr<CompiledFunction>>;

std::shared_ptr<CompiledFunction> region_of(const RegionModule& m, const CompileOptions& options) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = g_regions[{m.type, m.training, options_key(options)}];
  if (!f) {
    CompileOptions named = options;
    if (named.name().empty())
      named.name(m.type_name +
                 (m.training ? " (regional compile, training)" : " (regional compile)"));
    f = make_compiled_function(
        [](const std::vector<Arg>& args) { return t_current->forward(args); }, named);
    f->set_captured_source(std::make_shared<ModuleTensors>());
  }
  return f;
}

}  // namespace

std::vector<Tensor> call_region(const RegionModule& module, const CompileOptions& options,
                                const std::vector<Arg>& args) {
  const std::shared_ptr<CompiledFunction> f = region_of(module, options);
  CurrentModule current(module);
  return f->call(args);
}

int region_compilations(std::type_index type) {
  std::lock_guard<std::mutex> lock(g_mu);
  int n = 0;
  for (const auto& [key, f] : g_regions)
    if (std::get<0>(key) == type) n += f->compilations();
  return n;
}

}  // namespace kiln::compiler

#include "kiln/compile/compile.h"

#include <mutex>
#include <vector>

namespace kiln::compiler {
namespace {

std::mutex g_mu;
std::vector<std::weak_ptr<CompiledFunction>> g_functions;

}  // namespace

std::shared_ptr<CompiledFunction> make_compiled_function(FlatFn fn, CompileOptions options) {
  auto f = std::make_shared<CompiledFunction>(std::move(fn), std::move(options));
  std::lock_guard<std::mutex> lock(g_mu);
  std::erase_if(g_functions, [](const auto& w) { return w.expired(); });
  g_functions.push_back(f);
  return f;
}

void reset() {
  std::vector<std::shared_ptr<CompiledFunction>> live;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const auto& w : g_functions)
      if (auto f = w.lock()) live.push_back(std::move(f));
  }
  for (const auto& f : live) f->reset();
}

}  // namespace kiln::compiler

namespace kiln {

void check_backend_and_mode(const CompileOptions& options, const std::string& where) {
  KILN_CHECK(options.backend() == "codegen" || options.backend() == "eager", where,
             ": unknown backend \"", options.backend(), "\"; expected \"codegen\" or \"eager\"");
  KILN_CHECK(options.mode() == "default" || options.mode() == "max-autotune", where,
             ": unknown mode \"", options.mode(), "\"; expected \"default\" or \"max-autotune\"");
}

}  // namespace kiln

#include "kiln/compile/codegen/prebuilt_kernels.h"

#include <algorithm>

#include "kiln/compile/codegen/kernel_cache.h"
#include "kiln/compile/codegen/text_hash.h"

namespace kiln::compiler {
namespace {

thread_local const PrebuiltKernels* active = nullptr;

}  // namespace

std::string PrebuiltKernels::key(const std::string& source) {
  // Two hashes seeded apart, and the length: 136 bits against an accidental match.
  return hex(fnv1a(source)) + hex(fnv1a(source, 0x9e3779b97f4a7c15ull)) + "-" +
         std::to_string(source.size());
}

void PrebuiltKernels::add(std::string key, std::vector<KilnKernelFn> kernels) {
  units_[std::move(key)] = std::move(kernels);
}

std::shared_ptr<SharedObject> PrebuiltKernels::load(const std::string& source) const {
  const auto it = units_.find(key(source));
  if (it == units_.end()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::find(missing_.begin(), missing_.end(), source) == missing_.end())
      missing_.push_back(source);
    throw KernelsUnavailable("compile: the prebuilt kernels lack this graph's unit (" +
                             key(source) + "); it runs on the eager kernels");
  }
  std::unordered_map<std::string, void*> symbols;
  for (size_t i = 0; i < it->second.size(); ++i)
    symbols["kiln_kernel_" + std::to_string(i)] = reinterpret_cast<void*>(it->second[i]);
  return std::make_shared<SharedObject>(std::move(symbols), "prebuilt unit " + it->first);
}

std::vector<std::string> PrebuiltKernels::missing() const {
  std::lock_guard<std::mutex> lock(mu_);
  return missing_;
}

PrebuiltKernelsScope::PrebuiltKernelsScope(const PrebuiltKernels& kernels) : previous_(active) {
  active = &kernels;
}

PrebuiltKernelsScope::~PrebuiltKernelsScope() { active = previous_; }

const PrebuiltKernels* active_prebuilt_kernels() { return active; }

cpu::CpuCapability codegen_level() { return active ? active->level() : cpu::cpu_capability(); }

}  // namespace kiln::compiler

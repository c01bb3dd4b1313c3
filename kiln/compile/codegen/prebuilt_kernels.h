#pragma once
// Kernels built ahead of time (kiln aot, docs/export.md): the generated units of a program,
// compiled into its library and handed to Kiln as tables of functions, so that a compiled program
// runs without a C++ compiler. While a PrebuiltKernelsScope is active on a thread, load_kernels
// (kernel_cache.h) takes units from its table only: a unit is found by its source, which the code
// generator writes the same way each time for the same graph.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/compile/codegen/runtime.h"
#include "kiln/core/error.h"

namespace kiln::compiler {

class SharedObject;

// A unit the active table lacks: the graph that needed it runs on the eager kernels instead.
class KernelsUnavailable : public Error {
 public:
  using Error::Error;
};

class PrebuiltKernels {
 public:
  // level: the vector instructions the units were generated for; code generated while the table
  // is active is generated for it, whatever this process's cpu_capability() (a unit's source
  // depends on its level).
  explicit PrebuiltKernels(cpu::CpuCapability level) : level_(level) {}

  // The key a unit's source is found by.
  static std::string key(const std::string& source);
  // kernels: the unit's functions, kernel i (cpp_codegen's kiln_kernel_<i>) at index i.
  void add(std::string key, std::vector<KilnKernelFn> kernels);
  // The unit of `source`; a KernelsUnavailable error (and the source kept in missing()) if the
  // table lacks it.
  std::shared_ptr<SharedObject> load(const std::string& source) const;

  cpu::CpuCapability level() const { return level_; }
  // The sources looked up and not found, in order, each once (kiln aot records a program's units
  // with an empty table).
  std::vector<std::string> missing() const;

 private:
  cpu::CpuCapability level_;
  std::unordered_map<std::string, std::vector<KilnKernelFn>> units_;
  mutable std::mutex mu_;
  mutable std::vector<std::string> missing_;
};

// Makes `kernels` the source of generated kernels on this thread until destroyed.
class PrebuiltKernelsScope {
 public:
  explicit PrebuiltKernelsScope(const PrebuiltKernels& kernels);
  PrebuiltKernelsScope(const PrebuiltKernelsScope&) = delete;
  PrebuiltKernelsScope& operator=(const PrebuiltKernelsScope&) = delete;
  ~PrebuiltKernelsScope();

 private:
  const PrebuiltKernels* previous_;
};

// The table active on this thread, or null.
const PrebuiltKernels* active_prebuilt_kernels();
// The level code is generated at: the active table's, else cpu_capability().
cpu::CpuCapability codegen_level();

}  // namespace kiln::compiler

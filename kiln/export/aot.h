#pragma once
// Ahead-of-time compilation of an exported program (docs/export.md, "AOT shared libraries"):
// the program's fused kernels, generated and compiled now, and the program file itself, built
// into one shared library with the C interface of kiln_model.h. The library runs the program
// with libkiln's runtime and these kernels; it never runs a compiler.
#include <optional>
#include <string>

#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/export/exported_program.h"

namespace kiln {

struct AotOptions {
  // The vector instructions the kernels use (default: this machine's level); the library then
  // loads on CPUs that have them.
  std::optional<cpu::CpuCapability> isa;
  // Keep the generated sources and objects in this directory (default: a temporary one,
  // removed afterwards).
  std::string work_dir;
};

// Builds `program` into the shared library `output` (written atomically) and returns the number
// of generated units in it. The units are those its compiled form runs at the example sizes; a
// size the library has no kernels for (one that recompiles: a 0 or a 1 in a dynamic dim) runs on
// the eager kernels.
int aot_compile(const ExportedProgram& program, const std::string& output,
                const AotOptions& options = {});

}  // namespace kiln

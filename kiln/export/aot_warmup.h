#pragma once
// The call that makes an AOT-compiled program capture its graph: the same when kiln aot records
// the program's units and when its library is loaded, so the load asks for exactly the units the
// library holds (aot.h).
#include <vector>

#include "kiln/export/exported_program.h"

namespace kiln::aot_detail {

// Zeros of each input's dtype, at the sizes the program was exported with.
std::vector<Tensor> warmup_inputs(const ExportedProgram& program);

// The compiled program, its graph captured.
ExportedProgram compile_and_warm_up(ExportedProgram program);

}  // namespace kiln::aot_detail

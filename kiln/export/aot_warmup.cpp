#include "kiln/export/aot_warmup.h"

#include "kiln/core/grad_mode.h"
#include "kiln/ops/creation.h"

namespace kiln::aot_detail {

std::vector<Tensor> warmup_inputs(const ExportedProgram& program) {
  const compiler::Graph& g = program.graph();
  std::vector<Tensor> inputs;
  for (int id : g.inputs) {
    const compiler::Value& v = g.values[id];
    std::vector<int64_t> sizes;
    for (const SymInt& s : v.sizes) sizes.push_back(s.hint());  // a symbol's example value
    inputs.push_back(zeros(sizes, TensorOptions(v.dtype).device(v.device)));
  }
  return inputs;
}

ExportedProgram compile_and_warm_up(ExportedProgram program) {
  program.compile();
  const NoGradGuard no_grad;
  program.run(warmup_inputs(program));
  return program;
}

}  // namespace kiln::aot_detail

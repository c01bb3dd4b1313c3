#include "kiln/export/aot_warmup.h"

#include "kiln/core/grad_mode.h"
#include "kiln/ops/creation.h"

namespace kiln::aot_detail {

int symbol_of(const ExportedProgram& program, const SymInt& size) {
  if (!size.is_symbolic()) return -1;
  const std::vector<SymInt>& symbols = program.symbols();
  for (size_t k = 0; k < symbols.size(); ++k)
    if (symbols[k].same_as(size)) return static_cast<int>(k);
  return -1;
}

std::vector<Tensor> warmup_inputs(const ExportedProgram& program) {
  const compiler::Graph& g = program.graph();
  std::vector<Tensor> inputs;
  for (int id : g.inputs) {
    const compiler::Value& v = g.values[id];
    std::vector<int64_t> sizes;
    for (const SymInt& s : v.sizes) {
      const int k = symbol_of(program, s);
      sizes.push_back(k < 0 ? s.hint() : program.shape_env().hint(k));
    }
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

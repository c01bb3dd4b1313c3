#pragma once
// ExportedProgram: a function or module captured whole by export_program (export.h), as a graph
// of registry ops with symbolic sizes, the ranges of its symbols and its signature. It runs on
// the eager kernels, saves to one file and loads back with load_program, without the code that
// made it (docs/export.md, ARCHITECTURE.md §10).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compile/graph.h"
#include "kiln/compile/options.h"
#include "kiln/nn/ordered_dict.h"

namespace kiln {

namespace compiler {
class CompiledFunction;
}

class ExportedProgram {
 public:
  // What each tensor the graph captured is (torch.export's InputKind): a parameter (trained), a
  // buffer (state such as running statistics) or a constant (a tensor the code closed over).
  struct CapturedSpec {
    enum class Kind { Parameter, Buffer, Constant };
    Kind kind = Kind::Constant;
    std::string name;  // "fc.weight", "_tensor_constant0"
  };
  struct RangeConstraint {
    std::string symbol;
    int64_t min = 0, max = 0;
  };

  // `symbols`: the environment's symbols by id, each a dim of some graph input. `graph.captured_
  // tensors` hold the parameters, buffers and constants, as `captured` names them.
  ExportedProgram(std::shared_ptr<ShapeEnv> env, std::vector<SymInt> symbols, compiler::Graph graph,
                  std::vector<CapturedSpec> captured);

  // Runs the graph on the eager kernels, after checking the inputs against the signature and the
  // range constraints ("Expected input at inputs[0].shape[0] to be >= 2, but got 1"). Autograd
  // records it as it would the original code, so parameters can be trained. Safe to call from
  // many threads at once.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const { return run(inputs); }
  // From now on, run() goes through kiln::compile: the graph is captured again with its sizes
  // symbolic (so the program's dynamic dims need no recompile) and its ops fused into generated
  // kernels. The checks on the inputs stay. Copies made after this call share the compiled code.
  ExportedProgram& compile(CompileOptions options = CompileOptions().dynamic(true));

  // As a module's: the tensors themselves, so an optimizer over parameters() trains the program.
  std::vector<Tensor> parameters() const;
  OrderedDict<std::string, Tensor> named_parameters() const;
  OrderedDict<std::string, Tensor> named_buffers() const;
  OrderedDict<std::string, Tensor> constants() const;
  // Parameters and buffers.
  OrderedDict<std::string, Tensor> state_dict() const;

  // One file: a safetensors file whose tensors are the captured ones and whose metadata holds
  // the graph as versioned JSON (docs/export.md). Written atomically.
  void save(const std::string& path) const;
  std::vector<uint8_t> to_bytes() const;

  size_t num_inputs() const { return graph_.inputs.size(); }
  size_t num_outputs() const { return graph_.outputs.size(); }
  std::vector<RangeConstraint> range_constraints() const;
  // The relations among sizes the graph relies on beyond the ranges ("seq % 2 == 0").
  std::vector<std::string> shape_guards() const;
  // Calls per op name.
  std::map<std::string, int> op_counts() const;
  // The signature, the constraints and the graph, one line each.
  std::string str() const;

  const compiler::Graph& graph() const { return graph_; }
  const std::vector<CapturedSpec>& captured_specs() const { return captured_; }
  const ShapeEnv& shape_env() const { return *env_; }
  const std::vector<SymInt>& symbols() const { return symbols_; }
  // What compile() made (null before).
  const std::shared_ptr<compiler::CompiledFunction>& compiled() const { return compiled_; }

 private:
  // The symbols' values for these inputs, checked.
  std::vector<int64_t> check_inputs(const std::vector<Tensor>& inputs) const;
  OrderedDict<std::string, Tensor> named(CapturedSpec::Kind kind) const;

  std::shared_ptr<ShapeEnv> env_;
  std::vector<SymInt> symbols_;
  compiler::Graph graph_;
  std::vector<CapturedSpec> captured_;
  std::shared_ptr<compiler::CompiledFunction> compiled_;
};

// Loads a file that ExportedProgram::save wrote. Everything is validated before it is used: a
// damaged or hostile file, or one from a newer Kiln, gives a kiln::Error naming the file and the
// problem, and loading never allocates much more than the file's size.
ExportedProgram load_program(const std::string& path);
ExportedProgram load_program_from_bytes(const uint8_t* data, size_t size,
                                        const std::string& source = "<memory>");

}  // namespace kiln

#pragma once
// The state behind one kiln::compile'd function, written once for every signature: its cache
// of captured graphs with their guards, recompiles, and the eager fallback (docs/compile.md).
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compile/args.h"
#include "kiln/compile/graph.h"
#include "kiln/compile/guards.h"
#include "kiln/compile/options.h"

namespace kiln::compiler {

class Tracer;
class CodegenProgram;   // codegen/program.h, kept out of the public headers
struct TrainingGraphs;  // joint.h
struct StateEffects;    // captured_state.h

// The user's function on flattened arguments and results.
using FlatFn = std::function<std::vector<Tensor>(const std::vector<Arg>&)>;

// What explain() reports: the graph (if the function captures), its guards, or why it runs
// eagerly.
struct Explanation {
  std::string function;
  int graph_count = 0;
  int op_count = 0;
  int kernel_count = 0;  // fused kernels the codegen backend generated
  std::string schedule;  // kernels and extern calls, in order
  std::string graph;
  std::string guards;
  std::vector<std::string> fallback_reasons;
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Explanation& e);

// Where a compiled function finds, on each call, the tensors its graphs captured. Without one,
// they are the very tensors the capture saw; a regional compile (region.h) finds the calling
// module's own parameters and buffers in their places.
class CapturedSource {
 public:
  virtual ~CapturedSource() = default;
  // Remembers, for a graph just captured, where each of its captured tensors came from.
  virtual std::shared_ptr<const void> locate(const std::vector<Tensor>& captured) = 0;
  // This call's tensors in those places; false, with the reason in *why, where it has none.
  virtual bool find(const void* places, std::vector<Tensor>& out, std::string* why) = 0;
  // The function as this call runs it eagerly, callable after the call returns (a backward with
  // create_graph=true runs the call again).
  virtual FlatFn bind(const FlatFn& fn) const { return fn; }
};

class CompiledFunction {
 public:
  CompiledFunction(FlatFn fn, CompileOptions options);
  std::vector<Tensor> call(const std::vector<Arg>& args);
  Explanation explain(const std::vector<Arg>& args);
  // Graphs captured so far (a recompile adds one).
  int compilations() const;
  const std::string& name() const { return name_; }
  void reset();
  void set_captured_source(std::shared_ptr<CapturedSource> source);
  // Marks for the arguments' dims, by (flat tensor index, dim), over the tensors' own marks
  // (dynamic.h), kept across reset().
  void set_dim_marks(std::map<std::pair<int, int>, DimMark> marks);

 private:
  struct Entry {
    std::unique_ptr<ShapeEnv> env;
    Graph graph;
    Guards guards;
    std::unique_ptr<CodegenProgram> program;  // null: replayed on the eager kernels
    // When a result needs a gradient (codegen backend): graph is the training forward, whose
    // outputs end with the values the compiled backward reads.
    std::unique_ptr<TrainingGraphs> training;
    std::unique_ptr<CodegenProgram> backward_program;
    std::shared_ptr<const void> captured_places;  // from captured_source_, when there is one
    // The graph changes an argument or a captured tensor in place (then it must not run on
    // arguments that share memory: see call()).
    bool changes_inputs = false;
    // When it does: how the captured tensors shared memory at the capture, which later calls
    // must repeat (a captured tensor in another's memory is read as a view of it).
    std::vector<std::pair<int, int64_t>> captured_aliasing;
    // What the graph does with .grad (captured_state.h): captured tensors that are a tensor's
    // .grad, read from it at each call; and each .grad it sets after a call, to the graph output
    // at that index (-1: None). The function's results are the first `results` outputs.
    std::vector<std::pair<int, Tensor>> grad_inputs;
    std::vector<std::pair<Tensor, int>> grad_outputs;
    size_t results = 0;
    bool runs_backward = false;  // backward() is in the graph: it runs without autograd
    std::vector<std::function<void()>> after_call;  // optimizer steps, after the .grad are set
    uint64_t id;  // unique in the process: compiled autograd's cache keys name graphs by it
    Entry();
    ~Entry();
  };
  struct Capture {
    std::shared_ptr<Entry> entry;
    std::string fallback;  // why the function cannot be captured, when it cannot
    std::string error;     // what the function raised on the traced arguments (a shape error)
  };
  // Captures a graph, then checks that the function kept no traced tensor (an error if it did).
  Capture capture(const std::vector<Arg>& args, bool training = true);
  // The capture itself; traced_tensors receives weak references to every tensor it traced.
  Capture capture_graph(const std::vector<Arg>& args, bool training,
                        std::vector<std::weak_ptr<TensorImpl>>& traced_tensors);
  // The forward and backward of a training graph (joint.h), compiled.
  void compile_training(Entry& entry, Tracer& tracer, const std::vector<Tensor>& results);
  // This call's tensors in the places of e's captured tensors (false: it has none there).
  bool captured_for(const Entry& e, std::vector<Tensor>& captured, std::string* why) const;
  std::vector<Tensor> run(const std::shared_ptr<const Entry>& e, const std::vector<Arg>& args,
                          const std::vector<Tensor>& captured,
                          const std::vector<int64_t>& symbols) const;
  std::vector<Tensor> run_training(const std::shared_ptr<const Entry>& e,
                                   const std::vector<Arg>& args, std::vector<Tensor> inputs,
                                   const std::vector<Tensor>& captured,
                                   const std::vector<int64_t>& symbols) const;
  std::vector<Tensor> fall_back(const std::string& reason, const std::vector<Arg>& args);
  // Runs the graph, or the function eagerly when the graph changes its inputs in place and this
  // call's arguments share memory.
  std::vector<Tensor> run_or_fall_back(const std::shared_ptr<const Entry>& e,
                                       const std::vector<Arg>& args,
                                       const std::vector<Tensor>& captured,
                                       const std::vector<int64_t>& symbols) const;
  // The function's results, after setting each .grad the graph sets from the outputs after them
  // and running what the function deferred.
  static std::vector<Tensor> finish_call(const Entry& e, std::vector<Tensor> outs);
  // The entry's .grad inputs and guards: each .grad the function read before setting it.
  static void follow_grads(Entry& e, const StateEffects& fx);
  bool autotune() const { return options_.mode() == "max-autotune"; }

  FlatFn fn_;
  CompileOptions options_;
  std::string name_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Entry>> entries_;
  std::optional<std::string> eager_reason_;  // set once the function runs eagerly for good
  DynamicPolicy policy_;
  std::vector<std::vector<int64_t>> first_sizes_;  // per flat tensor, at the first capture
  int compilations_ = 0;
  std::shared_ptr<CapturedSource> captured_source_;
};

}  // namespace kiln::compiler

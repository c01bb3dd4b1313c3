#pragma once
// Emitter: what the per-op translations (onnx_ops*.cpp) build one ONNX graph with: the ONNX
// names of Kiln values, nodes, initializers, casts, and int64 tensors that compute symbolic
// sizes from the inputs' shapes at run time. Internal to kiln/export (onnx.h is the API).
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/export/exported_program.h"

namespace kiln::onnx_detail {

// A node attribute: ints, floats (written as ONNX's float32), strings and their lists.
struct NodeAttr {
  std::string name;
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<std::string>>
      value;
};

// ONNX's TensorProto::DataType for a Kiln dtype.
int32_t onnx_dtype(ScalarType t);

class Emitter {
 public:
  Emitter(const ExportedProgram& program, ::onnx::GraphProto& graph);

  // The ONNX name of Kiln value `id`: an input, an initializer (added on first use) or an output
  // an earlier node wrote. A node output that no translation wrote is an error.
  std::string value(int id);
  const compiler::Value& info(int id) const { return program_.graph().values.at(id); }
  // The tensor of a captured value (a parameter, buffer or constant) and its name; null for
  // other values.
  const Tensor* captured_tensor(int id) const;
  std::string captured_name(int id) const;
  // Names node outputs get.
  static std::string output_name(int id) { return numbered("v", id); }
  static std::string input_name(size_t i) { return numbered("input_", i); }
  static std::string graph_output_name(size_t i) { return numbered("output_", i); }
  // Whether the program's outputs depend on value `id` (set by the writer).
  bool live(int id) const { return live_.at(id); }
  void set_live(std::vector<bool> live) { live_ = std::move(live); }

  // Adds a node with fresh output names; returns the first.
  std::string op(std::string_view type, std::vector<std::string> inputs,
                 std::vector<NodeAttr> attrs = {}, int num_outputs = 1);
  // Adds a node writing `outputs` ("" for an output not wanted).
  void op_into(std::vector<std::string> outputs, std::string_view type,
               std::vector<std::string> inputs, std::vector<NodeAttr> attrs = {});
  // A name no other value has.
  std::string fresh(std::string_view hint);

  // Initializers. `hint` names it (made unique).
  std::string initializer(const Tensor& t, std::string_view hint);
  // int64 [n], shared by every use of the same values.
  std::string ints(const std::vector<int64_t>& v);
  // A 0-dim tensor of `dtype`, shared like ints().
  std::string scalar(double v, ScalarType dtype);

  // Sizes as int64 tensors: [1] for one, [rank] for a shape. Symbolic sizes ("2*batch",
  // "(seq//2)") are computed from the graph inputs' shapes; constant parts are initializers.
  std::string size(const SymInt& s);
  std::string shape(const SymShape& s);

  // `name`, of dtype `from`, as `to` (itself when they agree).
  std::string cast(const std::string& name, ScalarType from, ScalarType to);
  // Writes `name` as `to` into `out` (a Cast, or an Identity when the dtypes agree).
  void cast_into(const std::string& out, const std::string& name, ScalarType from, ScalarType to);

 private:
  // Adds t, as its row-major bytes, to the model as the initializer `name`.
  void write_initializer(const Tensor& t, const std::string& name);
  // prefix + n, appended (GCC 12 warns falsely about "literal" + std::string at -O3).
  static std::string numbered(std::string prefix, int64_t n) {
    prefix += std::to_string(n);
    return prefix;
  }
  // The inputs' dims that give each symbol its value: name -> (input index, dim).
  void find_symbol_sources();
  std::string symbol(const std::string& name);
  std::string captured(const compiler::Value& v);

  const ExportedProgram& program_;
  ::onnx::GraphProto& graph_;
  std::vector<bool> live_;
  std::set<std::string> names_;    // every value name in use
  std::set<std::string> written_;  // node outputs and initializers
  std::map<int, std::string> captured_names_;
  std::map<std::vector<int64_t>, std::string> ints_;
  std::map<std::pair<ScalarType, std::string>, std::string> scalars_;  // keyed by "%a" text
  std::map<std::string, std::string> sizes_;  // expression text -> int64 [1]
  std::map<std::string, std::pair<size_t, int64_t>> symbol_sources_;
  int next_ = 0;
};

}  // namespace kiln::onnx_detail

#pragma once
// The per-op translation table of the ONNX writer: registry op name -> a function that writes
// the ONNX nodes computing that op's outputs. Internal to kiln/export.
#include <functional>
#include <map>
#include <string>

#include "kiln/export/onnx_emitter.h"
#include "kiln/ops/registry.h"

namespace kiln::onnx_detail {

// One node of the Kiln graph, as its translation sees it.
struct OpCall {
  Emitter& e;
  const compiler::Node& node;

  const std::string& name() const { return node.op->name; }
  const Attrs& attrs() const { return node.attrs; }
  size_t num_inputs() const { return node.inputs.size(); }
  // Whether tensor input i is given (optional ones may be None).
  bool has(size_t i) const { return i < node.inputs.size() && node.inputs[i] >= 0; }
  const compiler::Value& input(size_t i) const { return e.info(node.inputs.at(i)); }
  const compiler::Value& output(size_t i = 0) const { return e.info(node.outputs.at(i)); }
  // The ONNX name of input i; with a dtype, cast to it.
  std::string in(size_t i) const { return has(i) ? e.value(node.inputs[i]) : std::string(); }
  std::string in(size_t i, ScalarType dtype) const { return e.cast(in(i), input(i).dtype, dtype); }
  // The name output i must be written to, and whether anything reads it.
  std::string out(size_t i = 0) const { return Emitter::output_name(node.outputs.at(i)); }
  bool used(size_t i) const { return i < node.outputs.size() && e.live(node.outputs[i]); }
  // `dim` of input i, made non-negative.
  int64_t dim(int64_t d, size_t i = 0) const;
  // A kiln::Error "onnx::save: <op>: <what>".
  template <class... Args>
  [[noreturn]] void fail(const Args&... what) const {
    KILN_FAIL("onnx::save: ", name(), ": ", what...);
  }
};

using Translation = std::function<void(const OpCall&)>;
using OpTable = std::map<std::string, Translation, std::less<>>;

// Every translation (onnx_ops.cpp assembles it from the groups below).
const OpTable& op_table();
void add_pointwise_ops(OpTable& table);  // onnx_ops_pointwise.cpp
void add_tensor_ops(OpTable& table);     // onnx_ops_tensor.cpp: shapes, creation, indexing
void add_reduce_ops(OpTable& table);     // onnx_ops_reduce.cpp
void add_nn_ops(OpTable& table);         // onnx_ops_nn.cpp: matmul, conv, norms, pools, attention
void add_rnn_ops(OpTable& table);        // onnx_ops_rnn.cpp: lstm, gru, rnn_tanh, rnn_relu

}  // namespace kiln::onnx_detail

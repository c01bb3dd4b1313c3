#pragma once
// ONNX export of an ExportedProgram (torch.onnx.export's dynamo path): the program's graph
// translated op by op into an ONNX model (opset 17) through the ONNX project's own protobuf
// classes, checked with ONNX's checker before it is written.
//
//   kiln::Dim batch("batch", 1, 64);
//   auto program = kiln::export_program(model, {x}, {{{0, batch}}});
//   kiln::onnx::save(program, "model.onnx");  // input_0: float32[batch, 4]
//
// Inputs are named input_0, input_1, ..., outputs output_0, ...; a dynamic dim is a dim_param
// named by its Dim ("batch"), or by its expression for a derived size ("2*batch"), a static one
// a dim_value. Parameters, buffers and constants become initializers under their names
// ("fc.weight"). Attention is written as its decomposition (MatMul, Softmax), recurrent layers
// as ONNX LSTM / GRU / RNN nodes, one per layer and direction. An op without a translation is a
// kiln::Error naming it and the ops that have one (supported_ops()).
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/export/exported_program.h"

namespace kiln::onnx {

// The opset the models import (the default domain).
constexpr int64_t kOpsetVersion = 17;

// Writes the model to `path` atomically.
void save(const ExportedProgram& program, const std::string& path);
// The serialized ModelProto.
std::vector<uint8_t> to_bytes(const ExportedProgram& program);
// The registry ops that have a translation, sorted.
std::vector<std::string> supported_ops();

}  // namespace kiln::onnx

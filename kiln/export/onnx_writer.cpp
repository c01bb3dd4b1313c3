// kiln::onnx::save (onnx.h): the model, its typed inputs and outputs with named dynamic dims,
// and the program's nodes through the translation table (onnx_ops.h), checked by ONNX's checker.
#include <onnx/checker.h>

#include <climits>
#include <sstream>

#include "kiln/export/onnx.h"
#include "kiln/export/onnx_ops.h"
#include "kiln/io/atomic_file.h"

namespace kiln::onnx {

namespace {

using onnx_detail::Emitter;

// ONNX 1.12's IR version, which opset 17 belongs to.
constexpr int64_t kIrVersion = 8;

void set_value_info(::onnx::ValueInfoProto& info, const std::string& name,
                    const compiler::Value& v) {
  info.set_name(name);
  ::onnx::TypeProto_Tensor* type = info.mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx_detail::onnx_dtype(v.dtype));
  ::onnx::TensorShapeProto* shape = type->mutable_shape();
  for (const SymInt& d : v.sizes) {
    ::onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    if (d.is_symbolic()) {
      dim->set_dim_param(d.str());
    } else {
      dim->set_dim_value(d.maybe_int().value());
    }
  }
}

// The values the outputs depend on; nodes with no live output are left out of the model (the
// indices of a max pool, the statistics of a norm).
std::vector<bool> live_values(const compiler::Graph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (int id : g.outputs)
    if (id >= 0) live[id] = true;
  for (auto n = g.nodes.rbegin(); n != g.nodes.rend(); ++n) {
    bool any = false;
    for (int o : n->outputs) any |= live[o];
    if (!any) continue;
    for (int i : n->inputs)
      if (i >= 0) live[i] = true;
  }
  return live;
}

std::string supported_list() {
  std::string s;
  for (const std::string& name : supported_ops()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

void translate(Emitter& e, const compiler::Node& node) {
  const std::string& name = node.op->name;
  const auto& table = onnx_detail::op_table();
  auto it = table.find(name);
  if (it == table.end()) {
    KILN_FAIL("onnx::save: the op \"", name, "\" (%", node.outputs.at(0), " = ", name,
              "(...) : ", compiler::describe_value(e.info(node.outputs.at(0))),
              ") has no ONNX translation. The ops that have one: ", supported_list());
  }
  try {
    it->second(onnx_detail::OpCall{e, node});
  } catch (const Error& err) {
    const std::string what = err.what();
    if (what.rfind("onnx::save:", 0) == 0) throw;
    KILN_FAIL("onnx::save: ", name, " (%", node.outputs.at(0), "): ", what);
  }
}

::onnx::ModelProto build(const ExportedProgram& program) {
  const compiler::Graph& g = program.graph();
  KILN_CHECK(g.written_in_place.empty(),
             "onnx::save: the program writes into its inputs or captured tensors in place, which "
             "an ONNX model cannot do");
  ::onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("kiln");
  ::onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpsetVersion);
  ::onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("kiln_program");

  Emitter e(program, *graph);
  e.set_live(live_values(g));
  for (size_t i = 0; i < g.inputs.size(); ++i)
    set_value_info(*graph->add_input(), Emitter::input_name(i), e.info(g.inputs[i]));
  for (const compiler::Node& node : g.nodes) {
    bool live = false;
    for (int o : node.outputs) live |= e.live(o);
    if (live) translate(e, node);
  }
  // Outputs get names of their own, also when one is an input or appears twice.
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::string name = Emitter::graph_output_name(i);
    e.op_into({name}, "Identity", {e.value(g.outputs[i])});
    set_value_info(*graph->add_output(), name, e.info(g.outputs[i]));
  }

  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& err) {
    KILN_FAIL(
        "onnx::save: ONNX's checker rejected the translated model (a bug in the ONNX "
        "writer): ",
        err.what());
  }
  return model;
}

}  // namespace

std::vector<uint8_t> to_bytes(const ExportedProgram& program) {
  const ::onnx::ModelProto model = build(program);
  const size_t size = model.ByteSizeLong();
  KILN_CHECK(size <= static_cast<size_t>(INT_MAX), "onnx::save: the model is ", size,
             " bytes; protobuf messages are limited to 2 GiB, and this writer does not write "
             "ONNX's external data");
  std::vector<uint8_t> bytes(size);
  KILN_CHECK(model.SerializeToArray(bytes.data(), static_cast<int>(size)),
             "onnx::save: protobuf could not serialize the model");
  return bytes;
}

void save(const ExportedProgram& program, const std::string& path) {
  const std::vector<uint8_t> bytes = to_bytes(program);
  io::AtomicFileWriter file(path);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, translation] : onnx_detail::op_table()) names.push_back(name);
  return names;
}

}  // namespace kiln::onnx

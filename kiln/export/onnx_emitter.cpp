// Emitter's names, nodes, initializers and casts (onnx_emitter.h); sizes are onnx_sizes.cpp's.
#include "kiln/export/onnx_emitter.h"

#include <cstdio>

#include "kiln/core/grad_mode.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::onnx_detail {

int32_t onnx_dtype(ScalarType t) {
  using P = ::onnx::TensorProto;
  switch (t) {
    case kBool:
      return P::BOOL;
    case kUInt8:
      return P::UINT8;
    case kInt8:
      return P::INT8;
    case kInt16:
      return P::INT16;
    case kInt32:
      return P::INT32;
    case kInt64:
      return P::INT64;
    case kFloat16:
      return P::FLOAT16;
    case kBFloat16:
      return P::BFLOAT16;
    case kFloat32:
      return P::FLOAT;
    case kFloat64:
      return P::DOUBLE;
    default:
      KILN_FAIL("onnx::save: no ONNX type for dtype ", t);
  }
}

namespace {

void set_attr(::onnx::NodeProto& node, const NodeAttr& a) {
  using A = ::onnx::AttributeProto;
  A* p = node.add_attribute();
  p->set_name(a.name);
  std::visit(
      [p](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          p->set_type(A::INT);
          p->set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          p->set_type(A::FLOAT);
          p->set_f(static_cast<float>(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          p->set_type(A::STRING);
          p->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          p->set_type(A::INTS);
          for (int64_t x : v) p->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          p->set_type(A::FLOATS);
          for (double x : v) p->add_floats(static_cast<float>(x));
        } else {
          p->set_type(A::STRINGS);
          for (const std::string& x : v) p->add_strings(x);
        }
      },
      a.value);
}

}  // namespace

Emitter::Emitter(const ExportedProgram& program, ::onnx::GraphProto& graph)
    : program_(program), graph_(graph), live_(program.graph().values.size(), true) {
  const compiler::Graph& g = program.graph();
  for (size_t i = 0; i < g.inputs.size(); ++i) names_.insert(input_name(i));
  for (size_t i = 0; i < g.outputs.size(); ++i) names_.insert(graph_output_name(i));
  for (size_t id = 0; id < g.values.size(); ++id) names_.insert(output_name(static_cast<int>(id)));
  // Captured tensors keep their names as initializers, so none may be one of the above.
  for (const compiler::Value& v : g.values) {
    if (v.kind != compiler::Value::Kind::Captured) continue;
    const std::string& name = program.captured_specs().at(v.producer).name;
    KILN_CHECK(names_.insert(name).second, "onnx::save: the captured tensor \"", name,
               "\" has the name of an ONNX value the writer names itself (input_N, output_N, vN)");
  }
  find_symbol_sources();
}

std::string Emitter::fresh(std::string_view hint) {
  std::string name;
  do {
    name = std::string(hint);
    name += '_';
    name += std::to_string(next_++);
  } while (names_.count(name));
  names_.insert(name);
  return name;
}

std::string Emitter::value(int id) {
  const compiler::Value& v = info(id);
  switch (v.kind) {
    case compiler::Value::Kind::Input:
      return input_name(static_cast<size_t>(v.producer));
    case compiler::Value::Kind::Captured:
      return captured(v);
    case compiler::Value::Kind::NodeOutput:
      break;
  }
  const std::string name = output_name(id);
  if (!written_.count(name)) {
    const compiler::Node& producer = program_.graph().nodes.at(v.producer);
    size_t k = 0;
    while (k < producer.outputs.size() && producer.outputs[k] != id) ++k;
    KILN_FAIL("onnx::save: output ", k, " of ", producer.op->name, " (%", id,
              ") is used, but its ONNX translation does not compute it");
  }
  return name;
}

const Tensor* Emitter::captured_tensor(int id) const {
  const compiler::Value& v = info(id);
  if (v.kind != compiler::Value::Kind::Captured) return nullptr;
  return &program_.graph().captured_tensors.at(v.producer);
}

std::string Emitter::captured_name(int id) const {
  const compiler::Value& v = info(id);
  if (v.kind != compiler::Value::Kind::Captured) return {};
  return program_.captured_specs().at(v.producer).name;
}

std::string Emitter::captured(const compiler::Value& v) {
  auto it = captured_names_.find(v.producer);
  if (it != captured_names_.end()) return it->second;
  const std::string name = program_.captured_specs().at(v.producer).name;
  write_initializer(program_.graph().captured_tensors.at(v.producer), name);
  captured_names_.emplace(v.producer, name);
  return name;
}

void Emitter::write_initializer(const Tensor& t, const std::string& name) {
  ::onnx::TensorProto* p = graph_.add_initializer();
  p->set_name(name);
  p->set_data_type(onnx_dtype(t.dtype()));
  for (int64_t d : t.sizes()) p->add_dims(d);
  NoGradGuard no_grad;
  const Tensor c = t.cpu().contiguous();
  p->set_raw_data(c.data_ptr(), c.nbytes());
  written_.insert(name);
}

std::string Emitter::initializer(const Tensor& t, std::string_view hint) {
  const std::string name = fresh(hint);
  write_initializer(t, name);
  return name;
}

std::string Emitter::ints(const std::vector<int64_t>& v) {
  auto it = ints_.find(v);
  if (it != ints_.end()) return it->second;
  const std::string name = fresh("const");
  ::onnx::TensorProto* p = graph_.add_initializer();
  p->set_name(name);
  p->set_data_type(::onnx::TensorProto::INT64);
  p->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) p->add_int64_data(x);
  written_.insert(name);
  ints_.emplace(v, name);
  return name;
}

std::string Emitter::scalar(double v, ScalarType dtype) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", v);  // exact, and NaN/inf distinct
  const auto key = std::pair{dtype, std::string(text)};
  auto it = scalars_.find(key);
  if (it != scalars_.end()) return it->second;
  const std::string name =
      initializer(kiln::full({}, Scalar(v), kiln::dtype(kFloat64)).to(dtype), "scalar");
  scalars_.emplace(key, name);
  return name;
}

std::string Emitter::op(std::string_view type, std::vector<std::string> inputs,
                        std::vector<NodeAttr> attrs, int num_outputs) {
  std::vector<std::string> outputs;
  for (int i = 0; i < num_outputs; ++i) outputs.push_back(fresh(type));
  op_into(outputs, type, std::move(inputs), std::move(attrs));
  return outputs.at(0);
}

void Emitter::op_into(std::vector<std::string> outputs, std::string_view type,
                      std::vector<std::string> inputs, std::vector<NodeAttr> attrs) {
  ::onnx::NodeProto* n = graph_.add_node();
  n->set_op_type(std::string(type));
  n->set_name(fresh(std::string("node_").append(type)));
  // ONNX leaves trailing optional inputs and outputs off rather than naming them "".
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  while (!outputs.empty() && outputs.back().empty()) outputs.pop_back();
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) {
    n->add_output(o);
    if (!o.empty()) written_.insert(o);
  }
  for (const NodeAttr& a : attrs) set_attr(*n, a);
}

std::string Emitter::cast(const std::string& name, ScalarType from, ScalarType to) {
  if (from == to) return name;
  return op("Cast", {name}, {{"to", int64_t{onnx_dtype(to)}}});
}

void Emitter::cast_into(const std::string& out, const std::string& name, ScalarType from,
                        ScalarType to) {
  if (from == to) {
    op_into({out}, "Identity", {name});
  } else {
    op_into({out}, "Cast", {name}, {{"to", int64_t{onnx_dtype(to)}}});
  }
}

}  // namespace kiln::onnx_detail

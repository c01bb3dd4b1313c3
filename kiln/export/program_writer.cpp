// Writes an exported program's graph as JSON (program_format.h).
#include <cstdio>
#include <variant>

#include "kiln/export/program_format.h"
#include "kiln/io/json_string.h"
#include "kiln/ops/registry.h"

namespace kiln::export_detail {

namespace {

constexpr const char* kKindNames[] = {"parameter", "buffer", "constant"};
constexpr const char* kRelNames[] = {"eq", "ne", "lt", "ge"};

class JsonWriter {
 public:
  std::string take() { return std::move(out_); }
  JsonWriter& raw(std::string_view s) {
    out_ += s;
    return *this;
  }
  JsonWriter& str(std::string_view s) { return raw(io::detail::json_string(s)); }
  JsonWriter& key(std::string_view k) {
    if (!out_.empty() && out_.back() != '{' && out_.back() != '[') out_ += ',';
    str(k);
    out_ += ':';
    return *this;
  }
  // A separator before an array element.
  JsonWriter& next() {
    if (!out_.empty() && out_.back() != '[' && out_.back() != '{') out_ += ',';
    return *this;
  }
  JsonWriter& num(int64_t v) { return raw(std::to_string(v)); }
  // Doubles as C's hexadecimal form ("0x1.8p+1", "inf", "nan"), exact both ways.
  JsonWriter& real(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", v);
    return str(buf);
  }
  JsonWriter& sym(const SymInt& s) {
    if (const auto v = s.maybe_int()) return num(*v);
    return str(s.str());
  }
  JsonWriter& syms(const SymShape& shape) {
    raw("[");
    for (const SymInt& s : shape) next().sym(s);
    return raw("]");
  }
  JsonWriter& ints(const std::vector<int>& v) {
    raw("[");
    for (int x : v) next().num(x);
    return raw("]");
  }

 private:
  std::string out_;
};

void write_scalar(JsonWriter& w, const Scalar& s) {
  if (s.is_bool()) {
    w.raw("{\"scalar_bool\":").raw(s.to<bool>() ? "true" : "false").raw("}");
  } else if (s.is_integral()) {
    w.raw("{\"scalar_int\":").num(s.to_long()).raw("}");
  } else {
    w.raw("{\"scalar_float\":").real(s.to_double()).raw("}");
  }
}

void write_attr(JsonWriter& w, const AttrValue& v, const std::string& op) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          w.raw("null");
        } else if constexpr (std::is_same_v<T, bool>) {
          w.raw("{\"bool\":").raw(x ? "true" : "false").raw("}");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          w.raw("{\"int\":").num(x).raw("}");
        } else if constexpr (std::is_same_v<T, double>) {
          w.raw("{\"float\":").real(x).raw("}");
        } else if constexpr (std::is_same_v<T, Scalar>) {
          write_scalar(w, x);
        } else if constexpr (std::is_same_v<T, SymInt>) {
          w.raw("{\"sym\":").sym(x).raw("}");
        } else if constexpr (std::is_same_v<T, SymShape>) {
          w.raw("{\"syms\":").syms(x).raw("}");
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          w.raw("{\"ints\":[");
          for (int64_t i : x) w.next().num(i);
          w.raw("]}");
        } else if constexpr (std::is_same_v<T, std::string>) {
          w.raw("{\"str\":").str(x).raw("}");
        } else if constexpr (std::is_same_v<T, ScalarType>) {
          w.raw("{\"dtype\":").str(dtype_name(x)).raw("}");
        } else if constexpr (std::is_same_v<T, Device>) {
          w.raw("{\"device\":").str(x.str()).raw("}");
        } else {
          static_assert(std::is_same_v<T, Generator*>);
          KILN_FAIL("ExportedProgram.save: ", op,
                    " takes a random number generator, which a program file cannot hold");
        }
      },
      v);
}

void write_value(JsonWriter& w, const compiler::Value& v) {
  static constexpr const char* kValueKinds[] = {"input", "captured", "node"};
  w.raw("{").key("kind").str(kValueKinds[static_cast<int>(v.kind)]);
  w.key("dtype").str(dtype_name(v.dtype)).key("device").str(v.device.str());
  w.key("sizes").syms(v.sizes).key("strides").syms(v.strides);
  if (v.wrapped_number) w.key("wrapped_number").raw("true");
  w.raw("}");
}

// The graph's keys: values, nodes, inputs, captured, outputs and, for control flow, subgraphs
// (each a graph object of its own).
void write_graph(JsonWriter& w, const compiler::Graph& g) {
  w.key("values").raw("[");
  for (const compiler::Value& v : g.values) write_value(w.next(), v);
  w.raw("]").key("nodes").raw("[");
  for (const compiler::Node& n : g.nodes) {
    w.next().raw("{").key("op").str(n.op->name).key("inputs").ints(n.inputs);
    w.key("attrs").raw("[");
    for (size_t i = 0; i < n.attrs.size(); ++i) write_attr(w.next(), n.attrs[i], n.op->name);
    w.raw("]").key("outputs").ints(n.outputs);
    if (!n.grad_enabled) w.key("grad_enabled").raw("false");
    w.raw("}");
  }
  w.raw("]").key("inputs").ints(g.inputs).key("captured").ints(g.captured);
  w.key("outputs").ints(g.outputs);
  if (g.subgraphs.empty()) return;
  w.key("subgraphs").raw("[");
  for (const auto& sub : g.subgraphs) {
    w.next().raw("{");
    write_graph(w, *sub);
    w.raw("}");
  }
  w.raw("]");
}

}  // namespace

std::string program_to_json(const ExportedProgram& program) {
  const compiler::Graph& g = program.graph();
  const ShapeEnv& env = program.shape_env();
  JsonWriter w;
  w.raw("{").key("format").str(kProgramFormat).key("version").num(kProgramVersion);
  w.key("symbols").raw("[");
  for (int k = 0; k < env.num_symbols(); ++k) {
    w.next().raw("{").key("name").str(env.name(k)).key("min").num(env.range(k).min);
    w.key("max").num(env.range(k).max).key("hint").num(env.hint(k)).raw("}");
  }
  w.raw("]").key("guards").raw("[");
  for (const ShapeGuard& guard : env.guards()) {
    w.next().raw("{").key("lhs").sym(guard.lhs).key("rel").str(
        kRelNames[static_cast<int>(guard.rel)]);
    w.key("rhs").sym(guard.rhs).key("origin").str(guard.origin).raw("}");
  }
  w.raw("]");
  write_graph(w, g);
  w.key("captured_specs").raw("[");
  for (const ExportedProgram::CapturedSpec& s : program.captured_specs())
    w.next()
        .raw("{")
        .key("kind")
        .str(kKindNames[static_cast<int>(s.kind)])
        .key("name")
        .str(s.name)
        .raw("}");
  w.raw("]}");
  return w.take();
}

}  // namespace kiln::export_detail

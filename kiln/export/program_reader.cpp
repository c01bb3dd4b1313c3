// Reads and validates an exported program's graph from JSON (program_format.h). Nothing read is
// trusted: every id, name, expression, dtype and tensor is checked before the graph is built.
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_map>

#include "kiln/compile/control_flow.h"
#include "kiln/export/program_format.h"
#include "kiln/export/sym_expr.h"
#include "kiln/io/json_cursor.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/samples.h"

namespace kiln::export_detail {

namespace {

using io::detail::JsonCursor;
using io::detail::JsonNumber;
using io::detail::Reporter;

constexpr int kMaxDepth = 48;
constexpr int kMaxControlFlowNesting = 8;

std::optional<ScalarType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (dtype_name(static_cast<ScalarType>(i)) == name) return static_cast<ScalarType>(i);
  return std::nullopt;
}

// The fewest tensor inputs a call of `op` has: the fewest of its op-table samples (every op has
// samples, and they cover its optional inputs). Kernels index their inputs without checks, so a
// node with fewer is refused.
size_t min_tensor_inputs(const OpDef& op) {
  static std::mutex mutex;
  static std::unordered_map<const OpDef*, size_t> cache;
  const std::lock_guard lock(mutex);
  auto [it, inserted] = cache.try_emplace(&op, 0);
  if (inserted && op.samples_) {
    size_t fewest = SIZE_MAX;
    for (const OpSample& s : op.samples_(op.dtypes_.empty() ? kFloat32 : op.dtypes_.front()))
      fewest = std::min(fewest, s.inputs.size());
    it->second = fewest == SIZE_MAX ? 0 : fewest;
  }
  return it->second;
}

class ProgramReader {
 public:
  ProgramReader(std::string_view json, const Reporter& r) : c_(json, r, kMaxDepth), r_(r) {}

  ExportedProgram read(std::map<std::string, Tensor> weights) {
    int64_t version = 0;
    std::vector<ExportedProgram::CapturedSpec> specs;
    int key_index = 0;
    object("the program", 0, [&](const std::string& key) {
      if (key_index == 0) {
        KILN_IO_CHECK(r_, key == "format" && string("format") == kProgramFormat,
                      "not an exported Kiln program (its metadata does not start with format '",
                      kProgramFormat, "')");
      } else if (key_index == 1) {
        KILN_IO_CHECK(r_, key == "version", "the program has no schema version");
        version = integer("version");
        KILN_IO_CHECK(r_, version <= kProgramVersion, "the program's schema version is ", version,
                      ", newer than this Kiln reads (", kProgramVersion,
                      "); load it with the Kiln that wrote it, or a newer one");
        KILN_IO_CHECK(r_, version >= 1, "the schema version ", version, " is not valid");
      } else if (key == "symbols") {
        array("symbols", 1, [&] { read_symbol(); });
      } else if (key == "guards") {
        array("guards", 1, [&] { read_guard(); });
      } else if (graph_key(key, graph_, 0, 0)) {
      } else if (key == "captured_specs") {
        array("captured_specs", 1, [&] { specs.push_back(read_spec()); });
      } else {
        c_.skip_value(1);  // a key of a later revision of this version: ignored
      }
      ++key_index;
    });
    c_.expect_end();
    KILN_IO_CHECK(r_, key_index >= 2, "the program has no schema version");
    validate_graph(graph_);
    bind_captured(specs, std::move(weights));
    try {
      return ExportedProgram(env_, symbols_, std::move(graph_), std::move(specs));
    } catch (const Error& e) {
      r_.fail(e.what());
    }
  }

 private:
  // Containers: `on_key(key)` / `on_element()` read each entry.
  template <class F>
  void object(std::string_view what, int depth, F&& on_key) {
    KILN_IO_CHECK(r_, depth < kMaxDepth, what, " is nested too deeply");
    c_.expect('{', what);
    if (c_.consume('}')) return;
    do {
      const std::string key = c_.string(what);
      c_.expect(':', what);
      on_key(key);
    } while (c_.consume(','));
    c_.expect('}', what);
  }
  template <class F>
  void array(std::string_view what, int depth, F&& on_element) {
    KILN_IO_CHECK(r_, depth < kMaxDepth, what, " is nested too deeply");
    c_.expect('[', what);
    if (c_.consume(']')) return;
    do {
      on_element();
    } while (c_.consume(','));
    c_.expect(']', what);
  }

  std::string string(std::string_view what) { return c_.string(what); }
  int64_t integer(std::string_view what) {
    const JsonNumber n = c_.number(what);
    if (n.kind == JsonNumber::kUnsigned && n.value <= static_cast<uint64_t>(INT64_MAX))
      return static_cast<int64_t>(n.value);
    if (n.kind == JsonNumber::kNegative) {
      errno = 0;
      const std::string text(n.text);
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end == text.c_str() + text.size()) return v;
    }
    r_.fail(what, " must be an integer that fits in 64 bits, not ", n.text);
  }
  bool boolean(std::string_view what) {
    const int ch = c_.peek();
    KILN_IO_CHECK(r_, ch == 't' || ch == 'f', what, " must be true or false");
    c_.skip_value(kMaxDepth - 1);
    return ch == 't';
  }
  double real(std::string_view what) {
    const std::string text = string(what);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    KILN_IO_CHECK(r_, !text.empty() && end == text.c_str() + text.size(), what,
                  " must be a number written as text, not '", text, "'");
    return v;
  }
  SymInt sym(std::string_view what) {
    if (c_.peek() == '"') return parse_sym_expr(string(what), by_name_, r_);
    return SymInt(integer(what));
  }
  SymShape syms(std::string_view what, int depth) {
    SymShape out;
    array(what, depth, [&] { out.push_back(sym(what)); });
    return out;
  }
  std::vector<int> ids(const compiler::Graph& g, std::string_view what, int depth) {
    std::vector<int> out;
    array(what, depth, [&] {
      const int64_t id = integer(what);
      KILN_IO_CHECK(r_, id >= -1 && id < static_cast<int64_t>(g.values.size()), what,
                    " names the value ", id, ", but the graph has ", g.values.size(),
                    " values (the values must come before the nodes and lists that use them)");
      out.push_back(static_cast<int>(id));
    });
    return out;
  }
  ScalarType dtype(std::string_view what) {
    const std::string name = string(what);
    const auto t = dtype_from_name(name);
    KILN_IO_CHECK(r_, t.has_value(), what, ": unknown dtype '", name, "'");
    return *t;
  }
  Device device(std::string_view what) {
    const std::string spec = string(what);
    const bool known = spec == "cpu" || spec.rfind("cuda", 0) == 0;
    KILN_IO_CHECK(r_, known, what, ": unknown device '", spec, "'");
    try {
      return Device(spec);
    } catch (const Error& e) {
      r_.fail(what, ": ", e.what());
    }
  }

  void read_symbol() {
    std::string name;
    int64_t min = -1, max = -1, hint = -1;
    object("a symbol", 2, [&](const std::string& key) {
      if (key == "name") {
        name = string("a symbol's name");
      } else if (key == "min") {
        min = integer("a symbol's min");
      } else if (key == "max") {
        max = integer("a symbol's max");
      } else if (key == "hint") {
        hint = integer("a symbol's hint");
      } else {
        c_.skip_value(3);
      }
    });
    KILN_IO_CHECK(r_, is_symbol_name(name), "the symbol name '", name, "' is not an identifier");
    KILN_IO_CHECK(r_, !by_name_.count(name), "the symbol '", name, "' is declared twice");
    KILN_IO_CHECK(r_, 0 <= min && min <= hint && hint <= max, "the symbol '", name,
                  "' has the range [", min, ", ", max, "] and example value ", hint,
                  ", which do not agree");
    symbols_.push_back(env_->create_symbol(hint, name, SymbolRange{min, max}));
    by_name_[name] = symbols_.back();
  }

  void read_guard() {
    ShapeGuard g;
    std::string rel;
    object("a guard", 2, [&](const std::string& key) {
      if (key == "lhs") {
        g.lhs = sym("a guard's lhs");
      } else if (key == "rhs") {
        g.rhs = sym("a guard's rhs");
      } else if (key == "rel") {
        rel = string("a guard's relation");
      } else if (key == "origin") {
        g.origin = string("a guard's origin");
      } else {
        c_.skip_value(3);
      }
    });
    static constexpr const char* kRels[] = {"eq", "ne", "lt", "ge"};
    int found = -1;
    for (int i = 0; i < 4; ++i)
      if (rel == kRels[i]) found = i;
    KILN_IO_CHECK(r_, found >= 0, "unknown guard relation '", rel, "'");
    g.rel = static_cast<ShapeGuard::Rel>(found);
    env_->add_guard(std::move(g));
  }

  void read_value(compiler::Graph& g, int depth) {
    compiler::Value v;
    std::string kind;
    object("a value", depth, [&](const std::string& key) {
      if (key == "kind") {
        kind = string("a value's kind");
      } else if (key == "dtype") {
        v.dtype = dtype("a value's dtype");
      } else if (key == "device") {
        v.device = device("a value's device");
      } else if (key == "sizes") {
        v.sizes = syms("a value's sizes", depth + 1);
      } else if (key == "strides") {
        v.strides = syms("a value's strides", depth + 1);
      } else if (key == "wrapped_number") {
        v.wrapped_number = boolean("wrapped_number");
      } else {
        c_.skip_value(depth + 1);
      }
    });
    const size_t id = g.values.size();
    if (kind == "input") {
      v.kind = compiler::Value::Kind::Input;
    } else if (kind == "captured") {
      v.kind = compiler::Value::Kind::Captured;
    } else {
      KILN_IO_CHECK(r_, kind == "node", "value ", id, " has the unknown kind '", kind, "'");
      v.kind = compiler::Value::Kind::NodeOutput;
    }
    KILN_IO_CHECK(r_, v.dtype != ScalarType::Undefined, "value ", id, " has no dtype");
    KILN_IO_CHECK(r_, v.strides.empty() || v.strides.size() == v.sizes.size(), "value ", id,
                  " has ", v.sizes.size(), " sizes but ", v.strides.size(), " strides");
    g.values.push_back(std::move(v));
  }

  AttrValue attr(const std::string& op, int depth) {
    if (c_.peek() == 'n') {
      c_.skip_value(kMaxDepth - 1);
      return std::monostate{};
    }
    AttrValue out;
    int keys = 0;
    const std::string what = "an attribute of " + op;
    object(what, depth, [&](const std::string& key) {
      KILN_IO_CHECK(r_, keys++ == 0, what, " has more than one key");
      if (key == "bool") {
        out = boolean(what);
      } else if (key == "int") {
        out = integer(what);
      } else if (key == "float") {
        out = real(what);
      } else if (key == "scalar_bool") {
        out = Scalar(boolean(what));
      } else if (key == "scalar_int") {
        out = Scalar(integer(what));
      } else if (key == "scalar_float") {
        out = Scalar(real(what));
      } else if (key == "sym") {
        out = sym(what);
      } else if (key == "syms") {
        out = syms(what, depth + 1);
      } else if (key == "ints") {
        std::vector<int64_t> v;
        array(what, depth + 1, [&] { v.push_back(integer(what)); });
        out = std::move(v);
      } else if (key == "str") {
        out = string(what);
      } else if (key == "dtype") {
        out = dtype(what);
      } else if (key == "device") {
        out = device(what);
      } else {
        r_.fail(what, " has the unknown type '", key, "'");
      }
    });
    KILN_IO_CHECK(r_, keys == 1, what, " is empty");
    return out;
  }

  void read_node(compiler::Graph& g, int depth) {
    compiler::Node n;
    std::string op;
    std::vector<AttrValue> attrs;
    object("a node", depth, [&](const std::string& key) {
      if (key == "op") {
        op = string("a node's op");
        n.op = find_op(op);
        if (n.op == nullptr) n.op = compiler::control_flow_op(op);
        KILN_IO_CHECK(r_, n.op != nullptr, "the op '", op, "' is not one of this Kiln's ops");
      } else if (key == "inputs") {
        n.inputs = ids(g, "a node's inputs", depth + 1);
      } else if (key == "outputs") {
        n.outputs = ids(g, "a node's outputs", depth + 1);
      } else if (key == "attrs") {
        KILN_IO_CHECK(r_, n.op != nullptr, "a node's attrs come before its op");
        array("a node's attrs", depth + 1, [&] { attrs.push_back(attr(op, depth + 2)); });
      } else if (key == "grad_enabled") {
        n.grad_enabled = boolean("grad_enabled");
      } else {
        c_.skip_value(depth + 1);
      }
    });
    KILN_IO_CHECK(r_, n.op != nullptr, "node ", g.nodes.size(), " has no op");
    KILN_IO_CHECK(r_, n.inputs.size() >= min_tensor_inputs(*n.op), "node ", g.nodes.size(),
                  " calls ", op, " with ", n.inputs.size(), " tensors; it takes at least ",
                  min_tensor_inputs(*n.op));
    for (const AttrValue& a : attrs) {
      if (const auto* s = std::get_if<SymInt>(&a)) n.symbolic_attrs |= s->is_symbolic();
      if (const auto* shape = std::get_if<SymShape>(&a))
        for (const SymInt& s : *shape) n.symbolic_attrs |= s.is_symbolic();
    }
    n.attrs = Attrs(std::move(attrs));
    g.nodes.push_back(std::move(n));
  }

  // Reads one of a graph's own keys into g (`depth`: the graph object's nesting; `level`: how
  // many control-flow nodes it is inside). False for other keys.
  bool graph_key(const std::string& key, compiler::Graph& g, int depth, int level) {
    if (key == "values") {
      array("values", depth + 1, [&] { read_value(g, depth + 2); });
    } else if (key == "nodes") {
      array("nodes", depth + 1, [&] { read_node(g, depth + 2); });
    } else if (key == "inputs") {
      g.inputs = ids(g, "inputs", depth + 1);
    } else if (key == "captured") {
      g.captured = ids(g, "captured", depth + 1);
    } else if (key == "outputs") {
      g.outputs = ids(g, "outputs", depth + 1);
    } else if (key == "subgraphs") {
      KILN_IO_CHECK(r_, level < kMaxControlFlowNesting, "control flow is nested more than ",
                    kMaxControlFlowNesting, " deep");
      array("subgraphs", depth + 1, [&] {
        compiler::Graph sub;
        object("a subgraph", depth + 2, [&](const std::string& k) {
          if (!graph_key(k, sub, depth + 2, level + 1)) c_.skip_value(depth + 3);
        });
        validate_graph(sub);
        g.subgraphs.push_back(std::make_shared<const compiler::Graph>(std::move(sub)));
      });
    } else {
      return false;
    }
    return true;
  }

  ExportedProgram::CapturedSpec read_spec() {
    ExportedProgram::CapturedSpec s;
    std::string kind;
    object("a captured tensor's spec", 2, [&](const std::string& key) {
      if (key == "kind") {
        kind = string("a captured tensor's kind");
      } else if (key == "name") {
        s.name = string("a captured tensor's name");
      } else {
        c_.skip_value(3);
      }
    });
    if (kind == "parameter") {
      s.kind = ExportedProgram::CapturedSpec::Kind::Parameter;
    } else if (kind == "buffer") {
      s.kind = ExportedProgram::CapturedSpec::Kind::Buffer;
    } else {
      KILN_IO_CHECK(r_, kind == "constant", "the captured tensor '", s.name,
                    "' has the unknown kind '", kind, "'");
    }
    return s;
  }

  // Every value is defined once before it is read: inputs and captured tensors by their lists,
  // the rest by the one node that makes it, earlier in the order.
  void validate_graph(compiler::Graph& g) {
    std::vector<char> defined(g.values.size(), 0);
    auto define = [&](const std::vector<int>& list, compiler::Value::Kind kind, const char* what) {
      for (size_t i = 0; i < list.size(); ++i) {
        const int id = list[i];
        KILN_IO_CHECK(r_, id >= 0 && g.values[id].kind == kind && !defined[id], what, "[", i,
                      "] = ", id, " is not a ", what, " value, or is listed twice");
        defined[id] = 1;
        g.values[id].producer = static_cast<int>(i);
      }
    };
    define(g.inputs, compiler::Value::Kind::Input, "input");
    define(g.captured, compiler::Value::Kind::Captured, "captured");
    for (size_t i = 0; i < g.values.size(); ++i)
      KILN_IO_CHECK(r_, defined[i] || g.values[i].kind == compiler::Value::Kind::NodeOutput,
                    "value ", i, " is an input or captured value that no list names");
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      const compiler::Node& n = g.nodes[k];
      for (int id : n.inputs)
        KILN_IO_CHECK(r_, id < 0 || defined[id], "node ", k, " (", n.op->name, ") reads value ", id,
                      " before anything defines it");
      KILN_IO_CHECK(r_, !n.outputs.empty(), "node ", k, " (", n.op->name, ") has no outputs");
      for (int id : n.outputs) {
        KILN_IO_CHECK(r_, id >= 0 && !defined[id], "node ", k, " (", n.op->name, ") defines value ",
                      id, ", which is undefined or already defined");
        defined[id] = 1;
        g.values[id].producer = static_cast<int>(k);
      }
    }
    for (int id : g.outputs)
      KILN_IO_CHECK(r_, id < 0 || defined[id], "output value ", id, " is never defined");
  }

  void bind_captured(const std::vector<ExportedProgram::CapturedSpec>& specs,
                     std::map<std::string, Tensor> weights) {
    KILN_IO_CHECK(r_, specs.size() == graph_.captured.size(), "the program names ", specs.size(),
                  " captured tensors but its graph has ", graph_.captured.size());
    std::set<std::string> names;
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::string& name = specs[i].name;
      KILN_IO_CHECK(r_, names.insert(name).second, "the captured tensor '", name,
                    "' is named twice");
      auto it = weights.find(name);
      KILN_IO_CHECK(r_, it != weights.end(), "the tensor '", name, "' is missing");
      const compiler::Value& v = graph_.values[graph_.captured[i]];
      Tensor t = std::move(it->second);
      weights.erase(it);
      bool same = t.dtype() == v.dtype && t.dim() == static_cast<int64_t>(v.sizes.size());
      for (size_t d = 0; same && d < v.sizes.size(); ++d)
        same = v.sizes[d].maybe_int() == t.size(static_cast<int64_t>(d));
      KILN_IO_CHECK(r_, same, "the tensor '", name, "' is ", t.dtype(), t.sizes(),
                    " but the graph reads it as ", compiler::describe_value(v));
      if (v.device != t.device()) {
        try {
          t = t.to(v.device);
        } catch (const Error& e) {
          r_.fail("the tensor '", name, "' cannot be put on ", v.device.str(), ": ", e.what());
        }
      }
      if (specs[i].kind == ExportedProgram::CapturedSpec::Kind::Parameter)
        t.set_requires_grad(true);
      graph_.captured_tensors.push_back(std::move(t));
    }
    KILN_IO_CHECK(r_, weights.empty(), "the tensor '", weights.begin()->first,
                  "' is not part of the program");
  }

  JsonCursor c_;
  const Reporter& r_;
  std::shared_ptr<ShapeEnv> env_ = std::make_shared<ShapeEnv>();
  std::vector<SymInt> symbols_;
  std::map<std::string, SymInt> by_name_;
  compiler::Graph graph_;
};

}  // namespace

ExportedProgram program_from_json(std::string_view json, std::map<std::string, Tensor> weights,
                                  const Reporter& r) {
  return ProgramReader(json, r).read(std::move(weights));
}

}  // namespace kiln::export_detail

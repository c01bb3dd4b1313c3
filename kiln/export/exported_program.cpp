#include "kiln/export/exported_program.h"

#include <map>
#include <sstream>

#include "kiln/compile/compile.h"
#include "kiln/compile/control_flow.h"
#include "kiln/compile/guards.h"
#include "kiln/compile/replay.h"
#include "kiln/core/graph_break.h"
#include "kiln/export/sym_expr.h"
#include "kiln/ops/registry.h"

namespace kiln {

namespace {

// The symbol a size is, or -1 for a static size.
int symbol_index(const SymInt& size, const std::vector<SymInt>& symbols) {
  if (!size.is_symbolic()) return -1;
  for (size_t k = 0; k < symbols.size(); ++k)
    if (size.same_as(symbols[k])) return static_cast<int>(k);
  KILN_FAIL("ExportedProgram: the input size ", size.str(), " is not one of the program's symbols");
}

std::string shape_text(const SymShape& sizes) {
  std::string s = "[";
  for (size_t d = 0; d < sizes.size(); ++d) s += (d ? ", " : "") + sizes[d].str();
  return s + "]";
}

}  // namespace

ExportedProgram::ExportedProgram(std::shared_ptr<ShapeEnv> env, std::vector<SymInt> symbols,
                                 compiler::Graph graph, std::vector<CapturedSpec> captured)
    : env_(std::move(env)),
      symbols_(std::move(symbols)),
      graph_(std::move(graph)),
      captured_(std::move(captured)) {
  KILN_CHECK(captured_.size() == graph_.captured.size() &&
                 graph_.captured_tensors.size() == graph_.captured.size(),
             "ExportedProgram: ", graph_.captured.size(), " captured values, ",
             graph_.captured_tensors.size(), " tensors and ", captured_.size(), " names");
  std::vector<bool> bound(symbols_.size(), false);
  for (int id : graph_.inputs)
    for (const SymInt& s : graph_.values.at(id).sizes) {
      const int k = symbol_index(s, symbols_);
      if (k >= 0) bound[k] = true;
    }
  for (size_t k = 0; k < bound.size(); ++k)
    KILN_CHECK(bound[k], "ExportedProgram: the symbol ", symbols_[k].str(),
               " is not the size of any input dim");
}

std::vector<int64_t> ExportedProgram::check_inputs(const std::vector<Tensor>& inputs) const {
  KILN_CHECK(inputs.size() == graph_.inputs.size(), "ExportedProgram.run: expected ",
             graph_.inputs.size(), " inputs, but got ", inputs.size());
  std::vector<int64_t> values(symbols_.size(), -1);
  std::vector<std::string> bound_at(symbols_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const compiler::Value& v = graph_.values[graph_.inputs[i]];
    const Tensor& t = inputs[i];
    const std::string at = "inputs[" + std::to_string(i) + "]";
    KILN_CHECK(t.defined(), "ExportedProgram.run: ", at, " is an undefined tensor; expected ",
               compiler::describe_value(v));
    KILN_CHECK(t.dtype() == v.dtype, "Expected input at ", at, ".dtype to be ", v.dtype,
               ", but got ", t.dtype());
    KILN_CHECK(t.device() == v.device, "Expected input at ", at, ".device to be ", v.device.str(),
               ", but got ", t.device().str());
    KILN_CHECK(t.dim() == static_cast<int64_t>(v.sizes.size()),
               "Unexpected number of dimensions in input at ", at, ".shape (expected ",
               shape_text(v.sizes), ", got ", t.sizes(), ")");
    for (size_t d = 0; d < v.sizes.size(); ++d) {
      const int64_t size = t.size(static_cast<int64_t>(d));
      const std::string dim_at = at + ".shape[" + std::to_string(d) + "]";
      const int k = symbol_index(v.sizes[d], symbols_);
      if (k < 0) {
        KILN_CHECK(size == v.sizes[d].maybe_int(), "Expected input at ", dim_at, " to be equal to ",
                   v.sizes[d].str(), ", but got ", size);
        continue;
      }
      const SymbolRange& range = env_->range(k);
      KILN_CHECK(size >= range.min, "Expected input at ", dim_at, " to be >= ", range.min,
                 ", but got ", size);
      KILN_CHECK(size <= range.max, "Expected input at ", dim_at, " to be <= ", range.max,
                 ", but got ", size);
      if (values[k] < 0) {
        values[k] = size;
        bound_at[k] = dim_at;
      }
      KILN_CHECK(size == values[k], "Expected input at ", dim_at, " to be equal to ", values[k],
                 ", where ", symbols_[k].str(), " = ", bound_at[k], ", but got ", size);
    }
  }
  std::string why;
  KILN_CHECK(
      env_->check(values, &why),
      "ExportedProgram.run: the inputs' sizes break a relation the program relies on: ", why);
  return values;
}

std::vector<Tensor> ExportedProgram::run(const std::vector<Tensor>& inputs) const {
  const std::vector<int64_t> symbols = check_inputs(inputs);
  if (compiled_) return compiled_->call({inputs.begin(), inputs.end()});
  return compiler::replay(graph_, inputs, graph_.captured_tensors, symbols);
}

namespace {

// The graph replayed on traced inputs: each symbolic attribute is rewritten over the traced
// inputs' sizes (by its text, which names the program's symbols), so the capture stays symbolic.
std::vector<Tensor> replay_symbolic(const compiler::Graph& graph,
                                    const std::vector<std::pair<int, int>>& symbol_dims,
                                    const std::vector<std::string>& names,
                                    const std::vector<Tensor>& inputs) {
  std::map<std::string, SymInt> sizes;
  for (size_t k = 0; k < symbol_dims.size(); ++k)
    sizes[names[k]] = inputs[symbol_dims[k].first].sym_size(symbol_dims[k].second);
  const io::detail::Reporter r("ExportedProgram.compile: ");
  auto rewrite = [&](const SymInt& s) {
    return s.is_symbolic() ? export_detail::parse_sym_expr(s.str(), sizes, r) : s;
  };
  std::vector<Tensor> values = compiler::bind_inputs(graph, inputs, graph.captured_tensors);
  std::vector<Tensor> args;
  for (const compiler::Node& n : graph.nodes) {
    if (compiler::is_control_flow(*n.op)) {
      // Its predicate is a traced value here: the compiled function runs eagerly, with ints.
      for (const Tensor& t : inputs)
        if (t.impl()->is_traced())
          throw compiler::GraphBreak(n.op->name + " in an exported program runs eagerly");
      std::vector<int64_t> symbols;
      for (const std::string& name : names) symbols.push_back(sizes.at(name).guard_int());
      compiler::run_control_flow(graph, n, values, symbols);
      continue;
    }
    if (!n.symbolic_attrs) {
      compiler::run_node(graph, n, values, n.attrs, args);
      continue;
    }
    compiler::run_node(graph, n, values, compiler::map_sizes(n.attrs, rewrite), args);
  }
  return compiler::graph_outputs(graph, values);
}

}  // namespace

ExportedProgram& ExportedProgram::compile(CompileOptions options) {
  std::vector<std::pair<int, int>> symbol_dims(symbols_.size(), {-1, -1});
  // The capture's sizes are as the program's: its fixed dims specialised, each dynamic one a
  // symbol with the program's range (never one symbol for two dims that happen to be equal).
  std::map<std::pair<int, int>, compiler::DimMark> marks;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const SymShape& sizes = graph_.values[graph_.inputs[i]].sizes;
    for (size_t d = 0; d < sizes.size(); ++d) {
      const std::pair<int, int> at{static_cast<int>(i), static_cast<int>(d)};
      const int k = symbol_index(sizes[d], symbols_);
      marks[at] = k < 0 ? compiler::DimMark{false}
                        : compiler::DimMark{true, env_->range(k).min, env_->range(k).max};
      if (k >= 0 && symbol_dims[k].first < 0) symbol_dims[k] = at;
    }
  }
  std::vector<std::string> names;
  for (int k = 0; k < env_->num_symbols(); ++k) names.push_back(env_->name(k));
  compiler::FlatFn fn = [graph = graph_, symbol_dims,
                         names](const std::vector<compiler::Arg>& args) {
    return replay_symbolic(graph, symbol_dims, names, compiler::flat_tensors(args));
  };
  if (options.name().empty()) options.name("exported_program");
  compiled_ = compiler::make_compiled_function(std::move(fn), std::move(options));
  compiled_->set_dim_marks(std::move(marks));
  return *this;
}

OrderedDict<std::string, Tensor> ExportedProgram::named(CapturedSpec::Kind kind) const {
  OrderedDict<std::string, Tensor> out;
  for (size_t i = 0; i < captured_.size(); ++i)
    if (captured_[i].kind == kind) out.insert(captured_[i].name, graph_.captured_tensors[i]);
  return out;
}

std::vector<Tensor> ExportedProgram::parameters() const {
  return named(CapturedSpec::Kind::Parameter).values();
}
OrderedDict<std::string, Tensor> ExportedProgram::named_parameters() const {
  return named(CapturedSpec::Kind::Parameter);
}
OrderedDict<std::string, Tensor> ExportedProgram::named_buffers() const {
  return named(CapturedSpec::Kind::Buffer);
}
OrderedDict<std::string, Tensor> ExportedProgram::constants() const {
  return named(CapturedSpec::Kind::Constant);
}
OrderedDict<std::string, Tensor> ExportedProgram::state_dict() const {
  OrderedDict<std::string, Tensor> out = named_parameters();
  for (const auto& item : named_buffers()) out.insert(item.key(), item.value());
  return out;
}

std::vector<ExportedProgram::RangeConstraint> ExportedProgram::range_constraints() const {
  std::vector<RangeConstraint> out;
  for (int k = 0; k < env_->num_symbols(); ++k)
    out.push_back({env_->name(k), env_->range(k).min, env_->range(k).max});
  return out;
}

std::vector<std::string> ExportedProgram::shape_guards() const {
  std::vector<std::string> out;
  for (const ShapeGuard& g : env_->guards()) out.push_back(g.str());
  return out;
}

std::map<std::string, int> ExportedProgram::op_counts() const {
  std::map<std::string, int> out;
  for (const compiler::Node& n : graph_.nodes) ++out[n.op->name];
  return out;
}

std::string ExportedProgram::str() const {
  static constexpr const char* kKinds[] = {"parameter", "buffer", "constant"};
  std::ostringstream os;
  os << "ExportedProgram: " << graph_.inputs.size() << " inputs, " << captured_.size()
     << " captured tensors, " << graph_.outputs.size() << " outputs, " << graph_.nodes.size()
     << " ops\n";
  for (size_t i = 0; i < graph_.inputs.size(); ++i)
    os << "  input inputs[" << i
       << "]: " << compiler::describe_value(graph_.values[graph_.inputs[i]]) << "\n";
  for (size_t i = 0; i < captured_.size(); ++i)
    os << "  " << kKinds[static_cast<int>(captured_[i].kind)] << " " << captured_[i].name << ": "
       << compiler::describe_value(graph_.values[graph_.captured[i]]) << "\n";
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const int id = graph_.outputs[i];
    os << "  output outputs[" << i
       << "]: " << (id < 0 ? std::string("None") : compiler::describe_value(graph_.values[id]))
       << "\n";
  }
  for (const RangeConstraint& r : range_constraints())
    os << "  range " << r.symbol << " in [" << r.min << ", " << r.max << "]\n";
  for (const std::string& g : shape_guards()) os << "  guard " << g << "\n";
  os << "Graph:\n" << graph_.str();
  return os.str();
}

}  // namespace kiln

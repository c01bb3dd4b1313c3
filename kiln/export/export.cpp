#include "kiln/export/export.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "kiln/compile/passes.h"
#include "kiln/compile/tracer.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/export/sym_expr.h"

namespace kiln {

Dim::Dim(std::string name_, int64_t min_, int64_t max_)
    : name(std::move(name_)), min(min_), max(max_) {
  KILN_CHECK(export_detail::is_symbol_name(name), "Dim: the name '", name,
             "' is not an identifier (letters, digits and '_', not starting with a digit; not "
             "'min' or 'max')");
  KILN_CHECK(0 <= min && min <= max, "Dim '", name, "': the range [", min, ", ", max,
             "] is empty or negative");
}

namespace export_detail {

namespace {

// The symbols of the export: one per Dim name, with the input dims it sizes.
struct Symbols {
  std::vector<SymInt> values;
  std::vector<std::string> places;  // "inputs[0].shape[0]", joined with " and "
  std::map<std::string, int> by_name;
};

SymInt symbol_for(const Dim& dim, int64_t example, const std::string& place, ShapeEnv& env,
                  Symbols& s) {
  KILN_CHECK(dim.min <= example && example <= dim.max, "export_program: ", place, " is ", example,
             " in the example inputs, outside the range [", dim.min, ", ", dim.max,
             "] of its Dim '", dim.name, "'");
  auto it = s.by_name.find(dim.name);
  if (it == s.by_name.end()) {
    s.values.push_back(env.create_symbol(example, dim.name, SymbolRange{dim.min, dim.max}));
    s.places.push_back(place);
    s.by_name[dim.name] = static_cast<int>(s.values.size()) - 1;
    return s.values.back();
  }
  const int k = it->second;
  KILN_CHECK(env.range(k).min == dim.min && env.range(k).max == dim.max,
             "export_program: two Dims named '", dim.name, "' have different ranges");
  KILN_CHECK(env.hint(k) == example, "export_program: ", place, " and ", s.places[k],
             " share the Dim '", dim.name, "' but are ", example, " and ", env.hint(k),
             " in the example inputs");
  s.places[k] += " and " + place;
  return s.values[k];
}

// The names of symbols in an expression's text.
std::vector<std::string> names_in(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
        ++j;
      std::string name = text.substr(i, j - i);
      if (name != "min" && name != "max") out.push_back(std::move(name));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

std::string suggestion(const ShapeGuard& g, const std::string& name) {
  const bool eq = g.rel == ShapeGuard::Rel::Eq;
  if (eq && (!g.lhs.is_symbolic() || !g.rhs.is_symbolic()))
    return "the code specialises " + name +
           " to one value: drop its Dim (the dim is then static), or change the code so that it "
           "does not depend on the size (reshape or view with -1 instead of a size computed from "
           "it)";
  if (eq) return "the sizes must be equal: give the dims one Dim (the same name)";
  return "narrow " + name +
         "'s range (Dim's min and max) so that the relation always holds, or "
         "drop its Dim";
}

// Each guard must hold over the whole declared range of its symbols: checked with each symbol
// moved alone to its bounds (and, for an unbounded max, to a large size), the others at their
// example values. A guard that fails there specialised a dynamic dim.
void check_constraints(const ShapeEnv& env, const Symbols& s) {
  const int n = env.num_symbols();
  std::vector<int64_t> hints(n);
  for (int k = 0; k < n; ++k) hints[k] = env.hint(k);
  for (int k = 0; k < n; ++k) {
    const SymbolRange& range = env.range(k);
    const int64_t far = std::min<int64_t>(range.max, std::max<int64_t>(hints[k], 1) << 10);
    for (int64_t value : {range.min, range.max == INT64_MAX ? far : range.max}) {
      std::vector<int64_t> at = hints;
      at[k] = value;
      for (const ShapeGuard& g : env.guards()) {
        const std::vector<std::string> names = names_in(g.str());
        if (std::find(names.begin(), names.end(), env.name(k)) == names.end()) continue;
        bool holds = true;
        try {
          holds = g.holds(at);
        } catch (const Error&) {
          continue;  // sizes this large overflow: not a relation the range can be checked on
        }
        if (holds) continue;
        KILN_FAIL("export_program: Constraints violated (", env.name(k),
                  ")! The traced code relies on ", g.str(), " (decided in ", g.origin,
                  "), which does not hold over the range [", range.min, ", ", range.max, "] of ",
                  env.name(k), " (", s.places[k], "): it fails at ", env.name(k), " = ", value,
                  ".\nSuggested fix: ", suggestion(g, env.name(k)));
      }
    }
  }
}

// The graph's captured tensors as the program's signature lists them: the module's parameters,
// then its buffers, each in the module's order and all of them (torch.export keeps the ones the
// forward does not read too, so that state_dict() is the module's), then the other tensors the
// code closed over, as constants (as parameters when they require grad).
std::vector<ExportedProgram::CapturedSpec> order_captured(
    compiler::Graph& graph, const OrderedDict<std::string, Tensor>& parameters,
    const OrderedDict<std::string, Tensor>& buffers) {
  using Kind = ExportedProgram::CapturedSpec::Kind;
  std::vector<int> order;
  std::vector<Tensor> tensors;
  std::vector<ExportedProgram::CapturedSpec> specs;
  std::vector<bool> taken(graph.captured.size(), false);
  auto add = [&](Kind kind, const std::string& name, const Tensor& t) {
    for (size_t i = 0; i < graph.captured.size(); ++i) {
      if (taken[i] || graph.captured_tensors[i].impl() != t.impl()) continue;
      taken[i] = true;
      order.push_back(graph.captured[i]);
      tensors.push_back(t);
      specs.push_back({kind, name});
      return;
    }
    compiler::Value v;
    v.kind = compiler::Value::Kind::Captured;
    v.sizes = SymShape(t.sizes().begin(), t.sizes().end());
    v.strides = SymShape(t.strides().begin(), t.strides().end());
    v.dtype = t.dtype();
    v.device = t.device();
    order.push_back(graph.add_value(std::move(v)));
    tensors.push_back(t);
    specs.push_back({kind, name});
  };
  for (const auto& p : parameters) add(Kind::Parameter, p.key(), p.value());
  for (const auto& b : buffers)
    if (b.value().defined()) add(Kind::Buffer, b.key(), b.value());
  int constants = 0;
  for (size_t i = 0; i < graph.captured.size(); ++i) {
    if (taken[i]) continue;
    const Tensor& t = graph.captured_tensors[i];
    const std::string index = std::to_string(constants++);
    order.push_back(graph.captured[i]);
    tensors.push_back(t);
    specs.push_back(
        t.requires_grad()
            ? ExportedProgram::CapturedSpec{Kind::Parameter, "_param" + index}
            : ExportedProgram::CapturedSpec{Kind::Constant, "_tensor_constant" + index});
  }
  graph.captured = std::move(order);
  graph.captured_tensors = std::move(tensors);
  for (size_t i = 0; i < graph.captured.size(); ++i)
    graph.values[graph.captured[i]].producer = static_cast<int>(i);
  return specs;
}

}  // namespace

ExportedProgram export_flat(compiler::FlatFn fn, const std::vector<Tensor>& example_inputs,
                            const DynamicShapes& dynamic_shapes,
                            const OrderedDict<std::string, Tensor>& parameters,
                            const OrderedDict<std::string, Tensor>& buffers) {
  KILN_CHECK(dynamic_shapes.size() <= example_inputs.size(), "export_program: dynamic_shapes has ",
             dynamic_shapes.size(), " entries but there are only ", example_inputs.size(),
             " inputs");
  auto env = std::make_shared<ShapeEnv>();
  Symbols symbols;
  compiler::Tracer tracer(*env);
  tracer.allow_control_flow(true);
  std::vector<compiler::Arg> args;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const Tensor& t = example_inputs[i];
    const std::string at = "inputs[" + std::to_string(i) + "]";
    KILN_CHECK(t.defined(), "export_program: ", at, " is an undefined tensor");
    KILN_CHECK(t.layout() == Layout::Strided, "export_program: ", at,
               " is a sparse tensor; programs take strided tensors");
    SymShape sizes(t.sizes().begin(), t.sizes().end());
    if (i < dynamic_shapes.size()) {
      for (const auto& [d0, dim] : dynamic_shapes[i]) {
        const int64_t d = d0 < 0 ? d0 + t.dim() : d0;
        KILN_CHECK(0 <= d && d < t.dim(), "export_program: dynamic_shapes[", i, "] names dim ", d0,
                   " of ", at, ", which has ", t.dim(), " dims");
        const std::string place = at + ".shape[" + std::to_string(d) + "]";
        sizes[d] = symbol_for(dim, t.size(d), place, *env, symbols);
      }
    }
    Tensor in = tracer.add_input(sizes, contiguous_strides(sizes), t.dtype(), t.device());
    if (t.requires_grad()) in.impl()->ensure_autograd_meta().requires_grad = true;
    args.emplace_back(std::move(in));
  }
  std::vector<Tensor> outs;
  try {
    outs = tracer.run([&] { return fn(args); });
  } catch (const compiler::GraphBreak& e) {
    KILN_FAIL("export_program: the function cannot be captured whole: ", e.what());
  } catch (const DataDependentError& e) {
    KILN_FAIL("export_program: the function cannot be captured whole: ", e.what());
  }
  args.clear();
  compiler::Graph graph = tracer.finish(outs);
  outs.clear();
  check_constraints(*env, symbols);
  compiler::simplify(graph);
  std::vector<ExportedProgram::CapturedSpec> specs = order_captured(graph, parameters, buffers);
  return ExportedProgram(std::move(env), std::move(symbols.values), std::move(graph),
                         std::move(specs));
}

}  // namespace export_detail

}  // namespace kiln

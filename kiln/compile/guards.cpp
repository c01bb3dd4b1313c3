#include "kiln/compile/guards.h"

#include <map>
#include <sstream>

#include "kiln/compile/dynamic.h"
#include "kiln/compile/tracer.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/core/dispatch.h"

namespace kiln::compiler {
namespace {

bool is_contiguous_layout(IntArrayRef sizes, IntArrayRef strides) {
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

TensorGuard static_guard(const Tensor& t, std::string where) {
  TensorGuard g;
  g.where = std::move(where);
  g.defined = t.defined();
  if (!t.defined()) return g;
  g.dtype = t.dtype();
  g.device = t.device();
  g.requires_grad = t.requires_grad();
  g.wrapped_number = t.impl()->is_wrapped_number();
  for (int64_t s : t.sizes()) g.dims.push_back({s, -1});
  g.contiguous = is_contiguous_layout(t.sizes(), t.strides());
  if (!g.contiguous) g.strides = t.strides().vec();
  return g;
}

std::string arg_kind_name(size_t kind) {
  static const char* kNames[] = {"Tensor", "std::vector<Tensor>", "int64_t", "double", "bool",
                                 "Scalar"};
  return kNames[kind];
}

// Numbers and flags (tensors are guarded by their metadata instead).
bool same_value(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (const auto* s = std::get_if<Scalar>(&a)) {
    const Scalar& o = std::get<Scalar>(b);
    return s->type() == o.type() && s->to<double>() == o.to<double>() &&
           s->to<int64_t>() == o.to<int64_t>();
  }
  if (const auto* i = std::get_if<int64_t>(&a)) return *i == std::get<int64_t>(b);
  if (const auto* d = std::get_if<double>(&a)) return *d == std::get<double>(b);
  if (const auto* f = std::get_if<bool>(&a)) return *f == std::get<bool>(b);
  return false;
}

std::string value_text(const Arg& a) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, Scalar>) {
          os << v.template to<double>();
        } else if constexpr (std::is_same_v<V, bool>) {
          os << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<V, int64_t> || std::is_same_v<V, double>) {
          os << v;
        }
      },
      a);
  return os.str();
}

// One tensor against its guard; `symbols` collects symbol values (-1: not seen yet).
bool check_tensor(const TensorGuard& g, const Tensor& t, std::vector<int64_t>& symbols,
                  std::string* why) {
  auto fail = [&](const std::string& what, const auto& expected, const auto& got) {
    if (why) {
      std::ostringstream os;
      os << g.where << what << ": expected " << expected << ", got " << got;
      *why = os.str();
    }
    return false;
  };
  if (g.defined != t.defined())
    return fail("", g.defined ? "a tensor" : "None", t.defined() ? "a tensor" : "None");
  if (!g.defined) return true;
  if (t.impl()->is_traced()) return fail("", "a tensor with data", "a traced tensor");
  if (t.dtype() != g.dtype) return fail(".dtype", g.dtype, t.dtype());
  if (!(t.device() == g.device)) return fail(".device", g.device, t.device());
  if (t.requires_grad() != g.requires_grad)
    return fail(".requires_grad", g.requires_grad, t.requires_grad());
  if (t.impl()->is_wrapped_number() != g.wrapped_number)
    return fail(" is a wrapped number", g.wrapped_number, t.impl()->is_wrapped_number());
  if (t.dim() != static_cast<int64_t>(g.dims.size())) return fail(".dim()", g.dims.size(), t.dim());
  const IntArrayRef sizes = t.sizes();
  for (size_t d = 0; d < g.dims.size(); ++d) {
    const DimGuard& dg = g.dims[d];
    // Messages are built only on failure: this runs on every call.
    auto what = [d] { return ".size(" + std::to_string(d) + ")"; };
    if (dg.symbol < 0) {
      if (sizes[d] != dg.size) return fail(what(), dg.size, sizes[d]);
    } else if (symbols[dg.symbol] < 0) {
      symbols[dg.symbol] = sizes[d];
    } else if (symbols[dg.symbol] != sizes[d]) {
      return fail(what(),
                  std::to_string(symbols[dg.symbol]) + " (the size it shares a symbol with)",
                  sizes[d]);
    }
  }
  const bool contiguous = is_contiguous_layout(sizes, t.strides());
  if (contiguous != g.contiguous) return fail(".is_contiguous()", g.contiguous, contiguous);
  if (!g.contiguous && t.strides().vec() != g.strides)
    return fail(".stride()", IntArrayRef(g.strides), t.strides());
  return true;
}

}  // namespace

std::vector<Tensor> flat_tensors(const std::vector<Arg>& args) {
  std::vector<Tensor> out;
  for (const Arg& a : args) {
    if (const auto* t = std::get_if<Tensor>(&a)) out.push_back(*t);
    if (const auto* l = std::get_if<std::vector<Tensor>>(&a))
      out.insert(out.end(), l->begin(), l->end());
  }
  return out;
}

std::vector<Arg> make_traced_args(const std::vector<Arg>& args, const DynamicPolicy& policy,
                                  ShapeEnv& env, Tracer& tracer, Guards& guards) {
  std::map<int64_t, int> duck;  // equal sizes share a symbol (marked dims keep their own)
  std::vector<SymInt> symbols;
  auto symbol_for = [&](int64_t size, const std::optional<DimMark>& mark) {
    if (!mark)
      if (auto it = duck.find(size); it != duck.end()) return it->second;
    symbols.push_back(env.create_symbol(
        size, "", mark ? SymbolRange{mark->min, mark->max} : SymbolRange{2, INT64_MAX}));
    const int id = env.num_symbols() - 1;
    if (!mark) duck[size] = id;
    return id;
  };
  auto traced = [&](const Tensor& t, std::string where) -> Tensor {
    const int index = static_cast<int>(guards.tensors.size());
    TensorGuard g = static_guard(t, std::move(where));
    if (!t.defined()) {
      guards.tensors.push_back(std::move(g));
      return t;
    }
    if (t.layout() != Layout::Strided)
      throw GraphBreak(g.where + " is a sparse tensor; captures take strided tensors");
    SymShape sizes;
    for (int64_t d = 0; d < t.dim(); ++d) {
      const int64_t size = t.size(d);
      std::optional<DimMark> mark = dim_mark(t, d);
      if (auto it = policy.marks.find({index, static_cast<int>(d)}); it != policy.marks.end())
        mark = it->second;
      const bool dynamic =
          mark
              ? mark->dynamic
              : size >= 2 &&
                    policy.dynamic.value_or(policy.changed.count({index, static_cast<int>(d)}) > 0);
      if (!dynamic) {
        sizes.push_back(size);
        continue;
      }
      g.dims[d].symbol = symbol_for(size, mark);
      sizes.push_back(symbols[g.dims[d].symbol]);
    }
    SymShape strides = contiguous_strides(sizes);
    if (!g.contiguous) strides = SymShape(g.strides.begin(), g.strides.end());
    guards.tensors.push_back(std::move(g));
    Tensor in = tracer.add_input(std::move(sizes), std::move(strides), t.dtype(), t.device());
    in.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
    // The function may ask; autograd itself does not run in a capture.
    if (t.requires_grad()) in.impl()->ensure_autograd_meta().requires_grad = true;
    return in;
  };

  std::vector<Arg> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string where = "args[" + std::to_string(i) + "]";
    ArgGuard ag;
    ag.kind = args[i].index();
    if (const auto* t = std::get_if<Tensor>(&args[i])) {
      ag.tensors.push_back(static_cast<int>(guards.tensors.size()));
      out.emplace_back(traced(*t, where));
    } else if (const auto* l = std::get_if<std::vector<Tensor>>(&args[i])) {
      std::vector<Tensor> list;
      for (size_t k = 0; k < l->size(); ++k) {
        ag.tensors.push_back(static_cast<int>(guards.tensors.size()));
        list.push_back(traced((*l)[k], where + "[" + std::to_string(k) + "]"));
      }
      out.emplace_back(std::move(list));
    } else {
      ag.value = args[i];
      out.push_back(args[i]);
    }
    guards.args.push_back(std::move(ag));
  }
  return out;
}

void finish_guards(Guards& guards, const Graph& graph, const ShapeEnv& env) {
  for (size_t i = 0; i < graph.captured_tensors.size(); ++i)
    guards.captured.push_back(
        static_guard(graph.captured_tensors[i], "captured[" + std::to_string(i) + "]"));
  guards.grad_mode = GradMode::is_enabled();
  guards.default_dtype = get_default_dtype();
  guards.env = &env;
}

bool Guards::check(const std::vector<Arg>& call, const std::vector<Tensor>& captured_now,
                   std::vector<int64_t>& symbols, std::string* why) const {
  auto fail = [&](std::string text) {
    if (why) *why = std::move(text);
    return false;
  };
  if (call.size() != args.size())
    return fail("expected " + std::to_string(args.size()) + " arguments, got " +
                std::to_string(call.size()));
  symbols.assign(static_cast<size_t>(env->num_symbols()), -1);
  for (size_t i = 0; i < call.size(); ++i) {
    const ArgGuard& ag = args[i];
    auto where = [i] { return "args[" + std::to_string(i) + "]"; };
    if (call[i].index() != ag.kind)
      return fail(where() + ": expected a " + arg_kind_name(ag.kind) + ", got a " +
                  arg_kind_name(call[i].index()));
    if (const auto* t = std::get_if<Tensor>(&call[i])) {
      if (!check_tensor(tensors[ag.tensors[0]], *t, symbols, why)) return false;
    } else if (const auto* l = std::get_if<std::vector<Tensor>>(&call[i])) {
      if (l->size() != ag.tensors.size())
        return fail(where() + ".size(): expected " + std::to_string(ag.tensors.size()) + ", got " +
                    std::to_string(l->size()));
      for (size_t k = 0; k < l->size(); ++k)
        if (!check_tensor(tensors[ag.tensors[k]], (*l)[k], symbols, why)) return false;
    } else if (!same_value(call[i], ag.value)) {
      return fail(where() + ": expected " + value_text(ag.value) + ", got " + value_text(call[i]));
    }
  }
  for (size_t k = 0; k < captured.size(); ++k)
    if (!check_tensor(captured[k], captured_now[k], symbols, why)) return false;
  for (const GradGuard& g : grads)
    if (g.leaf.grad().defined() != g.defined)
      return fail(g.where + ": expected " + (g.defined ? "a tensor" : "None") + ", got " +
                  (g.defined ? "None" : "a tensor"));
  if (GradMode::is_enabled() != grad_mode)
    return fail(std::string("grad mode: expected ") + (grad_mode ? "enabled" : "disabled") +
                ", got " + (grad_mode ? "disabled" : "enabled"));
  if (get_default_dtype() != default_dtype)
    return fail(detail::str_cat("default dtype: expected ", dtype_name(default_dtype), ", got ",
                                dtype_name(get_default_dtype())));
  return env->check(symbols, why);
}

std::string Guards::str() const {
  std::ostringstream os;
  auto tensor_line = [&](const TensorGuard& g) {
    os << g.where << ": ";
    if (!g.defined) {
      os << "None\n";
      return;
    }
    os << g.dtype << " on " << g.device << ", sizes [";
    for (size_t d = 0; d < g.dims.size(); ++d)
      os << (d ? ", " : "")
         << (g.dims[d].symbol < 0 ? std::to_string(g.dims[d].size) : env->name(g.dims[d].symbol));
    os << "], ";
    if (g.contiguous)
      os << "contiguous";
    else
      os << "strides " << IntArrayRef(g.strides);
    os << (g.requires_grad ? ", requires grad" : "") << "\n";
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].tensors.empty() && args[i].kind > 1)
      os << "args[" << i << "] == " << value_text(args[i].value) << "\n";
  }
  for (const TensorGuard& g : tensors) tensor_line(g);
  for (const TensorGuard& g : captured) tensor_line(g);
  for (const GradGuard& g : grads)
    os << g.where << ": " << (g.defined ? "a tensor" : "None") << "\n";
  os << "grad mode " << (grad_mode ? "enabled" : "disabled") << "\n";
  os << "default dtype " << dtype_name(default_dtype) << "\n";
  for (int s = 0; s < env->num_symbols(); ++s) {
    const SymbolRange& r = env->range(s);
    os << env->name(s) << " in [" << r.min << ", "
       << (r.max == INT64_MAX ? std::string("inf") : std::to_string(r.max)) << "]\n";
  }
  for (const ShapeGuard& g : env->guards()) os << g.str() << "  (" << g.origin << ")\n";
  return os.str();
}

}  // namespace kiln::compiler

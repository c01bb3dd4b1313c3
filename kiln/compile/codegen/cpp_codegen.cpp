#include "kiln/compile/codegen/cpp_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

using lowering::Expr;

bool is_16bit(ScalarType t) { return t == kFloat16 || t == kBFloat16; }
bool is_vector_float(ScalarType t) { return t == kFloat32 || is_16bit(t); }

// The C++ type values of dtype t are computed in (16-bit floats in float).
const char* compute_type(ScalarType t) {
  switch (t) {
    case kFloat64:
      return "double";
    case kFloat32:
    case kFloat16:
    case kBFloat16:
      return "float";
    case kInt64:
      return "int64_t";
    case kInt32:
      return "int32_t";
    case kInt16:
      return "int16_t";
    case kInt8:
      return "int8_t";
    case kUInt8:
      return "uint8_t";
    case kBool:
      return "bool";
    default:
      KILN_FAIL("compile: internal error: no C++ type for dtype ", t);
  }
}
// The C++ type elements of dtype t are stored as.
std::string storage_type(ScalarType t) {
  if (t == kFloat16) return "kiln::Half";
  if (t == kBFloat16) return "kiln::BFloat16";
  return compute_type(t);
}

std::string literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
}

// x (a value computed as `from`) converted to dtype `to`, as eager's casts convert: 16-bit
// floats round to their storage type.
std::string convert(const std::string& x, ScalarType from, ScalarType to) {
  if (from == to) return x;
  if (is_16bit(to))
    return "static_cast<float>(" + storage_type(to) + "(static_cast<float>(" + x + ")))";
  if (std::string(compute_type(from)) == compute_type(to)) return x;
  return "static_cast<" + std::string(compute_type(to)) + ">(" + x + ")";
}

// The same conversion on a float vector (only float-valued dtypes reach the vector path).
std::string convert_vec(const std::string& x, ScalarType to) {
  if (is_16bit(to)) return "round_to<" + storage_type(to) + ">(" + x + ")";
  return x;
}

std::string functor(const Expr& e) {
  std::string f = "kiln::scalar::" + e.functor + "{";
  for (size_t i = 0; i < e.params.size(); ++i) f += (i ? ", " : "") + literal(e.params[i]);
  return f + "}";
}

bool reads_inputs(const Expr& e) {
  if (e.kind == Expr::Kind::Input) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const auto& a) { return reads_inputs(*a); });
}

// Whether expression e can run on float vectors.
bool vectorisable(const Expr& e) {
  if (e.dtype != kFloat32 && !(e.kind == Expr::Kind::Cast && is_16bit(e.dtype))) return false;
  for (const auto& a : e.args)
    if (!vectorisable(*a)) return false;
  return true;
}

struct Emitter {
  const Graph& g;
  const FusedKernel& k;
  KernelSource& ks;
  std::ostringstream os;
  std::map<int, int> buffer_of;   // value -> buffer index
  std::vector<SymShape> strides;  // per buffer, over the coalesced dims
  SymShape sizes;                 // coalesced iteration shape
  std::vector<int> scalars;       // constants: scalar values even in the vector loop

  std::string param(const SymInt& s) {
    if (auto v = s.maybe_int()) return "int64_t{" + std::to_string(*v) + "}";
    for (size_t i = 0; i < ks.params.size(); ++i)
      if (ks.params[i].same_as(s)) return "p[" + std::to_string(i) + "]";
    ks.params.push_back(s);
    return "p[" + std::to_string(ks.params.size() - 1) + "]";
  }

  void plan() {
    for (int id : k.loads) {
      buffer_of[id] = static_cast<int>(ks.buffers.size());
      ks.buffers.push_back(id);
    }
    for (int id : k.stores) {
      buffer_of[id] = static_cast<int>(ks.buffers.size());
      ks.buffers.push_back(id);
    }
    std::vector<SymShape> full;
    for (int id : ks.buffers) {
      SymShape st;
      Value dense = g.values[id];
      if (std::find(k.stores.begin(), k.stores.end(), id) != k.stores.end()) dense.strides = {};
      KILN_CHECK(strides_over(dense, k.sizes, st), "compile: internal error: value %", id,
                 " does not broadcast to its kernel's shape");
      full.push_back(std::move(st));
    }
    // Size-1 dims go; a dim merges into the one before where every buffer is contiguous across.
    strides.assign(full.size(), {});
    for (size_t d = 0; d < k.sizes.size(); ++d) {
      const SymInt& n = k.sizes[d];
      if (n.maybe_int() == 1) continue;
      bool merge = !sizes.empty();
      for (size_t b = 0; b < full.size() && merge; ++b)
        merge = strides[b].back().same_as(full[b][d] * n);
      if (merge) {
        sizes.back() = sizes.back() * n;
        for (size_t b = 0; b < full.size(); ++b) strides[b].back() = full[b][d];
        continue;
      }
      sizes.push_back(n);
      for (size_t b = 0; b < full.size(); ++b) strides[b].push_back(full[b][d]);
    }
    if (sizes.empty()) {
      sizes.push_back(1);
      for (auto& s : strides) s.push_back(0);
    }
  }

  // The element of buffer b at inner index j.
  std::string at(int b) {
    const SymInt& s = strides[b].back();
    const std::string base = "b" + std::to_string(b) + "[o" + std::to_string(b);
    if (s.maybe_int() == 0) return base + "]";
    if (s.maybe_int() == 1) return base + " + j]";
    return base + " + j * " + param(s) + "]";
  }

  bool inner_unit_or_broadcast() {
    for (const auto& st : strides) {
      auto v = st.back().maybe_int();
      if (!v || (*v != 0 && *v != 1)) return false;
    }
    return true;
  }

  // The expression of one node's op, over its inputs' variables.
  std::string expr(const Expr& e, const Node& n, bool vec) {
    switch (e.kind) {
      case Expr::Kind::Input: {
        const int id = n.inputs.at(e.input);
        const ScalarType from = g.values[id].dtype;
        const std::string v = "v" + std::to_string(id);
        if (vec && std::find(scalars.begin(), scalars.end(), id) != scalars.end())
          return "splat(" + convert(v, from, e.dtype) + ")";
        return vec ? convert_vec(v, e.dtype) : convert(v, from, e.dtype);
      }
      case Expr::Kind::Constant:
        return vec ? "splat(static_cast<float>(" + literal(e.value) + "))"
                   : "static_cast<" + std::string(compute_type(e.dtype)) + ">(" + literal(e.value) +
                         ")";
      case Expr::Kind::Cast:
        return vec ? convert_vec(expr(*e.args[0], n, vec), e.dtype)
                   : convert(expr(*e.args[0], n, vec), e.args[0]->dtype, e.dtype);
      case Expr::Kind::Call: {
        std::string s = vec ? "vapply(" + functor(e) : functor(e) + "(";
        for (size_t i = 0; i < e.args.size(); ++i)
          s += (vec || i ? ", " : "") + expr(*e.args[i], n, vec);
        return s + ")";
      }
    }
    return "";
  }

  // Loads, the nodes' values and the stores of one element (or one vector of them).
  void body(bool vec, const char* indent) {
    for (int id : k.loads) {
      const int b = buffer_of[id];
      if (!vec) {
        os << indent << "const " << compute_type(g.values[id].dtype) << " v" << id << " = " << at(b)
           << ";\n";
      } else if (strides[b].back().maybe_int() == 0) {
        os << indent << "const fvec v" << id << " = splat(static_cast<float>(" << at(b) << "));\n";
      } else {
        os << indent << "const fvec v" << id << " = load_vec(&" << at(b) << ");\n";
      }
    }
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      const Node& n = g.nodes[k.nodes[i]];
      const int id = n.outputs[0];
      const ScalarType dt = g.values[id].dtype;
      const bool scalar = std::find(scalars.begin(), scalars.end(), id) != scalars.end();
      const std::string e = expr(*k.exprs[i], n, vec && !scalar);
      if (vec && !scalar)
        os << indent << "const fvec v" << id << " = " << convert_vec(e, dt) << ";\n";
      else
        os << indent << "const " << compute_type(dt) << " v" << id << " = "
           << convert(e, k.exprs[i]->dtype, dt) << ";\n";
    }
    for (int id : k.stores) {
      const int b = buffer_of[id];
      if (vec)
        os << indent << "store_vec(&" << at(b) << ", v" << id << ");\n";
      else
        os << indent << at(b) << " = static_cast<" << storage_type(g.values[id].dtype) << ">(v"
           << id << ");\n";
    }
  }

  bool can_vectorise() {
    if (!inner_unit_or_broadcast()) return false;
    for (int id : ks.buffers)
      if (!is_vector_float(g.values[id].dtype)) return false;
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (!reads_inputs(*k.exprs[i])) continue;  // a constant, splat where it is read
      if (!vectorisable(*k.exprs[i])) return false;
      if (!is_vector_float(g.values[g.nodes[k.nodes[i]].outputs[0]].dtype)) return false;
    }
    return true;
  }

  void emit(int index) {
    plan();
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (!reads_inputs(*k.exprs[i])) scalars.push_back(g.nodes[k.nodes[i]].outputs[0]);
    const std::string name = "k" + std::to_string(index);
    ks.symbol = "kiln_kernel_" + std::to_string(index);
    ks.vectorised = can_vectorise();
    const size_t rank = sizes.size();
    os << "\n// kernel " << index << ":";
    for (int ni : k.nodes) os << " %" << g.nodes[ni].outputs[0] << " = " << g.nodes[ni].op->name;
    os << "\nnamespace {\nvoid " << name << "(void* ctx, int64_t begin, int64_t end) {\n";
    os << "  const Context& c = *static_cast<const Context*>(ctx);\n";
    os << "  [[maybe_unused]] const int64_t* p = c.p;\n";
    for (size_t b = 0; b < ks.buffers.size(); ++b) {
      const std::string t = storage_type(g.values[ks.buffers[b]].dtype);
      const bool load = b < k.loads.size();
      os << "  " << (load ? "const " : "") << t << "* __restrict b" << b << " = reinterpret_cast<"
         << (load ? "const " : "") << t << "*>(c.b[" << b << "]);\n";
    }
    if (rank == 1) {
      os << "  {\n    const int64_t j0 = begin, j1 = end;\n";
      for (size_t b = 0; b < ks.buffers.size(); ++b) os << "    const int64_t o" << b << " = 0;\n";
    } else {
      os << "  const int64_t n = " << param(sizes.back()) << ";\n";
      os << "  for (int64_t row = begin; row < end; ++row) {\n";
      os << "    const int64_t j0 = 0, j1 = n;\n    int64_t r = row;\n";
      for (size_t b = 0; b < ks.buffers.size(); ++b) os << "    int64_t o" << b << " = 0;\n";
      for (size_t d = rank - 1; d-- > 0;) {
        os << "    {\n      const int64_t i = " << (d > 0 ? "r % " + param(sizes[d]) : "r")
           << ";\n";
        if (d > 0) os << "      r /= " << param(sizes[d]) << ";\n";
        for (size_t b = 0; b < ks.buffers.size(); ++b)
          if (strides[b][d].maybe_int() != 0)
            os << "      o" << b << " += i * " << param(strides[b][d]) << ";\n";
        os << "    }\n";
      }
    }
    os << "    int64_t j = j0;\n";
    if (ks.vectorised) {
      os << "    for (; j + kVec <= j1; j += kVec) {\n";
      body(true, "      ");
      os << "    }\n";
    }
    os << "    for (; j < j1; ++j) {\n";
    body(false, "      ");
    os << "    }\n  }\n}\n}  // namespace\n";
    std::string rows = "int64_t{1}";
    for (size_t d = 0; d + (rank == 1 ? 0 : 1) < rank; ++d) rows += " * " + param(sizes[d]);
    os << "extern \"C\" KILN_KERNEL_EXPORT void " << ks.symbol
       << "(char* const* b, const int64_t* p, const KilnKernelRuntime* rt) {\n"
       << "  const Context c{b, p};\n"
       << "  const int64_t rows = " << rows << ";\n";
    if (rank == 1)
      os << "  rt->parallel_for(0, rows, 32768, " << name << ", const_cast<Context*>(&c));\n}\n";
    else
      os << "  const int64_t n = " << param(sizes.back()) << ";\n"
         << "  rt->parallel_for(0, rows, n > 0 ? (32768 + n - 1) / n : 1, " << name
         << ", const_cast<Context*>(&c));\n}\n";
  }
};

}  // namespace

GeneratedUnit generate_cpp(const Graph& graph, const Schedule& schedule, cpu::CpuCapability level) {
  const int vec_bits = level == cpu::CpuCapability::Avx2 ? 256 : 512;
  GeneratedUnit u;
  std::ostringstream os;
  os << "// Generated by kiln::compile (codegen backend). Kernels of one graph:\n";
  for (const std::string& line : [&] {
         std::vector<std::string> lines;
         std::istringstream in(schedule.str(graph));
         for (std::string l; std::getline(in, l);) lines.push_back(l);
         return lines;
       }())
    os << "//   " << line << "\n";
  // The level's options (KILN_VEC_BITS, target flags) come from the command line (kernel_cache.h).
  os << "// For " << cpu::to_string(level) << " (" << vec_bits << "-bit vectors).\n"
     << "#include \"kiln/compile/codegen/kernel_prelude.h\"\n"
     << "namespace {\nstruct Context {\n  char* const* b;\n  const int64_t* p;\n};\n}  // "
        "namespace\n";
  std::string kernels;
  for (size_t i = 0; i < schedule.kernels.size(); ++i) {
    KernelSource ks;
    Emitter e{graph, schedule.kernels[i], ks, {}, {}, {}, {}};
    e.emit(static_cast<int>(i));
    kernels += e.os.str();
    u.kernels.push_back(std::move(ks));
  }
  u.source = os.str() + kernels;
  return u;
}

}  // namespace kiln::compiler

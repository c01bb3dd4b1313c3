#include "kiln/compile/codegen/cpp_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "kiln/compile/codegen/c_types.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

using lowering::Expr;

bool is_vector_float(ScalarType t) { return t == kFloat32 || is_16bit(t); }

std::string literal(double v) {
  if (std::isnan(v)) return "__builtin_nan(\"\")";
  if (std::isinf(v)) return v > 0 ? "__builtin_inf()" : "(-__builtin_inf())";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
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

using RowKind = RowReduction::Kind;

// Elements per block of a reduction of every element (a multiple of every vector width), and
// columns per block of a reduction over leading or middle dims.
constexpr int64_t kReduceBlock = 16384;
constexpr int64_t kColumnBlock = 256;
constexpr int64_t kColumnRows = 32;  // rows summed in float lanes before a double accumulator

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

struct Emitter {
  Emitter(const Graph& graph, const FusedKernel& kernel, KernelSource& source)
      : g(graph), k(kernel), ks(source) {}

  const Graph& g;
  const FusedKernel& k;
  KernelSource& ks;
  std::ostringstream os;
  std::map<int, int> buffer_of;   // value -> buffer index
  SymShape shape;                 // the kernel's shape in loop order (RowReduction::order)
  std::vector<SymShape> strides;  // per buffer, over the coalesced dims
  SymShape sizes;                 // coalesced iteration shape: outer dims, then inner dims
  size_t inner_dims = 1;          // how many of `sizes` one row (the innermost loop) spans
  // Rows of a sum, mean, max or min over several coalesced dims: the dims before the innermost
  // one are segments of the row, looped over around the inner loop (inner_dims is then 1).
  size_t segment_dims = 0;
  std::vector<int> scalars;     // values held as scalars even in the vector loop
  int anchor = -1;              // the row reduction's position in k.nodes
  size_t kept_outer = 0;        // columns: how many of `sizes` the kept outer dims are
  bool stores_in_pass = false;  // the one pass of a whole or column reduction stores too

  std::string param(const SymInt& s) {
    if (auto v = s.maybe_int()) return "int64_t{" + std::to_string(*v) + "}";
    for (size_t i = 0; i < ks.params.size(); ++i)
      if (ks.params[i].same_as(s)) return "p[" + std::to_string(i) + "]";
    ks.params.push_back(s);
    return "p[" + std::to_string(ks.params.size() - 1) + "]";
  }

  bool is_row_output(int id) const { return k.row && contains(k.row->row_outputs, id); }
  // Buffers with one element per row: the row outputs and an nll gather's targets.
  bool is_per_row(int id) const {
    return is_row_output(id) || (k.row && k.row->nll && k.row->nll->target == id);
  }

  // Strides of buffer `id` over the kernel's full shape, in loop order.
  SymShape full_strides(int id, size_t split) {
    SymShape st;
    Value dense = g.values[id];
    if (is_per_row(id)) {  // dense over the kept dims (rows, or columns), in order
      st.assign(shape.size(), SymInt(0));
      SymInt s = 1;
      for (size_t d = shape.size(); d-- > 0;) {
        const bool reduced = k.row->columns
                                 ? d >= static_cast<size_t>(k.row->kept_outer_dims) && d < split
                                 : d >= split;
        if (reduced) continue;
        st[d] = shape[d].maybe_int() == 1 ? SymInt(0) : s;
        s = s * shape[d];
      }
      return st;
    }
    if (contains(k.stores, id)) dense.strides = {};
    KILN_CHECK(strides_over(dense, k.sizes, st), "compile: internal error: value %", id,
               " does not broadcast to its kernel's shape");
    if (!k.row || k.row->order.empty()) return st;
    SymShape ordered;
    for (int d : k.row->order) ordered.push_back(st[d]);
    return ordered;
  }

  // Coalesces dims [begin, end) of the full shape into `sizes`/`strides`: size-1 dims go, and a
  // dim merges into the one before where every buffer is contiguous across them. Returns how
  // many dims it added (at least one).
  size_t coalesce(const std::vector<SymShape>& full, size_t begin, size_t end) {
    const size_t before = sizes.size();
    for (size_t d = begin; d < end; ++d) {
      const SymInt& n = shape[d];
      if (n.maybe_int() == 1) continue;
      bool merge = sizes.size() > before;
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
    if (sizes.size() == before) {
      sizes.push_back(1);
      for (auto& st : strides) st.push_back(0);
    }
    return sizes.size() - before;
  }

  void plan() {
    for (const auto* list : {&k.loads, &k.stores})
      for (int id : *list) {
        buffer_of[id] = static_cast<int>(ks.buffers.size());
        ks.buffers.push_back(id);
      }
    shape = k.sizes;
    if (k.row && !k.row->order.empty())
      for (size_t d = 0; d < shape.size(); ++d) shape[d] = k.sizes[k.row->order[d]];
    const size_t rank = shape.size();
    // The first dim after the reduced ones (columns), or the first reduced one (rows).
    const size_t split = !k.row           ? (rank > 0 ? rank - 1 : 0)
                         : k.row->columns ? k.row->kept_outer_dims + k.row->reduced_dims
                                          : rank - k.row->reduced_dims;
    std::vector<SymShape> full;
    for (int id : ks.buffers) full.push_back(full_strides(id, split));
    strides.assign(full.size(), {});
    if (!k.row) {
      coalesce(full, 0, rank);
      inner_dims = 1;
    } else if (k.row->columns) {  // kept outer dims, reduced dims, kept inner dims
      kept_outer = coalesce(full, 0, k.row->kept_outer_dims);
      coalesce(full, k.row->kept_outer_dims, split);
      inner_dims = coalesce(full, split, rank);
    } else {
      coalesce(full, 0, split);
      inner_dims = coalesce(full, split, rank);
      if (inner_dims > 1 && segmented()) {
        segment_dims = inner_dims - 1;
        inner_dims = 1;
      }
    }
  }

  // Whether the rows, over several dims, are folded (and stored) segment by segment: those of a
  // sum, mean, max or min, whose statistic is one pass over the row.
  bool segmented() const { return !split_row() && k.row->is_fold(); }
  // The dims of `sizes` one row spans.
  size_t row_dims() const { return inner_dims + segment_dims; }

  bool row_loop() const { return k.row || sizes.size() > 1; }
  // A sum, mean, max or min of every element: blocks of the one row go to the threads, each
  // block's statistic to a partial, and the partials are combined in block order after them,
  // so that the result does not depend on the number of threads.
  bool split_row() const {
    return k.row && k.row->full_output < 0 && k.row->reduced_dims == static_cast<int>(shape.size());
  }
  std::string split_fold() const {
    return k.row->kind == RowKind::Max ? "max" : k.row->kind == RowKind::Min ? "min" : "sum";
  }

  // The element of buffer b at row offset o<b> and inner index j.
  std::string at(int b) {
    std::string index = "o" + std::to_string(b);
    if (inner_dims == 1) {
      const SymInt& s = strides[b].back();
      if (s.maybe_int() == 1) index += " + j";
      if (!s.maybe_int() || (*s.maybe_int() != 0 && *s.maybe_int() != 1))
        index += " + j * " + param(s);
    } else {  // several inner dims: j decomposed, innermost first
      std::string div;
      for (size_t d = sizes.size(); d-- > sizes.size() - inner_dims;) {
        const std::string q = div.empty() ? "j" : "(j / (" + div + "))";
        if (strides[b][d].maybe_int() != 0)
          index += " + " + q + " % " + param(sizes[d]) + " * " + param(strides[b][d]);
        div += (div.empty() ? "" : " * ") + param(sizes[d]);
      }
    }
    return "b" + std::to_string(b) + "[" + index + "]";
  }

  // o<b>: each buffer's offset of row r (a variable the caller declared), over the outer dims.
  void row_offsets(size_t outer, const std::string& indent) {
    for (size_t b = 0; b < ks.buffers.size(); ++b) os << indent << "int64_t o" << b << " = 0;\n";
    add_offsets(0, outer, indent);
  }
  // Adds to o<b> the offsets of index r (consumed) over dims [first, end) of `sizes`.
  void add_offsets(size_t first, size_t end, const std::string& indent) {
    for (size_t d = end; d-- > first;) {
      const bool last = d == first;
      os << indent << "{\n"
         << indent << "  const int64_t i = " << (last ? "r" : "r % " + param(sizes[d])) << ";\n";
      if (!last) os << indent << "  r /= " << param(sizes[d]) << ";\n";
      for (size_t b = 0; b < ks.buffers.size(); ++b)
        if (strides[b][d].maybe_int() != 0)
          os << indent << "  o" << b << " += i * " << param(strides[b][d]) << ";\n";
      os << indent << "}\n";
    }
  }

  std::string size_of(size_t first, size_t end) {
    std::string n = "int64_t{1}";
    for (size_t d = first; d < end; ++d) n += " * " + param(sizes[d]);
    return n;
  }

  std::string inner_size() {
    std::string n = "int64_t{1}";
    for (size_t d = sizes.size() - inner_dims; d < sizes.size(); ++d) n += " * " + param(sizes[d]);
    return n;
  }

  bool inner_unit_or_broadcast() {
    if (inner_dims != 1) return false;
    for (const auto& st : strides) {
      auto v = st.back().maybe_int();
      if (!v || (*v != 0 && *v != 1)) return false;
    }
    return true;
  }

  std::string var(int id, ScalarType to, bool vec) {
    const std::string v = "v" + std::to_string(id);
    if (vec && contains(scalars, id)) return "splat(" + convert(v, g.values[id].dtype, to) + ")";
    return vec ? convert_vec(v, to) : convert(v, g.values[id].dtype, to);
  }

  // The expression of one node's op, over its inputs' variables.
  std::string expr(const Expr& e, const Node& n, bool vec) {
    switch (e.kind) {
      case Expr::Kind::Input:
        return var(n.inputs.at(e.input), e.dtype, vec);
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

  // ---- the row reduction ----

  const Node& row_node() const { return g.nodes[k.row->node]; }
  // The dtype the reduction computes in: float for float32 and the 16-bit floats.
  ScalarType row_compute() const {
    return g.values[row_node().inputs[0]].dtype == kFloat64 ? kFloat64 : kFloat32;
  }
  std::string row_input(bool vec) { return var(row_node().inputs[0], row_compute(), vec); }
  // Softmax over float rows keeps exp(x - m) from its sum's pass for the last one (in a
  // per-thread buffer), instead of computing it twice.
  bool keeps_exp() const { return k.row->kind == RowKind::Softmax && row_compute() == kFloat32; }
  std::string stat(const char* name) { return std::string(name) + std::to_string(k.row->node); }

  // The full-shaped result of the reduction for one element (or vector), from its statistics.
  std::string row_result(bool vec) {
    const Node& n = row_node();
    const std::string x = row_input(vec), T = compute_type(row_compute());
    auto s = [&](const std::string& name) { return vec ? "splat(" + name + ")" : name; };
    auto affine = [&](std::string y, size_t w, size_t b) {
      if (w < n.inputs.size() && n.inputs[w] >= 0)
        y = "(" + y + ") * " + var(n.inputs[w], row_compute(), vec);
      if (b < n.inputs.size() && n.inputs[b] >= 0)
        y = "(" + y + ") + " + var(n.inputs[b], row_compute(), vec);
      return y;
    };
    switch (k.row->kind) {
      case RowKind::Softmax:  // exp(x - m) was kept by the sum's pass (float rows)
        if (keeps_exp())
          return (vec ? "load_vec(keep + j)" : "keep[j]") + std::string(" * ") + s(stat("inv"));
        return (vec ? "exp_vec(" : "std::exp(") + x + " - " + s(stat("m")) + ") * " +
               s(stat("inv"));
      case RowKind::LogSoftmax:
        return x + " - " + s(stat("lse"));
      case RowKind::LayerNorm:
        return affine("(" + x + " - " + s(stat("mean")) + ") * " + s(stat("rstd")), 1, 2);
      case RowKind::RmsNorm:
        return affine(x + " * " + s(stat("rstd")), 1, 99);
      default:
        return "";
    }
  }

  // Loads and nodes of one element (or vector): the producers only (a pass computing a
  // statistic; with stores_in_pass, their stores too), or every node with the stores (the last
  // pass).
  void body(bool vec, const std::string& indent, bool last_pass) {
    for (int id : k.loads) {
      if (is_per_row(id)) continue;  // read once per row where needed
      const int b = buffer_of[id];
      if (!vec)
        os << indent << "const " << compute_type(g.values[id].dtype) << " v" << id << " = " << at(b)
           << ";\n";
      else if (strides[b].back().maybe_int() == 0)
        os << indent << "const fvec v" << id << " = splat(static_cast<float>(" << at(b) << "));\n";
      else
        os << indent << "prefetch_read<64>(&" << at(b) << ");\n"
           << indent << "const fvec v" << id << " = load_vec(&" << at(b) << ");\n";
    }
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (!last_pass && anchor >= 0 && static_cast<int>(i) >= anchor) break;
      const Node& n = g.nodes[k.nodes[i]];
      if (!k.exprs[i]) {  // the row reduction: its full-shaped result, if it has one
        if (k.nodes[i] != k.row->node || k.row->full_output < 0) continue;
        const int id = k.row->full_output;
        const ScalarType dt = g.values[id].dtype;
        const std::string e = row_result(vec);
        if (vec)
          os << indent << "const fvec v" << id << " = " << convert_vec(e, dt) << ";\n";
        else
          os << indent << "const " << compute_type(dt) << " v" << id << " = "
             << convert(e, row_compute(), dt) << ";\n";
        continue;
      }
      const int id = n.outputs[0];
      const ScalarType dt = g.values[id].dtype;
      const bool scalar = contains(scalars, id);
      const std::string e = expr(*k.exprs[i], n, vec && !scalar);
      if (vec && !scalar)
        os << indent << "const fvec v" << id << " = " << convert_vec(e, dt) << ";\n";
      else
        os << indent << "const " << compute_type(dt) << " v" << id << " = "
           << convert(e, k.exprs[i]->dtype, dt) << ";\n";
    }
    if (!last_pass && !stores_in_pass) return;
    for (int id : k.stores) {
      if (is_row_output(id)) continue;  // stored once per row
      const int b = buffer_of[id];
      if (vec)
        os << indent << "prefetch_write<64>(&" << at(b) << ");\n"
           << indent << "store_vec(&" << at(b) << ", v" << id << ");\n";
      else
        os << indent << at(b) << " = static_cast<" << storage_type(g.values[id].dtype) << ">(v"
           << id << ");\n";
    }
  }

  // One pass over the row folding f(x) into a statistic ("sum", "max" or "min"); with `keep`,
  // f of each element is also stored in the row's scratch buffer. Vectors go through four
  // independent accumulators, so that the row is not one chain of dependent adds or blends.
  void pass(const std::string& result, const char* fold, const std::string& scalar_f,
            const std::string& vector_f, bool keep = false) {
    const bool sum = std::string(fold) == "sum";
    const std::string T = compute_type(row_compute());
    const std::string init = sum ? "0" : std::string(fold) == "max" ? "-INFINITY" : "INFINITY";
    const char* cmp = std::string(fold) == "max" ? " > " : " < ";
    // max/min: a compare and a blend per vector, with NaNs noted apart (a NaN is never selected,
    // so the row's result becomes NaN at the end), as the eager kernels' extremes propagate it.
    auto fold_vec = [&](const std::string& acc, const std::string& f) {
      if (sum) return acc + " += " + f + ";\n";
      std::string u = acc.substr(acc.find('['));
      return acc + " = " + f + cmp + acc + " ? " + f + " : " + acc + ";\n" + std::string(14, ' ') +
             "nan" + u + " |= " + f + " != " + f + ";\n";
    };
    os << "    " << (sum ? "double" : T) << " " << result << " = " << init << ";\n";
    open_segments();
    os << "    {\n      int64_t j = j0;\n";
    if (ks.vectorised) {
      os << "      fvec acc[4] = {splat(" << init << "), splat(" << init << "), splat(" << init
         << "), splat(" << init << ")};\n";
      if (!sum) os << "      ivec nan[4] = {};\n";
      os << ""
         << "      for (; j + 4 * kVec <= j1; j += 4 * kVec) {\n"
         << "        for (int u = 0; u < 4; ++u) {\n"
         << "          const int64_t ju = j + u * kVec;\n"
         << "          {\n            const int64_t j = ju;\n";
      body(true, "            ", false);
      os << "            const fvec f = " << vector_f << ";\n";
      if (keep) os << "            store_vec(keep + j, f);\n";
      os << "            " << fold_vec("acc[u]", "f") << "          }\n        }\n      }\n"
         << "      for (; j + kVec <= j1; j += kVec) {\n";
      body(true, "        ", false);
      os << "        const fvec f = " << vector_f << ";\n";
      if (keep) os << "        store_vec(keep + j, f);\n";
      os << "        " << fold_vec("acc[0]", "f") << "      }\n"
         << "      for (int u = 1; u < 4; ++u) {\n        " << fold_vec("acc[0]", "acc[u]")
         << (sum ? "" : "        nan[0] |= nan[u];\n") << "      }\n";
      if (sum)
        os << "      " << result << " += hsum(acc[0]);\n";
      else
        os << "      for (int l = 0; l < kVec; ++l) {\n        if (acc[0][l]" << cmp << result
           << ") " << result << " = acc[0][l];\n        if (nan[0][l]) " << result
           << " = NAN;\n      }\n";
    }
    os << "      for (; j < j1; ++j) {\n";
    body(false, "        ", false);
    os << "        const " << T << " f = " << scalar_f << ";\n";
    if (keep) os << "        keep[j] = f;\n";
    if (sum)
      os << "        " << result << " += f;\n";
    else
      os << "        if (f != f || f" << cmp << result << ") " << result << " = f;\n";
    os << "      }\n    }\n";
    close_segments();
  }

  // With segment_dims, what follows folds one segment of the row at a time, the buffers'
  // offsets o<b> moved to the segment's start (shadowing the row's).
  void open_segments() {
    if (segment_dims == 0) return;
    const size_t first = sizes.size() - row_dims();
    os << "    {\n";
    for (size_t b = 0; b < ks.buffers.size(); ++b)
      os << "      const int64_t row_o" << b << " = o" << b << ";\n";
    os << "      for (int64_t segment = 0; segment < " << size_of(first, first + segment_dims)
       << "; ++segment) {\n        int64_t r = segment;\n";
    for (size_t b = 0; b < ks.buffers.size(); ++b)
      os << "        int64_t o" << b << " = row_o" << b << ";\n";
    add_offsets(first, first + segment_dims, "        ");
  }
  void close_segments() {
    if (segment_dims > 0) os << "      }\n    }\n";
  }

  // The passes computing the row's statistics, and its row outputs.
  void statistics() {
    const RowReduction& r = *k.row;
    const std::string T = compute_type(row_compute());
    const std::string x = row_input(false), xv = ks.vectorised ? row_input(true) : "";
    auto define = [&](const std::string& name, const std::string& value) {
      os << "    const " << T << " " << name << " = static_cast<" << T << ">(" << value << ");\n";
    };
    switch (r.kind) {
      case RowKind::Sum:
      case RowKind::Mean:
        pass(stat("acc"), "sum", x, xv);
        define(stat("stat"),
               r.kind == RowKind::Mean ? stat("acc") + " / static_cast<double>(n)" : stat("acc"));
        break;
      case RowKind::Max:
      case RowKind::Min:
        pass(stat("stat"), r.kind == RowKind::Max ? "max" : "min", x, xv);
        break;
      case RowKind::Softmax:
      case RowKind::LogSoftmax:
        pass(stat("m"), "max", x, xv);
        if (keeps_exp()) os << "    float* keep = row_scratch(n);\n";
        pass(stat("acc"), "sum", "std::exp(" + x + " - " + stat("m") + ")",
             "exp_vec(" + xv + " - splat(" + stat("m") + "))", keeps_exp());
        define(stat("inv"), "1.0 / " + stat("acc"));
        define(stat("lse"), stat("m") + " + std::log(" + stat("acc") + ")");
        break;
      case RowKind::LayerNorm:
        pass(stat("acc"), "sum", x, xv);
        define(stat("mean"), stat("acc") + " / static_cast<double>(n)");
        pass(stat("sq"), "sum",
             "(" + x + " - " + stat("mean") + ") * (" + x + " - " + stat("mean") + ")",
             "(" + xv + " - splat(" + stat("mean") + ")) * (" + xv + " - splat(" + stat("mean") +
                 "))");
        define(stat("rstd"), "1.0 / std::sqrt(" + stat("sq") + " / static_cast<double>(n) + " +
                                 literal(r.eps) + ")");
        break;
      case RowKind::RmsNorm:
        pass(stat("sq"), "sum", x + " * " + x, xv + " * " + xv);
        define(stat("rstd"), "1.0 / std::sqrt(" + stat("sq") + " / static_cast<double>(n) + " +
                                 literal(r.eps) + ")");
        break;
    }
    // The row outputs, as the values their readers in this kernel use.
    std::vector<std::string> names;
    if (r.kind == RowKind::LayerNorm)
      names = {stat("mean"), stat("rstd")};
    else if (r.kind == RowKind::RmsNorm)
      names = {stat("rstd")};
    else
      names = {stat("stat")};
    for (size_t i = 0; i < r.row_outputs.size() && i < names.size(); ++i) {
      const int id = r.row_outputs[i];
      const ScalarType dt = g.values[id].dtype;
      os << "    const " << compute_type(dt) << " v" << id << " = "
         << convert(names[i], row_compute(), dt) << ";\n";
    }
  }

  // An nll_loss gather: the row's log-probability at its target's class, from the producers at
  // that one index, into the per-row loss and weight buffers (as eager's nll_loss computes them).
  void nll_gather() {
    const RowReduction::Nll& nll = *k.row->nll;
    const int t = buffer_of.at(nll.target);
    const ScalarType dt = g.values[k.row->full_output].dtype;
    os << "    {\n      const int64_t t = static_cast<int64_t>(b" << t << "[o" << t << "]);\n"
       << "      double loss = 0, weight = 0;\n"
       << "      if (t != int64_t{" << nll.ignore_index << "}) {\n"
       << "        const int64_t j = t;\n";
    body(false, "        ", false);
    os << "        const " << compute_type(dt)
       << " logp = " << convert(row_result(false), row_compute(), dt) << ";\n"
       << "        weight = "
       << (nll.weight >= 0 ? "static_cast<double>(v" + std::to_string(nll.weight) + ")" : "1.0")
       << ";\n        loss = -weight * static_cast<double>(logp);\n      }\n"
       << "      nll_loss[row] = loss;\n      nll_weight[row] = weight;\n    }\n";
  }

  bool can_vectorise() {
    if (!inner_unit_or_broadcast()) return false;
    for (int id : ks.buffers)
      if (!is_vector_float(g.values[id].dtype) && !is_per_row(id)) return false;
    if (k.row && row_compute() != kFloat32) return false;
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (!k.exprs[i]) continue;                 // the row reduction, its nll gather
      if (!reads_inputs(*k.exprs[i])) continue;  // a constant, splat where it is read
      if (!vectorisable(*k.exprs[i])) return false;
      if (!is_vector_float(g.values[g.nodes[k.nodes[i]].outputs[0]].dtype)) return false;
    }
    return true;
  }

  // A reduction over leading or middle dims: threads take blocks of columns (the kept dims after
  // the reduced ones, inner and contiguous in the result) of each index of the kept outer dims.
  // Each block folds the rows in order into lanes of the compute type, vectorised along the
  // columns; sums add the lanes into double accumulators every kColumnRows rows, as eager's column
  // reductions do.
  void emit_columns(const std::string& name) {
    const std::string fold = split_fold(), T = compute_type(row_compute());
    const bool sum = fold == "sum";
    const std::string init = sum ? "0" : fold == "max" ? "-INFINITY" : "INFINITY";
    const std::string better = fold == "max" ? " > " : " < ";
    const size_t outer = sizes.size() - inner_dims;  // the kept outer and the reduced dims
    // Items are (index q of the kept outer dims, column); a block stays within one q.
    os << "  const int64_t n = " << inner_size() << ";\n"
       << "  const int64_t n_rows = " << size_of(kept_outer, outer) << ";\n"
       << "  for (int64_t c = begin; c < end;) {\n"
       << "    const int64_t q = c / n, c0 = c % n;\n"
       << "    int64_t c1 = c0 + kColumnBlock < n ? c0 + kColumnBlock : n;\n"
       << "    if (c1 - c0 > end - c) c1 = c0 + (end - c);\n"
       << "    c += c1 - c0;\n"
       << "    " << T << " lane[kColumnBlock];\n"
       << "    [[maybe_unused]] double acc[kColumnBlock] = {};\n"
       << "    for (int64_t i = 0; i < c1 - c0; ++i) lane[i] = " << init << ";\n"
       << "    for (int64_t row0 = 0; row0 < n_rows; row0 += kColumnRows) {\n"
       << "      const int64_t row1 = row0 + kColumnRows < n_rows ? row0 + kColumnRows : n_rows;\n"
       << "      for (int64_t row = row0; row < row1; ++row) {\n        int64_t r = q;\n";
    row_offsets(kept_outer, "        ");
    os << "        r = row;\n";
    add_offsets(kept_outer, outer, "        ");
    os << "        int64_t j = c0;\n";
    stores_in_pass = true;
    if (ks.vectorised) {
      os << "        for (; j + kVec <= c1; j += kVec) {\n";
      body(true, "          ", false);
      os << "          const fvec f = " << row_input(true) << ";\n"
         << "          const fvec a = load_vec(&lane[j - c0]);\n"
         << "          store_vec(&lane[j - c0], "
         << (sum ? "a + f" : "(f != f) | (f" + better + "a) ? f : a") << ");\n        }\n";
    }
    os << "        for (; j < c1; ++j) {\n";
    body(false, "          ", false);
    os << "          const " << T << " f = " << row_input(false) << ";\n"
       << (sum ? "          lane[j - c0] += f;\n"
               : "          if (f != f || f" + better + "lane[j - c0]) lane[j - c0] = f;\n")
       << "        }\n      }\n";
    if (sum)
      os << "      for (int64_t i = 0; i < c1 - c0; ++i) {\n        acc[i] += lane[i];\n"
         << "        lane[i] = 0;\n      }\n";
    os << "    }\n";
    for (int id : k.stores) {
      if (!is_row_output(id)) continue;
      const ScalarType dt = g.values[id].dtype;
      std::string v = sum ? "acc[i]" : "lane[i]";
      if (k.row->kind == RowKind::Mean) v += " / static_cast<double>(n_rows)";
      os << "    for (int64_t i = 0; i < c1 - c0; ++i)\n      b" << buffer_of[id]
         << "[q * n + c0 + i] = static_cast<" << storage_type(dt) << ">(static_cast<"
         << compute_type(dt) << ">(" << v << "));\n";
    }
    os << "  }\n}\n}  // namespace\n"
       << "extern \"C\" KILN_KERNEL_EXPORT void " << ks.symbol
       << "(char* const* b, const int64_t* p, const KilnKernelRuntime* rt) {\n"
       << "  const Context c{b, p, nullptr};\n"
       << "  const int64_t n = " << inner_size() << ", n_rows = " << size_of(kept_outer, outer)
       << ";\n  const int64_t items = " << size_of(0, kept_outer) << " * n;\n"
       << "  rt->parallel_for(0, items, n_rows > 0 ? (32768 + n_rows - 1) / n_rows : items, "
       << name << ", const_cast<Context*>(&c));\n}\n";
  }

  void emit_split(const std::string& name) {
    const std::string fold = split_fold();
    os << "  const int64_t n = " << inner_size() << ";\n"
       << "  for (int64_t block = begin; block < end; ++block) {\n"
       << "    const int64_t j0 = block * kReduceBlock;\n"
       << "    const int64_t j1 = j0 + kReduceBlock < n ? j0 + kReduceBlock : n;\n";
    for (size_t b = 0; b < ks.buffers.size(); ++b) os << "    const int64_t o" << b << " = 0;\n";
    stores_in_pass = true;
    pass(stat("acc"), fold.c_str(), row_input(false), ks.vectorised ? row_input(true) : "");
    os << "    c.partial[block] = " << stat("acc") << ";\n  }\n}\n}  // namespace\n";
    os << "extern \"C\" KILN_KERNEL_EXPORT void " << ks.symbol
       << "(char* const* b, const int64_t* p, const KilnKernelRuntime* rt) {\n"
       << "  const int64_t n = " << inner_size() << ";\n"
       << "  const int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;\n"
       << "  const std::unique_ptr<double[]> partial(new double[blocks > 0 ? blocks : 1]);\n"
       << "  const Context c{b, p, partial.get()};\n"
       << "  rt->parallel_for(0, blocks, 1, " << name << ", const_cast<Context*>(&c));\n"
       << "  double acc = "
       << (fold == "sum"   ? "0"
           : fold == "max" ? "-INFINITY"
                           : "INFINITY")
       << ";\n  for (int64_t i = 0; i < blocks; ++i) {\n";
    if (fold == "sum")
      os << "    acc += partial[i];\n";
    else
      os << "    if (partial[i] != partial[i] || partial[i]" << (fold == "max" ? " > " : " < ")
         << "acc) acc = partial[i];\n";
    os << "  }\n";
    if (k.row->kind == RowKind::Mean) os << "  acc = acc / static_cast<double>(n);\n";
    for (int id : k.stores) {
      if (!is_row_output(id)) continue;
      const ScalarType dt = g.values[id].dtype;
      os << "  reinterpret_cast<" << storage_type(dt) << "*>(b[" << buffer_of[id]
         << "])[0] = static_cast<" << storage_type(dt) << ">(static_cast<" << compute_type(dt)
         << ">(acc));\n";
    }
    os << "}\n";
  }

  void emit(int index) {
    plan();
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (!k.exprs[i]) {
        if (k.nodes[i] == k.row->node) anchor = static_cast<int>(i);
      } else if (!reads_inputs(*k.exprs[i])) {
        scalars.push_back(g.nodes[k.nodes[i]].outputs[0]);
      }
    }
    if (k.row)
      for (int id : k.row->row_outputs) scalars.push_back(id);
    const std::string name = "k" + std::to_string(index);
    ks.symbol = "kiln_kernel_" + std::to_string(index);
    ks.vectorised = can_vectorise();
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
    if (k.row && k.row->nll) {
      ks.per_row_scratch = 2;
      os << "  double* __restrict nll_loss = reinterpret_cast<double*>(c.b[" << ks.buffers.size()
         << "]);\n  double* __restrict nll_weight = reinterpret_cast<double*>(c.b["
         << ks.buffers.size() + 1 << "]);\n";
    }
    const size_t outer = sizes.size() - row_dims();
    if (split_row()) return emit_split(name);
    if (k.row && k.row->columns) return emit_columns(name);
    if (!row_loop()) {
      os << "  {\n    const int64_t j0 = begin, j1 = end;\n";
      for (size_t b = 0; b < ks.buffers.size(); ++b) os << "    const int64_t o" << b << " = 0;\n";
    } else {
      os << "  const int64_t n = " << size_of(outer, sizes.size()) << ";\n";
      os << "  for (int64_t row = begin; row < end; ++row) {\n";
      os << "    const int64_t j0 = 0, j1 = " << (segment_dims ? inner_size() : "n")
         << ";\n    int64_t r = row;\n";
      row_offsets(outer, "    ");
      if (k.row) statistics();
      if (k.row && k.row->nll) nll_gather();
    }
    // The last pass, over the elements: what the kernel stores in full shape.
    if (std::any_of(k.stores.begin(), k.stores.end(), [&](int id) { return !is_row_output(id); })) {
      open_segments();
      os << "    {\n    int64_t j = j0;\n";
      if (ks.vectorised) {
        os << "    for (; j + kVec <= j1; j += kVec) {\n";
        body(true, "      ", true);
        os << "    }\n";
      }
      os << "    for (; j < j1; ++j) {\n";
      body(false, "      ", true);
      os << "    }\n    }\n";
      close_segments();
    }
    for (int id : k.stores)
      if (is_row_output(id))
        os << "    b" << buffer_of[id] << "[o" << buffer_of[id] << "] = static_cast<"
           << storage_type(g.values[id].dtype) << ">(v" << id << ");\n";
    os << "  }\n}\n}  // namespace\n";
    std::string rows = "int64_t{1}";
    for (size_t d = 0; d < (row_loop() ? outer : sizes.size()); ++d)
      rows += " * " + param(sizes[d]);
    os << "extern \"C\" KILN_KERNEL_EXPORT void " << ks.symbol
       << "(char* const* b, const int64_t* p, const KilnKernelRuntime* rt) {\n"
       << "  const Context c{b, p, nullptr};\n"
       << "  const int64_t rows = " << rows << ";\n";
    if (!row_loop())
      os << "  rt->parallel_for(0, rows, 32768, " << name << ", const_cast<Context*>(&c));\n}\n";
    else
      os << "  const int64_t n = " << size_of(outer, sizes.size()) << ";\n"
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
     << "namespace {\nstruct Context {\n  char* const* b;\n  const int64_t* p;\n"
     << "  double* partial;  // a reduction's per-block statistics\n};\n"
     << "constexpr int64_t kReduceBlock = " << kReduceBlock << ";\n"
     << "constexpr int64_t kColumnBlock = " << kColumnBlock << ";\n"
     << "constexpr int64_t kColumnRows = " << kColumnRows << ";\n}  // namespace\n";
  std::string kernels;
  for (size_t i = 0; i < schedule.kernels.size(); ++i) {
    KernelSource ks;
    Emitter e{graph, schedule.kernels[i], ks};
    e.emit(static_cast<int>(i));
    kernels += e.os.str();
    u.kernels.push_back(std::move(ks));
  }
  u.source = os.str() + kernels;
  return u;
}

}  // namespace kiln::compiler

#include "kiln/compile/codegen/schedule.h"

#include <algorithm>
#include <sstream>

#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

bool same(const SymInt& a, const SymInt& b) { return a.same_as(b); }
bool is_one(const SymInt& s) { return s.maybe_int() == 1; }

Tensor meta_tensor(const Value& v) {
  Tensor t(std::make_shared<TensorImpl>(StorageImpl::meta(v.device), v.dtype, v.sizes,
                                        v.strides.empty() ? SymShape{} : v.strides, 0));
  if (v.wrapped_number) t.impl()->set_wrapped_number(true);
  return t;
}

// The node's expression when it can join a kernel, else null with `why` set.
lowering::ExprPtr pointwise_expr(const Graph& g, const Node& n, std::string& why) {
  const auto& l = n.op->lowering_;
  if (l.kind != lowering::Lowering::Kind::Pointwise) {
    why = l.empty() ? "no lowering" : l.str();
    return nullptr;
  }
  if (n.outputs.size() != 1 || n.symbolic_attrs) {
    why = "pointwise op with several outputs or symbolic attributes";
    return nullptr;
  }
  const Value& out = g.values[n.outputs[0]];
  if (out.device.type() != DeviceType::CPU || !is_contiguous(out.sizes, out.strides)) {
    why = "output not a dense CPU tensor";
    return nullptr;
  }
  std::vector<Tensor> inputs;
  for (int id : n.inputs) {
    if (id < 0) {
      inputs.emplace_back();
      continue;
    }
    const Value& v = g.values[id];
    SymShape strides;
    if (v.device.type() != DeviceType::CPU || !strides_over(v, out.sizes, strides)) {
      why = "an input that does not broadcast to the output provably";
      return nullptr;
    }
    inputs.push_back(meta_tensor(v));
  }
  lowering::ExprPtr e = l.pointwise(lowering::Call{inputs, n.attrs, out.dtype});
  if (!e) why = "not expressible for these dtypes or attributes";
  return e;
}

bool is_float(ScalarType t) {
  return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16;
}

// Whether node n is a reduction over trailing dims that a kernel can compute row by row; `why`
// says why not when the op is one of them.
bool row_reduction(const Graph& g, const Node& n, RowReduction& r, std::string& why) {
  using K = RowReduction::Kind;
  static const std::pair<const char*, K> kOps[] = {{"sum", K::Sum},
                                                   {"mean", K::Mean},
                                                   {"amax", K::Max},
                                                   {"amin", K::Min},
                                                   {"softmax", K::Softmax},
                                                   {"log_softmax", K::LogSoftmax},
                                                   {"layer_norm", K::LayerNorm},
                                                   {"rms_norm", K::RmsNorm}};
  const auto* op = std::find_if(std::begin(kOps), std::end(kOps),
                                [&](const auto& o) { return n.op->name == o.first; });
  if (op == std::end(kOps) || n.inputs.empty() || n.inputs[0] < 0) return false;
  r = RowReduction{};
  r.kind = op->second;
  const Value& x = g.values[n.inputs[0]];
  const auto rank = static_cast<int64_t>(x.sizes.size());
  why = "a reduction the generated row kernels do not cover (";
  if (!is_float(x.dtype) || x.device.type() != DeviceType::CPU || n.symbolic_attrs) {
    why += "dtype, device or symbolic attributes)";
    return false;
  }
  std::vector<int64_t> dims;
  const Attrs& a = n.attrs;
  switch (r.kind) {
    case K::Sum:
    case K::Mean:
      if (!a.is_none(2)) return why += "dtype argument)", false;
      [[fallthrough]];
    case K::Max:
    case K::Min:
      dims = a.ints(0);
      break;
    case K::Softmax:
    case K::LogSoftmax:
      if (!a.is_none(1)) return why += "dtype argument)", false;
      dims = {a.i(0)};
      break;
    case K::LayerNorm:
    case K::RmsNorm:
      for (size_t d = 0; d < a.ints(0).size(); ++d)
        dims.push_back(rank - static_cast<int64_t>(a.ints(0).size()) + static_cast<int64_t>(d));
      r.eps = a.f(1);
      break;
  }
  if (dims.empty() && r.kind != K::LayerNorm && r.kind != K::RmsNorm)  // no dims: all of them
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  for (int64_t& d : dims) d = d < 0 ? d + rank : d;
  std::sort(dims.begin(), dims.end());
  r.reduced_dims = static_cast<int>(dims.size());
  bool trailing = !dims.empty() && rank > 0;
  for (size_t j = 0; j < dims.size() && trailing; ++j)
    trailing = dims[j] == rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(j);
  // Otherwise consecutive dims with kept dims after them: columns (of a one-pass fold).
  const bool folds = r.is_fold();
  bool columns = !trailing && !dims.empty() && dims.back() < rank - 1 && folds;
  for (size_t j = 0; j < dims.size() && columns; ++j)
    columns = dims[j] == dims[0] + static_cast<int64_t>(j);
  if (!trailing && !columns && (!folds || dims.empty() || dims.back() >= rank))  // 0-dim
    return why += "dims that are not consecutive)", false;
  r.kept_outer_dims = columns ? static_cast<int>(dims[0]) : 0;
  if (!trailing && !columns) {
    auto reduced = [&](int64_t d) { return std::binary_search(dims.begin(), dims.end(), d); };
    for (int64_t d = 0; d < dims.back(); ++d)
      if (!reduced(d)) r.order.push_back(static_cast<int>(d));
    r.kept_outer_dims = static_cast<int>(r.order.size());
    for (int64_t d : dims) r.order.push_back(static_cast<int>(d));
    for (int64_t d = dims.back() + 1; d < rank; ++d) r.order.push_back(static_cast<int>(d));
    columns = dims.back() < rank - 1;
  }
  r.columns = columns;
  for (int64_t d : dims)
    if (x.sizes[d].maybe_int() == 0) return why += "empty rows)", false;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Value& out = g.values[n.outputs[k]];
    if (!is_contiguous(out.sizes, out.strides)) return why += "a strided output)", false;
    if (!r.is_fold() && k == 0)
      r.full_output = n.outputs[k];
    else
      r.row_outputs.push_back(n.outputs[k]);
  }
  for (size_t k = 1; k < n.inputs.size(); ++k) {  // weight, bias
    SymShape st;
    if (n.inputs[k] >= 0 && (!is_float(g.values[n.inputs[k]].dtype) ||
                             !strides_over(g.values[n.inputs[k]], x.sizes, st)))
      return why += "weight or bias)", false;
  }
  r.node = static_cast<int>(&n - g.nodes.data());
  return true;
}

// Whether nll_loss node n can gather from the log_softmax rows of kernel fk (a cross_entropy):
// over 2-d logits, with a dense integer target of one class per row and an optional dense
// weight per class.
bool nll_epilogue(const Graph& g, const Node& n, const FusedKernel& fk, RowReduction::Nll& nll) {
  if (!fk.row || fk.row->kind != RowReduction::Kind::LogSoftmax || fk.row->nll ||
      fk.sizes.size() != 2 || fk.row->reduced_dims != 1 || n.symbolic_attrs ||
      n.inputs.size() != 3 || n.inputs[0] != fk.row->full_output || n.inputs[1] < 0)
    return false;
  const Value& t = g.values[n.inputs[1]];
  if ((t.dtype != kInt64 && t.dtype != kInt32) || t.sizes.size() != 1 ||
      !same(t.sizes[0], fk.sizes[0]) || !is_contiguous(t.sizes, t.strides))
    return false;
  if (n.inputs[2] >= 0) {
    const Value& w = g.values[n.inputs[2]];
    if (!is_float(w.dtype) || w.sizes.size() != 1 || !same(w.sizes[0], fk.sizes[1]) ||
        !is_contiguous(w.sizes, w.strides))
      return false;
  }
  const int64_t reduction = n.attrs.i(0);
  if (reduction < 0 || reduction > 2) return false;
  nll = RowReduction::Nll{static_cast<int>(&n - g.nodes.data()), n.inputs[1], n.inputs[2],
                          n.attrs.i(1), reduction};
  return true;
}

}  // namespace

bool strides_over(const Value& v, const SymShape& sizes, SymShape& strides) {
  const size_t rank = sizes.size(), vr = v.sizes.size();
  if (vr > rank) return false;
  SymShape own = v.strides;
  if (own.empty()) {  // contiguous
    own.resize(vr);
    SymInt s = 1;
    for (size_t d = vr; d-- > 0;) {
      own[d] = s;
      s = s * v.sizes[d];
    }
  }
  strides.assign(rank, SymInt(0));
  for (size_t d = 0; d < rank; ++d) {
    if (d < rank - vr) continue;
    const size_t vd = d - (rank - vr);
    if (is_one(v.sizes[vd])) continue;  // broadcast (or a size-1 dim)
    if (!same(v.sizes[vd], sizes[d])) return false;
    strides[d] = own[vd];
  }
  return true;
}

bool reads_inputs(const lowering::Expr& e) {
  if (e.kind == lowering::Expr::Kind::Input) return true;
  return std::any_of(e.args.begin(), e.args.end(), [](const auto& a) { return reads_inputs(*a); });
}

Schedule schedule(const Graph& g) {
  Schedule s;
  const int none = -1;
  std::vector<int> kernel_of(g.values.size(), none);  // the kernel computing each value
  std::vector<bool> open;                             // kernels that may still take nodes
  std::vector<bool> dead;                             // kernels merged into another
  // Constants (full, and other pointwise ops that read no input) are computed inside each
  // kernel that reads them; only an extern reader or the caller makes one a step of its own.
  std::vector<lowering::ExprPtr> constant(g.values.size());
  std::vector<int> producer(g.values.size(), none);
  std::vector<bool> materialised(g.values.size(), false);
  auto close = [&](int k) {
    if (k < 0 || !open[k]) return;
    open[k] = false;
    s.steps.push_back({true, k});
  };
  // The constants node n reads, computed in its kernel.
  auto add_constants = [&](FusedKernel& fk, const Node& n) {
    for (int id : n.inputs) {
      if (id < 0 || !constant[id]) continue;
      if (std::find(fk.nodes.begin(), fk.nodes.end(), producer[id]) != fk.nodes.end()) continue;
      fk.nodes.push_back(producer[id]);
      fk.exprs.push_back(constant[id]);
    }
  };
  // Puts node i in kernel `join` (a new one over `shape` when none), after finishing the other
  // kernels it reads from.
  auto place = [&](const Node& n, int i, int join, const SymShape& shape,
                   lowering::ExprPtr e) -> FusedKernel& {
    for (int id : n.inputs)
      if (id >= 0 && kernel_of[id] != join) close(kernel_of[id]);
    if (join < 0) {
      join = static_cast<int>(s.kernels.size());
      s.kernels.push_back(FusedKernel{{}, {}, shape, {}, {}, {}});
      open.push_back(true);
      dead.push_back(false);
    }
    FusedKernel& fk = s.kernels[join];
    add_constants(fk, n);
    fk.nodes.push_back(i);
    fk.exprs.push_back(std::move(e));
    for (int id : n.outputs) kernel_of[id] = join;
    return fk;
  };
  auto materialise_constant = [&](int id) {
    if (id < 0 || !constant[id] || materialised[id]) return;
    materialised[id] = true;
    s.steps.push_back({false, producer[id]});
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (int id : n.outputs) producer[id] = static_cast<int>(i);
    std::string why = "mutates its input";
    lowering::ExprPtr e = n.op->is_inplace ? nullptr : pointwise_expr(g, n, why);
    RowReduction row;
    if (!e && !n.op->is_inplace && row_reduction(g, n, row, why)) {
      // A row kernel: the reduction joins the open kernel computing its input over the input's
      // shape (its producers), unless that kernel has a reduction already.
      const int x = n.inputs[0];
      const SymShape& shape = g.values[x].sizes;
      int join = kernel_of[x];
      if (join >= 0 &&
          (!open[join] || s.kernels[join].row || !same_shape(s.kernels[join].sizes, shape)))
        join = none;
      place(n, static_cast<int>(i), join, shape, nullptr).row = row;
      // A reduction of every element or over columns is known only when its kernel has
      // read everything (cpp_codegen.cpp), and one over dims that are not consecutive loops in
      // its own order: nothing can follow them in their kernel.
      if ((row.reduced_dims == static_cast<int>(shape.size()) && row.full_output < 0) ||
          row.columns || !row.order.empty())
        close(kernel_of[n.outputs[0]]);
      continue;
    }
    if (!e && n.op->name == "nll_loss" && n.inputs[0] >= 0) {
      // Gathered in the row kernel of its log_softmax, which then finishes: nll_loss's outputs
      // exist only after it.
      // Its target and weight must be loads of that kernel (not constants it computes), and
      // the target one read per row only.
      const int k = kernel_of[n.inputs[0]];
      const int target = n.inputs[1], weight = n.inputs[2];
      auto reads_target = [&](int ni) {
        const auto& in = g.nodes[ni].inputs;
        return std::find(in.begin(), in.end(), target) != in.end();
      };
      RowReduction::Nll nll;
      if (k >= 0 && open[k] && target >= 0 && kernel_of[target] != k && !constant[target] &&
          (weight < 0 || !constant[weight]) &&
          std::none_of(s.kernels[k].nodes.begin(), s.kernels[k].nodes.end(), reads_target) &&
          nll_epilogue(g, n, s.kernels[k], nll)) {
        place(n, static_cast<int>(i), k, s.kernels[k].sizes, nullptr).row->nll = nll;
        close(k);
        continue;
      }
    }
    if (!e) {
      // An extern call runs after the kernels it reads from; an in-place op after all of them,
      // so that no kernel reads a value it changed, or misses the change.
      if (n.op->is_inplace) {
        for (size_t k = 0; k < open.size(); ++k) close(static_cast<int>(k));
      } else {
        for (int id : n.inputs)
          if (id >= 0) close(kernel_of[id]);
      }
      for (int id : n.inputs) materialise_constant(id);
      s.steps.push_back({false, static_cast<int>(i)});
      s.extern_reasons.push_back(n.op->name + ": " + why);
      continue;
    }
    if (!reads_inputs(*e)) {
      constant[n.outputs[0]] = e;
      continue;
    }
    const SymShape& shape = g.values[n.outputs[0]].sizes;
    // Join the open kernels of inputs computed over the same shape (merging them: none has run
    // yet, and each reads only what ran before); other inputs' kernels finish first.
    int join = none;
    for (int id : n.inputs) {
      const int k = id < 0 ? none : kernel_of[id];
      if (k < 0 || !open[k] || k == join || !same_shape(s.kernels[k].sizes, shape)) continue;
      if (join < 0) {
        join = k;
        continue;
      }
      FusedKernel& into = s.kernels[join];
      FusedKernel& from = s.kernels[k];
      if (into.row && from.row) continue;  // one reduction per kernel: `from` is closed below
      if (from.row) into.row = from.row;
      for (size_t j = 0; j < from.nodes.size(); ++j) {
        if (std::find(into.nodes.begin(), into.nodes.end(), from.nodes[j]) != into.nodes.end())
          continue;  // a constant both read
        into.nodes.push_back(from.nodes[j]);
        into.exprs.push_back(from.exprs[j]);
        for (int id : g.nodes[from.nodes[j]].outputs) kernel_of[id] = join;
      }
      // Graph order is a valid order for the merged nodes.
      std::vector<size_t> order(into.nodes.size());
      for (size_t j = 0; j < order.size(); ++j) order[j] = j;
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return into.nodes[a] < into.nodes[b]; });
      FusedKernel merged{{}, {}, into.sizes, {}, {}, into.row};
      for (size_t j : order) {
        merged.nodes.push_back(into.nodes[j]);
        merged.exprs.push_back(into.exprs[j]);
      }
      into = std::move(merged);
      from = FusedKernel{};
      open[k] = false;
      dead[k] = true;
    }
    place(n, static_cast<int>(i), join, shape, std::move(e));
  }
  for (size_t k = 0; k < open.size(); ++k) close(static_cast<int>(k));
  for (int id : g.outputs) materialise_constant(id);
  // A softmax that nothing fused with runs its eager kernel, which is faster than the generated
  // one (it keeps exp(x - max) in the output row; bench/RESULTS-compile.md).
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const FusedKernel& fk = s.kernels[k];
    if (dead[k] || !fk.row || fk.nodes.size() != 1) continue;
    if (fk.row->kind != RowReduction::Kind::Softmax &&
        fk.row->kind != RowReduction::Kind::LogSoftmax)
      continue;
    for (Step& st : s.steps)
      if (st.is_kernel && st.index == static_cast<int>(k)) st = {false, fk.row->node};
    s.extern_reasons.push_back(g.nodes[fk.row->node].op->name +
                               ": alone, its eager kernel is faster");
    dead[k] = true;
  }
  // Drop the merged kernels, renumbering the rest.
  std::vector<int> renumber(s.kernels.size(), none);
  std::vector<FusedKernel> live;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    if (dead[k]) continue;
    renumber[k] = static_cast<int>(live.size());
    live.push_back(std::move(s.kernels[k]));
  }
  s.kernels = std::move(live);
  for (Step& st : s.steps)
    if (st.is_kernel) st.index = renumber[st.index];

  // Loads: values a kernel reads that it does not compute. Stores: values a kernel computes
  // that something else reads (another kernel, an extern call, the caller).
  std::vector<bool> read_outside(g.values.size(), false);
  for (int id : g.outputs)
    if (id >= 0) read_outside[id] = true;
  auto computes = [&](const FusedKernel& fk, int id) {
    return std::any_of(fk.nodes.begin(), fk.nodes.end(), [&](int ni) {
      const auto& outs = g.nodes[ni].outputs;
      return std::find(outs.begin(), outs.end(), id) != outs.end();
    });
  };
  for (const Step& st : s.steps) {
    if (st.is_kernel) {
      const FusedKernel& fk = s.kernels[st.index];
      for (int ni : fk.nodes)
        for (int id : g.nodes[ni].inputs)
          if (id >= 0 && !computes(fk, id)) read_outside[id] = true;
    } else {
      for (int id : g.nodes[st.index].inputs)
        if (id >= 0) read_outside[id] = true;
    }
  }
  for (FusedKernel& fk : s.kernels) {
    for (int ni : fk.nodes) {
      for (int id : g.nodes[ni].inputs)
        if (id >= 0 && !computes(fk, id) &&
            std::find(fk.loads.begin(), fk.loads.end(), id) == fk.loads.end())
          fk.loads.push_back(id);
      if (fk.row && fk.row->nll && fk.row->nll->node == ni) continue;  // made by the program
      for (int out : g.nodes[ni].outputs)
        if (read_outside[out] && !constant[out]) fk.stores.push_back(out);
    }
  }
  return s;
}

std::string Schedule::str(const Graph& g) const {
  std::ostringstream os;
  for (const Step& st : steps) {
    if (!st.is_kernel) {
      const Node& n = g.nodes[st.index];
      os << "extern " << n.op->name << " -> %" << (n.outputs.empty() ? -1 : n.outputs[0]) << "\n";
      continue;
    }
    const FusedKernel& k = kernels[st.index];
    os << "kernel " << st.index << " over [";
    for (size_t d = 0; d < k.sizes.size(); ++d) os << (d ? ", " : "") << k.sizes[d];
    os << "]:";
    for (int ni : k.nodes) os << " " << g.nodes[ni].op->name;
    os << " (" << k.loads.size() << " loads, " << k.stores.size() << " stores)\n";
  }
  return os.str();
}

}  // namespace kiln::compiler

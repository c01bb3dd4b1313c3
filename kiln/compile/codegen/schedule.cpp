#include "kiln/compile/codegen/schedule.h"

#include <algorithm>
#include <sstream>

#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

bool same(const SymInt& a, const SymInt& b) { return a.same_as(b); }
bool is_one(const SymInt& s) { return s.maybe_int() == 1; }

// Row-major strides of `sizes` agree with `strides` wherever they matter (size > 1).
bool is_contiguous(const SymShape& sizes, const SymShape& strides) {
  if (strides.empty()) return true;
  if (strides.size() != sizes.size()) return false;
  SymInt expected = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (!is_one(sizes[d]) && !same(strides[d], expected)) return false;
    expected = expected * sizes[d];
  }
  return true;
}

bool same_shape(const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!same(a[d], b[d])) return false;
  return true;
}

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
      for (size_t j = 0; j < from.nodes.size(); ++j) {
        if (std::find(into.nodes.begin(), into.nodes.end(), from.nodes[j]) != into.nodes.end())
          continue;  // a constant both read
        into.nodes.push_back(from.nodes[j]);
        into.exprs.push_back(from.exprs[j]);
        kernel_of[g.nodes[from.nodes[j]].outputs[0]] = join;
      }
      // Graph order is a valid order for the merged nodes.
      std::vector<size_t> order(into.nodes.size());
      for (size_t j = 0; j < order.size(); ++j) order[j] = j;
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return into.nodes[a] < into.nodes[b]; });
      FusedKernel merged{{}, {}, into.sizes, {}, {}};
      for (size_t j : order) {
        merged.nodes.push_back(into.nodes[j]);
        merged.exprs.push_back(into.exprs[j]);
      }
      into = std::move(merged);
      from = FusedKernel{};
      open[k] = false;
      dead[k] = true;
    }
    for (int id : n.inputs)
      if (id >= 0 && kernel_of[id] != join) close(kernel_of[id]);
    if (join < 0) {
      join = static_cast<int>(s.kernels.size());
      s.kernels.push_back(FusedKernel{{}, {}, shape, {}, {}});
      open.push_back(true);
      dead.push_back(false);
    }
    FusedKernel& fk = s.kernels[join];
    for (int id : n.inputs) {
      if (id < 0 || !constant[id]) continue;
      if (std::find(fk.nodes.begin(), fk.nodes.end(), producer[id]) != fk.nodes.end()) continue;
      fk.nodes.push_back(producer[id]);
      fk.exprs.push_back(constant[id]);
    }
    fk.nodes.push_back(static_cast<int>(i));
    fk.exprs.push_back(std::move(e));
    kernel_of[n.outputs[0]] = join;
  }
  for (size_t k = 0; k < open.size(); ++k) close(static_cast<int>(k));
  for (int id : g.outputs) materialise_constant(id);
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
    return std::any_of(fk.nodes.begin(), fk.nodes.end(),
                       [&](int ni) { return g.nodes[ni].outputs[0] == id; });
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
      const int out = g.nodes[ni].outputs[0];
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

#include "kiln/compile/compiled_autograd.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/autograd/anomaly_mode.h"
#include "kiln/autograd/grad_mode.h"
#include "kiln/autograd/node.h"
#include "kiln/compile/codegen/program.h"
#include "kiln/compile/logs.h"
#include "kiln/compile/passes.h"
#include "kiln/compile/replay.h"
#include "kiln/compile/tracer.h"
#include "kiln/core/autograd_meta.h"
#include "kiln/ops/ops.h"

namespace kiln::compiler {
namespace {

using autograd::AccumulateGrad;
using autograd::Edge;

// One backward pass as compiled autograd sees it: the nodes in the engine's order, the tensors
// its graph reads (the roots' gradients, what each node saved, each leaf's .grad), and the key
// of its structure.
struct Pass {
  std::vector<std::shared_ptr<autograd::Node>> order;
  std::vector<Tensor> inputs;
  // Saved tensors that only carry a shape (their storage is meta): read while tracing, never
  // given to the program.
  std::vector<Tensor> shapes_only;
  // Per node of order: what it saved (Node::describe_for_trace) or its leaf's .grad (an
  // AccumulateGrad), each as a position in inputs, kNone, or shape_only(k).
  std::vector<std::vector<int>> slots;
  std::string key;
  std::string unsupported;  // why the pass cannot be captured, when it cannot
};

constexpr int kNone = -1;
int shape_only(size_t k) { return -2 - static_cast<int>(k); }

struct CompiledPass {
  std::unique_ptr<ShapeEnv> env;
  Graph graph;
  std::unique_ptr<CodegenProgram> program;  // null: replayed on the eager kernels
  // Per output: the position of its node in the pass's order, and which of the node's
  // retains_grad() entries it fills (npos: it is the leaf's new .grad).
  std::vector<size_t> targets;
  std::vector<size_t> retained_slot;
  std::string eager_reason;  // set: this structure runs on the engine
};

void describe_tensor(std::ostream& os, const Tensor& t) {
  if (!t.defined()) {
    os << "-";
    return;
  }
  os << t.dtype() << t.device() << t.sym_sizes() << t.sym_strides();
}

// A hook is known by its type (each lambda has its own), and a function pointer by its address.
void describe_hook(std::ostream& os, const autograd::Node::TensorHook& hook) {
  os << hook.target_type().name();
  if (auto* f = hook.target<Tensor (*)(const Tensor&)>()) os << "@" << reinterpret_cast<void*>(*f);
}

void describe_hooks(std::ostream& os, const autograd::Node& n) {
  for (const auto& [nr, hook] : n.pre_hooks()) {
    os << " hook" << nr;
    describe_hook(os, hook);
  }
  for (const auto& [nr, tensor] : n.retains_grad()) os << " retain" << nr;
}

// Walks the pass in the engine's order, collecting what its graph reads and its key. Unpacking
// the saved tensors checks them as the engine would (freed graph, in-place change).
Pass describe(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads) {
  Pass p;
  p.order = autograd::execution_order(roots);
  std::unordered_map<const autograd::Node*, size_t> position;
  for (size_t i = 0; i < p.order.size(); ++i) position[p.order[i].get()] = i;
  std::ostringstream key;
  auto edge = [&](const Edge& e) {
    if (e.valid())
      key << " ->" << position.at(e.node.get()) << ":" << e.input_nr;
    else
      key << " ->none";
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    edge(roots[i]);
    describe_tensor(key, root_grads[i]);
    p.inputs.push_back(root_grads[i]);
  }
  auto add = [&](const Tensor& t) {
    describe_tensor(key, t);
    if (!t.defined()) return kNone;
    if (t.impl()->is_meta()) {
      p.shapes_only.push_back(t);
      key << "(meta)";
      return shape_only(p.shapes_only.size() - 1);
    }
    p.inputs.push_back(t);
    return static_cast<int>(p.inputs.size() - 1);
  };
  for (const auto& node : p.order) {
    key << "\n";
    std::vector<int> slots;
    if (auto* acc = dynamic_cast<AccumulateGrad*>(node.get())) {
      const Tensor& leaf = acc->variable();
      const AutogradMeta* m = leaf.impl()->autograd_meta();
      key << "leaf";
      describe_tensor(key, leaf);
      slots.push_back(add(m ? m->grad : Tensor()));
      if (m)
        for (const auto& hook : m->hooks) {
          key << " leafhook";
          describe_hook(key, hook);
        }
    } else {
      std::vector<Tensor> saved;
      if (node->describe_for_trace(saved, key)) {
        for (const Tensor& t : saved) slots.push_back(add(t));
      } else if (p.unsupported.empty()) {
        p.unsupported = "the graph holds a " + node->name() +
                        " node, whose backward compiled autograd does not trace";
      }
    }
    describe_hooks(key, *node);
    for (const Edge& e : node->next_functions()) edge(e);
    p.slots.push_back(std::move(slots));
  }
  p.key = key.str();
  return p;
}

void accumulate(std::unordered_map<const autograd::Node*, std::vector<Tensor>>& buffers,
                const Edge& e, const Tensor& g) {
  auto& buf = buffers[e.node.get()];
  buf.resize(e.node->num_outputs());
  Tensor& slot = buf[e.input_nr];
  slot = slot.defined() ? add(slot, g) : g;
}

// Runs the pass's formulas on traced stand-ins for what it reads, so the tracer records the
// whole backward as one graph whose outputs are the leaves' new .grad and the retained
// gradients.
std::shared_ptr<CompiledPass> capture(const Pass& p, const std::vector<Edge>& roots,
                                      const CompileOptions& options) {
  auto c = std::make_shared<CompiledPass>();
  c->env = std::make_unique<ShapeEnv>();
  Tracer tr(*c->env);
  std::vector<Tensor> traced;
  for (const Tensor& t : p.inputs) {
    const SymShape sizes(t.sym_sizes().begin(), t.sym_sizes().end());
    const SymShape strides(t.sym_strides().begin(), t.sym_strides().end());
    traced.push_back(tr.add_input(sizes, strides, t.dtype(), t.device()));
  }
  auto stand_in = [&](int slot) {
    if (slot == kNone) return Tensor();
    return slot >= 0 ? traced[slot] : p.shapes_only[-2 - slot];
  };
  std::vector<Tensor> outputs;
  tr.run([&] {
    const NoGradGuard no_grad;
    std::unordered_map<const autograd::Node*, std::vector<Tensor>> buffers;
    for (size_t i = 0; i < roots.size(); ++i) accumulate(buffers, roots[i], traced[i]);
    for (size_t i = 0; i < p.order.size(); ++i) {
      autograd::Node& n = *p.order[i];
      std::vector<Tensor> grads = std::move(buffers[&n]);
      grads.resize(n.num_outputs());
      for (const auto& [nr, hook] : n.pre_hooks())
        if (nr < grads.size() && grads[nr].defined()) autograd::run_tensor_hook(hook, grads[nr]);
      for (size_t r = 0; r < n.retains_grad().size(); ++r) {
        const uint32_t nr = n.retains_grad()[r].first;
        if (nr >= grads.size() || !grads[nr].defined()) continue;
        outputs.push_back(grads[nr]);
        c->targets.push_back(i);
        c->retained_slot.push_back(r);
      }
      if (auto* acc = dynamic_cast<AccumulateGrad*>(&n)) {
        if (!grads[0].defined()) continue;
        if (const AutogradMeta* m = acc->variable().impl()->autograd_meta())
          for (const auto& hook : m->hooks) autograd::run_tensor_hook(hook, grads[0]);
        const Tensor old = stand_in(p.slots[i][0]);
        outputs.push_back(old.defined() ? add(old, grads[0]) : grads[0]);
        c->targets.push_back(i);
        c->retained_slot.push_back(std::string::npos);
        continue;
      }
      if (std::none_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined(); }))
        continue;
      std::vector<Tensor> saved;
      for (int slot : p.slots[i]) saved.push_back(stand_in(slot));
      const std::vector<Tensor> in_grads = n.apply_traced(std::move(grads), saved);
      const auto& edges = n.next_functions();
      for (size_t e = 0; e < edges.size() && e < in_grads.size(); ++e)
        if (edges[e].valid() && in_grads[e].defined()) accumulate(buffers, edges[e], in_grads[e]);
    }
  });
  c->graph = tr.finish(outputs);
  simplify(c->graph);
  if (options.backend() == "codegen")
    c->program = std::make_unique<CodegenProgram>(c->graph, options.mode() == "max-autotune");
  return c;
}

}  // namespace

struct CompiledAutograd::Cache {
  CompileOptions options;
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<const CompiledPass>> passes;
  CompiledAutogradStats stats;

  bool eager(const std::string& reason) {
    KILN_CHECK(!options.fullgraph(),
               "compiled_autograd: the backward pass cannot be captured "
               "as one graph (fullgraph=true): ",
               reason);
    log(LogKind::Perf, "compiled autograd leaves a backward pass to the eager engine: " + reason);
    std::lock_guard<std::mutex> lock(mu);
    ++stats.eager_passes;
    return false;
  }

  // The interceptor: runs the pass compiled and returns true, or returns false for the engine.
  bool run(const std::vector<Edge>& roots, const std::vector<Tensor>& root_grads, bool keep_graph,
           bool create_graph) {
    if (create_graph)
      return eager(
          "create_graph=true asks for a backward graph of the backward, which a compiled "
          "pass does not record");
    if (autograd::AnomalyMode::is_enabled())
      return eager("anomaly mode checks every node as it runs");
    Pass p = describe(roots, root_grads);
    if (!p.unsupported.empty()) return eager(p.unsupported);
    std::shared_ptr<const CompiledPass> c;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = passes.find(p.key);
      if (it != passes.end()) {
        c = it->second;
        ++stats.cache_hits;
      }
    }
    if (!c) {
      std::shared_ptr<CompiledPass> made;
      try {
        made = capture(p, roots, options);
      } catch (const GraphBreak& e) {
        made = std::make_shared<CompiledPass>();
        made->eager_reason = e.what();
      } catch (const DataDependentError& e) {
        made = std::make_shared<CompiledPass>();
        made->eager_reason = e.what();
      }
      std::lock_guard<std::mutex> lock(mu);
      passes[p.key] = made;
      if (made->eager_reason.empty()) ++stats.compilations;
      c = made;
    }
    if (!c->eager_reason.empty()) return eager(c->eager_reason);
    execute(*c, std::move(p), keep_graph);
    return true;
  }

  static void execute(const CompiledPass& c, Pass p, bool keep_graph) {
    if (!keep_graph)  // the inputs now hold the only references the graph kept
      for (const auto& node : p.order) node->release_variables();
    autograd::run_as_pass(keep_graph, [&] {
      std::vector<Tensor> outs;
      {
        const NoGradGuard no_grad;
        outs = c.program ? c.program->run(std::move(p.inputs), c.graph.captured_tensors, {})
                         : replay(c.graph, p.inputs, c.graph.captured_tensors, {});
      }
      for (size_t k = 0; k < outs.size(); ++k) {
        autograd::Node& n = *p.order[c.targets[k]];
        if (c.retained_slot[k] != std::string::npos) {
          autograd::retain_grad_into(n.retains_grad()[c.retained_slot[k]].second, outs[k]);
          continue;
        }
        const Tensor& leaf = static_cast<AccumulateGrad&>(n).variable();
        AutogradMeta& m = leaf.impl()->ensure_autograd_meta();
        m.grad = outs[k];
        for (size_t h = 0; h < m.post_accumulate_grad_hooks.size(); ++h) {
          auto hook = m.post_accumulate_grad_hooks[h];  // a copy: the hook may add hooks
          hook(leaf);
        }
      }
    });
  }
};

CompiledAutograd::CompiledAutograd(CompileOptions options) : cache_(std::make_shared<Cache>()) {
  check_backend_and_mode(options, "compiled_autograd");
  cache_->options = std::move(options);
  previous_ = autograd::set_backward_interceptor(
      [cache = cache_](const std::vector<Edge>& roots, const std::vector<Tensor>& grads,
                       bool keep_graph, bool create_graph) {
        return cache->run(roots, grads, keep_graph, create_graph);
      });
}

CompiledAutograd::~CompiledAutograd() { autograd::set_backward_interceptor(std::move(previous_)); }

CompiledAutogradStats CompiledAutograd::stats() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  return cache_->stats;
}

}  // namespace kiln::compiler

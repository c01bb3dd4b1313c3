#include "kiln/compile/compiled_function.h"

#include <algorithm>
#include <atomic>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>

#include "kiln/compile/captured_state.h"
#include "kiln/compile/codegen/prebuilt_kernels.h"
#include "kiln/compile/codegen/program.h"
#include "kiln/compile/compiled_backward.h"
#include "kiln/compile/joint.h"
#include "kiln/compile/logs.h"
#include "kiln/compile/passes.h"
#include "kiln/compile/replay.h"
#include "kiln/compile/tracer.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

std::atomic<int> g_next_id{0};
std::atomic<uint64_t> g_next_entry_id{0};

bool has_traced_tensor(const std::vector<Arg>& args) {
  auto traced = [](const Tensor& t) { return t.defined() && t.impl()->is_traced(); };
  for (const Arg& a : args) {
    if (const auto* t = std::get_if<Tensor>(&a); t && traced(*t)) return true;
    if (const auto* l = std::get_if<std::vector<Tensor>>(&a))
      if (std::any_of(l->begin(), l->end(), traced)) return true;
  }
  return false;
}

// Whether the graph's results need autograd (then, without a training graph, it runs on the eager
// kernels, which record the backward).
bool needs_autograd(const Guards& g) {
  if (!g.grad_mode) return false;
  auto any = [](const std::vector<TensorGuard>& ts) {
    return std::any_of(ts.begin(), ts.end(), [](const TensorGuard& t) { return t.requires_grad; });
  };
  return any(g.tensors) || any(g.captured);
}

// Whether the traced function's results may need gradients: grad mode is on and an argument or a
// captured tensor requires grad.
bool wants_gradients(Tracer& tracer) {
  if (!GradMode::is_enabled()) return false;
  const Graph& g = tracer.graph();
  return std::any_of(g.inputs.begin(), g.inputs.end(),
                     [&](int id) { return tracer.tensor(id).requires_grad(); }) ||
         std::any_of(g.captured_tensors.begin(), g.captured_tensors.end(),
                     [](const Tensor& t) { return t.requires_grad(); });
}

// Which tensor each storage was first seen in: captured tensor k as k, tensor argument i as
// -1 - i.
using StorageOwners = std::unordered_map<const StorageImpl*, int>;

// How captured tensor k shares memory: the first captured tensor before it on its storage (-1:
// none) and its storage offset. A graph that changes a captured tensor reads the others on its
// storage as views of it, at the capture's offsets.
std::pair<int, int64_t> alias_of(StorageOwners& owners, const Tensor& t, int k) {
  if (!t.defined() || !t.impl()->storage()) return {-1, 0};
  auto [it, fresh] = owners.emplace(t.impl()->storage().get(), k);
  return fresh ? std::pair<int, int64_t>{-1, 0}
               : std::pair<int, int64_t>{it->second, t.storage_offset()};
}

std::vector<std::pair<int, int64_t>> captured_aliasing(const std::vector<Tensor>& captured) {
  StorageOwners owners;
  std::vector<std::pair<int, int64_t>> out;
  for (size_t k = 0; k < captured.size(); ++k)
    out.push_back(alias_of(owners, captured[k], static_cast<int>(k)));
  return out;
}

// Why a graph that changes its inputs cannot run on these tensors; empty when it can. Its inputs
// are distinct values, so one that changes an argument in place (functionalized: computed out of
// place, copied back at the end) would let another argument on the same memory read the old
// value where eager reads the new one. Captured tensors must share memory as they did at the
// capture (`aliasing`), and the inputs the graph writes through views must start their storage.
std::string shared_memory(const Graph& g, const std::vector<Tensor>& args,
                          const std::vector<Tensor>& captured,
                          const std::vector<std::pair<int, int64_t>>& aliasing) {
  for (int id : g.written_in_place) {
    const Value& v = g.values[id];
    const bool is_captured = v.kind == Value::Kind::Captured;
    int64_t offset = 0;
    if (is_captured) {
      offset = captured[v.producer].storage_offset();
    } else {  // the graph's inputs are the defined tensor arguments
      int index = -1;
      for (const Tensor& t : args)
        if (t.defined() && ++index == v.producer) offset = t.storage_offset();
    }
    if (offset != 0)
      return (is_captured ? "captured tensor " : "tensor argument ") + std::to_string(v.producer) +
             " does not start its memory (storage offset " + std::to_string(offset) +
             "), where the graph writes it through views";
  }
  StorageOwners owners;
  for (size_t k = 0; k < captured.size(); ++k) {
    const std::pair<int, int64_t> now = alias_of(owners, captured[k], static_cast<int>(k));
    if (now == aliasing[k]) continue;
    const int then = aliasing[k].first, is = now.first;
    std::string why = "captured tensor " + std::to_string(k);
    if (then >= 0 && is == then)
      why += " lies at another offset in the memory of captured tensor " + std::to_string(then);
    else if (then >= 0)
      why += " no longer shares memory with captured tensor " + std::to_string(then);
    else
      why += " shares memory with captured tensor " + std::to_string(is);
    return why + ", unlike at the capture";
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i];
    if (!t.defined() || !t.impl()->storage()) continue;
    auto [it, fresh] = owners.emplace(t.impl()->storage().get(), -1 - static_cast<int>(i));
    if (fresh) continue;
    const int owner = it->second;
    return "tensor argument " + std::to_string(i) + " shares memory with " +
           (owner >= 0 ? "captured tensor " + std::to_string(owner)
                       : "tensor argument " + std::to_string(-1 - owner));
  }
  return "";
}

std::vector<std::vector<int64_t>> sizes_of(const std::vector<Arg>& args) {
  std::vector<std::vector<int64_t>> out;
  for (const Tensor& t : flat_tensors(args))
    out.push_back(t.defined() ? t.sizes().vec() : std::vector<int64_t>{});
  return out;
}

}  // namespace

CompiledFunction::CompiledFunction(FlatFn fn, CompileOptions options)
    : fn_(std::move(fn)), options_(std::move(options)) {
  name_ = options_.name().empty() ? "compiled function " + std::to_string(g_next_id++)
                                  : options_.name();
  check_backend_and_mode(options_, "compile: " + name_);
  KILN_CHECK(options_.recompile_limit() >= 1, "compile: recompile_limit must be at least 1, got ",
             options_.recompile_limit());
  policy_.dynamic = options_.dynamic();
}

int CompiledFunction::compilations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return compilations_;
}

void CompiledFunction::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  eager_reason_.reset();
  policy_ = DynamicPolicy{options_.dynamic(), {}, policy_.marks};
  first_sizes_.clear();
}

void CompiledFunction::set_dim_marks(std::map<std::pair<int, int>, DimMark> marks) {
  std::lock_guard<std::mutex> lock(mu_);
  policy_.marks = std::move(marks);
}

void CompiledFunction::set_captured_source(std::shared_ptr<CapturedSource> source) {
  std::lock_guard<std::mutex> lock(mu_);
  captured_source_ = std::move(source);
}

std::vector<Tensor> CompiledFunction::finish_call(const Entry& e, std::vector<Tensor> outs) {
  for (const auto& [leaf, k] : e.grad_outputs) leaf.mutable_grad() = k >= 0 ? outs[k] : Tensor();
  outs.resize(e.results);
  for (const auto& effect : e.after_call) effect();
  return outs;
}

void CompiledFunction::follow_grads(Entry& e, const StateEffects& fx) {
  const std::vector<Tensor>& captured = e.graph.captured_tensors;
  auto index_of = [&](const Tensor& t) -> int {
    for (size_t k = 0; k < captured.size(); ++k)
      if (t.defined() && captured[k].impl() == t.impl()) return static_cast<int>(k);
    return -1;
  };
  for (const StateEffects::Entry& r : fx.read) {
    const int leaf = index_of(r.leaf);
    e.guards.grads.push_back(
        {(leaf >= 0 ? "captured[" + std::to_string(leaf) + "]" : "a tensor the function read") +
             ".grad",
         r.leaf, r.grad.defined()});
    if (const int k = index_of(r.grad); k >= 0) e.grad_inputs.emplace_back(k, r.leaf);
  }
}

CompiledFunction::Entry::Entry() : id(g_next_entry_id++) {}
CompiledFunction::Entry::~Entry() = default;

bool CompiledFunction::captured_for(const Entry& e, std::vector<Tensor>& captured,
                                    std::string* why) const {
  if (captured_source_) return captured_source_->find(e.captured_places.get(), captured, why);
  captured = e.graph.captured_tensors;
  for (const auto& [k, leaf] : e.grad_inputs) {
    const Tensor& g = leaf.grad();
    if (!g.defined()) {
      if (why) *why = "captured[" + std::to_string(k) + "] is a .grad that is now None";
      return false;
    }
    captured[k] = g;
  }
  return true;
}

CompiledFunction::Capture CompiledFunction::capture(const std::vector<Arg>& args, bool training) {
  std::vector<std::weak_ptr<TensorImpl>> traced;
  Capture c = capture_graph(args, training, traced);
  // The tracer and everything the capture made are gone: a traced tensor still alive is held by
  // a variable the function assigned, which a graph cannot replay and which now holds no data.
  KILN_CHECK(std::all_of(traced.begin(), traced.end(), [](const auto& t) { return t.expired(); }),
             "compile: ", name_,
             " kept a tensor it computed past the call (it assigned one to a variable that "
             "outlives the function: a module member, a tensor captured by reference, a "
             "container). A graph cannot replay that assignment, and the variable now holds a "
             "traced tensor without data; return the tensor from the function instead, or update "
             "the variable in place (copy_)");
  return c;
}

CompiledFunction::Capture CompiledFunction::capture_graph(
    const std::vector<Arg>& args, bool training,
    std::vector<std::weak_ptr<TensorImpl>>& traced_tensors) {
  auto entry = std::make_shared<Entry>();
  entry->env = std::make_unique<ShapeEnv>();
  Tracer tracer(*entry->env);
  CapturedState grads(tracer);  // puts back each .grad the function set, before the check below
  // Filled as the capture ends, whichever way, while the tracer still holds what it traced.
  struct Remember {
    const Tracer& tracer;
    std::vector<std::weak_ptr<TensorImpl>>& out;
    ~Remember() { out = tracer.traced_tensors(); }
  } remember{tracer, traced_tensors};
  std::vector<Tensor> outs;
  StateEffects fx;
  try {
    std::vector<Arg> traced = make_traced_args(args, policy_, *entry->env, tracer, entry->guards);
    outs = tracer.run([&] { return fn_(traced); }, &grads);
    fx = grads.finish();
  } catch (const GraphBreak& e) {
    return {nullptr, e.what(), ""};
  } catch (const DataDependentError& e) {
    return {nullptr, e.what(), ""};
  } catch (const Error& e) {
    return {nullptr, "", e.what()};
  }
  if (captured_source_ && (!fx.read.empty() || !fx.written.empty() || !fx.deferred.empty()))
    return {nullptr,
            "a regionally compiled forward that reads or sets .grad or steps an optimizer is not "
            "captured",
            ""};
  entry->results = outs.size();
  entry->after_call = fx.deferred;
  entry->runs_backward = fx.ran_backward;
  bool sets_computed_grads = false;
  for (const StateEffects::Write& w : fx.written) {
    entry->grad_outputs.emplace_back(w.leaf, w.grad.defined() ? static_cast<int>(outs.size()) : -1);
    if (w.grad.defined()) outs.push_back(w.grad);
    sets_computed_grads = sets_computed_grads || w.grad.defined();
  }
  // A training graph's outputs are its node's outputs; a .grad the function computed is not one
  // (then the graph is replayed on the eager kernels, which record the backward).
  if (training && options_.backend() == "codegen" && !fx.ran_backward && !sets_computed_grads &&
      wants_gradients(tracer)) {
    std::string why;
    try {
      compile_training(*entry, tracer, outs);
    } catch (const GraphBreak& e) {
      why = e.what();
    } catch (const DataDependentError& e) {
      why = e.what();
    } catch (const KernelsUnavailable& e) {
      why = e.what();
    }
    if (!why.empty()) {
      log(LogKind::Perf, name_ + " runs on the eager kernels, which record the backward: " + why);
      return capture(args, false);
    }
    finish_guards(entry->guards, entry->graph, *entry->env);
    follow_grads(*entry, fx);
    return {entry, "", ""};
  }
  entry->graph = tracer.finish(outs);
  finish_guards(entry->guards, entry->graph, *entry->env);
  const int traced_ops = static_cast<int>(entry->graph.nodes.size());
  const PassStats stats = simplify(entry->graph);
  reinplace_input_writes(entry->graph);
  if (stats.merged + stats.removed > 0)
    log(LogKind::Graph, name_ + ": " + std::to_string(traced_ops) + " ops traced, " +
                            std::to_string(stats.merged) + " merged as common subexpressions, " +
                            std::to_string(stats.removed) + " unused ones removed");
  follow_grads(*entry, fx);
  if (options_.backend() == "codegen" && (fx.ran_backward || !needs_autograd(entry->guards))) {
    try {
      entry->program = std::make_unique<CodegenProgram>(entry->graph, autotune());
    } catch (const KernelsUnavailable& e) {
      log(LogKind::Perf, name_ + ": " + e.what());
    }
  }
  return {entry, "", ""};
}

void CompiledFunction::compile_training(Entry& entry, Tracer& tracer,
                                        const std::vector<Tensor>& results) {
  entry.training = std::make_unique<TrainingGraphs>(trace_training(tracer, results));
  TrainingGraphs& t = *entry.training;
  simplify(t.forward);
  simplify(t.backward);
  log(LogKind::Graph, name_ + ": training graph; the forward saves " +
                          std::to_string(t.forward.outputs.size() - t.results) + " values (" +
                          std::to_string(t.saved_bytes) +
                          " bytes besides captured tensors) and the backward recomputes " +
                          std::to_string(t.recomputed_ops) + " ops:\n" + t.backward.str());
  entry.graph = t.forward;  // for the guards, explain() and the logs
  entry.program = std::make_unique<CodegenProgram>(t.forward, autotune());
  entry.backward_program = std::make_unique<CodegenProgram>(t.backward, autotune());
}

std::vector<Tensor> CompiledFunction::run(const std::shared_ptr<const Entry>& e,
                                          const std::vector<Arg>& args,
                                          const std::vector<Tensor>& captured,
                                          const std::vector<int64_t>& symbols) const {
  std::vector<Tensor> inputs = flat_tensors(args);
  std::erase_if(inputs, [](const Tensor& t) { return !t.defined(); });
  if (e->training)
    return finish_call(*e, run_training(e, args, std::move(inputs), captured, symbols));
  std::optional<NoGradGuard> no_grad;
  if (e->runs_backward) no_grad.emplace();
  if (e->program) return finish_call(*e, e->program->run(inputs, captured, symbols));
  return finish_call(*e, replay(e->graph, inputs, captured, symbols));
}

std::vector<Tensor> CompiledFunction::run_training(const std::shared_ptr<const Entry>& e,
                                                   const std::vector<Arg>& args,
                                                   std::vector<Tensor> inputs,
                                                   const std::vector<Tensor>& captured,
                                                   const std::vector<int64_t>& symbols) const {
  const TrainingGraphs& t = *e->training;
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    outs = e->program->run(inputs, captured, symbols);
  }
  const std::vector<Tensor> saved(outs.begin() + static_cast<std::ptrdiff_t>(t.results),
                                  outs.end());
  outs.resize(t.results);
  std::string graph_key = std::to_string(e->id);
  for (int64_t s : symbols) graph_key += " " + std::to_string(s);
  auto node = std::make_shared<CompiledBackward>(
      name_,
      [e, symbols](std::vector<Tensor> in) {
        return e->backward_program->run(std::move(in), {}, symbols);
      },
      [e, symbols](std::vector<Tensor> in) {
        return replay(e->training->backward, in, {}, symbols);
      },
      std::move(graph_key), t.differentiable_results, t.grad_targets);
  node->ctx.save_for_backward(saved);
  std::vector<Tensor> no_gradient;
  for (size_t k = 0; k < outs.size(); ++k)
    if (outs[k].defined() &&
        std::find(t.differentiable_results.begin(), t.differentiable_results.end(),
                  static_cast<int>(k)) == t.differentiable_results.end())
      no_gradient.push_back(outs[k]);
  node->ctx.mark_non_differentiable(no_gradient);
  // The node's inputs: the arguments, then the captured tensors (grad_targets index them).
  inputs.insert(inputs.end(), captured.begin(), captured.end());
  node->finish(inputs, outs, std::vector<bool>(inputs.size(), true));
  FlatFn eager = captured_source_ ? captured_source_->bind(fn_) : fn_;
  node->set_eager_call([eager = std::move(eager), args] { return eager(args); }, inputs);
  return outs;
}

std::vector<Tensor> CompiledFunction::fall_back(const std::string& reason,
                                                const std::vector<Arg>& args) {
  KILN_CHECK(!options_.fullgraph(), "compile: ", name_,
             " cannot be captured as one graph (fullgraph=true): ", reason);
  log(LogKind::Recompiles, name_ + " runs eagerly from now on: " + reason);
  return fn_(args);
}

std::vector<Tensor> CompiledFunction::call(const std::vector<Arg>& args) {
  // Called while another function is being captured: its ops join that capture.
  if (has_traced_tensor(args)) return fn_(args);
  std::unique_lock<std::mutex> lock(mu_);
  if (eager_reason_) {
    lock.unlock();
    return fn_(args);
  }
  std::vector<int64_t> symbols;
  std::vector<Tensor> captured;
  std::string why;
  for (const auto& e : entries_) {
    if (captured_for(*e, captured, &why) && e->guards.check(args, captured, symbols, &why)) {
      std::shared_ptr<Entry> hit = e;
      lock.unlock();
      return run_or_fall_back(hit, args, captured, symbols);
    }
  }
  if (!entries_.empty()) {
    if (static_cast<int>(entries_.size()) >= options_.recompile_limit()) {
      eager_reason_ = "the recompile limit (" + std::to_string(options_.recompile_limit()) +
                      ") was reached; the last guard that failed: " + why;
      const std::string reason = *eager_reason_;
      lock.unlock();
      return fall_back(reason, args);
    }
    log(LogKind::Recompiles, "recompiling " + name_ + ": " + why);
    // Automatic dynamic: the sizes that changed since the first capture become symbolic.
    if (!policy_.dynamic) {
      const auto now = sizes_of(args);
      for (size_t k = 0; k < now.size() && k < first_sizes_.size(); ++k)
        for (size_t d = 0; d < now[k].size() && d < first_sizes_[k].size(); ++d)
          if (now[k][d] != first_sizes_[k][d])
            policy_.changed.insert({static_cast<int>(k), static_cast<int>(d)});
    }
  } else {
    first_sizes_ = sizes_of(args);
  }
  Capture c = capture(args);
  if (!c.error.empty()) {
    // Its eager run raises the error with the arguments' real sizes, where the capture's may
    // name symbols ("3 != s0").
    lock.unlock();
    log(LogKind::Recompiles,
        name_ + " fails on these arguments; this call runs eagerly: " + c.error);
    return fn_(args);
  }
  if (!c.entry) {
    eager_reason_ = c.fallback;
    lock.unlock();
    return fall_back(c.fallback, args);
  }
  ++compilations_;
  c.entry->changes_inputs = std::any_of(c.entry->graph.nodes.begin(), c.entry->graph.nodes.end(),
                                        [](const Node& n) { return n.op->is_inplace; });
  if (c.entry->changes_inputs)
    c.entry->captured_aliasing = captured_aliasing(c.entry->graph.captured_tensors);
  if (captured_source_)
    c.entry->captured_places = captured_source_->locate(c.entry->graph.captured_tensors);
  log(LogKind::Graph, "captured " + name_ + ":\n" + c.entry->graph.str());
  log(LogKind::Guards, "guards of " + name_ + ":\n" + c.entry->guards.str());
  entries_.push_back(c.entry);
  // Every guard holds for the arguments it was made from.
  KILN_CHECK(c.entry->guards.check(args, c.entry->graph.captured_tensors, symbols, &why),
             "compile: internal error: ", name_, " fails its own guard ", why);
  lock.unlock();
  return run_or_fall_back(c.entry, args, c.entry->graph.captured_tensors, symbols);
}

std::vector<Tensor> CompiledFunction::run_or_fall_back(const std::shared_ptr<const Entry>& e,
                                                       const std::vector<Arg>& args,
                                                       const std::vector<Tensor>& captured,
                                                       const std::vector<int64_t>& symbols) const {
  if (e->changes_inputs)
    if (const std::string why =
            shared_memory(e->graph, flat_tensors(args), captured, e->captured_aliasing);
        !why.empty()) {
      const std::string reason =
          why +
          ", and the graph changes its inputs in place as if none did; this call runs eagerly";
      KILN_CHECK(!options_.fullgraph(), "compile: ", name_, " (fullgraph=true): ", reason);
      log(LogKind::Recompiles, name_ + ": " + reason);
      return fn_(args);
    }
  return run(e, args, captured, symbols);
}

Explanation CompiledFunction::explain(const std::vector<Arg>& args) {
  Explanation x;
  x.function = name_;
  std::lock_guard<std::mutex> lock(mu_);
  Capture c = capture(args);
  if (!c.entry) {
    x.fallback_reasons.push_back(
        c.error.empty() ? c.fallback : "the function fails on these arguments: " + c.error);
    return x;
  }
  x.graph_count = 1;
  x.op_count = static_cast<int>(c.entry->graph.nodes.size());
  x.graph = c.entry->graph.str();
  x.guards = c.entry->guards.str();
  if (c.entry->program) {
    x.kernel_count = c.entry->program->schedule().loops();
    x.schedule = c.entry->program->schedule().str(c.entry->graph);
  }
  return x;
}

std::string Explanation::str() const {
  std::ostringstream os;
  os << function << ": " << graph_count << " graph" << (graph_count == 1 ? "" : "s") << ", "
     << op_count << " ops\n";
  for (const auto& r : fallback_reasons) os << "runs eagerly: " << r << "\n";
  if (!graph.empty()) os << "graph:\n" << graph;
  if (!schedule.empty())
    os << kernel_count << " fused kernel" << (kernel_count == 1 ? "" : "s") << ":\n" << schedule;
  if (!guards.empty()) os << "guards:\n" << guards;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Explanation& e) { return os << e.str(); }

}  // namespace kiln::compiler

#include "kiln/compile/codegen/program.h"

#include <optional>

#include "kiln/compile/codegen/gemm_autotune.h"
#include "kiln/compile/codegen/prebuilt_kernels.h"

#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/compile/logs.h"
#include "kiln/compile/replay.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn/util.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

void parallel_for(int64_t begin, int64_t end, int64_t grain, KilnRangeFn fn, void* ctx) {
  cpu::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) { fn(ctx, b, e); });
}

const KilnKernelRuntime kRuntime{&parallel_for};

std::vector<int64_t> evaluate(const SymShape& s, std::span<const int64_t> symbols) {
  std::vector<int64_t> v(s.size());
  for (size_t i = 0; i < s.size(); ++i) v[i] = s[i].evaluate(symbols);
  return v;
}

// The class indices an nll gather reads, checked before its kernel runs (the kernel trusts them).
void check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  auto check = [&](const auto* t) {
    for (int64_t i = 0; i < target.numel(); ++i)
      if (t[i] != ignore_index && (t[i] < 0 || t[i] >= classes))
        nn_util::check_class_index(t[i], classes, ignore_index);
  };
  if (target.dtype() == kInt64)
    check(target.data_ptr<int64_t>());
  else
    check(target.data_ptr<int32_t>());
}

// nll_loss's outputs from the per-row losses and weights its gather wrote, summed in row order
// in double as eager's kernel sums them.
void finish_nll(const Graph& g, const RowReduction::Nll& nll, std::span<const double> loss,
                std::span<const double> weight, std::vector<Tensor>& values) {
  double total = 0, weight_sum = 0;
  for (size_t r = 0; r < loss.size(); ++r) {
    total += loss[r];
    weight_sum += weight[r];
  }
  const Node& n = g.nodes[nll.node];
  const TensorOptions options(g.values[n.outputs[0]].dtype);
  if (nll.reduction == 0)
    values[n.outputs[0]] = tensor(std::vector<double>(loss.begin(), loss.end()), options);
  else
    values[n.outputs[0]] = full({}, nll.reduction == 2 ? total : total / weight_sum, options);
  values[n.outputs[1]] = full({}, weight_sum, options);
}

// Per step of the schedule, the values that no later step reads and that are not results (a
// kernel's buffers are its loads and stores).
std::vector<std::vector<int>> last_reads(const Graph& g, const Schedule& schedule,
                                         const GeneratedUnit& unit) {
  std::vector<int> last(g.values.size(), -1);
  for (size_t s = 0; s < schedule.steps.size(); ++s) {
    const Step& step = schedule.steps[s];
    auto touch = [&](const std::vector<int>& ids) {
      for (int id : ids)
        if (id >= 0) last[id] = static_cast<int>(s);
    };
    if (!step.is_kernel) {
      touch(g.nodes[step.index].inputs);
      touch(g.nodes[step.index].outputs);  // dropped at once when nothing reads them
      continue;
    }
    touch(unit.kernels[step.index].buffers);
    const FusedKernel& fk = schedule.kernels[step.index];
    if (fk.row && fk.row->nll) last[fk.row->nll->target] = static_cast<int>(s);
  }
  for (int id : g.outputs)
    if (id >= 0) last[id] = -1;
  std::vector<std::vector<int>> by_step(schedule.steps.size());
  for (size_t id = 0; id < last.size(); ++id)
    if (last[id] >= 0) by_step[last[id]].push_back(static_cast<int>(id));
  return by_step;
}

}  // namespace

CodegenProgram::CodegenProgram(const Graph& graph, bool autotune)
    : graph_(graph), autotune_(autotune) {
  schedule_ = compiler::schedule(graph);
  const cpu::CpuCapability level = codegen_level();
  unit_ = generate_cpp(graph, schedule_, level);
  last_read_by_ = last_reads(graph, schedule_, unit_);
  log(LogKind::Fusion, std::to_string(schedule_.kernels.size()) + " fused kernels, " +
                           std::to_string(graph.nodes.size()) + " ops:\n" + schedule_.str(graph));
  for (const std::string& why : schedule_.extern_reasons)
    log(LogKind::Fusion, "extern call: " + why);
  log(LogKind::Code, unit_.source);
  if (unit_.kernels.empty()) return;
  library_ = load_kernels(unit_.source, level);
  for (const KernelSource& k : unit_.kernels)
    kernels_.push_back(reinterpret_cast<KilnKernelFn>(library_->symbol(k.symbol)));
  epilogues_ = find_gemm_epilogues(graph, schedule_, unit_);
  for (const GemmEpilogue& e : epilogues_)
    log(LogKind::Fusion,
        "kernel " + std::to_string(e.kernel) + " may run inside the product %" +
            std::to_string(graph.nodes[schedule_.steps[e.gemm_step].index].outputs[0]));
}

std::vector<char*> CodegenProgram::kernel_buffers(int k, std::vector<Tensor>& values,
                                                  std::span<const int64_t> symbols,
                                                  int pending) const {
  const FusedKernel& fk = schedule_.kernels[k];
  const KernelSource& ks = unit_.kernels[k];
  for (int id : fk.stores) {
    const Value& v = graph_.values[id];
    values[id] = empty(evaluate(v.sizes, symbols), TensorOptions(v.dtype).device(v.device));
  }
  std::vector<char*> buffers;
  buffers.reserve(ks.buffers.size());
  for (int id : ks.buffers) {
    if (id == pending) {
      buffers.push_back(nullptr);
      continue;
    }
    const Tensor& t = values[id];
    const Value& v = graph_.values[id];
    // The kernel was generated for the strides the trace saw; the guards promise them.
    if (!v.strides.empty()) {
      const auto st = t.strides();
      for (size_t d = 0; d < v.strides.size(); ++d)
        KILN_CHECK(t.sizes()[d] == 1 || st[d] == v.strides[d].evaluate(symbols),
                   "compile: internal error: value %", id, " has strides ", st,
                   " where the generated kernel expects ", v.strides);
    }
    buffers.push_back(static_cast<char*>(t.data_ptr()));
  }
  return buffers;
}

std::vector<int64_t> CodegenProgram::kernel_params(int k, std::span<const int64_t> symbols) const {
  const KernelSource& ks = unit_.kernels[k];
  std::vector<int64_t> params(ks.params.size());
  for (size_t i = 0; i < params.size(); ++i) params[i] = ks.params[i].evaluate(symbols);
  return params;
}

void CodegenProgram::run_kernel(int k, std::vector<Tensor>& values,
                                std::span<const int64_t> symbols) const {
  const FusedKernel& fk = schedule_.kernels[k];
  const KernelSource& ks = unit_.kernels[k];
  std::vector<char*> buffers = kernel_buffers(k, values, symbols);
  const std::vector<int64_t> params = kernel_params(k, symbols);
  const RowReduction::Nll* nll = fk.row && fk.row->nll ? &*fk.row->nll : nullptr;
  std::vector<double> per_row;
  int64_t rows = 1;
  if (ks.per_row_scratch > 0) {
    for (size_t d = 0; d + fk.row->reduced_dims < fk.sizes.size(); ++d)
      rows *= fk.sizes[d].evaluate(symbols);
    per_row.resize(static_cast<size_t>(rows * ks.per_row_scratch));
    for (int i = 0; i < ks.per_row_scratch; ++i)
      buffers.push_back(reinterpret_cast<char*>(per_row.data() + i * rows));
  }
  if (nll) check_targets(values[nll->target], fk.sizes[1].evaluate(symbols), nll->ignore_index);
  kernels_[k](buffers.data(), params.data(), &kRuntime);
  if (nll) {
    const std::span<const double> all(per_row);
    finish_nll(graph_, *nll, all.first(rows), all.subspan(rows, rows), values);
  }
}

std::vector<Tensor> CodegenProgram::run(std::vector<Tensor> inputs,
                                        const std::vector<Tensor>& captured,
                                        std::span<const int64_t> symbols) const {
  std::vector<Tensor> values = bind_inputs(graph_, inputs, captured);
  inputs.clear();
  if (autotune_) {
    const GemmAutotuneScope scope;
    run_steps(values, symbols);
  } else {
    run_steps(values, symbols);
  }
  return graph_outputs(graph_, values);
}

void CodegenProgram::run_steps(std::vector<Tensor>& values,
                               std::span<const int64_t> symbols) const {
  std::vector<Tensor> args;
  auto epilogue = epilogues_.begin();
  std::optional<GemmEpilogueRun> inside;  // the product step's run, until its kernel's step
  for (size_t i = 0; i < schedule_.steps.size(); ++i) {
    const Step& s = schedule_.steps[i];
    const int step = static_cast<int>(i);
    if (s.is_kernel) {
      const bool ran =
          inside && epilogue[-1].kernel_step == step && inside->done(values[epilogue[-1].read]);
      if (!ran) run_kernel(s.index, values, symbols);
      if (inside && epilogue[-1].kernel_step == step) inside.reset();
    } else if (epilogue != epilogues_.end() && epilogue->gemm_step == step) {
      const int k = epilogue->kernel;
      inside.emplace(*epilogue, kernels_[k], library_->path() + ":" + unit_.kernels[k].symbol,
                     kernel_buffers(k, values, symbols, epilogue->read), kernel_params(k, symbols),
                     &kRuntime, autotune_);
      ++epilogue;
      inside->run_product([&] { run_node(graph_, graph_.nodes[s.index], values, symbols, args); });
    } else {
      run_node(graph_, graph_.nodes[s.index], values, symbols, args);
    }
    for (int id : last_read_by_[i]) values[id] = Tensor();
  }
}

}  // namespace kiln::compiler

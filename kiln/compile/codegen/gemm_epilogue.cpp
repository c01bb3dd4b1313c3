#include "kiln/compile/codegen/gemm_epilogue.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "kiln/backend/cpu/parallel.h"
#include "kiln/compile/codegen/gemm_autotune.h"
#include "kiln/compile/logs.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/registry.h"

namespace kiln::compiler {
namespace {

bool is_product(const Node& n) {
  const std::string& op = n.op->name;
  return op == "mm" || op == "bmm" || op == "addmm" || op == "baddbmm";
}

bool is_view(const Node& n) { return n.op->lowering_.kind == lowering::Lowering::Kind::View; }

bool dense_float_cpu(const Value& v) {
  return v.dtype == kFloat32 && v.device.type() == DeviceType::CPU &&
         is_contiguous(v.sizes, v.strides);
}

// The panel a thread's kernel call covers, in rows of the product (of `rows`): the kernel's own
// parallel_for is cut down to it. A kernel whose range is not a whole number of units per row of
// the product (it loops over something coarser) cannot be cut and reports `failed`.
struct Panel {
  int64_t begin, end, rows;
  std::atomic<bool>* failed;
};
thread_local const Panel* current_panel = nullptr;

void panel_parallel_for(int64_t begin, int64_t end, int64_t, KilnRangeFn fn, void* ctx) {
  const Panel& p = *current_panel;
  const int64_t units = end - begin;
  if (units % p.rows != 0) {
    p.failed->store(true, std::memory_order_relaxed);
    return;
  }
  const int64_t per_row = units / p.rows;
  fn(ctx, begin + p.begin * per_row, begin + p.end * per_row);
}

const KilnKernelRuntime kPanelRuntime{&panel_parallel_for};

thread_local GemmEpilogueRun* active_run = nullptr;

std::atomic<int64_t> run_inside{0};

// max-autotune's choices in this process: whether a kernel runs inside a product.
struct Choices {
  std::mutex mu;
  std::unordered_map<std::string, bool> inside;
};
Choices& choices() {
  static Choices c;
  return c;
}

}  // namespace

int64_t gemm_epilogues_run_inside() { return run_inside.load(); }

std::vector<GemmEpilogue> find_gemm_epilogues(const Graph& g, const Schedule& schedule,
                                              const GeneratedUnit& unit) {
  std::vector<GemmEpilogue> found;
  const auto& steps = schedule.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].is_kernel) continue;
    const Node& product = g.nodes[steps[i].index];
    if (!is_product(product) || !dense_float_cpu(g.values[product.outputs[0]])) continue;
    std::vector<int> family = {product.outputs[0]};  // the product and its views
    auto in_family = [&](int id) {
      return std::find(family.begin(), family.end(), id) != family.end();
    };
    size_t j = i + 1;
    for (; j < steps.size() && !steps[j].is_kernel; ++j) {
      const Node& n = g.nodes[steps[j].index];
      if (!is_view(n) || n.inputs.empty() || !in_family(n.inputs[0])) break;
      family.push_back(n.outputs[0]);
    }
    if (j == steps.size() || !steps[j].is_kernel) continue;
    const FusedKernel& fk = schedule.kernels[steps[j].index];
    // A row reduction qualifies when its rows are the product's: over trailing dims in memory
    // order, not the whole kernel (that one splits its single row among the threads), not
    // columns, no nll gather (it needs scratch per row).
    if (fk.row && (fk.row->columns || !fk.row->order.empty() || fk.row->nll ||
                   fk.row->reduced_dims >= static_cast<int>(fk.sizes.size())))
      continue;
    std::vector<int> reads;
    for (int id : fk.loads)
      if (in_family(id)) reads.push_back(id);
    if (reads.size() != 1 || !dense_float_cpu(g.values[reads[0]]) ||
        !same_shape(g.values[reads[0]].sizes, fk.sizes))
      continue;
    const std::vector<int>& buffers = unit.kernels[steps[j].index].buffers;
    const auto slot = std::find(buffers.begin(), buffers.end(), reads[0]);
    if (slot == buffers.end()) continue;
    GemmEpilogue e;
    e.gemm_step = static_cast<int>(i);
    e.kernel_step = static_cast<int>(j);
    e.kernel = steps[j].index;
    e.read = reads[0];
    e.slot = static_cast<int>(slot - buffers.begin());
    found.push_back(std::move(e));
  }
  return found;
}

GemmEpilogueRun::GemmEpilogueRun(const GemmEpilogue& plan, KilnKernelFn kernel,
                                 std::string kernel_id, std::vector<char*> buffers,
                                 std::vector<int64_t> params, const KilnKernelRuntime* runtime,
                                 bool autotune)
    : plan_(plan),
      kernel_(kernel),
      kernel_id_(std::move(kernel_id)),
      buffers_(std::move(buffers)),
      params_(std::move(params)),
      runtime_(runtime),
      autotune_(autotune) {}

void GemmEpilogueRun::run_product(const std::function<void()>& step) {
  struct Install {
    GemmEpilogueRun* run;
    GemmEpilogueRun* outer = active_run;
    explicit Install(GemmEpilogueRun* r) : run(r) {
      run->previous_ = cpu::set_gemm_interceptor(&GemmEpilogueRun::intercept);
      active_run = run;
    }
    ~Install() {
      cpu::set_gemm_interceptor(run->previous_);
      active_run = outer;
    }
  } install(this);
  step();
}

bool GemmEpilogueRun::done(const Tensor& read) const {
  const bool done = ran_ && calls_ == 1 && !failed_.load() && read.defined() &&
                    read.data_ptr() == c_ && read.is_contiguous() && read.numel() == rows_ * n_;
  if (done) ++run_inside;
  return done;
}

bool GemmEpilogueRun::intercept(const cpu::GemmArgs& g) {
  GemmEpilogueRun& run = *active_run;
  // Only the step's first product is the one the kernel reads (an op making several would be
  // caught by done()).
  if (++run.calls_ == 1) {
    if (run.inside(g)) {
      run.ran_ = run.by_panels(g, static_cast<char*>(g.c));
      if (run.ran_) return true;
    }
    // max-autotune has looked the product's implementation up once for this call already.
    if (run.tuned_) return cpu::gemm_with(*run.tuned_, g);
  }
  return run.previous_ && run.previous_(g);
}

void GemmEpilogueRun::after_panel(void* self, int64_t row_begin, int64_t row_end) {
  auto& run = *static_cast<GemmEpilogueRun*>(self);
  if (run.failed_.load(std::memory_order_relaxed)) return;
  const Panel panel{row_begin, row_end, run.rows_, &run.failed_};
  current_panel = &panel;
  run.kernel_(run.buffers_.data(), run.params_.data(), &kPanelRuntime);
  current_panel = nullptr;
}

bool GemmEpilogueRun::by_panels(const cpu::GemmArgs& g, char* c) {
  c_ = c;
  rows_ = g.batch * g.m;
  n_ = g.n;
  buffers_[plan_.slot] = c;
  return cpu::kiln_gemm_by_panels(g, &GemmEpilogueRun::after_panel, this);
}

// Whether the kernel runs inside this product: by default where Kiln's kernel would compute it
// anyway; under max-autotune as timed on a scratch output (the kernel's stores are written, and
// written again by the real run).
bool GemmEpilogueRun::inside(const cpu::GemmArgs& g) {
  if (g.dtype != kFloat32) return false;
  if (!autotune_) return cpu::is_kiln_gemm_default(g);
  tuned_ = tuned_gemm_impl(g);
  const std::string key = gemm_autotune_key(g) + " " + kernel_id_;
  {
    std::lock_guard<std::mutex> lock(choices().mu);
    const auto it = choices().inside.find(key);
    if (it != choices().inside.end()) return it->second;
  }
  cpu::GemmArgs trial = g;
  const Tensor scratch = empty({g.batch * g.m * g.n}, TensorOptions(kFloat32));
  trial.c = scratch.data_ptr();
  trial.ldc = g.n;
  trial.c_batch_stride = g.m * g.n;
  trial.beta = 0;
  char* c = static_cast<char*>(trial.c);
  const double inside_s = best_time_of([&] { return by_panels(trial, c); });
  const bool can = !failed_.load();
  const double after_s = best_time_of([&] {
    if (!tuned_ || !cpu::gemm_with(*tuned_, trial)) {
      const cpu::GemmInterceptor self = cpu::set_gemm_interceptor(nullptr);
      cpu::gemm(trial);
      cpu::set_gemm_interceptor(self);
    }
    kernel_(buffers_.data(), params_.data(), runtime_);
    return true;
  });
  failed_.store(false);
  const bool use = can && inside_s < after_s;
  {
    std::lock_guard<std::mutex> lock(choices().mu);
    choices().inside.emplace(key, use);
  }
  std::ostringstream report;
  report << "max-autotune: gemm " << key << ": its epilogue inside the product "
         << (can ? std::to_string(inside_s * 1e6) + " us" : std::string("cannot")) << ", after it "
         << after_s * 1e6 << " us; chose " << (use ? "inside" : "after");
  log(LogKind::Perf, report.str());
  return use;
}

}  // namespace kiln::compiler

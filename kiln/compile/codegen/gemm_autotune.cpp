#include "kiln/compile/codegen/gemm_autotune.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/backend/cpu/cpu_capability.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/compile/codegen/kernel_cache.h"
#include "kiln/compile/logs.h"
#include "kiln/ops/ops.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

// Where a matrix's elements run: "n" rows contiguous, "t" columns contiguous (a transposed
// operand), "s" neither; a batch stride of 0 repeats one matrix.
char layout(const cpu::MatrixRef& r) {
  return r.col_stride == 1 ? 'n' : r.row_stride == 1 ? 't' : 's';
}

}  // namespace

std::string gemm_autotune_key(const cpu::GemmArgs& g) {
  std::ostringstream k;
  k << g.dtype;
  if (g.out_dtype() != g.dtype) k << "->" << g.out_dtype();
  k << " " << g.batch << "x" << g.m << "x" << g.n << "x" << g.k << " " << layout(g.a) << layout(g.b)
    << (g.a.batch_stride == 0 ? "A" : "") << (g.b.batch_stride == 0 ? "B" : "") << " threads "
    << cpu::num_threads();
  return k.str();
}

double best_time_of(const std::function<bool()>& f) {
  using clock = std::chrono::steady_clock;
  double best = std::numeric_limits<double>::infinity();
  for (int run = 0; run < 4; ++run) {
    const auto start = clock::now();
    if (!f()) return std::numeric_limits<double>::infinity();
    const double s = std::chrono::duration<double>(clock::now() - start).count();
    if (run > 0) best = std::min(best, s);
  }
  return best;
}

namespace {

// The choices of this process, and the file they persist in (one per CPU level).
struct Table {
  std::mutex mu;
  std::unordered_map<std::string, cpu::GemmImpl> choices;
  std::unordered_map<std::string, bool> from_disk;
  bool loaded = false;
  GemmAutotuneStats stats;

  static fs::path file() {
    return fs::path(cache_dir()) / "autotune" /
           (std::string("gemm-") + cpu::to_string(cpu::cpu_capability()) + ".txt");
  }

  // Reads the file once: lines "impl<TAB>key"; lines it cannot read are skipped.
  void load() {
    if (loaded) return;
    loaded = true;
    std::ifstream in(file());
    std::string line;
    while (std::getline(in, line)) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos) continue;
      const std::string name = line.substr(0, tab), key = line.substr(tab + 1);
      for (cpu::GemmImpl impl : {cpu::GemmImpl::OpenBlas, cpu::GemmImpl::OneDnn,
                                 cpu::GemmImpl::Kiln, cpu::GemmImpl::Converted})
        if (name == cpu::to_string(impl)) {
          choices[key] = impl;
          from_disk[key] = true;
        }
    }
  }

  // Appends one choice; a line is written whole, so processes appending at once do not mix.
  static void save(const std::string& key, cpu::GemmImpl impl) {
    std::error_code ec;
    fs::create_directories(file().parent_path(), ec);
    std::ofstream out(file(), std::ios::app);
    out << (std::string(cpu::to_string(impl)) + "\t" + key + "\n") << std::flush;
  }
};

Table& table() {
  static Table t;
  return t;
}

// Times every candidate on a scratch output (the caller's C is left alone) and returns the
// fastest.
cpu::GemmImpl tune(const cpu::GemmArgs& g, const std::vector<cpu::GemmImpl>& candidates,
                   const std::string& key) {
  cpu::GemmArgs trial = g;
  const Tensor scratch = empty({g.batch * g.m * g.n}, TensorOptions(g.out_dtype()));
  trial.c = scratch.data_ptr();
  trial.ldc = g.n;
  trial.c_batch_stride = g.m * g.n;
  trial.beta = 0;
  cpu::GemmImpl best = candidates.front();
  double best_s = std::numeric_limits<double>::infinity();
  std::ostringstream report;
  for (cpu::GemmImpl impl : candidates) {
    const double s = best_time_of([&] { return cpu::gemm_with(impl, trial); });
    report << " " << cpu::to_string(impl) << " " << s * 1e6 << " us";
    if (s < best_s) {
      best_s = s;
      best = impl;
    }
  }
  log(LogKind::Perf,
      "max-autotune: gemm " + key + ":" + report.str() + "; chose " + cpu::to_string(best));
  return best;
}

bool run_tuned(const cpu::GemmArgs& g) {
  const std::optional<cpu::GemmImpl> impl = tuned_gemm_impl(g);
  return impl && cpu::gemm_with(*impl, g);
}

}  // namespace

std::optional<cpu::GemmImpl> tuned_gemm_impl(const cpu::GemmArgs& g) {
  const std::vector<cpu::GemmImpl> candidates = cpu::gemm_candidates(g);
  if (candidates.size() < 2) return std::nullopt;
  const std::string key = gemm_autotune_key(g);
  Table& t = table();
  cpu::GemmImpl impl;
  {
    std::unique_lock<std::mutex> lock(t.mu);
    t.load();
    auto it = t.choices.find(key);
    if (it != t.choices.end()) {
      impl = it->second;
      ++(t.from_disk[key] ? t.stats.disk_hits : t.stats.memory_hits);
    } else {
      lock.unlock();  // timing runs products, which may use the thread pool
      impl = tune(g, candidates, key);
      lock.lock();
      if (t.choices.emplace(key, impl).second) {
        t.from_disk[key] = false;
        ++t.stats.tuned;
        Table::save(key, impl);
      }
    }
  }
  return impl;
}

GemmAutotuneScope::GemmAutotuneScope() : previous_(cpu::set_gemm_interceptor(&run_tuned)) {}

GemmAutotuneScope::~GemmAutotuneScope() { cpu::set_gemm_interceptor(previous_); }

GemmAutotuneStats gemm_autotune_stats() {
  std::lock_guard<std::mutex> lock(table().mu);
  return table().stats;
}

void clear_gemm_autotune_memory() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.choices.clear();
  t.from_disk.clear();
  t.loaded = false;
}

}  // namespace kiln::compiler

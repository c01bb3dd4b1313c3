// Kiln's side of bench/export_bench.py: an exported program, saved and loaded back, against the
// module it came from. float32 on the CPU, eval() and NoGradGuard, Kiln's default threads.
//
// Prints one line per figure, "case label value" (microseconds unless the label says bytes):
//   lstm kiln_module 1234.5      the original module's forward
//   lstm kiln_export 1234.5      the loaded program's run (eager kernels)
//   lstm kiln_compiled 1234.5    kiln::compile of a function calling the loaded program's run
//   lstm kiln_aot 1234.5         kiln_model_run of the program's `kiln aot` library (dlopen)
// and the one-off costs (export, save, load, the compiled function's first call). Lines that
// start with '#' are notes; a case that fails prints "# case label ERROR: message" and goes on.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/export/kiln_model.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

// The median of single calls of fn, timed one by one after a warm-up, for at least `seconds`
// and at least `min_calls` calls (bench/export_bench.py's median_us).
double median_us(const std::function<void()>& fn, double seconds = 1.0, int min_calls = 20) {
  for (int i = 0; i < 5; ++i) fn();
  std::vector<double> us;
  const Clock::time_point start = Clock::now();
  while (static_cast<int>(us.size()) < min_calls || us_since(start) < seconds * 1e6) {
    const Clock::time_point t = Clock::now();
    fn();
    us.push_back(us_since(t));
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  return us[us.size() / 2];
}

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

void report(const std::string& name, const std::string& label, double value) {
  std::printf("%s %s %.1f\n", name.c_str(), label.c_str(), value);
  std::fflush(stdout);
}

// Runs one step of a case; an error is reported and the case goes on without that figure.
bool step(const std::string& name, const std::string& label, const std::function<void()>& fn) {
  try {
    fn();
    return true;
  } catch (const std::exception& e) {
    std::printf("# %s %s ERROR: %s\n", name.c_str(), label.c_str(), e.what());
    std::fflush(stdout);
    return false;
  }
}

std::string temp_path(const std::string& name) {
  return "/tmp/export_bench_" + name + "_" + std::to_string(::getpid()) + ".kpt";
}

void bench_aot(const std::string& name, const ExportedProgram& q, const Tensor& x,
               const Tensor& expected);

// The four forms of one model on one input: the module, its loaded program, the loaded program
// under kiln::compile, and its AOT library.
void bench_model(const std::string& name, const std::function<Tensor(const Tensor&)>& forward,
                 const Tensor& x, const DynamicShapes& dims) {
  Tensor expected;
  step(name, "kiln_module", [&] {
    expected = forward(x);
    report(name, "kiln_module", median_us([&] { forward(x); }));
  });

  const std::string path = temp_path(name);
  std::optional<ExportedProgram> program;
  if (!step(name, "kiln_export_program", [&] {
        const Clock::time_point t = Clock::now();
        program.emplace(export_program(forward, {x}, dims));
        report(name, "kiln_export_program_once", us_since(t));
      }))
    return;
  if (!step(name, "kiln_save", [&] {
        const Clock::time_point t = Clock::now();
        program->save(path);
        report(name, "kiln_save_once", us_since(t));
      }))
    return;
  std::optional<ExportedProgram> loaded;
  const bool ok = step(name, "kiln_load", [&] {
    const Clock::time_point t = Clock::now();
    loaded.emplace(load_program(path));
    report(name, "kiln_load_once", us_since(t));
  });
  std::filesystem::remove(path);
  if (!ok) return;
  const ExportedProgram& q = *loaded;

  step(name, "kiln_export", [&] {
    const Tensor y = q.run({x})[0];
    if (expected.defined() && !allclose(y, expected, 1e-4, 1e-5))
      std::printf("# %s kiln_export MISMATCH: max |diff| %g\n", name.c_str(),
                  max(abs(y - expected)).item<float>());
    report(name, "kiln_export", median_us([&] { q.run({x}); }));
  });

  step(name, "kiln_compiled", [&] {
    auto compiled = kiln::compile([&](const Tensor& in) { return q.run({in})[0]; });
    const Clock::time_point t = Clock::now();
    const Tensor y = compiled(x);
    report(name, "kiln_compiled_first_call", us_since(t));
    const compiler::Explanation e = compiled.explain(x);
    std::printf("# %s kiln_compiled: %d graph(s), %d ops, %d generated kernels%s\n", name.c_str(),
                e.graph_count, e.op_count, e.kernel_count,
                e.fallback_reasons.empty() ? "" : ", runs eagerly:");
    for (const std::string& why : e.fallback_reasons) std::printf("#   %s\n", why.c_str());
    if (expected.defined() && !allclose(y, expected, 1e-4, 1e-5))
      std::printf("# %s kiln_compiled MISMATCH: max |diff| %g\n", name.c_str(),
                  max(abs(y - expected)).item<float>());
    report(name, "kiln_compiled", median_us([&] { compiled(x); }));
  });

  bench_aot(name, q, x, expected);
}

// The loaded program built into a shared library (aot_compile), opened with dlopen and run through
// its C interface.
void bench_aot(const std::string& name, const ExportedProgram& q, const Tensor& x,
               const Tensor& expected) {
  const std::string so = "/tmp/export_bench_" + name + "_" + std::to_string(::getpid()) + ".so";
  step(name, "kiln_aot", [&] {
    Clock::time_point t = Clock::now();
    const int units = aot_compile(q, so);
    report(name, "kiln_aot_build_once", us_since(t));
    void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    KILN_CHECK(lib != nullptr, "dlopen ", so, ": ", dlerror());
    auto fn = [&](const char* sym) {
      void* f = dlsym(lib, sym);
      KILN_CHECK(f != nullptr, "missing ", sym);
      return f;
    };
    auto create = reinterpret_cast<decltype(&kiln_model_create)>(fn("kiln_model_create"));
    auto run = reinterpret_cast<decltype(&kiln_model_run)>(fn("kiln_model_run"));
    auto output = reinterpret_cast<decltype(&kiln_result_output)>(fn("kiln_result_output"));
    auto destroy_result =
        reinterpret_cast<decltype(&kiln_result_destroy)>(fn("kiln_result_destroy"));
    auto destroy = reinterpret_cast<decltype(&kiln_model_destroy)>(fn("kiln_model_destroy"));
    auto last_error = reinterpret_cast<decltype(&kiln_last_error)>(fn("kiln_last_error"));
    KilnModel* model = nullptr;
    t = Clock::now();
    KILN_CHECK(create(&model) == 0, "kiln_model_create: ", last_error());
    report(name, "kiln_aot_create_once", us_since(t));
    std::printf("# %s kiln_aot: %d generated kernel units\n", name.c_str(), units);
    const std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
    const KilnTensor in{x.data_ptr(), KILN_FLOAT32, static_cast<int32_t>(x.dim()), sizes.data()};
    auto call = [&] {
      KilnResult* r = nullptr;
      KILN_CHECK(run(model, &in, 1, &r) == 0, "kiln_model_run: ", last_error());
      return r;
    };
    KilnResult* r = call();
    KilnTensor y;
    output(r, 0, &y);
    const Tensor got = from_blob(y.data, IntArrayRef(y.sizes, y.ndim)).clone();
    destroy_result(r);
    if (expected.defined() && !allclose(got, expected, 1e-4, 1e-5))
      std::printf("# %s kiln_aot MISMATCH: max |diff| %g\n", name.c_str(),
                  max(abs(got - expected)).item<float>());
    report(name, "kiln_aot", median_us([&] { destroy_result(call()); }));
    destroy(model);
    dlclose(lib);
  });
  std::filesystem::remove(so);
}

struct MlpImpl : nn::Module {
  MlpImpl(int64_t width, int64_t hidden) {
    fc1 = register_module("fc1", nn::Linear(width, hidden));
    fc2 = register_module("fc2", nn::Linear(hidden, hidden));
    fc3 = register_module("fc3", nn::Linear(hidden, width));
  }
  Tensor forward(const Tensor& x) {
    return fc3->forward(relu(fc2->forward(relu(fc1->forward(x)))));
  }
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

// Loading a program of about 100 MB: an MLP of 25.2M float32 parameters.
void bench_load() {
  const std::string name = "mlp100m";
  const std::string path = temp_path(name);
  step(name, "kiln_load", [&] {
    auto mlp = std::make_shared<MlpImpl>(1024, 4096);
    mlp->eval();
    const Tensor x = randn({8, 1024});
    export_program(mlp, {x}, {{{0, Dim("batch", 2, 1024)}}}).save(path);
    report(name, "kiln_file_bytes", static_cast<double>(std::filesystem::file_size(path)));
    std::vector<double> us;
    for (int i = 0; i < 6; ++i) {
      const Clock::time_point t = Clock::now();
      const ExportedProgram q = load_program(path);
      if (i > 0) us.push_back(us_since(t));  // the first load is a warm-up (page cache)
    }
    report(name, "kiln_load", median_of(us));
  });
  std::filesystem::remove(path);
}

}  // namespace

int main() {
  manual_seed(0);
  NoGradGuard no_grad;
  std::printf("# kiln threads %d\n", get_num_threads());
  const Dim seq("seq", 2, 512), batch("batch", 2, 64);
  const DynamicShapes seq_batch = {{{0, seq}, {1, batch}}};

  auto lstm = nn::LSTM(nn::LSTMOptions(128, 256).num_layers(2));
  lstm->eval();
  bench_model(
      "lstm", [&](const Tensor& x) { return std::get<0>(lstm->forward(x)); }, randn({64, 8, 128}),
      seq_batch);

  // Two post-norm layers, not batch_first: [seq, batch, d_model], as torch's defaults.
  auto options = nn::TransformerEncoderLayerOptions(256, 4).dim_feedforward(1024).dropout(0.0);
  auto layer1 = nn::TransformerEncoderLayer(options);
  auto layer2 = nn::TransformerEncoderLayer(options);
  layer1->eval();
  layer2->eval();
  bench_model(
      "transformer", [&](const Tensor& x) { return layer2->forward(layer1->forward(x)); },
      randn({128, 8, 256}), seq_batch);

  bench_load();
}

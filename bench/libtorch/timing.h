#pragma once
// What the Kiln-vs-libtorch programs (kiln_vs_torch, gnn_vs_torch, train_vs_torch) share: the
// Runner interface both sides implement, the timing method, command-line options, number
// formatting and the Markdown report. Neither library's headers are included here.
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

// One prepared computation: run() performs it once (keeping its result alive until the next
// run, as `y = op(x)` in a loop does) and result() returns the last result as float32 values.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual void run() = 0;
  virtual std::vector<float> result() = 0;
};

// Thread counts and versions of the two libraries (kiln_env.cpp, torch_env.cpp).
void set_kiln_threads(int n);
void set_torch_threads(int n);
int kiln_threads();
int torch_threads();
std::string torch_version();
std::string kiln_bf16_matmul_path();
std::string kiln_f32_matmul_path();
// The vector instruction set each side's CPU kernels run with (KILN_CPU_CAPABILITY and
// ATEN_CPU_CAPABILITY lower them).
std::string kiln_cpu_capability();
std::string torch_cpu_capability();

struct Options {
  std::string out;
  int threads = 0;  // 0: libtorch's default (the number of cores)
  bool quick = false;
  std::string machine = "unknown", command, kiln_version = "unknown";
};
// --out PATH --threads N --quick --machine TEXT --command TEXT --kiln-version TEXT; exits with a
// message on anything else.
Options parse_options(int argc, char** argv, const std::string& default_out,
                      const std::string& program);
// Gives both libraries o.threads threads (libtorch's default when 0).
void apply_threads(const Options& o);

// How results are compared after warm-up: max |Kiln - libtorch| / max |libtorch| against
// `tolerance`, or (tolerance < 0) not compared, the two results only printed (training losses
// from different initial weights).
struct Timing {
  double kiln_s = 0, torch_s = 0;  // median seconds per call
  int64_t iters = 0;               // calls per repeat, the same for both sides
  int repeats = 0;
  double max_rel_err = 0;
  bool compared = false, match = true;
  std::vector<float> kiln_result, torch_result;  // kept only when not compared
};

// Warm-up (allocator caches, thread pools, BLAS buffers), comparison of the results, then
// `repeats` repeats alternating Kiln and libtorch, each timing a loop of `iters` calls with iters
// chosen so that a repeat lasts about `target_s`; the time per call is the median of the repeats
// (9, or 3 for calls over 0.5 s).
Timing time_pair(Runner& kiln, Runner& torch, double tolerance, double target_s = 0.05);

std::string time_str(double seconds);
std::string shape_str(const std::vector<int64_t>& shape);
std::string elements_str(int64_t n);
std::string ratio_str(const Timing& t);
// "ok 1.2e-07" / "MISMATCH 3.0e-01", or both results when not compared.
std::string check_str(const Timing& t);
// The 1-minute load average: other processes competing for the cores make timings noisy.
std::string load_average();

// The lines every report starts with: title, what wrote it, command, machine, threads, versions.
// `method` describes how the numbers were obtained (appended to the Method line).
void write_report_header(std::ostringstream& md, const std::string& title,
                         const std::string& written_by, const Options& o);
void write_method(std::ostringstream& md, const std::string& method, double wall_s,
                  const std::string& load_before);
// Writes the report to o.out and prints it.
void save_report(const Options& o, const std::string& markdown);

// A named case of gnn_vs_torch / train_vs_torch: a row of the generic table.
struct Benchmark {
  std::string name, shape;
  std::function<std::unique_ptr<Runner>()> make_kiln, make_torch;
  double tolerance = 1e-4;
};

// Runs every case (printing a line per case to stderr as it goes) and writes the report: header,
// a table case | shape | Kiln | libtorch | ratio | check, and the cases slower than libtorch.
void run_cases(const Options& o, const std::string& title, const std::string& written_by,
               const std::string& method, const std::vector<Benchmark>& cases,
               double target_s = 0.05);

}  // namespace bench

// Times Kiln against libtorch on a fixed set of pointwise, reduction, softmax and matmul cases, in
// one process, with the same thread count, and writes the Kiln/libtorch time ratios as Markdown.
//
//   kiln_vs_torch --out RESULTS.md [--threads N] [--quick] [--machine TEXT] [--command TEXT]
//                 [--kiln-version TEXT]
//
// Method: for each case both sides get the same input values; each runs a few warm-up calls (the
// outputs are compared), then R repeats alternate Kiln and libtorch, each repeat timing a loop of
// `iters` calls (iters chosen so a repeat lasts about 50 ms); the reported time per call is the
// median over the repeats.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include "bench/libtorch/bench_case.h"

namespace bench {

const char* op_name(Op op) {
  switch (op) {
    case Op::Add:
      return "add";
    case Op::Mul:
      return "mul";
    case Op::Exp:
      return "exp";
    case Op::Gelu:
      return "gelu";
    case Op::SumAll:
      return "sum (all)";
    case Op::SumLastDim:
      return "sum (last dim)";
    case Op::AmaxLastDim:
      return "amax (last dim)";
    case Op::SoftmaxLastDim:
      return "softmax (last dim)";
    case Op::Matmul:
      return "matmul";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string out = "RESULTS.md";
  int threads = 0;  // 0: libtorch's default (the number of cores)
  bool quick = false;
  std::string machine = "unknown", command = "kiln_vs_torch", kiln_version = "unknown";
};

struct Result {
  Case c;
  double kiln_s = 0, torch_s = 0;
  double max_rel_err = 0;
  bool match = true;
};

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string elements_str(int64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

std::string time_str(double s) {
  char buf[32];
  if (s < 1e-6)
    std::snprintf(buf, sizeof buf, "%.0f ns", s * 1e9);
  else if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  else if (s < 1)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// The 1-minute load average: other processes competing for the cores make timings noisy.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one.empty() ? "unknown" : one;
}

std::vector<Case> all_cases(bool quick) {
  const std::vector<std::vector<int64_t>> shapes =
      quick ? std::vector<std::vector<int64_t>>{{1, 1}, {64, 1024}}
            : std::vector<std::vector<int64_t>>{
                  {1, 1}, {1, 1024}, {64, 1024}, {1024, 1024}, {16384, 1024}};
  const Op pointwise_and_rows[] = {Op::Add,    Op::Mul,        Op::Exp,         Op::Gelu,
                                   Op::SumAll, Op::SumLastDim, Op::AmaxLastDim, Op::SoftmaxLastDim};
  std::vector<Case> cases;
  for (bool bf16 : {false, true}) {
    for (Op op : pointwise_and_rows)
      for (const auto& s : shapes) {
        const bool binary = op == Op::Add || op == Op::Mul;
        cases.push_back({op, bf16, s, binary ? s : std::vector<int64_t>{}});
      }
    // Square products: 1, 1K, 64K, 1M and 16M elements per operand. libtorch's bfloat16 matmul
    // on CPUs without AVX-512 runs at under 1 GFLOP/s, so bf16 stops at 1024 x 1024.
    std::vector<int64_t> sizes =
        quick ? std::vector<int64_t>{1, 256} : std::vector<int64_t>{1, 32, 256, 1024, 4096};
    for (int64_t n : sizes) {
      if (bf16 && n > 1024) continue;
      cases.push_back({Op::Matmul, bf16, {n, n}, {n, n}});
    }
  }
  return cases;
}

std::vector<float> random_values(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

double seconds_per_call(Runner& r, int64_t iters) {
  const std::string load_before = load_average();
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) r.run();
  return std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(iters);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Result measure(const Case& c) {
  Result res{c};
  const std::vector<float> a = random_values(numel(c.a), 1);
  const std::vector<float> b = c.b.empty() ? std::vector<float>{} : random_values(numel(c.b), 2);
  std::unique_ptr<Runner> kiln = make_kiln_runner(c, a, b);
  std::unique_ptr<Runner> torch = make_torch_runner(c, a, b);

  // Warm-up (allocator caches, thread pools, BLAS buffers) and a per-call estimate.
  double estimate = 0;
  for (Runner* r : {kiln.get(), torch.get()}) {
    r->run();
    estimate = std::max(estimate, seconds_per_call(*r, 1));
    if (estimate < 1e-2) estimate = std::max(estimate, seconds_per_call(*r, 20));
  }
  const std::vector<float> yk = kiln->result(), yt = torch->result();
  double scale = 1e-6, err = 0;
  for (float v : yt) scale = std::max(scale, static_cast<double>(std::abs(v)));
  if (yk.size() != yt.size()) {
    res.match = false;
  } else {
    for (size_t i = 0; i < yk.size(); ++i) err = std::max(err, std::abs(double(yk[i]) - yt[i]));
    res.max_rel_err = err / scale;
    res.match = res.max_rel_err <= (c.bf16 ? 3e-2 : 1e-4);
  }

  const double target = 0.05;  // seconds per repeat
  const int64_t iters = std::clamp<int64_t>(static_cast<int64_t>(target / estimate), 1, 1000000);
  const int repeats = estimate > 0.5 ? 3 : 9;
  std::vector<double> tk, tt;
  for (int r = 0; r < repeats; ++r) {
    tk.push_back(seconds_per_call(*kiln, iters));
    tt.push_back(seconds_per_call(*torch, iters));
  }
  res.kiln_s = median(tk);
  res.torch_s = median(tt);
  return res;
}

void write_report(const Options& o, const std::vector<Result>& results, double wall_s,
                  const std::string& load_before) {
  std::ostringstream md;
  char ratio[32];
  md << "# Kiln vs libtorch on the CPU\n\n"
     << "Written by `bench/run.sh` (the program is bench/libtorch/main.cpp). Ratio = Kiln time / "
        "libtorch time for the same call: below 1.0 Kiln is faster.\n\n"
     << "- Command: `" << o.command << "`\n"
     << "- Machine: " << o.machine << "\n"
     << "- Threads: " << kiln_threads() << " for Kiln (kiln::set_num_threads) and "
     << torch_threads() << " for libtorch (at::set_num_threads)\n"
     << "- libtorch " << torch_version() << " (the pip wheel's C++ library); Kiln "
     << o.kiln_version << "\n"
     << "- Kiln's bfloat16 matmul: " << kiln_bf16_matmul_path() << "\n"
     << "- Method: same inputs for both, outputs compared after warm-up (column `check`: max "
        "|Kiln - libtorch| / max |libtorch|), then repeats alternating Kiln and libtorch, each "
        "timing a loop of calls lasting about 50 ms; the time per call is the median of 9 "
        "repeats (3 for calls over 0.5 s). Total run time "
     << static_cast<int>(wall_s) << " s; 1-minute load average " << load_before << " before, "
     << load_average() << " after.\n\n";

  md << "## Ratios\n\n| op | dtype | shape | elements | Kiln | libtorch | ratio | check |\n"
     << "|---|---|---|---:|---:|---:|---:|---|\n";
  for (const Result& r : results) {
    std::snprintf(ratio, sizeof ratio, "%.2f", r.kiln_s / r.torch_s);
    char err[32];
    std::snprintf(err, sizeof err, "%.1e", r.max_rel_err);
    md << "| " << op_name(r.c.op) << " | " << (r.c.bf16 ? "bfloat16" : "float32") << " | "
       << shape_str(r.c.a) << (r.c.op == Op::Matmul ? " @ " + shape_str(r.c.b) : "") << " | "
       << elements_str(numel(r.c.a)) << " | " << time_str(r.kiln_s) << " | " << time_str(r.torch_s)
       << " | " << ratio << " | "
       << (r.match ? std::string("ok ") + err : std::string("MISMATCH ") + err) << " |\n";
  }

  md << "\n## Per-op overhead (1-element tensors)\n\nThe time of one call on a 1-element input "
        "is almost entirely dispatch, allocation and bookkeeping.\n\n"
     << "| op | dtype | Kiln | libtorch | ratio |\n|---|---|---:|---:|---:|\n";
  for (const Result& r : results) {
    if (numel(r.c.a) != 1) continue;
    std::snprintf(ratio, sizeof ratio, "%.2f", r.kiln_s / r.torch_s);
    md << "| " << op_name(r.c.op) << " | " << (r.c.bf16 ? "bfloat16" : "float32") << " | "
       << time_str(r.kiln_s) << " | " << time_str(r.torch_s) << " | " << ratio << " |\n";
  }

  md << "\n## Cases slower than libtorch (ratio > 1.0)\n\n";
  int slower = 0;
  for (const Result& r : results) {
    if (r.kiln_s <= r.torch_s) continue;
    std::snprintf(ratio, sizeof ratio, "%.2f", r.kiln_s / r.torch_s);
    md << "- " << op_name(r.c.op) << " " << (r.c.bf16 ? "bfloat16" : "float32") << " "
       << shape_str(r.c.a) << ": " << ratio << "\n";
    ++slower;
  }
  if (!slower) md << "None.\n";

  std::ofstream(o.out) << md.str();
  std::cout << md.str();
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out")
      o.out = value();
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--machine")
      o.machine = value();
    else if (a == "--command")
      o.command = value();
    else if (a == "--kiln-version")
      o.kiln_version = value();
    else {
      std::cerr << "unknown argument " << a << "\n";
      std::exit(2);
    }
  }
  return o;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse(argc, argv);
  const int threads = o.threads > 0 ? o.threads : torch_threads();
  set_torch_threads(threads);
  set_kiln_threads(threads);
  const std::string load_before = load_average();
  const auto t0 = Clock::now();
  std::vector<Result> results;
  for (const Case& c : all_cases(o.quick)) {
    results.push_back(measure(c));
    const Result& r = results.back();
    std::fprintf(stderr, "%-18s %-8s %-22s kiln %-10s torch %-10s ratio %.2f%s\n", op_name(c.op),
                 c.bf16 ? "bf16" : "f32", shape_str(c.a).c_str(), time_str(r.kiln_s).c_str(),
                 time_str(r.torch_s).c_str(), r.kiln_s / r.torch_s, r.match ? "" : "  MISMATCH");
  }
  write_report(o, results, std::chrono::duration<double>(Clock::now() - t0).count(), load_before);
  return 0;
}

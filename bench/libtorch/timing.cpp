#include "bench/libtorch/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_per_call(Runner& r, int64_t iters) {
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) r.run();
  return std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(iters);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string values_str(const std::vector<float>& v) {
  std::string s;
  char buf[32];
  for (size_t i = 0; i < v.size() && i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.4g", i ? ", " : "", v[i]);
    s += buf;
  }
  return s.empty() ? "-" : s;
}

}  // namespace

Options parse_options(int argc, char** argv, const std::string& default_out,
                      const std::string& program) {
  Options o;
  o.out = default_out;
  o.command = program;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << program << ": " << a << " needs a value\n";
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
      std::cerr << program << ": unknown argument " << a
                << " (expected --out PATH, --threads N, --quick, --machine TEXT, --command TEXT, "
                   "--kiln-version TEXT)\n";
      std::exit(2);
    }
  }
  return o;
}

void apply_threads(const Options& o) {
  const int threads = o.threads > 0 ? o.threads : torch_threads();
  set_torch_threads(threads);
  set_kiln_threads(threads);
}

Timing time_pair(Runner& kiln, Runner& torch, double tolerance, double target_s) {
  Timing t;
  double estimate = 0;
  for (Runner* r : {&kiln, &torch}) {
    r->run();
    estimate = std::max(estimate, seconds_per_call(*r, 1));
    if (estimate < 1e-2) estimate = std::max(estimate, seconds_per_call(*r, 20));
  }
  std::vector<float> yk = kiln.result(), yt = torch.result();
  if (tolerance < 0) {
    t.kiln_result = std::move(yk);
    t.torch_result = std::move(yt);
  } else {
    t.compared = true;
    if (yk.size() != yt.size()) {
      t.match = false;
      t.max_rel_err = INFINITY;
    } else {
      double scale = 1e-6, err = 0;
      for (float v : yt) scale = std::max(scale, static_cast<double>(std::abs(v)));
      for (size_t i = 0; i < yk.size(); ++i) {
        const double d = std::abs(static_cast<double>(yk[i]) - yt[i]);
        err = std::isnan(d) ? INFINITY : std::max(err, d);
      }
      t.max_rel_err = err / scale;
      t.match = t.max_rel_err <= tolerance;
    }
  }

  t.iters = std::clamp<int64_t>(static_cast<int64_t>(target_s / estimate), 1, 1000000);
  t.repeats = estimate > 0.5 ? 3 : 9;
  std::vector<double> tk, tt;
  for (int r = 0; r < t.repeats; ++r) {
    tk.push_back(seconds_per_call(kiln, t.iters));
    tt.push_back(seconds_per_call(torch, t.iters));
  }
  t.kiln_s = median(tk);
  t.torch_s = median(tt);
  return t;
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

std::string ratio_str(const Timing& t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", t.kiln_s / t.torch_s);
  return buf;
}

std::string check_str(const Timing& t) {
  if (!t.compared)
    return "Kiln " + values_str(t.kiln_result) + " / libtorch " + values_str(t.torch_result);
  char err[32];
  std::snprintf(err, sizeof err, "%.1e", t.max_rel_err);
  return (t.match ? "ok " : "MISMATCH ") + std::string(err);
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one;
  f >> one;
  return one.empty() ? "unknown" : one;
}

void write_report_header(std::ostringstream& md, const std::string& title,
                         const std::string& written_by, const Options& o) {
  md << "# " << title << "\n\n"
     << "Written by " << written_by
     << ". Ratio = Kiln time / libtorch time for the same call: below 1.0 Kiln is faster.\n\n"
     << "- Command: `" << o.command << "`\n"
     << "- Machine: " << o.machine << "\n"
     << "- Threads: " << kiln_threads() << " for Kiln (kiln::set_num_threads) and "
     << torch_threads() << " for libtorch (at::set_num_threads)\n"
     << "- libtorch " << torch_version() << " (the pip wheel's C++ library); Kiln "
     << o.kiln_version << "\n"
     << "- Vector instruction set: Kiln " << kiln_cpu_capability() << ", libtorch "
     << torch_cpu_capability() << "\n";
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  md << "- OMP_WAIT_POLICY (both libraries' threads are OpenMP teams): "
     << (wait_policy ? wait_policy : "unset (spin, then sleep)") << "\n";
}

void write_method(std::ostringstream& md, const std::string& method, double wall_s,
                  const std::string& load_before) {
  md << "- Method: " << method << " Total run time " << static_cast<int>(wall_s)
     << " s; 1-minute load average " << load_before << " before, " << load_average()
     << " after.\n\n";
}

void save_report(const Options& o, const std::string& markdown) {
  std::ofstream f(o.out);
  f << markdown;
  if (!f) std::cerr << "cannot write " << o.out << "\n";
  std::cout << markdown;
}

void run_cases(const Options& o, const std::string& title, const std::string& written_by,
               const std::string& method, const std::vector<Benchmark>& cases, double target_s) {
  const std::string load_before = load_average();
  const auto t0 = Clock::now();
  std::vector<Timing> timings;
  for (const Benchmark& c : cases) {
    // One case's inputs at a time: the GNN cases hold hundreds of MB each.
    std::unique_ptr<Runner> kiln = c.make_kiln();
    std::unique_ptr<Runner> torch = c.make_torch();
    timings.push_back(time_pair(*kiln, *torch, c.tolerance, target_s));
    const Timing& t = timings.back();
    std::fprintf(stderr, "%-28s %-26s kiln %-10s torch %-10s ratio %s  %s\n", c.name.c_str(),
                 c.shape.c_str(), time_str(t.kiln_s).c_str(), time_str(t.torch_s).c_str(),
                 ratio_str(t).c_str(), check_str(t).c_str());
  }

  std::ostringstream md;
  write_report_header(md, title, written_by, o);
  write_method(md, method, std::chrono::duration<double>(Clock::now() - t0).count(), load_before);
  md << "## Ratios\n\n| case | shape | Kiln | libtorch | ratio | calls timed | check |\n"
     << "|---|---|---:|---:|---:|---:|---|\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const Timing& t = timings[i];
    md << "| " << cases[i].name << " | " << cases[i].shape << " | " << time_str(t.kiln_s) << " | "
       << time_str(t.torch_s) << " | " << ratio_str(t) << " | " << t.repeats << " x " << t.iters
       << " | " << check_str(t) << " |\n";
  }
  md << "\n## Cases slower than libtorch (ratio > 1.0)\n\n";
  int slower = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (timings[i].kiln_s <= timings[i].torch_s) continue;
    md << "- " << cases[i].name << " " << cases[i].shape << ": " << ratio_str(timings[i]) << "\n";
    ++slower;
  }
  if (!slower) md << "None.\n";
  save_report(o, md.str());
}

}  // namespace bench

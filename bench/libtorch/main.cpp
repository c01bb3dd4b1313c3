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
#include <chrono>
#include <cstdio>
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
    case Op::MulScalar:
      return "mul (by 2.5)";
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

struct Result {
  Case c;
  Timing t;
};

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

std::vector<Case> all_cases(bool quick) {
  const std::vector<std::vector<int64_t>> shapes =
      quick ? std::vector<std::vector<int64_t>>{{1, 1}, {64, 1024}}
            : std::vector<std::vector<int64_t>>{
                  {1, 1}, {1, 1024}, {64, 1024}, {1024, 1024}, {16384, 1024}};
  const Op pointwise_and_rows[] = {Op::Add,        Op::Mul,         Op::MulScalar,
                                   Op::Exp,        Op::Gelu,        Op::SumAll,
                                   Op::SumLastDim, Op::AmaxLastDim, Op::SoftmaxLastDim};
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

Result measure(const Case& c) {
  const std::vector<float> a = random_values(numel(c.a), 1);
  const std::vector<float> b = c.b.empty() ? std::vector<float>{} : random_values(numel(c.b), 2);
  std::unique_ptr<Runner> kiln = make_kiln_runner(c, a, b);
  std::unique_ptr<Runner> torch = make_torch_runner(c, a, b);
  return {c, time_pair(*kiln, *torch, c.bf16 ? 3e-2 : 1e-4)};
}

void write_report(const Options& o, const std::vector<Result>& results, double wall_s,
                  const std::string& load_before) {
  std::ostringstream md;
  write_report_header(md, "Kiln vs libtorch on the CPU",
                      "`bench/run.sh` (the program is bench/libtorch/main.cpp)", o);
  md << "- Kiln's float32 matmul: " << kiln_f32_matmul_path() << "\n";
  md << "- Kiln's bfloat16 matmul: " << kiln_bf16_matmul_path() << "\n";
  write_method(md,
               "same inputs for both, outputs compared after warm-up (column `check`: max "
               "|Kiln - libtorch| / max |libtorch|), then repeats alternating Kiln and libtorch, "
               "each timing a loop of calls lasting about 50 ms; the time per call is the median "
               "of 9 repeats (3 for calls over 0.5 s).",
               wall_s, load_before);
  md << "Graph neural network ops (scatter_reduce, gather, index_select, sort, topk, CSR mm): "
        "[RESULTS-gnn.md](RESULTS-gnn.md). Training steps (MLP, CNN, the demo's GPT): "
        "[RESULTS-train.md](RESULTS-train.md).\n\n";

  md << "## Ratios\n\n| op | dtype | shape | elements | Kiln | libtorch | ratio | check |\n"
     << "|---|---|---|---:|---:|---:|---:|---|\n";
  for (const Result& r : results) {
    md << "| " << op_name(r.c.op) << " | " << (r.c.bf16 ? "bfloat16" : "float32") << " | "
       << shape_str(r.c.a) << (r.c.op == Op::Matmul ? " @ " + shape_str(r.c.b) : "") << " | "
       << elements_str(numel(r.c.a)) << " | " << time_str(r.t.kiln_s) << " | "
       << time_str(r.t.torch_s) << " | " << ratio_str(r.t) << " | " << check_str(r.t) << " |\n";
  }

  md << "\n## Per-op overhead (1-element tensors)\n\nThe time of one call on a 1-element input "
        "is almost entirely dispatch, allocation and bookkeeping.\n\n"
     << "| op | dtype | Kiln | libtorch | ratio |\n|---|---|---:|---:|---:|\n";
  for (const Result& r : results) {
    if (numel(r.c.a) != 1) continue;
    md << "| " << op_name(r.c.op) << " | " << (r.c.bf16 ? "bfloat16" : "float32") << " | "
       << time_str(r.t.kiln_s) << " | " << time_str(r.t.torch_s) << " | " << ratio_str(r.t)
       << " |\n";
  }

  md << "\n## Cases slower than libtorch (ratio > 1.0)\n\n";
  int slower = 0;
  for (const Result& r : results) {
    if (r.t.kiln_s <= r.t.torch_s) continue;
    md << "- " << op_name(r.c.op) << " " << (r.c.bf16 ? "bfloat16" : "float32") << " "
       << shape_str(r.c.a) << ": " << ratio_str(r.t) << "\n";
    ++slower;
  }
  if (!slower) md << "None.\n";
  save_report(o, md.str());
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "RESULTS.md", "kiln_vs_torch");
  apply_threads(o);
  const std::string load_before = load_average();
  const auto t0 = Clock::now();
  std::vector<Result> results;
  for (const Case& c : all_cases(o.quick)) {
    results.push_back(measure(c));
    const Timing& t = results.back().t;
    std::fprintf(stderr, "%-18s %-8s %-22s kiln %-10s torch %-10s ratio %s%s\n", op_name(c.op),
                 c.bf16 ? "bf16" : "f32", shape_str(c.a).c_str(), time_str(t.kiln_s).c_str(),
                 time_str(t.torch_s).c_str(), ratio_str(t).c_str(), t.match ? "" : "  MISMATCH");
  }
  write_report(o, results, std::chrono::duration<double>(Clock::now() - t0).count(), load_before);
  return 0;
}

// Times Kiln against libtorch on the graph neural network ops of issue 3, in one process, with the
// same thread count and the same data: scatter_reduce along dim 0 (each reduction, 1M edges, 64
// features, 100K destination rows), gather, index_select, sort, topk and CSR sparse-dense mm
// (each reduction). Writes the Kiln/libtorch time ratios as Markdown.
//
//   gnn_vs_torch --out RESULTS-gnn.md [--threads N] [--quick] [--machine TEXT] [--command TEXT]
//                [--kiln-version TEXT]
//
// --quick uses 64K edges over 8K rows (a smoke test of the program, not a measurement).
#include <algorithm>
#include <random>
#include <string>

#include "bench/libtorch/gnn_case.h"

namespace bench {
namespace {

std::vector<float> uniform_values(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

GnnData make_graph(int64_t edges, int64_t nodes, int64_t features) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> node(0, nodes - 1);
  GnnData d;
  d.edges = edges, d.nodes = nodes, d.features = features;
  d.index.resize(edges);
  for (auto& i : d.index) i = node(rng);
  d.src = uniform_values(edges * features, rng);
  d.table = uniform_values(nodes * features, rng);

  d.crow.assign(nodes + 1, 0);
  for (int64_t e = 0; e < edges; ++e) ++d.crow[node(rng) + 1];
  for (int64_t r = 0; r < nodes; ++r) d.crow[r + 1] += d.crow[r];
  d.col.resize(edges);
  for (auto& c : d.col) c = node(rng);
  for (int64_t r = 0; r < nodes; ++r)
    std::sort(d.col.begin() + d.crow[r], d.col.begin() + d.crow[r + 1]);
  d.values = uniform_values(edges, rng);
  return d;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "RESULTS-gnn.md", "gnn_vs_torch");
  apply_threads(o);

  const int64_t E = o.quick ? 1 << 16 : 1 << 20, N = o.quick ? 8192 : 100000, F = 64;
  const GnnData graph = make_graph(E, N, F);
  std::mt19937 rng(11);
  const int64_t sort_n = o.quick ? 1 << 16 : 1 << 20, rows = o.quick ? 64 : 1024;
  const std::vector<float> sort_1d = uniform_values(sort_n, rng);
  const std::vector<float> sort_rows = uniform_values(rows * 1024, rng);
  const std::vector<float> topk_rows = uniform_values(rows * 4096, rng);

  std::vector<Benchmark> cases;
  auto add = [&](const std::string& name, const std::string& shape, const GnnCase& c) {
    cases.push_back({name, shape, [&graph, c] { return make_kiln_gnn_runner(c, graph); },
                     [&graph, c] { return make_torch_gnn_runner(c, graph); }, 1e-4});
  };
  const std::string edges = "src " + shape_str({E, F}) + " -> " + shape_str({N, F});
  for (const char* reduce : {"sum", "mean", "amax", "amin", "prod"})
    add(std::string("scatter_reduce ") + reduce, edges, {GnnOp::ScatterReduce, reduce});
  add("gather", shape_str({N, F}) + " -> " + shape_str({E, F}), {GnnOp::Gather});
  add("index_select", shape_str({N, F}) + " -> " + shape_str({E, F}), {GnnOp::IndexSelect});
  add("sort", shape_str({sort_n}), {GnnOp::Sort, "", 0, &sort_1d, {sort_n}});
  add("sort (last dim)", shape_str({rows, 1024}), {GnnOp::Sort, "", 0, &sort_rows, {rows, 1024}});
  for (int64_t k : {10, 100})
    add("topk k=" + std::to_string(k) + " (last dim)", shape_str({rows, 4096}),
        {GnnOp::Topk, "", k, &topk_rows, {rows, 4096}});
  const std::string csr =
      "csr " + shape_str({N, N}) + " (" + elements_str(E) + " nonzeros) @ " + shape_str({N, F});
  for (const char* reduce : {"sum", "mean", "amax", "amin"})
    add(std::string("sparse::mm ") + reduce, csr, {GnnOp::SparseMm, reduce});

  run_cases(o, "Kiln vs libtorch: graph neural network ops",
            "`bash bench/run.sh --gnn` (the program is bench/libtorch/gnn_main.cpp)",
            "float32, int64 indices drawn uniformly (the same values for both libraries); "
            "scatter_reduce with include_self=true into zeros (ones for prod) and an index "
            "expanded from [E] to [E, 64] (index.unsqueeze(1).expand(E, 64)), as message passing "
            "uses it; libtorch's CSR product is at::_sparse_mm(csr, dense, reduce), what Python's "
            "torch.sparse.mm calls. Outputs compared after warm-up (column `check`: max |Kiln - "
            "libtorch| / max |libtorch|; sort and topk compare the values), then repeats "
            "alternating Kiln and libtorch, each timing a loop of calls lasting about 50 ms; the "
            "time per call is the median of 9 repeats (3 for calls over 0.5 s).",
            cases);
  return 0;
}

// The repository's example models through export_program, a program file's bytes and back: each
// loaded program, run on the eager kernels and compiled, gives the module's outputs at every size
// its Dims allow, and the loaded MNIST net fine-tunes as the module trains (issue 15).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/sparse.h"
#include "tests/export/export_test_util.h"

namespace kiln {
namespace {

using testing::round_trip;

// examples/mnist.cpp's Net, spelled as there with the torch:: names of compat/.
struct MnistNet : torch::nn::Module {
  MnistNet()
      : conv1(torch::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(torch::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return torch::log_softmax(x, /*dim=*/1);
  }
  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};

// examples/gcn.cpp's GCN: two graph convolutions with a relu between, each after dropout.
// `propagate` sums weight * x[src] into each destination node, as the example's does.
constexpr int64_t kFeatures = 16, kHidden = 32, kCommunities = 4;

struct GcnImpl : nn::Module {
  GcnImpl() {
    w1 = register_module("w1", nn::Linear(kFeatures, kHidden));
    w2 = register_module("w2", nn::Linear(kHidden, kCommunities));
  }
  template <class Propagate>
  Tensor layers(const Tensor& x, Propagate propagate) {
    Tensor h = propagate(w1(dropout(x, 0.5, is_training()))).relu();
    return propagate(w2(dropout(h, 0.5, is_training())));
  }
  // The example's --scatter message passing, over an edge list the caller passes in. Sizes come
  // from the tensors (sym_size, -1), so the node and edge counts stay dynamic.
  Tensor forward(const Tensor& x, const Tensor& src, const Tensor& dst, const Tensor& weight) {
    return layers(x, [&](const Tensor& m) {
      Tensor messages = m.index_select(0, src) * weight.unsqueeze(1);
      Tensor index = dst.unsqueeze(1).expand({-1, m.sym_size(1)});
      return m.new_zeros({m.sym_size(0), m.sym_size(1)}).scatter_reduce(0, index, messages, "sum");
    });
  }
  nn::Linear w1 = nullptr, w2 = nullptr;
};
KILN_MODULE(Gcn);

// A graph of n nodes, its edges in CSR order (by destination) with self loops, and the example's
// normalised weights D^-1/2 (A + I) D^-1/2: a ring with a chord from every third node.
struct SmallGraph {
  Tensor src, dst, weight, adjacency;
};

SmallGraph make_graph(int64_t n) {
  std::vector<std::vector<int64_t>> neighbours(n);
  auto connect = [&](int64_t i, int64_t j) {
    neighbours[i].push_back(j);
    if (i != j) neighbours[j].push_back(i);
  };
  for (int64_t i = 0; i < n; ++i) {
    connect(i, i);
    connect(i, (i + 1) % n);
    if (i % 3 == 0 && n > 6) connect(i, (i + n / 2) % n);
  }
  std::vector<int64_t> crow{0}, src, dst;
  std::vector<float> w;
  for (int64_t i = 0; i < n; ++i) {
    std::sort(neighbours[i].begin(), neighbours[i].end());
    neighbours[i].erase(std::unique(neighbours[i].begin(), neighbours[i].end()),
                        neighbours[i].end());
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j : neighbours[i]) {
      src.push_back(j), dst.push_back(i);
      w.push_back(static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(neighbours[i].size() * neighbours[j].size()))));
    }
    crow.push_back(static_cast<int64_t>(src.size()));
  }
  SmallGraph g{kiln::tensor(src), kiln::tensor(dst), kiln::tensor(w), {}};
  g.adjacency = sparse_csr_tensor(kiln::tensor(crow), g.src, g.weight, {n, n});
  return g;
}

TEST(ExportExamples, GcnWithScatterMessagesRunsAnyGraphSizeAfterLoading) {
  manual_seed(11);
  Gcn model;
  model->eval();
  const Dim nodes("nodes", 2, 4096), edges("edges", 2, 65536);
  const SmallGraph g = make_graph(12);
  ExportedProgram p =
      round_trip(export_program(model, {randn({12, kFeatures}), g.src, g.dst, g.weight},
                                {{{0, nodes}}, {{0, edges}}, {{0, edges}}, {{0, edges}}}));
  EXPECT_EQ(p.named_parameters().keys(),
            (std::vector<std::string>{"w1.weight", "w1.bias", "w2.weight", "w2.bias"}));
  NoGradGuard no_grad;
  std::vector<std::pair<std::vector<Tensor>, Tensor>> cases;
  for (int64_t n : {12, 5, 31, 200}) {
    const SmallGraph h = make_graph(n);
    std::vector<Tensor> in{randn({n, kFeatures}), h.src, h.dst, h.weight};
    cases.emplace_back(in, model->forward(in[0], in[1], in[2], in[3]));
    EXPECT_TRUE(p.run(in)[0].equal(cases.back().second)) << n;
  }
  p.compile();
  for (const auto& [in, expected] : cases)
    EXPECT_TRUE(allclose(p.run(in)[0], expected, 1e-5, 1e-6)) << in[0].size(0);
  EXPECT_EQ(p.compiled()->compilations(), 1);
}

// The example's default message passing, a sparse CSR product. A program's inputs are strided
// tensors and sparse_csr_tensor checks its structure by reading it, so the graph is a captured
// constant here, and its node count static: sparse::mm needs the dense operand's rows to equal
// the matrix's (static) columns.
TEST(ExportExamples, GcnWithSparseAdjacencyRoundTrips) {
  manual_seed(12);
  Gcn model;
  model->eval();
  const SmallGraph g = make_graph(12);
  auto fn = [&](const Tensor& x) {
    return model->layers(x, [&](const Tensor& m) { return sparse::mm(g.adjacency, m, "sum"); });
  };
  const std::vector<uint8_t> bytes = export_program(fn, {randn({12, kFeatures})}).to_bytes();
  ExportedProgram p = load_program_from_bytes(bytes.data(), bytes.size(), "gcn.kpt");
  EXPECT_EQ(p.op_counts().at("sparse_csr_mm"), 2);
  EXPECT_EQ(p.constants().size(), 3u);  // the matrix's crow_indices, col_indices and values
  NoGradGuard no_grad;
  const Tensor x = randn({12, kFeatures}), expected = fn(x);
  // The scatter form gives the same numbers.
  EXPECT_TRUE(allclose(expected, model->forward(x, g.src, g.dst, g.weight), 1e-5, 1e-6));
  EXPECT_TRUE(p.run({x})[0].equal(expected));
  p.compile();
  EXPECT_TRUE(allclose(p.run({x})[0], expected, 1e-5, 1e-6));
  EXPECT_EQ(p.compiled()->compilations(), 1);
}

// The batch's range includes 1: view's contiguity check asks nothing of a dim whose stride is
// already the contiguous one.
TEST(ExportExamples, MnistNetRunsEveryBatchAfterLoadingAndCompiling) {
  manual_seed(13);
  auto model = std::make_shared<MnistNet>();
  model->eval();
  ExportedProgram p =
      round_trip(export_program(model, {randn({4, 1, 28, 28})}, {{{0, Dim("batch", 1, 256)}}}));
  EXPECT_EQ(p.state_dict().keys(), model->state_dict().keys());
  NoGradGuard no_grad;
  std::vector<std::pair<Tensor, Tensor>> cases;
  for (int64_t b : {1, 2, 3, 4, 9, 64}) {
    const Tensor x = randn({b, 1, 28, 28});
    cases.emplace_back(x, model->forward(x));
    EXPECT_TRUE(p.run({x})[0].equal(cases.back().second)) << b;
  }
  p.compile();
  for (const auto& [x, expected] : cases)
    EXPECT_TRUE(allclose(p.run({x})[0], expected, 1e-5, 1e-5)) << x.size(0);
  EXPECT_EQ(p.compiled()->compilations(), 1);
  EXPECT_NE(testing::error_of([&] {
              p.run({randn({0, 1, 28, 28})});
            }).find("Expected input at inputs[0].shape[0] to be >= 1, but got 0"),
            std::string::npos);
}

// The example's optimizer on the loaded program and on the module, side by side. Both are in
// eval mode, where the dropouts are the identity (training-mode dropout cannot be exported).
TEST(ExportExamples, LoadedMnistNetFineTunesAsTheModuleTrains) {
  manual_seed(14);
  auto model = std::make_shared<MnistNet>();
  model->eval();
  ExportedProgram p =
      round_trip(export_program(model, {randn({4, 1, 28, 28})}, {{{0, Dim("batch", 2, 256)}}}));
  std::vector<Tensor> initial;
  for (const Tensor& w : p.parameters()) initial.push_back(w.detach().clone());
  optim::SGD original(model->parameters(), optim::SGDOptions(0.01).momentum(0.5));
  optim::SGD loaded(p.parameters(), optim::SGDOptions(0.01).momentum(0.5));
  for (int step = 0; step < 3; ++step) {
    const Tensor x = randn({4 + step, 1, 28, 28}), target = randint(0, 10, {4 + step});
    original.zero_grad();
    nll_loss(model->forward(x), target).backward();
    original.step();
    loaded.zero_grad();
    nll_loss(p.run({x})[0], target).backward();
    loaded.step();
  }
  const auto trained = model->named_parameters();
  size_t i = 0;
  for (const auto& item : p.named_parameters()) {
    EXPECT_FALSE(item.value().equal(initial[i++])) << item.key() << " did not train";
    EXPECT_LE(max(abs(item.value() - trained[item.key()])).item<float>(), 1e-6) << item.key();
  }
}

TEST(ExportExamples, TransformerEncoderStackRunsAnyLengthAfterLoading) {
  manual_seed(15);
  auto encoder = nn::TransformerEncoder(
      nn::TransformerEncoderOptions(
          nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.1), 2)
          .final_norm(true));
  encoder->eval();
  auto fn = [&](const Tensor& x) { return encoder->forward(x); };
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  ExportedProgram p = round_trip(export_program(fn, {randn({5, 3, 8})}, {{{0, seq}, {1, batch}}}));
  NoGradGuard no_grad;
  std::vector<std::pair<Tensor, Tensor>> cases;
  // (2, 2) first: the compiled program's one capture must not tie seq to batch because the
  // first call's sizes happen to be equal.
  for (auto [s, b] : {std::pair<int64_t, int64_t>{2, 2}, {5, 3}, {17, 2}, {128, 4}, {9, 32}}) {
    const Tensor x = randn({s, b, 8});
    cases.emplace_back(x, fn(x));
    EXPECT_TRUE(p.run({x})[0].equal(cases.back().second)) << s << "x" << b;
  }
  p.compile();
  for (const auto& [x, expected] : cases)
    EXPECT_TRUE(allclose(p.run({x})[0], expected, 1e-5, 1e-5)) << x.size(0) << "x" << x.size(1);
  EXPECT_EQ(p.compiled()->compilations(), 1);
}

}  // namespace
}  // namespace kiln

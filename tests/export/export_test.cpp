// export_program, ExportedProgram and load_program: a captured program runs like the code that
// made it, at every size its Dims allow, before and after a round trip through a file.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "examples/gpt/model.h"
#include "kiln/kiln.h"
#include "tests/export/export_test_util.h"

namespace kiln {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "_" + std::to_string(::getpid()) + ".kpt"))
      .string();
}

using testing::error_of;
using testing::round_trip;

TEST(Export, FunctionWithDynamicBatchRunsEverySizeInRange) {
  manual_seed(0);
  const Tensor w = randn({4, 3});
  auto fn = [w](const Tensor& x, const Tensor& b) { return gelu(x.matmul(w) + b).sum(-1); };
  const Dim batch("batch", 2, 64);
  ExportedProgram p = export_program(fn, {randn({8, 4}), randn({3})}, {{{0, batch}}});
  EXPECT_EQ(p.num_inputs(), 2u);
  EXPECT_EQ(p.constants().size(), 1u);
  ASSERT_EQ(p.range_constraints().size(), 1u);
  EXPECT_EQ(p.range_constraints()[0].symbol, "batch");
  EXPECT_EQ(p.range_constraints()[0].max, 64);
  const ExportedProgram loaded = round_trip(p);
  for (int64_t n : {2, 5, 64}) {
    const Tensor x = randn({n, 4}), b = randn({3});
    const Tensor expected = fn(x, b);
    EXPECT_TRUE(allclose(p.run({x, b})[0], expected)) << n;
    EXPECT_TRUE(allclose(loaded.run({x, b})[0], expected)) << n;
  }
}

TEST(Export, InputsAreCheckedWithPyTorchsWording) {
  auto fn = [](const Tensor& x) { return x * 2; };
  const ExportedProgram p =
      round_trip(export_program(fn, {randn({8, 4})}, {{{0, Dim("batch", 2, 16)}}}));
  EXPECT_NE(error_of([&] {
              p.run({randn({1, 4})});
            }).find("Expected input at inputs[0].shape[0] to be >= 2, but got 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              p.run({randn({17, 4})});
            }).find("Expected input at inputs[0].shape[0] to be <= 16, but got 17"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              p.run({randn({8, 5})});
            }).find("Expected input at inputs[0].shape[1] to be equal to 4, but got 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              p.run({randn({8, 4}, kFloat64)});
            }).find("Expected input at inputs[0].dtype to be float32, but got float64"),
            std::string::npos);
  EXPECT_NE(error_of([&] { p.run({}); }).find("expected 1 inputs, but got 0"), std::string::npos);
  EXPECT_NE(error_of([&] { p.run({randn({8})}); }).find("Unexpected number of dimensions"),
            std::string::npos);
}

TEST(Export, OneDimOnTwoInputsMakesThemEqual) {
  auto fn = [](const Tensor& x, const Tensor& y) { return x + y; };
  const Dim batch("batch");
  const ExportedProgram p =
      export_program(fn, {randn({4, 3}), randn({4, 3})}, {{{0, batch}}, {{0, batch}}});
  const Tensor x = randn({6, 3}), y = randn({6, 3});
  EXPECT_TRUE(allclose(p.run({x, y})[0], x + y));
  EXPECT_NE(error_of([&] {
              p.run({randn({6, 3}), randn({5, 3})});
            }).find("Expected input at inputs[1].shape[0] to be equal to 6"),
            std::string::npos);
}

TEST(Export, SpecialisingADynamicDimIsAnErrorThatSaysWhereAndHowToFix) {
  // Reading the size as an integer makes it a constant of the trace.
  auto fixed = [](const Tensor& x) { return x.reshape({x.size(0) * 4}); };
  const std::string e = error_of([&] {
    export_program(fixed, {randn({8, 4})}, {{{0, Dim("batch")}}});
  });
  EXPECT_NE(e.find("Constraints violated (batch)"), std::string::npos) << e;
  EXPECT_NE(e.find("batch == 8"), std::string::npos) << e;
  EXPECT_NE(e.find("inputs[0].shape[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("Suggested fix"), std::string::npos) << e;
  // The symbolic form exports.
  auto symbolic = [](const Tensor& x) { return x.reshape({-1}); };
  const ExportedProgram p = export_program(symbolic, {randn({8, 4})}, {{{0, Dim("batch")}}});
  EXPECT_EQ(p.run({randn({3, 4})})[0].size(0), 12);
  // Two Dims that the code needs equal.
  auto add = [](const Tensor& x, const Tensor& y) { return x + y; };
  const std::string two = error_of([&] {
    export_program(add, {randn({4, 3}), randn({4, 3})}, {{{0, Dim("a")}}, {{0, Dim("b")}}});
  });
  EXPECT_NE(two.find("Constraints violated"), std::string::npos) << two;
  EXPECT_NE(two.find("one Dim"), std::string::npos) << two;
}

TEST(Export, ExampleOutsideItsDimsRangeAndBadDimsAreErrors) {
  auto fn = [](const Tensor& x) { return x + 1; };
  EXPECT_NE(error_of([&] {
              export_program(fn, {randn({1, 4})}, {{{0, Dim("batch")}}});
            }).find("outside the range [2, "),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              export_program(fn, {randn({3, 4})}, {{{2, Dim("batch")}}});
            }).find("names dim 2"),
            std::string::npos);
  EXPECT_THROW(Dim("2x"), Error);
  EXPECT_THROW(Dim("max"), Error);
  EXPECT_THROW(Dim("b", 5, 4), Error);
  // A size that depends on values cannot be exported.
  auto nz = [](const Tensor& x) { return x.nonzero(); };
  EXPECT_NE(error_of([&] { export_program(nz, {randn({3})}); }).find("cannot be captured whole"),
            std::string::npos);
}

struct MlpImpl : nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", nn::Linear(4, 16));
    fc2 = register_module("fc2", nn::Linear(16, 2));
    norm = register_module("norm", nn::BatchNorm1d(16));
  }
  Tensor forward(const Tensor& x) { return fc2->forward(relu(norm->forward(fc1->forward(x)))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::BatchNorm1d norm{nullptr};
};

TEST(Export, ModuleKeepsItsNamesAndFineTunesAfterLoadingAsTheOriginalTrains) {
  manual_seed(3);
  auto model = std::make_shared<MlpImpl>();
  model->eval();
  const std::string path = temp_path("mlp");
  export_program(model, {randn({8, 4})}, {{{0, Dim("batch", 2, 1024)}}}).save(path);
  ExportedProgram p = load_program(path);
  std::filesystem::remove(path);
  EXPECT_EQ(p.named_parameters().keys(),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                      "norm.weight", "norm.bias"}));
  EXPECT_EQ(p.state_dict().keys(), model->state_dict().keys());
  EXPECT_TRUE(p.named_buffers().contains("norm.running_mean"));
  for (const auto& item : p.named_parameters()) EXPECT_TRUE(item.value().requires_grad());

  optim::SGD original(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD loaded(p.parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 4; ++step) {
    const Tensor x = randn({5 + step, 4}), target = randn({5 + step, 2});
    original.zero_grad();
    mse_loss(model->forward(x), target).backward();
    original.step();
    loaded.zero_grad();
    mse_loss(p.run({x})[0], target).backward();
    loaded.step();
  }
  const auto trained = model->named_parameters();
  for (const auto& item : p.named_parameters())
    EXPECT_LE(max(abs(item.value() - trained[item.key()])).item<float>(), 1e-6) << item.key();
  // Saved again, the fine-tuned weights come back.
  const ExportedProgram again = round_trip(p);
  const Tensor x = randn({7, 4});
  EXPECT_TRUE(allclose(again.run({x})[0], model->forward(x), 1e-5, 1e-6));
}

TEST(Export, ConcurrentRunsOnOneLoadedProgramAgree) {
  manual_seed(4);
  auto model = std::make_shared<MlpImpl>();
  model->eval();
  const ExportedProgram p =
      round_trip(export_program(model, {randn({8, 4})}, {{{0, Dim("batch", 2, 1024)}}}));
  std::vector<Tensor> inputs, expected;
  for (int t = 0; t < 8; ++t) {
    inputs.push_back(randn({3 + t, 4}));
    NoGradGuard no_grad;
    expected.push_back(model->forward(inputs.back()));
  }
  std::vector<int> good(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      NoGradGuard no_grad;
      for (int i = 0; i < 20; ++i) good[t] += allclose(p.run({inputs[t]})[0], expected[t]);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(good, std::vector<int>(8, 20));
}

TEST(Export, RecurrentAndTransformerModelsRunAnyLengthInRange) {
  manual_seed(5);
  auto lstm = nn::LSTM(nn::LSTMOptions(4, 6).num_layers(2).bidirectional(true));
  auto gru = nn::GRU(nn::GRUOptions(4, 5).num_layers(2));
  auto layer = nn::TransformerEncoderLayer(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  lstm->eval();
  gru->eval();
  layer->eval();
  const Dim seq("seq", 2, 128), batch("batch", 2, 32);
  auto lstm_fn = [&](const Tensor& x) { return std::get<0>(lstm->forward(x)); };
  auto gru_fn = [&](const Tensor& x) { return std::get<0>(gru->forward(x)); };
  auto layer_fn = [&](const Tensor& x) { return layer->forward(x); };
  const ExportedProgram pl =
      round_trip(export_program(lstm_fn, {randn({5, 3, 4})}, {{{0, seq}, {1, batch}}}));
  const ExportedProgram pg =
      round_trip(export_program(gru_fn, {randn({5, 3, 4})}, {{{0, seq}, {1, batch}}}));
  const ExportedProgram pt =
      round_trip(export_program(layer_fn, {randn({5, 3, 8})}, {{{0, seq}, {1, batch}}}));
  NoGradGuard no_grad;
  for (auto [s, b] : {std::pair<int64_t, int64_t>{2, 2}, {7, 4}, {33, 2}}) {
    const Tensor x = randn({s, b, 4}), y = randn({s, b, 8});
    EXPECT_TRUE(allclose(pl.run({x})[0], lstm_fn(x), 1e-5, 1e-6)) << s << "x" << b;
    EXPECT_TRUE(allclose(pg.run({x})[0], gru_fn(x), 1e-5, 1e-6)) << s << "x" << b;
    EXPECT_TRUE(allclose(pt.run({y})[0], layer_fn(y), 1e-5, 1e-5)) << s << "x" << b;
  }
}

TEST(Export, DemoGptExportsWithDynamicBatchAndLength) {
  manual_seed(7);
  gpt::Config config;
  config.vocab_size = 11;
  gpt::GPT model(config);
  model->eval();
  const Dim batch("batch", 2, 64), seq("seq", 2, config.block_size);
  const Tensor example = randint(0, config.vocab_size, {4, 8});
  ExportedProgram p = round_trip(export_program(model, {example}, {{{0, batch}, {1, seq}}}));
  EXPECT_EQ(p.named_parameters().size(), model->named_parameters().size());
  NoGradGuard no_grad;
  for (auto [b, t] : {std::pair<int64_t, int64_t>{2, 2}, {3, 16}, {9, 5}}) {
    const Tensor idx = randint(0, config.vocab_size, {b, t});
    EXPECT_TRUE(allclose(p.run({idx})[0], model->forward(idx), 1e-5, 1e-5)) << b << "x" << t;
  }
  EXPECT_NE(error_of([&] {
              p.run({randint(0, 11, {2, 17})});
            }).find("to be <= 16, but got 17"),
            std::string::npos);
}

TEST(Export, CompiledProgramRunsEverySizeWithOneCapture) {
  manual_seed(6);
  auto model = std::make_shared<MlpImpl>();
  model->eval();
  auto fn = [](const Tensor& x, const Tensor& y) {
    return softmax(gelu(x * 2 + y).reshape({x.size(1), -1}), 1);  // x.size(1) is static
  };
  ExportedProgram p = round_trip(export_program(fn, {randn({6, 4}), randn({6, 4})},
                                                {{{0, Dim("batch")}}, {{0, Dim("batch")}}}));
  ExportedProgram m = round_trip(export_program(model, {randn({8, 4})}, {{{0, Dim("batch")}}}));
  p.compile();
  m.compile();
  NoGradGuard no_grad;
  for (int64_t n : {3, 5, 12}) {
    const Tensor x = randn({n, 4}), y = randn({n, 4});
    EXPECT_TRUE(allclose(p.run({x, y})[0], fn(x, y), 1e-5, 1e-6)) << n;
    EXPECT_TRUE(allclose(m.run({x})[0], model->forward(x), 1e-5, 1e-6)) << n;
  }
  EXPECT_EQ(p.compiled()->compilations(), 1);
  EXPECT_EQ(m.compiled()->compilations(), 1);
  EXPECT_NE(error_of([&] {
              p.run({randn({1, 4}), randn({1, 4})});
            }).find("to be >= 2"),
            std::string::npos);
}

TEST(Export, FilesFromANewerKilnAndOtherFilesAreRefused) {
  auto fn = [](const Tensor& x) { return x + 1; };
  const std::vector<uint8_t> bytes = export_program(fn, {randn({3})}).to_bytes();
  io::SafetensorsFile file = io::from_safetensors_bytes(bytes);
  std::string& json = file.metadata["kiln.program"];
  json.replace(json.find("\"version\":1"), 11, "\"version\":7");
  const std::vector<uint8_t> newer = io::to_safetensors_bytes(file.tensors, file.metadata);
  const std::string e =
      error_of([&] { load_program_from_bytes(newer.data(), newer.size(), "new.kpt"); });
  EXPECT_NE(e.find("load_program: 'new.kpt': the program's schema version is 7, newer than"),
            std::string::npos)
      << e;
  const std::vector<uint8_t> plain = io::to_safetensors_bytes({{"w", randn({2})}});
  EXPECT_NE(error_of([&] {
              load_program_from_bytes(plain.data(), plain.size());
            }).find("not an exported Kiln program"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln

// The post-training flows: prepare / calibrate / convert (static) and quantize_dynamic, on
// layers, Sequentials, libtorch-style models that call ->forward() directly, an LSTM, and the
// MNIST example's CNN, whose int8 accuracy must stay within 1% of float32's.
#include <gtest/gtest.h>

#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/quantization/quantize.h"
#include "tests/ops/op_test_util.h"

namespace kiln::quantization {
namespace {

// |a - b| / |b| over the whole tensor.
double relative_error(const Tensor& a, const Tensor& b) {
  return ((a - b).norm() / b.norm()).item<double>();
}

TEST(Quantize, StaticLinearFollowsTheFloatLayerHoweverItIsCalled) {
  manual_seed(1);
  nn::Linear fc(64, 32);
  const Tensor x = randn({16, 64});
  const Tensor want = fc(x).detach();
  Prepared prepared = prepare(*fc);
  ASSERT_EQ(prepared.layers.size(), 1u);
  for (int i = 0; i < 4; ++i) fc(randn({16, 64}));  // calibration
  const auto converted = convert(prepared);
  ASSERT_EQ(converted.size(), 1u);
  const Tensor got = fc(x);
  EXPECT_EQ(got.dtype(), kFloat32);
  EXPECT_LT(relative_error(got, want), 0.02);
  EXPECT_GT(relative_error(got, want), 0.0);  // it did run in int8
  EXPECT_TRUE(fc->forward(x).equal(got));
  auto* q = converted[0].second->as<QuantizedLinearImpl>();
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->weight.dtype(), kQInt8);
  EXPECT_EQ(q->weight.qscheme(), kPerChannelAffine);  // per-channel symmetric: zero points 0
  EXPECT_EQ(q->weight.q_per_channel_zero_points().abs().sum().item<int64_t>(), 0);
  EXPECT_LE(q->input_zero_point, 127);  // x86's reduced activation range
}

struct LibtorchStyleNetImpl : nn::Module {
  LibtorchStyleNetImpl()
      : conv(register_module("conv", nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)))),
        seq(register_module(
            "seq", nn::Sequential(nn::Linear(8 * 4 * 4, 16), nn::ReLU(), nn::Linear(16, 5)))) {}
  Tensor forward(const Tensor& x) {
    Tensor h = nn::functional::relu(conv->forward(x));  // ->forward, as libtorch code does
    h = max_pool2d(h, {2});
    return seq->forward(h.flatten(1));
  }
  nn::Conv2d conv;
  nn::Sequential seq;
};
KILN_MODULE(LibtorchStyleNet);

TEST(Quantize, ConvolutionsAndSequentialsInALibtorchStyleModel) {
  manual_seed(2);
  LibtorchStyleNet net;
  const Tensor x = rand({4, 3, 8, 8});
  const Tensor want = net->forward(x).detach();
  Prepared prepared = prepare(*net);
  EXPECT_EQ(prepared.layers.size(), 3u);  // conv and the two Linears
  for (int i = 0; i < 4; ++i) net->forward(rand({4, 3, 8, 8}));
  const auto converted = convert(prepared);
  EXPECT_EQ(converted[0].first, "conv");
  EXPECT_EQ(converted[1].first, "seq.0");
  const Tensor got = net->forward(x);
  EXPECT_LT(relative_error(got, want), 0.05);
  EXPECT_GT(relative_error(got, want), 0.0);
}

TEST(Quantize, DynamicLinearAndLstm) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(6, 12).num_layers(2).bidirectional(true).batch_first(true));
  nn::Linear head(24, 3);
  nn::Sequential model;
  model->push_back("head", head);
  model->register_module("lstm", lstm);
  const Tensor x = randn({4, 7, 6});
  const auto [want_out, want_state] = lstm->forward(x);
  const Tensor want_head = head(want_out).detach();
  const auto converted = quantize_dynamic(*model);
  ASSERT_EQ(converted.size(), 2u);
  const auto [got_out, got_state] = lstm->forward(x);
  EXPECT_EQ(got_out.sizes().vec(), want_out.sizes().vec());
  EXPECT_LT(relative_error(got_out, want_out.detach()), 0.03);
  EXPECT_LT(relative_error(std::get<1>(got_state), std::get<1>(want_state).detach()), 0.03);
  EXPECT_GT(relative_error(got_out, want_out.detach()), 0.0);
  EXPECT_LT(relative_error(head(got_out), want_head), 0.05);
  // With an initial state, and unbatched.
  const auto h0 = std::make_tuple(randn({4, 4, 12}), randn({4, 4, 12}));
  const auto [with_state, unused] = lstm->forward(x, h0);
  EXPECT_EQ(with_state.sizes().vec(), (std::vector<int64_t>{4, 7, 24}));
  // An unbatched input is a batch of one (the input range, and so the quantization, is its own).
  const auto [single, unused2] = lstm->forward(x[0]);
  const auto [batch_of_one, unused3] = lstm->forward(x.slice(0, 0, 1));
  EXPECT_LT(relative_error(single, batch_of_one[0]), 1e-6);
}

TEST(Quantize, Int8LayersSaveTheirQuantizedWeights) {
  manual_seed(4);
  nn::Linear fc(8, 4);
  Prepared prepared = prepare(*fc);
  fc(randn({5, 8}));
  const auto converted = convert(prepared);
  const auto buffers = converted[0].second->named_buffers();
  std::map<std::string, Tensor> state;
  for (const auto& item : buffers) state.emplace(item.key(), item.value());
  const io::SafetensorsFile file = io::from_safetensors_bytes(io::to_safetensors_bytes(state));
  const Tensor w = file.tensors.at("weight");
  EXPECT_EQ(w.dtype(), kQInt8);
  EXPECT_TRUE(w.int_repr().equal(state.at("weight").int_repr()));
  EXPECT_TRUE(w.q_per_channel_scales().equal(state.at("weight").q_per_channel_scales()));
}

TEST(Quantize, MistakesAreNamed) {
  nn::Linear fc(4, 2);
  Prepared prepared = prepare(*fc);
  EXPECT_TRUE(
      testing::raises([&] { convert(prepared); }, "convert", "saw no input during calibration"));
  nn::ReLU relu;
  EXPECT_TRUE(testing::raises([&] { prepare(*relu); }, "prepare", "has no Linear or Conv2d layer"));
  EXPECT_TRUE(testing::raises([&] { get_default_qconfig("qnnpack"); }, "get_default_qconfig",
                              "unknown backend 'qnnpack'"));
  nn::Conv2d same(nn::Conv2dOptions(1, 1, 3).padding(kSame));
  Prepared p2 = prepare(*same);
  same(rand({1, 1, 5, 5}));
  EXPECT_TRUE(testing::raises([&] { convert(p2); }, "quantization",
                              "int8 Conv2d takes explicit zero padding"));
}

// The MNIST example's network (examples/mnist.cpp) on its synthetic task: ten classes of 28x28
// strokes with pixel noise, trained briefly.
struct MnistNetImpl : nn::Module {
  MnistNetImpl()
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 10, 5)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(10, 20, 5)))),
        fc1(register_module("fc1", nn::Linear(320, 50))),
        fc2(register_module("fc2", nn::Linear(50, 10))) {}
  Tensor forward(Tensor x) {
    x = relu(max_pool2d(conv1->forward(x), {2}));
    x = relu(max_pool2d(conv2->forward(x), {2}));
    x = relu(fc1->forward(x.view({-1, 320})));
    return log_softmax(fc2->forward(x), 1);
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc1, fc2;
};
KILN_MODULE(MnistNet);

std::pair<Tensor, Tensor> strokes(int64_t n) {
  const Tensor labels = randint(0, 10, {n});
  Tensor images = zeros({n, 1, 28, 28});
  const Tensor shifts = randint(-1, 2, {n, 2});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = labels[i].item<int64_t>();
    const int64_t dy = shifts[i][0].item<int64_t>(), dx = shifts[i][1].item<int64_t>();
    const int64_t row = 5 + 2 * c + dy, col = 5 + 2 * ((7 * c) % 10) + dx;
    images[i][0][row].slice(0, 3 + dx, 25 + dx).fill_(1.0);
    images[i][0].select(1, col).slice(0, 3 + dy, 25 + dy).fill_(1.0);
  }
  return {(images * 0.8 + rand({n, 1, 28, 28}) * 0.3).clamp(0, 1), labels};
}

double accuracy(MnistNet& net, const Tensor& images, const Tensor& labels) {
  NoGradGuard no_grad;
  return net->forward(images).argmax(1).eq(labels).to(kFloat64).mean().item<double>();
}

TEST(Quantize, MnistCnnKeepsItsAccuracyWithin1Percent) {
  manual_seed(5);
  MnistNet net;
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05).momentum(0.5));
  const auto [train_x, train_y] = strokes(1536);
  for (int64_t b = 0; b < 1536; b += 32) {
    opt.zero_grad();
    nll_loss(net->forward(train_x.slice(0, b, b + 32)), train_y.slice(0, b, b + 32)).backward();
    opt.step();
  }
  const auto [test_x, test_y] = strokes(1000);
  const double float_accuracy = accuracy(net, test_x, test_y);
  Tensor float_predictions = net->forward(test_x).argmax(1);
  EXPECT_GT(float_accuracy, 0.5);

  Prepared prepared = prepare(*net);
  {
    NoGradGuard no_grad;
    for (int64_t b = 0; b < 256; b += 64) net->forward(train_x.slice(0, b, b + 64));
  }
  convert(prepared);
  const double int8_accuracy = accuracy(net, test_x, test_y);
  std::printf("MNIST-style CNN: float32 accuracy %.3f, int8 %.3f\n", float_accuracy, int8_accuracy);
  EXPECT_LE(std::abs(int8_accuracy - float_accuracy), 0.01);
  // Nearly every prediction is the float model's.
  const double agree =
      net->forward(test_x).argmax(1).eq(float_predictions).to(kFloat64).mean().item<double>();
  EXPECT_GT(agree, 0.97);
}

}  // namespace
}  // namespace kiln::quantization

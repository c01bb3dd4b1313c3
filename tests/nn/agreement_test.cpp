// Layers against PyTorch: each fixture in tests/data/nn (written by
// tools/fixtures/make_nn_fixtures.py) holds PyTorch's weights, inputs, outputs and gradients;
// Kiln loads the same weights and must reproduce the outputs and gradients.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/modules/attention.h"
#include "kiln/nn/modules/conv.h"
#include "kiln/nn/modules/embedding.h"
#include "kiln/nn/modules/normalization.h"
#include "kiln/nn/modules/rnn.h"
#include "kiln/nn/modules/transformer.h"
#include "kiln/nn/nn.h"
#include "kiln/optim/optim.h"

using namespace kiln;

namespace {

class Fixture {
 public:
  explicit Fixture(const std::string& name)
      : file_(io::load_safetensors(std::string(KILN_TEST_DATA) + "/nn/" + name + ".safetensors")) {}

  bool has(const std::string& key) const { return file_.tensors.count(key) != 0; }
  const Tensor& operator[](const std::string& key) const {
    auto it = file_.tensors.find(key);
    if (it == file_.tensors.end()) throw std::runtime_error("fixture has no tensor " + key);
    return it->second;
  }
  // The entries under `prefix`, with it removed.
  OrderedDict<std::string, Tensor> with_prefix(const std::string& prefix) const {
    OrderedDict<std::string, Tensor> out;
    for (const auto& [k, v] : file_.tensors)
      if (k.starts_with(prefix)) out.insert(k.substr(prefix.size()), v);
    return out;
  }
  std::vector<Tensor> inputs() const {
    std::vector<Tensor> out;
    for (int i = 0; has("input." + std::to_string(i)); ++i) {
      Tensor x = (*this)["input." + std::to_string(i)].clone();
      if (x.is_floating_point()) x.requires_grad_();
      out.push_back(x);
    }
    return out;
  }

 private:
  io::SafetensorsFile file_;
};

void expect_matches(const Tensor& actual, const Tensor& expected, const std::string& what,
                    double tol = 1e-9) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(actual.defined());
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec());
  Tensor a = actual.to(kFloat64), e = expected.to(kFloat64);
  if (e.numel() == 0) return;
  const double excess = ((a - e).abs() - e.abs() * tol - tol).max().item<double>();
  EXPECT_LE(excess, 0) << "max abs difference " << (a - e).abs().max().item<double>();
}

using Call = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Loads the fixture's weights into `module`, runs `call`, backpropagates sum(output * probe)
// and compares outputs and every gradient with PyTorch's.
void check_against_pytorch(const std::string& name, nn::Module& module, const Call& call,
                           bool train = false, double tol = 1e-9) {
  SCOPED_TRACE(name);
  Fixture f(name);
  module.to(kFloat64);
  module.train(train);
  module.load_state_dict(f.with_prefix("param."));
  std::vector<Tensor> inputs = f.inputs();
  std::vector<Tensor> outputs = call(inputs);
  Tensor loss = zeros({}, TensorOptions(kFloat64));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string key = std::to_string(i);
    expect_matches(outputs[i], f["output." + key], "output " + key, tol);
    loss = loss + (outputs[i] * f["probe." + key]).sum();
  }
  loss.backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string key = "grad.input." + std::to_string(i);
    if (f.has(key)) expect_matches(inputs[i].grad(), f[key], key, tol);
  }
  for (const auto& p : module.named_parameters()) {
    const std::string key = "grad.param." + p.key();
    ASSERT_TRUE(f.has(key)) << key;
    expect_matches(p.value().grad(), f[key], key, tol);
  }
  for (const auto& after : f.with_prefix("after.")) {
    expect_matches(module.state_dict()[after.key()], after.value(), "after " + after.key(), tol);
  }
}

template <class M>
Call unary(M& module) {
  return [&module](const std::vector<Tensor>& in) { return std::vector<Tensor>{module(in[0])}; };
}

}  // namespace

TEST(AgreementWithPyTorch, Linear) {
  nn::Linear m(4, 3);
  check_against_pytorch("linear", *m, unary(m));
}

TEST(AgreementWithPyTorch, Conv2d) {
  nn::Conv2d m(nn::Conv2dOptions(3, 4, 3).padding(1));
  check_against_pytorch("conv2d", *m, unary(m));
  nn::Conv2d strided(
      nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).groups(2).padding_mode("reflect"));
  check_against_pytorch("conv2d_strided_groups_reflect", *strided, unary(strided));
}

TEST(AgreementWithPyTorch, LayerNorm) {
  nn::LayerNorm m(nn::LayerNormOptions({5}));
  check_against_pytorch("layer_norm", *m, unary(m));
}

TEST(AgreementWithPyTorch, BatchNorm2dTrainAndEval) {
  nn::BatchNorm2d train(3);
  check_against_pytorch("batch_norm2d_train", *train, unary(train), /*train=*/true);
  nn::BatchNorm2d eval(3);
  check_against_pytorch("batch_norm2d_eval", *eval, unary(eval), /*train=*/false);
}

TEST(AgreementWithPyTorch, Embedding) {
  nn::Embedding m(nn::EmbeddingOptions(10, 4).padding_idx(0));
  check_against_pytorch("embedding", *m, unary(m));
}

TEST(AgreementWithPyTorch, MultiheadAttention) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  Tensor key_padding =
      kiln::tensor({false, false, false, true, false, true, false, false}).view({2, 4});
  check_against_pytorch("multihead_attention", *m, [&](const std::vector<Tensor>& in) {
    auto [out, weights] = m->forward(in[0], in[1], in[1], key_padding, /*need_weights=*/true);
    return std::vector<Tensor>{out, weights};
  });
}

TEST(AgreementWithPyTorch, TransformerEncoderLayer) {
  auto options =
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).batch_first(true);
  nn::TransformerEncoderLayer post(options);
  Tensor causal = nn::TransformerImpl::generate_square_subsequent_mask(5).to(kFloat64);
  check_against_pytorch("transformer_encoder_layer", *post, [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{post->forward(in[0], causal)};
  });
  nn::TransformerEncoderLayer pre(options.activation("gelu").norm_first(true));
  check_against_pytorch("transformer_encoder_layer_norm_first", *pre, unary(pre));
}

TEST(AgreementWithPyTorch, LstmAndGruBidirectionalTwoLayers) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  check_against_pytorch("lstm", *lstm, [&](const std::vector<Tensor>& in) {
    auto [out, state] = lstm->forward(in[0]);
    return std::vector<Tensor>{out, std::get<0>(state), std::get<1>(state)};
  });
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  check_against_pytorch("gru", *gru, [&](const std::vector<Tensor>& in) {
    auto [out, h] = gru->forward(in[0]);
    return std::vector<Tensor>{out, h};
  });
}

TEST(AgreementWithPyTorch, CrossEntropyWithWeightIgnoreIndexAndSmoothing) {
  Fixture f("cross_entropy");
  Tensor x = f["input.0"].clone().requires_grad_();
  Tensor loss = nn::functional::cross_entropy(x, f["input.1"],
                                              nn::functional::CrossEntropyFuncOptions()
                                                  .weight(f["param.weight"])
                                                  .ignore_index(2)
                                                  .label_smoothing(0.1));
  expect_matches(loss, f["output.0"], "loss");
  (loss * f["probe.0"]).sum().backward();
  expect_matches(x.grad(), f["grad.input.0"], "grad");
}

TEST(AgreementWithPyTorch, AdamWSteps) {
  Fixture f("adamw");
  nn::Linear lin(4, 3);
  lin->to(kFloat64);
  lin->load_state_dict(f.with_prefix("param."));
  optim::AdamW opt(lin->parameters(), optim::AdamWOptions(0.1).weight_decay(0.1).amsgrad(true));
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    (lin(f["input.0"]) - f["input.1"]).pow(2).mean().backward();
    opt.step();
  }
  for (const auto& after : f.with_prefix("after."))
    expect_matches(lin->state_dict()[after.key()], after.value(), after.key(), 1e-10);
}

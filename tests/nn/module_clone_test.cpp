// Module::clone() and nn::Cloneable<T> (kiln/nn/module.h): deep copies with new storage, the same
// values, requires_grad, names and training mode, for built-in modules, containers and user
// modules written the libtorch way, including a DQN-style target network.
#include <gtest/gtest.h>

#include <string>

#include "kiln/kiln.h"

namespace kiln {
namespace {

// Every parameter and buffer of `copy` equals the original's in name, shape, value and
// requires_grad, and lives in other storage.
void expect_deep_copy(const nn::Module& original, const nn::Module& copy) {
  for (bool buffers : {false, true}) {
    auto mine = buffers ? original.named_buffers() : original.named_parameters();
    auto theirs = buffers ? copy.named_buffers() : copy.named_parameters();
    ASSERT_EQ(mine.keys(), theirs.keys());
    for (const auto& item : mine) {
      const Tensor& a = item.value();
      const Tensor& b = theirs[item.key()];
      if (!a.defined()) continue;
      EXPECT_TRUE(a.equal(b)) << item.key();
      EXPECT_NE(a.data_ptr(), b.data_ptr()) << item.key();
      EXPECT_EQ(a.requires_grad(), b.requires_grad()) << item.key();
    }
  }
}

TEST(ModuleClone, SequentialOfLinearAndReLU) {
  manual_seed(0);
  nn::Sequential net(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  std::shared_ptr<nn::Module> copy = net->clone();
  auto seq = std::dynamic_pointer_cast<nn::SequentialImpl>(copy);
  ASSERT_TRUE(seq != nullptr);
  EXPECT_EQ(seq->size(), 3u);
  expect_deep_copy(*net, *seq);
  EXPECT_EQ(seq->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  ASSERT_TRUE(std::dynamic_pointer_cast<nn::LinearImpl>(seq->ptr(0)) != nullptr);

  const Tensor x = randn({5, 3});
  const Tensor y = net->forward(x);
  EXPECT_TRUE(seq->forward(x).equal(y));

  // The clone's members are its own tensors: changing them leaves the original alone.
  {
    NoGradGuard no_grad;
    for (Tensor& p : seq->parameters()) p.zero_();
  }
  EXPECT_TRUE(net->forward(x).equal(y));
  EXPECT_EQ(seq->forward(x).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(seq->at<nn::LinearImpl>(2).weight.abs().sum().item<double>(), 0.0);
}

TEST(ModuleClone, BuiltInModulesKeepTheirOptionsBuffersAndMode) {
  manual_seed(1);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding(1).bias(false));
  auto conv2 = std::dynamic_pointer_cast<nn::Conv2dImpl>(conv->clone());
  ASSERT_TRUE(conv2 != nullptr);
  EXPECT_FALSE(conv2->bias.defined());
  EXPECT_EQ(conv2->options.padding_mode(), "zeros");
  expect_deep_copy(*conv, *conv2);
  const Tensor img = randn({1, 2, 5, 5});
  EXPECT_TRUE(conv2->forward(img).equal(conv->forward(img)));

  nn::BatchNorm1d bn(3);
  bn->forward(randn({4, 3}) * 3 + 1);  // running statistics move away from 0 / 1
  bn->eval();
  auto bn2 = std::dynamic_pointer_cast<nn::BatchNorm1dImpl>(bn->clone());
  ASSERT_TRUE(bn2 != nullptr);
  EXPECT_FALSE(bn2->is_training());
  expect_deep_copy(*bn, *bn2);
  EXPECT_EQ(bn2->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_TRUE(bn2->running_mean.is_same(bn2->named_buffers()["running_mean"]));

  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  auto lstm2 = std::dynamic_pointer_cast<nn::LSTMImpl>(lstm->clone());
  ASSERT_TRUE(lstm2 != nullptr);
  expect_deep_copy(*lstm, *lstm2);
  const Tensor seq = randn({5, 2, 3});
  EXPECT_TRUE(std::get<0>(lstm2->forward(seq)).equal(std::get<0>(lstm->forward(seq))));
}

TEST(ModuleClone, ContainersCloneTheirElements) {
  nn::ModuleList list(nn::Linear(2, 2), nn::Tanh());
  auto list2 = std::dynamic_pointer_cast<nn::ModuleListImpl>(list->clone());
  ASSERT_TRUE(list2 != nullptr);
  EXPECT_EQ(list2->size(), 2u);
  expect_deep_copy(*list, *list2);

  nn::ParameterList params;
  params->append(ones({2}).requires_grad_());
  params->append(zeros({1}));
  auto params2 = std::dynamic_pointer_cast<nn::ParameterListImpl>(params->clone());
  ASSERT_TRUE(params2 != nullptr);
  expect_deep_copy(*params, *params2);

  nn::ModuleDict dict;
  dict->insert("fc", nn::Linear(2, 3));
  auto dict2 = std::dynamic_pointer_cast<nn::ModuleDictImpl>(dict->clone());
  ASSERT_TRUE(dict2 != nullptr);
  expect_deep_copy(*dict, *dict2);
}

// A model written for libtorch: members set in reset(), which the constructor calls.
struct QNetImpl : nn::Cloneable<QNetImpl> {
  explicit QNetImpl(int64_t hidden = 8) : hidden(hidden) { reset(); }
  void reset() override {
    body = register_module("body", nn::Sequential(nn::Linear(4, hidden), nn::ReLU()));
    head = register_module("head", nn::Linear(hidden, 2));
    register_buffer("steps", zeros({1}, kInt64));
  }
  Tensor forward(const Tensor& x) { return head->forward(body->forward(x)); }
  int64_t hidden;
  std::string note = "original";
  nn::Sequential body{nullptr};
  nn::Linear head{nullptr};
};
KILN_MODULE(QNet);

TEST(ModuleClone, CloneableUserModuleAsADqnTargetNetwork) {
  manual_seed(2);
  QNet net(6);
  net->note = "changed after construction";
  {
    NoGradGuard no_grad;
    net->named_buffers()["steps"].fill_(7);
  }
  auto target = std::dynamic_pointer_cast<QNetImpl>(net->clone());
  ASSERT_TRUE(target != nullptr);
  EXPECT_EQ(target->hidden, 6);
  EXPECT_EQ(target->note, "changed after construction");  // Derived copied, then reset()
  expect_deep_copy(*net, *target);
  EXPECT_EQ(target->named_buffers()["steps"].item<int64_t>(), 7);
  // The members are the copy's registered modules and tensors.
  EXPECT_TRUE(target->head->weight.is_same(target->named_parameters()["head.weight"]));
  EXPECT_NE(target->head->weight.data_ptr(), net->head->weight.data_ptr());

  const Tensor states = randn({3, 4});
  const Tensor q_target = target->forward(states).detach();
  EXPECT_TRUE(q_target.equal(net->forward(states)));

  // A training step on the online network leaves the target alone ...
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.5));
  opt.zero_grad();
  net->forward(states).pow(2).sum().backward();
  opt.step();
  EXPECT_FALSE(net->forward(states).equal(q_target));
  EXPECT_TRUE(target->forward(states).equal(q_target));
  // ... until the periodic copy.
  {
    NoGradGuard no_grad;
    auto online = net->named_parameters();
    for (auto& item : target->named_parameters()) item.value().copy_(online[item.key()]);
  }
  EXPECT_TRUE(target->forward(states).equal(net->forward(states)));
}

struct PlainNet : nn::Module {
  PlainNet() { fc = register_module("fc", nn::Linear(2, 2)); }
  nn::Linear fc{nullptr};
};

TEST(ModuleClone, AModuleThatIsNotCloneableSaysSo) {
  auto net = std::make_shared<PlainNet>();
  try {
    (void)net->clone();
    FAIL() << "PlainNet is not Cloneable";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("clone() has not been implemented for"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("Subclass torch::nn::Cloneable<"), std::string::npos);
  }
  // Its built-in children clone.
  EXPECT_TRUE(std::dynamic_pointer_cast<nn::LinearImpl>(net->fc->clone()) != nullptr);
}

// reset() that forgets a parameter the original has is a clear error.
struct ForgetfulImpl : nn::Cloneable<ForgetfulImpl> {
  ForgetfulImpl() {
    reset();
    register_parameter("extra", ones({1}));
  }
  void reset() override { register_parameter("w", ones({2})); }
};

TEST(ModuleClone, ResetMustRegisterWhatTheOriginalHas) {
  auto m = std::make_shared<ForgetfulImpl>();
  try {
    (void)m->clone();
    FAIL() << "the copy has no 'extra'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no parameter 'extra'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln

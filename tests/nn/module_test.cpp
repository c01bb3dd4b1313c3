// nn::Module, holders, containers, state dicts, init and printing.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "kiln/io/checkpoint.h"
#include "kiln/kiln.h"
#include "kiln/nn/modules/dropout.h"
#include "kiln/nn/modules/embedding.h"
#include "kiln/nn/modules/normalization.h"
#include "kiln/nn/nn.h"

using namespace kiln;

namespace {

struct NetImpl : nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", nn::Linear(4, 8));
    fc2 = register_module("fc2", nn::Linear(nn::LinearOptions(8, 2).bias(false)));
    register_buffer("steps", zeros({1}));
  }
  Tensor forward(const Tensor& x) { return fc2(fc1(x).relu()); }
  nn::Linear fc1 = nullptr, fc2 = nullptr;
};
KILN_MODULE(Net);

std::vector<std::string> keys(const OrderedDict<std::string, Tensor>& d) { return d.keys(); }

}  // namespace

TEST(Module, NamedParametersBuffersAndChildrenInRegistrationOrder) {
  Net net;
  EXPECT_EQ(keys(net->named_parameters()),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(keys(net->named_parameters(/*recurse=*/false)).size(), 0u);
  EXPECT_EQ(keys(net->named_buffers()), (std::vector<std::string>{"steps"}));
  EXPECT_EQ(net->children().size(), 2u);
  EXPECT_EQ(net->named_modules().keys(), (std::vector<std::string>{"", "fc1", "fc2"}));
  EXPECT_EQ(keys(net->state_dict()),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "steps"}));
  for (const Tensor& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(net->name(), "Net");
  EXPECT_EQ(net->fc1->name(), "kiln::nn::Linear");
}

TEST(Module, TrainEvalPropagatesAndHoldersShareOneModule) {
  Net net;
  Net alias = net;
  net->eval();
  EXPECT_FALSE(alias->is_training());
  EXPECT_FALSE(net->fc1->is_training());
  alias->train();
  EXPECT_TRUE(net->fc2->is_training());
  Net empty(nullptr);
  EXPECT_TRUE(empty.is_empty());
  EXPECT_THROW(empty->name(), Error);
}

TEST(Module, ForwardZeroGradAndApply) {
  Net net;
  Tensor y = net(randn({3, 4}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{3, 2}));
  y.sum().backward();
  EXPECT_TRUE(net->fc1->weight.grad().defined());
  net->zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(net->fc1->weight.grad().abs().sum().item<double>(), 0.0);
  net->zero_grad();
  EXPECT_FALSE(net->fc1->weight.grad().defined());
  int count = 0;
  net->apply([&](nn::Module&) { ++count; });
  EXPECT_EQ(count, 3);
}

TEST(Module, ToConvertsParametersInPlaceKeepingIdentity) {
  Net net;
  Tensor w = net->fc1->weight;
  net->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(net->named_parameters()["fc1.weight"].dtype(), kFloat64);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(net(randn({2, 4}, kFloat64)).dtype(), kFloat64);
}

TEST(Module, LoadStateDictReportsMissingUnexpectedAndMismatchedKeys) {
  Net a, b;
  b->load_state_dict(a->state_dict());
  EXPECT_TRUE(b->fc1->weight.equal(a->fc1->weight));

  auto state = a->state_dict();
  state.erase("fc2.weight");
  state.insert("extra", zeros({1}));
  state["fc1.bias"] = zeros({3});
  try {
    b->load_state_dict(state);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Missing key(s) in state_dict: \"fc2.weight\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("Unexpected key(s) in state_dict: \"extra\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("fc1.bias: expected [8], got [3]"), std::string::npos) << msg;
  }
  nn::LoadStateDictResult r = b->load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, std::vector<std::string>{"fc2.weight"});
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra"});
  EXPECT_EQ(r.mismatched_keys.size(), 1u);
}

TEST(Module, SaveAndLoadThroughSafetensors) {
  Net a, b;
  const std::string path =
      (std::filesystem::temp_directory_path() / "kiln_module.safetensors").string();
  kiln::save(a, path);
  kiln::load(b, path);
  for (const auto& p : a->named_parameters())
    EXPECT_TRUE(p.value().equal(b->named_parameters()[p.key()])) << p.key();
  Tensor x = randn({2, 4});
  EXPECT_TRUE(a(x).equal(b(x)));
  std::filesystem::remove(path);
}

TEST(Module, PrintsTheTreeLikePyTorch) {
  Net net;
  std::ostringstream s;
  s << *net;
  EXPECT_EQ(s.str(),
            "Net(\n"
            "  (fc1): kiln::nn::Linear(in_features=4, out_features=8, bias=true)\n"
            "  (fc2): kiln::nn::Linear(in_features=8, out_features=2, bias=false)\n"
            ")");
}

TEST(Containers, SequentialChainsAndIndexes) {
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 1));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(seq(randn({5, 3})).sizes().vec(), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(seq->at<nn::LinearImpl>(2).options.in_features(), 4);
  EXPECT_EQ(keys(seq->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_THROW(seq->at<nn::LinearImpl>(1), Error);
  EXPECT_THROW(seq->ptr(3), Error);
  nn::Sequential named({{"fc", nn::Linear(2, 2)}, {"act", nn::Tanh()}});
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"fc", "act"}));
}

TEST(Containers, ModuleListDictAndParameterList) {
  nn::ModuleList list(nn::Linear(2, 2), nn::Linear(2, 3));
  list->insert(0, nn::Linear(1, 2).ptr());
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(list->at<nn::LinearImpl>(0).options.in_features(), 1);
  EXPECT_EQ(list->named_children().keys(), (std::vector<std::string>{"0", "1", "2"}));

  nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>>{
      {"a", nn::Linear(2, 2).ptr()}, {"b", nn::ReLU().ptr()}});
  EXPECT_TRUE(dict->contains("b"));
  EXPECT_EQ(dict->at<nn::LinearImpl>("a").options.out_features(), 2);
  dict->pop("a");
  EXPECT_EQ(dict->keys(), std::vector<std::string>{"b"});
  EXPECT_THROW((*dict)["a"], Error);

  nn::ParameterList params;
  params->append(randn({2}).requires_grad_());
  params->append(randn({3}).requires_grad_());
  EXPECT_EQ(params->size(), 2u);
  EXPECT_EQ((*params)[1].size(0), 3);
  EXPECT_EQ(keys(params->named_parameters()), (std::vector<std::string>{"0", "1"}));
}

TEST(Init, DefaultLinearInitIsUniformWithinFanInBound) {
  manual_seed(0);
  nn::Linear lin(400, 300);
  const double bound = 1 / std::sqrt(400.0);
  EXPECT_LE(lin->weight.abs().max().item<double>(), bound);
  EXPECT_GT(lin->weight.abs().max().item<double>(), 0.99 * bound);
  // U(-b, b) has standard deviation b / sqrt(3).
  EXPECT_NEAR(lin->weight.std().item<double>(), bound / std::sqrt(3.0), 0.01 * bound);
  EXPECT_LE(lin->bias.abs().max().item<double>(), bound);
}

TEST(Init, GainsFansAndDistributions) {
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kTanh), 5.0 / 3);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain(kLeakyReLU, 0.2), std::sqrt(2.0 / 1.04));
  auto [fan_in, fan_out] = nn::init::_calculate_fan_in_and_fan_out(empty({8, 4, 3, 3}));
  EXPECT_EQ(fan_in, 36);
  EXPECT_EQ(fan_out, 72);
  manual_seed(1);
  Tensor w = nn::init::xavier_normal_(empty({300, 500}));
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 800), 0.002);
  Tensor k = nn::init::kaiming_normal_(empty({300, 500}), 0, kFanIn, kReLU);
  EXPECT_NEAR(k.std().item<double>(), std::sqrt(2.0 / 500), 0.002);
  Tensor t = nn::init::trunc_normal_(empty({10000}), 0, 1, -0.5, 1.5);
  EXPECT_GE(t.min().item<double>(), -0.5);
  EXPECT_LE(t.max().item<double>(), 1.5);
  Tensor q = nn::init::orthogonal_(empty({6, 4}, kFloat64));
  Tensor identity = q.t().matmul(q);
  EXPECT_LT((identity - eye(4, kFloat64)).abs().max().item<double>(), 1e-12);
  Tensor wide = nn::init::orthogonal_(empty({3, 5}, kFloat64), 2.0);
  EXPECT_LT((wide.matmul(wide.t()) - eye(3, kFloat64) * 4).abs().max().item<double>(), 1e-12);
  EXPECT_THROW(nn::init::xavier_uniform_(empty({3})), Error);
}

TEST(Layers, EmbeddingPaddingRowIsZeroAndBagModes) {
  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(-1));
  EXPECT_EQ(emb->options.padding_idx(), 4);
  EXPECT_EQ(emb->weight[4].abs().sum().item<double>(), 0.0);

  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(5, 2).mode("sum"));
  bag->weight.detach().copy_(arange(10, kFloat32).view({5, 2}));
  Tensor input = kiln::tensor({0, 1, 2, 4}, kInt64), offsets = kiln::tensor({0, 3}, kInt64);
  Tensor sum = bag(input, offsets);
  EXPECT_EQ(sum.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_DOUBLE_EQ(sum[0][0].item<double>(), 0 + 2 + 4);
  EXPECT_DOUBLE_EQ(sum[1][1].item<double>(), 9);
  bag->options.mode("mean");
  EXPECT_DOUBLE_EQ(bag(input, offsets)[0][1].item<double>(), (1 + 3 + 5) / 3.0);
  bag->options.mode("max");
  EXPECT_DOUBLE_EQ(bag(input, offsets)[0][1].item<double>(), 5);
  bag->options.mode("sum");
  Tensor two_d = bag(kiln::tensor({0, 1, 2, 4}, kInt64).view({2, 2}));
  EXPECT_DOUBLE_EQ(two_d[1][0].item<double>(), 4 + 8);
}

TEST(Layers, DropoutIsIdentityInEvalAndBatchNormTracksStatistics) {
  nn::Dropout drop(0.5);
  Tensor x = ones({1000});
  Tensor y = drop(x);
  const double kept = y.ne(0).sum().item<double>();
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_DOUBLE_EQ(y.max().item<double>(), 2.0);
  drop->eval();
  EXPECT_TRUE(drop(x).equal(x));
  EXPECT_THROW(nn::Dropout(1.5), Error);

  nn::BatchNorm1d bn(nn::BatchNormOptions(2).momentum(std::nullopt));
  bn(kiln::tensor({{1.0, 2.0}, {3.0, 6.0}}, kFloat32));
  bn(kiln::tensor({{5.0, 2.0}, {7.0, 6.0}}, kFloat32));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);
  // Cumulative average of the batch means: (2 + 6) / 2 and (4 + 4) / 2.
  EXPECT_NEAR(bn->running_mean[0].item<double>(), 4.0, 1e-6);
  EXPECT_NEAR(bn->running_mean[1].item<double>(), 4.0, 1e-6);
  EXPECT_THROW(bn(zeros({2, 2, 2, 2})), Error);
}

// The nn functional ops against values computed with PyTorch 2.x (torch.nn.functional, float64)
// on inputs both sides build the same way: S(n, a, b) = sin(arange(n) * a + b).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

Tensor S(int64_t n, double a, double b, std::vector<int64_t> shape) {
  return (arange(n, TensorOptions(kFloat64)) * a + b).sin().view(SymIntList(shape));
}

void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-8) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  ASSERT_EQ(d.numel(), static_cast<int64_t>(expected.size()));
  const double* p = d.data_ptr<double>();
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(p[i], expected[i], tol) << "element " << i;
}

template <class F>
void expect_error(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected a kiln::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

TEST(NNFunctional, CrossEntropyLabelSmoothingIgnoreIndexWeight) {
  Tensor x = S(12, 0.7, 0, {3, 4}).requires_grad_();
  Tensor t = tensor(std::vector<int64_t>{1, 2, 3});
  Tensor w = tensor({1.0, 2.0, 0.5, 1.5}, kFloat64);
  Tensor loss = cross_entropy(x, t, w, Reduction::Mean, 2, 0.1);
  expect_values(loss, {1.1639146233});
  loss.backward();
  expect_values(x.grad(), {0.0620023935, -0.3968845384, 0.1816698351, 0.1532123099, 0, 0, 0, 0,
                           0.0292230894, 0.0552411587, 0.12830773, -0.2127719781});
  expect_values(cross_entropy(x, t, {}, Reduction::None, 2, 0.2), {1.433690916, 0.0, 0.9766811691});
}

TEST(NNFunctional, CrossEntropyProbabilitiesAndSpatial) {
  Tensor x = S(12, 0.7, 0, {3, 4}).requires_grad_();
  Tensor tp = S(12, 0.3, 1.0, {3, 4}).abs();
  tp = tp / tp.sum(IntArrayRef(int64_t{1}), true);
  Tensor loss = cross_entropy(x, tp, {}, Reduction::Mean, -100, 0.1);
  expect_values(loss, {1.3374209956});
  loss.backward();
  expect_values(x.grad(), {-0.0337285959, -0.0055891971, 0.0239874591, 0.0153303339, 0.0166461421,
                           -0.0279171985, -0.0165132041, 0.0277842605, -0.0107538281, -0.0179979716,
                           0.0036227705, 0.0251290293});
  Tensor t4 = tensor(std::vector<int64_t>{0, 2, 1, 1, 2, 0, 0, 1}).view({2, 4});
  expect_values(cross_entropy(S(24, 0.7, 0, {2, 3, 4}), t4), {1.4088235955});
}

TEST(NNFunctional, NllLossErrors) {
  Tensor x = S(6, 0.7, 0, {2, 3});
  expect_error(
      [&] {
        nll_loss(x, tensor(std::vector<int64_t>{1, 5}));
      },
      {"nll_loss", "Target 5 is out of bounds", "3 classes"});
  expect_error(
      [&] {
        nll_loss(x, tensor(std::vector<int64_t>{1, 2, 0}));
      },
      {"nll_loss", "target of shape [2]"});
  expect_error([&] { nll_loss(x, tensor({0.5, 1.0}, kFloat64)); }, {"integer target"});
  expect_error(
      [&] {
        cross_entropy(x, tensor(std::vector<int64_t>{0, 1}), {}, Reduction::Mean, -100, 1.5);
      },
      {"label_smoothing"});
}

TEST(NNFunctional, BatchNormRunningStatsAfterTwoSteps) {
  Tensor rm = zeros({3}, TensorOptions(kFloat64)), rv = ones({3}, TensorOptions(kFloat64));
  Tensor xb = S(24, 0.9, 0, {4, 3, 2});
  batch_norm(xb, S(3, 1.0, 0.5, {3}), S(3, 1.0, 1.5, {3}), rm, rv, true, 0.1, 1e-5);
  Tensor y = batch_norm(xb * 2 + 1, {}, {}, rm, rv, true, 0.1, 1e-5);
  expect_values(rm, {-0.014986105, 0.2196840186, 0.1606011855});
  expect_values(rv, {0.998142351, 0.988693087, 1.0799900967});
  expect_values(
      y, {0.6840635967,  2.0354892558,  0.9933741438,  0.0259810692, -0.9382676799, -1.7087818067,
          -0.6491393662, 0.7130715834,  0.6744080957,  0.986367751,  0.2925724325,  -0.9598927407,
          -1.0082852488, -0.6305397373, -0.6710731173, 0.6923170989, 1.0897726779,  0.2704253591,
          -0.130976952,  -1.0136831316, -2.0600417504, -0.641333291, 0.8708871984,  1.0832845593},
      1e-7);
  Tensor eval = batch_norm(xb, {}, {}, rm, rv, false, 0.1, 1e-5);
  expect_values(eval.select(0, 0).select(0, 0), {0.0149999688, 0.7990515393}, 1e-7);
  expect_error(
      [&] {
        batch_norm(S(3, 1, 0, {1, 3}), {}, {}, {}, {}, true, 0.1, 1e-5);
      },
      {"Expected more than 1 value per channel when training"});
}

TEST(NNFunctional, LayerNormValuesAndGradients) {
  Tensor x = S(12, 0.7, 0, {3, 4}).requires_grad_();
  Tensor w = S(4, 1.0, 0.5, {4}).requires_grad_();
  Tensor b = S(4, 1.0, 1.5, {4}).requires_grad_();
  Tensor y = layer_norm(x, {4}, w, b);
  (y * S(12, 0.3, 0.2, {3, 4})).sum().backward();
  expect_values(
      y,
      {0.2112736898, 0.653588644, 0.219659193, -1.1990512137, 1.7357906309, 0.8218160658,
       -0.8149227852, -0.6308429999, 0.3109401351, 0.2114294257, 0.0341947326, -1.3903259243},
      1e-7);
  expect_values(
      x.grad(),
      {-0.1149130261, 0.8013839237, 0.6242462604, -1.3107171581, -0.5105295177, 0.9771035234,
       0.4997882815, -0.9663622872, -0.0199687681, 0.1026579226, -0.2034251847, 0.1207360302},
      1e-7);
  expect_values(w.grad(), {0.4535328204, 0.1556968775, -0.0589890763, -0.5869921612}, 1e-7);
  expect_values(b.grad(), {1.6996204326, 1.7103396783, 1.5682793743, 1.2861293445}, 1e-7);
  expect_values(
      rms_norm(S(12, 0.7, 0, {3, 4}), {4}, S(4, 1.0, 0.5, {4})),
      {0.0, 0.8803499571, 0.8079609985, -0.4148269329, 0.2294240272, -0.4998478528, -0.7451391461,
       0.4923100722, -0.4502962875, 0.0249541946, 0.5850120554, -0.5157438673},
      1e-7);
  expect_error([&] { layer_norm(x, {3}); }, {"normalized_shape=[3]", "[3, 4]"});
}

TEST(NNFunctional, LayerNormBFloat16ComputesInFloat) {
  Tensor x = (S(64, 0.7, 0, {2, 32}) * 100 + 1000).to(kBFloat16);
  Tensor y = layer_norm(x, {32});
  EXPECT_EQ(y.dtype(), kBFloat16);
  Tensor ref = layer_norm(x.to(kFloat64), {32});
  EXPECT_LT((y.to(kFloat64) - ref).abs().max().item<double>(), 2e-2);
}

TEST(NNFunctional, GroupNormAndInstanceNorm) {
  Tensor x = S(24, 0.7, 0, {2, 4, 3}).requires_grad_();
  Tensor y = group_norm(x, 2, S(4, 1.0, 0.5, {4}), S(4, 1.0, 1.5, {4}));
  (y * S(24, 0.3, 0.2, {2, 4, 3})).sum().backward();
  expect_values(
      y, {0.5792817061,  1.2318731607,  1.5775406573,  1.547678057,   0.4343731171,  -1.0109922691,
          -0.9330028525, -1.0209095142, -0.7424781788, -1.0491106781, -1.3466010911, -1.5005023144,
          1.8199663556,  1.4311987856,  0.9334769859,  -0.309935831,  -0.4602029784, 0.0851475416,
          -0.8214622759, -0.0263867849, 0.3749819404,  -1.2967706922, -0.8991352415, -0.3970315788},
      1e-7);
  expect_values(
      x.grad(),
      {-1.1852038994, -0.6772077528, -0.3177520638, 0.7914934055,  0.8067919189,  0.5818783916,
       0.1968811008,  0.033348456,   -0.0420079357, -0.3641465091, -0.030505606,  0.2064304941,
       -0.1259924808, 0.0420932528,  0.352350116,   -0.162464357,  -0.0414699102, -0.0645166208,
       -0.247505377,  -0.1610376099, 0.0837139392,  0.0835599273,  0.0799104875,  0.161358633},
      1e-7);
  expect_error([&] { group_norm(x, 3); }, {"divisible by num_groups", "num_groups=3"});
  Tensor in = instance_norm(S(12, 0.7, 0, {2, 2, 3}), {}, {}, {}, {}, true, 0.1, 1e-5);
  expect_values(
      in.select(0, 1),
      {-0.2942678776, -1.0505125061, 1.3447803837, -1.3322857533, 0.2554498827, 1.0768358706},
      1e-7);
}

TEST(NNFunctional, SdpaCausalAndBoolMask) {
  Tensor q = S(24, 0.5, 0, {1, 2, 3, 4}).requires_grad_();
  Tensor k = S(32, 0.6, 1.0, {1, 2, 4, 4}).requires_grad_();
  Tensor v = S(32, 0.8, 2.0, {1, 2, 4, 4}).requires_grad_();
  Tensor o = scaled_dot_product_attention(q, k, v, {}, 0, true);
  (o * S(24, 0.3, 0.2, {1, 2, 3, 4})).sum().backward();
  expect_values(
      o, {0.9092974268,  0.3349881502, -0.4425204433, -0.9516020739, 0.4049098592, 0.1621267909,
          -0.1790002132, -0.41154809,  -0.5399553993, -0.1742002314, 0.2972224593, 0.5883539946,
          0.7882520674,  0.1077536523, -0.6381066823, -0.996900066,  -0.515429017, -0.0254647981,
          0.4799460256,  0.6942280304, 0.6842011312,  0.0512499616,  -0.612788747, -0.9051180245});
  expect_values(q.grad(), {0,
                           0,
                           0,
                           0,
                           0.0102999642,
                           0.0164908036,
                           0.0169209309,
                           0.0114400902,
                           0.0293647116,
                           0.1614047361,
                           0.2370614427,
                           0.229905767,
                           0,
                           0,
                           0,
                           0,
                           0.0023575066,
                           0.0032271655,
                           0.0029694827,
                           0.0016744741,
                           0.0305171214,
                           0.0706077977,
                           0.0860331388,
                           0.0714046294});
  expect_values(k.grad(), {-0.0253770806,
                           -0.0381869141,
                           -0.0416472592,
                           -0.0349109027,
                           0.097037517,
                           0.1307477014,
                           0.1324462885,
                           0.101717405,
                           -0.0716604364,
                           -0.0925607873,
                           -0.0907990293,
                           -0.0668065023,
                           0,
                           0,
                           0,
                           0,
                           0.0092401874,
                           0.0163483319,
                           0.0194538346,
                           0.0177963601,
                           -0.0251352812,
                           -0.0420510966,
                           -0.048671337,
                           -0.0433751366,
                           0.0158950938,
                           0.0257027647,
                           0.0292175024,
                           0.0255787765,
                           0,
                           0,
                           0,
                           0});
  Tensor m =
      tensor(std::vector<int64_t>{1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1}).view({3, 4}).to(kBool);
  // The second row allows no key: its output is 0, as PyTorch's math path gives.
  expect_values(scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), m),
                {0.8813977664,
                 0.2778110493,
                 -0.4942921224,
                 -0.9665643254,
                 0,
                 0,
                 0,
                 0,
                 -0.575675705,
                 -0.1731147494,
                 0.3344552902,
                 0.6391492388,
                 0.7594121799,
                 0.0641314298,
                 -0.6700505851,
                 -0.9977889062,
                 0,
                 0,
                 0,
                 0,
                 0.4714814967,
                 0.0537587016,
                 -0.3965734005,
                 -0.6063493994});
  expect_error([&] { scaled_dot_product_attention(q, k, v, m, 0, true); },
               {"attn_mask should not be set when is_causal=True"});
  expect_error([&] { scaled_dot_product_attention(q, k.narrow(1, 0, 1), v); }, {"enable_gqa"});
}

TEST(NNFunctional, SdpaGroupedQueryMatchesRepeatedHeads) {
  Tensor q = S(48, 0.5, 0, {1, 4, 3, 4});
  Tensor k = S(32, 0.6, 1.0, {1, 2, 4, 4}).requires_grad_();
  Tensor v = S(32, 0.8, 2.0, {1, 2, 4, 4});
  Tensor o = scaled_dot_product_attention(q, k, v, {}, 0, false, std::nullopt, true);
  Tensor r = scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1));
  expect_values(o, std::vector<double>(r.contiguous().data_ptr<double>(),
                                       r.contiguous().data_ptr<double>() + r.numel()));
  Tensor g1 = autograd::grad({o.sum()}, {k})[0];
  Tensor g2 = autograd::grad({r.sum()}, {k})[0];
  EXPECT_LT((g1 - g2).abs().max().item<double>(), 1e-12);
}

TEST(NNFunctional, SdpaDropoutKeepsExpectation) {
  manual_seed(3);
  Tensor q = zeros({1, 1, 200, 4}, TensorOptions(kFloat64));  // uniform attention
  Tensor v = ones({1, 1, 50, 4}, TensorOptions(kFloat64));
  Tensor k = zeros({1, 1, 50, 4}, TensorOptions(kFloat64));
  const double mean = scaled_dot_product_attention(q, k, v, {}, 0.5).mean().item<double>();
  EXPECT_NEAR(mean, 1.0, 0.05);
}

TEST(NNFunctional, EmbeddingPaddingGradientAndRenorm) {
  Tensor w = S(12, 0.7, 0, {4, 3}).requires_grad_();
  Tensor idx = tensor(std::vector<int64_t>{1, 2, 1, 3}).view({2, 2});
  Tensor e = embedding(w, idx, 1);
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
  expect_values(e.select(0, 1).select(0, 1), {std::sin(6.3), std::sin(7.0), std::sin(7.7)});
  e.sum().backward();
  expect_values(w.grad(), {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  Tensor w2 = S(12, 0.7, 0, {4, 3}).requires_grad_();
  embedding(w2, idx, -1, true).sum().backward();
  expect_values(w2.grad(), {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  expect_error([&] { embedding(w, tensor(std::vector<int64_t>{4})); },
               {"index 4 is out of range for 4 embeddings"});
  Tensor big = S(12, 0.7, 0, {4, 3}) * 5;
  embedding_renorm_(big, tensor(std::vector<int64_t>{0, 2}), 1.0, 2.0);
  EXPECT_NEAR(big.select(0, 2).norm().item<double>(), 1.0, 1e-6);
  EXPECT_GT(big.select(0, 1).norm().item<double>(), 1.5);  // not referenced: unchanged
}

TEST(NNFunctional, DropoutStatisticsAndBackward) {
  manual_seed(7);
  Tensor x = ones({100, 100}, TensorOptions(kFloat64)).requires_grad_();
  Tensor y = dropout(x, 0.3, true);
  const double kept = (y != 0).to(kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 0.7, 0.02);
  EXPECT_NEAR(y.max().item<double>(), 1 / 0.7, 1e-12);
  y.sum().backward();
  EXPECT_EQ((x.grad() - y).abs().max().item<double>(), 0.0);  // grad = mask / (1 - p)
  EXPECT_TRUE(dropout(x, 0.3, false).is_same(x));
  Tensor f = feature_dropout(ones({8, 16, 5}, TensorOptions(kFloat64)), 0.5, true);
  Tensor per_channel = f.amax({2}) - f.amin({2});
  EXPECT_EQ(per_channel.abs().max().item<double>(), 0.0);  // whole channels kept or zeroed
  Tensor a = alpha_dropout(randn({200000}, TensorOptions(kFloat64)), 0.2, true);
  EXPECT_NEAR(a.mean().item<double>(), 0.0, 0.02);
  EXPECT_NEAR(a.std().item<double>(), 1.0, 0.02);
  expect_error([&] { dropout(x, 1.5, true); }, {"dropout probability has to be between 0 and 1"});
}

// binary_cross_entropy at inputs of exactly 0 and 1: the log is limited at -100 as in PyTorch, so
// the losses are 0 or 100 and every gradient is finite. PyTorch's own backward divides by
// max(x (1 - x), 1e-12) there (gradients 0 and -+1e12); Kiln's is the derivative of the clamped
// formula (docs/compat.md, nn).
TEST(NNFunctional, BinaryCrossEntropyAtZeroAndOne) {
  Tensor x = tensor(std::vector<double>{0, 1, 0, 1, 0.5}, kFloat64).requires_grad_();
  Tensor t = tensor(std::vector<double>{0, 1, 1, 0, 0.3}, kFloat64);
  Tensor loss = binary_cross_entropy(x, t, {}, Reduction::None);
  expect_values(loss, {0, 0, 100, 100, 0.6931471805599453});
  loss.sum().backward();
  expect_values(x.grad(), {1, -1, 0, 0, 0.8});
}

TEST(NNFunctional, PointwiseLossesAndDistances) {
  Tensor a = S(6, 0.7, 0, {2, 3}), b = S(6, 0.5, 1.0, {2, 3});
  expect_values(mse_loss(a, b), {0.1577246826});
  expect_values(l1_loss(a, b, Reduction::Sum), {1.729505952});
  expect_values(smooth_l1_loss(a, b, Reduction::Mean, 0.5), {0.1382909436});
  expect_values(huber_loss(a, b, Reduction::Mean, 0.5), {0.0691454718});
  Tensor tt = tensor(std::vector<double>{1, 0, 1, 0, 1, 1}, kFloat64).view({2, 3});
  Tensor w3 = tensor(std::vector<double>{1, 2, 3}, kFloat64);
  expect_values(binary_cross_entropy(a.sigmoid(), tt, w3), {1.4538578629});
  expect_values(
      binary_cross_entropy_with_logits(a * 10, tt, {}, w3, Reduction::None),
      {0.6931471806, 6.4437685403, 0.0001575274, 8.6322719416, 0.0689738834, 10.6120619527});
  expect_values(kl_div(a.log_softmax(1), b.softmax(1), Reduction::Sum) / 2, {0.0349180036});
  expect_values(kl_div(a.log_softmax(1), b.log_softmax(1), Reduction::Sum, true), {0.0698360072});
  expect_values(cosine_similarity(a, b), {0.8216619304, 0.9800196181});
  expect_values(pairwise_distance(a, b), {0.9157921187, 0.3281334648});
  expect_values(cdist(a, b), {0.9157933401, 1.5481584865, 1.4237946205, 0.3281320672});
  expect_values(cdist(a, b, 1), {1.2709005873, 2.437802781, 1.9443258728, 0.4586053646});
  expect_values(normalize(a),
                {0.0, 0.5471810381, 0.837014284, 0.8717968644, 0.3383207252, -0.3542729375});
  expect_values(cosine_embedding_loss(a, b, tensor(std::vector<double>{1.0, -1.0}, kFloat64), 0.1),
                {0.5291788438});
  expect_values(margin_ranking_loss(a.select(0, 0), b.select(0, 0),
                                    tensor(std::vector<double>{1.0, -1.0, 1.0}, kFloat64), 0.2),
                {0.3884395605});
  expect_values(triplet_margin_loss(a, b, S(6, 0.4, 2.0, {2, 3}), 1.0, 2, 1e-6, true),
                {0.8070251027});
  expect_error([&] { binary_cross_entropy(a, tt); }, {"between 0 and 1"});
}

// Backward formulas are written with Kiln ops: their own gradients match finite differences.
TEST(NNFunctional, SecondOrderGradients) {
  for (const char* name : {"layer_norm", "rms_norm", "batch_norm", "group_norm",
                           "scaled_dot_product_attention", "nll_loss", "embedding"}) {
    const OpDef& op = get_op(name);
    const OpSample s = op.samples_(kFloat64)[0];
    SCOPED_TRACE(name);
    testing::gradcheck(op, s, /*second_order=*/true);
  }
}

}  // namespace
}  // namespace kiln

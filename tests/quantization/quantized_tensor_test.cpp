// Quantized tensors: their parameters, values and errors, and their safetensors round trip.
#include <gtest/gtest.h>

#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/ops/quantized.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(QuantizedTensor, PerTensorKeepsItsParametersAndValues) {
  const Tensor x = tensor({-1.0f, -0.26f, 0.0f, 0.24f, 12.9f, 100.0f});
  const Tensor q = quantize_per_tensor(x, 0.1, 3, kQInt8);
  EXPECT_EQ(q.dtype(), kQInt8);
  EXPECT_TRUE(q.is_quantized());
  EXPECT_EQ(q.qscheme(), kPerTensorAffine);
  EXPECT_DOUBLE_EQ(q.q_scale(), 0.1);
  EXPECT_EQ(q.q_zero_point(), 3);
  // round(x / 0.1) + 3, clamped to [-128, 127]
  const Tensor ints = q.int_repr();
  EXPECT_EQ(ints.dtype(), kInt8);
  const std::vector<int8_t> want{-7, 0, 3, 5, 127, 127};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(ints[i].item<int8_t>(), want[i]) << i;
  const Tensor back = q.dequantize();
  EXPECT_EQ(back.dtype(), kFloat32);
  EXPECT_NEAR(back[0].item<float>(), -1.0f, 1e-6);
  EXPECT_NEAR(back[3].item<float>(), 0.2f, 1e-6);
  EXPECT_NEAR(back[4].item<float>(), 12.4f, 1e-5);  // the largest value qint8 holds here
  // int_repr copies: changing it leaves the quantized tensor alone.
  ints.fill_(0);
  EXPECT_EQ(q.int_repr()[0].item<int8_t>(), -7);
}

TEST(QuantizedTensor, PerChannelHasAScaleAndZeroPointPerSlice) {
  const Tensor x = arange(12, kFloat32).reshape({3, 4}) - 5.0;
  const Tensor q = quantize_per_channel(x, tensor({0.5, 1.0, 2.0}, kFloat64),
                                        tensor(std::vector<int64_t>{0, 10, 200}), 0, kQUInt8);
  EXPECT_EQ(q.dtype(), kQUInt8);
  EXPECT_EQ(q.qscheme(), kPerChannelAffine);
  EXPECT_EQ(q.q_per_channel_axis(), 0);
  EXPECT_DOUBLE_EQ(q.q_per_channel_scales()[2].item<double>(), 2.0);
  EXPECT_EQ(q.q_per_channel_zero_points()[1].item<int64_t>(), 10);
  const Tensor ints = q.int_repr().to(kInt64);
  EXPECT_EQ(ints[0][0].item<int64_t>(), 0);    // -5 / 0.5 = -10 -> clamped to 0
  EXPECT_EQ(ints[1][3].item<int64_t>(), 12);   // 2 / 1 + 10
  EXPECT_EQ(ints[2][3].item<int64_t>(), 203);  // 6 / 2 + 200
  EXPECT_NEAR(q.dequantize()[2][3].item<float>(), 6.0f, 1e-6);
  expect_has(testing::error_message([&] { (void)q.q_scale(); }),
             "q_scale: expected a per-tensor quantized tensor");
}

TEST(QuantizedTensor, OpsRefuseThemNamingTheParameters) {
  const Tensor q = quantize_per_tensor(ones({2}), 0.1, 3, kQInt8);
  const std::string e = testing::error_message([&] { (void)(q + 1); });
  expect_has(e, "a quantized tensor (qint8, scale 0.1, zero point 3)");
  expect_has(e, "call dequantize() first");
  expect_has(testing::error_message([&] { (void)empty({2}, kQInt8); }),
             "quantized tensors come from quantize_per_tensor");
  expect_has(testing::error_message([&] { (void)ones({2}).to(kQUInt8); }),
             "cannot make a tensor of dtype quint8");
  expect_has(testing::error_message([&] { (void)promote_types(kQInt8, kFloat32); }),
             "quantized dtypes take part in no arithmetic");
  expect_has(testing::error_message([&] { (void)quantize_per_tensor(ones({2}), -1.0, 0, kQInt8); }),
             "expected a positive finite scale, but got -1");
  expect_has(testing::error_message([&] { (void)quantize_per_tensor(ones({2}), 1.0, 0, kInt8); }),
             "expected a quantized dtype");
  expect_has(testing::error_message([&] { (void)ones({2}).int_repr(); }),
             "int_repr: expected a quantized tensor, but got float32");
  // dequantize of a float tensor is the tensor itself, as in PyTorch.
  const Tensor f = ones({2});
  EXPECT_TRUE(f.dequantize().is_same(f));
}

TEST(QuantizedTensor, SafetensorsKeepTheirParameters) {
  const Tensor a = quantize_per_tensor(randn({3, 5}), 0.02, -4, kQInt8);
  const Tensor b = quantize_per_channel(randn({4, 2}), tensor({0.1, 0.2}, kFloat64),
                                        tensor(std::vector<int64_t>{3, 250}), 1, kQUInt8);
  const Tensor plain = randn({2});
  const auto bytes =
      io::to_safetensors_bytes({{"a", a}, {"b", b}, {"plain", plain}}, {{"note", "kept"}});
  const io::SafetensorsFile file = io::from_safetensors_bytes(bytes);
  EXPECT_EQ(file.metadata.size(), 1u);  // the quantization entries are taken out
  EXPECT_EQ(file.metadata.at("note"), "kept");
  const Tensor a2 = file.tensors.at("a"), b2 = file.tensors.at("b");
  EXPECT_EQ(a2.dtype(), kQInt8);
  EXPECT_DOUBLE_EQ(a2.q_scale(), 0.02);
  EXPECT_EQ(a2.q_zero_point(), -4);
  EXPECT_TRUE(a2.int_repr().equal(a.int_repr()));
  EXPECT_EQ(b2.dtype(), kQUInt8);
  EXPECT_EQ(b2.q_per_channel_axis(), 1);
  EXPECT_TRUE(b2.q_per_channel_scales().equal(b.q_per_channel_scales()));
  EXPECT_TRUE(b2.q_per_channel_zero_points().equal(b.q_per_channel_zero_points()));
  EXPECT_TRUE(b2.int_repr().equal(b.int_repr()));
  EXPECT_TRUE(file.tensors.at("plain").equal(plain));
}

TEST(QuantizedTensor, DamagedQuantizationEntriesAreErrors) {
  const Tensor values = zeros({2}, kInt8);
  auto load_with = [&](const std::string& entry) {
    return testing::error_message([&] {
      io::from_safetensors_bytes(
          io::to_safetensors_bytes({{"w", values}}, {{"kiln.quantized.w", entry}}));
    });
  };
  expect_has(load_with("{"), "the quantization entry of tensor 'w' is invalid: it is not a JSON");
  expect_has(load_with(R"({"dtype": "qint8", "scales": [1], "zero_points": [1e300], "axis": -1})"),
             "a zero point is not an integer: 1e+300");
  expect_has(load_with(R"({"dtype": "qint8", "scales": [1], "zero_points": [0]})"),
             "it has no \"axis\"");
  expect_has(load_with(R"({"dtype": "quint8", "scales": [1], "zero_points": [0], "axis": -1})"),
             "is not a quantized dtype stored as int8");
  expect_has(load_with(R"({"dtype": "qint8", "scales": [-1], "zero_points": [0], "axis": -1})"),
             "positive finite scale");
  expect_has(
      load_with(R"({"dtype": "qint8", "scales": [1, 1, 1], "zero_points": [0, 0, 0], "axis": 0})"),
      "3 scales do not match axis 0");
  expect_has(testing::error_message([&] {
               io::from_safetensors_bytes(
                   io::to_safetensors_bytes({{"w", values}}, {{"kiln.quantized.v", "{}"}}));
             }),
             "names no tensor in the file");
}

}  // namespace
}  // namespace kiln

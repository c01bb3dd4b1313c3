// The recurrent ops on a GPU: 2-layer bidirectional LSTM (with and without a projection), GRU
// and Elman RNN modules against their CPU copies, outputs and gradients, without the CPU
// fallback (skipped with its reason where no CUDA device is present); and, without a GPU, every
// generated kernel's source compiles.
#include "kiln/backend/cuda/rnn.h"
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using cpu::RnnCell;
using cuda::RnnKernel;

TEST(CudaRnnSource, EveryVariantCompiles) {
  for (ScalarType dt : {kFloat32, kFloat64})
    for (RnnCell cell : {RnnCell::Tanh, RnnCell::Relu, RnnCell::Gru, RnnCell::Lstm})
      for (RnnKernel kind : {RnnKernel::Step, RnnKernel::StepBackward, RnnKernel::LstmScan}) {
        if (kind == RnnKernel::LstmScan && cell != RnnCell::Lstm) continue;
        const std::string name = "kiln_test_rnn_" + std::to_string(static_cast<int>(cell)) + "_" +
                                 std::to_string(static_cast<int>(kind)) + "_" +
                                 std::string(dtype_name(dt));
        testing::expect_ptx_compiles(cuda::rnn_source(kind, cell, dt, name), name);
      }
  EXPECT_THROW(cuda::rnn_source(RnnKernel::Step, RnnCell::Gru, kFloat16, "k"), Error);
  EXPECT_THROW(cuda::rnn_source(RnnKernel::LstmScan, RnnCell::Gru, kFloat32, "k"), Error);
}

// A module's outputs for an input x, run on a copy of `original` moved to `device` and `dtype`;
// returns those outputs, then the gradients of x and of every parameter of a loss that weighs
// each output by fixed random numbers (so every final state receives a gradient), on the CPU.
template <class Impl, class Forward>
std::vector<Tensor> outputs_and_gradients(const Impl& original, Device device, ScalarType dtype,
                                          const Tensor& x, const Forward& forward) {
  auto module = std::dynamic_pointer_cast<Impl>(original.clone());
  module->to(device, dtype);
  const Tensor input = x.to(device, dtype, false, /*copy=*/true).requires_grad_(true);
  const std::vector<Tensor> outputs = forward(*module, input);
  Tensor loss = zeros({}, TensorOptions(dtype).device(device));
  for (size_t i = 0; i < outputs.size(); ++i) {
    manual_seed(100 + i);
    loss = loss + (outputs[i] * randn(outputs[i].sizes()).to(device, dtype)).sum();
  }
  loss.backward();
  std::vector<Tensor> r;
  for (const Tensor& o : outputs) r.push_back(o.detach().cpu());
  r.push_back(input.grad().cpu());
  for (const auto& p : module->named_parameters()) r.push_back(p.value().grad().cpu());
  return r;
}

template <class Impl, class Forward>
void expect_gpu_matches_cpu(const Impl& module, const Forward& forward) {
  manual_seed(3);
  const Tensor x = randn({6, 3, 5});
  for (ScalarType dt : {kFloat64, kFloat32}) {
    SCOPED_TRACE(dtype_name(dt));
    const double tol = dt == kFloat64 ? 1e-10 : 2e-4;
    const std::vector<Tensor> gpu = outputs_and_gradients(module, Device(kCUDA), dt, x, forward);
    const std::vector<Tensor> cpu = outputs_and_gradients(module, Device(kCPU), dt, x, forward);
    ASSERT_EQ(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      const Tensor want = cpu[i].to(kFloat64), got = gpu[i].to(kFloat64);
      ASSERT_EQ(got.sizes(), want.sizes()) << "result " << i;
      const double scale = std::max(1.0, want.abs().max().item<double>());
      EXPECT_LT((got - want).abs().max().item<double>(), tol * scale) << "result " << i;
    }
  }
}

TEST(CudaRnn, ModulesMatchTheCpuWithGradientsWithoutTheFallback) {
  REQUIRE_GPU();
  const auto lstm_forward = [](nn::LSTMImpl& m, const Tensor& x) {
    auto [y, state] = m.forward(x);
    return std::vector<Tensor>{y, std::get<0>(state), std::get<1>(state)};
  };
  const auto two_outputs = [](auto& m, const Tensor& x) {
    auto [y, h] = m.forward(x);
    return std::vector<Tensor>{y, h};
  };
  manual_seed(1);
  {
    SCOPED_TRACE("LSTM");
    nn::LSTM m(nn::LSTMOptions(5, 7).num_layers(2).bidirectional(true));
    expect_gpu_matches_cpu(*m, lstm_forward);
  }
  {
    SCOPED_TRACE("LSTM with proj_size");
    nn::LSTM m(nn::LSTMOptions(5, 7).num_layers(2).bidirectional(true).proj_size(4));
    expect_gpu_matches_cpu(*m, lstm_forward);
  }
  {
    SCOPED_TRACE("GRU");
    nn::GRU m(nn::GRUOptions(5, 7).num_layers(2).bidirectional(true));
    expect_gpu_matches_cpu(*m, two_outputs);
  }
  for (Nonlinearity f : {kTanh, kReLU}) {
    SCOPED_TRACE("RNN");
    nn::RNN m(nn::RNNOptions(5, 7).num_layers(2).bidirectional(true).nonlinearity(f));
    expect_gpu_matches_cpu(*m, two_outputs);
  }
  for (const char* op : {"lstm", "lstm_backward", "gru", "gru_backward", "rnn_tanh",
                         "rnn_tanh_backward", "rnn_relu", "rnn_relu_backward"})
    EXPECT_FALSE(testing::fell_back(op)) << op << " fell back";
}

}  // namespace
}  // namespace kiln

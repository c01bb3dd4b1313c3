// Streams, events and CUDA graphs on a GPU: work on a side stream, ordering between streams,
// event timing, and graphs captured and replayed against eager results (a pointwise and GEMM
// function, a forward and backward pass), their private memory, and the errors for what cannot
// be captured. Every test skips with its reason where no CUDA device is present.
#include "tests/cuda/cuda_test_util.h"

namespace kiln {
namespace {

using testing::error_of;

TEST(CudaStream, WithoutAGpuEveryCallSaysSo) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  for (const std::string& e :
       {error_of([] { cuda::current_stream(); }), error_of([] { cuda::stream_from_pool(); }),
        error_of([] { cuda::CUDAGraph g; }), error_of([] { cuda::Event().record(); }),
        error_of([] { cuda::make_graphed_callables([](auto& a) { return a; }, {}); })})
    EXPECT_NE(e.find("no CUDA device is available (is_available() is false)"), std::string::npos)
        << e;
}

TEST(CudaStream, AGuardMakesASideStreamCurrentAndEventsOrderAndTimeTheWork) {
  REQUIRE_GPU();
  const cuda::Stream main = cuda::current_stream();
  EXPECT_EQ(main, cuda::default_stream());
  const cuda::Stream side = cuda::stream_from_pool();
  EXPECT_NE(side.handle(), nullptr);
  EXPECT_EQ(side.device_index(), 0);
  Tensor a = randn({2048, 2048}).cuda(), out;
  cuda::Event start(true), end(true), done;
  side.wait_stream(main);  // a's copy was queued on the default stream
  {
    cuda::StreamGuard on(side);
    EXPECT_EQ(cuda::current_stream(), side);
    start.record();
    out = a.matmul(a).relu().sum();
    end.record();
    done.record(side);
  }
  EXPECT_EQ(cuda::current_stream(), main);
  main.wait_event(done);  // the default stream waits for the side stream's result
  cuda::record_stream(out, main);
  Tensor expected = a.cpu().matmul(a.cpu()).relu().sum();
  EXPECT_NEAR(out.item<double>() / expected.item<double>(), 1.0, 1e-3);
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_TRUE(side.query());
  EXPECT_GT(start.elapsed_time(end), 0.0);
  cuda::Event untimed;
  untimed.record(side);
  EXPECT_TRUE(error_of([&] { untimed.elapsed_time(end); }).find("enable_timing=true") !=
              std::string::npos);
}

// f(x) = sum over rows of gelu(x w + b) * 2: a GEMM, pointwise kernels and a reduction.
Tensor model_fn(const Tensor& x, const Tensor& w, const Tensor& b) {
  return (gelu(x.matmul(w) + b) * 2).sum(1);
}

TEST(CudaGraph, ReplayEqualsEagerForNewInputs) {
  REQUIRE_GPU();
  manual_seed(7);
  Tensor w = randn({64, 32}).cuda(), b = randn({32}).cuda();
  Tensor x = randn({16, 64}).cuda();  // the graph's static input
  Tensor y = model_fn(x, w, b);       // warm-up: kernels compiled, cuBLAS set up
  cuda::synchronize();
  cuda::CUDAGraph g;
  {
    cuda::graph capture(g);
    y = model_fn(x, w, b);
  }
  for (int i = 0; i < 3; ++i) {
    Tensor fresh = randn({16, 64});
    x.copy_(fresh.cuda());
    g.replay();
    Tensor expected = model_fn(fresh, w.cpu(), b.cpu());
    EXPECT_TRUE(allclose(y.cpu(), expected, 1e-4, 1e-4)) << "replay " << i;
  }
  // Memory allocated outside the graph is never one of the graph's buffers.
  Tensor outside = full({16}, 5.0).cuda();
  x.copy_(randn({16, 64}).cuda());
  g.replay();
  EXPECT_TRUE(equal(outside.cpu(), full({16}, 5.0)));
  g.reset();
  EXPECT_NE(error_of([&] { g.replay(); }).find("holds no capture"), std::string::npos);
}

TEST(CudaGraph, AForwardAndBackwardPassReplaysWithNewData) {
  REQUIRE_GPU();
  manual_seed(8);
  nn::Sequential model(nn::Linear(32, 64), nn::GELU(), nn::Linear(64, 8));
  model->to(Device(kCUDA));
  Tensor x = randn({20, 32}).cuda(), target = randn({20, 8}).cuda();
  auto step = [&] {
    Tensor loss = nn::functional::mse_loss(model->forward(x), target);
    loss.backward();
    return loss;
  };
  step();                                                           // warm-up
  for (auto& p : model->parameters()) p.mutable_grad() = Tensor();  // grads made in the graph
  cuda::synchronize();
  cuda::CUDAGraph g;
  Tensor loss;
  {
    cuda::graph capture(g);
    loss = step();
  }
  Tensor new_x = randn({20, 32}), new_t = randn({20, 8});
  x.copy_(new_x.cuda());
  target.copy_(new_t.cuda());
  g.replay();
  std::vector<Tensor> graph_grads;
  for (auto& p : model->parameters()) graph_grads.push_back(p.grad().cpu());
  const double graph_loss = loss.item<double>();
  // The same step eagerly on the CPU.
  auto cpu_model = std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone());
  cpu_model->to(Device(kCPU));
  for (auto& p : cpu_model->parameters()) p.mutable_grad() = Tensor();
  Tensor cpu_loss = nn::functional::mse_loss(cpu_model->forward(new_x), new_t);
  cpu_loss.backward();
  EXPECT_NEAR(graph_loss, cpu_loss.item<double>(), 1e-5);
  auto cpu_params = cpu_model->parameters();
  for (size_t i = 0; i < cpu_params.size(); ++i)
    EXPECT_TRUE(allclose(graph_grads[i], cpu_params[i].grad(), 1e-4, 1e-5)) << "parameter " << i;
}

// make_graphed_callables: each call replays the forward graph, backward the backward graph; the
// outputs and every gradient match the same steps on the CPU, an SGD step between calls included
// (parameters are read in place).
TEST(CudaGraph, GraphedCallablesTrainAsEagerDoes) {
  REQUIRE_GPU();
  manual_seed(9);
  nn::Sequential model(nn::Linear(16, 32), nn::ReLU(), nn::Linear(32, 4));
  auto cpu_model = std::dynamic_pointer_cast<nn::SequentialImpl>(model->clone());
  model->to(Device(kCUDA));
  auto forward = [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{model->forward(a[0]).tanh()};
  };
  Tensor sample = randn({8, 16}).cuda().requires_grad_(true);
  auto graphed = cuda::make_graphed_callables(forward, {sample}, model->parameters());
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  optim::SGD cpu_opt(cpu_model->parameters(), optim::SGDOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Tensor x = randn({8, 16});
    Tensor xd = x.cuda().requires_grad_(true), xc = x.clone().requires_grad_(true);
    opt.zero_grad();
    cpu_opt.zero_grad();
    const Tensor y = graphed({xd})[0];
    EXPECT_EQ(y.grad_fn()->name(), "GraphedBackward");
    (y * y).sum().backward();
    const Tensor yc = cpu_model->forward(xc).tanh();
    (yc * yc).sum().backward();
    EXPECT_TRUE(allclose(y.cpu(), yc, 1e-4, 1e-5));
    EXPECT_TRUE(allclose(xd.grad().cpu(), xc.grad(), 1e-4, 1e-5));
    const auto params = model->parameters(), cpu_params = cpu_model->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(allclose(params[i].grad().cpu(), cpu_params[i].grad(), 1e-4, 1e-5))
          << "parameter " << i;
    opt.step();
    cpu_opt.step();
  }
  EXPECT_NE(error_of([&] {
              graphed({randn({4, 16}).cuda().requires_grad_(true)});
            }).find("must match the sample argument"),
            std::string::npos);
}

TEST(CudaGraph, WhatCannotBeCapturedIsAClearErrorAndTheDeviceStaysUsable) {
  REQUIRE_GPU();
  Tensor x = randn({8}).cuda();
  (x * 2).sum();  // warm-up
  cuda::synchronize();
  cuda::CUDAGraph g;
  const std::string e = error_of([&] {
    cuda::graph capture(g);
    Tensor y = (x * 2).sum();
    y.item<float>();
  });
  EXPECT_NE(e.find("cannot be captured into a CUDA graph"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { g.replay(); }).find("holds no capture"), std::string::npos);
  // Capture on the default stream is refused with the way out.
  cuda::CUDAGraph direct;
  const std::string d = error_of([&] { direct.capture_begin(); });
  EXPECT_NE(d.find("stream other than the default one"), std::string::npos) << d;
  EXPECT_NEAR((x * 2).sum().item<double>(), 2 * x.cpu().sum().item<double>(), 1e-5);
}

}  // namespace
}  // namespace kiln

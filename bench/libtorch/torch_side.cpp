// The libtorch side of kiln_vs_torch.
#include <torch/torch.h>

#include "bench/libtorch/bench_case.h"

namespace bench {
namespace {

torch::Tensor from_values(const std::vector<float>& v, const std::vector<int64_t>& shape,
                          bool bf16) {
  torch::Tensor t =
      torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone().contiguous();
  return bf16 ? t.to(torch::kBFloat16) : t;
}

class TorchRunner final : public Runner {
 public:
  TorchRunner(const Case& c, const std::vector<float>& a, const std::vector<float>& b) : c_(c) {
    a_ = from_values(a, c.a, c.bf16);
    if (!c.b.empty()) b_ = from_values(b, c.b, c.bf16);
  }
  void run() override {
    switch (c_.op) {
      case Op::Add:
        out_ = a_ + b_;
        break;
      case Op::Mul:
        out_ = a_ * b_;
        break;
      case Op::MulScalar:
        out_ = a_ * 2.5;
        break;
      case Op::Exp:
        out_ = a_.exp();
        break;
      case Op::Gelu:
        out_ = torch::gelu(a_);
        break;
      case Op::SumAll:
        out_ = a_.sum();
        break;
      case Op::SumLastDim:
        out_ = a_.sum({-1});
        break;
      case Op::AmaxLastDim:
        out_ = a_.amax({-1});
        break;
      case Op::SoftmaxLastDim:
        out_ = a_.softmax(-1);
        break;
      case Op::Matmul:
        out_ = a_.matmul(b_);
        break;
    }
  }
  std::vector<float> result() override {
    torch::Tensor f = out_.to(torch::kFloat32).contiguous();
    const float* p = f.data_ptr<float>();
    return std::vector<float>(p, p + f.numel());
  }

 private:
  Case c_;
  torch::Tensor a_, b_, out_;
};

}  // namespace

std::unique_ptr<Runner> make_torch_runner(const Case& c, const std::vector<float>& a,
                                          const std::vector<float>& b) {
  return std::make_unique<TorchRunner>(c, a, b);
}

}  // namespace bench

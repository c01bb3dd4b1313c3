// The libtorch side of gnn_vs_torch.
#include <torch/torch.h>

#include "bench/libtorch/gnn_case.h"

namespace bench {
namespace {

torch::Tensor from_vector(const std::vector<float>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
}
torch::Tensor from_vector(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64)
      .clone();
}

class TorchGnnRunner final : public Runner {
 public:
  TorchGnnRunner(const GnnCase& c, const GnnData& d) : c_(c) {
    const int64_t E = d.edges, N = d.nodes, F = d.features;
    switch (c.op) {
      case GnnOp::ScatterReduce:
        self_ = c.reduce == "prod" ? torch::ones({N, F}) : torch::zeros({N, F});
        index_ = from_vector(d.index).unsqueeze(1).expand({E, F});
        src_ = from_vector(d.src, {E, F});
        break;
      case GnnOp::Gather:
        self_ = from_vector(d.table, {N, F});
        index_ = from_vector(d.index).unsqueeze(1).expand({E, F});
        break;
      case GnnOp::IndexSelect:
        self_ = from_vector(d.table, {N, F});
        index_ = from_vector(d.index);
        break;
      case GnnOp::Sort:
      case GnnOp::Topk:
        self_ = from_vector(*c.input, c.shape);
        break;
      case GnnOp::SparseMm:
        self_ = torch::sparse_csr_tensor(from_vector(d.crow), from_vector(d.col),
                                         from_vector(d.values, {E}), {N, N},
                                         torch::TensorOptions(torch::kFloat32));
        src_ = from_vector(d.table, {N, F});
        break;
    }
  }

  void run() override {
    switch (c_.op) {
      case GnnOp::ScatterReduce:
        out_ = self_.scatter_reduce(0, index_, src_, c_.reduce, /*include_self=*/true);
        break;
      case GnnOp::Gather:
        out_ = self_.gather(0, index_);
        break;
      case GnnOp::IndexSelect:
        out_ = self_.index_select(0, index_);
        break;
      case GnnOp::Sort:
        out_ = std::get<0>(self_.sort(-1));
        break;
      case GnnOp::Topk:
        out_ = std::get<0>(self_.topk(c_.k, -1));
        break;
      case GnnOp::SparseMm:
        // What Python's torch.sparse.mm(csr, dense, reduce) calls.
        out_ = at::_sparse_mm(self_, src_, c_.reduce);
        break;
    }
  }

  std::vector<float> result() override {
    torch::Tensor f = out_.contiguous();
    const float* p = f.data_ptr<float>();
    return std::vector<float>(p, p + f.numel());
  }

 private:
  GnnCase c_;
  torch::Tensor self_, index_, src_, out_;
};

}  // namespace

std::unique_ptr<Runner> make_torch_gnn_runner(const GnnCase& c, const GnnData& d) {
  return std::make_unique<TorchGnnRunner>(c, d);
}

}  // namespace bench

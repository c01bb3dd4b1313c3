// The Kiln side of gnn_vs_torch.
#include "bench/libtorch/gnn_case.h"
#include "kiln/kiln.h"
#include "kiln/ops/index.h"
#include "kiln/ops/sort.h"
#include "kiln/ops/sparse.h"

namespace bench {
namespace {

kiln::Tensor from_vector(const std::vector<float>& v, const std::vector<int64_t>& shape) {
  return kiln::tensor(v, kiln::kFloat32).reshape(shape).contiguous();
}
kiln::Tensor from_vector(const std::vector<int64_t>& v) { return kiln::tensor(v, kiln::kInt64); }

class KilnGnnRunner final : public Runner {
 public:
  KilnGnnRunner(const GnnCase& c, const GnnData& d) : c_(c) {
    const int64_t E = d.edges, N = d.nodes, F = d.features;
    switch (c.op) {
      case GnnOp::ScatterReduce:
        self_ = c.reduce == "prod" ? kiln::ones({N, F}, kiln::kFloat32)
                                   : kiln::zeros({N, F}, kiln::kFloat32);
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
        self_ = kiln::sparse_csr_tensor(from_vector(d.crow), from_vector(d.col),
                                        from_vector(d.values, {E}), {N, N});
        src_ = from_vector(d.table, {N, F});
        break;
    }
  }

  void run() override {
    switch (c_.op) {
      case GnnOp::ScatterReduce:
        out_ = kiln::scatter_reduce(self_, 0, index_, src_, c_.reduce, /*include_self=*/true);
        break;
      case GnnOp::Gather:
        out_ = kiln::gather(self_, 0, index_);
        break;
      case GnnOp::IndexSelect:
        out_ = kiln::index_select(self_, 0, index_);
        break;
      case GnnOp::Sort:
        out_ = std::get<0>(kiln::sort(self_, -1));
        break;
      case GnnOp::Topk:
        out_ = std::get<0>(kiln::topk(self_, c_.k, -1));
        break;
      case GnnOp::SparseMm:
        out_ = kiln::sparse::mm(self_, src_, c_.reduce);
        break;
    }
  }

  std::vector<float> result() override {
    kiln::Tensor f = out_.contiguous();
    const float* p = f.data_ptr<float>();
    return std::vector<float>(p, p + f.numel());
  }

 private:
  GnnCase c_;
  kiln::Tensor self_, index_, src_, out_;
};

}  // namespace

std::unique_ptr<Runner> make_kiln_gnn_runner(const GnnCase& c, const GnnData& d) {
  return std::make_unique<KilnGnnRunner>(c, d);
}

}  // namespace bench

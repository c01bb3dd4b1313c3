// A tensor-parallel MLP: the hidden layer's 256 units split across the ranks, Megatron's way (a
// ColumnParallelLinear, then a RowParallelLinear), trained to fit y = sin(x . w). Each rank holds
// and updates only its piece of the two weights; the layers exchange one all-reduce forward and
// one backward. With 4 ranks it is 2-D: data parallel over "dp" pairs, tensor parallel within.
//
//   build/tools/kiln/kiln run -n 2 build/examples/tp_mlp [--steps N]
//   build/tools/kiln/kiln run -n 4 build/examples/tp_mlp      (a 2 x 2 mesh)
//
// It exits 0 when the loss on held-out points fell to a tenth.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "kiln/kiln.h"

using namespace kiln;
namespace dist = kiln::distributed;

struct TPMLPImpl : nn::Module {
  explicit TPMLPImpl(const std::shared_ptr<dist::DeviceMesh>& tp)
      : up(register_module("up", nn::parallel::ColumnParallelLinear(16, 256, tp))),
        down(register_module("down", nn::parallel::RowParallelLinear(256, 1, tp))) {}
  Tensor forward(const Tensor& x) { return down(gelu(up(x))); }
  nn::parallel::ColumnParallelLinear up;
  nn::parallel::RowParallelLinear down;
};
KILN_MODULE(TPMLP);

int main(int argc, char** argv) {
  int64_t steps = 300;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--steps")) steps = std::stoll(argv[i + 1]);
  dist::init_process_group();
  const int rank = dist::get_rank(), world = dist::get_world_size();
  const int64_t dp = world % 2 == 0 && world > 2 ? 2 : 1;
  auto mesh = dist::init_device_mesh("cpu", {dp, world / dp}, {"dp", "tp"});
  TPMLP model((*mesh)["tp"]);
  // Along "dp", plain data parallelism over the tensor-parallel pieces.
  nn::parallel::DistributedDataParallel ddp(
      model, nn::parallel::DistributedDataParallelOptions().process_group(
                 mesh->get_group(mesh->dim_index("dp"))));
  optim::Adam opt(ddp.parameters(), optim::AdamOptions(1e-2));

  manual_seed(1);
  const Tensor w = randn({16, 1}) * 0.25;  // x . w of unit variance: a smooth target
  const Tensor held_out = randn({512, 16});
  auto held_out_loss = [&] {
    NoGradGuard no_grad;
    return nn::functional::mse_loss(model(held_out), sin(held_out.matmul(w))).item<double>();
  };
  const double first = held_out_loss();
  manual_seed(100 + static_cast<uint64_t>(mesh->get_local_rank(0)));  // each dp replica's data
  for (int64_t step = 0; step < steps; ++step) {
    const Tensor x = randn({64, 16});
    const Tensor loss = nn::functional::mse_loss(ddp(x), sin(x.matmul(w)));
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (rank == 0 && step % 50 == 0)
      std::printf("step %4lld  loss %.5f\n", static_cast<long long>(step), loss.item<double>());
  }
  const double last = held_out_loss();
  if (rank == 0) std::printf("held-out loss %.5f -> %.5f\n", first, last);
  if (rank == 0)
    std::printf("mesh %lld x %lld (dp x tp); each rank holds %lld of the %d hidden units\n",
                static_cast<long long>(dp), static_cast<long long>(world / dp),
                static_cast<long long>(model->up->weight.size(0)), 256);
  dist::destroy_process_group();
  return last < first / 10 ? 0 : 1;
}

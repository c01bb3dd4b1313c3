#include "kiln/nn/parallel/tensor_parallel.h"

#include "kiln/autograd/function.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/nn/init.h"
#include "kiln/ops/ops.h"

namespace kiln::nn::parallel {
namespace {

using distributed::DeviceMesh;
using distributed::DTensor;

// Forward: the input as it is; backward: the gradient summed over the mesh's ranks (each rank's
// piece of the layer contributes a part of the input's gradient). Megatron's "f".
struct CopyToParallelRegion : autograd::Function<CopyToParallelRegion> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input,
                        const std::string& group) {
    ctx->saved_data["group"] = group;
    return input;  // returned as an alias: the input keeps its own history
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list grads) {
    const std::string& name = ctx->saved_data.at("group").toStringRef();
    distributed::Group g = distributed::find_group(name);
    KILN_CHECK(g != nullptr, "ColumnParallelLinear: backward needs group '", name,
               "', which has been destroyed");
    Tensor sum = grads[0].contiguous().clone();
    g->all_reduce(sum)->wait();
    return {sum, Tensor()};
  }
};

void check_mesh(const char* what, const std::shared_ptr<DeviceMesh>& mesh) {
  KILN_CHECK(mesh != nullptr && mesh->ndim() == 1, what,
             ": needs a 1-D mesh (a named dimension of a larger one: mesh[\"tp\"]), got ",
             mesh ? std::to_string(mesh->ndim()) + "-D" : std::string("none"));
}

// A Linear's initial weight and bias, the same as nn::Linear draws them.
std::pair<Tensor, Tensor> linear_init(int64_t in, int64_t out, bool bias) {
  NoGradGuard no_grad;
  Tensor w = empty({out, in});
  init::kaiming_uniform_(w, std::sqrt(5.0));
  Tensor b;
  if (bias) {
    const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
    b = empty({out}).uniform_(-bound, bound);
  }
  return {w, b};
}

// This rank's piece of `full` laid out by `placement` on `mesh` (rank 0's values everywhere).
Tensor local_piece(const Tensor& full, const std::shared_ptr<DeviceMesh>& mesh,
                   distributed::Placement placement) {
  return distributed::distribute_tensor(full, mesh, {placement}).to_local().detach();
}

void set_value(Tensor& param, const Tensor& value, const char* what) {
  KILN_CHECK(param.sizes() == value.sizes(), what, ": a piece of shape ", value.sizes(),
             " for a parameter of shape ", param.sizes());
  NoGradGuard no_grad;
  param.copy_(value);
}

}  // namespace

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in, int64_t out,
                                                   std::shared_ptr<DeviceMesh> mesh_, bool bias_,
                                                   bool gather)
    : mesh(std::move(mesh_)), in_features(in), out_features(out), gather_output(gather) {
  check_mesh("ColumnParallelLinear", mesh);
  auto [w, b] = linear_init(in, out, bias_);
  weight = register_parameter("weight", local_piece(w, mesh, distributed::Shard(0)));
  if (bias_) bias = register_parameter("bias", local_piece(b, mesh, distributed::Shard(0)));
}

void ColumnParallelLinearImpl::load_full(const Tensor& w, const Tensor& b) {
  set_value(weight, local_piece(w, mesh, distributed::Shard(0)), "ColumnParallelLinear");
  if (bias.defined())
    set_value(bias, local_piece(b, mesh, distributed::Shard(0)), "ColumnParallelLinear");
}

Tensor ColumnParallelLinearImpl::forward(const Tensor& input) {
  const Tensor x = CopyToParallelRegion::apply(input, mesh->get_group(0)->name());
  const Tensor y = linear(x, weight, bias);
  if (!gather_output) return y;
  std::vector<int64_t> shape = y.sizes().vec();
  shape.back() = out_features;
  return DTensor::from_local(y, mesh, {distributed::Shard(-1)}, shape).full_tensor();
}

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in, int64_t out,
                                             std::shared_ptr<DeviceMesh> mesh_, bool bias_,
                                             bool parallel_input)
    : mesh(std::move(mesh_)),
      in_features(in),
      out_features(out),
      input_is_parallel(parallel_input) {
  check_mesh("RowParallelLinear", mesh);
  auto [w, b] = linear_init(in, out, bias_);
  weight = register_parameter("weight", local_piece(w, mesh, distributed::Shard(1)));
  if (bias_) bias = register_parameter("bias", local_piece(b, mesh, distributed::Replicate()));
}

void RowParallelLinearImpl::load_full(const Tensor& w, const Tensor& b) {
  set_value(weight, local_piece(w, mesh, distributed::Shard(1)), "RowParallelLinear");
  if (bias.defined())
    set_value(bias, local_piece(b, mesh, distributed::Replicate()), "RowParallelLinear");
}

Tensor RowParallelLinearImpl::forward(const Tensor& input) {
  Tensor x = input;
  if (!input_is_parallel)
    x = DTensor::from_local(input, mesh, {distributed::Replicate()})
            .redistribute({distributed::Shard(-1)})
            .to_local();
  KILN_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1),
             "RowParallelLinear: this rank's input has ", x.dim() >= 1 ? x.size(-1) : 0,
             " features; its piece of the weight takes ", weight.size(1),
             " (the input must be this rank's columns when input_is_parallel)");
  const Tensor partial = linear(x, weight);
  const Tensor y = DTensor::from_local(partial, mesh, {distributed::Partial()})
                       .redistribute({distributed::Replicate()})
                       .to_local();
  return bias.defined() ? y + bias : y;
}

}  // namespace kiln::nn::parallel

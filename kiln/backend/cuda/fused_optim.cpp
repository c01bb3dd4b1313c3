#include "kiln/backend/cuda/fused_optim.h"

#include <cmath>
#include <map>

#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/backend/cuda/tensor_lists.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

// The updates of the CPU kernels (kiln/optim/fused_adam.cpp, fused_sgd.cpp), in the same order.
constexpr const char* kAdam = R"cuda(
extern "C" __global__ void KERNEL(TensorLists lists, int count, Acc decay, Acc sign, Acc l2,
                                  Acc one_minus_beta1, Acc beta2, Acc one_minus_beta2, Acc eps,
                                  int amsgrad) {
  if (static_cast<int>(blockIdx.y) >= count) return;
  const Entry t = lists.e[blockIdx.y];
  T* p = static_cast<T*>(t.t[0]);
  const T* g = static_cast<const T*>(t.t[1]);
  Acc *ma = static_cast<Acc*>(t.t[2]), *va = static_cast<Acc*>(t.t[3]);
  Acc* vmax = static_cast<Acc*>(t.t[4]);
  const Acc step_size = static_cast<Acc>(t.s[0]), inv_sqrt_bc2 = static_cast<Acc>(t.s[1]);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < t.n;
       i += stride) {
    const Acc w = static_cast<Acc>(p[i]);
    const Acc d = sign * static_cast<Acc>(g[i]) + l2 * w;
    Acc m = ma[i];
    m += one_minus_beta1 * (d - m);
    ma[i] = m;
    const Acc v = beta2 * va[i] + one_minus_beta2 * d * d;
    va[i] = v;
    Acc den = v;
    if (amsgrad) {
      den = vmax[i] > v ? vmax[i] : v;
      vmax[i] = den;
    }
    p[i] = static_cast<T>(w * decay - step_size * m / (root(den) * inv_sqrt_bc2 + eps));
  }
}
)cuda";

constexpr const char* kSgd = R"cuda(
extern "C" __global__ void KERNEL(TensorLists lists, int count, Acc lr, Acc sign, Acc wd,
                                  Acc momentum, Acc one_minus_dampening, int nesterov) {
  if (static_cast<int>(blockIdx.y) >= count) return;
  const Entry t = lists.e[blockIdx.y];
  T* p = static_cast<T*>(t.t[0]);
  const T* g = static_cast<const T*>(t.t[1]);
  Acc* buf = static_cast<Acc*>(t.t[2]);
  const bool first = t.s[0] != 0;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < t.n;
       i += stride) {
    const Acc w = static_cast<Acc>(p[i]);
    const Acc d = sign * static_cast<Acc>(g[i]) + wd * w;
    if (!buf) {
      p[i] = static_cast<T>(w - lr * d);
      continue;
    }
    const Acc v = first ? d : momentum * buf[i] + one_minus_dampening * d;
    buf[i] = v;
    p[i] = static_cast<T>(w - lr * (nesterov ? d + momentum * v : v));
  }
}
)cuda";

// Kernel arguments of the state's compute type.
class Scalars {
 public:
  Scalars(ScalarType dt, std::initializer_list<double> values) : f64_(dt == kFloat64) {
    for (double v : values) f64_ ? d_.push_back(v) : f_.push_back(static_cast<float>(v));
  }
  std::vector<void*> pointers() {
    std::vector<void*> p;
    for (size_t i = 0; i < (f64_ ? d_.size() : f_.size()); ++i)
      p.push_back(f64_ ? static_cast<void*>(&d_[i]) : static_cast<void*>(&f_[i]));
    return p;
  }

 private:
  bool f64_;
  std::vector<double> d_;
  std::vector<float> f_;
};

// Calls the op on the device: groups the parameters by dtype and launches `kind`'s kernel over
// each group, with `entry(i)` filling parameter i's tensors and scalars and `scalars(dt)` the
// rest of the arguments; lists `written` are written back where they were not dense.
template <class EntryFn, class ScalarsFn>
void run_fused(const OpDef& op, FusedOptimizer kind, const std::vector<Tensor>& in,
               std::vector<Tensor>& out, const Attrs& a, int64_t n, int lists,
               const std::vector<int>& written, const EntryFn& entry, const ScalarsFn& scalars,
               int flag) {
  const int dev = device_of(in.at(0));
  bool dtypes_ok = true;
  for (int64_t i = 0; i < n; ++i) dtypes_ok = dtypes_ok && is_floating_point(in[i].dtype());
  if (!dtypes_ok || !on_device(in, dev)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const DenseTensorLists dense(in, n, lists, written);
  std::map<ScalarType, std::vector<TensorListEntry>> by_dtype;
  for (int64_t i = 0; i < n; ++i)
    if (dense.numel(i) > 0) by_dtype[in[i].dtype()].push_back(entry(dense, i));
  for (auto& [dt, entries] : by_dtype) {
    const std::string name =
        std::string(kind == FusedOptimizer::Adam ? "kiln_fused_adam_" : "kiln_fused_sgd_") +
        std::string(dtype_name(dt));
    cudaKernel_t fn =
        generated_kernel(dev, name, [&] { return fused_optimizer_source(kind, dt, name); });
    Scalars s = scalars(dt);
    std::vector<void*> args = s.pointers();
    args.push_back(&flag);
    launch_tensor_lists(op.name, dev, fn, entries, args);
  }
  dense.finish();
}

// inputs and attrs as kiln/optim/fused_adam.cpp's ops.
KernelFn adam_kernel(const char* op_name, bool decoupled) {
  return [op_name, decoupled](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                              const Attrs& a) {
    const double lr = a.f(0), beta1 = a.f(1), beta2 = a.f(2), wd = a.f(3), eps = a.f(4);
    const bool amsgrad = a.b(5);
    const auto n = static_cast<int64_t>(a.ints(7).size());
    auto entry = [&](const DenseTensorLists& d, int64_t i) {
      const double t = static_cast<double>(a.ints(7)[i]);
      TensorListEntry e;
      for (int k = 0; k < (amsgrad ? 5 : 4); ++k) e.t[k] = d.data(k, i);
      e.n = d.numel(i);
      e.s[0] = lr / (1 - std::pow(beta1, t));
      e.s[1] = 1 / std::sqrt(1 - std::pow(beta2, t));
      return e;
    };
    auto scalars = [&](ScalarType dt) {
      return Scalars(dt, {decoupled ? 1 - lr * wd : 1, a.b(6) ? -1.0 : 1.0, decoupled ? 0 : wd,
                          1 - beta1, beta2, 1 - beta2, eps});
    };
    run_fused(get_op(op_name), FusedOptimizer::Adam, in, out, a, n, amsgrad ? 5 : 4,
              amsgrad ? std::vector<int>{0, 2, 3, 4} : std::vector<int>{0, 2, 3}, entry, scalars,
              amsgrad ? 1 : 0);
  };
}

// inputs and attrs as kiln/optim/fused_sgd.cpp's op.
void sgd_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const double wd = a.f(0), momentum = a.f(1), lr = a.f(2), dampening = a.f(3);
  const auto n = static_cast<int64_t>(a.ints(6).size());
  const bool buffers = momentum != 0;
  auto entry = [&](const DenseTensorLists& d, int64_t i) {
    TensorListEntry e;
    for (int k = 0; k < (buffers ? 3 : 2); ++k) e.t[k] = d.data(k, i);
    e.n = d.numel(i);
    e.s[0] = a.ints(6)[i] == 1 ? 1 : 0;
    return e;
  };
  auto scalars = [&](ScalarType dt) {
    return Scalars(dt, {lr, a.b(5) ? -1.0 : 1.0, wd, momentum, 1 - dampening});
  };
  run_fused(get_op("_fused_sgd_"), FusedOptimizer::SGD, in, out, a, n, buffers ? 3 : 2,
            buffers ? std::vector<int>{0, 2} : std::vector<int>{0}, entry, scalars, a.b(4) ? 1 : 0);
}

}  // namespace

std::string fused_optimizer_source(FusedOptimizer kind, ScalarType param_dtype,
                                   const std::string& name) {
  KILN_CHECK(is_floating_point(param_dtype), "cuda: no fused optimizer kernel for ", param_dtype);
  return kernel_source("using T = " + compiler::storage_type(param_dtype) + ";\nusing Acc = " +
                           compiler::storage_type(float_accumulator(param_dtype)) +
                           ";\n__device__ inline float root(float v) { return ::sqrtf(v); }\n"
                           "__device__ inline double root(double v) { return ::sqrt(v); }\n" +
                           tensor_lists_prelude(),
                       kind == FusedOptimizer::Adam ? kAdam : kSgd, name);
}

void register_fused_optimizer_kernels() {
  set_kernel("_fused_adam_", kCUDA, adam_kernel("_fused_adam_", false));
  set_kernel("_fused_adamw_", kCUDA, adam_kernel("_fused_adamw_", true));
  set_kernel("_fused_sgd_", kCUDA, sgd_kernel);
}

}  // namespace kiln::cuda

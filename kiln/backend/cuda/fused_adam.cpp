#include "kiln/backend/cuda/fused_adam.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/op_util.h"
#include "kiln/compile/codegen/c_types.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

constexpr unsigned kThreads = 256;

// The update of optim::Adam's CPU loop (kiln/optim/fused_adam.cpp), in the same order, so that
// float32 results agree with the CPU's to rounding.
constexpr const char* kKernel = R"cuda(
__device__ inline float root(float v) { return ::sqrtf(v); }
__device__ inline double root(double v) { return ::sqrt(v); }

struct Entry {
  T* p;
  const T* g;
  Acc* m;
  Acc* v;
  Acc* vmax;
  int64_t n;
  Acc step_size;
  Acc inv_sqrt_bc2;
};
struct Table {
  Entry e[TENSORS];
};

extern "C" __global__ void KERNEL(Table table, int count, Acc decay, Acc sign, Acc l2,
                                  Acc one_minus_beta1, Acc beta2, Acc one_minus_beta2, Acc eps,
                                  int amsgrad) {
  if (static_cast<int>(blockIdx.y) >= count) return;
  const Entry t = table.e[blockIdx.y];
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < t.n;
       i += stride) {
    const Acc w = static_cast<Acc>(t.p[i]);
    const Acc d = sign * static_cast<Acc>(t.g[i]) + l2 * w;
    Acc m = t.m[i];
    m += one_minus_beta1 * (d - m);
    t.m[i] = m;
    const Acc v = beta2 * t.v[i] + one_minus_beta2 * d * d;
    t.v[i] = v;
    Acc den = v;
    if (amsgrad) {
      den = t.vmax[i] > v ? t.vmax[i] : v;
      t.vmax[i] = den;
    }
    t.p[i] = static_cast<T>(w * decay - t.step_size * m / (root(den) * t.inv_sqrt_bc2 + eps));
  }
}
)cuda";

// The host's image of the kernel's Table.
template <class Acc>
struct Entry {
  void* p;
  const void* g;
  Acc* m;
  Acc* v;
  Acc* vmax;
  int64_t n;
  Acc step_size;
  Acc inv_sqrt_bc2;
};
template <class Acc>
struct Table {
  Entry<Acc> e[kFusedAdamTensors];
};

ScalarType acc_of(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

bool is_float(ScalarType t) {
  return t == kFloat64 || t == kFloat32 || t == kFloat16 || t == kBFloat16;
}

// A dense tensor to compute in: t itself, or a contiguous copy that `finish` writes back.
struct Work {
  Tensor target, dense;
  explicit Work(const Tensor& t) : target(t), dense(t.is_contiguous() ? t : t.contiguous()) {}
  void finish() const {
    if (!dense.is_same(target)) target.copy_(dense);
  }
};

struct Hyper {
  double lr, beta1, beta2, wd, eps;
  bool amsgrad, decoupled, maximize;
};

// One launch per chunk of up to kFusedAdamTensors parameters of one dtype.
template <class Acc>
void launch_chunks(const OpDef& op, int dev, ScalarType dt, std::vector<Entry<Acc>>& entries,
                   const Hyper& h) {
  const std::string name = "kiln_fused_adam_" + std::string(dtype_name(dt));
  cudaKernel_t fn = generated_kernel(dev, name, [&] { return fused_adam_source(dt, name); });
  Acc decay = h.decoupled ? 1 - h.lr * h.wd : 1, sign = h.maximize ? -1 : 1,
      l2 = h.decoupled ? 0 : h.wd, omb1 = 1 - h.beta1, beta2 = h.beta2, omb2 = 1 - h.beta2,
      eps = h.eps;
  int amsgrad = h.amsgrad ? 1 : 0;
  for (size_t begin = 0; begin < entries.size(); begin += kFusedAdamTensors) {
    Table<Acc> table{};
    int count = static_cast<int>(std::min<size_t>(kFusedAdamTensors, entries.size() - begin));
    int64_t longest = 0;
    for (int k = 0; k < count; ++k) {
      table.e[k] = entries[begin + k];
      longest = std::max(longest, table.e[k].n);
    }
    // Enough blocks along x for the longest tensor, but about 16 per multiprocessor in all.
    const int64_t want = (longest + kThreads * 4 - 1) / (kThreads * 4);
    const int64_t cap = std::max<int64_t>(1, int64_t{multiprocessors(dev)} * 16 / count);
    const dim3 grid(static_cast<unsigned>(std::clamp<int64_t>(want, 1, cap)),
                    static_cast<unsigned>(count));
    void* params[] = {&table, &count, &decay, &sign, &l2, &omb1, &beta2, &omb2, &eps, &amsgrad};
    launch_kernel(op.name, fn, grid, dim3(kThreads), params);
  }
}

// The entries of the parameters `which` (indices into the op's lists) of one dtype.
template <class Acc>
std::vector<Entry<Acc>> entries_of(const std::vector<size_t>& which,
                                   const std::vector<std::vector<Work>>& work,
                                   const std::vector<Tensor>& grads, const Attrs& a) {
  const double beta1 = a.f(1), beta2 = a.f(2), lr = a.f(0);
  std::vector<Entry<Acc>> entries;
  for (size_t i : which) {
    const auto& w = work[i];
    const double t = static_cast<double>(a.ints(7)[i]);
    Entry<Acc> e{};
    e.p = w[0].dense.data_ptr();
    e.g = grads[i].data_ptr();
    e.m = static_cast<Acc*>(w[1].dense.data_ptr());
    e.v = static_cast<Acc*>(w[2].dense.data_ptr());
    e.vmax = w.size() > 3 ? static_cast<Acc*>(w[3].dense.data_ptr()) : nullptr;
    e.n = w[0].dense.numel();
    e.step_size = static_cast<Acc>(lr / (1 - std::pow(beta1, t)));
    e.inv_sqrt_bc2 = static_cast<Acc>(1 / std::sqrt(1 - std::pow(beta2, t)));
    entries.push_back(e);
  }
  return entries;
}

// inputs and attrs as kiln/optim/fused_adam.cpp's ops; outputs are the inputs written in place.
KernelFn fused_adam_kernel(const char* op_name, bool decoupled) {
  return [op_name, decoupled](const std::vector<Tensor>& in, std::vector<Tensor>& out,
                              const Attrs& a) {
    const OpDef& op = get_op(op_name);
    const int dev = device_of(in.at(0));
    const bool amsgrad = a.b(5);
    const auto n = static_cast<int64_t>(a.ints(7).size());
    bool dtypes_ok = true;
    for (int64_t i = 0; i < n; ++i) dtypes_ok = dtypes_ok && is_float(in[i].dtype());
    if (!dtypes_ok || !on_device(in, dev)) return cpu_fallback(op, in, out, a);
    NoGradGuard no_grad;
    const Hyper h{a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), amsgrad, decoupled, a.b(6)};
    // Per parameter: what is written (param, exp_avg, exp_avg_sq, max_exp_avg_sq), made dense.
    std::vector<std::vector<Work>> work(n);
    std::vector<Tensor> grads(n);
    std::map<ScalarType, std::vector<size_t>> by_dtype;
    for (int64_t i = 0; i < n; ++i) {
      if (in[i].numel() == 0) continue;
      for (int k : {0, 2, 3, 4})
        if (k < 4 || amsgrad) work[i].emplace_back(in[k * n + i]);
      grads[i] = in[n + i].contiguous();
      by_dtype[in[i].dtype()].push_back(static_cast<size_t>(i));
    }
    for (const auto& [dt, which] : by_dtype) {
      if (dt == kFloat64) {
        auto entries = entries_of<double>(which, work, grads, a);
        launch_chunks<double>(op, dev, dt, entries, h);
      } else {
        auto entries = entries_of<float>(which, work, grads, a);
        launch_chunks<float>(op, dev, dt, entries, h);
      }
    }
    for (const auto& w : work)
      for (const Work& t : w) t.finish();
  };
}

}  // namespace

std::string fused_adam_source(ScalarType param_dtype, const std::string& name) {
  KILN_CHECK(is_float(param_dtype), "cuda: no fused Adam kernel for ", param_dtype);
  std::string kernel = kKernel;
  kernel.replace(kernel.find("KERNEL"), 6, name);
  kernel.replace(kernel.find("TENSORS"), 7, std::to_string(kFusedAdamTensors));
  return "#include <cstdint>\n\n#include \"kiln/core/half.h\"\n\nusing T = " +
         compiler::storage_type(param_dtype) +
         ";\nusing Acc = " + compiler::storage_type(acc_of(param_dtype)) + ";\n" + kernel;
}

void register_fused_adam_kernels() {
  set_kernel("_fused_adam_", kCUDA, fused_adam_kernel("_fused_adam_", false));
  set_kernel("_fused_adamw_", kCUDA, fused_adam_kernel("_fused_adamw_", true));
}

}  // namespace kiln::cuda

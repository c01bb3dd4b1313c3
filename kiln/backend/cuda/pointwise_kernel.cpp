#include "kiln/backend/cuda/pointwise_kernel.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "kiln/backend/cuda/device_assert.h"
#include "kiln/backend/cuda/generated_kernels.h"
#include "kiln/backend/cuda/pointwise_source.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/compile/codegen/text_hash.h"

namespace kiln::cuda {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxParamBytes = 4096;  // the kernel parameter limit of every architecture

bool is_host_scalar(const Tensor& t) { return t.device().is_cpu() && t.dim() == 0; }

// What the lowering's builder sees of an input: its dtype, geometry and wrapped-number mark.
Tensor meta_view(const Tensor& t) {
  if (!t.defined()) return Tensor();
  Tensor m(std::make_shared<TensorImpl>(StorageImpl::meta(t.device()), t.dtype(),
                                        t.sym_sizes().sym_vec(), t.sym_strides().sym_vec(), 0));
  m.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
  return m;
}

// t's strides over the output's sizes, 0 in broadcast dims.
std::vector<int64_t> broadcast_strides(const OpDef& op, const Tensor& t, IntArrayRef sizes) {
  const size_t nd = sizes.size(), td = static_cast<size_t>(t.dim());
  std::vector<int64_t> s(nd, 0);
  bool ok = td <= nd;
  for (size_t i = 0; ok && i < td; ++i) {
    const size_t d = nd - td + i;
    if (t.size(i) == sizes[d])
      s[d] = t.stride(i);
    else
      ok = t.size(i) == 1;
  }
  KILN_CHECK(ok, op.name, ": an input of shape ", t.sizes(), " does not broadcast to the output's ",
             sizes);
  return s;
}

// The output's sizes and each tensor operand's strides, without size-1 dims and with adjacent
// dims merged where every operand steps through them as through one dim.
struct Geometry {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

Geometry coalesce(IntArrayRef sizes, const std::vector<std::vector<int64_t>>& strides) {
  Geometry g;
  g.strides.resize(strides.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !g.sizes.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = g.strides[k].back() == strides[k][d] * sizes[d];
    if (merge) {
      g.sizes.back() *= sizes[d];
      for (size_t k = 0; k < strides.size(); ++k) g.strides[k].back() = strides[k][d];
    } else {
      g.sizes.push_back(sizes[d]);
      for (size_t k = 0; k < strides.size(); ++k) g.strides[k].push_back(strides[k][d]);
    }
  }
  return g;
}

// Makes `dev` the current device for a scope.
class DeviceScope {
 public:
  explicit DeviceScope(int dev) {
    const int cur = detail::current_device();
    if (cur == dev) return;
    detail::check(cudaSetDevice(dev), "cudaSetDevice");
    prev_ = cur;
  }
  ~DeviceScope() {
    if (prev_ >= 0) cudaSetDevice(prev_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int prev_ = -1;
};

// A 0-dim CPU tensor's value as its kernel argument: .f for floating dtypes, .i for the others.
uint64_t host_scalar_word(const Tensor& t) {
  uint64_t word = 0;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, t.data_ptr(), sizeof(T));
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      const double f = static_cast<float>(v);
      std::memcpy(&word, &f, 8);
    } else if constexpr (std::is_floating_point_v<T>) {
      const double f = v;
      std::memcpy(&word, &f, 8);
    } else {
      word = static_cast<uint64_t>(static_cast<int64_t>(v));
    }
  });
  return word;
}

}  // namespace

bool run_pointwise(const OpDef& op, const std::vector<Tensor>& in, std::vector<Tensor>& out,
                   const Attrs& attrs) {
  const auto& lowering = op.lowering_;
  if (lowering.kind != lowering::Lowering::Kind::Pointwise || !lowering.pointwise) return false;
  if (out.size() != 1 || !out[0].defined() || !out[0].is_cuda()) return false;
  const Tensor& y = out[0];
  const int dev = y.device().has_index() ? y.device().index() : detail::current_device();
  const size_t n = in.size();
  std::vector<bool> host(n, false);
  std::vector<Tensor> metas(n);
  for (size_t k = 0; k < n; ++k) {
    if (!in[k].defined()) continue;
    if (in[k].is_cuda()) {
      const int d = in[k].device().has_index() ? in[k].device().index() : detail::current_device();
      KILN_CHECK(d == dev, op.name, ": expected all tensors to be on the same device, but found ",
                 in[k].device(), " and ", y.device());
    } else if (is_host_scalar(in[k])) {
      host[k] = true;
    } else {
      return false;
    }
    metas[k] = meta_view(in[k]);
  }
  const lowering::ExprPtr expr = lowering.pointwise(lowering::Call{metas, attrs, y.dtype()});
  if (!expr) return false;
  const std::vector<bool> read = inputs_read(*expr, n);
  for (size_t k = 0; k < n; ++k)
    KILN_CHECK(!read[k] || in[k].defined(), op.name,
               ": internal error: the pointwise lowering reads", " input ", k, ", which is absent");
  if (y.numel() == 0) return true;

  // Operand 0 is the output, operand k + 1 input k (unread and host-scalar inputs: stride 0).
  std::vector<std::vector<int64_t>> strides(n + 1, std::vector<int64_t>(y.dim(), 0));
  strides[0] = y.strides().vec();
  for (size_t k = 0; k < n; ++k)
    if (read[k] && !host[k]) strides[k + 1] = broadcast_strides(op, in[k], y.sizes());
  const Geometry g = coalesce(y.sizes(), strides);
  const int ndim = static_cast<int>(g.sizes.size());
  if (ndim > kMaxPointwiseDims) return false;

  std::vector<ScalarType> dtypes(n, ScalarType::Undefined);
  std::string sig = pointwise_structure(*expr) + "|";
  for (size_t k = 0; k < n; ++k) {
    if (in[k].defined()) dtypes[k] = in[k].dtype();
    sig += std::to_string(static_cast<int>(dtypes[k])) +
           (host[k]   ? "s"
            : read[k] ? "t"
                      : "-") +
           ",";
  }
  bool dense = ndim <= 1;
  for (size_t k = 0; k <= n && ndim == 1; ++k)
    if (k == 0 || (read[k - 1] && !host[k - 1])) dense = dense && g.strides[k][0] == 1;
  sig += "|" + std::to_string(static_cast<int>(y.dtype())) + "|" + std::to_string(ndim) +
         (dense ? "d" : "");

  // The kernel's argument (Note [Pointwise kernel ABI]) as 8-byte words.
  std::vector<uint64_t> words;
  words.push_back(reinterpret_cast<uintptr_t>(y.data_ptr()));
  for (size_t k = 0; k < n; ++k)
    words.push_back(read[k] && !host[k] ? reinterpret_cast<uintptr_t>(in[k].data_ptr()) : 0);
  for (int d = 0; d < kMaxPointwiseDims; ++d)
    words.push_back(static_cast<uint64_t>(d < ndim ? g.sizes[d] : 1));
  for (size_t k = 0; k <= n; ++k)
    for (int d = 0; d < kMaxPointwiseDims; ++d)
      words.push_back(static_cast<uint64_t>(d < ndim ? g.strides[k][d] : 0));
  words.push_back(static_cast<uint64_t>(y.numel()));
  for (size_t k = 0; k < n; ++k)
    if (host[k]) words.push_back(host_scalar_word(in[k]));
  for (double c : pointwise_constants(*expr)) {
    uint64_t w;
    std::memcpy(&w, &c, 8);
    words.push_back(w);
  }
  if (words.size() * 8 > kMaxParamBytes) return false;

  DeviceScope scope(dev);
  const std::string name = "kiln_pointwise_" + compiler::hex(compiler::fnv1a(sig));
  const cudaKernel_t fn = generated_kernel(dev, name, [&] {
    return pointwise_source(*expr, dtypes, y.dtype(), ndim, name, host, dense);
  });
  const int64_t blocks = (y.numel() + kThreads - 1) / kThreads;
  const int64_t resident = int64_t{multiprocessors(dev)} * resident_blocks(fn, kThreads);
  void* params[] = {words.data()};
  launch_kernel(op.name, fn, dim3(static_cast<unsigned>(std::min(blocks, resident))),
                dim3(kThreads), params);
  return true;
}

KernelFn make_pointwise_kernel(const OpDef& op, KernelFn fallback) {
  const OpDef* p = &op;
  return [p, fallback = std::move(fallback)](const std::vector<Tensor>& in,
                                             std::vector<Tensor>& out, const Attrs& attrs) {
    if (run_pointwise(*p, in, out, attrs)) return;
    KILN_CHECK(fallback, p->name,
               ": no CUDA kernel for this call (the op's pointwise lowering does not cover these "
               "inputs, dtypes or attributes)");
    fallback(in, out, attrs);
  };
}

}  // namespace kiln::cuda

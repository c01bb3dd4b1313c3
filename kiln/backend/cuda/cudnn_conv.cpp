#include "kiln/backend/cuda/cudnn_conv.h"

#ifdef KILN_CUDNN
#include <cudnn.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/backend/cuda/op_util.h"
#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/error.h"
#include "kiln/core/grad_mode.h"
#include "kiln/ops/conv/util.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"

namespace kiln::cuda {
namespace {

void check(cudnnStatus_t s, const char* op, const char* what) {
  KILN_CHECK(s == CUDNN_STATUS_SUCCESS, op, ": cuDNN ", what, " failed: ", cudnnGetErrorString(s));
}

// One handle per device and thread (cuDNN handles are not thread-safe), on the current stream.
cudnnHandle_t handle(int dev, const char* op) {
  thread_local std::unordered_map<int, cudnnHandle_t> handles;
  cudnnHandle_t& h = handles[dev];
  if (!h) check(cudnnCreate(&h), op, "cudnnCreate");
  check(cudnnSetStream(h, detail::current_stream()), op, "cudnnSetStream");
  return h;
}

cudnnDataType_t data_type(ScalarType t) {
  switch (t) {
    case kFloat64:
      return CUDNN_DATA_DOUBLE;
    case kFloat16:
      return CUDNN_DATA_HALF;
    case kBFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

bool supported(ScalarType t) {
  return t == kFloat64 || t == kFloat32 || t == kFloat16 || t == kBFloat16;
}

// Sizes with a leading unit spatial dim for 1-d convolutions (cuDNN takes 2-3 spatial dims).
std::vector<int> dims_of(IntArrayRef sizes) {
  std::vector<int> d(sizes.begin(), sizes.end());
  if (d.size() == 3) d.insert(d.begin() + 2, 1);
  return d;
}
std::vector<int> spatial(const std::vector<int64_t>& v, int64_t fill) {
  std::vector<int> s(v.begin(), v.end());
  if (s.size() == 1) s.insert(s.begin(), static_cast<int>(fill));
  return s;
}

// The descriptors of one call: x [N, C, *], w [O, C / groups, *], y [N, O, *], all contiguous.
class Descriptors {
 public:
  Descriptors(const char* op, ScalarType dt, IntArrayRef x, IntArrayRef w, IntArrayRef y,
              const conv::Params& p)
      : op_(op) {
    check(cudnnCreateTensorDescriptor(&x_), op, "a tensor descriptor");
    check(cudnnCreateTensorDescriptor(&y_), op, "a tensor descriptor");
    check(cudnnCreateFilterDescriptor(&w_), op, "a filter descriptor");
    check(cudnnCreateConvolutionDescriptor(&conv_), op, "a convolution descriptor");
    set_tensor(x_, dt, dims_of(x));
    set_tensor(y_, dt, dims_of(y));
    const std::vector<int> wd = dims_of(w);
    check(cudnnSetFilterNdDescriptor(w_, data_type(dt), CUDNN_TENSOR_NCHW,
                                     static_cast<int>(wd.size()), wd.data()),
          op, "cudnnSetFilterNdDescriptor");
    const std::vector<int> pad = spatial(p.padding, 0), stride = spatial(p.stride, 1),
                           dilation = spatial(p.dilation, 1);
    check(cudnnSetConvolutionNdDescriptor(conv_, static_cast<int>(pad.size()), pad.data(),
                                          stride.data(), dilation.data(), CUDNN_CROSS_CORRELATION,
                                          dt == kFloat64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT),
          op, "cudnnSetConvolutionNdDescriptor");
    check(cudnnSetConvolutionGroupCount(conv_, static_cast<int>(p.groups)), op,
          "cudnnSetConvolutionGroupCount");
    // Float32 without TF32 (as Kiln's float32 matrix products); 16-bit types on tensor cores.
    const bool tensor_ops = dt == kFloat16 || dt == kBFloat16;
    check(cudnnSetConvolutionMathType(conv_, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
          op, "cudnnSetConvolutionMathType");
  }
  ~Descriptors() {
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyConvolutionDescriptor(conv_);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;

 private:
  void set_tensor(cudnnTensorDescriptor_t d, ScalarType dt, const std::vector<int>& dims) {
    std::vector<int> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
    check(cudnnSetTensorNdDescriptor(d, data_type(dt), static_cast<int>(dims.size()), dims.data(),
                                     strides.data()),
          op_, "cudnnSetTensorNdDescriptor");
  }
  const char* op_;
};

// Workspace memory on the device for one call.
Tensor workspace(size_t bytes, const Tensor& like) {
  return empty({static_cast<int64_t>(bytes)}, TensorOptions(kUInt8).device(like.device()));
}

constexpr size_t kFindWorkspace = size_t{256} << 20;

// cuDNN's fastest algorithm for a call's geometry (`key`), measured once by running them
// (PyTorch's torch.backends.cudnn.benchmark): its heuristics' first choice ran a ResNet layer's
// bfloat16 convolution at 3% of the rate PyTorch reached on the H100. `find(perf, n, &found,
// workspace, bytes)` is one of cudnnFindConvolution*AlgorithmEx.
template <class Perf, class FindFn>
Perf measured(const char* op, const std::string& geometry, const Tensor& like, const FindFn& find) {
  static std::mutex mu;
  static auto* known = new std::unordered_map<std::string, Perf>();
  const std::string key = std::to_string(device_of(like)) + ":" + geometry;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = known->find(key); it != known->end()) return it->second;
  }
  size_t limit = kFindWorkspace;
  Tensor ws;
  try {
    ws = workspace(limit, like);
  } catch (const Error&) {
    limit = 0;  // no room to spare: only algorithms without a workspace
  }
  Perf perf[8];
  int found = 0;
  check(find(perf, 8, &found, ws.defined() ? ws.data_ptr() : nullptr, limit), op,
        "measuring its algorithms");
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
    std::lock_guard<std::mutex> lock(mu);
    return known->emplace(key, perf[i]).first->second;
  }
  KILN_FAIL(op, ": cuDNN has no algorithm for this convolution");
}

// An algorithm to run, with its workspace; the descriptor's math type set to the algorithm's.
template <class Algo>
struct Chosen {
  Algo algo;
  Tensor workspace;
  size_t bytes;
};
template <class Perf, class FindFn>
auto fastest(const char* op, cudnnConvolutionDescriptor_t conv, const std::string& geometry,
             const Tensor& like, const FindFn& find) {
  const Perf perf = measured<Perf>(op, geometry, like, find);
  check(cudnnSetConvolutionMathType(conv, perf.mathType), op, "setting the math type");
  return Chosen<decltype(perf.algo)>{perf.algo, workspace(perf.memory, like), perf.memory};
}

// The key of a call's geometry.
std::string geometry_key(char kind, ScalarType dt, IntArrayRef x, IntArrayRef w, IntArrayRef y,
                         const conv::Params& p) {
  std::string k(1, kind);
  k += std::to_string(static_cast<int>(dt));
  for (IntArrayRef v : {x, w, y}) {
    k += '|';
    for (int64_t d : v) k += std::to_string(d) + ",";
  }
  for (const auto* v : {&p.stride, &p.padding, &p.dilation}) {
    k += '|';
    for (int64_t d : *v) k += std::to_string(d) + ",";
  }
  return k + "|" + std::to_string(p.groups);
}

// alpha and beta as cuDNN reads them: double for double data, float otherwise.
struct Scale {
  explicit Scale(ScalarType dt) : f64(dt == kFloat64) {}
  const void* one() const { return f64 ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return f64 ? static_cast<const void*>(&d0) : &f0; }
  bool f64;
  double d1 = 1, d0 = 0;
  float f1 = 1, f0 = 0;
};

Tensor dense(const Tensor& t) { return t.contiguous(); }

// y = conv(x, w) (transposed: the adjoint, through backward data); y's sizes given.
void convolve(const char* op, const Tensor& x, const Tensor& w, const Tensor& y,
              const conv::Params& p) {
  const int dev = device_of(y);
  cudnnHandle_t h = handle(dev, op);
  const ScalarType dt = y.dtype();
  const Scale s(dt);
  if (!p.transposed) {
    Descriptors d(op, dt, x.sizes(), w.sizes(), y.sizes(), p);
    const auto c = fastest<cudnnConvolutionFwdAlgoPerf_t>(
        op, d.conv_, geometry_key('f', dt, x.sizes(), w.sizes(), y.sizes(), p), y,
        [&](auto* out, int n, int* found, void* ws, size_t bytes) {
          return cudnnFindConvolutionForwardAlgorithmEx(h, d.x_, x.data_ptr(), d.w_, w.data_ptr(),
                                                        d.conv_, d.y_, y.data_ptr(), n, found, out,
                                                        ws, bytes);
        });
    check(
        cudnnConvolutionForward(h, s.one(), d.x_, x.data_ptr(), d.w_, w.data_ptr(), d.conv_, c.algo,
                                c.workspace.data_ptr(), c.bytes, s.zero(), d.y_, y.data_ptr()),
        op, "cudnnConvolutionForward");
    return;
  }
  // The transposed convolution of x is the data gradient of the convolution y -> x.
  Descriptors d(op, dt, y.sizes(), w.sizes(), x.sizes(), p);
  const auto c = fastest<cudnnConvolutionBwdDataAlgoPerf_t>(
      op, d.conv_, geometry_key('d', dt, y.sizes(), w.sizes(), x.sizes(), p), y,
      [&](auto* out, int n, int* found, void* ws, size_t bytes) {
        return cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w_, w.data_ptr(), d.y_,
                                                           x.data_ptr(), d.conv_, d.x_,
                                                           y.data_ptr(), n, found, out, ws, bytes);
      });
  check(cudnnConvolutionBackwardData(h, s.one(), d.w_, w.data_ptr(), d.y_, x.data_ptr(), d.conv_,
                                     c.algo, c.workspace.data_ptr(), c.bytes, s.zero(), d.x_,
                                     y.data_ptr()),
        op, "cudnnConvolutionBackwardData");
}

// gw = the weight gradient of y = conv(x, w) for upstream gy.
void weight_gradient(const char* op, const Tensor& gy, const Tensor& x, const Tensor& gw,
                     const conv::Params& p) {
  cudnnHandle_t h = handle(device_of(gw), op);
  const ScalarType dt = gw.dtype();
  const Scale s(dt);
  Descriptors d(op, dt, x.sizes(), gw.sizes(), gy.sizes(), p);
  const auto c = fastest<cudnnConvolutionBwdFilterAlgoPerf_t>(
      op, d.conv_, geometry_key('w', dt, x.sizes(), gw.sizes(), gy.sizes(), p), gw,
      [&](auto* out, int n, int* found, void* ws, size_t bytes) {
        return cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h, d.x_, x.data_ptr(), d.y_, gy.data_ptr(), d.conv_, d.w_, gw.data_ptr(), n, found, out,
            ws, bytes);
      });
  check(cudnnConvolutionBackwardFilter(h, s.one(), d.x_, x.data_ptr(), d.y_, gy.data_ptr(), d.conv_,
                                       c.algo, c.workspace.data_ptr(), c.bytes, s.zero(), d.w_,
                                       gw.data_ptr()),
        op, "cudnnConvolutionBackwardFilter");
}

// Runs compute(result) on a contiguous result with out's sizes and dtype (out itself when it is
// one), unless out is empty, or inputs a or b are (a zero result), and leaves it in out.
template <class F>
void into(const Tensor& out, const Tensor& a, const Tensor& b, const F& compute) {
  Tensor r = out.is_contiguous() ? out : empty(out.sizes(), out.options());
  if (r.numel() > 0) {
    if (a.numel() == 0 || b.numel() == 0) {
      r.zero_();
    } else {
      compute(r);
    }
  }
  if (!r.is_same(out)) out.copy_(r);
}

bool takes(const std::vector<Tensor>& in, const Tensor& out, int dev) {
  const int64_t nd = out.dim() - 2;
  return supported(out.dtype()) && nd >= 1 && nd <= 3 && on_device(in, dev);
}

void convolution_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("convolution");
  const int dev = device_of(out[0]);
  if (!takes(in, out[0], dev)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const conv::Params p = conv::params("convolution", a, in[0].dim() - 2);
  into(out[0], in[0], in[1],
       [&](const Tensor& y) { convolve("convolution", dense(in[0]), dense(in[1]), y, p); });
  if (in[2].defined() && out[0].numel() > 0) {
    std::vector<int64_t> shape(static_cast<size_t>(out[0].dim() - 1), 1);
    shape[0] = -1;
    out[0].add_(in[2].view(shape));
  }
}

// attrs: stride, padding, dilation, groups, weight_sizes.
void weight_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  static const OpDef& op = get_op("convolution_backward_weight");
  const char* name = "convolution_backward_weight";
  const int dev = device_of(out[0]);
  if (!takes(in, out[0], dev)) return cpu_fallback(op, in, out, a);
  NoGradGuard no_grad;
  const int64_t nd = in[1].dim() - 2;
  conv::Params p;
  p.stride = conv::expand(name, "stride", a.ints(0), nd);
  p.padding = conv::expand(name, "padding", a.ints(1), nd);
  p.dilation = conv::expand(name, "dilation", a.ints(2), nd);
  p.groups = a.i(3);
  into(out[0], in[0], in[1],
       [&](const Tensor& gw) { weight_gradient(name, dense(in[0]), dense(in[1]), gw, p); });
}

}  // namespace

void register_cudnn_conv_kernels() {
  set_kernel("convolution", kCUDA, convolution_kernel);
  set_kernel("convolution_backward_weight", kCUDA, weight_kernel);
}

}  // namespace kiln::cuda

#else

namespace kiln::cuda {
void register_cudnn_conv_kernels() {}
}  // namespace kiln::cuda

#endif

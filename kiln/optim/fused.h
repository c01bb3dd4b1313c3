#pragma once
// The fused update loop every optimizer uses: one parallel pass over the elements of a parameter
// (or of all of a step's parameters, MultiTensorUpdate) that reads the gradient and state buffers
// and writes the new values, instead of a chain of tensor ops each making a pass. Float32 and
// float64 parameters are updated in place; other dtypes (and non-contiguous parameters) through a
// float32 working copy that is written back. Parameters on another device are updated on host
// copies of them, their gradients and their state, which are then written back: correct on any
// device; Adam and AdamW instead update dense device parameters with the device's pointwise kernels
// (runs_on_device).
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/autograd/grad_mode.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/core/error.h"
#include "kiln/ops/ops.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The dtype the update computes in (and state buffers are kept in) for a parameter.
inline ScalarType compute_dtype(const Tensor& param) {
  return param.dtype() == kFloat64 ? kFloat64 : kFloat32;
}

// The state buffer `name`, created filled with `init` on first use.
inline Tensor state_buffer(ParamState& state, const std::string& name, const Tensor& param,
                           double init = 0) {
  if (Tensor* b = state.buffers.find(name)) return *b;
  return state.buffers.insert(
      name, full(param.sizes(), init, TensorOptions(compute_dtype(param)).device(param.device())));
}

// The updates of several parameters run as one parallel loop over all their elements, as
// PyTorch's multi-tensor apply: a model of many small parameters is updated in one parallel
// region instead of one per parameter. add() prepares a parameter and run() calls
// body(w, g, buffers, begin, end) on chunks of every parameter added, where w and g point at the
// parameter and gradient values and buffers[k] at buffer k, all as T (float or double), then
// writes back what was updated on a copy. Bodies run in run(): what they read must still be
// alive then (capture per-parameter values by value).
class MultiTensorUpdate {
 public:
  template <size_t N, class Body>
  void add(const Tensor& param, const Tensor& gradient, const std::array<Tensor*, N>& buffers,
           Body body) {
    NoGradGuard no_grad;
    const ScalarType dt = compute_dtype(param);
    KILN_CHECK(param.is_floating_point(), "optimizer: parameters must be floating point, got ",
               dtype_name(param.dtype()));
    const bool on_cpu = param.is_cpu();
    const bool in_place = on_cpu && param.dtype() == dt && param.is_contiguous();
    const Device cpu(kCPU);
    Tensor work = in_place ? param : param.to(cpu, dt).contiguous();
    Tensor grad = gradient.to(cpu, dt).contiguous();
    // Host copies of the state; a buffer passed twice (Adam's v without amsgrad) gets one.
    std::array<Tensor, N> state;
    std::array<bool, N> repeated{};
    for (size_t k = 0; k < N; ++k) {
      for (size_t j = 0; j < k && !repeated[k]; ++j)
        if (buffers[j]->is_same(*buffers[k])) state[k] = state[j], repeated[k] = true;
      if (!repeated[k]) state[k] = on_cpu ? *buffers[k] : buffers[k]->to(cpu);
    }
    Item item;
    item.n = work.numel();
    item.chunk = dt == kFloat64 ? chunk_of<double>(work, grad, state, body)
                                : chunk_of<float>(work, grad, state, body);
    item.finish = [param, work, grad, state, repeated, buffers, in_place, on_cpu] {
      if (!in_place) param.detach().copy_(work);
      if (!on_cpu)
        for (size_t k = 0; k < N; ++k)
          if (!repeated[k]) buffers[k]->copy_(state[k]);
    };
    items_.push_back(std::move(item));
  }

  void run() {
    NoGradGuard no_grad;
    constexpr int64_t kChunk = cpu::kParallelGrain / 4;
    struct Chunk {
      size_t item;
      int64_t begin, end;
    };
    std::vector<Chunk> chunks;
    for (size_t i = 0; i < items_.size(); ++i)
      for (int64_t b = 0; b < items_[i].n; b += kChunk)
        chunks.push_back({i, b, std::min(items_[i].n, b + kChunk)});
    cpu::parallel_for(0, static_cast<int64_t>(chunks.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        items_[chunks[c].item].chunk(chunks[c].begin, chunks[c].end);
    });
    for (Item& item : items_) item.finish();
    items_.clear();
  }

 private:
  struct Item {
    int64_t n = 0;
    std::function<void(int64_t, int64_t)> chunk;
    std::function<void()> finish;  // holds the tensors the chunks point into
  };

  template <class T, size_t N, class Body>
  static std::function<void(int64_t, int64_t)> chunk_of(Tensor& work, Tensor& grad,
                                                        std::array<Tensor, N>& state, Body body) {
    T* w = work.data_ptr<T>();
    const T* g = grad.data_ptr<T>();
    std::array<T*, N> b{};
    std::transform(state.begin(), state.end(), b.begin(),
                   [](Tensor& t) { return t.template data_ptr<T>(); });
    return [w, g, b, body](int64_t begin, int64_t end) { body(w, g, b, begin, end); };
  }

  std::vector<Item> items_;
};

// One parameter's update (MultiTensorUpdate of one).
template <size_t N, class Body>
void fused_update(const Tensor& param, const Tensor& gradient,
                  const std::array<Tensor*, N>& buffers, const Body& body) {
  MultiTensorUpdate update;
  update.add<N>(param, gradient, buffers, body);
  update.run();
}

template <size_t N, class Body>
void fused_update(const Tensor& param, const std::array<Tensor*, N>& buffers, const Body& body) {
  fused_update<N>(param, param.grad(), buffers, body);
}

// Adam's running moments: m <- lerp(m, d, 1 - beta1), v <- beta2 v + (1 - beta2) d^2.
template <class T>
inline void update_moments(T& m, T& v, double d, double beta1, double beta2) {
  m += (1 - beta1) * (d - m);
  v = beta2 * v + (1 - beta2) * d * d;
}

// Whether an optimizer updates p with device ops (pointwise kernels on p's device) instead of
// fused_update's host copies: p is on a device other than the CPU, dense, in its compute dtype.
inline bool runs_on_device(const Tensor& p) {
  return !p.is_cpu() && p.dtype() == compute_dtype(p) && p.is_contiguous() &&
         p.grad().device() == p.device();
}

// The parameters of a group that have a gradient, by device (a fused optimizer op takes one
// device's tensors), checked for what the fused ops need.
inline std::map<std::string, std::vector<Tensor>> params_by_device(
    const OptimizerParamGroup& group) {
  std::map<std::string, std::vector<Tensor>> out;
  for (const Tensor& p : group.params()) {
    if (!p.grad().defined()) continue;
    KILN_CHECK(p.is_floating_point(), "optimizer: parameters must be floating point, got ",
               dtype_name(p.dtype()));
    KILN_CHECK(p.grad().device() == p.device(), "optimizer: the gradient of a parameter on ",
               p.device(), " is on ", p.grad().device());
    out[p.device().str()].push_back(p);
  }
  return out;
}

// A parameter's gradient in the parameter's dtype, as the fused ops take it.
inline Tensor grad_of(const Tensor& p) {
  return p.grad().dtype() == p.dtype() ? p.grad() : p.grad().to(p.dtype());
}

// Parameters of a group that have a gradient.
inline std::vector<Tensor> params_with_grad(const OptimizerParamGroup& group) {
  std::vector<Tensor> out;
  for (const Tensor& p : group.params())
    if (p.grad().defined()) out.push_back(p);
  return out;
}

}  // namespace kiln::optim

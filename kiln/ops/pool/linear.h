#pragma once
// Separable linear maps over [N, C, H, W] or [N, C, D, H, W] planes: avg_pool2d/3d,
// adaptive_avg_pool2d/3d and the upsampling entries. Each output element is
// sum_{a, b} wh[a] * ww[b] * x[ih_a, iw_b] (and a depth factor), with the taps of each dim
// listed once. An entry `name` comes with `name_backward` (its adjoint, taking
// the gradient and the input sizes); each is the other's derivative, so all orders work.
#include <functional>
#include <string>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln::pool {

// Taps of one dim in CSR form: output o reads index[begin[o] .. begin[o+1]) with weight[...].
struct Taps {
  std::vector<int64_t> begin = {0}, index;
  std::vector<double> weight;
  void add(int64_t i, double w) { index.push_back(i), weight.push_back(w); }
  void close() { begin.push_back(static_cast<int64_t>(index.size())); }
  int64_t outputs() const { return static_cast<int64_t>(begin.size()) - 1; }
};

struct SeparableDef {
  std::string name;    // the forward entry; the adjoint is name + "_backward"
  std::string schema;  // the forward entry's schema
  // Output sizes [N, C, OH, OW] of the forward entry (checks the input and attrs).
  std::function<SymShape(const Tensor& input, const Attrs& a)> output_sizes;
  // Taps along spatial dim `dim` (0: the first after N, C) for input size `in` and output size
  // `out`.
  std::function<Taps(const Attrs& a, int dim, int64_t in, int64_t out)> taps;
  SampleFn samples;                  // forward samples
  ReferenceFn reference;             // forward reference (direct loops)
  ErrorSampleFn error_samples = {};  // forward error samples (the adjoint's are derived)
  int spatial = 2;                   // spatial dims of the input
};

// Registers `name` and `name_backward`; returns true (for static initialisation).
bool register_separable(const SeparableDef& def);

// The definition `name` was registered with (device backends make their kernels from its taps).
const SeparableDef& separable_def(const std::string& name);

// Calls the forward entry on a batched input.
Tensor call_separable(const char* name, const Tensor& input, const Attrs& attrs);

}  // namespace kiln::pool

// histc and bincount: counting elements into bins, in parallel with one histogram per chunk.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/sort.h"
#include "kiln/ops/sort/util.h"

namespace kiln {
namespace {

// Sums per-chunk histograms of [0, n) elements: add(i, hist) adds element i to hist.
template <class Acc, class Add>
std::vector<Acc> parallel_histogram(int64_t n, int64_t bins, Add add) {
  const int64_t chunk = std::max<int64_t>(cpu::kParallelGrain, 1);
  const int64_t chunks = std::max<int64_t>(1, (n + chunk - 1) / chunk);
  std::vector<std::vector<Acc>> parts(chunks, std::vector<Acc>(bins, Acc(0)));
  cpu::parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c)
      for (int64_t i = c * chunk; i < std::min(n, (c + 1) * chunk); ++i) add(i, parts[c]);
  });
  std::vector<Acc> total(bins, Acc(0));
  for (const auto& p : parts)
    for (int64_t k = 0; k < bins; ++k) total[k] += p[k];
  return total;
}

// ---- histc ----

// The [min, max] range: the data's own when min == max, widened by 1 each side when that is one
// point too.
std::pair<double, double> histc_range(const Tensor& x, double lo, double hi) {
  if (lo == hi && x.sym_numel() > 0) {
    lo = x.min().item<double>();
    hi = x.max().item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  KILN_CHECK(std::isfinite(lo) && std::isfinite(hi), "histc: range of [", lo, ", ", hi,
             "] is not finite");
  return {lo, hi};
}

// Bin of x in [lo, hi] among `bins` equal bins (the last one closed): the interpolated bin,
// moved by one where rounding put x on the wrong side of an edge lo + k * (hi - lo) / bins.
template <class C>
int64_t bin_of(C x, C lo, C hi, int64_t bins) {
  int64_t b = static_cast<int64_t>((x - lo) * static_cast<C>(bins) / (hi - lo));
  b = std::clamp<int64_t>(b, 0, bins - 1);
  auto edge = [&](int64_t k) { return lo + static_cast<C>(k) * (hi - lo) / static_cast<C>(bins); };
  if (b > 0 && x < edge(b))
    --b;
  else if (b + 1 < bins && x >= edge(b + 1))
    ++b;
  return b;
}

void histc_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor x = in[0].contiguous();
  const int64_t bins = a.i(0);
  auto [lo, hi] = histc_range(x, a.f(1), a.f(2));
  cpu::visit_floating(x.dtype(), "histc", [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    const T* p = x.data_ptr<T>();
    const C l = static_cast<C>(lo), h = static_cast<C>(hi);
    auto counts = parallel_histogram<int64_t>(x.sym_numel().guard_int(), bins,
                                              [&](int64_t i, std::vector<int64_t>& hist) {
                                                const C v = static_cast<C>(p[i]);
                                                if (v >= l && v <= h) ++hist[bin_of(v, l, h, bins)];
                                              });
    T* o = out[0].data_ptr<T>();
    for (int64_t k = 0; k < bins; ++k) o[k] = static_cast<T>(static_cast<C>(counts[k]));
  });
}

// ---- bincount ----

void check_bincount(const Tensor& x, const Tensor* weights, int64_t minlength) {
  KILN_CHECK(minlength >= 0, "bincount: minlength should be >= 0, got ", minlength);
  KILN_CHECK(x.dim() == 1 && is_integral(x.dtype(), /*include_bool=*/false),
             "bincount: only supports 1-d non-negative integral inputs, got a tensor of shape ",
             x.sym_sizes(), " and dtype ", x.dtype());
  if (weights)
    KILN_CHECK(weights->dim() == 1 && weights->sym_size(0) == x.sym_size(0),
               "bincount: weights should be 1-d and have the same length as input, got weights "
               "of shape ",
               weights->sym_sizes(), " for input of shape ", x.sym_sizes());
}

ScalarType bincount_dtype(const Tensor* weights) {
  if (!weights) return kInt64;
  return weights->dtype() == kFloat32 ? kFloat32 : kFloat64;
}

void bincount_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Tensor* weights = in.size() > 1 && in[1].defined() ? &in[1] : nullptr;
  const int64_t minlength = a.i(0);
  check_bincount(in[0], weights, minlength);
  const Tensor x = in[0].to(kInt64).contiguous();
  const int64_t n = x.sym_numel().guard_int();
  const int64_t* p = x.data_ptr<int64_t>();
  int64_t top = -1;
  for (int64_t i = 0; i < n; ++i) {
    KILN_CHECK(p[i] >= 0, "bincount: only supports 1-d non-negative integral inputs, got ", p[i],
               " at position ", i);
    top = std::max(top, p[i]);
  }
  const int64_t bins = std::max(top + 1, minlength);
  const ScalarType dt = bincount_dtype(weights);
  Tensor result = empty({bins}, TensorOptions(dt));
  if (!weights) {
    auto counts = parallel_histogram<int64_t>(
        n, bins, [&](int64_t i, std::vector<int64_t>& hist) { ++hist[p[i]]; });
    std::copy(counts.begin(), counts.end(), result.data_ptr<int64_t>());
  } else {
    const Tensor w = weights->to(dt).contiguous();
    auto fill = [&](auto tag) {
      using W = decltype(tag);
      const W* wp = w.data_ptr<W>();
      auto sums = parallel_histogram<W>(
          n, bins, [&](int64_t i, std::vector<W>& hist) { hist[p[i]] += wp[i]; });
      std::copy(sums.begin(), sums.end(), result.data_ptr<W>());
    };
    if (dt == kFloat32)
      fill(float{});
    else
      fill(double{});
  }
  out = {result};
}

}  // namespace

KILN_REGISTER_OP(histc)
    .schema("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor& x = in[0];
      KILN_CHECK(is_floating_point(x.dtype()), "histc: not implemented for dtype ", x.dtype(),
                 " (expected a floating dtype)");
      KILN_CHECK(a.i(0) > 0, "histc: bins must be > 0, got ", a.i(0));
      KILN_CHECK(a.f(1) <= a.f(2), "histc: max (", a.f(2),
                 ") must be larger than or equal to min (", a.f(1), ")");
      return meta::one_spec({a.i(0)}, x.dtype(), x.device());
    })
    .cpu(histc_kernel)
    .samples([](ScalarType dt) {
      auto at = [](int64_t bins, double lo, double hi) { return Attrs{bins, lo, hi}; };
      std::vector<OpSample> s = {
          {{samples::make({50}, dt)}, at(10, -2, 2), "range given"},
          {{samples::make({7, 9}, dt)}, at(6, 0, 0), "data range"},
          {{samples::make({6, 8}, dt, -3, 3, true)}, at(5, -1, 3), "non-contiguous"},
          // An odd bin count: the value is the middle of its own range, [x - 1, x + 1], which
          // an even count would put on an edge that float32 and float64 round apart.
          {{samples::make({}, dt)}, at(5, 0, 0), "0-dim"},
          {{samples::make({0}, dt)}, at(3, 0, 0), "empty"},
          {{tensor({1.0, 2.0, 1.0}).to(dt)}, at(4, 0, 3), "PyTorch's example"},
          {{tensor({0.0, 0.5, 1.0, 1.5, 2.0}).to(dt)}, at(4, 0, 2), "on the edges"},
      };
      for (auto& x : s) x.check_grad = false;
      return s;
    })
    .error_samples([] {
      const Tensor x = samples::make({5}, kFloat32);
      auto at = [](int64_t bins, double lo, double hi) { return Attrs{bins, lo, hi}; };
      return std::vector<OpErrorSample>{
          {{x}, at(0, 0, 1), "bins must be > 0, got 0", "no bins"},
          {{x}, at(4, 2, 1), "max (1) must be larger than or equal to min (2)", "max < min"},
          {{samples::make({5}, kInt64)}, at(4, 0, 1), "dtype int64", "integer input"},
          {{tensor({1.0, INFINITY})},
           at(4, 0, 0),
           "range of [1, inf] is not finite",
           "infinite data range",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor x = in[0].to(kFloat64).contiguous();
      const int64_t bins = a.i(0);
      auto [lo, hi] = histc_range(x, a.f(1), a.f(2));
      std::vector<double> counts(bins, 0.0);
      for (int64_t i = 0; i < x.sym_numel(); ++i) {
        const double v = x.data_ptr<double>()[i];
        if (v < lo || v > hi) continue;
        counts[std::min<int64_t>(bins - 1, static_cast<int64_t>((v - lo) / (hi - lo) * bins))] += 1;
      }
      return std::vector<Tensor>{tensor(counts, TensorOptions(kFloat64))};
    })
    .dtypes({kFloat64, kFloat32})
    .lowering("extern:histc");

KILN_REGISTER_OP(bincount)
    .schema("bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Tensor* weights = in.size() > 1 && in[1].defined() ? &in[1] : nullptr;
      check_bincount(in[0], weights, a.i(0));
      const SymInt n = sorting::data_dependent_size("bincount", in[0], in[0].sym_numel());
      return meta::one_spec({n}, bincount_dtype(weights), in[0].device());
    })
    .cpu(bincount_kernel)
    .dynamic()
    .samples([](ScalarType dt) {
      Tensor x = samples::make({40}, kInt64, 0, 6);
      std::vector<OpSample> s = {
          {{x}, {int64_t{0}}, "counts"},
          {{x, samples::make({40}, dt)}, {int64_t{0}}, "weights"},
          {{x, samples::make({40}, dt)}, {int64_t{9}}, "weights, minlength"},
          {{tensor({4, 3, 6, 3, 4})}, {int64_t{2}}, "PyTorch's example"},
          {{empty({0}, TensorOptions(kInt64))}, {int64_t{3}}, "empty"},
      };
      for (auto& t : s) t.check_grad = false;
      return s;
    })
    .error_samples([] {
      const Tensor x = tensor({1, 0, 3}, kInt64), none;
      return std::vector<OpErrorSample>{
          {{x, none}, {int64_t{-1}}, "minlength should be >= 0, got -1", "negative minlength"},
          {{x.view({3, 1}), none},
           {int64_t{0}},
           "got a tensor of shape [3, 1] and dtype int64",
           "matrix"},
          {{x.to(kFloat32), none},
           {int64_t{0}},
           "got a tensor of shape [3] and dtype float32",
           "floats"},
          {{x, samples::make({2}, kFloat32)},
           {int64_t{0}},
           "got weights of shape [2] for input of shape [3]",
           "weights' shape"},
          {{tensor({1, -2}, kInt64), none},
           {int64_t{0}},
           "got -2 at position 1",
           "negative value",
           /*in_meta=*/false},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      Tensor x = in[0].to(kInt64).contiguous();
      const int64_t* p = x.data_ptr<int64_t>();
      int64_t bins = a.i(0);
      for (int64_t i = 0; i < x.sym_numel(); ++i) bins = std::max(bins, p[i] + 1);
      std::vector<double> out(bins, 0.0);
      Tensor w = in.size() > 1 ? in[1].to(kFloat64).contiguous() : Tensor();
      for (int64_t i = 0; i < x.sym_numel(); ++i)
        out[p[i]] += w.defined() ? w.data_ptr<double>()[i] : 1;
      return std::vector<Tensor>{tensor(out, TensorOptions(kFloat64))};
    })
    .lowering("extern:bincount");

Tensor histc(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max) {
  static const OpDef& op = get_op("histc");
  return call_op1(op, {self}, {bins, min.to<double>(), max.to<double>()});
}
Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  static const OpDef& op = get_op("bincount");
  std::vector<Tensor> inputs = {self};
  if (weights) inputs.push_back(*weights);
  return call_op1(op, std::move(inputs), {minlength});
}
Tensor Tensor::histc(int64_t bins, const Scalar& min, const Scalar& max) const {
  return kiln::histc(*this, bins, min, max);
}
Tensor Tensor::bincount(const std::optional<Tensor>& weights, int64_t minlength) const {
  return kiln::bincount(*this, weights, minlength);
}

}  // namespace kiln

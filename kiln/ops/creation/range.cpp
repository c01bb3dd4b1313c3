#include "kiln/ops/range.h"

#include <cmath>
#include <limits>

#include "kiln/backend/cpu/copy.h"
#include "kiln/backend/cpu/loops.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

// out[i] = value(i) (a double or int64) for a fresh contiguous output, in parallel.
template <class F>
void fill_indexed(const Tensor& out, const char* op, const F& value) {
  const int64_t n = out.sym_numel().guard_int();
  cpu::visit_numeric(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    T* data = static_cast<T*>(out.data_ptr());
    cpu::parallel_for(0, n, cpu::kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        data[i] = static_cast<T>(static_cast<cpu::compute_t<T>>(value(i)));
    });
  });
}

bool all_integral(const Attrs& a) {
  for (size_t k = 0; k < 3; ++k)
    if (a.scalar(k).is_floating_point()) return false;
  return true;
}

int64_t arange_size(const Scalar& start, const Scalar& end, const Scalar& step) {
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  KILN_CHECK(st != 0, "arange: step must be nonzero");
  KILN_CHECK(std::isfinite(s) && std::isfinite(e) && std::isfinite(st),
             "arange: unsupported range: ", start, " -> ", end, " (step ", step, ")");
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
             "arange: upper bound and lower bound inconsistent with step sign (start=", start,
             ", end=", end, ", step=", step, ")");
  if (!start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point()) {
    const int64_t diff = checked_sub(end.to_long(), start.to_long()), d = step.to_long();
    // ceil(diff / d) without the overflow of diff + d - 1
    return diff / d + (diff % d != 0 ? 1 : 0);
  }
  const double size = std::ceil((e - s) / st);
  KILN_CHECK(size >= 0 && size < 9.2e18, "arange: invalid size ", size, ", possible overflow?");
  return static_cast<int64_t>(size);
}

// linspace's value i: from the start for the first half and from the end for the second, so
// both ends are exact.
double linspace_value(double start, double end, int64_t steps, int64_t i) {
  if (steps == 1) return start;
  const double step = (end - start) / static_cast<double>(steps - 1);
  return i < steps / 2 ? start + step * static_cast<double>(i)
                       : end - step * static_cast<double>(steps - 1 - i);
}

Tensor reference_values(int64_t n, const std::function<double(int64_t)>& f) {
  Tensor out = empty({n}, kFloat64);
  double* d = out.data_ptr<double>();
  for (int64_t i = 0; i < n; ++i) d[i] = f(i);
  return out;
}

OpSample factory_sample(std::vector<AttrValue> a, ScalarType dt, std::string desc) {
  a.push_back(dt);
  a.push_back(Device(kCPU));
  return {{}, Attrs(std::move(a)), std::move(desc), false};
}

}  // namespace

KILN_REGISTER_OP(arange)
    .schema(
        "arange(Scalar start, Scalar end, Scalar step, ScalarType dtype, Device device) -> "
        "Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      const int64_t n = arange_size(a.scalar(0), a.scalar(1), a.scalar(2));
      return meta::one_spec({n}, a.dtype(3), a.device(4));
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      if (all_integral(a) && is_integral(out[0].dtype())) {
        const int64_t start = a.scalar(0).to_long(), step = a.scalar(2).to_long();
        fill_indexed(out[0], "arange", [&](int64_t i) { return start + step * i; });
      } else {
        const double start = a.f(0), step = a.f(2);
        fill_indexed(out[0], "arange",
                     [&](int64_t i) { return start + step * static_cast<double>(i); });
      }
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          factory_sample({Scalar(0), Scalar(5), Scalar(1)}, dt, "0..5"),
          factory_sample({Scalar(-1.5), Scalar(2.0), Scalar(0.25)}, dt, "float step"),
          factory_sample({Scalar(10), Scalar(-3), Scalar(-3)}, dt, "negative step"),
          factory_sample({Scalar(0.0), Scalar(1.0), Scalar(0.1)}, dt, "0.1 step"),
          factory_sample({Scalar(4), Scalar(4), Scalar(1)}, dt, "empty")};
    })
    .reference([](const std::vector<Tensor>&, const Attrs& a) {
      const double s = a.f(0), e = a.f(1), st = a.f(2);
      const auto n = static_cast<int64_t>(std::ceil((e - s) / st));
      return std::vector<Tensor>{reference_values(n, [&](int64_t i) { return s + i * st; })};
    })
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64, kInt32})
    .error_samples([] {
      auto at = [](Scalar start, Scalar end, Scalar step) {
        return Attrs{start, end, step, kFloat64, Device(kCPU)};
      };
      return std::vector<OpErrorSample>{
          {{}, at(0, 5, 0), "step must be nonzero", "step 0"},
          {{}, at(0, INFINITY, 1), "unsupported range: 0 -> inf (step 1)", "infinite end"},
          {{},
           at(5, 0, 1),
           "inconsistent with step sign (start=5, end=0, step=1)",
           "end before start"},
          {{}, at(0, 1e300, 1e-300), "invalid size inf, possible overflow?", "too many steps"},
      };
    });

KILN_REGISTER_OP(linspace)
    .schema(
        "linspace(Scalar start, Scalar end, int steps, ScalarType dtype, Device device) -> "
        "Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      KILN_CHECK(a.i(2) >= 0, "linspace: number of steps must be non-negative, got ", a.i(2));
      return meta::one_spec({a.i(2)}, a.dtype(3), a.device(4));
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      const double s = a.f(0), e = a.f(1);
      const int64_t steps = a.i(2);
      fill_indexed(out[0], "linspace", [&](int64_t i) { return linspace_value(s, e, steps, i); });
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          factory_sample({Scalar(0), Scalar(10), int64_t{4}}, dt, "0..10 in 4"),
          factory_sample({Scalar(-2.0), Scalar(3.0), int64_t{6}}, dt, "-2..3 in 6"),
          factory_sample({Scalar(5), Scalar(-5), int64_t{9}}, dt, "decreasing"),
          factory_sample({Scalar(3.5), Scalar(7), int64_t{1}}, dt, "one step"),
          factory_sample({Scalar(0), Scalar(1), int64_t{0}}, dt, "no steps")};
    })
    .reference([](const std::vector<Tensor>&, const Attrs& a) {
      const double s = a.f(0), e = a.f(1);
      const int64_t n = a.i(2);
      return std::vector<Tensor>{reference_values(n, [&](int64_t i) {
        return n == 1 ? s : s + static_cast<double>(i) * (e - s) / static_cast<double>(n - 1);
      })};
    })
    .dtypes({kFloat64, kFloat32, kBFloat16, kInt64})
    .error_samples([] {
      return std::vector<OpErrorSample>{
          {{},
           {Scalar(0), Scalar(1), int64_t{-2}, kFloat64, Device(kCPU)},
           "number of steps must be non-negative, got -2",
           "negative steps"}};
    });

KILN_REGISTER_OP(logspace)
    .schema(
        "logspace(Scalar start, Scalar end, int steps, float base, ScalarType dtype, Device "
        "device) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      KILN_CHECK(a.i(2) >= 0, "logspace: number of steps must be non-negative, got ", a.i(2));
      return meta::one_spec({a.i(2)}, a.dtype(4), a.device(5));
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      const double s = a.f(0), e = a.f(1), base = a.f(3);
      const int64_t steps = a.i(2);
      fill_indexed(out[0], "logspace",
                   [&](int64_t i) { return std::pow(base, linspace_value(s, e, steps, i)); });
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{
          factory_sample({Scalar(0), Scalar(3), int64_t{4}, 10.0}, dt, "base 10"),
          factory_sample({Scalar(-1.5), Scalar(2.5), int64_t{5}, 2.0}, dt, "base 2"),
          factory_sample({Scalar(1), Scalar(-1), int64_t{3}, 0.5}, dt, "base 0.5 decreasing"),
          factory_sample({Scalar(0), Scalar(1), int64_t{0}, 10.0}, dt, "no steps")};
    })
    .reference([](const std::vector<Tensor>&, const Attrs& a) {
      const double s = a.f(0), e = a.f(1), base = a.f(3);
      const int64_t n = a.i(2);
      return std::vector<Tensor>{reference_values(n, [&](int64_t i) {
        const double x = n == 1 ? s : s + static_cast<double>(i) * (e - s) / (n - 1);
        return std::exp(x * std::log(base));
      })};
    })
    .error_samples([] {
      return std::vector<OpErrorSample>{
          {{},
           {Scalar(0), Scalar(1), int64_t{-2}, 10.0, kFloat64, Device(kCPU)},
           "number of steps must be non-negative, got -2",
           "negative steps"}};
    });

KILN_REGISTER_OP(eye)
    .schema("eye(int n, int m, ScalarType dtype, Device device) -> Tensor")
    .meta([](const std::vector<Tensor>&, const Attrs& a) {
      KILN_CHECK(a.i(0) >= 0, "eye: n must be greater or equal to 0, got ", a.i(0));
      KILN_CHECK(a.i(1) >= 0, "eye: m must be greater or equal to 0, got ", a.i(1));
      return meta::one_spec({a.i(0), a.i(1)}, a.dtype(2), a.device(3));
    })
    .cpu([](const std::vector<Tensor>&, std::vector<Tensor>& out, const Attrs& a) {
      cpu::fill(out[0], 0);
      const int64_t n = a.i(0), m = a.i(1);
      cpu::visit_all(out[0].dtype(), "eye", [&](auto tag) {
        using T = decltype(tag);
        T* data = static_cast<T*>(out[0].data_ptr());
        for (int64_t i = 0; i < std::min(n, m); ++i) data[i * m + i] = static_cast<T>(1);
      });
    })
    .samples([](ScalarType dt) {
      return std::vector<OpSample>{factory_sample({int64_t{3}, int64_t{3}}, dt, "3x3"),
                                   factory_sample({int64_t{2}, int64_t{4}}, dt, "2x4"),
                                   factory_sample({int64_t{4}, int64_t{1}}, dt, "4x1"),
                                   factory_sample({int64_t{0}, int64_t{2}}, dt, "0x2")};
    })
    .reference([](const std::vector<Tensor>&, const Attrs& a) {
      const int64_t n = a.i(0), m = a.i(1);
      Tensor out = empty({n, m}, kFloat64);
      double* d = out.data_ptr<double>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) d[i * m + j] = i == j ? 1.0 : 0.0;
      return std::vector<Tensor>{out};
    })
    .dtypes({kFloat64, kFloat32, kInt64, kBool})
    .error_samples([] {
      auto at = [](int64_t n, int64_t m) { return Attrs{n, m, kFloat64, Device(kCPU)}; };
      return std::vector<OpErrorSample>{
          {{}, at(-1, 2), "n must be greater or equal to 0, got -1", "negative n"},
          {{}, at(2, -3), "m must be greater or equal to 0, got -3", "negative m"},
      };
    });

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  static const OpDef& op = get_op("arange");
  ScalarType dtype = o.dtype();
  if (!o.has_dtype() && !start.is_floating_point() && !end.is_floating_point() &&
      !step.is_floating_point())
    dtype = kInt64;
  Tensor t = call_op1(op, {}, {start, end, step, dtype, o.device()});
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o) {
  return arange(start, end, 1, o);
}
Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  static const OpDef& op = get_op("linspace");
  Tensor t = call_op1(op, {}, {start, end, steps, o.dtype(), o.device()});
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base,
                const TensorOptions& o) {
  static const OpDef& op = get_op("logspace");
  Tensor t = call_op1(op, {}, {start, end, steps, base, o.dtype(), o.device()});
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  static const OpDef& op = get_op("eye");
  Tensor t = call_op1(op, {}, {n, m, o.dtype(), o.device()});
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, n, o); }

}  // namespace kiln
